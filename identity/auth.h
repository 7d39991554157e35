/*
 * auth.h — bearer-token authentication: the only module that touches libjwt.
 *
 * Tokens are verified with a key chosen from the configuration by the
 * token's own header (alg, kid) after the alg has been checked against the
 * allow-list, so libjwt never decodes without a key and an HS256 token can
 * never be verified with an RSA public key. Time claims are checked here with
 * the caller's clock (injectable for tests).
 */
#ifndef GPUGATE_AUTH_H
#define GPUGATE_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "server/config.h"

#define AUTH_MAX_TOKEN 8192   /* bytes; longer tokens are rejected */
#define AUTH_TOKEN_CACHE 4096 /* verified tokens remembered per context */

enum auth_role {
  AUTH_ROLE_NONE = 0,
  AUTH_ROLE_MEMBER = 1 << 0,
  AUTH_ROLE_ADMIN = 1 << 1,
  AUTH_ROLE_FINANCE = 1 << 2,
  AUTH_ROLE_METRICS = 1 << 3 /* reads /metrics in full, nothing else */
};

#define AUTH_MAX_GRANTS 16 /* grants of one principal kept */

/* One thing a principal may do: a role, and for a member its team. */
struct auth_grant {
  enum auth_role role;
  char team[64]; /* "" unless the grant carries a team */
};

/* Who the caller is, from a verified token. */
struct auth_principal {
  char team[64];       /* the team of the grant in effect for this request
                          ("team" claim of gpugate's tokens); "" when it
                          carries none */
  enum auth_role role; /* the role of the grant in effect */
  char subject[128];   /* "sub" claim, "" if absent */
  long long exp;       /* "exp" claim: when the token expires (Unix s) */
  char issuer[256];    /* "iss" claim, "" if absent */
  char email[256];     /* the verified email of a provider token, else "" */
  bool provider;       /* a token of the organisation's OpenID Provider */
  bool session;        /* from the console's session cookie, not a token */
  /* everything the principal may do: gpugate's own tokens carry one grant
   * (team, role); a provider token's come from the access bindings */
  struct auth_grant grants[AUTH_MAX_GRANTS];
  int n_grants;
  unsigned long bindings_gen; /* the bindings the grants came from */
};

struct auth_ctx;

/*
 * Build the verifier from cfg (keys are copied; cfg may be freed after).
 * Returns NULL and writes a one-line reason naming the variable into err.
 */
struct auth_ctx *auth_new(const struct config *cfg, char *err, size_t errlen);
void auth_free(struct auth_ctx *a); /* accepts NULL */

/*
 * Verify token (NUL-terminated, without "Bearer ") at time now. On success
 * fills *out and returns 0. On failure returns -1 and writes a short reason
 * into why (safe for a client: it never contains the token). A token that
 * passed before is answered from the context's cache of verified tokens
 * (identity/tokencache.h) until its exp. Thread-safe: a may be shared by all
 * threads.
 */
int auth_verify(const struct auth_ctx *a, const char *token, time_t now,
                struct auth_principal *out, char *why, size_t whylen);

/* "member" | "admin" | "finance" | "metrics" → role; AUTH_ROLE_NONE
 * otherwise. */
enum auth_role auth_role_parse(const char *s);
const char *auth_role_name(enum auth_role r);

/*
 * Mint a token for team/role valid ttl_s seconds from now (team NULL: no
 * team claim, for any role but member), signed with
 * alg ("HS256", "RS256" or "ES256") and key (HS256 secret bytes or a PEM
 * private key), with iss/aud from cfg when set and kid when non-NULL.
 * Returns a new malloc'd string (caller frees) or NULL with err filled.
 */
char *auth_mint(const struct config *cfg, const char *alg,
                const unsigned char *key, size_t keylen, const char *kid,
                const char *team, const char *role, long ttl_s, time_t now,
                char *err, size_t errlen);

#endif
