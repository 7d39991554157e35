/*
 * idp.h — tokens of the organisation's OpenID Provider (SPEC §9): ID
 * tokens and at+jwt access tokens of the configured issuers, verified by
 * the one verifier (identity/oidc.c) with keys from each issuer's discovered
 * JWKS (identity/discovery.c, identity/jwks.c), and turned into a principal
 * whose grants are the access bindings that match it (identity/bindings.c).
 */
#ifndef GPUGATE_IDP_H
#define GPUGATE_IDP_H

#include <stdbool.h>
#include <time.h>

#include <jansson.h>

#include "identity/principal.h"
#include "identity/config_oidc.h"

#define IDP_MAX_GROUPS 256 /* groups of one token considered */

struct idp;

/* Build from o (copied) with leeway_s on time claims; NULL when o names
 * no issuer or on allocation failure. */
struct idp *idp_new(const struct config_oidc *o, long leeway_s);
void idp_free(struct idp *p); /* accepts NULL */

/* Whether iss (may be NULL) is one of p's issuers. */
bool idp_trusts(const struct idp *p, const char *iss);

/*
 * Verify token (borrowed) at now and fill *out: issuer, subject, verified
 * email, exp, and the grants of the access bindings that match it (none is
 * not a failure here; the caller refuses with 403). Returns 0, or -1 with
 * *reason (static, never any part of the token). Thread-safe.
 */
int idp_verify(const struct idp *p, const char *token, time_t now,
               struct auth_principal *out, const char **reason);

/*
 * Verify the ID token (borrowed) of a console sign-in at now: issued by
 * the first issuer for the console's client (aud = client_id), carrying
 * nonce, and the required claims. Fills *out as idp_verify does,
 * *groups with the token's groups (a new array of strings) and sid with
 * the provider's session id ("" when none). Returns 0, or -1 with
 * *reason. refreshed: the ID token of a refresh (OIDC Core §12.2), whose
 * nonce may be absent but, when present, must be the sign-in's.
 */
int idp_verify_id_token(const struct idp *p, const char *token,
                        const char *nonce, bool refreshed, time_t now,
                        struct auth_principal *out, json_t **groups, char *sid,
                        size_t sidlen, const char **reason);

#define IDP_LOGOUT_EVENT "http://schemas.openid.net/event/backchannel-logout"

/*
 * Verify an OpenID Connect Back-Channel Logout 1.0 logout_token (borrowed)
 * at now: signed by the first issuer for the console's client (aud =
 * client_id), typ JWT or logout+jwt, an `events` object holding
 * IDP_LOGOUT_EVENT, no `nonce`, and a `sid` or a `sub` (copied out, "" when
 * absent). Returns 0, or -1 with *reason (static, never any part of the
 * token). Thread-safe.
 */
int idp_verify_logout_token(const struct idp *p, const char *token, time_t now,
                            char *sub, size_t sublen, char *sid, size_t sidlen,
                            const char **reason);

/*
 * The Back-Channel Logout checks of verified claims (borrowed): an
 * `events` object holding IDP_LOGOUT_EVENT, no `nonce`, string `sub` and
 * `sid` that fit (copied out, "" when absent), at least one of them.
 * Returns 0, or -1 with *reason (sub and sid ""). Pure.
 */
int idp_logout_claims(const json_t *claims, char *sub, size_t sublen, char *sid,
                      size_t sidlen, const char **reason);

/*
 * The grants of the identity in p (issuer, subject, email) with groups
 * (borrowed, n of them) from the access bindings, into p->grants; the
 * role and team in effect become the first grant's.
 */
void idp_bind(struct auth_principal *p, const char *const *groups, size_t n);

/*
 * The groups of claims (borrowed) at the dotted path (e.g. "groups",
 * "realm_access.roles"): strings of an array, or a lone string, into
 * out[0..max) (borrowed from claims). Returns how many. Pure.
 */
size_t idp_groups(const json_t *claims, const char *path, const char **out,
                  size_t max);

#endif
