/*
 * jobs.c — the SQL behind jobs, job events, queue positions and
 * idempotency keys. Every statement names the team ($1) in its WHERE
 * clause; ids are 70 random bits, so they cannot be guessed either.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "db/batch.h"
#include "db/db.h"
#include "db/jobs.h"
#include "db/prices.h"
#include "db/targets.h"
#include "server/problem.h"

#define TS(col)                                                                \
  "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

#define ACTIVE "('PENDING', 'ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING')"

/* p is ahead of j in admission order: priority desc, created_at, seq */
#define AHEAD(p, j)                                                            \
  "(" p ".priority > " j ".priority OR (" p ".priority = " j ".priority "      \
  "AND (" p ".created_at, " p ".seq) < (" j ".created_at, " j ".seq)))"

/* A pending job's queue position as the admission leader last published
 * it (0007's job_positions): one row by key, never a count of the jobs
 * ahead. NULL when the job is not pending or no cycle has placed it yet. */
#define POSITION(col) "CASE WHEN j.state = 'PENDING' THEN jp." col " END"

/* The columns a job is shown with, given the expressions of its two queue
 * positions and of the GPUs ahead of it; render() reads them by position. */
/* clang-format off */
#define JOB_COLUMNS(pos_queue, pos_cq, ahead_gpus)                             \
  JOB_COLUMNS_SPEC(pos_queue, pos_cq, ahead_gpus, "j.spec")
#define JOB_COLUMNS_SPEC(pos_queue, pos_cq, ahead_gpus, spec)                  \
  JOB_COLUMNS_PRICED(pos_queue, pos_cq, ahead_gpus, spec,                      \
                     "(f.spec->>'price_per_gpu_hour_usd')::numeric")
/* price: the GPU-hour price of the job's flavor, NULL when none */
#define JOB_COLUMNS_PRICED(pos_queue, pos_cq, ahead_gpus, spec, price)         \
  "j.id, j.team, j.name, j.queue, j.cluster_queue, "                           \
  "j.priority_class, j.priority, j.state, j.reason, j.attempt, "               \
  TS("j.created_at") ", " TS("j.updated_at") ", "                              \
  "j.gpu, j.cpu_milli, j.memory_mib, j.flavor, j.location, j.borrowed, "       \
  TS("j.admitted_at") ", round(j.estimated_cost_usd, 4), "                     \
  "round(coalesce(" price " * j.gpu * "                                        \
  "extract(epoch FROM coalesce(j.finished_at, now()) - j.run_started_at) "     \
  "/ 3600, 0), 4), "                                                           \
  pos_queue ", " pos_cq ", "                                                   \
  spec ", j.seq, j.batch_job_name, j.batch_state, " ahead_gpus " "
#define JOB_SELECT                                                             \
  "SELECT " JOB_COLUMNS(POSITION("position_in_queue"),                         \
                        POSITION("position_in_cluster_queue"),                 \
                        POSITION("ahead_gpus"))                                \
  "FROM jobs j LEFT JOIN flavors f ON f.name = j.flavor "                      \
  "LEFT JOIN job_positions jp ON jp.job_id = j.id "
/* clang-format on */

enum {
  C_ID,
  C_TEAM,
  C_NAME,
  C_QUEUE,
  C_CQ,
  C_PC,
  C_PRIO,
  C_STATE,
  C_REASON,
  C_ATTEMPT,
  C_CREATED,
  C_UPDATED,
  C_GPU,
  C_CPU,
  C_MEM,
  C_FLAVOR,
  C_LOC,
  C_BORROWED,
  C_ADMITTED,
  C_EST,
  C_ACCRUED,
  C_POS_Q,
  C_POS_CQ,
  C_SPEC,
  C_SEQ,
  C_BATCH_NAME,
  C_BATCH_STATE,
  C_AHEAD_GPUS
};

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

/* One job row as the API shows it, its spec from the row or, when the
 * caller has it, spec (referenced, not copied). Returns a new reference. */
