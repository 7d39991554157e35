/*
 * jobs_submit.c — the SQL of a job's submission: the check of its target
 * (queue, cluster queue, flavors, priority class), the job and its first
 * event written in one statement, and the Idempotency-Key that makes a
 * retried submission answer as the first did. Every statement is scoped
 * to the submitting team; ids are 70 random bits, so they cannot be
 * guessed either.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "db/db.h"
#include "db/jobs.h"
#include "db/jobs_internal.h"
#include "db/targets.h"
#include "lib/jsonx.h"

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

bool db_job_target_cached(const char *team, const char *queue,
                          const char *priority_class, struct db_job_target *t)
{
  memset(t, 0, sizeof(*t));
  t->cached = db_targets_get(team, queue, priority_class, t);
  return t->cached;
}

enum gg_code db_job_target(struct db_conn *db, struct gg_err *err,
                           const char *team, const char *queue,
                           const char *priority_class, struct db_job_target *t)
{
  const char *params[3] = {team, queue, priority_class ? priority_class : ""};
  uint64_t generation;
  PGresult *res;

  memset(t, 0, sizeof(*t));
  generation = db_targets_generation();
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  if (!(res = db_err_exec(db, err, sql_target, 3, params)))
    return err->code;
  if (PQgetisnull(res, 0, 0))
    err_field(err, "queue", "team \"%s\" has no queue \"%s\"", team, queue);
  else {
    snprintf(t->cluster_queue, sizeof(t->cluster_queue), "%s",
             PQgetvalue(res, 0, 0));
    t->cq_spec = json_loads(PQgetvalue(res, 0, 1), 0, NULL);
    t->flavors = json_loads(PQgetvalue(res, 0, 2), 0, NULL);
    t->cohort_cqs = json_loads(PQgetvalue(res, 0, 3), 0, NULL);
  }
  if (PQgetisnull(res, 0, 4)) {
    if (priority_class)
      err_field(err, "priority_class", "priority class \"%s\" does not exist",
                priority_class);
    else
      err_field(err, "priority_class",
                "is required: no priority class is the default");
  } else {
    snprintf(t->priority_class, sizeof(t->priority_class), "%s",
             PQgetvalue(res, 0, 4));
    t->priority = (int32_t)strtol(PQgetvalue(res, 0, 5), NULL, 10);
    t->can_preempt = !strcmp(PQgetvalue(res, 0, 6), "PreemptLowerPriority");
  }
  t->config_version = strtoll(PQgetvalue(res, 0, 7), NULL, 10);
  PQclear(res);
  if (!err_nfields(err) && (!t->cq_spec || !t->flavors || !t->cohort_cqs))
    db_fail(err, GG_INTERNAL);
  if (err->code != GG_OK || err_nfields(err)) {
    db_job_target_free(t);
    if (err->code == GG_OK)
      err_fail(err, GG_UNPROCESSABLE,
               "The job refers to objects that do not exist.");
    return err->code;
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
 * (control/waker.h).
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
/* The columns of the new row that JOB_COLUMNS_SPEC reads (and the event
 * takes): not RETURNING *, which copied every column — the spec and the
 * labels too — into the CTE's store for nothing. */
#define SUBMIT_RETURNING                                                       \
  "id, team, name, queue, cluster_queue, priority_class, priority, state, "    \
  "reason, attempt, created_at, updated_at, gpu, cpu_milli, memory_mib, "      \
  "flavor, location, borrowed, admitted_at, estimated_cost_usd, finished_at, " \
  "run_started_at, seq, batch_job_name, batch_state"
/* the job ($12: spec, $14: its locations, kept apart for the leader) and
 * its first event; cond: when it is written */
#define SUBMIT_JOB(cond)                                                       \
  "j AS (INSERT INTO jobs (id, team, queue, cluster_queue, name, "             \
  "priority_class, priority, can_preempt, state, reason, gpu, cpu_milli, "     \
  "memory_mib, max_run_duration_s, labels, spec, locations) SELECT $1, $2, "   \
  "$3, $4, $5, $6, $7::int, $8::boolean, 'PENDING', NULL, x.r[1], x.r[2], "    \
  "x.r[3], $10::bigint, $11::jsonb, $12::json, $14 "                           \
  "FROM ok, (SELECT CAST($9 AS bigint[]) AS r) x WHERE " cond " "              \
  "RETURNING " SUBMIT_RETURNING "), "                                          \
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

enum gg_code db_job_submit(struct db_conn *db, struct gg_err *err,
                           const struct db_job_new *j,
                           const struct db_job_target *t, const char *idem_key,
                           const char *idem_hash, struct db_submit_result *out)
{
  static const char *const none[1] = {NULL};
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
    return db_fail(err, GG_UNAVAILABLE);
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
    db_fail(err, GG_INTERNAL);
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
  params[14] = j->actor;
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
    db_fail(err, code);
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
  memcpy(out->id, id, sizeof(out->id));
  /* the reply, with the spec as it was dumped for the INSERT */
  out->text = db_job_render_text_spec(row, 0, spec, &out->text_len);
  if (!out->text) {
    db_fail(err, GG_INTERNAL);
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
    db_fail(err, code);
    goto fail;
  }
  goto out;
fail:
  if (in_tx)
    db_rollback(db);
  out->id[0] = '\0';
  free(out->text);
  out->text = NULL;
out:
  for (i = 0; i < DB_PIPELINE_MAX; i++)
    PQclear(res[i]);
  free(spec);
  free(labels);
  free(locations);
  return err->code;
}

/* ---- idempotency ------------------------------------------------------ */

/* a key as it stands, unless it has expired (then it is as good as gone) */
static const char sql_idem_read[] =
    "SELECT k.request_hash, k.status, k.location, k.response "
    "FROM idempotency_keys k WHERE k.team = $1 AND k.key = $2 "
    "AND NOT " IDEM_EXPIRED;

enum gg_code db_idem_read(struct db_conn *db, struct gg_err *err,
                          const char *team, const char *key, const char *hash,
                          struct db_submit_result *out)
{
  const char *params[2] = {team, key};
  PGresult *res;

  memset(out, 0, sizeof(*out));
  out->idem = DB_IDEM_NEW;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  if (!(res = db_err_exec(db, err, sql_idem_read, 2, params)))
    return err->code;
  if (PQntuples(res) == 1)
    idem_seen(res, 0, 0, hash, out);
  PQclear(res);
  return GG_OK;
}

void db_submit_result_free(struct db_submit_result *r)
{
  free(r->text);
  free(r->location);
  free(r->body);
  memset(r, 0, sizeof(*r));
}
