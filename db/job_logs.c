/*
 * job_logs.c (db) — a job's existence and liveness for its log reads (see
 * job_logs.h).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "db/job_logs.h"

#define LIVE_STATES "('PENDING', 'ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING')"

static const char sql_target[] =
    "SELECT state IN " LIVE_STATES " FROM jobs WHERE team = $1 AND id = $2";

/* $1: a JSON array of ids, so that any number travel as one parameter;
 * $2: the grace (ms) an ended job still counts as live */
static const char sql_live[] =
    "SELECT id FROM jobs WHERE id IN (SELECT "
    "jsonb_array_elements_text($1::jsonb)) AND (state IN " LIVE_STATES
    " OR coalesce(finished_at, '-infinity') > "
    "now() - $2::bigint * interval '1 millisecond')";

/* the lease: taken when free or expired, renewed by its holder */
static const char sql_lease[] =
    "INSERT INTO log_poll_leases (project, holder, expires_at) "
    "VALUES ($1, $2, now() + $3::bigint * interval '1 millisecond') "
    "ON CONFLICT (project) DO UPDATE SET holder = excluded.holder, "
    "expires_at = excluded.expires_at "
    "WHERE log_poll_leases.holder = excluded.holder "
    "OR log_poll_leases.expires_at < now() RETURNING holder";

static const char sql_unlease[] =
    "DELETE FROM log_poll_leases WHERE project = $1 AND holder = $2";

/* $2: [{"job", "ns"}]: the replica's rows become exactly these */
static const char sql_follows[] =
    "WITH w AS (SELECT e->>'job' AS job, (e->>'ns')::bigint AS ns "
    "FROM jsonb_array_elements($2::jsonb) e), "
    "gone AS (DELETE FROM log_follows f WHERE f.replica = $1 "
    "AND NOT EXISTS (SELECT 1 FROM w WHERE w.job = f.job)) "
    "INSERT INTO log_follows (replica, job, since_ns, seen_at) "
    "SELECT $1, job, ns, now() FROM w "
    "ON CONFLICT (replica, job) DO UPDATE SET since_ns = excluded.since_ns, "
    "seen_at = excluded.seen_at";

static const char sql_wants[] =
    "SELECT job, min(since_ns) FROM log_follows "
    "WHERE seen_at > now() - $1::bigint * interval '1 millisecond' "
    "GROUP BY job ORDER BY job";

static const char sql_follows_gc[] =
    "DELETE FROM log_follows "
    "WHERE seen_at < now() - 10 * $1::bigint * interval '1 millisecond'";

static const char sql_round[] =
    "INSERT INTO log_rounds (project, since_ns, jobs, ended, complete, "
    "last_ns, last_id, entries) "
    "VALUES ($1, $2::bigint, $3::jsonb, $4::jsonb, $5::boolean, $6::bigint, "
    "$7, $8::jsonb)";

static const char sql_rounds_gc[] =
    "DELETE FROM log_rounds WHERE made_at < now() - interval '5 minutes'";

static const char sql_rounds[] =
    "SELECT seq, since_ns, jobs, ended, complete, last_ns, last_id, entries "
    "FROM log_rounds WHERE project = $1 AND seq > $2::bigint "
    "ORDER BY seq LIMIT $3::int";

static const char sql_rounds_top[] =
    "SELECT coalesce(max(seq), 0) FROM log_rounds WHERE project = $1";

enum gg_code db_job_log_target(struct db_conn *db, struct gg_err *err,
                               const char *team, const char *id, bool *live)
{
  const char *params[2] = {team, id};
  PGresult *res;
  int rows;

  *live = false;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  if (!(res = db_err_exec(db, err, sql_target, 2, params)))
    return err->code;
  rows = PQntuples(res);
  if (rows)
    *live = !strcmp(PQgetvalue(res, 0, 0), "t");
  PQclear(res);
  if (!rows)
    return err_fail(err, GG_NOT_FOUND, "Job \"%s\" was not found.", id);
  return GG_OK;
}

