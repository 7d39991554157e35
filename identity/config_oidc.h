/*
 * config_oidc.h — the settings of the organisation's OpenID Provider
 * (SPEC §9 "Identity"): which issuers' tokens gpugate accepts beside its
 * own, for which audiences, signed how, carrying which claims.
 */
#ifndef GPUGATE_CONFIG_OIDC_H
#define GPUGATE_CONFIG_OIDC_H

#include <stddef.h>

#define CONFIG_OIDC_MAX 8 /* issuers, audiences, required claims */

/* What one issuer's tokens must say (GPUGATE_OIDC_PROVIDERS_FILE, each
 * field absent there taking the GPUGATE_OIDC_* value). */
struct config_oidc_provider {
  char audiences[CONFIG_OIDC_MAX][256];
  int n_audiences;
  unsigned algs;          /* enum jwks_alg bits */
  char groups_claim[128]; /* a claim name or a dotted path */
  char required_claim[CONFIG_OIDC_MAX][64];
  char required_value[CONFIG_OIDC_MAX][192];
  int n_required;
};

struct config_oidc {
  char issuers[CONFIG_OIDC_MAX][256]; /* exact, trailing slash included */
  int n_issuers;                      /* 0: provider tokens off */
  char audiences[CONFIG_OIDC_MAX][256];
  int n_audiences;
  unsigned algs;          /* enum jwks_alg bits */
  long jwks_cooldown_s;   /* fewest seconds between two key-set fetches */
  long max_lifetime_s;    /* longest exp - iat of a provider token */
  char groups_claim[128]; /* a claim name or a dotted path */
  char required_claim[CONFIG_OIDC_MAX][64];
  char required_value[CONFIG_OIDC_MAX][192];
  int n_required;
  /* per issuer, index for index with issuers[] */
  struct config_oidc_provider providers[CONFIG_OIDC_MAX];

  /* console single sign-on at the first issuer (off without client_id) */
  char public_url[256];    /* the console's external URL, no trailing / */
  char client_id[256];     /* "" = no sign-in */
  char client_secret[512]; /* from GPUGATE_OIDC_CLIENT_SECRET_FILE */
  long session_ttl_s;      /* console session lifetime */
  long session_refresh_s;  /* re-validate a session with a refresh token */
};

/*
 * Fill *o from GPUGATE_OIDC_ISSUERS, GPUGATE_OIDC_AUDIENCES,
 * GPUGATE_OIDC_ALGS, GPUGATE_OIDC_JWKS_COOLDOWN_S, GPUGATE_OIDC_MAX_LIFETIME_S,
 * GPUGATE_OIDC_GROUPS_CLAIM, GPUGATE_OIDC_REQUIRED_CLAIMS,
 * GPUGATE_OIDC_PROVIDERS_FILE (per issuer: a JSON array of {"issuer",
 * "audiences", "algs", "groups_claim", "required_claims"}, every issuer
 * one of GPUGATE_OIDC_ISSUERS, absent fields taking the values above) and, for
 * the console's sign-in, GPUGATE_PUBLIC_URL, GPUGATE_OIDC_CLIENT_ID,
 * GPUGATE_OIDC_CLIENT_SECRET_FILE and GPUGATE_SESSION_TTL_S. own_issuer
 * is gpugate's own GPUGATE_JWT_ISSUER, which no provider may share.
 * Returns 0, or -1 with a one-line message naming the variable in err.
 */
int config_oidc_load(struct config_oidc *o, const char *own_issuer, char *err,
                     size_t errlen);

#endif
