/*
 * config_oidc.c — GPUGATE_OIDC_* read and checked once at start-up: a bad
 * value stops the server with a message naming the variable, so a
 * misspelt algorithm or a claim without a value never silently widens
 * what is accepted.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "identity/discovery.h"
#include "identity/jwks.h"
#include "identity/config_oidc.h"

/*
 * Split the comma-separated value v into at most CONFIG_OIDC_MAX trimmed,
 * non-empty items of at most size-1 bytes, calling each(item, ud).
 * Returns -1 with err filled (naming var) when an item is empty, too long
 * or too many.
 */
static int split(const char *var, const char *v, size_t size,
                 int (*each)(const char *item, void *ud, char *err,
                             size_t errlen),
                 void *ud, char *err, size_t errlen)
{
  const char *p = v;
  int n = 0;

  while (p && *p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char item[512];

    while (len && (*p == ' ' || *p == '\t')) {
      p++;
      len--;
    }
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
      len--;
    if (len == 0 || len >= size || len >= sizeof(item)) {
      snprintf(err, errlen, "%s: item %d is %s", var, n + 1,
               len ? "too long" : "empty");
      return -1;
    }
    if (++n > CONFIG_OIDC_MAX) {
      snprintf(err, errlen, "%s: at most %d items", var, CONFIG_OIDC_MAX);
      return -1;
    }
    memcpy(item, p, len);
    item[len] = '\0';
    if (each(item, ud, err, errlen))
      return -1;
    p = end ? end + 1 : NULL;
  }
  return 0;
}

static int add_issuer(const char *item, void *ud, char *err, size_t errlen)
{
  struct config_oidc *o = ud;

  if (!discovery_url_ok(item)) {
    snprintf(err, errlen,
             "GPUGATE_OIDC_ISSUERS: \"%.200s\" is not an https URL (http:// "
             "only to localhost, 127.0.0.0/8 or [::1])",
             item);
    return -1;
  }
  snprintf(o->issuers[o->n_issuers++], sizeof(o->issuers[0]), "%s", item);
  return 0;
}

static int add_audience(const char *item, void *ud, char *err, size_t errlen)
{
  struct config_oidc *o = ud;

  (void)err;
  (void)errlen;
  snprintf(o->audiences[o->n_audiences++], sizeof(o->audiences[0]), "%s", item);
  return 0;
}

static int add_alg(const char *item, void *ud, char *err, size_t errlen)
{
  struct config_oidc *o = ud;
  enum jwks_alg a = jwks_alg_parse(item);

  if (a == JWKS_ALG_NONE) {
    snprintf(err, errlen,
             "GPUGATE_OIDC_ALGS: \"%.32s\" is not accepted (RS256 or ES256; "
             "never none or an HMAC)",
             item);
    return -1;
  }
  o->algs |= (unsigned)a;
  return 0;
}

/* "claim=value" into claim[64], value[192]; -1 when not that shape. */
static int parse_claim(const char *item, char claim[64], char value[192])
{
  const char *eq = strchr(item, '=');
  size_t n = eq ? (size_t)(eq - item) : 0;

  if (!eq || n == 0 || n >= 64 || !eq[1] || strlen(eq + 1) >= 192)
    return -1;
  memcpy(claim, item, n);
  claim[n] = '\0';
  snprintf(value, 192, "%s", eq + 1);
  return 0;
}

static int add_claim(const char *item, void *ud, char *err, size_t errlen)
{
  struct config_oidc *o = ud;

  if (parse_claim(item, o->required_claim[o->n_required],
                  o->required_value[o->n_required])) {
    snprintf(err, errlen,
             "GPUGATE_OIDC_REQUIRED_CLAIMS: \"%.64s\" is not claim=value",
             item);
    return -1;
  }
  o->n_required++;
  return 0;
}

/* A claim name or dotted path: [A-Za-z0-9_:/-] segments joined by dots. */
static int groups_claim_ok(const char *s)
{
  size_t i, seg = 0;

  for (i = 0; s[i]; i++) {
    char c = s[i];
    if (c == '.') {
      if (seg == 0)
        return 0;
      seg = 0;
      continue;
    }
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '-' || c == ':' ||
          c == '/'))
      return 0;
    seg++;
  }
  return seg > 0;
}

