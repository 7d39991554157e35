/*
 * emu_oidc.c — Google-style OIDC ID tokens for the emulator's Pub/Sub
 * pushes, signed RS256 with the emulator's own key, whose public half is
 * served as a JWK set like https://www.googleapis.com/oauth2/v3/certs
 * (with Cache-Control max-age, as Google serves it). The claims are the
 * ones Google puts into push tokens: iss https://accounts.google.com, aud
 * the subscription's audience, azp and sub the service account's id,
 * email and email_verified, iat and exp one hour apart.
 */
#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/b64url.h"
#include "tests/emulator/emu_oidc.h"

static EVP_PKEY *key;
static char *key_pem; /* the private key as PEM, for libjwt */
static char kid[41];

static void b64url(const unsigned char *in, size_t n, char *out, size_t cap)
{
  if (!b64url_encode(in, n, out, cap) && cap)
    out[0] = '\0';
}

int emu_oidc_init(const char *pem_path, char *err, size_t errlen)
{
  unsigned char *der = NULL, md[EVP_MAX_MD_SIZE];
  unsigned mdlen = 0, i;
  BIO *bio = NULL;
  char *data;
  long len;
  int dlen;

  if (pem_path && *pem_path) {
    FILE *f = fopen(pem_path, "r");
    if (f) {
      key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
      fclose(f);
    }
    if (!key || EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA) {
      snprintf(err, errlen, "EMU_OIDC_KEY: \"%s\" is not an RSA private key",
               pem_path);
      return -1;
    }
  } else if (!(key = EVP_RSA_gen(2048))) {
    snprintf(err, errlen, "EMU_OIDC_KEY: cannot generate an RSA key");
    return -1;
  }
  bio = BIO_new(BIO_s_mem());
  if (!bio || !PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) ||
      (len = BIO_get_mem_data(bio, &data)) <= 0 ||
      !(key_pem = malloc((size_t)len + 1))) {
    BIO_free(bio);
    snprintf(err, errlen, "EMU_OIDC_KEY: cannot encode the key");
    return -1;
  }
  memcpy(key_pem, data, (size_t)len);
  key_pem[len] = '\0';
  BIO_free(bio);
  /* kid: the SHA-1 of the public key, in hex, as Google's look */
  dlen = i2d_PUBKEY(key, &der);
  if (dlen <= 0 ||
      !EVP_Digest(der, (size_t)dlen, md, &mdlen, EVP_sha1(), NULL)) {
    OPENSSL_free(der);
    snprintf(err, errlen, "EMU_OIDC_KEY: cannot hash the key");
    return -1;
  }
  OPENSSL_free(der);
  for (i = 0; i < mdlen && 2 * i + 2 < sizeof(kid); i++)
    snprintf(kid + 2 * i, 3, "%02x", md[i]);
  return 0;
}

void emu_oidc_shutdown(void)
{
  EVP_PKEY_free(key);
  key = NULL;
  free(key_pem);
  key_pem = NULL;
}

void emu_oidc_certs(struct emu_req *r)
{
  BIGNUM *n = NULL, *e = NULL;
  unsigned char nb[1024], eb[16];
  char n64[1400], e64[32];
  int nl, el;

  if (!key || !EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_N, &n) ||
      !EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_E, &e) ||
      (nl = BN_num_bytes(n)) > (int)sizeof(nb) ||
      (el = BN_num_bytes(e)) > (int)sizeof(eb)) {
    BN_free(n);
    BN_free(e);
    emu_reply_error(r, 500, "INTERNAL", NULL, "No signing key.");
    return;
  }
  BN_bn2bin(n, nb);
  BN_bn2bin(e, eb);
  BN_free(n);
  BN_free(e);
  b64url(nb, (size_t)nl, n64, sizeof(n64));
  b64url(eb, (size_t)el, e64, sizeof(e64));
  r->cache_control = "public, max-age=19204, must-revalidate, no-transform";
  emu_reply_json(r, 200,
                 json_pack("{s:[{s:s, s:s, s:s, s:s, s:s, s:s}]}", "keys",
                           "kty", "RSA", "alg", "RS256", "use", "sig", "kid",
                           kid, "n", n64, "e", e64));
}

char *emu_oidc_token(const char *audience, const char *email)
{
  jwt_t *jwt = NULL;
  char *out = NULL;
  time_t now = time(NULL);

  if (!key_pem || jwt_new(&jwt) != 0)
    return NULL;
  if (jwt_set_alg(jwt, JWT_ALG_RS256, (const unsigned char *)key_pem,
                  (int)strlen(key_pem)) == 0 &&
      jwt_add_header(jwt, "kid", kid) == 0 &&
      jwt_add_grant(jwt, "iss", "https://accounts.google.com") == 0 &&
      jwt_add_grant(jwt, "aud", audience) == 0 &&
      jwt_add_grant(jwt, "azp", "104680173952345678901") == 0 &&
      jwt_add_grant(jwt, "sub", "104680173952345678901") == 0 &&
      jwt_add_grant(jwt, "email", email) == 0 &&
      jwt_add_grant_bool(jwt, "email_verified", 1) == 0 &&
      jwt_add_grant_int(jwt, "iat", (long)now) == 0 &&
      jwt_add_grant_int(jwt, "exp", (long)now + 3600) == 0)
    out = jwt_encode_str(jwt);
  jwt_free(jwt);
  return out;
}
