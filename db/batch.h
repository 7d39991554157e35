/*
 * batch.h (db) — the Cloud Batch outbox and the job transitions that Batch
 * reports drive.
 *
 * Admission and cancellation write "create" and "cancel" rows into
 * batch_ops in their own transaction; dispatchers on every replica claim
 * due rows with a lease (claimed_by, claimed_until) in a short transaction,
 * call Batch with no transaction open, and record the outcome in another
 * short one: no row lock is ever held across a network call. A job's rows
 * go out one at a time, in (next_at, id) order. Lock order everywhere: the
 * batch_ops row before the jobs row.
 */
#ifndef GPUGATE_DB_BATCH_H
#define GPUGATE_DB_BATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "db/db.h"

/* One claimed outbox row, with what a create needs to build the body. */
struct db_batch_op {
  int64_t id;
  char job_id[32];
  int attempt;
  char op[8]; /* "create" | "cancel" */
  char region[64];
  char batch_job_id[64];
  char request_id[40];
  int tries;
  bool lapsed; /* taken after another holder's lease ran out: that holder's
                  call may have reached Batch */
  char claimed_by[96]; /* the lease holder: who may record the outcome */
  double age_s;        /* seconds since the row was written, at the claim
                          (a create's: since the admission or failover) */
  /* create only */
  char team[64];
  char queue[64];
  char flavor[64];
  char cost_center[64]; /* "" when the team has none */
  int64_t max_run_duration_s;
  json_t *job_spec;    /* new reference */
  json_t *flavor_spec; /* new reference */
};

/* Record a state change of a job (its current attempt) as an event. */
int db_job_event(struct db_conn *c, const char *job_id, const char *from,
                 const char *to, const char *reason, const char *message,
                 char *err, size_t errlen);

/* Wake the admission leader: something freed quota or changed a decision
 * ("batch" on gpugate_admission, delivered at commit). 0 or -1. */
int db_batch_wake(struct db_conn *c, char *err, size_t errlen);

/* Wake the dispatchers: the outbox has work ("" on gpugate_dispatch). */
int db_batch_wake_dispatch(struct db_conn *c, char *err, size_t errlen);

/* Queue the Batch create of job's current attempt (after admission). */
int db_batch_request_create(struct db_conn *c, const char *job_id, char *err,
                            size_t errlen);

/* The same for many jobs in one statement: ids is a PostgreSQL text[]
 * literal ("{...}"). */
int db_batch_request_create_many(struct db_conn *c, const char *ids, char *err,
                                 size_t errlen);

/*
 * Withdraw the not-yet-sent create of (job, attempt). Returns 1 when it was
 * withdrawn (no Batch job exists), 0 when it had been sent, -1 on error.
 * Call before changing the job row (lock order).
 */
int db_batch_withdraw_create(struct db_conn *c, const char *job_id, int attempt,
                             char *err, size_t errlen);

/* Queue the Batch cancel of the job's current Batch job. */
int db_batch_request_cancel(struct db_conn *c, const char *job_id, char *err,
                            size_t errlen);

/*
 * Return an EVICTING job to PENDING: attempt + 1, its place kept, no
 * flavor; with an event (reason, message) and a wake-up of the admission
 * loop. *rows is 1 when it was requeued.
 */
int db_batch_requeue(struct db_conn *c, const char *job_id, const char *reason,
                     const char *message, int *rows, char *err, size_t errlen);

/*
 * Claim one due outbox row in none of the n_skip skip_regions (borrowed;
 * the regions whose call budget is spent, so that their rows wait without
 * holding up the others') for lease_s seconds in the name of claimer (a
 * string unique to the calling worker), and commit: no transaction is
 * open on return. Returns 1 with *op filled (free with db_batch_op_free),
 * 0 when nothing is due outside skip_regions, -1 on error.
 */
int db_batch_claim(struct db_conn *c, const char *const *skip_regions,
                   size_t n_skip, const char *claimer, int lease_s,
                   struct db_batch_op *op, char *err, size_t errlen);
void db_batch_op_free(struct db_batch_op *op);

/*
 * The same for up to max rows at once (rows of different jobs; a job's
 * rows still go one at a time) into ops[0..n). With *lapsed true, the rows
 * held under a lease that ran out or by a session that is gone come first:
 * a look over every held row, which db_batch_claim always makes and a
 * dispatcher about once a second; *lapsed is then left true when that look
 * took rows (there may be more). Returns n (0 when nothing is due outside
 * skip_regions), or -1 on error with nothing claimed.
 */
int db_batch_claim_many(struct db_conn *c, const char *const *skip_regions,
                        size_t n_skip, const char *claimer, int lease_s,
                        bool *lapsed, struct db_batch_op *ops, int max,
                        char *err, size_t errlen);

/*
 * Give a claimed row back untouched, before any call about it was made:
 * any dispatcher may claim it again at once. *op stays filled (free it as
 * usual). 0, or -1 with err (the lease then runs out by itself).
 */
int db_batch_unclaim(struct db_conn *c, const struct db_batch_op *op, char *err,
                     size_t errlen);

/* The same for ops[0..n), rows one claimer took, in one statement. */
/* The holder (claimer) renews the leases of its rows ids[0..n) for lease_s
 * from now: a lease is live while its holder renews it, whatever became of
 * the session that took it (a reconnect, a reused pid). 0 or -1. */
int db_batch_renew(struct db_conn *c, const char *claimer, const long long *ids,
                   size_t n, int lease_s, char *err, size_t errlen);
int db_batch_unclaim_many(struct db_conn *c, const struct db_batch_op *ops,
                          size_t n, char *err, size_t errlen);

