/*
 * batch_report.c (db) — what Batch reports about a job (a Pub/Sub push, the
 * sync's listing, a dispatcher's lookup) moves the job: next_state() reads
 * Batch's state with what was asked of the job, and only forward. Raced
 * copies (Flex Start in several regions) are decided here too: the first
 * copy to get capacity wins.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/batch_names.h"
#include "db/batch.h"

/* ---- what Batch reports ------------------------------------------------ */

static const char sql_observe_lock[] =
    "SELECT id, state, cancel_requested FROM jobs "
    "WHERE batch_job_name = $1 FOR UPDATE";

static bool active(const char *state)
{
  return !strcmp(state, "ADMITTED") || !strcmp(state, "QUEUED") ||
         !strcmp(state, "RUNNING") || !strcmp(state, "EVICTING");
}

/*
 * The job's next state for a Batch report, or NULL for no change: Batch's
 * state read with what we asked of the job (batch_state_target), moving
 * only forward from the job's current state. *reason for final states.
 */
static const char *next_state(const char *state, bool cancel_requested,
                              const char *b, const char **reason)
{
  enum batch_intent intent = cancel_requested             ? BATCH_INTENT_CANCEL
                             : !strcmp(state, "EVICTING") ? BATCH_INTENT_EVICT
                                                          : BATCH_INTENT_NONE;
  enum batch_state st =
      !strcmp(b, "NOT_FOUND") ? BATCH_STATE_DELETED : batch_state_parse(b);
  const char *to;

  *reason = NULL;
  if (!active(state))
    return NULL;
  to = batch_state_target(st, intent, reason);
  if (!to)
    return NULL;
  if (!strcmp(to, "QUEUED") && strcmp(state, "ADMITTED") != 0)
    return NULL;
  if (!strcmp(to, "RUNNING") && strcmp(state, "ADMITTED") != 0 &&
      strcmp(state, "QUEUED") != 0)
    return NULL;
  return to;
}

/*
 * A report can arrive before the dispatcher has recorded Batch's answer to
 * its create (a push sent while the create is answered). The name is
 * deterministic, so the job is found by id and attempt and takes the name.
 * An ADMITTED job is recorded as the create's answer would have recorded
 * it: QUEUED, with its BatchJobCreated event (its message the Batch job's
 * name, as the answer's), so the report moves it on from there and the
 * dispatcher's late answer finds nothing left to record (one
 * BatchJobCreated per attempt, and every event starts where the last one
 * ended). An EVICTING job only takes the name (sql_created_evicting).
 */
/* $4 false: Batch has no such job (a cancel answered 404, the create never
 * made it): the job takes the name only, with no BatchJobCreated for a
 * Batch job that never existed, and the report moves it from ADMITTED. */
static const char sql_adopt[] =
    "WITH u AS (UPDATE jobs SET batch_job_name = $3, "
    "state = CASE WHEN state = 'ADMITTED' AND $4::boolean THEN 'QUEUED' "
    "ELSE state END, "
    "batch_state = CASE WHEN state = 'ADMITTED' AND $4::boolean "
    "THEN 'QUEUED' ELSE batch_state END, "
    "queued_at = CASE WHEN $4::boolean THEN coalesce(queued_at, now()) "
    "ELSE queued_at END, updated_at = now() "
    "WHERE id = $1 AND attempt = $2::int "
    "AND state IN ('ADMITTED', 'EVICTING') AND batch_job_name IS NULL "
    "RETURNING id, team, attempt, state, cancel_requested), "
    "e AS (INSERT INTO job_events (job_id, team, from_state, to_state, "
    "reason, attempt, message) SELECT id, team, 'ADMITTED', 'QUEUED', "
    "'BatchJobCreated', attempt, $3 FROM u "
    "WHERE state = 'QUEUED') "
    "SELECT id, state, cancel_requested FROM u";

