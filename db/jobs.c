/*
 * jobs.c — the SQL behind reading and cancelling jobs, job events, queue
 * positions and the console's views, and how a job row is rendered.
 * Every statement names the team ($1) in its WHERE clause. Submission and
 * idempotency keys are in jobs_submit.c; the columns both show a job
 * with are in jobs_internal.h.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/batch.h"
#include "db/db.h"
#include "db/jobs.h"
#include "db/jobs_internal.h"
#include "db/prices.h"
#include "lib/jsonw.h"

#define ACTIVE "('PENDING', 'ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING')"

/* p is ahead of j in admission order: priority desc, created_at, seq */
#define AHEAD(p, j)                                                            \
  "(" p ".priority > " j ".priority OR (" p ".priority = " j ".priority "      \
  "AND (" p ".created_at, " p ".seq) < (" j ".created_at, " j ".seq)))"

/* A pending job's queue position as the admission leader last published
 * it (0007's job_positions): one row by key, never a count of the jobs
 * ahead. NULL when the job is not pending or no cycle has placed it yet. */
#define POSITION(col) "CASE WHEN j.state = 'PENDING' THEN jp." col " END"

/* clang-format off */
#define JOB_SELECT                                                             \
  "SELECT " JOB_COLUMNS(POSITION("position_in_queue"),                         \
                        POSITION("position_in_cluster_queue"),                 \
                        POSITION("ahead_gpus"))                                \
  "FROM jobs j LEFT JOIN flavors f ON f.name = j.flavor "                      \
  "LEFT JOIN job_positions jp ON jp.job_id = j.id "
/* clang-format on */

/* the columns of sql_get (one job) after the job's */
enum { C_FS_SCORE = C_AHEAD_GPUS + 1, C_FS_RANK };

static json_t *text_or_null(const PGresult *r, int row, int col)
{
  return PQgetisnull(r, row, col) ? json_null()
                                  : json_string(PQgetvalue(r, row, col));
}

static json_t *int_or_null(const PGresult *r, int row, int col)
{
  return PQgetisnull(r, row, col)
             ? json_null()
             : json_integer(strtoll(PQgetvalue(r, row, col), NULL, 10));
}

static json_t *num_or_null(const PGresult *r, int row, int col)
{
  return PQgetisnull(r, row, col)
             ? json_null()
             : json_real(strtod(PQgetvalue(r, row, col), NULL));
}

/* One job row as the API shows it (lists, cancel). Returns a new
 * reference. */
