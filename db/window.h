/*
 * window.h (db) — DWS Calendar-mode capacity windows of RESERVATION
 * flavors (`available_from`, `available_until`): the eviction of jobs a
 * closing window would cut short, and the window status a cluster queue
 * shows.
 *
 * The admission side (quota only inside the window, a job only if its run
 * ends by the window's end) is the pure scheduler's; this file holds the
 * periodic step that the admission leader runs each cycle.
 */
#ifndef GPUGATE_DB_WINDOW_H
#define GPUGATE_DB_WINDOW_H

#include <jansson.h>
#include <stdbool.h>

#include "db/db.h"
#include "lib/err.h"

/* The event (and pending-eviction) reason of this step. */
#define DB_WINDOW_REASON "CapacityWindowEnded"

/* Jobs evicted per flavor and call, at most; the rest go next cycle. */
#define DB_WINDOW_EVICT_BATCH 500

/*
 * Evict, with reason CapacityWindowEnded, the jobs holding quota
 * (ADMITTED, QUEUED, RUNNING) in a flavor whose capacity window is
 * closing: from grace_s seconds before its end, every job whose run may
 * last past the end (started, or now if not started yet, + its
 * max_run_duration_s > available_until). Jobs that will finish by the end
 * are left alone, and so are jobs holding quota in a window that has not
 * opened yet (an administrator moved it): like a quota cut in Kueue, the
 * window only stops new admissions. As the
 * scheduler's evictions do: with batch the unsent create is withdrawn or
 * the Batch job cancelled through the outbox (the job returns to PENDING,
 * attempt + 1, when Batch confirms); without, the job is requeued at once.
 * Runs inside the caller's transaction (the admission cycle's); touches
 * jobs only through the partial index of jobs holding quota per flavor,
 * and only for flavors whose window is closing. The cluster queue of each
 * evicted job is appended to cqs (borrowed array; may be NULL), for
 * metrics after commit. Returns the number evicted, or -1 with err filled.
 */
int db_window_evict(struct db_conn *c, long grace_s, bool batch, json_t *cqs,
                    char *err, size_t errlen);

/*
 * The capacity windows of the flavors of cluster queue cq, in its flavor
 * order, for its status: [{"flavor", "available_from", "available_until",
 * "state" ("Upcoming" | "Open" | "Ended"), "opens_in_s", "time_left_s",
 * "evictions_from"}]: seconds until it opens (0 once open) and of the
 * window still to come (0 once ended), by the database's clock, and when
 * the evictions of jobs that would outlast it begin.
 * *out is a new array (empty when none has a window).
 */
enum gg_code db_window_status(struct db_conn *db, struct gg_err *err,
                              const char *cq, long grace_s, json_t **out);

#endif
