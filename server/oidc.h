/*
 * oidc.h — verification of Google-signed OIDC ID tokens, as Pub/Sub push
 * subscriptions send them in `Authorization: Bearer` (RS256, keys from
 * Google's JWKS, iss accounts.google.com, aud and service-account email as
 * configured).
 */
#ifndef GPUGATE_OIDC_H
#define GPUGATE_OIDC_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* What a push token must say. Strings borrowed. */
struct oidc_want {
  const char *audience; /* aud */
  const char *email;    /* email, with email_verified true */
  long leeway_s;        /* clock skew allowed on exp, iat, nbf */
};

/*
 * Returns the PEM public key for kid as a new string (free() it), or NULL
 * with a reason in err. ud is the caller's.
 */
typedef char *(*oidc_key_fn)(const char *kid, void *ud, char *err,
                             size_t errlen);

/* Longest token accepted, in bytes. */
#define OIDC_TOKEN_MAX 8192
/* Longest exp − iat accepted (Google's tokens live one hour). */
#define OIDC_MAX_LIFETIME_S 7200

/*
 * Verify token (borrowed) at time now: a JWS of three base64url parts,
 * header alg RS256 with a kid that key_for resolves, a signature libjwt
 * verifies with that key, and claims iss https://accounts.google.com or
 * accounts.google.com, aud = want->audience (a string, or an array holding
 * it), email = want->email with email_verified true, exp in the future and
 * iat (and nbf, when present) not in the future, each within leeway.
 * Returns 0, or -1 with *reason (static, lower case, never containing any
 * part of the token). Thread-safe when key_for is.
 */
int oidc_verify(const char *token, const struct oidc_want *want, time_t now,
                oidc_key_fn key_for, void *ud, const char **reason);

#endif