static json_t *render(const PGresult *r, int row)
{
  json_t *j = json_object(), *admission = json_null();

  json_object_set_new(j, "id", text_or_null(r, row, C_ID));
  json_object_set_new(j, "team", text_or_null(r, row, C_TEAM));
  json_object_set_new(j, "name", text_or_null(r, row, C_NAME));
  json_object_set_new(j, "queue", text_or_null(r, row, C_QUEUE));
  json_object_set_new(j, "cluster_queue", text_or_null(r, row, C_CQ));
  json_object_set_new(j, "priority_class", text_or_null(r, row, C_PC));
  json_object_set_new(j, "priority", int_or_null(r, row, C_PRIO));
  json_object_set_new(j, "state", text_or_null(r, row, C_STATE));
  json_object_set_new(j, "reason", text_or_null(r, row, C_REASON));
  json_object_set_new(j, "attempt", int_or_null(r, row, C_ATTEMPT));
  json_object_set_new(j, "created_at", text_or_null(r, row, C_CREATED));
  json_object_set_new(j, "updated_at", text_or_null(r, row, C_UPDATED));
  json_object_set_new(j, "request",
                      json_pack("{s:o, s:o, s:o}", "gpu",
                                int_or_null(r, row, C_GPU), "cpu_milli",
                                int_or_null(r, row, C_CPU), "memory_mib",
                                int_or_null(r, row, C_MEM)));
  if (!PQgetisnull(r, row, C_FLAVOR) && !PQgetisnull(r, row, C_ADMITTED))
    admission = json_pack("{s:o, s:o, s:b, s:o}", "flavor",
                          text_or_null(r, row, C_FLAVOR), "location",
                          text_or_null(r, row, C_LOC), "borrowed",
                          PQgetvalue(r, row, C_BORROWED)[0] == 't',
                          "admitted_at", text_or_null(r, row, C_ADMITTED));
  json_object_set_new(j, "admission", admission);
  json_object_set_new(
      j, "batch_job",
      PQgetisnull(r, row, C_BATCH_NAME)
          ? json_null()
          : json_pack("{s:o, s:o}", "name", text_or_null(r, row, C_BATCH_NAME),
                      "state", text_or_null(r, row, C_BATCH_STATE)));
  json_object_set_new(j, "position_in_queue", int_or_null(r, row, C_POS_Q));
  json_object_set_new(j, "position_in_cluster_queue",
                      int_or_null(r, row, C_POS_CQ));
  /* the pending jobs before it in its cluster queue, as aggregates only:
   * other teams' jobs are counted, never named */
  json_object_set_new(
      j, "ahead",
      PQgetisnull(r, row, C_POS_CQ) || PQgetisnull(r, row, C_AHEAD_GPUS)
          ? json_null()
          : json_pack(
                "{s:I, s:I}", "jobs",
                (json_int_t)strtoll(PQgetvalue(r, row, C_POS_CQ), NULL, 10) - 1,
                "gpus",
                (json_int_t)strtoll(PQgetvalue(r, row, C_AHEAD_GPUS), NULL,
                                    10)));
  json_object_set_new(j, "estimated_cost_usd", num_or_null(r, row, C_EST));
  json_object_set_new(j, "accrued_cost_usd", num_or_null(r, row, C_ACCRUED));
  json_object_set_new(j, "spec",
                      json_loads(PQgetvalue(r, row, C_SPEC), 0, NULL));
  return j;
}

/* ---- one job as text ------------------------------------------------------
 */

/* Writers of the columns as render()'s Jansson values are
 * written: text as a string, integers, reals with 15 digits; null when
 * NULL. */
static void w_text(struct jsonw *w, const PGresult *r, int row, int col)
{
  jsonw_string(w, PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col));
}

static void w_int(struct jsonw *w, const PGresult *r, int row, int col)
{
  if (PQgetisnull(r, row, col))
    jsonw_lit(w, "null");
  else
    jsonw_int(w, strtoll(PQgetvalue(r, row, col), NULL, 10));
}

/* member "key": a real column; left out, as Jansson leaves out a member
 * whose json_real() failed, when the column is no finite number */
static void w_num_member(struct jsonw *w, const char *member, const PGresult *r,
                         int row, int col)
{
  double v;

  if (PQgetisnull(r, row, col)) {
    jsonw_raw(w, member, strlen(member));
    jsonw_lit(w, "null");
    return;
  }
  v = strtod(PQgetvalue(r, row, col), NULL);
  if (!isfinite(v))
    return;
  jsonw_raw(w, member, strlen(member));
  jsonw_real(w, v);
}

/*
 * One job row as render() shows it, written as text
 * (GG_JSON_DUMP) of *len bytes straight from the row's columns: building
 * the Jansson tree and writing it was a quarter of gpugate's CPU per GET.
 * The members come in render()'s order, byte for byte as
 * json_dumps() wrote them (the suites compare a job's GET with its list
 * item). The stored spec is spliced in as it is: gpugate wrote it with
 * GG_JSON_DUMP, so parsing it and writing it again gave back the same
 * bytes. When the row is sql_get's, its team queue's fair-share standing,
 * when shown, goes in before the spec as "fair_share". Returns a new
 * buffer, or NULL when out of memory.
 */