static json_t *render_spec(const PGresult *r, int row, json_t *spec)
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
                      spec ? json_incref(spec)
                           : json_loads(PQgetvalue(r, row, C_SPEC), 0, NULL));
  return j;
}

static json_t *render(const PGresult *r, int row)
{
  return render_spec(r, row, NULL);
}

/*
 * One job row as render() shows it, written as text (GG_JSON_DUMP) of
 * *len bytes. The stored spec is spliced in as it is: gpugate wrote it
 * with GG_JSON_DUMP, so parsing it and writing it again gave back the same
 * bytes, and was most of a read's JSON work. It is the last member either
 * way. The row is sql_get's: its team queue's fair-share standing, when
 * shown, goes in as "fair_share". Returns a new buffer, or NULL when out
 * of memory.
 */
static char *render_text_spec(const PGresult *r, int row, const char *spec,
                              size_t *len)
{
  json_t *j = render_spec(r, row, json_null());
  size_t n = 0, size;
  char *head, *out = NULL;

  json_object_del(j, "spec");
  if (!PQgetisnull(r, row, C_FS_SCORE) && !PQgetisnull(r, row, C_FS_RANK))
    json_object_set_new(
        j, "fair_share",
        json_pack(
            "{s:f, s:I}", "score", strtod(PQgetvalue(r, row, C_FS_SCORE), NULL),
            "rank",
            (json_int_t)strtoll(PQgetvalue(r, row, C_FS_RANK), NULL, 10)));
  head = json_dumps(j, GG_JSON_DUMP);
  json_decref(j);
  if (head)
    n = strlen(head);
  /* "{...}" without its "}", then ,"spec":<stored>} */
  if (n < 2 || n > INT_MAX || head[n - 1] != '}')
    goto done;
  size = n + strlen(spec) + 16;
  if ((out = malloc(size)))
    *len = (size_t)snprintf(out, size, "%.*s,\"spec\":%s}", (int)(n - 1), head,
                            spec);
done:
  free(head);
  return out;
}

static char *render_text(const PGresult *r, int row, size_t *len)
{
  return render_text_spec(
      r, row, PQgetisnull(r, row, C_SPEC) ? "null" : PQgetvalue(r, row, C_SPEC),
      len);
}

/* ---- submission -------------------------------------------------------- */

/* Everything a submission is checked against, in one round trip: the
 * queue's cluster queue with its spec, its flavors, the other cluster
 * queues of its cohort, the priority class ($3, '' for the default), and
 * the configuration version all of it belongs to (0008). Always one row;
 * the queue's or the class's columns are NULL when it does not exist. */
static const char sql_target[] =
    "SELECT q.cluster_queue, c.spec, "
    "(SELECT coalesce(json_object_agg(f.name, f.spec), '{}') "
    "FROM cluster_queue_flavors cf JOIN flavors f ON f.name = cf.flavor "
    "WHERE cf.cluster_queue = q.cluster_queue), "
    "(SELECT coalesce(json_agg(o.spec ORDER BY o.name), '[]') "
    "FROM cluster_queues o WHERE o.cohort = c.cohort "
    "AND o.name <> q.cluster_queue), "
    "p.name, p.value, p.spec->>'preemption_policy', "
    "(SELECT version FROM admission_config_version WHERE id = 1) "
    "FROM (SELECT 1) one "
    "LEFT JOIN (team_queues q JOIN cluster_queues c "
    "ON c.name = q.cluster_queue) ON q.team = $1 AND q.name = $2 "
    "LEFT JOIN priority_classes p "
    "ON ($3 = '' AND p.is_default) OR p.name = $3";

void db_job_target_free(struct db_job_target *t)
{
  json_decref(t->cq_spec);
  json_decref(t->flavors);
  json_decref(t->cohort_cqs);
  memset(t, 0, sizeof(*t));
}