static PGresult *adopt(struct db_conn *c, const char *name, bool exists,
                       char *err, size_t errlen)
{
  const char *base = strrchr(name, '/'), *dash;
  char id[32], attempt[16];
  const char *params[4] = {id, attempt, name, exists ? "t" : "f"};
  size_t idlen;

  base = base ? base + 1 : name;
  dash = strrchr(base, '-');
  if (strncmp(base, "gpugate-", 8) != 0 || !dash || dash[1] != 'a' ||
      dash <= base + 8 || (idlen = (size_t)(dash - base - 8)) >= sizeof(id)) {
    /* not one of ours: an empty result */
    return db_query(c, "SELECT NULL WHERE false", 0, NULL, err, errlen);
  }
  memcpy(id, base + 8, idlen);
  id[idlen] = '\0';
  snprintf(attempt, sizeof(attempt), "%.15s", dash + 2);
  return db_query(c, sql_adopt, 4, params, err, errlen);
}

int db_batch_adopt(struct db_conn *c, const char *batch_job_name, char *err,
                   size_t errlen)
{
  PGresult *res;

  if (db_begin(c) != GG_OK) {
    snprintf(err, errlen, "BEGIN failed");
    return -1;
  }
  if (!(res = adopt(c, batch_job_name, true, err, errlen))) {
    db_rollback(c);
    return -1;
  }
  PQclear(res);
  if (db_commit(c) != GG_OK) {
    snprintf(err, errlen, "COMMIT failed");
    db_rollback(c);
    return -1;
  }
  return 0;
}

/* ---- race mode: copies of one attempt in several regions --------------- */

void (*db_batch_race_hook)(const char *event, const char *region,
                           double seconds);

static void race_event(const char *event, const char *region, double seconds)
{
  if (db_batch_race_hook)
    db_batch_race_hook(event, region, seconds);
}

static const char sql_race_lock[] =
    "SELECT j.state, j.cancel_requested, coalesce(j.batch_job_name, ''), "
    "c.region, coalesce(extract(epoch FROM clock_timestamp() - "
    "c.overlap_since), -1) FROM jobs j JOIN batch_copies c "
    "ON c.job_id = j.id AND c.attempt = j.attempt "
    "WHERE j.id = $1 AND j.attempt = $2::int AND c.k = $3::int "
    "FOR UPDATE OF j, c";

/* The winner: the job's Batch job and location from now on. */
static const char sql_race_win[] =
    "UPDATE jobs SET batch_job_name = $2, location = $3, batch_state = $4, "
    "state = CASE WHEN $4 = 'RUNNING' THEN 'RUNNING' ELSE 'QUEUED' END, "
    "run_started_at = CASE WHEN $4 = 'RUNNING' THEN coalesce(run_started_at, "
    "now()) END, queued_at = coalesce(queued_at, now()), updated_at = now() "
    "WHERE id = $1";

/* Every other copy of the attempt is cancelled (a copy whose create is
 * still waiting is dropped by the claim, and its cancel answered 404). */
static const char sql_race_cancel_losers[] =
    "INSERT INTO batch_ops (job_id, attempt, op, region, batch_job_id) "
    "SELECT job_id, attempt, 'cancel', region, batch_job_id FROM "
    "batch_copies WHERE job_id = $1 AND attempt = $2::int AND k <> $3::int "
    "ON CONFLICT DO NOTHING";

static const char sql_race_cancel_one[] =
    "INSERT INTO batch_ops (job_id, attempt, op, region, batch_job_id) "
    "SELECT job_id, attempt, 'cancel', region, batch_job_id FROM "
    "batch_copies WHERE job_id = $1 AND attempt = $2::int AND k = $3::int "
    "ON CONFLICT DO NOTHING";

static const char sql_overlap_start[] =
    "UPDATE batch_copies SET overlap_since = coalesce(overlap_since, "
    "clock_timestamp()) WHERE job_id = $1 AND attempt = $2::int "
    "AND k = $3::int";

static const char sql_overlap_end[] =
    "UPDATE batch_copies SET overlap_since = NULL WHERE job_id = $1 "
    "AND attempt = $2::int AND k = $3::int";

/* Copy k of the attempt has ended at Batch (or Batch has none): it is
 * counted out, and its cancel rows waiting to be sent again have done
 * their work. Returns how many copies of the attempt may still exist. */
