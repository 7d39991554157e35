/*
 * auth_verify.c — one bearer token checked (auth_verify) against the
 * context auth.c built: shape and canonical base64url, the JOSE header and
 * the alg allow-list, the signature through libjwt with the key the header
 * selects, then the claims at the caller's clock; a provider's token goes to
 * its own verifier (identity/idp.h), and a token that passed is remembered
 * (identity/tokencache.h) until its exp.
 *
 * libjwt 1.10 decodes without a key and verifies HS256 with whatever bytes
 * it is handed, so jwt_decode() only ever runs here with the key chosen by
 * alg family, after which jwt_get_alg() must still name the same alg.
 * Header and payload are decoded strictly (canonical unpadded base64url, no
 * duplicate JSON keys, no trailing bytes) so that this file and libjwt
 * cannot read different values from one token. Reasons given back to
 * callers are short, lower-case, and never contain any part of the token.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <jwt.h>
#include <openssl/err.h>

#include "identity/auth.h"
#include "identity/auth_internal.h"
#include "lib/b64url.h"
#include "identity/bindings.h"
#include "identity/idp.h"
#include "identity/tokencache.h"

/*
 * Decode n characters of canonical unpadded base64url (RFC 7515 §2): no
 * padding, no whitespace, unused trailing bits zero, so every byte string
 * has exactly one accepted encoding. Returns a new buffer (caller frees)
 * with one spare NUL byte, or NULL.
 */
static unsigned char *b64url_decode_new(const char *s, size_t n, size_t *outlen)
{
  size_t cap = n / 4 * 3 + 3;
  unsigned char *buf;

  if (n == 0 || !(buf = malloc(cap + 1)))
    return NULL;
  if (b64url_decode(s, n, buf, cap, outlen)) {
    free(buf);
    return NULL;
  }
  buf[*outlen] = '\0';
  return buf;
}

/*
 * Check the JOSE header (borrowed). Sets *alg_i to the index into auth_algs[]
 * and *kid to the header's kid (borrowed from header; NULL when absent).
 */
static int check_header(const struct auth_ctx *a, const json_t *header,
                        int *alg_i, const char **kid, const char **reason)
{
  const json_t *v; /* borrowed */

  v = json_object_get(header, "alg");
  if (!json_is_string(v)) {
    *reason = "missing token algorithm";
    return -1;
  }
  *alg_i = auth_find_alg(json_string_value(v));
  if (*alg_i < 0 || !(a->algs & auth_algs[*alg_i].bit)) {
    *reason = "algorithm not allowed";
    return -1;
  }
  v = json_object_get(header, "typ");
  if (v &&
      (!json_is_string(v) || strcasecmp(json_string_value(v), "JWT") != 0)) {
    *reason = "unsupported token type";
    return -1;
  }
  if (json_object_get(header, "crit")) {
    *reason = "unsupported critical header";
    return -1;
  }
  *kid = NULL;
  v = json_object_get(header, "kid");
  if (v) {
    if (!json_is_string(v) || !json_string_value(v)[0]) {
      *reason = "invalid key id";
      return -1;
    }
    *kid = json_string_value(v);
  }
  return 0;
}

/* 0 when libjwt verifies token with key and reports the expected alg. */
static int decode_with(const char *token, const unsigned char *key, int key_len,
                       jwt_alg_t want)
{
  jwt_t *jwt = NULL; /* new */
  int rc = -1;

  if (jwt_decode(&jwt, token, key, key_len) != 0 || !jwt)
    goto out;
  if (jwt_get_alg(jwt) != want)
    goto out;
  rc = 0;
out:
  if (jwt)
    jwt_free(jwt);
  ERR_clear_error();
  return rc;
}

/*
 * Verify the signature with the key the header selects. HS256 uses only the
 * configured secret (a kid is ignored: there is one secret). RS256/ES256 use
 * the public key named by kid, which must be of the alg's type; without a
 * kid, every key without an id of the right type is tried, or else the only
 * key of that type.
 */
static int verify_signature(const struct auth_ctx *a, const char *token,
                            int alg_i, const char *kid, const char **reason)
{
  enum key_type want = auth_algs[alg_i].key;
  int i, n_typed = 0, last_typed = -1, tried = 0;

  *reason = "invalid signature";
  if (want == KEY_NONE)
    return decode_with(token, a->secret, a->secret_len, auth_algs[alg_i].jwt);

  if (kid) {
    for (i = 0; i < a->n_keys; i++)
      if (strcmp(a->keys[i].kid, kid) == 0)
        break;
    if (i == a->n_keys) {
      *reason = "unknown key id";
      return -1;
    }
    if (a->keys[i].type != want) {
      *reason = "key id does not match algorithm";
      return -1;
    }
    return decode_with(token, a->keys[i].pem, a->keys[i].pem_len,
                       auth_algs[alg_i].jwt);
  }

  for (i = 0; i < a->n_keys; i++) {
    if (a->keys[i].type != want)
      continue;
    n_typed++;
    last_typed = i;
    if (a->keys[i].kid[0])
      continue;
    tried++;
    if (decode_with(token, a->keys[i].pem, a->keys[i].pem_len,
                    auth_algs[alg_i].jwt) == 0)
      return 0;
  }
  if (tried)
    return -1;
  if (n_typed == 1)
    return decode_with(token, a->keys[last_typed].pem,
                       a->keys[last_typed].pem_len, auth_algs[alg_i].jwt);
  *reason = "key id required";
  return -1;
}

