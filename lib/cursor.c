/*
 * cursor.c — list cursors that are opaque and authenticated.
 *
 * A cursor carries the position after which the next page starts (an
 * object's name, or a job's sequence number). That position is sealed with
 * AES-256-GCM under the deployment's cursor key, and the list it pages —
 * the route's path (with its team) and every query parameter but limit and
 * cursor, sorted — is the associated data. So a cursor reveals nothing (not
 * the global job sequence, not a name), and one that was altered, made by
 * hand, sealed by another deployment or taken to another list (another
 * team, other filters) does not open: 400 naming `cursor`.
 *
 *   cursor = base64url( 0x01 | iv[12] | ciphertext | tag[16] )
 *
 * The version byte is authenticated too. The key is 32 bytes: HMAC-SHA256
 * of GPUGATE_CURSOR_KEY_FILE's content, or else of the HS256 JWT secret,
 * with the domain separator "gpugate/cursor/v1", so every replica that
 * shares the secret agrees (see cursor_derive_key()).
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "lib/b64url.h"
#include "lib/cursor.h"
#include "lib/seal.h"

#define VERSION 0x01
#define IV_LEN 12
#define TAG_LEN 16
#define DOMAIN "gpugate/cursor/v1"

int cursor_derive_key(const unsigned char *secret, size_t len,
                      unsigned char key[CURSOR_KEY_LEN])
{
  unsigned int out = 0;

  if (!secret || len == 0)
    return -1;
  if (!HMAC(EVP_sha256(), secret, (int)len, (const unsigned char *)DOMAIN,
            sizeof(DOMAIN) - 1, key, &out) ||
      out != CURSOR_KEY_LEN)
    return -1;
  return 0;
}

/* The associated data: version byte, then the scope. */
static size_t aad_of(const char *scope, unsigned char *buf, size_t cap)
{
  size_t n = strlen(scope), i;

  if (n + 1 > cap)
    n = cap - 1; /* scopes are bounded well below; never reached */
  buf[0] = VERSION;
  for (i = 0; i < n; i++)
    buf[1 + i] = (unsigned char)scope[i];
  return n + 1;
}

int cursor_seal(const unsigned char key[CURSOR_KEY_LEN], const char *scope,
                const char *position, const unsigned char iv[12], char *out,
                size_t outlen)
{
  unsigned char blob[1 + IV_LEN + CURSOR_POSITION_MAX + TAG_LEN];
  unsigned char aad[CURSOR_SCOPE_MAX + 1];
  size_t n = strlen(position), aadlen = aad_of(scope, aad, sizeof(aad));

  if (n == 0 || n > CURSOR_POSITION_MAX)
    return -1;
  blob[0] = VERSION;
  memcpy(blob + 1, iv, IV_LEN);
  if (seal_gcm(1, key, iv, aad, aadlen, (const unsigned char *)position, n,
               blob + 1 + IV_LEN, blob + 1 + IV_LEN + n) != 0)
    return -1;
  return b64url_encode(blob, 1 + IV_LEN + n + TAG_LEN, out, outlen) ? 0 : -1;
}

int cursor_open(const unsigned char key[CURSOR_KEY_LEN], const char *scope,
                const char *cursor, char *position, size_t poslen)
{
  unsigned char blob[1 + IV_LEN + CURSOR_POSITION_MAX + TAG_LEN];
  unsigned char aad[CURSOR_SCOPE_MAX + 1];
  unsigned char pt[CURSOR_POSITION_MAX];
  size_t len = 0, n, aadlen;

  if (!cursor || strlen(cursor) > CURSOR_MAX ||
      b64url_decode(cursor, strlen(cursor), blob, sizeof(blob), &len) != 0 ||
      len < 1 + IV_LEN + 1 + TAG_LEN || blob[0] != VERSION)
    return -1;
  n = len - 1 - IV_LEN - TAG_LEN;
  if (n >= poslen)
    return -1;
  aadlen = aad_of(scope, aad, sizeof(aad));
  if (seal_gcm(0, key, blob + 1, aad, aadlen, blob + 1 + IV_LEN, n, pt,
               blob + 1 + IV_LEN + n) != 0)
    return -1;
  memcpy(position, pt, n);
  position[n] = '\0';
  if (strlen(position) != n)
    return -1;
  return 0;
}
