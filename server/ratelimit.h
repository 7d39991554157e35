/*
 * ratelimit.h — per-team token buckets: rate r requests/s, burst 2r.
 * Over the limit a request is answered 429 with Retry-After.
 */
#ifndef GPUGATE_RATELIMIT_H
#define GPUGATE_RATELIMIT_H

#include <stdbool.h>

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

#endif