char *db_job_render_text_spec(const PGresult *r, int row, const char *spec,
                              size_t *len)
{
  struct jsonw w = JSONW_INIT;

  jsonw_lit(&w, "{\"id\":");
  w_text(&w, r, row, C_ID);
  jsonw_lit(&w, ",\"team\":");
  w_text(&w, r, row, C_TEAM);
  jsonw_lit(&w, ",\"name\":");
  w_text(&w, r, row, C_NAME);
  jsonw_lit(&w, ",\"queue\":");
  w_text(&w, r, row, C_QUEUE);
  jsonw_lit(&w, ",\"cluster_queue\":");
  w_text(&w, r, row, C_CQ);
  jsonw_lit(&w, ",\"priority_class\":");
  w_text(&w, r, row, C_PC);
  jsonw_lit(&w, ",\"priority\":");
  w_int(&w, r, row, C_PRIO);
  jsonw_lit(&w, ",\"state\":");
  w_text(&w, r, row, C_STATE);
  jsonw_lit(&w, ",\"reason\":");
  w_text(&w, r, row, C_REASON);
  jsonw_lit(&w, ",\"attempt\":");
  w_int(&w, r, row, C_ATTEMPT);
  jsonw_lit(&w, ",\"created_at\":");
  w_text(&w, r, row, C_CREATED);
  jsonw_lit(&w, ",\"updated_at\":");
  w_text(&w, r, row, C_UPDATED);
  jsonw_lit(&w, ",\"request\":{\"gpu\":");
  w_int(&w, r, row, C_GPU);
  jsonw_lit(&w, ",\"cpu_milli\":");
  w_int(&w, r, row, C_CPU);
  jsonw_lit(&w, ",\"memory_mib\":");
  w_int(&w, r, row, C_MEM);
  jsonw_lit(&w, "},\"admission\":");
  if (!PQgetisnull(r, row, C_FLAVOR) && !PQgetisnull(r, row, C_ADMITTED)) {
    jsonw_lit(&w, "{\"flavor\":");
    w_text(&w, r, row, C_FLAVOR);
    jsonw_lit(&w, ",\"location\":");
    w_text(&w, r, row, C_LOC);
    if (PQgetvalue(r, row, C_BORROWED)[0] == 't')
      jsonw_lit(&w, ",\"borrowed\":true,\"admitted_at\":");
    else
      jsonw_lit(&w, ",\"borrowed\":false,\"admitted_at\":");
    w_text(&w, r, row, C_ADMITTED);
    jsonw_lit(&w, "}");
  } else {
    jsonw_lit(&w, "null");
  }
  jsonw_lit(&w, ",\"batch_job\":");
  if (PQgetisnull(r, row, C_BATCH_NAME)) {
    jsonw_lit(&w, "null");
  } else {
    jsonw_lit(&w, "{\"name\":");
    w_text(&w, r, row, C_BATCH_NAME);
    jsonw_lit(&w, ",\"state\":");
    w_text(&w, r, row, C_BATCH_STATE);
    jsonw_lit(&w, "}");
  }
  jsonw_lit(&w, ",\"position_in_queue\":");
  w_int(&w, r, row, C_POS_Q);
  jsonw_lit(&w, ",\"position_in_cluster_queue\":");
  w_int(&w, r, row, C_POS_CQ);
  jsonw_lit(&w, ",\"ahead\":");
  if (PQgetisnull(r, row, C_POS_CQ) || PQgetisnull(r, row, C_AHEAD_GPUS)) {
    jsonw_lit(&w, "null");
  } else {
    jsonw_lit(&w, "{\"jobs\":");
    jsonw_int(&w, strtoll(PQgetvalue(r, row, C_POS_CQ), NULL, 10) - 1);
    jsonw_lit(&w, ",\"gpus\":");
    w_int(&w, r, row, C_AHEAD_GPUS);
    jsonw_lit(&w, "}");
  }
  w_num_member(&w, ",\"estimated_cost_usd\":", r, row, C_EST);
  w_num_member(&w, ",\"accrued_cost_usd\":", r, row, C_ACCRUED);
  /* sql_get's columns; PQgetisnull() is 1 past a row's last column */
  if (!PQgetisnull(r, row, C_FS_SCORE) && !PQgetisnull(r, row, C_FS_RANK)) {
    double score = strtod(PQgetvalue(r, row, C_FS_SCORE), NULL);
    if (isfinite(score)) {
      jsonw_lit(&w, ",\"fair_share\":{\"score\":");
      jsonw_real(&w, score);
      jsonw_lit(&w, ",\"rank\":");
      w_int(&w, r, row, C_FS_RANK);
      jsonw_lit(&w, "}");
    }
  }
  jsonw_lit(&w, ",\"spec\":");
  jsonw_raw(&w, spec, strlen(spec));
  jsonw_lit(&w, "}");
  return jsonw_finish(&w, len);
}

