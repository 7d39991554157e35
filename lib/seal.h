/*
 * seal.h — secrets gpugate keeps at rest, sealed with AES-256-GCM under a
 * key derived (HKDF-SHA256) from a deployment secret that every replica
 * shares: today the provider's refresh tokens of console sessions, bound
 * to the session they belong to (its id hash as associated data). The one
 * AES-256-GCM primitive of the process (list cursors use it too). Pure
 * functions but for the random IV of seal_text(); thread-safe.
 */
#ifndef GPUGATE_SEAL_H
#define GPUGATE_SEAL_H

#include <stddef.h>

#define SEAL_KEY_LEN 32
#define SEAL_IV_LEN 12
#define SEAL_TAG_LEN 16
#define SEAL_PREFIX "v1."

/* Characters of the sealed form of n bytes, its NUL included. */
#define SEAL_TEXT_MAX(n)                                                       \
  (sizeof(SEAL_PREFIX) + 4 * ((SEAL_IV_LEN + (n) + SEAL_TAG_LEN + 2) / 3) + 1)

/*
 * AES-256-GCM of in (n bytes) into out (n bytes) with aad (aadlen bytes):
 * seal (dir 1: tag written) or open (dir 0: tag checked). 0, or -1 (a
 * tag that does not match, or OpenSSL failed).
 */
int seal_gcm(int dir, const unsigned char key[SEAL_KEY_LEN],
             const unsigned char iv[SEAL_IV_LEN], const unsigned char *aad,
             size_t aadlen, const unsigned char *in, size_t n,
             unsigned char *out, unsigned char tag[SEAL_TAG_LEN]);

/*
 * The key for purpose info (a NUL-terminated label, e.g.
 * "gpugate/refresh-token/v1") from the secret ikm (borrowed, len bytes,
 * at least one): HKDF-SHA256 without salt (RFC 5869). 0 or -1.
 */
int seal_derive_key(const unsigned char *ikm, size_t len, const char *info,
                    unsigned char key[SEAL_KEY_LEN]);

/*
 * Seal the text plain (borrowed) for aad (borrowed, NUL-terminated) under
 * key with a random IV into out (outlen bytes, NUL included):
 * SEAL_PREFIX, then base64url of IV, ciphertext and tag. 0, or -1 (out too
 * small, no randomness).
 */
int seal_text(const unsigned char key[SEAL_KEY_LEN], const char *aad,
              const char *plain, char *out, size_t outlen);

/*
 * Open sealed (borrowed) for aad under key into out (outlen bytes, NUL
 * included). 0, or -1 for anything seal_text() did not make with this key
 * and aad (tampered, truncated, another key or aad, plaintext, a NUL
 * inside, out too small). Any input gives 0 or -1.
 */
int seal_open(const unsigned char key[SEAL_KEY_LEN], const char *aad,
              const char *sealed, char *out, size_t outlen);

#endif
