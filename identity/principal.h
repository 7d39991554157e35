/*
 * principal.h — who a caller is once verified (struct auth_principal) and
 * what it may do (roles and grants): the types the verifier (auth.h), the
 * provider verifier (idp.h), the access bindings (bindings.h) and the
 * verified-token cache (tokencache.h) all speak, kept apart from any of them
 * so that none includes another only for its types.
 */
#ifndef GPUGATE_PRINCIPAL_H
#define GPUGATE_PRINCIPAL_H

#include <stdbool.h>

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

/* "member" | "admin" | "finance" | "metrics" → role; AUTH_ROLE_NONE
 * otherwise. */
enum auth_role auth_role_parse(const char *s);
const char *auth_role_name(enum auth_role r);

#endif