static char *render_text(const PGresult *r, int row, size_t *len)
{
  return db_job_render_text_spec(
      r, row, PQgetisnull(r, row, C_SPEC) ? "null" : PQgetvalue(r, row, C_SPEC),
      len);
}

/* ---- reads --------------------------------------------------------------- */

/* The columns C_FS_SCORE and C_FS_RANK of a one-job read: its team
 * queue's fair-share standing as the admission leader last wrote it (0024)
 * while it waits for quota in a cluster queue that orders by usage behind
 * another team queue: the score decayed to now, and the rank (NULL
 * otherwise). */
#define FS_COLUMNS                                                             \
  "fr.score * power(2::float8, -greatest(extract(epoch FROM now() - "          \
  "fr.as_of), 0)::float8 / fr.half_life_s), fr.rank "
#define FS_JOIN                                                                \
  "LEFT JOIN fair_share_ranks fr ON fr.team = j.team AND fr.queue = j.queue "  \
  "AND j.state = 'PENDING' AND fr.rank > 1 "                                   \
  "AND j.reason IN ('InsufficientQuota', 'WaitingForHead') "

/* clang-format off */
static const char sql_get[] =
    "SELECT " JOB_COLUMNS(POSITION("position_in_queue"),
                          POSITION("position_in_cluster_queue"),
                          POSITION("ahead_gpus")) ", " FS_COLUMNS
    "FROM jobs j LEFT JOIN flavors f ON f.name = j.flavor "
    "LEFT JOIN job_positions jp ON jp.job_id = j.id " FS_JOIN
    "WHERE j.team = $1 AND j.id = $2";
/* clang-format on */

/* One job (GET): sql_get without the join to flavors; the price comes
 * with the process's copy of every flavor's (db/prices.h), $3 the names
 * and $4 the prices */
/* clang-format off */
static const char sql_get_priced[] =
  "SELECT " JOB_COLUMNS_PRICED(POSITION("position_in_queue"),
                               POSITION("position_in_cluster_queue"),
                               POSITION("ahead_gpus"), "j.spec",
                               "($4::text[])[array_position($3::text[], "
                               "j.flavor)]::numeric") ", " FS_COLUMNS
  "FROM jobs j LEFT JOIN job_positions jp ON jp.job_id = j.id " FS_JOIN
  "WHERE j.team = $1 AND j.id = $2";
/* clang-format on */

enum gg_code db_job_get(struct db_conn *db, struct gg_err *err,
                        const char *team, const char *id, char **text,
                        size_t *len)
{
  struct db_prices prices;
  const char *params[4] = {team, id};
  PGresult *res;

  *text = NULL;
  *len = 0;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  if (db_prices_get(db, err, &prices) != 0)
    return err->code;
  params[2] = prices.names;
  params[3] = prices.prices;
  res = db_err_exec(db, err, sql_get_priced, 4, params);
  db_prices_free(&prices);
  if (!res)
    return err->code;
  if (PQntuples(res) == 0) {
    PQclear(res);
    return err_fail(err, GG_NOT_FOUND, "Job \"%s\" was not found.", id);
  }
  *text = render_text(res, 0, len);
  PQclear(res);
  return *text ? GG_OK : err_fail(err, GG_INTERNAL, "Out of memory.");
}

