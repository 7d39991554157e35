/*
 * oidc.h — the one verifier of tokens signed with published keys (JWKS):
 * Google's ID tokens on Pub/Sub pushes and the organisation's OpenID
 * Provider's ID and access tokens are two configurations (struct
 * oidc_policy) of the same checks.
 */
#ifndef GPUGATE_OIDC_H
#define GPUGATE_OIDC_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "identity/jwks.h"

/* Longest token accepted, in bytes. */
#define OIDC_TOKEN_MAX 8192
/* Most issuers, audiences and required claims of one policy. */
#define OIDC_MAX_LIST 8

/* What a token must say. Strings borrowed. */
struct oidc_policy {
  const char *issuers[OIDC_MAX_LIST]; /* iss, compared exactly */
  int n_issuers;
  const char *audiences[OIDC_MAX_LIST]; /* aud must hold any one of them */
  int n_audiences;
  unsigned algs;       /* enum jwks_alg bits accepted */
  long leeway_s;       /* clock skew allowed on exp, iat, nbf */
  long max_lifetime_s; /* longest exp − iat; 0 = not bounded */
  const char *email;   /* NULL, or the email required, email_verified true */
  struct {
    const char *claim, *value; /* a string claim, or true/false */
  } required[OIDC_MAX_LIST];
  int n_required;
  bool access_tokens; /* typ at+jwt (RFC 9068) accepted beside JWT */
  bool logout_tokens; /* typ logout+jwt (Back-Channel Logout) beside JWT */
};

/*
 * The public JWK (new reference) that verifies tokens of issuer iss with
 * key id kid, with the algorithm it is pinned to in *alg; NULL with a
 * reason in err. iss is one of the policy's issuers. ud is the caller's.
 */
typedef json_t *(*oidc_key_fn)(const char *iss, const char *kid, void *ud,
                               enum jwks_alg *alg, char *err, size_t errlen);

/*
 * The iss claim of token (borrowed), NOT verified, into out[len]: only to
 * choose the policy that will verify it (and check iss again). Returns 0,
 * or -1 (out "") when the token has no readable string iss that fits.
 */
int oidc_token_issuer(const char *token, char *out, size_t len);

/*
 * Verify token (borrowed) at time now against policy p: a compact JWS
 * whose header names an allowed alg, typ JWT (or at+jwt when allowed), no
 * crit, a kid; claims with a trusted iss; the key key_for gives for (iss,
 * kid) pinned to the header's alg; its signature verified by jose; then
 * aud (with several, azp one of the policy's audiences), exp, iat, nbf (each
 * within leeway), lifetime, email and the required claims. On success returns 0
 * and, when claims is non-NULL, the token's claims (a new reference). Otherwise
 * -1 with *reason (static, lower case, never any part of the token).
 * Thread-safe when key_for is.
 */
int oidc_verify(const char *token, const struct oidc_policy *p, time_t now,
                oidc_key_fn key_for, void *ud, json_t **claims,
                const char **reason);

#endif
