/*
 * waker.h — wakes the admission loop after submissions, coalesced.
 *
 * A NOTIFY in the submission's own statement serialises every committing
 * submission: PostgreSQL takes a database-wide lock to queue
 * notifications at commit, and pgbench showed a submission with a NOTIFY
 * at a quarter of the rate without one. Instead, a submission pokes this
 * module once it has committed, and one thread with its own session
 * sends `NOTIFY gpugate_admission` for all the submissions of the last
 * few milliseconds (at most one every WAKER_MIN_GAP_MS). If the session
 * is down, the loop's periodic cycle (GPUGATE_ADMISSION_INTERVAL_MS)
 * still admits.
 */
#ifndef GPUGATE_WAKER_H
#define GPUGATE_WAKER_H

#include "control/control_config.h"

#define WAKER_MIN_GAP_MS 10

/* Start the thread (cfg borrowed for its lifetime); the process has one.
 * Returns 0, or -1 on failure. */
int waker_start(const struct control_config *cfg);

/* Ask for a wake-up of the admission loop soon. Cheap; thread-safe; does
 * nothing before waker_start(). */
void waker_poke(void);

/* Stop and join the thread (sending a last wake-up if one is due). */
void waker_stop(void);

#endif