static const char sql_list[] = JOB_SELECT
    "WHERE j.team = $1 "
    "AND ($2::text IS NULL OR j.state = ANY (string_to_array($2, ','))) "
    "AND ($3::text IS NULL OR j.queue = $3) "
    "AND ($4::text IS NULL OR j.labels @> jsonb_build_object($4, $5)) "
    "AND ($6::bigint = 0 OR j.seq < $6::bigint) "
    "ORDER BY j.seq DESC LIMIT $7::int";

enum gg_code db_job_list(struct db_conn *db, struct gg_err *err,
                         const char *team, const struct db_job_filter *f,
                         json_t **items, int64_t *next_seq)
{
  char after[24], lim[16];
  const char *params[7];
  PGresult *res;
  int i, rows;

  *items = NULL;
  *next_seq = 0;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  snprintf(after, sizeof(after), "%lld", (long long)f->after_seq);
  snprintf(lim, sizeof(lim), "%d", f->limit + 1);
  params[0] = team;
  params[1] = f->states;
  params[2] = f->queue;
  params[3] = f->label_key;
  params[4] = f->label_value ? f->label_value : "";
  params[5] = after;
  params[6] = lim;
  if (!(res = db_err_exec(db, err, sql_list, 7, params)))
    return err->code;
  rows = PQntuples(res);
  *items = json_array();
  for (i = 0; i < rows && i < f->limit; i++)
    json_array_append_new(*items, render(res, i));
  if (rows > f->limit)
    *next_seq = strtoll(PQgetvalue(res, f->limit - 1, C_SEQ), NULL, 10);
  PQclear(res);
  return GG_OK;
}

static const char sql_exists[] =
    "SELECT 1 FROM jobs WHERE team = $1 AND id = $2";

static const char sql_events[] = "SELECT id, " TS(
    "at") ", from_state, to_state, reason, attempt, "
          "message, actor FROM job_events WHERE team = $1 AND job_id = $2 "
          "AND id > $3::bigint ORDER BY id LIMIT $4::int";

enum gg_code db_job_events(struct db_conn *db, struct gg_err *err,
                           const char *team, const char *id, int64_t after,
                           int limit, json_t **items, int64_t *next)
{
  char after_s[24], lim[16];
  const char *params[4] = {team, id, after_s, lim};
  PGresult *res;
  int i, rows;

  *items = NULL;
  *next = 0;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  if (!(res = db_err_exec(db, err, sql_exists, 2, params)))
    return err->code;
  rows = PQntuples(res);
  PQclear(res);
  if (!rows)
    return err_fail(err, GG_NOT_FOUND, "Job \"%s\" was not found.", id);
  snprintf(after_s, sizeof(after_s), "%lld", (long long)after);
  snprintf(lim, sizeof(lim), "%d", limit + 1);
  if (!(res = db_err_exec(db, err, sql_events, 4, params)))
    return err->code;
  rows = PQntuples(res);
  *items = json_array();
  for (i = 0; i < rows && i < limit; i++)
    json_array_append_new(
        *items,
        json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "at",
                  text_or_null(res, i, 1), "from", text_or_null(res, i, 2),
                  "to", text_or_null(res, i, 3), "reason",
                  text_or_null(res, i, 4), "attempt", int_or_null(res, i, 5),
                  "message", text_or_null(res, i, 6), "actor",
                  text_or_null(res, i, 7)));
  if (rows > limit)
    *next = strtoll(PQgetvalue(res, limit - 1, 0), NULL, 10);
  PQclear(res);
  return GG_OK;
}

/* a page of a queue's pending jobs in admission order, after the job
 * whose seq is $3 (0: from the head); in the order of
 * jobs_team_state_queue (0026) */
/* clang-format off */
static const char sql_pending[] = JOB_SELECT
    "WHERE j.team = $1 AND j.queue = $2 AND j.state = 'PENDING' "
    "AND ($3::bigint = 0 OR (SELECT " AHEAD("c", "j") " FROM jobs c "
    "WHERE c.team = $1 AND c.seq = $3::bigint)) "
    "ORDER BY j.priority DESC, j.created_at, j.seq LIMIT $4::int";
