/*
 * batch.c (db) — the Batch outbox and the dispatcher's side of it (what
 * the sync reads and Flex Start's max_wait_s are in batch_sync.c; what
 * Batch reports moves jobs in batch_report.c).
 *
 * Exactly once: a create row is written with the admission; the dispatcher
 * calls Batch with the deterministic job_id "gpugate-<id>-a<attempt>" and
 * deletes the row in the same transaction that records the result. If
 * gpugate dies between the call and the commit the row stays, the next
 * claim calls again, and Batch's ALREADY_EXISTS counts as success.
 *
 * THE INVARIANT (SPEC §10; issue 34): while a job is cancel-requested or
 * EVICTING and any Batch job of it may exist (created, or a create whose
 * outcome is unknown), gpugate keeps trying to end that Batch job, with
 * backoff and never giving up on a 4xx, until Batch reports it ended or
 * absent (404); only then does the job leave cancel-requested or EVICTING,
 * and its quota is released only then. What keeps it:
 *   - a create whose answer is unknown is possibly made, never forgotten:
 *     its deterministic id is the one the cancel names (sql_request_cancel),
 *     and a withdrawn create that was tried before does not count as
 *     withdrawn (db_batch_withdraw_create: the eviction or the cancel waits
 *     for Batch's word on it), nor does a refusal of its retry say it was
 *     never made (give_up_create: that Batch job is cancelled, and the
 *     job, holding its quota, fails only once Batch reports it ended or
 *     absent);
 *   - CANCELLATION_IN_PROGRESS is not an end (batch_state_target: no
 *     move): the Batch job may still run, so the job keeps its state and
 *     its quota until Batch reports CANCELLED, DELETION_IN_PROGRESS, a
 *     final state or 404;
 *   - a cancel row is never dropped on a refusal (control/dispatch.c,
 *     record_failure: a cancel is retried, whatever Batch answered), and
 *     only a 404 or Batch's ended state completes it; nor on an
 *     acceptance: Batch may take a cancel and never act on it, so the row
 *     stays and goes out again after a growing bound
 *     (db_batch_recheck_cancel) until Batch reports the job ended (the
 *     move deletes it, batch_report.c DROP_RECHECKS) or absent;
 *   - a raced job with no winner has a Batch job per copy: each copy is
 *     asked to end (sql_request_cancel names them all), its end is
 *     recorded (batch_copies.ended_at), and only the end of the last copy
 *     that may exist ends the cancel or the eviction (batch_report.c,
 *     race_observe); a copy's CANCELLATION_IN_PROGRESS counts as live;
 *     a winner's end waits the same way for every loser that may still
 *     run (batch_report.c, copies_live and end_after_losers);
 *   - a Flex Start attempt that waited too long ends before the next one
 *     starts: a failover's create stays behind the cancel of the attempt
 *     it replaces until that Batch job is reported ended or absent (the
 *     recheck keeps later attempts' rows behind it,
 *     db_batch_recheck_cancel), and a backoff is an eviction (EVICTING,
 *     Backoff) whose quota goes back when Batch reports the end
 *     (db_batch_requeue);
 *   - a cancel Batch took names the Batch job on the job when the create's
 *     answer never did (control/dispatch.c, cancel_done; batch_report.c,
 *     adopt), so what Batch reports next moves the job out of
 *     cancel-requested or EVICTING; nothing else does;
 *   - a job's rows go out in order: a retried row keeps the rows queued
 *     behind it behind it (sql_retry), and a create is stale once a cancel
 *     is pending (claimed_op), so no create reaches Batch after the cancel
 *     that ends it.
 * tests/integration/it_faults.c checks it against a Batch that refuses and
 * loses answers, as a property of random interleavings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/batch_names.h"
#include "db/batch.h"

static const char sql_event[] =
    "INSERT INTO job_events (job_id, team, from_state, to_state, reason, "
    "attempt, message) SELECT id, team, $2, $3, $4, attempt, $5 FROM jobs "
    "WHERE id = $1";

/* The event of a create recorded by a "WITH u AS (UPDATE jobs ...
 * RETURNING id, team, attempt)": $4 is its message. */
#define CREATED_EVENT                                                          \
  "INSERT INTO job_events (job_id, team, from_state, to_state, reason, "       \
  "attempt, message) SELECT id, team, 'ADMITTED', 'QUEUED', "                  \
  "'BatchJobCreated', attempt, $4 FROM u"

static const char sql_wake[] = "SELECT pg_notify('gpugate_admission', 'batch')";

int db_job_event(struct db_conn *c, const char *job_id, const char *from,
                 const char *to, const char *reason, const char *message,
                 char *err, size_t errlen)
{
  const char *params[5] = {job_id, from, to, reason, message};

  return db_run(c, sql_event, 5, params, NULL, err, errlen);
}