enum gg_code db_job_target(struct gg_req *req, const char *team,
                           const char *queue, const char *priority_class,
                           bool use_cache, struct db_job_target *t)
{
  struct db_conn *db;
  const char *params[3] = {team, queue, priority_class ? priority_class : ""};
  uint64_t generation;
  PGresult *res;

  memset(t, 0, sizeof(*t));
  if (use_cache && db_targets_get(team, queue, priority_class, t)) {
    t->cached = true;
    return GG_OK;
  }
  generation = db_targets_generation();
  db = req_db(req);
  if (!db)
    return db_fail(req, GG_UNAVAILABLE);
  if (!(res = db_req_exec(req, db, sql_target, 3, params)))
    return req->code;
  if (PQgetisnull(res, 0, 0))
    problem_field(req, "queue", "team \"%s\" has no queue \"%s\"", team, queue);
  else {
    snprintf(t->cluster_queue, sizeof(t->cluster_queue), "%s",
             PQgetvalue(res, 0, 0));
    t->cq_spec = json_loads(PQgetvalue(res, 0, 1), 0, NULL);
    t->flavors = json_loads(PQgetvalue(res, 0, 2), 0, NULL);
    t->cohort_cqs = json_loads(PQgetvalue(res, 0, 3), 0, NULL);
  }
  if (PQgetisnull(res, 0, 4)) {
    if (priority_class)
      problem_field(req, "priority_class",
                    "priority class \"%s\" does not exist", priority_class);
    else
      problem_field(req, "priority_class",
                    "is required: no priority class is the default");
  } else {
    snprintf(t->priority_class, sizeof(t->priority_class), "%s",
             PQgetvalue(res, 0, 4));
    t->priority = (int32_t)strtol(PQgetvalue(res, 0, 5), NULL, 10);
    t->can_preempt = !strcmp(PQgetvalue(res, 0, 6), "PreemptLowerPriority");
  }
  t->config_version = strtoll(PQgetvalue(res, 0, 7), NULL, 10);
  PQclear(res);
  if (!problem_nfields(req) && (!t->cq_spec || !t->flavors || !t->cohort_cqs))
    db_fail(req, GG_INTERNAL);
  if (req->code != GG_OK || problem_nfields(req)) {
    db_job_target_free(t);
    if (req->code == GG_OK)
      problem_fail(req, GG_UNPROCESSABLE,
                   "The job refers to objects that do not exist.");
    return req->code;
  }
  db_targets_put(team, queue, priority_class, generation, t);
  return GG_OK;
}

/* "j-" and 14 characters of [a-z0-9] from 70 random bits. */
static void new_id(char out[32])
{
  static const char alphabet[] = "0123456789abcdefghjkmnpqrstvwxyz";
  unsigned char rnd[14];
  int i;

  if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
    abort(); /* no entropy: an id must never be guessable */
  out[0] = 'j';
  out[1] = '-';
  for (i = 0; i < 14; i++)
    out[2 + i] = alphabet[rnd[i] & 31];
  out[16] = '\0';
}

static const char sql_notify[] = "SELECT pg_notify('gpugate_admission', $1)";

/* An Idempotency-Key row may be taken over when it is older than 24 h
 * (gone), or when it is an in-flight claim older than 15 s (its request
 * died: a submission takes milliseconds). */
#define IDEM_EXPIRED                                                           \
  "(k.created_at < now() - interval '24 hours' OR (k.status IS NULL AND "      \
  "k.created_at < now() - interval '15 seconds'))"
#define IDEM_KEEP(col)                                                         \
  col " = CASE WHEN " IDEM_EXPIRED " THEN excluded." col " ELSE k." col " END"