/* clang-format on */

enum gg_code db_queue_pending(struct db_conn *db, struct gg_err *err,
                              const char *team, const char *queue,
                              int64_t after, int limit, json_t **items,
                              int64_t *next)
{
  char after_s[24], lim[16];
  const char *params[4] = {team, queue, after_s, lim};
  PGresult *res;
  int i, rows;

  *items = NULL;
  *next = 0;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  snprintf(after_s, sizeof(after_s), "%lld", (long long)after);
  snprintf(lim, sizeof(lim), "%d", limit + 1);
  if (!(res = db_err_exec(db, err, sql_pending, 4, params)))
    return err->code;
  rows = PQntuples(res);
  *items = json_array();
  for (i = 0; i < rows && i < limit; i++)
    json_array_append_new(*items, render(res, i));
  if (rows > limit)
    *next = strtoll(PQgetvalue(res, limit - 1, C_SEQ), NULL, 10);
  PQclear(res);
  return GG_OK;
}

/* ---- cancel ---------------------------------------------------------- */

static const char sql_notify[] = "SELECT pg_notify('gpugate_admission', $1)";

static const char sql_attempt[] =
    "SELECT attempt, state FROM jobs WHERE team = $1 AND id = $2";

/* $3: the job's run is over at Batch (its Batch job, a race's winner,
 * reported SUCCEEDED) while the job has not ended: a raced job whose
 * losers may still run is held RUNNING until they are reported ended
 * (batch_report.c, copies_live), and it then ends SUCCEEDED. Read under
 * the row lock, which the report that records that state takes too. */
static const char sql_lock_job[] =
    "SELECT state, attempt, batch_job_name IS NOT NULL "
    "AND batch_state IS NOT DISTINCT FROM 'SUCCEEDED' "
    "FROM jobs WHERE team = $1 AND id = $2 FOR UPDATE";

static const char sql_cancel[] =
    "UPDATE jobs SET state = 'CANCELLED', reason = 'CancelledByUser', "
    "cancel_requested = true, finished_at = now(), updated_at = now() "
    "WHERE team = $1 AND id = $2";

/* A Batch job exists: ask Batch to cancel it; the job is CANCELLED when
 * Batch confirms, and holds its quota until then. */
static const char sql_cancel_requested[] =
    "UPDATE jobs SET cancel_requested = true, reason = 'CancelRequested', "
    "updated_at = now() WHERE team = $1 AND id = $2";

static const char sql_event_cancel[] =
    "INSERT INTO job_events (job_id, team, from_state, to_state, reason, "
    "attempt, message, actor) SELECT id, team, $3, 'CANCELLED', "
    "'CancelledByUser', attempt, 'cancelled through the API', $4 FROM jobs "
    "WHERE team = $1 AND id = $2";

static bool finished(const char *state)
{
  return !strcmp(state, "SUCCEEDED") || !strcmp(state, "FAILED") ||
         !strcmp(state, "CANCELLED");
}

/* Times db_job_cancel reads the job again when it moved between the
 * unlocked read and the lock (an admission, a failover, a requeue). */
#define CANCEL_ROUNDS 8