/*
 * Read an integer NumericDate claim from payload (borrowed). Returns 1 when
 * present and within [0, TIME_CLAIM_MAX], 0 when absent, -1 otherwise.
 */
static int time_claim(const json_t *payload, const char *name, long long *v)
{
  const json_t *j = json_object_get(payload, name); /* borrowed */

  if (!j)
    return 0;
  if (!json_is_integer(j))
    return -1;
  *v = (long long)json_integer_value(j);
  return *v >= 0 && *v <= TIME_CLAIM_MAX ? 1 : -1;
}

/* aud (borrowed, may be NULL) is want, or an array containing want. */
static int audience_matches(const json_t *aud, const char *want)
{
  size_t i;
  const json_t *v; /* borrowed */

  if (json_is_string(aud))
    return strcmp(json_string_value(aud), want) == 0;
  if (!json_is_array(aud))
    return 0;
  json_array_foreach (aud, i, v) {
    if (json_is_string(v) && strcmp(json_string_value(v), want) == 0)
      return 1;
  }
  return 0;
}

/* Check the claims in payload (borrowed) at now and fill *p. */
static int check_claims(const struct auth_ctx *a, const json_t *payload,
                        time_t now, struct auth_principal *p,
                        const char **reason)
{
  const json_t *v; /* borrowed */
  long long exp = 0, iat = 0, nbf = 0, t = (long long)now;
  int has_nbf;
  const char *s;
  size_t n;

  if (time_claim(payload, "exp", &exp) != 1) {
    *reason = "missing or invalid exp claim";
    return -1;
  }
  if (time_claim(payload, "iat", &iat) != 1) {
    *reason = "missing or invalid iat claim";
    return -1;
  }
  has_nbf = time_claim(payload, "nbf", &nbf);
  if (has_nbf < 0) {
    *reason = "invalid nbf claim";
    return -1;
  }
  if (t - a->leeway_s > exp) {
    *reason = "token expired";
    return -1;
  }
  if (has_nbf && t + a->leeway_s < nbf) {
    *reason = "token not yet valid";
    return -1;
  }
  if (iat > t + a->leeway_s) {
    *reason = "token issued in the future";
    return -1;
  }
  if (exp < iat) {
    *reason = "token expires before it was issued";
    return -1;
  }
  if (exp - iat > a->max_lifetime_s) {
    *reason = "token lifetime too long";
    return -1;
  }
  if (a->issuer[0]) {
    v = json_object_get(payload, "iss");
    if (!json_is_string(v) || strcmp(json_string_value(v), a->issuer) != 0) {
      *reason = "invalid issuer";
      return -1;
    }
  }
  if (a->audience[0] &&
      !audience_matches(json_object_get(payload, "aud"), a->audience)) {
    *reason = "invalid audience";
    return -1;
  }

  memset(p, 0, sizeof(*p));
  p->exp = exp;
  v = json_object_get(payload, "iss");
  if (json_is_string(v) && strlen(json_string_value(v)) < sizeof(p->issuer))
    memcpy(p->issuer, json_string_value(v), strlen(json_string_value(v)) + 1);
  v = json_object_get(payload, "role");
  p->role = json_is_string(v) ? auth_role_parse(json_string_value(v))
                              : AUTH_ROLE_NONE;
  if (p->role == AUTH_ROLE_NONE) {
    *reason = "missing or invalid role claim";
    return -1;
  }

  /* a member belongs to one team; an administrator, a finance analyst or
   * a metrics scraper need not belong to any, but a team they do carry
   * must still be a valid name */
  v = json_object_get(payload, "team");
  if (v || p->role == AUTH_ROLE_MEMBER) {
    if (!json_is_string(v) || !auth_valid_team(json_string_value(v))) {
      *reason = "missing or invalid team claim";
      return -1;
    }
    s = json_string_value(v);
    memcpy(p->team, s, strlen(s) + 1);
  }

  v = json_object_get(payload, "sub");
  if (v) {
    if (!json_is_string(v)) {
      *reason = "invalid sub claim";
      return -1;
    }
    s = json_string_value(v);
    n = strnlen(s, sizeof(p->subject));
    if (n == sizeof(p->subject)) {
      *reason = "sub claim too long";
      return -1;
    }
    memcpy(p->subject, s, n + 1);
  }
  /* gpugate's own token grants exactly what it says */
  p->grants[0].role = p->role;
  memcpy(p->grants[0].team, p->team, sizeof(p->team));
  p->n_grants = 1;
  return 0;
}

