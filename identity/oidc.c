/*
 * oidc.c — tokens signed with an issuer's published keys, checked in one
 * order for every configuration: shape and strict decoding (canonical
 * base64url, no duplicate JSON keys), header (alg on the policy's list,
 * typ, no crit or b64, a kid), a trusted iss picking the key set, the key
 * pinned to the header's alg, the signature (latchset/jose, which reads
 * the same bytes as this file), then the claims against the caller's
 * clock. libjwt is not used here: it takes the algorithm from the token's
 * header and refuses typ at+jwt.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jose/jws.h>
#include <openssl/err.h>

#include "lib/b64url.h"
#include "identity/discovery.h"
#include "identity/oidc.h"

#define TIME_CLAIM_MAX 253402300799LL /* 9999-12-31T23:59:59Z */

/* Decode the base64url part s[0..n) as JSON (new reference) or NULL. */
static json_t *part_json(const char *s, size_t n)
{
  unsigned char buf[OIDC_TOKEN_MAX];
  size_t o = 0;

  if (n == 0 || n > sizeof(buf) || b64url_decode(s, n, buf, sizeof(buf), &o))
    return NULL;
  return json_loadb((const char *)buf, o, JSON_REJECT_DUPLICATES, NULL);
}

/* A NumericDate claim: 1 present and sane, 0 absent, -1 otherwise. */
static int time_claim(const json_t *c, const char *name, long long *out)
{
  const json_t *v = json_object_get(c, name); /* borrowed */

  if (!v)
    return 0;
  if (!json_is_integer(v))
    return -1;
  *out = (long long)json_integer_value(v);
  return *out >= 0 && *out <= TIME_CLAIM_MAX ? 1 : -1;
}

static bool listed(const char *s, const char *const *list, int n)
{
  int i;

  for (i = 0; s && i < n; i++)
    if (!strcmp(s, list[i]))
      return true;
  return false;
}

static bool aud_ok(const json_t *aud, const struct oidc_policy *p)
{
  size_t i;
  json_t *v; /* borrowed */

  if (json_is_string(aud))
    return listed(json_string_value(aud), p->audiences, p->n_audiences);
  if (!json_is_array(aud))
    return false;
  json_array_foreach (aud, i, v)
    if (listed(json_string_value(v), p->audiences, p->n_audiences))
      return true;
  return false;
}

/* The claim c[name] equals want: a string, or a boolean spelt true/false. */
static bool claim_is(const json_t *c, const char *name, const char *want)
{
  const json_t *v = json_object_get(c, name); /* borrowed */

  if (json_is_string(v))
    return !strcmp(json_string_value(v), want);
  if (json_is_boolean(v))
    return !strcmp(want, json_is_true(v) ? "true" : "false");
  return false;
}

static int check_times(const json_t *c, const struct oidc_policy *p, time_t now,
                       const char **reason)
{
  long long exp = 0, iat = 0, nbf = 0, t = (long long)now;
  int has_nbf;

  if (time_claim(c, "exp", &exp) != 1 || time_claim(c, "iat", &iat) != 1) {
    *reason = "exp or iat missing";
    return -1;
  }
  has_nbf = time_claim(c, "nbf", &nbf);
  if (t >= exp + p->leeway_s) {
    *reason = "token expired";
    return -1;
  }
  if (iat > t + p->leeway_s) {
    *reason = "token issued in the future";
    return -1;
  }
  if (exp <= iat || (p->max_lifetime_s > 0 && exp - iat > p->max_lifetime_s)) {
    *reason = "token lifetime out of range";
    return -1;
  }
  if (has_nbf < 0 || (has_nbf && nbf > t + p->leeway_s)) {
    *reason = "token not yet valid";
    return -1;
  }
  return 0;
}

static int check_claims(const json_t *c, const struct oidc_policy *p,
                        time_t now, const char **reason)
{
  const char *email = json_string_value(json_object_get(c, "email"));
  const json_t *aud = json_object_get(c, "aud"); /* borrowed */
  int i;

  if (!aud_ok(aud, p)) {
    *reason = "wrong audience";
    return -1;
  }
  /* several audiences: the party it was issued to (azp) must be one of
   * this policy's (OIDC Core §3.1.3.7), not another audience's client */
  if (json_is_array(aud) && json_array_size(aud) > 1 &&
      !listed(json_string_value(json_object_get(c, "azp")), p->audiences,
              p->n_audiences)) {
    *reason = "several audiences and azp is not one of ours";
    return -1;
  }
  if (check_times(c, p, now, reason))
    return -1;
  if (p->email && (!email || strcmp(email, p->email) != 0)) {
    *reason = "wrong service account";
    return -1;
  }
  if (p->email && !json_is_true(json_object_get(c, "email_verified"))) {
    *reason = "email not verified";
    return -1;
  }
  for (i = 0; i < p->n_required; i++)
    if (!claim_is(c, p->required[i].claim, p->required[i].value)) {
      *reason = "a required claim does not hold";
      return -1;
    }
  return 0;
}

