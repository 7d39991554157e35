/*
 * fuzz_oidc.c — the one key-set parser and the one verifier, with a fixed
 * clock and key. An input whose first byte is even is a JWK set body
 * (jwks_parse) and a Cache-Control value (jwks_max_age): every key parsed
 * must carry a kid and a public JWK pinned to RS256 or ES256. Otherwise
 * the rest is a token as it arrives after "Bearer ", or, when the first
 * byte is 1 mod 4, "HEADER\nCLAIMS" signed RS256 with the test key
 * (tests/fixtures/keys/rsa1.pem, kid "k1") so that the claim checks run
 * behind a valid signature; bit 2 of the first byte picks the policy
 * (Pub/Sub push, or an OpenID Provider's tokens with at+jwt, several
 * audiences and a required claim), and bit 3 the console's Back-Channel
 * Logout tokens (typ logout+jwt), whose verified claims then go through
 * idp_logout_claims(). oidc_verify() must give 0 or -1 with a reason that
 * never contains the token; an accepted logout token names a sid or a sub.
 */
#include <jose/jose.h>
#include <jose/openssl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "identity/jwks.h"
#include "identity/idp.h"
#include "identity/oidc.h"
#include "tests/fuzz/fake_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW ((time_t)1800000000)
#define KEY_DIR "tests/fixtures/keys/"

static json_t *public_jwk;    /* rsa1.pub.pem as the key set pins it */
static EVP_PKEY *private_key; /* rsa1.pem */

static void setup(void)
{
  FILE *f = fopen(KEY_DIR "rsa1.pem", "rb");

  if (f) {
    private_key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
  }
  if (private_key) {
    public_jwk = jose_openssl_jwk_from_EVP_PKEY(NULL, private_key);
    if (public_jwk && jose_jwk_pub(NULL, public_jwk))
      json_object_set_new(public_jwk, "alg", json_string("RS256"));
  }
  if (!public_jwk || !private_key) {
    fprintf(stderr, "fuzz_oidc: run from the repository root (needs %s)\n",
            KEY_DIR);
    abort();
  }
}

static json_t *key_for(const char *iss, const char *kid, void *ud,
                       enum jwks_alg *alg, char *err, size_t errlen)
{
  (void)iss;
  (void)ud;
  if (strcmp(kid, "k1") != 0) {
    snprintf(err, errlen, "unknown key id");
    return NULL;
  }
  *alg = JWKS_ALG_RS256;
  return json_incref(public_jwk);
}

/* base64url without padding of in[0..n) at out; returns the length. */
static size_t b64url(const uint8_t *in, size_t n, char *out)
{
  static const char tab[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t i, o = 0;

  for (i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16;
    size_t k = n - i < 3 ? n - i : 3;
    if (k > 1)
      v |= (uint32_t)in[i + 1] << 8;
    if (k > 2)
      v |= in[i + 2];
    out[o++] = tab[v >> 18];
    out[o++] = tab[(v >> 12) & 63];
    if (k > 1)
      out[o++] = tab[(v >> 6) & 63];
    if (k > 2)
      out[o++] = tab[v & 63];
  }
  return o;
}

/* header.claims.signature, RS256 with the test key; new string or NULL. */
static char *sign(const char *header, const uint8_t *claims, size_t claims_n)
{
  size_t hn = strlen(header), o, siglen = 0;
  char *tok = malloc(4 * (hn + claims_n) / 3 + 1024);
  unsigned char sig[1024];
  EVP_MD_CTX *md = EVP_MD_CTX_new();

  if (!tok || !md)
    goto fail;
  o = b64url((const uint8_t *)header, hn, tok);
  tok[o++] = '.';
  o += b64url(claims, claims_n, tok + o);
  siglen = sizeof(sig);
  if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, private_key) != 1 ||
      EVP_DigestSign(md, sig, &siglen, (const unsigned char *)tok, o) != 1)
    goto fail;
  tok[o++] = '.';
  o += b64url(sig, siglen, tok + o);
  tok[o] = '\0';
  EVP_MD_CTX_free(md);
  return tok;
fail:
  EVP_MD_CTX_free(md);
  free(tok);
  return NULL;
}