static const char *env(const char *name, const char *dflt)
{
  const char *v = getenv(name);

  return v && *v ? v : dflt;
}

#define PF "GPUGATE_OIDC_PROVIDERS_FILE"

/* v (borrowed) as an array of 1..max (min 0 when empty_ok) strings, each
 * non-empty and shorter than size; -1 with err naming [idx].field. */
static int strings(const json_t *v, size_t idx, const char *field, size_t size,
                   int empty_ok, char *err, size_t errlen)
{
  const json_t *s; /* borrowed */
  size_t i;

  if (!json_is_array(v) || json_array_size(v) > CONFIG_OIDC_MAX ||
      (!empty_ok && json_array_size(v) == 0))
    goto bad;
  json_array_foreach (v, i, s) {
    if (!json_is_string(s) || json_string_length(s) == 0 ||
        json_string_length(s) >= size)
      goto bad;
  }
  return 0;
bad:
  snprintf(err, errlen,
           PF ": [%zu].%s: expected an array of %s to %d non-empty strings "
              "of at most %zu bytes",
           idx, field, empty_ok ? "0" : "1", CONFIG_OIDC_MAX, size - 1);
  return -1;
}

/* One entry e (borrowed) of the providers file, the idx-th, over d. */
static int provider_entry(const json_t *e, size_t idx,
                          struct config_oidc_provider *d, char *err,
                          size_t errlen)
{
  static const char *const known[] = {"issuer",       "audiences",       "algs",
                                      "groups_claim", "required_claims", NULL};
  const json_t *v, *s; /* borrowed */
  const char *key;
  size_t i;
  int k;

  json_object_foreach ((json_t *)e, key, v) {
    for (k = 0; known[k] && strcmp(known[k], key) != 0; k++)
      ;
    if (!known[k]) {
      snprintf(err, errlen,
               PF ": [%zu].%.64s: unknown field (issuer, audiences, algs, "
                  "groups_claim, required_claims)",
               idx, key);
      return -1;
    }
  }
  if ((v = json_object_get(e, "audiences"))) {
    if (strings(v, idx, "audiences", sizeof(d->audiences[0]), 0, err, errlen))
      return -1;
    d->n_audiences = 0;
    json_array_foreach (v, i, s) {
      snprintf(d->audiences[d->n_audiences++], sizeof(d->audiences[0]), "%s",
               json_string_value(s));
    }
  }
  if ((v = json_object_get(e, "algs"))) {
    if (strings(v, idx, "algs", 16, 0, err, errlen))
      return -1;
    d->algs = 0;
    json_array_foreach (v, i, s) {
      enum jwks_alg a = jwks_alg_parse(json_string_value(s));
      if (a == JWKS_ALG_NONE) {
        snprintf(err, errlen,
                 PF ": [%zu].algs[%zu]: \"%.32s\" is not accepted (RS256 or "
                    "ES256; never none or an HMAC)",
                 idx, i, json_string_value(s));
        return -1;
      }
      d->algs |= (unsigned)a;
    }
  }
  if ((v = json_object_get(e, "groups_claim"))) {
    if (!json_is_string(v) ||
        json_string_length(v) >= sizeof(d->groups_claim) ||
        !groups_claim_ok(json_string_value(v))) {
      snprintf(err, errlen,
               PF ": [%zu].groups_claim: expected a claim name or a dotted "
                  "path such as realm_access.roles",
               idx);
      return -1;
    }
    snprintf(d->groups_claim, sizeof(d->groups_claim), "%s",
             json_string_value(v));
  }
  if ((v = json_object_get(e, "required_claims"))) {
    if (strings(v, idx, "required_claims", 256, 1, err, errlen))
      return -1;
    d->n_required = 0;
    json_array_foreach (v, i, s) {
      if (parse_claim(json_string_value(s), d->required_claim[d->n_required],
                      d->required_value[d->n_required])) {
        snprintf(err, errlen,
                 PF ": [%zu].required_claims[%zu]: \"%.64s\" is not "
                    "claim=value",
                 idx, i, json_string_value(s));
        return -1;
      }
      d->n_required++;
    }
  }
  return 0;
}