/*
 * Find the two dots of a compact JWS in token[0..len): only base64url
 * characters and exactly two dots, every part non-empty.
 */
static int split_token(const char *token, size_t len, size_t *dot1,
                       size_t *dot2)
{
  size_t i, dots = 0;

  for (i = 0; i < len; i++) {
    if (token[i] == '.') {
      if (dots == 2)
        return -1;
      if (dots == 0)
        *dot1 = i;
      else
        *dot2 = i;
      dots++;
    } else if (b64url_value(token[i]) < 0) {
      return -1;
    }
  }
  if (dots != 2 || *dot1 == 0 || *dot2 == *dot1 + 1 || *dot2 + 1 == len)
    return -1;
  return 0;
}

/*
 * Verify token at now (see auth.h). Order: shape and encoding, header and
 * alg allow-list, signature with the selected key, then claims, so nothing
 * about the claims of an unverified token is revealed. Thread-safe; a is
 * only read.
 */
int auth_verify(const struct auth_ctx *a, const char *token, time_t now,
                struct auth_principal *out, char *why, size_t whylen)
{
  const char *reason = "invalid token";
  const char *kid = NULL;
  unsigned char *hbuf = NULL, *pbuf = NULL, *sbuf = NULL;
  json_t *header = NULL, *payload = NULL; /* new */
  struct auth_principal p;
  size_t len, dot1 = 0, dot2 = 0, hlen = 0, plen = 0, slen = 0;
  unsigned char ckey[TOKENCACHE_KEY_LEN];
  long long exp = 0;
  int alg_i = -1, rc = -1, keyed;

  if (!a || !token || !out)
    goto out;
  len = strnlen(token, AUTH_MAX_TOKEN + 1);
  if (len == 0) {
    reason = "empty token";
    goto out;
  }
  if (len > AUTH_MAX_TOKEN) {
    reason = "token too long";
    goto out;
  }
  /* a token that passed every check before passes them now, up to exp */
  keyed = a->cache && !tokencache_key(a->cache, token, len, ckey);
  /* a provider token's grants stand only while the bindings they were
   * drawn from do; after a change it is verified (and bound) again */
  if (keyed && tokencache_get(a->cache, ckey, now, out) &&
      (!out->provider || out->bindings_gen == bindings_generation()))
    return 0;
  reason = "malformed token";
  if (split_token(token, len, &dot1, &dot2))
    goto out;
  hbuf = b64url_decode_new(token, dot1, &hlen);
  pbuf = b64url_decode_new(token + dot1 + 1, dot2 - dot1 - 1, &plen);
  sbuf = b64url_decode_new(token + dot2 + 1, len - dot2 - 1, &slen);
  if (!hbuf || !pbuf || !sbuf)
    goto out;
  header = json_loadb((const char *)hbuf, hlen, JSON_REJECT_DUPLICATES, NULL);
  if (!json_is_object(header)) {
    reason = "malformed token header";
    goto out;
  }
  payload = json_loadb((const char *)pbuf, plen, JSON_REJECT_DUPLICATES, NULL);
  if (!json_is_object(payload)) {
    reason = "malformed token payload";
    goto out;
  }
  if (a->idp &&
      idp_trusts(a->idp, json_string_value(json_object_get(payload, "iss")))) {
    /* the organisation's provider: its own verifier, no libjwt */
    if (idp_verify(a->idp, token, now, &p, &reason) != 0)
      goto out;
    exp = p.exp;
    goto verified;
  }
  if (check_header(a, header, &alg_i, &kid, &reason))
    goto out;
  if ((auth_algs[alg_i].jwt == JWT_ALG_HS256 && slen != HS256_SIG_LEN) ||
      (auth_algs[alg_i].jwt == JWT_ALG_ES256 && slen != ES256_SIG_LEN)) {
    reason = "invalid signature";
    goto out;
  }
  if (verify_signature(a, token, alg_i, kid, &reason))
    goto out;
  if (check_claims(a, payload, now, &p, &reason))
    goto out;
  if (time_claim(payload, "exp", &exp) != 1)
    goto out;
verified:
  *out = p;
  rc = 0;
  if (keyed)
    tokencache_put(a->cache, ckey, now, exp, &p);
out:
  if (rc && why && whylen)
    snprintf(why, whylen, "%s", reason);
  json_decref(header);
  json_decref(payload);
  free(hbuf);
  free(pbuf);
  free(sbuf);
  return rc;
}