enum gg_code db_job_cancel(struct db_conn *db, struct gg_err *err, bool batch,
                           const char *actor, const char *team, const char *id,
                           json_t **out)
{
  const char *params[4] = {team, id, NULL, actor};
  char state[16], seen[16] = "", why[256];
  PGresult *res = NULL;
  enum gg_code code;
  int withdrawn = 1, round = 0, attempt = 0;
  bool run_succeeded;

  *out = NULL;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
again:
  withdrawn = 1;
  if ((code = db_begin(db)) != GG_OK)
    return db_fail(err, code);
  if (batch) {
    /* the outbox row before the job row: the dispatcher's lock order */
    if (!(res = db_err_exec(db, err, sql_attempt, 2, params)))
      goto fail;
    if (PQntuples(res) == 1) {
      attempt = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10);
      snprintf(seen, sizeof(seen), "%s", PQgetvalue(res, 0, 1));
      withdrawn = db_batch_withdraw_create(db, id, attempt, why, sizeof(why));
      if (withdrawn < 0) {
        db_fail(err, GG_UNAVAILABLE);
        goto fail;
      }
    }
    PQclear(res);
    res = NULL;
  }
  if (!(res = db_err_exec(db, err, sql_lock_job, 2, params)))
    goto fail;
  if (PQntuples(res) == 0) {
    err_fail(err, GG_NOT_FOUND, "Job \"%s\" was not found.", id);
    goto fail;
  }
  snprintf(state, sizeof(state), "%s", PQgetvalue(res, 0, 0));
  /* The attempt was read, and its creates withdrawn, before the lock: an
   * admission, a failover or a requeue that committed in between wrote a
   * create this transaction did not withdraw, and it would go out after
   * the cancel was accepted. The job is read again, now that a move waits
   * for this lock. */
  if (batch && seen[0] &&
      (strcmp(seen, state) != 0 ||
       strtol(PQgetvalue(res, 0, 1), NULL, 10) != attempt) &&
      ++round < CANCEL_ROUNDS) {
    PQclear(res);
    res = NULL;
    db_rollback(db);
    goto again;
  }
  run_succeeded = PQgetvalue(res, 0, 2)[0] == 't';
  PQclear(res);
  res = NULL;
  params[2] = state;
  if (!finished(state) && run_succeeded) {
    /* an accepted cancel ends the job CANCELLED; this one could not: the
     * run finished before it, and the job ends SUCCEEDED */
    err_fail(err, GG_CONFLICT,
             "Job \"%s\" cannot be cancelled: its run already succeeded "
             "(Batch reports SUCCEEDED) and the job, still %s until its "
             "other raced Batch jobs have stopped, is finishing; it ends "
             "SUCCEEDED.",
             id, state);
    goto fail;
  }
  if (finished(state)) {
    /* idempotent: nothing to do */
  } else if (batch && !withdrawn && strcmp(state, "PENDING") != 0) {
    if (!(res = db_err_exec(db, err, sql_cancel_requested, 2, params)))
      goto fail;
    PQclear(res);
    res = NULL;
    if (db_batch_request_cancel(db, id, why, sizeof(why))) {
      db_fail(err, GG_UNAVAILABLE);
      goto fail;
    }
  } else {
    if (!(res = db_err_exec(db, err, sql_cancel, 2, params)))
      goto fail;
    PQclear(res);
    if (!(res = db_err_exec(db, err, sql_event_cancel, 4, params)))
      goto fail;
    PQclear(res);
    params[0] = "cancel";
    if (!(res = db_err_exec(db, err, sql_notify, 1, params)))
      goto fail;
    PQclear(res);
    res = NULL;
    params[0] = team;
  }
  if (!(res = db_err_exec(db, err, sql_get, 2, params)))
    goto fail;
  *out = render(res, 0);
  PQclear(res);
  res = NULL;
  if ((code = db_commit(db)) != GG_OK) {
    db_fail(err, code);
    goto fail;
  }
  return GG_OK;
fail:
  PQclear(res);
  db_rollback(db);
  json_decref(*out);
  *out = NULL;
  return err->code ? err->code : GG_INTERNAL;
}

static const char sql_wake[] =
    "SELECT pg_notify('gpugate_admission', 'submit')";

int db_wake_admission(PGconn *pg, char *err, size_t errlen)
{
  PGresult *res = PQexec(pg, sql_wake);
  int rc = PQresultStatus(res) == PGRES_TUPLES_OK ? 0 : -1;

  if (rc)
    snprintf(err, errlen, "%s", PQerrorMessage(pg));
  PQclear(res);
  return rc;
}

/* ---- console views: search, cross-team list, summary ------------------- */