static const char sql_copy_ended[] =
    "WITH e AS (UPDATE batch_copies SET ended_at = coalesce(ended_at, "
    "clock_timestamp()) WHERE job_id = $1 AND attempt = $2::int "
    "AND k = $3::int RETURNING batch_job_id), "
    "r AS (DELETE FROM batch_ops o USING e WHERE o.job_id = $1 "
    "AND o.attempt = $2::int AND o.op = 'cancel' AND o.claimed_by IS NULL "
    "AND o.batch_job_id = e.batch_job_id RETURNING o.id) "
    "SELECT count(*) FROM batch_copies WHERE job_id = $1 "
    "AND attempt = $2::int AND k <> $3::int AND ended_at IS NULL";

static const char sql_race_cancelled[] =
    "UPDATE jobs SET state = 'CANCELLED', reason = 'CancelledByUser', "
    "batch_state = $2, finished_at = now(), updated_at = now() "
    "WHERE id = $1";

static const char sql_race_failed[] =
    "UPDATE jobs SET state = 'FAILED', reason = 'BatchRejected', "
    "batch_state = $2, finished_at = now(), updated_at = now() "
    "WHERE id = $1";

/* The winner's state as recorded while its end waited for the losers. */
static const char sql_winner_state[] =
    "SELECT coalesce(batch_state, '') FROM jobs WHERE id = $1 "
    "AND batch_job_name = $2 "
    "AND state IN ('ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING')";

/* Job id's winner's end waited for its losers (db_batch_observe_at): once
 * none may still run, the winner's recorded state moves the job. 0, 1 or
 * -1 as db_batch_observe(). */
static int end_after_losers(struct db_conn *c, const char *id,
                            const char *winner, char *err, size_t errlen)
{
  const char *params[2] = {id, winner};
  char state[40];
  PGresult *res = db_query(c, sql_winner_state, 2, params, err, errlen);

  if (!res)
    return -1;
  state[0] = '\0';
  if (PQntuples(res) == 1)
    snprintf(state, sizeof(state), "%s", PQgetvalue(res, 0, 0));
  PQclear(res);
  if (!state[0])
    return 0;
  return db_batch_observe_at(c, winner, state, 0, err, errlen);
}

/*
 * A state Batch reported for a raced copy (k of attempt) that is not the
 * job's recorded Batch job: the first copy SCHEDULED or RUNNING wins and
 * the others are cancelled in the same transaction; a loser seen RUNNING
 * counts overlap until it stops. Without a winner, the end of the last
 * copy that may exist (each copy's end is recorded: ended_at) completes
 * the job's cancel or eviction. Commits or rolls back the
 * observe's transaction; returns like db_batch_observe().
 */
