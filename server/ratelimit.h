/*
 * ratelimit.h — token buckets per key: per team for the HTTP API (rate r
 * requests/s, burst 2r; over the limit a request is answered 429 with
 * Retry-After) and per region for the Batch dispatcher's mutations.
 */
#ifndef GPUGATE_RATELIMIT_H
#define GPUGATE_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>

#define RATELIMIT_KEY_MAX 64 /* bytes of a key, NUL included */

struct ratelimit;

/* rps tokens per second, at most burst saved up; rps 0 disables limiting.
 * Returns NULL on allocation failure. */
struct ratelimit *ratelimit_new(long rps, long burst);
void ratelimit_free(struct ratelimit *rl); /* accepts NULL */

/*
 * Take one token for key at now_us (monotonic microseconds). Returns true
 * when allowed; otherwise false with *retry_after_s set (≥ 1).
 * Thread-safe.
 */
bool ratelimit_take(struct ratelimit *rl, const char *key, long long now_us,
                    long *retry_after_s);

/*
 * The keys whose bucket holds less than one token at now_us, so that a
 * caller can pick work that will not be refused: at most max of them,
 * copied into keys. *next_us is when the first of them holds a token
 * again (now_us when none is listed). Keys never taken from are not
 * listed (their bucket starts full). Returns the number listed; 0 when
 * limiting is disabled. Thread-safe.
 */
size_t ratelimit_exhausted(struct ratelimit *rl, long long now_us,
                           char (*keys)[RATELIMIT_KEY_MAX], size_t max,
                           long long *next_us);

#endif
