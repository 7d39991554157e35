/*
 * fuzz_oidc.c — Pub/Sub push authentication: Google's JWK set and OIDC ID
 * tokens, with a fixed clock and key. An input whose first byte is even
 * is a JWK set body (jwks_parse) and a Cache-Control value
 * (jwks_max_age): every key parsed must carry a kid and a PEM. Otherwise
 * the rest is a token as it arrives after "Bearer ", or, when the first
 * byte is 1 mod 4, "HEADER\nCLAIMS" signed RS256 with the test key
 * (tests/fixtures/keys/rsa1.pem, kid "k1") so that the claim checks (iss,
 * aud, email, email_verified, exp, iat, nbf) run behind a valid
 * signature. oidc_verify() must give 0 or -1 with a reason that never
 * contains the token.
 */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch/jwks.h"
#include "server/oidc.h"
#include "tests/fuzz/fake_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW ((time_t)1800000000)
#define KEY_DIR "tests/fixtures/keys/"

static char *public_pem;      /* rsa1.pub.pem */
static EVP_PKEY *private_key; /* rsa1.pem */

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  char *s;
  long n;

  if (!f)
    return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0 || !(s = malloc((size_t)n + 1))) {
    fclose(f);
    return NULL;
  }
  if (fread(s, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(s);
    return NULL;
  }
  fclose(f);
  s[n] = '\0';
  return s;
}

static void setup(void)
{
  FILE *f = fopen(KEY_DIR "rsa1.pem", "rb");

  public_pem = slurp(KEY_DIR "rsa1.pub.pem");
  if (f) {
    private_key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
  }
  if (!public_pem || !private_key) {
    fprintf(stderr, "fuzz_oidc: run from the repository root (needs %s)\n",
            KEY_DIR);
    abort();
  }
}

static char *key_for(const char *kid, void *ud, char *err, size_t errlen)
{
  (void)ud;
  if (strcmp(kid, "k1") != 0) {
    snprintf(err, errlen, "unknown key id");
    return NULL;
  }
  return strdup(public_pem);
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
    for (i = 0; i < set.n; i++)
      if (!set.keys[i].kid[0] || !set.keys[i].pem ||
          strncmp(set.keys[i].pem, "-----BEGIN PUBLIC KEY-----", 26) != 0)
        abort();
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
  static const struct oidc_want want = {
      "https://gpugate.example/v1/batch/notifications",
      "push@project.iam.gserviceaccount.com", 60};
  const char *reason = NULL;
  char *token = NULL, *header = NULL;
  const uint8_t *claims;
  size_t claims_n;

  if (!public_pem)
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
  if (oidc_verify(token, &want, NOW, key_for, NULL, &reason) != 0) {
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