static int race_observe(struct db_conn *c, const char *id, int attempt, int k,
                        const char *name, const char *batch_state, char *err,
                        size_t errlen)
{
  char a[16], kk[16], state[16], winner[512], region[64], msg[600];
  const char *params[4] = {id, a, kk, NULL};
  enum batch_state st = !strcmp(batch_state, "NOT_FOUND")
                            ? BATCH_STATE_DELETED
                            : batch_state_parse(batch_state);
  bool cancel_requested, live = true, started;
  double overlap;
  PGresult *res;
  int changed = 0, rows = 0;

  snprintf(a, sizeof(a), "%d", attempt);
  snprintf(kk, sizeof(kk), "%d", k);
  if (!(res = db_query(c, sql_race_lock, 3, params, err, errlen)))
    goto fail;
  if (PQntuples(res) == 0) {
    PQclear(res);
    db_rollback(c);
    return 0; /* an attempt that is over, or not a copy we made */
  }
  snprintf(state, sizeof(state), "%s", PQgetvalue(res, 0, 0));
  cancel_requested = PQgetvalue(res, 0, 1)[0] == 't';
  snprintf(winner, sizeof(winner), "%s", PQgetvalue(res, 0, 2));
  snprintf(region, sizeof(region), "%s", PQgetvalue(res, 0, 3));
  overlap = strtod(PQgetvalue(res, 0, 4), NULL);
  PQclear(res);
  started = !strcmp(batch_state, "SCHEDULED") || st == BATCH_STATE_RUNNING;
  /* CANCELLATION_IN_PROGRESS is not an end: the copy may still run */
  live = st == BATCH_STATE_QUEUED || st == BATCH_STATE_RUNNING ||
         st == BATCH_STATE_CANCELLING || st == BATCH_STATE_UNKNOWN;
  if (!live) {
    long others;
    if ((others = db_query_long(c, sql_copy_ended, 3, params, err, errlen)) < 0)
      goto fail;
    /* without a winner, the job's cancel or eviction waits for every
     * copy that may exist: each was asked to end (sql_request_cancel
     * names them all), and each is reported ended or absent in turn */
    if (!winner[0] && others > 0)
      goto done;
  }

  if (!winner[0] && started && !cancel_requested &&
      (!strcmp(state, "ADMITTED") || !strcmp(state, "QUEUED"))) {
    const char *to = st == BATCH_STATE_RUNNING ? "RUNNING" : "QUEUED";
    const char *win[4] = {id, name, region, batch_state};
    if (db_run(c, sql_race_win, 4, win, NULL, err, errlen) ||
        db_run(c, sql_race_cancel_losers, 3, params, NULL, err, errlen) ||
        db_batch_wake_dispatch(c, err, errlen))
      goto fail;
    snprintf(msg, sizeof(msg),
             "the copy in %s won the race (Batch reports %s for %s); the "
             "other copies are cancelled",
             region, batch_state, name);
    if (db_job_event(c, id, state, to, "RaceWon", msg, err, errlen))
      goto fail;
    race_event("winner", region, 0);
    changed = 1;
  } else if (winner[0] && strcmp(winner, name) != 0) {
    /* a loser: it must stop; while it runs beside the winner it costs */
    if (st == BATCH_STATE_RUNNING) {
      if (db_run(c, sql_overlap_start, 3, params, NULL, err, errlen))
        goto fail;
    } else if (overlap >= 0) {
      if (db_run(c, sql_overlap_end, 3, params, NULL, err, errlen))
        goto fail;
      race_event("overlap", region, overlap);
    }
    if (started &&
        db_run(c, sql_race_cancel_one, 3, params, &rows, err, errlen))
      goto fail;
    if (rows && db_batch_wake_dispatch(c, err, errlen))
      goto fail;
  } else if (!winner[0] && !live) {
    /* no winner and this copy, the last of them, is gone: a cancel or an
     * eviction that asked for them is complete; a cancel wins over an
     * eviction, as in batch_state_target() */
    if (cancel_requested &&
        (!strcmp(state, "ADMITTED") || !strcmp(state, "QUEUED") ||
         !strcmp(state, "EVICTING"))) {
      params[1] = batch_state;
      if (db_run(c, sql_race_cancelled, 2, params, NULL, err, errlen) ||
          db_batch_wake(c, err, errlen))
        goto fail;
      params[1] = a;
      snprintf(msg, sizeof(msg), "Batch reports %s for %s", batch_state, name);
      if (db_job_event(c, id, state, "CANCELLED", "CancelledByUser", msg, err,
                       errlen))
        goto fail;
      changed = 1;
    } else if (!strcmp(state, "EVICTING")) {
      if (db_batch_requeue(c, id, "Requeued",
                           "evicted; its raced Batch jobs are cancelled and it "
                           "waits again in its queue with its original place",
                           &changed, err, errlen))
        goto fail;
    } else if (!strcmp(state, "ADMITTED") || !strcmp(state, "QUEUED")) {
      /* every copy ended without winning, none asked to: each create was
       * refused, the last one after a try that may have made it
       * (db/batch.c, give_up_create), and that copy is gone now */
      params[1] = batch_state;
      if (db_run(c, sql_race_failed, 2, params, NULL, err, errlen) ||
          db_batch_wake(c, err, errlen))
        goto fail;
      params[1] = a;
      snprintf(msg, sizeof(msg),
               "Batch refused every raced copy; the last one, which an "
               "earlier try may have made, is reported %s (%s)",
               batch_state, name);
      if (db_job_event(c, id, state, "FAILED", "BatchRejected", msg, err,
                       errlen))
        goto fail;
      changed = 1;
    }
  }
done:
  if (db_commit(c) != GG_OK) {
    snprintf(err, errlen, "COMMIT failed");
    goto fail;
  }
  /* a loser's end may be the last the winner's end waited for */
  if (winner[0] && strcmp(winner, name) != 0 && !live &&
      end_after_losers(c, id, winner, err, errlen) < 0)
    return -1;
  return changed ? 1 : 0;
fail:
  db_rollback(c);
  return -1;
}