static void fuzz_jwks(const uint8_t *data, size_t size)
{
  struct jwks_set set;
  char err[256], *header;
  int i;

  memset(&set, 0, sizeof(set));
  if (jwks_parse((const char *)data, size, &set, err, sizeof(err)) == 0) {
    if (set.n < 1 || set.n > JWKS_MAX_KEYS)
      abort();
    for (i = 0; i < set.n; i++) {
      const json_t *k = set.keys[i].jwk;
      const char *alg = json_string_value(json_object_get(k, "alg"));
      if (!set.keys[i].kid[0] || !json_is_object(k) || !alg ||
          strcmp(alg, jwks_alg_name(set.keys[i].alg)) != 0 ||
          json_object_get(k, "d") || json_object_get(k, "p"))
        abort(); /* a usable key, pinned, and never a private one */
    }
  } else if (!memchr(err, '\0', sizeof(err))) {
    abort();
  }
  jwks_set_free(&set);
  header = fuzz_strndup(data, size < 256 ? size : 256);
  if (header && jwks_max_age(header) < -1)
    abort();
  free(header);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const struct oidc_policy push = {
      .issuers = {"https://accounts.google.com", "accounts.google.com"},
      .n_issuers = 2,
      .audiences = {"https://gpugate.example/v1/batch/notifications"},
      .n_audiences = 1,
      .algs = JWKS_ALG_RS256,
      .leeway_s = 60,
      .max_lifetime_s = 7200,
      .email = "push@project.iam.gserviceaccount.com"};
  static const struct oidc_policy idp = {
      .issuers = {"https://idp.example.com", "https://accounts.google.com"},
      .n_issuers = 2,
      .audiences = {"gpugate", "api://gpugate"},
      .n_audiences = 2,
      .algs = JWKS_ALG_RS256 | JWKS_ALG_ES256,
      .leeway_s = 60,
      .required = {{"hd", "example.com"}, {"email_verified", "true"}},
      .n_required = 2,
      .access_tokens = true};
  static const struct oidc_policy logout = {
      .issuers = {"https://idp.example.com"},
      .n_issuers = 1,
      .audiences = {"gpugate-console"},
      .n_audiences = 1,
      .algs = JWKS_ALG_RS256 | JWKS_ALG_ES256,
      .leeway_s = 60,
      .max_lifetime_s = 86400,
      .logout_tokens = true};
  json_t *claims_out = NULL;
  char sub[128], sid[256];
  int rc;
  const char *reason = NULL;
  char *token = NULL, *header = NULL;
  const uint8_t *claims;
  size_t claims_n;

  if (!public_jwk)
    setup();
  if (size < 1 || size > 16384)
    return 0;
  if (data[0] % 2 == 0) {
    fuzz_jwks(data + 1, size - 1);
    return 0;
  }
  if (data[0] % 4 == 1) {
    fuzz_split(data + 1, size - 1, '\n', &header, &claims, &claims_n);
    if (header)
      token = sign(header, claims, claims_n);
  } else {
    token = fuzz_strndup(data + 1, size - 1);
  }
  if (!token)
    goto out;
  rc = oidc_verify(token,
                   data[0] & 8   ? &logout
                   : data[0] & 4 ? &idp
                                 : &push,
                   NOW, key_for, NULL, &claims_out, &reason);
  if (rc == 0 && !json_is_object(claims_out))
    abort(); /* an accepted token hands its claims over */
  if (rc == 0 && data[0] & 8) {
    rc = idp_logout_claims(claims_out, sub, sizeof(sub), sid, sizeof(sid),
                           &reason);
    if (rc == 0 &&
        (reason || (!sub[0] && !sid[0]) || !memchr(sub, '\0', sizeof(sub)) ||
         !memchr(sid, '\0', sizeof(sid))))
      abort(); /* accepted: it names whose sessions end */
  }
  json_decref(claims_out);
  if (rc != 0) {
    if (!reason || !*reason)
      abort(); /* a refusal says why */
    if (strlen(token) >= 16 && strstr(reason, token))
      abort(); /* and never quotes the token */
  }
out:
  free(token);
  free(header);
  return 0;
}
