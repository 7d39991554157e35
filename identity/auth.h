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

#include "identity/principal.h"
#include "identity/identity_config.h"

#define AUTH_MAX_TOKEN 8192   /* bytes; longer tokens are rejected */
#define AUTH_TOKEN_CACHE 4096 /* verified tokens remembered per context */

struct auth_ctx;

/*
 * Build the verifier from cfg (keys are copied; cfg may be freed after).
 * Returns NULL and writes a one-line reason naming the variable into err.
 */
struct auth_ctx *auth_new(const struct identity_config *cfg, char *err,
                          size_t errlen);
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

/*
 * Mint a token for team/role valid ttl_s seconds from now (team NULL: no
 * team claim, for any role but member), signed with
 * alg ("HS256", "RS256" or "ES256") and key (HS256 secret bytes or a PEM
 * private key), with iss/aud from cfg when set and kid when non-NULL.
 * Returns a new malloc'd string (caller frees) or NULL with err filled.
 */
char *auth_mint(const struct identity_config *cfg, const char *alg,
                const unsigned char *key, size_t keylen, const char *kid,
                const char *team, const char *role, long ttl_s, time_t now,
                char *err, size_t errlen);

#endif
