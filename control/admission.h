/*
 * admission.h — the admission leader's state and its cycle (Kueue's cache
 * and queue manager in front of the pure scheduler).
 *
 * The leader loads the state in full once (flavors, cohorts, cluster
 * queues, teams' budget inputs, every active job), then learns only what
 * changed: the jobs written since its last read (the change feed of
 * migration 0007) and the configuration when its version moves. A cycle
 * with nothing new touches no job and does not run the scheduler; a cycle
 * that decides writes its admissions in a constant number of statements.
 * Queue positions are computed from memory and published for the jobs
 * whose position changed. A periodic reconciliation compares memory with a
 * full read in the same snapshot, counts and logs each job that differs
 * (gpugate_admission_state_drift_total) and repairs it.
 *
 * One owner thread; every call takes the connection it runs on.
 */
#ifndef GPUGATE_ADMISSION_H
#define GPUGATE_ADMISSION_H

#include <stdbool.h>

#include "db/db.h"

struct admission;

/* What one admission_cycle() did. */
struct admission_result {
  bool ran;     /* the scheduler ran (something had changed) */
  int changed;  /* jobs the change feed brought in */
  int admitted; /* decisions written */
  int evicted;
  int requeued;
  int pending; /* pending jobs the scheduler saw */
};

/* New, empty (not loaded). batch: queue Batch creates/cancels in the
 * outbox; window_grace_s: GPUGATE_CAPACITY_WINDOW_GRACE_S. NULL when out
 * of memory. */
struct admission *admission_new(bool batch, long window_grace_s);
void admission_free(struct admission *a);

/* Forget everything (leadership lost): the next cycle loads in full. */
void admission_reset(struct admission *a);

/*
 * One cycle in one transaction on c: lock the quota configuration, bring
 * the state up to date, and when something changed run the scheduler and
 * write its decisions. Returns 1 when another cycle should follow at once
 * (it wrote decisions, which the next one reads back), 0, or -1 with err
 * filled (the transaction is
 * rolled back and the next cycle reloads in full).
 */
int admission_cycle(struct admission *a, struct db_conn *c,
                    struct admission_result *r, char *err, size_t errlen);

/*
 * Publish queue positions that changed since the last publication, at
 * most max_rows per call (nearest the head first), and the pending and
 * admitted counts per queue when they changed, outside any transaction. Returns
 * the number still to publish, or -1 with err filled.
 */
int admission_publish(struct admission *a, struct db_conn *c, int max_rows,
                      char *err, size_t errlen);

/*
 * Reconcile: read the jobs in full and the change feed in one snapshot,
 * count (*drift) and log the jobs where memory differs, and keep the full
 * read; then delete the published positions of jobs no longer pending.
 * Returns 0, or -1 with err filled.
 */
int admission_reconcile(struct admission *a, struct db_conn *c, long *drift,
                        char *err, size_t errlen);

/* Jobs held in memory (all active ones, once loaded). */
int admission_jobs(const struct admission *a);

#endif