/*
 * A whole submission in one statement: the configuration version check
 * (ok: no row when the target was validated against a superseded
 * configuration — nothing is written), the Idempotency-Key claim (key
 * $16, request hash $17; sql_submit_key only), the job and its first
 * event, whose actor is $15 (who submitted it: verified email or sub). With a
 * key, the job is written only when the key is new or was taken over; a
 * submission without one is a statement without the claim, whose unused upsert
 * would otherwise still be set up on every execution. The admission loop's
 * wake-up is not here: a NOTIFY serialises committing transactions
 * (server/waker.h).
 *
 * The claim is one upsert, so that taking over an expired key is atomic:
 * a DELETE of the old row in the same statement as the INSERT would not
 * be seen by the INSERT (all parts of a statement share one snapshot), and
 * the first retry after expiry would find the key still "in flight". The
 * upsert also waits for a concurrent first request with the same key and
 * then sees its committed row. It rewrites a row it does not take over
 * with its own values, which changes nothing.
 *
 * Columns: the job as JOB_COLUMNS shows it (NULL when none was written;
 * no queue positions yet: they are known from the next admission cycle;
 * no spec: the caller has it), then the key's request_hash, status, location,
 * response and whether this request claimed it.
 */
/* clang-format off */
#define SUBMIT_OK                                                              \
  "WITH ok AS (SELECT 1 FROM admission_config_version "                        \
  "WHERE id = 1 AND version = $13::bigint), "
/* the job ($12: spec, $14: its locations, kept apart for the leader) and
 * its first event; cond: when it is written */
#define SUBMIT_JOB(cond)                                                       \
  "j AS (INSERT INTO jobs (id, team, queue, cluster_queue, name, "             \
  "priority_class, priority, can_preempt, state, reason, gpu, cpu_milli, "     \
  "memory_mib, max_run_duration_s, labels, spec, locations) SELECT $1, $2, "   \
  "$3, $4, $5, $6, $7::int, $8::boolean, 'PENDING', NULL, x.r[1], x.r[2], "    \
  "x.r[3], $10::bigint, $11::jsonb, $12::json, $14 "                           \
  "FROM ok, (SELECT CAST($9 AS bigint[]) AS r) x WHERE " cond " "              \
  "RETURNING *), "                                                             \
  "e AS (INSERT INTO job_events (job_id, team, from_state, to_state, "         \
  "reason, attempt, message, actor) SELECT id, team, NULL, 'PENDING', "        \
  "'Submitted', 1, 'submitted to queue ' || queue, $15 FROM j) "               \
  "SELECT " JOB_COLUMNS_SPEC("NULL::bigint", "NULL::bigint", "NULL::bigint",  \
                            "NULL::json") ", "
/* the job holds no flavor yet (f: none), and the caller has its spec */
#define SUBMIT_FROM                                                            \
  "FROM ok LEFT JOIN j ON true LEFT JOIN (SELECT NULL::json AS spec) f "      \
  "ON true"

static const char sql_submit_key[] =
    SUBMIT_OK
    "c AS (INSERT INTO idempotency_keys AS k (team, key, request_hash, "
    "status, location, response, created_at) "
    "SELECT $2, $16, $17, NULL::int, NULL, NULL, now() FROM ok "
    "ON CONFLICT (team, key) DO UPDATE SET "
    IDEM_KEEP("request_hash") ", " IDEM_KEEP("status") ", "
    IDEM_KEEP("location") ", " IDEM_KEEP("response") ", "
    IDEM_KEEP("created_at") " "
    "RETURNING request_hash, status, location, response, "
    "status IS NULL AND created_at = now() AS claimed), "
    SUBMIT_JOB("(SELECT claimed FROM c)")
    "c.request_hash, c.status, c.location, c.response, c.claimed "
    SUBMIT_FROM " LEFT JOIN c ON true";

/* Without an Idempotency-Key: no claim, and the same columns. */
static const char sql_submit[] =
    SUBMIT_OK SUBMIT_JOB("true")
    "NULL, NULL::int, NULL, NULL, NULL::boolean " SUBMIT_FROM;
/* clang-format on */

/* the columns of sql_submit after the job's */
enum {
  C_K_HASH = C_AHEAD_GPUS + 1,
  C_K_STATUS,
  C_K_LOCATION,
  C_K_RESPONSE,
  C_K_CLAIMED
};

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

static const char sql_idem_done[] =
    "UPDATE idempotency_keys SET status = $3::int, location = $4, "
    "response = $5 WHERE team = $1 AND key = $2";

/* Fill the outcome of a key that this request did not claim from the
 * key's row at row (columns from col on: hash, status, location,
 * response). */
