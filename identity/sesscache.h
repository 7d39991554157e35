/*
 * sesscache.h — the console sessions this replica has verified, so that a
 * request with the session cookie is answered without reading PostgreSQL,
 * while a session ended on any replica is refused here within
 * SESSCACHE_CHECK_MS.
 *
 * A session that ends early (deleted, or its email or groups changed)
 * moves a one-row stamp in PostgreSQL (migration 0040). The cache knows
 * the stamp of its last read and is used only within SESSCACHE_CHECK_MS of
 * when that read began; past that, the next request reads the stamp again
 * (one request at a time: sesscache_check_begin), and a moved stamp
 * empties the cache. An entry is put only with the stamp read in the same
 * snapshot as its session and only while that stamp is the one the cache
 * knows, so a session read before an end that a check has already seen
 * is never kept. An entry also lapses at its own end (the session's
 * expiry, or when its claims are due for a refresh at the provider).
 * Entries are keyed by the SHA-256 of the session id (identity/tokencache.h).
 *
 * Clocks are the caller's: now in Unix seconds for entries, now_ms on a
 * monotonic clock for the stamp's age. Thread-safe.
 */
#ifndef GPUGATE_SESSCACHE_H
#define GPUGATE_SESSCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "identity/auth.h"
#include "identity/tokencache.h"

/* A stamp read is trusted this long from when it began. */
#define SESSCACHE_CHECK_MS 1000

struct sesscache;

/* A cache of at most capacity sessions; NULL on allocation failure. */
struct sesscache *sesscache_new(size_t capacity);
void sesscache_free(struct sesscache *c); /* accepts NULL */

/* The key of the session id sid (borrowed). 0, or -1 when hashing
 * failed. */
int sesscache_key(const struct sesscache *c, const char *sid,
                  unsigned char key[TOKENCACHE_KEY_LEN]);

/*
 * Whether the stamp must be read before the cache is used at now_ms (no
 * read that began within SESSCACHE_CHECK_MS found it) and the caller is the
 * one to read it; then it must call sesscache_check_end(). Another caller
 * reading it already: false, and the cache is not used meanwhile
 * (sesscache_get misses).
 */
bool sesscache_check_begin(struct sesscache *c, long long now_ms);

/*
 * The read begun at started_ms found the stamp (ok) or failed (!ok: the
 * cache stays unused until a read succeeds). Returns whether the stamp
 * had moved since the last read (the cache was emptied).
 */
bool sesscache_check_end(struct sesscache *c, long long started_ms, bool ok,
                         long long stamp);

/* Copy the principal of key into *out when cached, usable at now and the
 * stamp read no older than SESSCACHE_CHECK_MS at now_ms. */
bool sesscache_get(struct sesscache *c,
                   const unsigned char key[TOKENCACHE_KEY_LEN], time_t now,
                   long long now_ms, struct auth_principal *out);

/*
 * Remember p (copied) for key, read from the database at now in one
 * snapshot with stamp, usable until until (Unix seconds, exclusive). Not
 * kept when stamp is not the stamp the cache last read.
 */
void sesscache_put(struct sesscache *c,
                   const unsigned char key[TOKENCACHE_KEY_LEN], long long stamp,
                   time_t now, long long until, const struct auth_principal *p);

/* This replica ended sessions: the next lookup reads the stamp first. */
void sesscache_forget(struct sesscache *c);

#endif