/*
 * Most reports are decided without a lock and written in one statement:
 * the job as it was read (sql_observe_peek) decides the move, and the
 * write is guarded by what decided it (its Batch job, state,
 * cancel_requested), so a job that moved meanwhile matches nothing and is
 * decided again under its row lock. The Batch job name carries the
 * attempt: a report about attempt N-1 read just before the job moved on
 * to attempt N, in the same state, must not move attempt N. The event, and for
 * a final state the leader's wake-up, are in the same statement.
 */
static const char sql_observe_peek[] =
    "SELECT id, state, cancel_requested, batch_state IS NOT DISTINCT FROM $2 "
    "FROM jobs WHERE batch_job_name = $1";

/*
 * Batch's own state only moves forward (issue 34, defect 5): Pub/Sub
 * redelivers a message it did not see acknowledged after later ones, and a
 * sync's listing can be older than a push. A job's Batch states come in
 * one order (QUEUED, SCHEDULED, RUNNING, then stopping, then ended), the
 * order of their status events, so a report is recorded only when its
 * state is not behind the one recorded: a QUEUED redelivered after
 * SCHEDULED would have made a Flex Start job that has its capacity fail
 * over (db_batch_flex_expired reads batch_state).
 */
#define BATCH_STATE_RANK(s)                                                    \
  "CASE " s " WHEN 'QUEUED' THEN 1 WHEN 'SCHEDULED' THEN 2 "                   \
  "WHEN 'RUNNING' THEN 3 WHEN 'CANCELLATION_IN_PROGRESS' THEN 4 "              \
  "WHEN 'DELETION_IN_PROGRESS' THEN 5 WHEN 'SUCCEEDED' THEN 6 "                \
  "WHEN 'FAILED' THEN 6 WHEN 'CANCELLED' THEN 6 WHEN 'NOT_FOUND' THEN 7 "      \
  "ELSE 0 END"

static const char sql_observe_note[] =
    "UPDATE jobs SET batch_state = $2 WHERE id = $1 AND state = $3 "
    "AND cancel_requested = $4::boolean AND batch_job_name = $5 "
    "AND batch_state IS DISTINCT FROM $2 "
    "AND (batch_state IS NULL OR " BATCH_STATE_RANK(
        "$2::text") " >= " BATCH_STATE_RANK("batch_state") ")";

/* Batch reported the job ended: the cancel rows waiting to be sent again
 * (db_batch_recheck_cancel) have done their work; one under a lease ends
 * on its own. when: an SQL condition; name: the Batch job's name. */
#define DROP_RECHECKS(when, name)                                              \
  "r AS (DELETE FROM batch_ops WHERE " when " AND op = 'cancel' "              \
  "AND claimed_by IS NULL AND batch_job_id = regexp_replace(" name             \
  ", '^.*/', '') RETURNING id) "

static const char sql_drop_rechecks[] =
    "WITH " DROP_RECHECKS("true", "$1") "SELECT count(*) FROM r";

/* $6: the move is to a final state, with reason $7; $10 the Batch job;
 * $11 when Batch says it ended (µs, 0: unknown): its finished_at, kept
 * between its start (or admission) and now, so a job's run and its usage
 * end when it ended, not when gpugate heard of it. A job whose create
 * Batch refused after an earlier try may have made it (db/batch.c,
 * give_up_create) fails as BatchRejected once that Batch job has ended,
 * whatever Batch reports for it. A job with raced copies ends only when
 * every copy but the one it names has been reported ended (the
 * invariant: its quota is held until then; race_observe moves it when
 * the last one ends). */
#define OBSERVE_REASON                                                         \
  "CASE WHEN $3 = 'FAILED' AND NOT $5::boolean "                               \
  "AND reason = 'BatchRejected' THEN reason ELSE nullif($7, '') END"