int db_batch_wake(struct db_conn *c, char *err, size_t errlen)
{
  return db_run(c, sql_wake, 0, NULL, NULL, err, errlen);
}

/* ---- writing the outbox ------------------------------------------------ */

/*
 * Race mode: the copies of the job's current attempt, one per allowed
 * region (the flavor's order, narrowed by the job's own locations), at
 * most max_parallel_regions. Nothing for other flavors.
 */
static const char sql_race_copies[] =
    "INSERT INTO batch_copies (job_id, attempt, k, region, batch_job_id) "
    "SELECT j.id, j.attempt, r.k, r.region, "
    "'gpugate-' || j.id || '-a' || j.attempt || '-r' || r.k "
    "FROM jobs j JOIN flavors f ON f.name = j.flavor "
    "CROSS JOIN LATERAL (SELECT row_number() OVER (ORDER BY fl.ord) AS k, "
    "fl.region FROM json_array_elements_text(f.spec->'locations') "
    "WITH ORDINALITY AS fl(region, ord) "
    "WHERE json_typeof(j.spec->'locations') IS DISTINCT FROM 'array' "
    "OR json_array_length(j.spec->'locations') = 0 "
    "OR fl.region IN (SELECT json_array_elements_text(j.spec->'locations'))"
    ") r WHERE j.id = ANY($1::text[]) AND f.spec->>'multi_region' = 'race' "
    "AND f.spec->>'provisioning_model' = 'FLEX_START' "
    "AND r.k <= coalesce((f.spec->>'max_parallel_regions')::int, 16) "
    "ON CONFLICT DO NOTHING";

static const char sql_request_copies[] =
    "INSERT INTO batch_ops (job_id, attempt, op, region, batch_job_id) "
    "SELECT c.job_id, c.attempt, 'create', c.region, c.batch_job_id "
    "FROM batch_copies c JOIN jobs j ON j.id = c.job_id "
    "AND j.attempt = c.attempt WHERE c.job_id = ANY($1::text[]) "
    "ORDER BY c.job_id, c.k "
    "ON CONFLICT DO NOTHING";

/* The rows go in round-robin over their regions: rows queued together are
 * claimed in the order they went in, and a region whose rows all came
 * after another's would wait for that region's budget as well as its own. */
static const char sql_request_create[] =
    "INSERT INTO batch_ops (job_id, attempt, op, region, batch_job_id) "
    "SELECT id, attempt, 'create', location, "
    "'gpugate-' || id || '-a' || attempt FROM jobs "
    "WHERE id = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM batch_copies c "
    "WHERE c.job_id = jobs.id "
    "AND c.attempt = jobs.attempt) "
    "ORDER BY row_number() OVER (PARTITION BY location ORDER BY id), location "
    "ON CONFLICT DO NOTHING";

/* A create under a live lease may be at Batch right now: it is not
 * withdrawn, and the caller asks for a cancel, which goes out after it. */
/* A create tried before (tries > 0: its answer was lost, or an error that
 * may have followed the effect) is possibly made: withdrawn all the same,
 * but it counts as a Batch job that may exist (db_batch_withdraw_create). */
static const char sql_withdraw_create[] =
    "DELETE FROM batch_ops WHERE job_id = $1 AND attempt = $2::int "
    "AND op = 'create' AND (claimed_until IS NULL "
    "OR claimed_until < clock_timestamp()) RETURNING tries";

/* How many Batch jobs the attempt has or would have: its raced copies, or
 * one. */
static const char sql_copies_of[] =
    "SELECT greatest(1, count(*)) FROM batch_copies "
    "WHERE job_id = $1 AND attempt = $2::int";

/* Cancel whatever Batch job this attempt may have: also after a withdrawn
 * create, since a dispatcher that died after its call leaves a Batch job
 * behind with the row still in the outbox. A cancel of a job Batch never
 * had is answered 404 and is done. The Batch job is the one recorded (a
 * race's winner included), else every raced copy, else the one id. */
static const char sql_request_cancel[] =
    "INSERT INTO batch_ops (job_id, attempt, op, region, batch_job_id) "
    "SELECT j.id, j.attempt, 'cancel', x.region, x.batch_job_id FROM jobs j "
    "CROSS JOIN LATERAL ("
    "SELECT j.location AS region, regexp_replace(j.batch_job_name, '^.*/', "
    "'') AS batch_job_id WHERE j.batch_job_name IS NOT NULL "
    "UNION ALL SELECT c.region, c.batch_job_id FROM batch_copies c "
    "WHERE j.batch_job_name IS NULL AND c.job_id = j.id "
    "AND c.attempt = j.attempt "
    "UNION ALL SELECT j.location, 'gpugate-' || j.id || '-a' || j.attempt "
    "WHERE j.batch_job_name IS NULL AND NOT EXISTS (SELECT 1 FROM "
    "batch_copies c WHERE c.job_id = j.id AND c.attempt = j.attempt)) x "
    "WHERE j.id = $1 AND j.location IS NOT NULL ON CONFLICT DO NOTHING";