#define FIND_FILTERS                                                           \
  "AND ($2::text IS NULL OR j.state = ANY (string_to_array($2, ','))) "        \
  "AND ($3::text IS NULL OR j.queue = $3) "                                    \
  "AND ($4::text IS NULL OR j.labels @> jsonb_build_object($4, $5)) "          \
  "AND ($6::bigint = 0 OR j.seq < $6::bigint) "                                \
  "AND ($8::text IS NULL OR strpos(j.name, $8) > 0) "                          \
  "ORDER BY j.seq DESC LIMIT $7::int"

static const char sql_find_team[] =
    JOB_SELECT "WHERE j.team = $1 " FIND_FILTERS;

static const char sql_find_all[] =
    JOB_SELECT "WHERE ($1::text IS NULL OR j.team = $1) " FIND_FILTERS;

enum gg_code db_job_find(struct db_conn *db, struct gg_err *err,
                         const char *team, const char *team_filter,
                         const struct db_job_filter *f, const char *name_part,
                         json_t **items, int64_t *next_seq)
{
  char after[24], lim[16];
  const char *params[8];
  PGresult *res;
  int i, rows;

  *items = NULL;
  *next_seq = 0;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  snprintf(after, sizeof(after), "%lld", (long long)f->after_seq);
  snprintf(lim, sizeof(lim), "%d", f->limit + 1);
  params[0] = team ? team : team_filter;
  params[1] = f->states;
  params[2] = f->queue;
  params[3] = f->label_key;
  params[4] = f->label_value ? f->label_value : "";
  params[5] = after;
  params[6] = lim;
  params[7] = name_part;
  res = db_err_exec(db, err, team ? sql_find_team : sql_find_all, 8, params);
  if (!res)
    return err->code;
  rows = PQntuples(res);
  *items = json_array();
  for (i = 0; i < rows && i < f->limit; i++)
    json_array_append_new(*items, render(res, i));
  if (rows > f->limit)
    *next_seq = strtoll(PQgetvalue(res, f->limit - 1, C_SEQ), NULL, 10);
  PQclear(res);
  return GG_OK;
}

/* index-only on jobs_team_state_queue (0013, 0026) */
static const char sql_summary[] =
    "SELECT queue, state, count(*), coalesce(sum(gpu), 0) FROM jobs "
    "WHERE team = $1 GROUP BY queue, state ORDER BY queue, state";

enum gg_code db_job_summary(struct db_conn *db, struct gg_err *err,
                            const char *team, json_t **out)
{
  static const char *const all[] = {"PENDING", "ADMITTED", "QUEUED",
                                    "RUNNING", "EVICTING", "SUCCEEDED",
                                    "FAILED",  "CANCELLED"};
  const char *params[1] = {team};
  json_t *counts, *totals;
  PGresult *res;
  size_t i;
  int row;

  *out = NULL;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  if (!(res = db_err_exec(db, err, sql_summary, 1, params)))
    return err->code;
  counts = json_array();
  totals = json_object();
  for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    json_object_set_new(totals, all[i],
                        json_pack("{s:i, s:i}", "jobs", 0, "gpus", 0));
  for (row = 0; row < PQntuples(res); row++) {
    json_int_t n = strtoll(PQgetvalue(res, row, 2), NULL, 10);
    json_int_t g = strtoll(PQgetvalue(res, row, 3), NULL, 10);
    json_t *t = json_object_get(totals, PQgetvalue(res, row, 1)); /* borrowed */
    json_array_append_new(counts, json_pack("{s:s, s:s, s:I, s:I}", "queue",
                                            PQgetvalue(res, row, 0), "state",
                                            PQgetvalue(res, row, 1), "jobs", n,
                                            "gpus", g));
    if (t) {
      json_object_set_new(
          t, "jobs",
          json_integer(json_integer_value(json_object_get(t, "jobs")) + n));
      json_object_set_new(
          t, "gpus",
          json_integer(json_integer_value(json_object_get(t, "gpus")) + g));
    }
  }
  PQclear(res);
  *out = json_pack("{s:s, s:o, s:o}", "team", team, "counts", counts, "totals",
                   totals);
  return *out ? GG_OK : db_fail(err, GG_INTERNAL);
}