static const char sql_observe_move[] =
    "WITH u AS (UPDATE jobs SET state = $3, batch_state = $4, "
    "reason = CASE WHEN $6::boolean THEN " OBSERVE_REASON " ELSE reason END, "
    "run_started_at = CASE WHEN $3 = 'RUNNING' "
    "THEN coalesce(run_started_at, now()) ELSE run_started_at END, "
    "finished_at = CASE WHEN NOT $6::boolean THEN finished_at "
    "WHEN $11::bigint > 0 THEN least(now(), greatest(coalesce(run_started_at, "
    "admitted_at, now()), to_timestamp($11::bigint / 1000000.0))) "
    "ELSE now() END, "
    "updated_at = now() "
    "WHERE id = $1 AND state = $2 AND cancel_requested = $5::boolean "
    "AND batch_job_name = $10 AND (NOT $6::boolean OR NOT EXISTS ("
    "SELECT 1 FROM batch_copies c WHERE c.job_id = jobs.id "
    "AND c.attempt = jobs.attempt AND c.ended_at IS NULL "
    "AND c.batch_job_id <> regexp_replace($10, '^.*/', ''))) "
    "RETURNING id, team, attempt, reason), "
    "e AS (INSERT INTO job_events (job_id, team, from_state, to_state, "
    "reason, attempt, message) SELECT id, team, $2, $3, CASE WHEN "
    "$6::boolean THEN coalesce(reason, $8) ELSE $8 END, attempt, $9 "
    "FROM u), " DROP_RECHECKS(
        "$6::boolean AND EXISTS (SELECT 1 FROM u)",
        "$10") "SELECT CASE WHEN $6::boolean "
               "THEN pg_notify('gpugate_admission', 'batch') END FROM u";

/*
 * Write what next_state() decided for job id (read as state and
 * cancel_requested, with batch_job_name as its Batch job): no move (to NULL)
 * records Batch's state; a move is written with its event and, for a final
 * state, the leader's wake-up. Guarded by what decided it, so under the row
 * lock it always applies; without it *rows is 0 when the job moved meanwhile
 * (or, for no move, already had that Batch state). 0 or -1.
 */
static int write_decision(struct db_conn *c, const char *id, const char *state,
                          bool cancel_requested, const char *to,
                          const char *reason, const char *batch_job_name,
                          const char *batch_state, int64_t ended_us, int *rows,
                          char *err, size_t errlen)
{
  const char *params[11];
  char msg[160], ended[24];

  params[0] = id;
  if (!to) {
    params[1] = batch_state;
    params[2] = state;
    params[3] = cancel_requested ? "t" : "f";
    params[4] = batch_job_name;
    return db_run(c, sql_observe_note, 5, params, rows, err, errlen);
  }
  snprintf(msg, sizeof(msg), "Batch reports %s for %s", batch_state,
           batch_job_name);
  params[1] = state;
  params[2] = to;
  params[3] = batch_state;
  params[4] = cancel_requested ? "t" : "f";
  params[5] =
      strcmp(to, "QUEUED") != 0 && strcmp(to, "RUNNING") != 0 ? "t" : "f";
  params[6] = reason ? reason : "";
  params[7] = reason ? reason : batch_state;
  params[8] = msg;
  params[9] = batch_job_name;
  snprintf(ended, sizeof(ended), "%lld", (long long)ended_us);
  params[10] = ended;
  return db_run(c, sql_observe_move, 11, params, rows, err, errlen);
}

/* How many raced copies of job id's attempt, other than its Batch job
 * name, may still exist (not reported ended or absent), or -1. */
static const char sql_copies_live[] =
    "SELECT count(*) FROM batch_copies c JOIN jobs j ON j.id = c.job_id "
    "AND j.attempt = c.attempt WHERE j.id = $1 AND c.ended_at IS NULL "
    "AND c.batch_job_id <> regexp_replace($2, '^.*/', '')";

static long copies_live(struct db_conn *c, const char *id, const char *name,
                        char *err, size_t errlen)
{
  const char *params[2] = {id, name};

  return db_query_long(c, sql_copies_live, 2, params, err, errlen);
}

