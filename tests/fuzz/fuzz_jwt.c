/*
 * fuzz_jwt.c — the JWT path with a fixed clock and key. An input whose
 * first byte is even is a token as it arrives after "Bearer ". Otherwise
 * the rest is "HEADER\nCLAIMS": both JSON texts are base64url-encoded and
 * signed with the configured HS256 secret, so that the header and claim
 * checks (alg, typ, kid, exp, nbf, iat, iss, aud, team, role, lifetime)
 * run behind a valid signature. auth_verify() must never crash, leak or
 * hit undefined behaviour; a success must name a valid team and exactly
 * one role, and a failure must say why without echoing the token.
 */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "identity/auth.h"
#include "tests/fuzz/fake_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW ((time_t)1800000000) /* 2027-01-15 */

static const char secret[] = "fuzz-hs256-secret-0123456789abcdef";

/* base64url without padding of in[0..n) at out; returns the length. */
static size_t b64url(const uint8_t *in, size_t n, char *out)
{
  static const char tab[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t i, o = 0;

  for (i = 0; i + 2 < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
    out[o++] = tab[v >> 18];
    out[o++] = tab[(v >> 12) & 63];
    out[o++] = tab[(v >> 6) & 63];
    out[o++] = tab[v & 63];
  }
  if (n - i == 1) {
    uint32_t v = (uint32_t)in[i] << 16;
    out[o++] = tab[v >> 18];
    out[o++] = tab[(v >> 12) & 63];
  } else if (n - i == 2) {
    uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
    out[o++] = tab[v >> 18];
    out[o++] = tab[(v >> 12) & 63];
    out[o++] = tab[(v >> 6) & 63];
  }
  return o;
}

/* header.claims.signature, HS256 with the secret; new string or NULL. */
static char *sign(const char *header, const uint8_t *claims, size_t claims_n)
{
  size_t hn = strlen(header), o;
  char *tok = malloc(4 * (hn + claims_n) / 3 + 64);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int macn = 0;

  if (!tok)
    return NULL;
  o = b64url((const uint8_t *)header, hn, tok);
  tok[o++] = '.';
  o += b64url(claims, claims_n, tok + o);
  if (!HMAC(EVP_sha256(), secret, (int)sizeof(secret) - 1,
            (const unsigned char *)tok, o, mac, &macn)) {
    free(tok);
    return NULL;
  }
  tok[o++] = '.';
  o += b64url(mac, macn, tok + o);
  tok[o] = '\0';
  return tok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static struct auth_ctx *auth;
  struct auth_principal who;
  char why[256], *token = NULL, *header = NULL;
  const uint8_t *claims;
  size_t claims_n;

  if (!auth) {
    struct identity_config cfg;
    char err[256];
    memset(&cfg, 0, sizeof(cfg));
    cfg.jwt_algorithms = CONFIG_ALG_HS256;
    cfg.hs256_secret = (unsigned char *)strdup(secret);
    cfg.hs256_secret_len = sizeof(secret) - 1;
    memcpy(cfg.jwt_issuer, "gpugate", 8);
    memcpy(cfg.jwt_audience, "gpugate", 8);
    cfg.jwt_leeway_s = 60;
    cfg.jwt_max_lifetime_s = 86400;
    auth = auth_new(&cfg, err, sizeof(err));
    free(cfg.hs256_secret);
    if (!auth)
      abort();
  }
  if (size < 1 || size > (size_t)2 * AUTH_MAX_TOKEN)
    return 0;
  if (data[0] % 2 == 0) {
    token = fuzz_strndup(data + 1, size - 1);
  } else {
    fuzz_split(data + 1, size - 1, '\n', &header, &claims, &claims_n);
    if (header)
      token = sign(header, claims, claims_n);
  }
  if (!token)
    goto out;
  memset(&who, 0, sizeof(who));
  why[0] = '\0';
  if (auth_verify(auth, token, NOW, &who, why, sizeof(why)) == 0) {
    int bits = (int)who.role;
    if (bits == 0 || (bits & (bits - 1)) != 0)
      abort(); /* exactly one role */
    if (!memchr(who.team, '\0', sizeof(who.team)) ||
        !memchr(who.subject, '\0', sizeof(who.subject)))
      abort();
  } else {
    if (!why[0] || !memchr(why, '\0', sizeof(why)))
      abort(); /* a refusal says why */
    if (strlen(token) >= 16 && strstr(why, token))
      abort(); /* and never echoes the token */
  }
out:
  free(token);
  free(header);
  return 0;
}