/*
 * Outcomes of a claimed row, each in a transaction of its own that first
 * takes the row out of the outbox if the lease is still op's.
 */
int db_batch_done_create(struct db_conn *c, const struct db_batch_op *op,
                         const char *batch_job_name, char *err, size_t errlen);
/* The cancel's row is done: Batch has no such job (gone), or reading the
 * job after a refused cancel found it ended (the caller records what Batch
 * reports). */
int db_batch_done_cancel(struct db_conn *c, const struct db_batch_op *op,
                         bool gone, char *err, size_t errlen);
/* A cancel (or delete) Batch took, of a job's own Batch job or of a raced
 * copy: Batch may
 * still never act on it, so the row stays in the outbox and goes out again
 * after a bound that doubles with each try (5 s, then up to 60 s), until
 * Batch reports the job ended (the row is deleted with the move,
 * batch_report.c) or answers 404. */
int db_batch_recheck_cancel(struct db_conn *c, const struct db_batch_op *op,
                            char *err, size_t errlen);
int db_batch_retry(struct db_conn *c, const struct db_batch_op *op,
                   long delay_ms, const char *error, char *err, size_t errlen);
/* Batch refused the call for good: a refused create fails the job (a raced
 * copy drops its region only, and the job fails when no region is left;
 * with a cancel pending the job is CANCELLED instead). A create tried
 * before (tries > 0, or lapsed) may have made its Batch job: that Batch
 * job is cancelled and the job ends (FAILED, BatchRejected) only when
 * Batch reports it ended or absent (the invariant, db/batch.c). */
int db_batch_give_up(struct db_conn *c, const struct db_batch_op *op,
                     const char *error, char *err, size_t errlen);

/*
 * Apply a state Batch reported for one of our Batch jobs (from the sync
 * loop or a Pub/Sub push), in its own transaction. batch_state is a Batch
 * JobStatus state or "NOT_FOUND". Returns 1 when the job changed, 0 when
 * nothing changed (unknown name, stale report), -1 on error.
 */
int db_batch_observe(struct db_conn *c, const char *batch_job_name,
                     const char *batch_state, char *err, size_t errlen);
/*
 * Batch took a cancel of batch_job_name (a full name, "projects/…"), the
 * Batch job of the attempt it names: a job that does not name it yet (its
 * create's answer was lost) names it now, in its own transaction, so that
 * what Batch reports next ends the cancel or the eviction. Batch's state is
 * not decided here (an accepted cancel may act later). 0 or -1.
 */
int db_batch_adopt(struct db_conn *c, const char *batch_job_name, char *err,
                   size_t errlen);
/* The same with when Batch says the job ended (batch_job_ended_us(); 0:
 * unknown): a final state's finished_at is that time, kept between the
 * job's start (or admission) and now, instead of now. */
int db_batch_observe_at(struct db_conn *c, const char *batch_job_name,
                        const char *batch_state, int64_t ended_us, char *err,
                        size_t errlen);

/*
 * Race mode's outcomes, for metrics: called (when set, from whatever
 * thread observes) with event "winner" (region of the winning copy) or
 * "overlap" (region of a loser that ran beside the winner, seconds it
 * did). Set once at start-up, before any observe.
 */
extern void (*db_batch_race_hook)(const char *event, const char *region,
                                  double seconds);

/*
 * Raced copies in region seen running beside their winner, or asked to end
 * and not yet reported ended, as {batch_job_id: true}: the sync reports
 * their next state even when it is no longer live, so the overlap ends and
 * a cancel or an eviction waiting for every copy completes. New object, or
 * NULL with err.
 */
json_t *db_batch_overlapping(struct db_conn *c, const char *region, char *err,
                             size_t errlen);

/*
 * The Batch jobs of active gpugate jobs in region, as {name: last Batch
 * state reported ("" if none)}. New object, or NULL with err.
 */
json_t *db_batch_active(struct db_conn *c, const char *region, char *err,
                        size_t errlen);

/* Regions that hold Batch jobs of active gpugate jobs (new array). */
json_t *db_batch_regions(struct db_conn *c, char *err, size_t errlen);

/*
 * Batch job names of active jobs in region that Batch did not list (seen:
 * borrowed array of names), accepted at least grace_s ago. New array.
 */
json_t *db_batch_unseen(struct db_conn *c, const char *region, json_t *seen,
                        int grace_s, char *err, size_t errlen);

/*
 * The orphan sweep's verdicts. listed (borrowed) is an array of
 * {"name", "id", "attempt"}: live Batch jobs of this deployment that are
 * not the current Batch job of an active gpugate job, with the gpugate id
 * and attempt their names carry. Returns a new array of {"name", "why"}
 * for those gpugate does not want (why: "unknown", "superseded",
 * "terminal", "race_loser") and for those whose own create is still in the
 * outbox (why "pending": its dispatcher records the outcome); the others
 * are wanted (e.g. a raced copy waiting for capacity).
 * NULL with err on failure.
 */
json_t *db_batch_orphans(struct db_conn *c, json_t *listed, char *err,
                         size_t errlen);

/* Every region gpugate may have Batch jobs in (new array of strings). */
json_t *db_batch_all_regions(struct db_conn *c, char *err, size_t errlen);

/*
 * DWS: Flex Start jobs still QUEUED after their flavor's max_wait_s move to
 * the next allowed location as a new attempt (the old Batch job is
 * cancelled); with no location left they wait PENDING/Backoff. Returns the
 * number of jobs moved, -1 on error.
 */
int db_batch_flex_expired(struct db_conn *c, char *err, size_t errlen);

/* Number of outbox rows (the dispatch backlog), -1 on error. */
long db_batch_backlog(struct db_conn *c);

#endif