static const char sql_wake_dispatch[] =
    "SELECT pg_notify('gpugate_dispatch', '')";

int db_batch_wake_dispatch(struct db_conn *c, char *err, size_t errlen)
{
  return db_run(c, sql_wake_dispatch, 0, NULL, NULL, err, errlen);
}

int db_batch_request_create_many(struct db_conn *c, const char *ids, char *err,
                                 size_t errlen)
{
  const char *params[1] = {ids};

  /* planned per call: they join jobs to the ids (db_query_planned()) */
  return db_run_planned(c, sql_race_copies, 1, params, NULL, err, errlen) ||
                 db_run_planned(c, sql_request_copies, 1, params, NULL, err,
                                errlen) ||
                 db_run_planned(c, sql_request_create, 1, params, NULL, err,
                                errlen) ||
                 db_batch_wake_dispatch(c, err, errlen)
             ? -1
             : 0;
}

int db_batch_request_create(struct db_conn *c, const char *job_id, char *err,
                            size_t errlen)
{
  char ids[160]; /* "{id}": job ids are [a-z0-9-], nothing to quote */
  const char *p;
  int n;

  for (p = job_id; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
      break;
  n = snprintf(ids, sizeof(ids), "{%s}", job_id);
  if (*p || n < 0 || (size_t)n >= sizeof(ids)) {
    snprintf(err, errlen, "job id \"%.64s\" is not a job id", job_id);
    return -1;
  }
  return db_batch_request_create_many(c, ids, err, errlen);
}

int db_batch_withdraw_create(struct db_conn *c, const char *job_id, int attempt,
                             char *err, size_t errlen)
{
  char a[16];
  const char *params[2] = {job_id, a};
  PGresult *res;
  int rows = 0, i;
  long copies;
  bool tried = false;

  snprintf(a, sizeof(a), "%d", attempt);
  if (!(res = db_query(c, sql_withdraw_create, 2, params, err, errlen)))
    return -1;
  rows = PQntuples(res);
  for (i = 0; i < rows; i++)
    tried |= strtol(PQgetvalue(res, i, 0), NULL, 10) > 0;
  PQclear(res);
  if (rows == 0)
    return 0;
  if ((copies = db_query_long(c, sql_copies_of, 2, params, err, errlen)) < 0)
    return -1;
  if (db_run(c, sql_request_cancel, 1, params, NULL, err, errlen))
    return -1;
  /* withdrawn only when no Batch job of the attempt was created: with a
   * race, some copies may exist while the creates of others were still
   * waiting */
  return rows >= copies && !tried ? 1 : 0;
}

int db_batch_request_cancel(struct db_conn *c, const char *job_id, char *err,
                            size_t errlen)
{
  const char *params[1] = {job_id};

  return db_run(c, sql_request_cancel, 1, params, NULL, err, errlen) ||
                 db_batch_wake_dispatch(c, err, errlen)
             ? -1
             : 0;
}

/* Back in the queue: same created_at (its place), the next attempt. Never
 * a job whose cancel is pending: what Batch reports about it next makes it
 * CANCELLED (batch_state_target), and a requeue would admit it again. */
/* A Flex Start backoff (sql_flex_backoff) stays Backoff: its
 * backoff_until holds it back. */
static const char sql_requeue[] =
    "UPDATE jobs SET state = 'PENDING', "
    "reason = CASE WHEN reason = 'Backoff' THEN reason END, "
    "attempt = attempt + 1, flavor = NULL, location = NULL, borrowed = NULL, "
    "admitted_at = NULL, run_started_at = NULL, estimated_cost_usd = NULL, "
    "batch_job_name = NULL, batch_state = NULL, queued_at = NULL, "
    "location_index = 0, updated_at = now() "
    "WHERE id = $1 AND state = 'EVICTING' AND NOT cancel_requested "
    "RETURNING reason IS NOT NULL";

int db_batch_requeue(struct db_conn *c, const char *job_id, const char *reason,
                     const char *message, int *rows, char *err, size_t errlen)
{
  const char *params[1] = {job_id};
  PGresult *res = db_query(c, sql_requeue, 1, params, err, errlen);
  bool backoff;

  if (!res)
    return -1;
  *rows = PQntuples(res);
  backoff = *rows && PQgetvalue(res, 0, 0)[0] == 't';
  PQclear(res);
  if (!*rows)
    return 0;
  if (backoff) {
    reason = "Backoff";
    message = "no Flex Start capacity in any allowed location; its Batch job "
              "has ended, and it waits before the next try";
  }
  if (db_job_event(c, job_id, "EVICTING", "PENDING", reason, message, err,
                   errlen))
    return -1;
  return db_batch_wake(c, err, errlen);
}

/* ---- the dispatcher's side --------------------------------------------- */

/*
 * A claim is batch_ops_claim() (migration 0028): the rows are picked and
 * locked first, then joined to their jobs (joined before the LIMIT, every
 * due row was joined and sorted on each claim). Due rows no one holds are
 * taken in batch_ops_unclaimed order (0027), so the scan stops at the
 * first rows it can lock and never passes the rows whose calls are under
 * way; rows due at the same moment (one admission's) come in the index's
 * order. The function fixes the plan's shape: a dispatcher's prepared
 * claim had taken a generic plan made while the outbox was empty,
 * quadratic in its rows once admissions filled it (875 ms a claim with
 * 2,000 rows).
 *
 * A claim is a lease, not a lock held open: the row gets claimed_by (the
 * dispatcher, unique to its process), claimed_until and, for diagnosis
 * only, claimed_pid (the session that claimed it); the transaction commits
 * before any Batch call, so a cancel or an eviction never waits on a row
 * while Batch answers. A lease is live while claimed_until is ahead, and
 * its holder renews it while the row's calls are under way
 * (db_batch_renew); nothing else counts. A dispatcher that reconnected
 * (another backend pid) keeps its leases, and a dead one's pid taken by a
 * new session keeps none alive: judged from pg_stat_activity, the first
 * looked dead (its create withdrawn or retaken while at Batch) and the
 * second alive (issue 34, defect 6). A row under a live lease is not
 * claimed again; once its lease has run out (the dispatcher died mid-call,
 * or could not renew) any dispatcher may take it, at its next look for
 * such rows (about once a second: batch_ops_claim's lapsed), and the
 * deterministic Batch job id makes the repeated call harmless.
 *
 * Dispatchers work in parallel, so a job's operations are kept in their
 * (next_at, id) order: none is claimed while an earlier one of the same
 * job is in the outbox, claimed or not. Otherwise a cancel could reach
 * Batch before the create still in flight (404, done; then the create
 * succeeds and the job runs), or a Flex Start failover's create before the
 * cancel of the attempt it replaces. The one exception: a raced attempt's
 * copies are created at once, so an earlier create of the same attempt
 * does not hold a create back (migration 0043).
 */
/* The claimed rows and their jobs, all from the function: joined here,
 * the jobs were read as of this statement's start, before the rows the
 * function saw had committed. */
#define CLAIM(lapsed)                                                          \
  "SELECT * FROM batch_ops_claim($1::text[], $2, $3::int, $4::int, " lapsed ")"

/* The rows no dispatcher holds. */
static const char sql_claim[] = CLAIM("false");

/* The rows held under a lease that ran out (its dispatcher died or could
 * not renew): a look over every held row, so not made on every claim
 * (db_batch_claim_many's lapsed). */
static const char sql_claim_lapsed[] = CLAIM("true");

/* Only the holder of the lease deletes the row: after a lease ran out and
 * another dispatcher took the row, that one records it. */
static const char sql_drop_claimed[] =
    "DELETE FROM batch_ops WHERE id = $1::bigint AND claimed_by = $2";

void db_batch_op_free(struct db_batch_op *op)
{
  json_decref(op->job_spec);
  json_decref(op->flavor_spec);
  memset(op, 0, sizeof(*op));
}

/* items as a text[] literal, every element quoted and escaped (a region
 * name is data, never array syntax). New string, or NULL when out of
 * memory. */
static char *text_array(const char *const *items, size_t n)
{
  size_t i, len = 3; /* braces and NUL */
  char *out, *q;

  for (i = 0; i < n; i++)
    len += 2 * strlen(items[i]) + 3; /* escapes, quotes, comma */
  if (!(q = out = malloc(len)))
    return NULL;
  *q++ = '{';
  for (i = 0; i < n; i++) {
    const char *p;
    if (i)
      *q++ = ',';
    *q++ = '"';
    for (p = items[i]; *p; p++) {
      if (*p == '"' || *p == '\\')
        *q++ = '\\';
      *q++ = *p;
    }
    *q++ = '"';
  }
  *q++ = '}';
  *q = '\0';
  return out;
}

/* Row i of a claim into *op. Returns whether the row is stale: a create for
 * an attempt that is no longer admitted has no purpose; nor has a raced
 * copy's once a copy has won or the job is being cancelled (the job is
 * QUEUED as soon as one copy exists). */
static bool claimed_op(PGresult *res, int i, const char *claimer,
                       struct db_batch_op *op)
{
  char id[32];
  int attempt, race_k;

  memset(op, 0, sizeof(*op));
  op->id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
  snprintf(op->job_id, sizeof(op->job_id), "%s", PQgetvalue(res, i, 1));
  op->attempt = (int)strtol(PQgetvalue(res, i, 2), NULL, 10);
  snprintf(op->op, sizeof(op->op), "%s", PQgetvalue(res, i, 3));
  snprintf(op->region, sizeof(op->region), "%s", PQgetvalue(res, i, 4));
  snprintf(op->batch_job_id, sizeof(op->batch_job_id), "%s",
           PQgetvalue(res, i, 5));
  snprintf(op->request_id, sizeof(op->request_id), "%s", PQgetvalue(res, i, 6));
  op->tries = (int)strtol(PQgetvalue(res, i, 7), NULL, 10);
  snprintf(op->team, sizeof(op->team), "%s", PQgetvalue(res, i, 8));
  snprintf(op->queue, sizeof(op->queue), "%s", PQgetvalue(res, i, 9));
  snprintf(op->flavor, sizeof(op->flavor), "%s", PQgetvalue(res, i, 10));
  snprintf(op->cost_center, sizeof(op->cost_center), "%s",
           PQgetvalue(res, i, 11));
  op->max_run_duration_s = strtoll(PQgetvalue(res, i, 12), NULL, 10);
  op->job_spec = json_loads(PQgetvalue(res, i, 13), 0, NULL);
  op->flavor_spec = json_loads(PQgetvalue(res, i, 14), 0, NULL);
  op->age_s = strtod(PQgetvalue(res, i, 18), NULL);
  snprintf(op->claimed_by, sizeof(op->claimed_by), "%s", claimer);
  if (!strcmp(op->op, "create") &&
      batch_job_id_parse(op->batch_job_id, id, sizeof(id), &attempt, &race_k) ==
          0 &&
      race_k > 0)
    return (strcmp(PQgetvalue(res, i, 15), "ADMITTED") != 0 &&
            strcmp(PQgetvalue(res, i, 15), "QUEUED") != 0) ||
           strtol(PQgetvalue(res, i, 16), NULL, 10) != op->attempt ||
           PQgetvalue(res, i, 17)[0] == 't';
  /* a job whose cancel is pending is never created: the cancel queued
   * behind this row ends whatever an earlier try of it made */
  return !strcmp(op->op, "create") &&
         (strcmp(PQgetvalue(res, i, 15), "ADMITTED") != 0 ||
          strtol(PQgetvalue(res, i, 16), NULL, 10) != op->attempt ||
          PQgetvalue(res, i, 17)[0] == 't');
}

/* Claim with one of the claim statements ($1 skip, a text array; $3
 * lease) into ops[*n..max), until a round takes a row that is not stale
 * or nothing is left. 0 or -1. */
static int claim_rounds(struct db_conn *c, const char *sql, const char *skip,
                        const char *claimer, const char *lease,
                        struct db_batch_op *ops, int max, int *n, char *err,
                        size_t errlen)
{
  char id[32], limit[16];
  const char *params[2] = {id, claimer},
             *claim_params[4] = {skip, claimer, lease, limit};
  PGresult *res;
  int rows, i, fresh;

  do {
    snprintf(limit, sizeof(limit), "%d", max - *n);
    if (!(res = db_query(c, sql, 4, claim_params, err, errlen)))
      return -1;
    rows = PQntuples(res);
    for (i = 0, fresh = 0; i < rows; i++) {
      if (!claimed_op(res, i, claimer, &ops[*n])) {
        (*n)++;
        fresh++;
        continue;
      }
      /* stale, and ours by the lease just taken */
      snprintf(id, sizeof(id), "%lld", (long long)ops[*n].id);
      db_batch_op_free(&ops[*n]);
      if (db_run(c, sql_drop_claimed, 2, params, NULL, err, errlen)) {
        PQclear(res);
        return -1;
      }
    }
    PQclear(res);
  } while (rows > 0 && fresh == 0 && *n < max);
  return 0;
}

int db_batch_claim_many(struct db_conn *c, const char *const *skip_regions,
                        size_t n_skip, const char *claimer, int lease_s,
                        bool *lapsed, struct db_batch_op *ops, int max,
                        char *err, size_t errlen)
{
  char lease[16], *skip = text_array(skip_regions, n_skip);
  int n = 0, n_lapsed = 0, i;

  if (!skip) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (max < 1)
    max = 1;
  snprintf(lease, sizeof(lease), "%d", lease_s);
  /* one statement each, so no transaction of their own: the leases are
   * taken when it returns, and no transaction stays open across a Batch
   * call; the lapsed leases first, the oldest rows */
  if ((lapsed && *lapsed &&
       claim_rounds(c, sql_claim_lapsed, skip, claimer, lease, ops, max, &n,
                    err, errlen)) ||
      ((n_lapsed = n) < max && claim_rounds(c, sql_claim, skip, claimer, lease,
                                            ops, max, &n, err, errlen))) {
    while (n > 0)
      db_batch_op_free(&ops[--n]);
    free(skip);
    return -1;
  }
  for (i = 0; i < n_lapsed; i++)
    ops[i].lapsed = true;
  if (lapsed)
    *lapsed = n_lapsed > 0;
  free(skip);
  return n;
}

int db_batch_claim(struct db_conn *c, const char *const *skip_regions,
                   size_t n_skip, const char *claimer, int lease_s,
                   struct db_batch_op *op, char *err, size_t errlen)
{
  bool lapsed = true;

  memset(op, 0, sizeof(*op));
  return db_batch_claim_many(c, skip_regions, n_skip, claimer, lease_s, &lapsed,
                             op, 1, err, errlen);
}

/*
 * Open the transaction that records a call's outcome and take the claimed
 * row out of the outbox first (lock order: the batch_ops row before the
 * jobs row). After a lease ran out and another dispatcher took the row
 * over, that dispatcher deletes it when it records its own call.
 */
static int take(struct db_conn *c, const struct db_batch_op *op, char *err,
                size_t errlen)
{
  char id[24];
  const char *params[2] = {id, op->claimed_by};

  if (db_begin(c) != GG_OK) {
    snprintf(err, errlen, "BEGIN failed");
    return -1;
  }
  snprintf(id, sizeof(id), "%lld", (long long)op->id);
  if (db_run(c, sql_drop_claimed, 2, params, NULL, err, errlen)) {
    db_rollback(c);
    return -1;
  }
  return 0;
}

static int commit(struct db_conn *c, char *err, size_t errlen)
{
  if (db_commit(c) != GG_OK) {
    snprintf(err, errlen, "COMMIT failed");
    db_rollback(c);
    return -1;
  }
  return 0;
}

/*
 * Recording a create is one round trip: the statements of a pipeline up to
 * its Sync run as one implicit transaction. The outbox row goes first
 * (lock order: the batch_ops row before the jobs row); then the job takes
 * its Batch job, with its event in the same statement.
 */
static const char sql_created[] =
    "WITH u AS (UPDATE jobs SET state = 'QUEUED', batch_job_name = $2, "
    "batch_state = 'QUEUED', queued_at = now(), updated_at = now() "
    "WHERE id = $1 AND attempt = $3::int AND state = 'ADMITTED' "
    "RETURNING id, team, attempt) " CREATED_EVENT;

/* Evicted while its create was at Batch (a lease, not a lock, guarded the
 * create): the job names its Batch job all the same, so that the cancel
 * queued behind the create, and what Batch then reports, complete the
 * eviction. A job that sql_created moved to QUEUED is not EVICTING. */
static const char sql_created_evicting[] =
    "UPDATE jobs SET batch_job_name = $2, batch_state = 'QUEUED', "
    "updated_at = now() WHERE id = $1 AND attempt = $3::int "
    "AND state = 'EVICTING' AND batch_job_name IS NULL";

/* A raced copy: the job waits for capacity (QUEUED) from its first copy
 * on, and names no Batch job until one wins. */
static const char sql_copy_created[] =
    "WITH u AS (UPDATE jobs SET state = 'QUEUED', batch_state = 'QUEUED', "
    "queued_at = coalesce(queued_at, now()), updated_at = now() "
    "WHERE id = $1 AND attempt = $3::int AND state = 'ADMITTED' "
    "AND batch_job_name IS NULL AND $2::text IS NOT NULL "
    "RETURNING id, team, attempt) " CREATED_EVENT;

int db_batch_done_create(struct db_conn *c, const struct db_batch_op *op,
                         const char *batch_job_name, char *err, size_t errlen)
{
  char a[16], id[32], oid[24], msg[600];
  const char *params[4] = {op->job_id, batch_job_name, a, msg},
             *drop[2] = {oid, op->claimed_by};
  int attempt, race_k = 0, i;
  struct db_stmt st[3];
  PGresult *res[3];

  snprintf(a, sizeof(a), "%d", op->attempt);
  snprintf(oid, sizeof(oid), "%lld", (long long)op->id);
  if (batch_job_id_parse(op->batch_job_id, id, sizeof(id), &attempt, &race_k) !=
      0)
    race_k = 0;
  snprintf(msg, sizeof(msg), "%s%s", batch_job_name,
           race_k > 0 ? " (the first of the raced copies, one per region; "
                        "the first to get capacity wins)"
                      : "");
  st[0] = (struct db_stmt){sql_drop_claimed, 2, drop};
  st[1] =
      (struct db_stmt){race_k > 0 ? sql_copy_created : sql_created, 4, params};
  st[2] = (struct db_stmt){sql_created_evicting, 3, params};
  if (db_pipeline(c, race_k > 0 ? 2 : 3, st, res) != GG_OK) {
    snprintf(err, errlen, "recording the create of %s failed", batch_job_name);
    return -1;
  }
  for (i = 0; i < (race_k > 0 ? 2 : 3); i++)
    PQclear(res[i]);
  return 0;
}

/* The job's fate follows from what Batch reports next: a cancel Batch
 * took stays in the outbox (db_batch_recheck_cancel), so the sync reports
 * a raced copy too (sql_orphans: a row of its attempt), until Batch
 * reports it ended or absent. */
int db_batch_done_cancel(struct db_conn *c, const struct db_batch_op *op,
                         bool gone, char *err, size_t errlen)
{
  (void)gone; /* a gone Batch job is reported NOT_FOUND by the caller */
  return take(c, op, err, errlen) || commit(c, err, errlen) ? -1 : 0;
}

/* A later attempt's rows stay behind it (as sql_retry's): a Flex Start
 * failover's create waits until the Batch job of the attempt it replaces
 * is reported ended or absent, which deletes this row (the invariant);
 * before, the bound moved the cancel behind that create. */
static const char sql_recheck_cancel[] =
    "WITH r AS (UPDATE batch_ops SET tries = tries + 1, "
    "last_error = 'accepted; sent again unless Batch reports the job ended', "
    "next_at = clock_timestamp() + least(60000, 5000 * power(2, "
    "least(tries, 4))::bigint) * interval '1 millisecond', "
    "claimed_by = NULL, claimed_pid = NULL, claimed_until = NULL "
    "WHERE id = $1::bigint AND claimed_by = $2 "
    "RETURNING job_id, attempt, next_at) "
    "UPDATE batch_ops b SET next_at = r.next_at FROM r "
    "WHERE b.job_id = r.job_id AND b.attempt > r.attempt "
    "AND b.id > $1::bigint AND b.next_at < r.next_at";

int db_batch_recheck_cancel(struct db_conn *c, const struct db_batch_op *op,
                            char *err, size_t errlen)
{
  char id[24];
  const char *params[2] = {id, op->claimed_by};

  snprintf(id, sizeof(id), "%lld", (long long)op->id);
  return db_run(c, sql_recheck_cancel, 2, params, NULL, err, errlen);
}

/* The delay counts from now, when the failure is known: not from the
 * claim, before the Batch call (a slow failure would otherwise eat its own
 * backoff or Retry-After). The lease ends with it. */
/* The job's later rows move with it: a job's rows go out in (next_at, id)
 * order, and a row put off must not let the ones queued behind it overtake
 * it (a cancel queued while its create was at Batch, sent before the
 * create is retried; the create of attempt N+1 before the retried cancel
 * of attempt N). */
static const char sql_retry[] =
    "WITH r AS (UPDATE batch_ops SET tries = tries + 1, last_error = $3, "
    "next_at = clock_timestamp() + $2::bigint * interval '1 millisecond', "
    "claimed_by = NULL, claimed_pid = NULL, claimed_until = NULL "
    "WHERE id = $1::bigint AND claimed_by = $4 RETURNING job_id, next_at) "
    "UPDATE batch_ops b SET next_at = r.next_at FROM r "
    "WHERE b.job_id = r.job_id AND b.id > $1::bigint AND b.next_at < r.next_at";

int db_batch_retry(struct db_conn *c, const struct db_batch_op *op,
                   long delay_ms, const char *error, char *err, size_t errlen)
{
  char id[24], delay[24];
  const char *params[4] = {id, delay, error, op->claimed_by};

  snprintf(id, sizeof(id), "%lld", (long long)op->id);
  snprintf(delay, sizeof(delay), "%ld", delay_ms);
  return db_run(c, sql_retry, 4, params, NULL, err, errlen);
}

/* Batch refused a create for good. A raced copy drops its region only:
 * the job fails when no copy of its attempt is left to try (the job row,
 * locked first, orders the refusals of one job's copies). With a cancel
 * pending, no Batch job exists and none will: the cancel is complete. */
static const char sql_lock_attempt[] =
    "SELECT 1 FROM jobs WHERE id = $1 AND attempt = $2::int FOR UPDATE";

/* The refusal may answer a retry of a create that reached Batch, its
 * answer lost: the dropped copy is cancelled all the same (404 when Batch
 * has none), since nothing would follow or cancel it later. */
static const char sql_drop_copy[] =
    "WITH d AS (DELETE FROM batch_copies WHERE job_id = $1 "
    "AND attempt = $2::int AND k = $3::int "
    "RETURNING job_id, attempt, region, batch_job_id) "
    "INSERT INTO batch_ops (job_id, attempt, op, region, batch_job_id) "
    "SELECT job_id, attempt, 'cancel', region, batch_job_id FROM d "
    "ON CONFLICT DO NOTHING";

static const char sql_rejected[] =
    "WITH u AS (UPDATE jobs SET state = CASE WHEN cancel_requested "
    "THEN 'CANCELLED' ELSE 'FAILED' END, reason = CASE WHEN cancel_requested "
    "THEN 'CancelledByUser' ELSE 'BatchRejected' END, "
    "finished_at = now(), updated_at = now() "
    "WHERE id = $1 AND attempt = $2::int AND state = 'ADMITTED' "
    "AND NOT EXISTS (SELECT 1 FROM batch_copies c WHERE c.job_id = $1 "
    "AND c.attempt = $2::int AND c.ended_at IS NULL) "
    "RETURNING id, team, attempt, state, reason) "
    "INSERT INTO job_events (job_id, team, from_state, to_state, reason, "
    "attempt, message) SELECT id, team, 'ADMITTED', state, reason, attempt, "
    "$3 FROM u";

/*
 * The refusal answers a create tried before (an earlier try failed in a
 * way that may have followed the effect: a 503 after Batch made the job,
 * a lost answer, a lease that ran out mid-call): it does not say that no
 * Batch job was made. The job keeps its state and its quota, and the
 * Batch job the earlier try may have made is cancelled by its
 * deterministic id; the job ends when Batch reports it ended or absent
 * (batch_report.c; the reason stays BatchRejected, write_decision). A
 * raced copy keeps its row, so that the job waits for its end too
 * (race_observe).
 */
static const char sql_rejected_maybe_made[] =
    "UPDATE jobs SET reason = 'BatchRejected', updated_at = now() "
    "WHERE id = $1 AND attempt = $2::int AND state = 'ADMITTED' "
    "AND NOT cancel_requested";

static const char sql_cancel_copy[] =
    "INSERT INTO batch_ops (job_id, attempt, op, region, batch_job_id) "
    "SELECT job_id, attempt, 'cancel', region, batch_job_id FROM "
    "batch_copies WHERE job_id = $1 AND attempt = $2::int AND k = $3::int "
    "ON CONFLICT DO NOTHING";

static int give_up_create(struct db_conn *c, const struct db_batch_op *op,
                          const char *error, char *err, size_t errlen)
{
  char a[16], k[16], id[32];
  const char *params[3] = {op->job_id, a, k};
  int rows = 0, attempt, race_k = 0;
  bool maybe_made = op->tries > 0 || op->lapsed;

  snprintf(a, sizeof(a), "%d", op->attempt);
  if (batch_job_id_parse(op->batch_job_id, id, sizeof(id), &attempt, &race_k) !=
      0)
    race_k = 0;
  snprintf(k, sizeof(k), "%d", race_k);
  if (db_run(c, sql_lock_attempt, 2, params, NULL, err, errlen))
    return -1;
  if (maybe_made) {
    if (race_k > 0
            ? db_run(c, sql_cancel_copy, 3, params, NULL, err, errlen)
            : db_run(c, sql_rejected_maybe_made, 2, params, NULL, err,
                     errlen) ||
                  db_run(c, sql_request_cancel, 1, params, NULL, err, errlen))
      return -1;
    return db_batch_wake_dispatch(c, err, errlen);
  }
  if (race_k > 0 && db_run(c, sql_drop_copy, 3, params, NULL, err, errlen))
    return -1;
  params[2] = error;
  if (db_run(c, sql_rejected, 3, params, &rows, err, errlen))
    return -1;
  return rows ? db_batch_wake(c, err, errlen) : 0;
}

int db_batch_give_up(struct db_conn *c, const struct db_batch_op *op,
                     const char *error, char *err, size_t errlen)
{
  if (take(c, op, err, errlen))
    return -1;
  if (!strcmp(op->op, "create") && give_up_create(c, op, error, err, errlen)) {
    db_rollback(c);
    return -1;
  }
  return commit(c, err, errlen);
}