static void idem_seen(const PGresult *res, int row, int col, const char *hash,
                      struct db_submit_result *out)
{
  if (strcmp(PQgetvalue(res, row, col), hash) != 0)
    out->idem = DB_IDEM_MISMATCH;
  else if (PQgetisnull(res, row, col + 1))
    out->idem = DB_IDEM_IN_FLIGHT;
  else {
    out->idem = DB_IDEM_REPLAY;
    out->status = (int)strtol(PQgetvalue(res, row, col + 1), NULL, 10);
    if (!PQgetisnull(res, row, col + 2))
      out->location = strdup(PQgetvalue(res, row, col + 2));
    out->body = strdup(PQgetvalue(res, row, col + 3));
  }
}

enum gg_code db_job_submit(struct gg_req *req, const struct db_job_new *j,
                           const struct db_job_target *t, const char *idem_key,
                           const char *idem_hash, struct db_submit_result *out)
{
  static const char *const none[1] = {NULL};
  struct db_conn *db = req_db(req);
  char id[32], prio[16], request[80], maxrun[24], version[24], location[160];
  char *spec = NULL, *labels = NULL, *locations = NULL;
  json_t *locs = json_object_get(j->spec, "locations");
  const char *params[17];
  PGresult *res[DB_PIPELINE_MAX] = {NULL};
  PGresult *row; /* borrowed: the submission's result */
  enum gg_code code;
  bool in_tx = idem_key != NULL;
  int i;

  memset(out, 0, sizeof(*out));
  if (!db)
    return db_fail(req, GG_UNAVAILABLE);
  new_id(id);
  snprintf(prio, sizeof(prio), "%d", (int)t->priority);
  snprintf(request, sizeof(request), "{%lld,%lld,%lld}",
           (long long)j->request[0], (long long)j->request[1],
           (long long)j->request[2]);
  snprintf(maxrun, sizeof(maxrun), "%lld", (long long)j->max_run_duration_s);
  snprintf(version, sizeof(version), "%lld", (long long)t->config_version);
  spec = json_dumps(j->spec, GG_JSON_DUMP);
  labels = json_dumps(j->labels, GG_JSON_DUMP);
  locations = locs ? json_dumps(locs, GG_JSON_DUMP) : NULL;
  if (!spec || !labels || (locs && !locations)) {
    db_fail(req, GG_INTERNAL);
    goto out;
  }
  params[0] = id;
  params[1] = j->team;
  params[2] = j->queue;
  params[3] = t->cluster_queue;
  params[4] = j->name;
  params[5] = t->priority_class;
  params[6] = prio;
  params[7] = t->can_preempt ? "true" : "false";
  params[8] = request;
  params[9] = maxrun;
  params[10] = labels;
  params[11] = spec;
  params[12] = version;
  params[13] = locations; /* as (spec -> 'locations')::text: the same dump */
  params[14] = req_actor(req);
  params[15] = idem_key;
  params[16] = idem_hash;

  /* round trip 1: the submission; with a key, inside a transaction that
   * stays open until its response is recorded */
  {
    struct db_stmt st[2] = {{"BEGIN", 0, none}, {sql_submit_key, 17, params}};
    struct db_stmt plain = {sql_submit, 15, params};
    code = in_tx ? db_pipeline(db, 2, st, res)
                 : db_pipeline(db, 1, &plain, res + 1);
  }
  if (code != GG_OK) {
    db_fail(req, code);
    goto fail;
  }
  row = res[1];
  if (PQntuples(row) == 0) {
    /* validated against a superseded configuration: nothing written */
    db_targets_flush();
    out->stale = true;
    goto fail;
  }
  if (PQgetisnull(row, 0, C_ID)) {
    idem_seen(row, 0, C_K_HASH, idem_hash, out);
    goto fail; /* nothing to keep */
  }
  out->idem = DB_IDEM_NEW;
  out->job = render_spec(row, 0, j->spec);
  /* the reply, with the spec as it was dumped for the INSERT */
  out->text = render_text_spec(row, 0, spec, &out->text_len);
  if (!out->job || !out->text) {
    db_fail(req, GG_INTERNAL);
    goto fail;
  }
  if (!in_tx)
    goto out;

  /* round trip 2: the response for the key, and COMMIT */
  snprintf(location, sizeof(location), "/v1/teams/%s/jobs/%s", j->team, id);
  {
    const char *done[5] = {j->team, idem_key, "201", location, out->text};
    struct db_stmt st[2] = {{sql_idem_done, 5, done}, {"COMMIT", 0, none}};
    code = db_pipeline(db, 2, st, res + 2);
  }
  if (code != GG_OK) {
    db_fail(req, code);
    goto fail;
  }
  goto out;
fail:
  if (in_tx)
    db_rollback(db);
  json_decref(out->job);
  out->job = NULL;
  free(out->text);
  out->text = NULL;
out:
  for (i = 0; i < DB_PIPELINE_MAX; i++)
    PQclear(res[i]);
  free(spec);
  free(labels);
  free(locations);
  return req->code;
}