/* The header's typ is acceptable: absent, JWT, or at+jwt when allowed. */
static bool typ_ok(const json_t *typ, const struct oidc_policy *p)
{
  const char *s = json_string_value(typ);

  if (!typ)
    return true;
  if (!s)
    return false;
  if (!strcasecmp(s, "JWT"))
    return true;
  if (p->logout_tokens && (!strcasecmp(s, "logout+jwt") ||
                           !strcasecmp(s, "application/logout+jwt")))
    return true;
  return p->access_tokens &&
         (!strcasecmp(s, "at+jwt") || !strcasecmp(s, "application/at+jwt"));
}

static int check_header(const json_t *h, const struct oidc_policy *p,
                        enum jwks_alg *alg, const char **kid,
                        const char **reason)
{
  *alg = jwks_alg_parse(json_string_value(json_object_get(h, "alg")));
  if (*alg == JWKS_ALG_NONE || !(p->algs & (unsigned)*alg)) {
    *reason = "algorithm not allowed";
    return -1;
  }
  if (!typ_ok(json_object_get(h, "typ"), p)) {
    *reason = "unsupported token type";
    return -1;
  }
  if (json_object_get(h, "crit") || json_object_get(h, "b64")) {
    *reason = "unsupported critical header";
    return -1;
  }
  *kid = json_string_value(json_object_get(h, "kid"));
  if (!*kid || !**kid) {
    *reason = "no key id";
    return -1;
  }
  return 0;
}

/* jose verifies the compact JWS token (parts split at dot1, dot2) with jwk. */
static bool signature_ok(const char *token, const char *dot1, const char *dot2,
                         const json_t *jwk)
{
  json_t *jws; /* new */
  bool ok;

  jws = json_pack("{s:s%, s:s%, s:s}", "protected", token,
                  (size_t)(dot1 - token), "payload", dot1 + 1,
                  (size_t)(dot2 - dot1 - 1), "signature", dot2 + 1);
  ok = jws && jose_jws_ver(NULL, jws, NULL, jwk, false);
  json_decref(jws);
  ERR_clear_error();
  return ok;
}

int oidc_token_issuer(const char *token, char *out, size_t len)
{
  const char *dot1 = token ? strchr(token, '.') : NULL;
  const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
  json_t *claims; /* new */
  const char *iss;
  int rc = -1;

  out[0] = '\0';
  if (!dot2 || strlen(token) > OIDC_TOKEN_MAX)
    return -1;
  claims = part_json(dot1 + 1, (size_t)(dot2 - dot1 - 1));
  iss = json_string_value(json_object_get(claims, "iss"));
  if (iss && strlen(iss) < len) {
    memcpy(out, iss, strlen(iss) + 1);
    rc = 0;
  }
  json_decref(claims);
  return rc;
}

int oidc_verify(const char *token, const struct oidc_policy *p, time_t now,
                oidc_key_fn key_for, void *ud, json_t **claims_out,
                const char **reason)
{
  const char *dot1, *dot2, *kid = NULL, *iss;
  json_t *header = NULL, *claims = NULL, *jwk = NULL; /* new */
  enum jwks_alg alg = JWKS_ALG_NONE, pinned = JWKS_ALG_NONE;
  char why[160];
  size_t n, i;
  int rc = -1;

  *reason = "malformed token";
  if (claims_out)
    *claims_out = NULL;
  if (!token || (n = strlen(token)) == 0 || n > OIDC_TOKEN_MAX ||
      p->n_issuers == 0 || p->n_audiences == 0)
    goto out;
  for (i = 0; i < n; i++)
    if (token[i] != '.' && b64url_value(token[i]) < 0)
      goto out;
  dot1 = strchr(token, '.');
  dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
  if (!dot1 || !dot2 || strchr(dot2 + 1, '.') || dot2[1] == '\0')
    goto out;
  header = part_json(token, (size_t)(dot1 - token));
  claims = part_json(dot1 + 1, (size_t)(dot2 - dot1 - 1));
  if (!json_is_object(header) || !json_is_object(claims))
    goto out;
  if (check_header(header, p, &alg, &kid, reason))
    goto out;
  iss = json_string_value(json_object_get(claims, "iss"));
  if (!listed(iss, p->issuers, p->n_issuers)) {
    *reason = "issuer not trusted";
    goto out;
  }
  jwk = key_for(iss, kid, ud, &pinned, why, sizeof(why));
  if (!jwk) {
    if (!strcmp(why, JWKS_ERR_FETCHING))
      *reason = "the issuer's signing keys are still being fetched; retry";
    else if (!strcmp(why, DISCOVERY_ERR_FETCHING))
      *reason = "the issuer's discovery document is still being fetched; "
                "retry";
    else
      *reason = "signing key unknown or unavailable";
    goto out;
  }
  if (pinned != alg) {
    *reason = "algorithm does not match the key";
    goto out;
  }
  if (!signature_ok(token, dot1, dot2, jwk)) {
    *reason = "bad signature";
    goto out;
  }
  if (check_claims(claims, p, now, reason) != 0)
    goto out;
  *reason = NULL;
  if (claims_out) {
    *claims_out = claims;
    claims = NULL;
  }
  rc = 0;
out:
  json_decref(jwk);
  json_decref(header);
  json_decref(claims);
  return rc;
}
