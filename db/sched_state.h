/*
 * sched_state.h (db) — the admission leader's in-memory state against
 * PostgreSQL: a full load of the active jobs, the change feed that keeps
 * them current, a cycle's scheduler input built from memory
 * (sched_state.c), and the publication of queue positions, counts and
 * team spend (sched_publish.c).
 */
#ifndef GPUGATE_DB_SCHED_STATE_H
#define GPUGATE_DB_SCHED_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "db/db.h"
#include "db/sched.h"
#include "scheduler/state.h"

/* What one read of the jobs table saw. */
struct db_feed {
  uint64_t xmin;          /* xmin of the read's snapshot: the next watermark */
  int64_t now_s, now_us;  /* the database's now() */
  int64_t config_version; /* admission_config_version */
  char snapshot[2048];    /* the read's pg_current_snapshot() ("": none) */
  int changed;            /* jobs added, replaced or removed in memory */
  int material;           /* of those, the ones that changed more than
                             their pending reason (the scheduler's own
                             output, not an input) */
  int freeing;            /* of those, the ones other than a submission,
                             an admission or a held job's progress
                             (QUEUED, RUNNING): a job that left or was
                             evicted, a requeue, ... — anything that may
                             free quota or change an old pending job's
                             standing (a full read counts every job) */
};

/*
 * Replace st's jobs with every active job (one snapshot, read a chunk at
 * a time through a cursor: call it inside a transaction). Returns 0, or
 * -1 with err filled (st is then empty).
 */
int db_sched_state_load(struct db_conn *c, struct sched_state *st,
                        struct db_feed *f, char *err, size_t errlen);

/* Called for each job whose memory (mem) and database (db) versions
 * differ; either is NULL when that side has no such active job. */
typedef void db_sched_state_diff_fn(void *arg, const char *id,
                                    const struct sched_state_job *mem,
                                    const struct sched_state_job *db);

/*
 * Compare st with a full read of the active jobs, as db_sched_state_load()
 * reads them in the caller's transaction, and repair st to it: diff() for
 * each job that differs, then the database's version is put (published
 * positions and preempting marks kept, as sched_state_put() keeps them) or
 * the job removed. *drift gets how many differed. Memory holds st and one
 * chunk of rows, never a second state. Returns 0, or -1 with err filled
 * (st may then be partly repaired; the caller reloads).
 */
int db_sched_state_reconcile(struct db_conn *c, struct sched_state *st,
                             db_sched_state_diff_fn *diff, void *arg,
                             int *drift, char *err, size_t errlen);

/*
 * Apply the changes written by transactions with ids ≥ xmin (the previous
 * read's f->xmin): active jobs are put, jobs that left the active states
 * removed, versions already held skipped. Returns 0, or -1 with err filled
 * (st may then hold part of the changes; the caller reloads).
 */
int db_sched_state_feed(struct db_conn *c, struct sched_state *st,
                        uint64_t xmin, struct db_feed *f, char *err,
                        size_t errlen);

/*
 * A cycle's input from memory: run gets cfg's configuration (borrowed:
 * valid while cfg is) and new job arrays, pending jobs in backoff at now_us
 * left out. *next_backoff_us: the earliest backoff end after now_us (0:
 * none). Free run with db_sched_state_run_free(), never db_sched_free().
 * Returns 0 or -1 when out of memory.
 *
 * taken_only: since the last cycle that was given every pending job and
 * whose decisions were all written, no change but submissions, admissions
 * and held jobs' progress (db_feed.freeing 0), and the configuration and
 * team spend are as they were. Then the old (not fresh) pending jobs of
 * each cluster queue that is in no cohort, is BestEffortFIFO, has no stop
 * policy and holds no old job that could preempt are left out
 * (run->old_left_out): the cycle decides exactly what it would decide
 * with them, when no team is held by a budget (tests/unit/
 * test_sched_arrivals.c has the property and why each condition is
 * needed).
 */
int db_sched_state_build(const struct sched_state *st,
                         const struct db_sched *cfg, int64_t now_s,
                         int64_t now_us, bool taken_only, struct db_sched *run,
                         int64_t *next_backoff_us);
void db_sched_state_run_free(struct db_sched *run);

/*
 * Write the queue positions that differ from the published ones, at most
 * max_rows of them (nearest the head first), in one statement, and record
 * them as published in st. Within the first 1,000 of a queue positions
 * are exact; deeper, a position is rewritten once it is off by more than
 * a tenth. *left: how many still differ. Returns 0, or -1
 * with err filled.
 */
int db_sched_state_publish(struct db_conn *c, struct sched_state *st,
                           int max_rows, int *left, char *err, size_t errlen);

/*
 * Delete the published positions of jobs no longer PENDING (one
 * statement, outside any transaction), and forget them in st so that a
 * job pending again is published anew. *n: rows deleted. Returns 0, or -1
 * with err filled.
 */
int db_sched_state_prune(struct db_conn *c, struct sched_state *st, int *n,
                         char *err, size_t errlen);

/*
 * Publish the pending and admitted counts per team queue and cluster queue
 * (0007's admission_counts) in one transaction, unless they are those
 * published last: *last is the caller's record of them (a string owned by
 * the caller, NULL at first; replaced here). Returns 0, or -1 with err
 * filled.
 */
int db_sched_state_publish_counts(struct db_conn *c,
                                  const struct sched_state *st, char **last,
                                  char *err, size_t errlen);

/* Team spend as db_sched_load_config() reads it, into cfg's teams; *moved
 * says whether any changed. Returns 0 or -1 with err filled. */
int db_sched_state_spend(struct db_conn *c, struct db_sched *cfg, bool *moved,
                         char *err, size_t errlen);

#endif
