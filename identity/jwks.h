/*
 * jwks.h — JSON Web Key Sets: the one key-set cache of the process, for
 * every issuer whose tokens gpugate verifies with published keys (Google's
 * keys for Pub/Sub push, the organisation's OpenID Provider's keys).
 *
 * Keys go through latchset/jose (jose_openssl_jwk_to_EVP_PKEY), never a
 * hand-written conversion: RSA keys of 2048 to 8192 bits for RS256 and EC
 * P-256 keys for ES256. Each key's algorithm is pinned when the set is
 * parsed (the JWK's "alg", else the only one its type allows), so a token's
 * header can never choose how its key is used.
 *
 * Sets are cached per URL for their Cache-Control max-age; a kid the cache
 * does not hold refetches at most once per cooldown. A fetch runs outside
 * the cache's lock and only one runs per set at a time (single flight):
 * callers whose kid is cached are answered from the cache meanwhile.
 */
#ifndef GPUGATE_JWKS_H
#define GPUGATE_JWKS_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "identity/bgfetch.h"

#define JWKS_MAX_KEYS 16
/* Distinct key-set URLs cached at once (least recently used replaced):
 * one per trusted issuer (CONFIG_OIDC_MAX) and Google's for Pub/Sub, so
 * that a configuration never evicts. A replaced set's last fetch is still
 * remembered (JWKS_RECENT of them), so its cooldown holds. */
#define JWKS_MAX_SETS 9
#define JWKS_RECENT 32
/* Default fewest seconds between two fetches of one key set. */
#define JWKS_COOLDOWN_S 30

/* The signature algorithms a published key may be pinned to. */
enum jwks_alg {
  JWKS_ALG_NONE = 0,
  JWKS_ALG_RS256 = 1 << 0,
  JWKS_ALG_ES256 = 1 << 1,
};

struct jwks_key {
  char kid[128];
  enum jwks_alg alg; /* pinned: the only algorithm this key verifies */
  json_t *jwk;       /* owned: the public JWK, "alg" set to the pinned one */
};

struct jwks_set {
  struct jwks_key keys[JWKS_MAX_KEYS];
  int n;
};

/* "RS256" | "ES256" → its bit; JWKS_ALG_NONE for anything else ("none",
 * HMACs included). */
enum jwks_alg jwks_alg_parse(const char *name);
const char *jwks_alg_name(enum jwks_alg alg); /* "" for none */

/*
 * Parse a JWK set (json: len bytes, borrowed) into *out: every signing key
 * with a kid that jose turns into an RSA key of 2048..8192 bits or an EC
 * P-256 key ("use" absent or sig; "alg" absent or the one its type allows);
 * others are skipped. Returns 0, or -1 with a message in err when none is
 * usable. Pure; free with jwks_set_free().
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
 * The public JWK for kid in the set at url (a new reference; its "alg" is
 * the key's pinned algorithm, also stored in *alg), fetched or refetched as
 * the cache requires: when the set is missing or past its max-age, or kid
 * is unknown, at most one fetch per cooldown_s (<= 0: JWKS_COOLDOWN_S).
 * now is the caller's clock. Fetches run on a thread of their own, never
 * on the caller's: a caller whose kid is cached never waits for one (a
 * stale set is refetched behind it); a caller whose kid is unknown waits
 * for the fetch in flight at most JWKS_WAIT_MS, then fails ("still being
 * fetched": a later call finds what the fetch brought). Returns NULL with
 * a reason in err (unknown key id, key server unreachable). Thread-safe.
 */
json_t *jwks_key(const char *url, const char *kid, long cooldown_s, time_t now,
                 enum jwks_alg *alg, char *err, size_t errlen);

/* How long a caller whose kid is unknown waits for a fetch in flight: the
 * one bound of identity/bgfetch.h. */
#define JWKS_WAIT_MS BGFETCH_WAIT_MS
/* err of jwks_key() when that wait ended before the fetch did */
#define JWKS_ERR_FETCHING "the key set is still being fetched"

/* Fetches of url's set attempted since the process started (tests). */
unsigned long jwks_fetches(const char *url);

/* Forget every cached set (tests). Thread-safe. */
void jwks_reset(void);

#endif