/*
 * Every issuer's settings: the GPUGATE_OIDC_* values, then what
 * GPUGATE_OIDC_PROVIDERS_FILE says of it. Strict: an unknown field, an
 * issuer not trusted or listed twice, a value of the wrong shape stops
 * the server with a message naming the entry and the field.
 */
static int load_providers(struct config_oidc *o, char *err, size_t errlen)
{
  const char *path = env(PF, "");
  bool seen[CONFIG_OIDC_MAX] = {false};
  json_t *root = NULL, *e; /* new; borrowed */
  json_error_t jerr;
  size_t idx;
  int i, rc = -1;

  for (i = 0; i < o->n_issuers; i++) {
    struct config_oidc_provider *d = &o->providers[i];
    memcpy(d->audiences, o->audiences, sizeof(d->audiences));
    d->n_audiences = o->n_audiences;
    d->algs = o->algs;
    memcpy(d->groups_claim, o->groups_claim, sizeof(d->groups_claim));
    memcpy(d->required_claim, o->required_claim, sizeof(d->required_claim));
    memcpy(d->required_value, o->required_value, sizeof(d->required_value));
    d->n_required = o->n_required;
  }
  if (!path[0])
    return 0;
  if (!o->n_issuers) {
    snprintf(err, errlen, PF ": needs GPUGATE_OIDC_ISSUERS");
    return -1;
  }
  root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    snprintf(err, errlen, PF ": %.200s: line %d: %.120s", path, jerr.line,
             jerr.text);
    return -1;
  }
  if (!json_is_array(root)) {
    snprintf(err, errlen,
             PF ": expected a JSON array of {\"issuer\", \"audiences\", "
                "\"algs\", \"groups_claim\", \"required_claims\"}");
    goto out;
  }
  json_array_foreach (root, idx, e) {
    const char *iss = json_string_value(json_object_get(e, "issuer"));

    if (!json_is_object(e) || !iss) {
      snprintf(err, errlen,
               PF ": [%zu].issuer: required (an object per issuer)", idx);
      goto out;
    }
    for (i = 0; i < o->n_issuers && strcmp(o->issuers[i], iss) != 0; i++)
      ;
    if (i == o->n_issuers || seen[i]) {
      snprintf(err, errlen, PF ": [%zu].issuer: \"%.200s\" is %s", idx, iss,
               i == o->n_issuers ? "not one of GPUGATE_OIDC_ISSUERS"
                                 : "listed twice");
      goto out;
    }
    seen[i] = true;
    if (provider_entry(e, idx, &o->providers[i], err, errlen))
      goto out;
  }
  rc = 0;
out:
  json_decref(root);
  return rc;
}

/* The console's confidential client: all of it or none. */
static int load_client(struct config_oidc *o, char *err, size_t errlen)
{
  const char *url = env("GPUGATE_PUBLIC_URL", "");
  const char *id = env("GPUGATE_OIDC_CLIENT_ID", "");
  const char *path = env("GPUGATE_OIDC_CLIENT_SECRET_FILE", "");
  const char *v = env("GPUGATE_SESSION_TTL_S", "43200");
  size_t n;
  char *end;
  FILE *f;

  o->session_ttl_s = strtol(v, &end, 10);
  if (*end || end == v || o->session_ttl_s < 60 ||
      o->session_ttl_s > 31L * 86400) {
    snprintf(err, errlen,
             "GPUGATE_SESSION_TTL_S: expected seconds in [60, 2678400]");
    return -1;
  }
  v = env("GPUGATE_SESSION_REFRESH_S", "900");
  o->session_refresh_s = strtol(v, &end, 10);
  if (*end || end == v || o->session_refresh_s < 1 ||
      o->session_refresh_s > 86400) {
    snprintf(err, errlen,
             "GPUGATE_SESSION_REFRESH_S: expected seconds in [1, 86400]");
    return -1;
  }
  if ((strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0 &&
       url[0]) ||
      strlen(url) >= sizeof(o->public_url)) {
    snprintf(err, errlen, "GPUGATE_PUBLIC_URL: expected an http(s) URL");
    return -1;
  }
  n = strlen(url);
  while (n && url[n - 1] == '/')
    n--;
  memcpy(o->public_url, url, n);
  o->public_url[n] = '\0';
  if (!id[0])
    return 0;
  if (strlen(id) >= sizeof(o->client_id)) {
    snprintf(err, errlen, "GPUGATE_OIDC_CLIENT_ID: too long");
    return -1;
  }
  if (!o->n_issuers || !o->public_url[0]) {
    snprintf(err, errlen,
             "GPUGATE_OIDC_CLIENT_ID: console sign-in needs "
             "GPUGATE_OIDC_ISSUERS and GPUGATE_PUBLIC_URL");
    return -1;
  }
  snprintf(o->client_id, sizeof(o->client_id), "%s", id);
  f = path[0] ? fopen(path, "r") : NULL;
  n = f ? fread(o->client_secret, 1, sizeof(o->client_secret) - 1, f) : 0;
  if (f && !feof(f))
    n = 0; /* longer than the buffer */
  if (f)
    fclose(f);
  o->client_secret[n] = '\0';
  while (n &&
         (o->client_secret[n - 1] == '\n' || o->client_secret[n - 1] == '\r'))
    o->client_secret[--n] = '\0';
  if (n == 0) {
    snprintf(err, errlen,
             "GPUGATE_OIDC_CLIENT_SECRET_FILE: missing, empty or over %zu "
             "bytes (required with GPUGATE_OIDC_CLIENT_ID)",
             sizeof(o->client_secret) - 1);
    return -1;
  }
  return 0;
}

