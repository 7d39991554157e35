/*
 * jwks.h — JSON Web Key Sets: the RSA keys that sign Google's OIDC tokens
 * (Pub/Sub push authentication), fetched from a URL, converted to PEM for
 * libjwt and cached per Cache-Control max-age, with a rate-limited refetch
 * when a token names a key id the cache does not hold.
 */
#ifndef GPUGATE_JWKS_H
#define GPUGATE_JWKS_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <jansson.h>

#define JWKS_MAX_KEYS 16
/* Fewest seconds between two fetches of the key set. */
#define JWKS_REFETCH_MIN_S 30

struct jwks_key {
  char kid[128];
  char *pem; /* owned: SubjectPublicKeyInfo PEM */
};

struct jwks_set {
  struct jwks_key keys[JWKS_MAX_KEYS];
  int n;
};

/*
 * Parse a JWK set (json: len bytes, borrowed) into *out: every RSA key
 * with a kid, usable for RS256 signatures ("alg" absent or RS256, "use"
 * absent or sig), 2048 to 8192 bits; other keys are skipped. Returns 0, or
 * -1 with a message in err when none is usable. Pure; free with
 * jwks_set_free().
 */
int jwks_parse(const char *json, size_t len, struct jwks_set *out, char *err,
               size_t errlen);

/* Free what s owns and empty it; accepts NULL. */
void jwks_set_free(struct jwks_set *s);

/*
 * Seconds a response may be cached by its Cache-Control value (borrowed,
 * may be NULL): max-age's value, 0 for no-store or no-cache, -1 when it
 * says neither. Pure.
 */
long jwks_max_age(const char *cache_control);

/*
 * The PEM public key for kid from the set at url, fetched or refetched as
 * the cache requires (now is the caller's clock). Returns a new string
 * (free() it), or NULL with a reason in err (unknown key id, key server
 * unreachable). Thread-safe; one set (the last url asked for) is cached
 * per process. Performs outbound HTTP while holding the cache's lock.
 */
char *jwks_key_pem(const char *url, const char *kid, time_t now, char *err,
                   size_t errlen);

/* Forget the cached set (tests). Thread-safe. */
void jwks_reset(void);

#endif
