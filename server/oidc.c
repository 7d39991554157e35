/*
 * oidc.c — Google OIDC ID tokens checked the way Google documents for
 * authenticated Pub/Sub push (cloud.google.com/pubsub/docs/authenticate-
 * push-subscriptions): signature by one of Google's keys, then iss, aud,
 * email, email_verified, exp and iat.
 *
 * As in server/auth.c, libjwt 1.10 only ever decodes with a key: the
 * header is read here first, alg must be RS256 and the kid picks the key;
 * after jwt_decode() the alg must still be RS256. Claims are read here from
 * the payload, decoded strictly (duplicate keys refused), never through
 * libjwt, so both read the same token.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <jwt.h>
#include <openssl/err.h>

#include "server/b64url.h"
#include "server/oidc.h"

/* Decode the base64url part s[0..n) as JSON (new reference) or NULL. */
static json_t *part_json(const char *s, size_t n)
{
  unsigned char buf[OIDC_TOKEN_MAX];
  size_t o = 0;

  if (n == 0 || n > sizeof(buf) || b64url_decode(s, n, buf, sizeof(buf), &o))
    return NULL;
  return json_loadb((const char *)buf, o, JSON_REJECT_DUPLICATES, NULL);
}

static bool is_int(const json_t *v, long long *out)
{
  if (!json_is_integer(v))
    return false;
  *out = (long long)json_integer_value(v);
  return true;
}

static bool aud_ok(const json_t *aud, const char *want)
{
  size_t i;
  json_t *v;

  if (json_is_string(aud))
    return !strcmp(json_string_value(aud), want);
  if (!json_is_array(aud))
    return false;
  json_array_foreach (aud, i, v)
    if (json_is_string(v) && !strcmp(json_string_value(v), want))
      return true;
  return false;
}

static int check_claims(const json_t *c, const struct oidc_want *w, time_t now,
                        const char **reason)
{
  const char *iss = json_string_value(json_object_get(c, "iss"));
  const char *email = json_string_value(json_object_get(c, "email"));
  long long exp, iat, nbf;

  if (!iss || (strcmp(iss, "https://accounts.google.com") != 0 &&
               strcmp(iss, "accounts.google.com") != 0)) {
    *reason = "issuer is not google";
    return -1;
  }
  if (!aud_ok(json_object_get(c, "aud"), w->audience)) {
    *reason = "wrong audience";
    return -1;
  }
  if (!email || strcmp(email, w->email) != 0) {
    *reason = "wrong service account";
    return -1;
  }
  if (!json_is_true(json_object_get(c, "email_verified"))) {
    *reason = "email not verified";
    return -1;
  }
  if (!is_int(json_object_get(c, "exp"), &exp) ||
      !is_int(json_object_get(c, "iat"), &iat)) {
    *reason = "exp or iat missing";
    return -1;
  }
  if ((long long)now >= exp + w->leeway_s) {
    *reason = "token expired";
    return -1;
  }
  if (iat > (long long)now + w->leeway_s) {
    *reason = "token issued in the future";
    return -1;
  }
  if (exp - iat > OIDC_MAX_LIFETIME_S || exp <= iat) {
    *reason = "token lifetime out of range";
    return -1;
  }
  if (json_object_get(c, "nbf") && (!is_int(json_object_get(c, "nbf"), &nbf) ||
                                    nbf > (long long)now + w->leeway_s)) {
    *reason = "token not yet valid";
    return -1;
  }
  return 0;
}

int oidc_verify(const char *token, const struct oidc_want *want, time_t now,
                oidc_key_fn key_for, void *ud, const char **reason)
{
  const char *dot1, *dot2;
  json_t *header = NULL, *claims = NULL; /* new */
  const json_t *v;                       /* borrowed */
  jwt_t *jwt = NULL;
  char *pem = NULL, why[160];
  size_t n;
  int rc = -1;

  *reason = "malformed token";
  if (!token || (n = strlen(token)) == 0 || n > OIDC_TOKEN_MAX ||
      !want->audience || !want->audience[0] || !want->email || !want->email[0])
    goto out;
  dot1 = strchr(token, '.');
  dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
  if (!dot1 || !dot2 || strchr(dot2 + 1, '.') || dot2[1] == '\0')
    goto out;
  header = part_json(token, (size_t)(dot1 - token));
  claims = part_json(dot1 + 1, (size_t)(dot2 - dot1 - 1));
  if (!json_is_object(header) || !json_is_object(claims))
    goto out;
  v = json_object_get(header, "alg");
  if (!json_is_string(v) || strcmp(json_string_value(v), "RS256") != 0) {
    *reason = "algorithm not RS256";
    goto out;
  }
  if (json_object_get(header, "crit")) {
    *reason = "unsupported critical header";
    goto out;
  }
  v = json_object_get(header, "kid");
  if (!json_is_string(v) || !json_string_value(v)[0]) {
    *reason = "no key id";
    goto out;
  }
  pem = key_for(json_string_value(v), ud, why, sizeof(why));
  if (!pem) {
    *reason = "signing key unknown or unavailable";
    goto out;
  }
  if (jwt_decode(&jwt, token, (const unsigned char *)pem, (int)strlen(pem)) !=
          0 ||
      !jwt || jwt_get_alg(jwt) != JWT_ALG_RS256) {
    *reason = "bad signature";
    goto out;
  }
  if (check_claims(claims, want, now, reason) != 0)
    goto out;
  *reason = NULL;
  rc = 0;
out:
  if (jwt)
    jwt_free(jwt);
  ERR_clear_error();
  free(pem);
  json_decref(header);
  json_decref(claims);
  return rc;
}
