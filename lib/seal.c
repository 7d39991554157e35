/*
 * seal.c — AES-256-GCM sealing of secrets at rest under HKDF-derived keys
 * (see seal.h). The sealed form is text, so it is stored in a text column
 * as it is: "v1." + base64url(IV || ciphertext || tag).
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include "lib/b64url.h"
#include "lib/seal.h"

int seal_gcm(int dir, const unsigned char key[SEAL_KEY_LEN],
             const unsigned char iv[SEAL_IV_LEN], const unsigned char *aad,
             size_t aadlen, const unsigned char *in, size_t n,
             unsigned char *out, unsigned char tag[SEAL_TAG_LEN])
{
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  int len = 0, ok;

  ok = c && EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL, dir) &&
       EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, SEAL_IV_LEN, NULL) &&
       EVP_CipherInit_ex(c, NULL, NULL, key, iv, dir) &&
       EVP_CipherUpdate(c, NULL, &len, aad, (int)aadlen) &&
       (n == 0 || EVP_CipherUpdate(c, out, &len, in, (int)n));
  if (ok && !dir)
    ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, SEAL_TAG_LEN, tag);
  ok = ok && EVP_CipherFinal_ex(c, out + (n ? (size_t)len : 0), &len);
  if (ok && dir)
    ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, SEAL_TAG_LEN, tag);
  EVP_CIPHER_CTX_free(c);
  return ok ? 0 : -1;
}

int seal_derive_key(const unsigned char *ikm, size_t len, const char *info,
                    unsigned char key[SEAL_KEY_LEN])
{
  EVP_PKEY_CTX *c = NULL;
  size_t out = SEAL_KEY_LEN;
  int ok;

  if (!ikm || len == 0 || !info)
    return -1;
  c = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
  ok = c && EVP_PKEY_derive_init(c) > 0 &&
       EVP_PKEY_CTX_set_hkdf_md(c, EVP_sha256()) > 0 &&
       EVP_PKEY_CTX_set1_hkdf_key(c, ikm, (int)len) > 0 &&
       EVP_PKEY_CTX_add1_hkdf_info(c, (const unsigned char *)info,
                                   (int)strlen(info)) > 0 &&
       EVP_PKEY_derive(c, key, &out) > 0 && out == SEAL_KEY_LEN;
  EVP_PKEY_CTX_free(c);
  return ok ? 0 : -1;
}

int seal_text(const unsigned char key[SEAL_KEY_LEN], const char *aad,
              const char *plain, char *out, size_t outlen)
{
  size_t n = strlen(plain), pre = sizeof(SEAL_PREFIX) - 1;
  size_t blen = SEAL_IV_LEN + n + SEAL_TAG_LEN;
  unsigned char *blob = NULL; /* new */
  int rc = -1;

  if (outlen < pre + 1 || !(blob = malloc(blen)))
    goto out;
  if (RAND_bytes(blob, SEAL_IV_LEN) != 1 ||
      seal_gcm(1, key, blob, (const unsigned char *)aad, strlen(aad),
               (const unsigned char *)plain, n, blob + SEAL_IV_LEN,
               blob + SEAL_IV_LEN + n) != 0)
    goto out;
  memcpy(out, SEAL_PREFIX, pre);
  if (b64url_encode(blob, blen, out + pre, outlen - pre) == 0)
    goto out;
  rc = 0;
out:
  if (blob)
    OPENSSL_cleanse(blob, blen);
  free(blob);
  if (rc != 0 && outlen > 0)
    out[0] = '\0';
  return rc;
}

int seal_open(const unsigned char key[SEAL_KEY_LEN], const char *aad,
              const char *sealed, char *out, size_t outlen)
{
  size_t pre = sizeof(SEAL_PREFIX) - 1, len, cap, got = 0, n;
  unsigned char *blob = NULL; /* new */
  int rc = -1;

  if (outlen == 0)
    return -1;
  out[0] = '\0';
  if (!sealed || strncmp(sealed, SEAL_PREFIX, pre) != 0)
    return -1;
  len = strlen(sealed + pre);
  cap = len / 4 * 3 + 3;
  if (!(blob = malloc(cap)) ||
      b64url_decode(sealed + pre, len, blob, cap, &got) != 0 ||
      got < SEAL_IV_LEN + SEAL_TAG_LEN)
    goto out;
  n = got - SEAL_IV_LEN - SEAL_TAG_LEN;
  if (n >= outlen ||
      seal_gcm(0, key, blob, (const unsigned char *)aad, strlen(aad),
               blob + SEAL_IV_LEN, n, (unsigned char *)out,
               blob + SEAL_IV_LEN + n) != 0)
    goto out;
  out[n] = '\0';
  rc = strlen(out) == n ? 0 : -1;
out:
  if (rc != 0)
    OPENSSL_cleanse(out, outlen);
  if (rc != 0)
    out[0] = '\0';
  if (blob)
    OPENSSL_cleanse(blob, cap);
  free(blob);
  return rc;
}