/* ---- reads --------------------------------------------------------------- */

enum gg_code db_job_get(struct gg_req *req, const char *team, const char *id,
                        char **text, size_t *len)
{
  struct db_conn *db = req_db(req);
  struct db_prices prices;
  const char *params[4] = {team, id};
  PGresult *res;

  *text = NULL;
  *len = 0;
  if (!db)
    return db_fail(req, GG_UNAVAILABLE);
  if (db_prices_get(req, db, &prices) != 0)
    return req->code;
  params[2] = prices.names;
  params[3] = prices.prices;
  res = db_req_exec(req, db, sql_get_priced, 4, params);
  db_prices_free(&prices);
  if (!res)
    return req->code;
  if (PQntuples(res) == 0) {
    PQclear(res);
    return problem_fail(req, GG_NOT_FOUND, "Job \"%s\" was not found.", id);
  }
  *text = render_text(res, 0, len);
  PQclear(res);
  return *text ? GG_OK : problem_fail(req, GG_INTERNAL, "Out of memory.");
}

static const char sql_list[] = JOB_SELECT
    "WHERE j.team = $1 "
    "AND ($2::text IS NULL OR j.state = ANY (string_to_array($2, ','))) "
    "AND ($3::text IS NULL OR j.queue = $3) "
    "AND ($4::text IS NULL OR j.labels @> jsonb_build_object($4, $5)) "
    "AND ($6::bigint = 0 OR j.seq < $6::bigint) "
    "ORDER BY j.seq DESC LIMIT $7::int";

