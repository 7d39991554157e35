/*
 * idp.c — the provider's tokens, as one configuration of the verifier:
 * the configured issuers, audiences, algorithms and required claims, at+jwt
 * access tokens accepted; keys found through each issuer's discovery
 * document. What the principal may do is not in the token: it is the
 * union of the access bindings its sub, verified email and groups match.
 */
#include <stdlib.h>
#include <string.h>

#include "identity/discovery.h"
#include "identity/jwks.h"
#include "identity/bindings.h"
#include "identity/idp.h"
#include "identity/oidc.h"

struct idp {
  struct config_oidc cfg;
  /* one policy per issuer, index for index with cfg.issuers (strings
   * borrowed from cfg): each issuer's own audiences, algorithms and
   * required claims */
  struct oidc_policy policy[CONFIG_OIDC_MAX];
  struct oidc_policy console; /* ID tokens of the console's sign-in */
};

/* The policy of issuer i from its settings in p->cfg. */
static void policy_of(struct idp *p, int i, long leeway_s)
{
  const struct config_oidc_provider *d = &p->cfg.providers[i];
  struct oidc_policy *o = &p->policy[i];
  int k;

  o->issuers[0] = p->cfg.issuers[i];
  o->n_issuers = 1;
  for (k = 0; k < d->n_audiences && k < OIDC_MAX_LIST; k++)
    o->audiences[o->n_audiences++] = d->audiences[k];
  for (k = 0; k < d->n_required && k < OIDC_MAX_LIST; k++) {
    o->required[k].claim = d->required_claim[k];
    o->required[k].value = d->required_value[k];
    o->n_required++;
  }
  o->algs = d->algs;
  o->leeway_s = leeway_s;
  o->max_lifetime_s = p->cfg.max_lifetime_s;
  o->access_tokens = true;
}

struct idp *idp_new(const struct config_oidc *o, long leeway_s)
{
  struct idp *p;
  int i;

  if (!o || o->n_issuers == 0 || !(p = calloc(1, sizeof(*p))))
    return NULL;
  p->cfg = *o;
  for (i = 0; i < p->cfg.n_issuers && i < CONFIG_OIDC_MAX; i++)
    policy_of(p, i, leeway_s);
  /* the console's sign-in: the first issuer's ID tokens for its client */
  p->console = p->policy[0];
  p->console.audiences[0] = p->cfg.client_id;
  p->console.n_audiences = 1;
  p->console.access_tokens = false;
  return p;
}

void idp_free(struct idp *p)
{
  free(p);
}

/* The index of issuer iss in p, or -1. */
static int issuer_index(const struct idp *p, const char *iss)
{
  int i;

  for (i = 0; p && iss && i < p->cfg.n_issuers; i++)
    if (!strcmp(iss, p->cfg.issuers[i]))
      return i;
  return -1;
}

bool idp_trusts(const struct idp *p, const char *iss)
{
  return issuer_index(p, iss) >= 0;
}

/* The key for (iss, kid): the issuer's discovered JWKS, through the one
 * key-set cache with the configured cooldown. */
static json_t *key_for(const char *iss, const char *kid, void *ud,
                       enum jwks_alg *alg, char *err, size_t errlen)
{
  const struct idp *p = ud;
  struct discovery_doc doc;
  time_t now = time(NULL);

  if (discovery_get(iss, now, &doc, err, errlen) != 0)
    return NULL;
  return jwks_key(doc.jwks_uri, kid, p->cfg.jwks_cooldown_s, now, alg, err,
                  errlen);
}

size_t idp_groups(const json_t *claims, const char *path, const char **out,
                  size_t max)
{
  const json_t *v = claims, *g; /* borrowed */
  const char *p = path;
  char seg[128];
  size_t n = 0, i;

  while (v && *p) {
    const char *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);

    if (len == 0 || len >= sizeof(seg))
      return 0;
    memcpy(seg, p, len);
    seg[len] = '\0';
    v = json_object_get(v, seg);
    p = dot ? dot + 1 : p + len;
  }
  if (json_is_string(v)) {
    if (max)
      out[n++] = json_string_value(v);
    return n;
  }
  json_array_foreach (v, i, g)
    if (n < max && json_is_string(g))
      out[n++] = json_string_value(g);
  return n;
}

/* Copy a string claim into dst; false when present but not a string or
 * too long. */
static bool copy_claim(const json_t *c, const char *name, char *dst,
                       size_t size)
{
  const json_t *v = json_object_get(c, name); /* borrowed */
  const char *s = json_string_value(v);

  dst[0] = '\0';
  if (!v)
    return true;
  if (!s || strlen(s) >= size)
    return false;
  memcpy(dst, s, strlen(s) + 1);
  return true;
}

void idp_bind(struct auth_principal *p, const char *const *groups, size_t n)
{
  struct bindings_identity id = {p->issuer, p->subject,
                                 p->email[0] ? p->email : NULL, groups, n};

  p->n_grants =
      bindings_grants(&id, p->grants, AUTH_MAX_GRANTS, &p->bindings_gen);
  p->role = AUTH_ROLE_NONE;
  p->team[0] = '\0';
  if (p->n_grants > 0) {
    p->role = p->grants[0].role;
    memcpy(p->team, p->grants[0].team, sizeof(p->team));
  }
}

