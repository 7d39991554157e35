/*
 * targets.h — the per-process cache of what submissions are checked
 * against: for (team, queue, priority class) the resolved db_job_target
 * (cluster queue, its spec, its flavors, its cohort, the class), stamped
 * with the configuration version it was read at (0008).
 *
 * Entries are flushed when any replica changes the configuration (the
 * `gpugate_config` notification, see control/configwatch.c) and whenever a
 * submission finds its version stale, so a cached entry is never acted
 * on once its version has been superseded. Only targets that exist are
 * cached: a 404/422 for a missing queue always asks the database.
 *
 * Thread-safe: one mutex guards the table; entries hand out new
 * references to their (never modified) JSON.
 */
#ifndef GPUGATE_DB_TARGETS_H
#define GPUGATE_DB_TARGETS_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "db/job_target.h"

#define DB_TARGETS_MAX 1024 /* entries; a full table is flushed */

/*
 * Copy the cached target of (team, queue, priority_class or NULL for the
 * default) into *out (JSON members as new references; free with
 * db_job_target_free). Returns true on a hit.
 */
bool db_targets_get(const char *team, const char *queue,
                    const char *priority_class, struct db_job_target *out);

/* The flush generation: read it before loading a target from the
 * database and pass it to db_targets_put(). */
uint64_t db_targets_generation(void);

/*
 * Remember t (borrowed; its JSON is shared by reference) for the key,
 * unless the cache was flushed since generation was read (the load may
 * predate the change that flushed it) or t's version differs from that of
 * the entries already cached (then they are flushed first).
 */
void db_targets_put(const char *team, const char *queue,
                    const char *priority_class, uint64_t generation,
                    const struct db_job_target *t);

/* Forget every entry. */
void db_targets_flush(void);

/* Entries held, and flushes since start (for tests and metrics). */
size_t db_targets_count(void);
uint64_t db_targets_flushes(void);

/* LISTEN for configuration changes on pg (a direct session). 0 or -1
 * with err filled. */
int db_targets_listen(PGconn *pg, char *err, size_t errlen);

#endif