enum gg_code db_job_list(struct gg_req *req, const char *team,
                         const struct db_job_filter *f, json_t **items,
                         int64_t *next_seq)
{
  struct db_conn *db = req_db(req);
  char after[24], lim[16];
  const char *params[7];
  PGresult *res;
  int i, rows;

  *items = NULL;
  *next_seq = 0;
  if (!db)
    return db_fail(req, GG_UNAVAILABLE);
  snprintf(after, sizeof(after), "%lld", (long long)f->after_seq);
  snprintf(lim, sizeof(lim), "%d", f->limit + 1);
  params[0] = team;
  params[1] = f->states;
  params[2] = f->queue;
  params[3] = f->label_key;
  params[4] = f->label_value ? f->label_value : "";
  params[5] = after;
  params[6] = lim;
  if (!(res = db_req_exec(req, db, sql_list, 7, params)))
    return req->code;
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

enum gg_code db_job_events(struct gg_req *req, const char *team, const char *id,
                           int64_t after, int limit, json_t **items,
                           int64_t *next)
{
  struct db_conn *db = req_db(req);
  char after_s[24], lim[16];
  const char *params[4] = {team, id, after_s, lim};
  PGresult *res;
  int i, rows;

  *items = NULL;
  *next = 0;
  if (!db)
    return db_fail(req, GG_UNAVAILABLE);
  if (!(res = db_req_exec(req, db, sql_exists, 2, params)))
    return req->code;
  rows = PQntuples(res);
  PQclear(res);
  if (!rows)
    return problem_fail(req, GG_NOT_FOUND, "Job \"%s\" was not found.", id);
  snprintf(after_s, sizeof(after_s), "%lld", (long long)after);
  snprintf(lim, sizeof(lim), "%d", limit + 1);
  if (!(res = db_req_exec(req, db, sql_events, 4, params)))
    return req->code;
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
 * whose seq is $3 (0: from the head) */
/* clang-format off */
static const char sql_pending[] = JOB_SELECT
    "WHERE j.team = $1 AND j.queue = $2 AND j.state = 'PENDING' "
    "AND ($3::bigint = 0 OR (SELECT " AHEAD("c", "j") " FROM jobs c "
    "WHERE c.team = $1 AND c.seq = $3::bigint)) "
    "ORDER BY j.priority DESC, j.created_at, j.seq LIMIT $4::int";
/* clang-format on */

enum gg_code db_queue_pending(struct gg_req *req, const char *team,
                              const char *queue, int64_t after, int limit,
                              json_t **items, int64_t *next)
{
  struct db_conn *db = req_db(req);
  char after_s[24], lim[16];
  const char *params[4] = {team, queue, after_s, lim};
  PGresult *res;
  int i, rows;

  *items = NULL;
  *next = 0;
  if (!db)
    return db_fail(req, GG_UNAVAILABLE);
  snprintf(after_s, sizeof(after_s), "%lld", (long long)after);
  snprintf(lim, sizeof(lim), "%d", limit + 1);
  if (!(res = db_req_exec(req, db, sql_pending, 4, params)))
    return req->code;
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

static const char sql_attempt[] =
    "SELECT attempt FROM jobs WHERE team = $1 AND id = $2";

static const char sql_lock_job[] =
    "SELECT state, attempt FROM jobs WHERE team = $1 AND id = $2 FOR UPDATE";

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

enum gg_code db_job_cancel(struct gg_req *req, const char *team, const char *id,
                           json_t **out)
{
  struct db_conn *db = req_db(req);
  const char *params[4] = {team, id, NULL, req_actor(req)};
  bool batch = db_pool_batch(req->pool);
  char state[16], err[256];
  PGresult *res = NULL;
  enum gg_code code;
  int withdrawn = 1;

  *out = NULL;
  if (!db)
    return db_fail(req, GG_UNAVAILABLE);
  if ((code = db_begin(db)) != GG_OK)
    return db_fail(req, code);
  if (batch) {
    /* the outbox row before the job row: the dispatcher's lock order */
    if (!(res = db_req_exec(req, db, sql_attempt, 2, params)))
      goto fail;
    if (PQntuples(res) == 1) {
      withdrawn = db_batch_withdraw_create(
          db, id, (int)strtol(PQgetvalue(res, 0, 0), NULL, 10), err,
          sizeof(err));
      if (withdrawn < 0) {
        db_fail(req, GG_UNAVAILABLE);
        goto fail;
      }
    }
    PQclear(res);
    res = NULL;
  }
  if (!(res = db_req_exec(req, db, sql_lock_job, 2, params)))
    goto fail;
  if (PQntuples(res) == 0) {
    problem_fail(req, GG_NOT_FOUND, "Job \"%s\" was not found.", id);
    goto fail;
  }
  snprintf(state, sizeof(state), "%s", PQgetvalue(res, 0, 0));
  PQclear(res);
  res = NULL;
  params[2] = state;
  if (finished(state)) {
    /* idempotent: nothing to do */
  } else if (batch && !withdrawn && strcmp(state, "PENDING") != 0) {
    if (!(res = db_req_exec(req, db, sql_cancel_requested, 2, params)))
      goto fail;
    PQclear(res);
    res = NULL;
    if (db_batch_request_cancel(db, id, err, sizeof(err))) {
      db_fail(req, GG_UNAVAILABLE);
      goto fail;
    }
  } else {
    if (!(res = db_req_exec(req, db, sql_cancel, 2, params)))
      goto fail;
    PQclear(res);
    if (!(res = db_req_exec(req, db, sql_event_cancel, 4, params)))
      goto fail;
    PQclear(res);
    params[0] = "cancel";
    if (!(res = db_req_exec(req, db, sql_notify, 1, params)))
      goto fail;
    PQclear(res);
    res = NULL;
    params[0] = team;
  }
  if (!(res = db_req_exec(req, db, sql_get, 2, params)))
    goto fail;
  *out = render(res, 0);
  PQclear(res);
  res = NULL;
  if ((code = db_commit(db)) != GG_OK) {
    db_fail(req, code);
    goto fail;
  }
  return GG_OK;
fail:
  PQclear(res);
  db_rollback(db);
  json_decref(*out);
  *out = NULL;
  return req->code ? req->code : GG_INTERNAL;
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

/* ---- idempotency ------------------------------------------------------ */

/* a key as it stands, unless it has expired (then it is as good as gone) */
static const char sql_idem_read[] =
    "SELECT k.request_hash, k.status, k.location, k.response "
    "FROM idempotency_keys k WHERE k.team = $1 AND k.key = $2 "
    "AND NOT " IDEM_EXPIRED;

enum gg_code db_idem_read(struct gg_req *req, const char *team, const char *key,
                          const char *hash, struct db_submit_result *out)
{
  struct db_conn *db = req_db(req);
  const char *params[2] = {team, key};
  PGresult *res;

  memset(out, 0, sizeof(*out));
  out->idem = DB_IDEM_NEW;
  if (!db)
    return db_fail(req, GG_UNAVAILABLE);
  if (!(res = db_req_exec(req, db, sql_idem_read, 2, params)))
    return req->code;
  if (PQntuples(res) == 1)
    idem_seen(res, 0, 0, hash, out);
  PQclear(res);
  return GG_OK;
}

void db_submit_result_free(struct db_submit_result *r)
{
  json_decref(r->job);
  free(r->text);
  free(r->location);
  free(r->body);
  memset(r, 0, sizeof(*r));
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

enum gg_code db_job_find(struct gg_req *req, const char *team,
                         const char *team_filter, const struct db_job_filter *f,
                         const char *name_part, json_t **items,
                         int64_t *next_seq)
{
  struct db_conn *db = req_db(req);
  char after[24], lim[16];
  const char *params[8];
  PGresult *res;
  int i, rows;

  *items = NULL;
  *next_seq = 0;
  if (!db)
    return db_fail(req, GG_UNAVAILABLE);
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
  res = db_req_exec(req, db, team ? sql_find_team : sql_find_all, 8, params);
  if (!res)
    return req->code;
  rows = PQntuples(res);
  *items = json_array();
  for (i = 0; i < rows && i < f->limit; i++)
    json_array_append_new(*items, render(res, i));
  if (rows > f->limit)
    *next_seq = strtoll(PQgetvalue(res, f->limit - 1, C_SEQ), NULL, 10);
  PQclear(res);
  return GG_OK;
}

/* index-only on jobs_team_state_queue (0013) */
static const char sql_summary[] =
    "SELECT queue, state, count(*), coalesce(sum(gpu), 0) FROM jobs "
    "WHERE team = $1 GROUP BY queue, state ORDER BY queue, state";

enum gg_code db_job_summary(struct gg_req *req, const char *team, json_t **out)
{
  static const char *const all[] = {"PENDING", "ADMITTED", "QUEUED",
                                    "RUNNING", "EVICTING", "SUCCEEDED",
                                    "FAILED",  "CANCELLED"};
  struct db_conn *db = req_db(req);
  const char *params[1] = {team};
  json_t *counts, *totals;
  PGresult *res;
  size_t i;
  int row;

  *out = NULL;
  if (!db)
    return db_fail(req, GG_UNAVAILABLE);
  if (!(res = db_req_exec(req, db, sql_summary, 1, params)))
    return req->code;
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
  return *out ? GG_OK : db_fail(req, GG_INTERNAL);
}