/* The principal of verified claims (borrowed) into *out; its groups into
 * groups[0..*n) (borrowed from claims). */
static int principal_of(const struct idp *p, const json_t *claims,
                        struct auth_principal *out, const char **groups,
                        size_t *n, const char **reason)
{
  int i;

  memset(out, 0, sizeof(*out));
  out->provider = true;
  out->exp = (long long)json_integer_value(json_object_get(claims, "exp"));
  if (!copy_claim(claims, "iss", out->issuer, sizeof(out->issuer)) ||
      !copy_claim(claims, "sub", out->subject, sizeof(out->subject)) ||
      !out->subject[0]) {
    *reason = "missing or invalid sub claim";
    return -1;
  }
  /* an email counts only when the provider says it verified it */
  if (json_is_true(json_object_get(claims, "email_verified")) &&
      !copy_claim(claims, "email", out->email, sizeof(out->email)))
    out->email[0] = '\0';
  /* verified against iss's policy, so iss is one of p's */
  i = issuer_index(p, out->issuer);
  *n = i < 0 ? 0
             : idp_groups(claims, p->cfg.providers[i].groups_claim, groups,
                          IDP_MAX_GROUPS);
  return 0;
}

int idp_verify(const struct idp *p, const char *token, time_t now,
               struct auth_principal *out, const char **reason)
{
  const char *groups[IDP_MAX_GROUPS];
  json_t *claims = NULL; /* new */
  char iss[256];
  size_t n = 0;
  int rc = -1, i;

  /* the token's own iss picks the policy, which checks iss again */
  oidc_token_issuer(token, iss, sizeof(iss));
  if ((i = issuer_index(p, iss)) < 0) {
    *reason = "issuer not trusted";
    return -1;
  }
  if (oidc_verify(token, &p->policy[i], now, key_for, (void *)p, &claims,
                  reason) != 0)
    return -1;
  if (principal_of(p, claims, out, groups, &n, reason) == 0) {
    idp_bind(out, groups, n);
    *reason = NULL;
    rc = 0;
  }
  json_decref(claims);
  return rc;
}

int idp_verify_logout_token(const struct idp *p, const char *token, time_t now,
                            char *sub, size_t sublen, char *sid, size_t sidlen,
                            const char **reason)
{
  struct oidc_policy pol;
  json_t *claims = NULL; /* new */
  int rc;

  sub[0] = sid[0] = '\0';
  if (!p->cfg.client_id[0]) {
    *reason = "console sign-in is not configured";
    return -1;
  }
  /* the console's client at the first issuer; typ logout+jwt allowed, and
   * no required claim: a logout token carries none of the ID token's */
  pol = p->console;
  pol.logout_tokens = true;
  pol.n_required = 0;
  if (oidc_verify(token, &pol, now, key_for, (void *)p, &claims, reason) != 0)
    return -1;
  rc = idp_logout_claims(claims, sub, sublen, sid, sidlen, reason);
  json_decref(claims);
  return rc;
}

int idp_logout_claims(const json_t *claims, char *sub, size_t sublen, char *sid,
                      size_t sidlen, const char **reason)
{
  const json_t *events = json_object_get(claims, "events"); /* borrowed */

  sub[0] = sid[0] = '\0';
  if (!json_is_object(events) ||
      !json_is_object(json_object_get(events, IDP_LOGOUT_EVENT))) {
    *reason = "no back-channel logout event";
    return -1;
  }
  if (json_object_get(claims, "nonce")) {
    *reason = "a logout token carries no nonce";
    return -1;
  }
  if (!copy_claim(claims, "sub", sub, sublen) ||
      !copy_claim(claims, "sid", sid, sidlen)) {
    sub[0] = sid[0] = '\0';
    *reason = "sub or sid is not a string that fits";
    return -1;
  }
  if (!sub[0] && !sid[0]) {
    *reason = "neither sid nor sub";
    return -1;
  }
  *reason = NULL;
  return 0;
}

int idp_verify_id_token(const struct idp *p, const char *token,
                        const char *nonce, bool refreshed, time_t now,
                        struct auth_principal *out, json_t **groups, char *sid,
                        size_t sidlen, const char **reason)
{
  const char *g[IDP_MAX_GROUPS];
  json_t *claims = NULL; /* new */
  const char *got;
  size_t n = 0, i;
  int rc = -1;

  *groups = NULL;
  if (!p->cfg.client_id[0]) {
    *reason = "console sign-in is not configured";
    return -1;
  }
  if (oidc_verify(token, &p->console, now, key_for, (void *)p, &claims,
                  reason) != 0)
    return -1;
  got = json_string_value(json_object_get(claims, "nonce"));
  if (got ? !nonce || strcmp(got, nonce) != 0 : !refreshed) {
    *reason = "nonce does not match the sign-in";
    goto out;
  }
  if (principal_of(p, claims, out, g, &n, reason) != 0)
    goto out;
  if (!copy_claim(claims, "sid", sid, sidlen))
    sid[0] = '\0'; /* an unusable sid: the session ends only by sub */
  *groups = json_array();
  for (i = 0; i < n; i++)
    json_array_append_new(*groups, json_string(g[i]));
  idp_bind(out, g, n);
  *reason = NULL;
  rc = 0;
out:
  json_decref(claims);
  return rc;
}