/* 0 or 1 as db_batch_observe(), -1, or 2: decide under the row lock. */
static int observe_unlocked(struct db_conn *c, const char *batch_job_name,
                            const char *batch_state, int64_t ended_us,
                            char *err, size_t errlen)
{
  const char *params[2] = {batch_job_name, batch_state}, *to, *reason;
  char id[32], state[16];
  bool cancel_requested, same;
  PGresult *res;
  int rows = 0;

  if (!(res = db_query(c, sql_observe_peek, 2, params, err, errlen)))
    return -1;
  if (PQntuples(res) != 1) {
    PQclear(res);
    return 2; /* not yet named (adopt), a raced copy, or not ours */
  }
  snprintf(id, sizeof(id), "%s", PQgetvalue(res, 0, 0));
  snprintf(state, sizeof(state), "%s", PQgetvalue(res, 0, 1));
  cancel_requested = PQgetvalue(res, 0, 2)[0] == 't';
  same = PQgetvalue(res, 0, 3)[0] == 't';
  PQclear(res);

  to = next_state(state, cancel_requested, batch_state, &reason);
  if (to && !strcmp(to, "PENDING"))
    return 2; /* a requeue */
  if (!to && same)
    return 0;
  if (write_decision(c, id, state, cancel_requested, to, reason, batch_job_name,
                     batch_state, ended_us, &rows, err, errlen))
    return -1;
  if (rows != 1)
    return 2;
  return to ? 1 : 0;
}

int db_batch_observe(struct db_conn *c, const char *batch_job_name,
                     const char *batch_state, char *err, size_t errlen)
{
  return db_batch_observe_at(c, batch_job_name, batch_state, 0, err, errlen);
}

int db_batch_observe_at(struct db_conn *c, const char *batch_job_name,
                        const char *batch_state, int64_t ended_us, char *err,
                        size_t errlen)
{
  const char *params[1], *to, *reason;
  char id[32], state[16];
  PGresult *res;
  bool cancel_requested;
  int rows =
      observe_unlocked(c, batch_job_name, batch_state, ended_us, err, errlen);

  if (rows != 2)
    return rows;
  rows = 0;
  if (db_begin(c) != GG_OK) {
    snprintf(err, errlen, "BEGIN failed");
    return -1;
  }
  params[0] = batch_job_name;
  if (!(res = db_query(c, sql_observe_lock, 1, params, err, errlen)))
    goto fail;
  if (PQntuples(res) == 0) {
    char rid[32];
    int rattempt, race_k;
    PQclear(res);
    if (batch_job_id_parse(batch_job_name, rid, sizeof(rid), &rattempt,
                           &race_k) == 0 &&
        race_k > 0)
      return race_observe(c, rid, rattempt, race_k, batch_job_name, batch_state,
                          err, errlen);
    res = adopt(c, batch_job_name, strcmp(batch_state, "NOT_FOUND") != 0, err,
                errlen);
    if (!res)
      goto fail;
  }
  if (PQntuples(res) == 0) {
    PQclear(res);
    db_rollback(c);
    return 0; /* not ours, or an earlier attempt's */
  }
  snprintf(id, sizeof(id), "%s", PQgetvalue(res, 0, 0));
  snprintf(state, sizeof(state), "%s", PQgetvalue(res, 0, 1));
  cancel_requested = PQgetvalue(res, 0, 2)[0] == 't';
  PQclear(res);

  to = next_state(state, cancel_requested, batch_state, &reason);
  if (to && strcmp(to, "QUEUED") != 0 && strcmp(to, "RUNNING") != 0) {
    /* an end waits for the raced copies that may still run: Batch's state
     * is recorded, and the last copy's end moves the job (race_observe) */
    long live = copies_live(c, id, batch_job_name, err, errlen);
    if (live < 0)
      goto fail;
    if (live > 0)
      to = NULL;
  }
  if (to && !strcmp(to, "PENDING")) {
    if (db_run(c, sql_drop_rechecks, 1, params, NULL, err, errlen) ||
        db_batch_requeue(c, id, "Requeued",
                         "evicted; its Batch job is cancelled and it waits "
                         "again in its queue with its original place",
                         &rows, err, errlen))
      goto fail;
  } else {
    if (write_decision(c, id, state, cancel_requested, to, reason,
                       batch_job_name, batch_state, ended_us, &rows, err,
                       errlen))
      goto fail;
    if (!to)
      rows = 0; /* Batch's state recorded; the job did not move */
  }
  if (db_commit(c) != GG_OK) {
    snprintf(err, errlen, "COMMIT failed");
    goto fail;
  }
  return rows ? 1 : 0;
fail:
  db_rollback(c);
  return -1;
}