int config_oidc_load(struct config_oidc *o, const char *own_issuer, char *err,
                     size_t errlen)
{
  const char *v;
  char *end;
  long n;
  int i;

  memset(o, 0, sizeof(*o));
  if (split("GPUGATE_OIDC_ISSUERS", env("GPUGATE_OIDC_ISSUERS", ""),
            sizeof(o->issuers[0]), add_issuer, o, err, errlen) ||
      split("GPUGATE_OIDC_AUDIENCES", env("GPUGATE_OIDC_AUDIENCES", ""),
            sizeof(o->audiences[0]), add_audience, o, err, errlen) ||
      split("GPUGATE_OIDC_ALGS", env("GPUGATE_OIDC_ALGS", "RS256,ES256"), 16,
            add_alg, o, err, errlen) ||
      split("GPUGATE_OIDC_REQUIRED_CLAIMS",
            env("GPUGATE_OIDC_REQUIRED_CLAIMS", ""), 256, add_claim, o, err,
            errlen))
    return -1;
  for (i = 0; i < o->n_issuers; i++)
    if (own_issuer && !strcmp(o->issuers[i], own_issuer)) {
      snprintf(err, errlen,
               "GPUGATE_OIDC_ISSUERS: \"%.200s\" is gpugate's own "
               "GPUGATE_JWT_ISSUER",
               own_issuer);
      return -1;
    }
  if (o->n_issuers && !o->n_audiences) {
    snprintf(err, errlen,
             "GPUGATE_OIDC_AUDIENCES: required when GPUGATE_OIDC_ISSUERS is "
             "set (the aud values gpugate's tokens carry)");
    return -1;
  }
  v = env("GPUGATE_OIDC_JWKS_COOLDOWN_S", "30");
  n = strtol(v, &end, 10);
  if (*end || end == v || n < 1 || n > 86400) {
    snprintf(err, errlen,
             "GPUGATE_OIDC_JWKS_COOLDOWN_S: expected seconds in [1, 86400]");
    return -1;
  }
  o->jwks_cooldown_s = n;
  v = env("GPUGATE_OIDC_MAX_LIFETIME_S", "86400");
  n = strtol(v, &end, 10);
  if (*end || end == v || n < 60 || n > 31L * 86400) {
    snprintf(err, errlen,
             "GPUGATE_OIDC_MAX_LIFETIME_S: expected seconds in [60, 2678400]");
    return -1;
  }
  o->max_lifetime_s = n;
  v = env("GPUGATE_OIDC_GROUPS_CLAIM", "groups");
  if (strlen(v) >= sizeof(o->groups_claim) || !groups_claim_ok(v)) {
    snprintf(err, errlen,
             "GPUGATE_OIDC_GROUPS_CLAIM: expected a claim name or a dotted "
             "path such as realm_access.roles");
    return -1;
  }
  snprintf(o->groups_claim, sizeof(o->groups_claim), "%s", v);
  if (load_providers(o, err, errlen))
    return -1;
  return load_client(o, err, errlen);
}
