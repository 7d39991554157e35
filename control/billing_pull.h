/*
 * billing_pull.h — the periodic BigQuery pull (control/billing_sync.h) on a
 * thread of its own, started by the admission leader only: the admission
 * loop calls billing_pull_tick() after each cycle with whether it leads,
 * and the puller, when it leads and a sync is due, runs one on a
 * connection of its own, so a sync of minutes never holds up admission.
 *
 * A sync is due when the last one (by any replica: billing_sync_state) is
 * GPUGATE_BILLING_SYNC_INTERVAL_S old, or, after a failed one, 5 minutes
 * (at most the interval) old.
 */
#ifndef GPUGATE_SERVER_BILLING_PULL_H
#define GPUGATE_SERVER_BILLING_PULL_H

#include <stdbool.h>

struct control_config;
struct billing_pull;

/* A puller for cfg (borrowed; must outlive it), or NULL when the pull is
 * off (no table, or interval 0) or it cannot start (logged). */
struct billing_pull *billing_pull_start(const struct control_config *cfg);

/* From the admission loop: leader or not. Never blocks. Accepts NULL. */
void billing_pull_tick(struct billing_pull *p, bool leader);

/* Stop (waiting for a sync in progress to end) and free. Accepts NULL. */
void billing_pull_stop(struct billing_pull *p);

#endif