int db_jobs_live(struct db_conn *c, const char *const *ids, size_t n,
                 long grace_ms, bool *live, char *err, size_t errlen)
{
  json_t *arr = json_array();
  const char *params[2];
  char grace[24];
  PGresult *res = NULL;
  char *text = NULL;
  size_t i;
  int r, rc = -1;

  for (i = 0; i < n; i++) {
    live[i] = false;
    json_array_append_new(arr, json_string(ids[i]));
  }
  text = json_dumps(arr, JSON_COMPACT);
  if (!text) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  snprintf(grace, sizeof(grace), "%ld", grace_ms);
  params[0] = text;
  params[1] = grace;
  if (!(res = db_query(c, sql_live, 2, params, err, errlen)))
    goto out;
  for (r = 0; r < PQntuples(res); r++)
    for (i = 0; i < n; i++)
      if (!strcmp(PQgetvalue(res, r, 0), ids[i]))
        live[i] = true;
  rc = 0;
out:
  PQclear(res);
  free(text);
  json_decref(arr);
  return rc;
}

int db_log_lease(struct db_conn *c, const char *project, const char *holder,
                 long ttl_ms, bool *held, char *err, size_t errlen)
{
  char ttl[24];
  const char *params[3] = {project, holder, ttl};
  PGresult *res;

  *held = false;
  snprintf(ttl, sizeof(ttl), "%ld", ttl_ms);
  if (!(res = db_query(c, sql_lease, 3, params, err, errlen)))
    return -1;
  *held = PQntuples(res) == 1;
  PQclear(res);
  return 0;
}

int db_log_unlease(struct db_conn *c, const char *project, const char *holder,
                   char *err, size_t errlen)
{
  const char *params[2] = {project, holder};

  return db_run(c, sql_unlease, 2, params, NULL, err, errlen);
}

int db_log_follows_set(struct db_conn *c, const char *replica,
                       const char *wants, char *err, size_t errlen)
{
  const char *params[2] = {replica, wants};

  return db_run(c, sql_follows, 2, params, NULL, err, errlen);
}

PGresult *db_log_wants(struct db_conn *c, long ttl_ms, char *err, size_t errlen)
{
  char ttl[24];
  const char *params[1] = {ttl};

  snprintf(ttl, sizeof(ttl), "%ld", ttl_ms);
  if (db_run(c, sql_follows_gc, 1, params, NULL, err, errlen) != 0)
    return NULL;
  return db_query(c, sql_wants, 1, params, err, errlen);
}

int db_log_round_put(struct db_conn *c, const struct db_log_round *r, char *err,
                     size_t errlen)
{
  char since[24], last[24];
  const char *params[8] = {r->project,
                           since,
                           r->jobs,
                           r->ended,
                           r->complete ? "true" : "false",
                           last,
                           r->last_id,
                           r->entries};
  const char *key[1] = {"gpugate_log_rounds"};

  snprintf(since, sizeof(since), "%lld", (long long)r->since_ns);
  snprintf(last, sizeof(last), "%lld", (long long)r->last_ns);
  if (db_run(c, "BEGIN", 0, NULL, NULL, err, errlen) != 0)
    return -1;
  /* one writer at a time: seq is taken under the lock, so a reader that
   * has passed a seq never sees a smaller one commit later */
  if (db_run(c, "SELECT pg_advisory_xact_lock(hashtext($1))", 1, key, NULL, err,
             errlen) != 0 ||
      db_run(c, sql_round, 8, params, NULL, err, errlen) != 0 ||
      db_run(c, sql_rounds_gc, 0, NULL, NULL, err, errlen) != 0 ||
      db_run(c, "SELECT pg_notify('gpugate_logs', '')", 0, NULL, NULL, err,
             errlen) != 0 ||
      db_run(c, "COMMIT", 0, NULL, NULL, err, errlen) != 0) {
    char ignored[64];
    (void)db_run(c, "ROLLBACK", 0, NULL, NULL, ignored, sizeof(ignored));
    return -1;
  }
  return 0;
}

PGresult *db_log_rounds(struct db_conn *c, const char *project, long long after,
                        int limit, char *err, size_t errlen)
{
  char a[24], l[16];
  const char *params[3] = {project, a, l};

  snprintf(a, sizeof(a), "%lld", after);
  snprintf(l, sizeof(l), "%d", limit);
  return db_query(c, sql_rounds, 3, params, err, errlen);
}

int db_log_rounds_top(struct db_conn *c, const char *project, long long *seq,
                      char *err, size_t errlen)
{
  const char *params[1] = {project};
  PGresult *res = db_query(c, sql_rounds_top, 1, params, err, errlen);

  if (!res)
    return -1;
  *seq = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
  PQclear(res);
  return 0;
}
