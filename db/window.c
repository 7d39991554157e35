/*
 * window.c (db) — capacity windows: the eviction step of the admission
 * leader and the cluster queue's window status. See window.h.
 *
 * Flavors are few; their windows are read and compared in C (stored
 * normalised as "YYYY-MM-DDTHH:MM:SSZ", validated on PUT) against the
 * database's clock, so one odd value can never fail a cycle's SQL. Jobs
 * are read only for flavors whose window is closing, through the partial
 * index jobs_active_flavor (migrations 0012, 0016).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/batch.h"
#include "db/window.h"
#include "lib/rfc3339.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static const char sql_windows[] =
    "SELECT name, spec->>'available_from', spec->>'available_until', "
    "floor(extract(epoch FROM now()))::bigint FROM flavors "
    "WHERE spec->>'available_until' IS NOT NULL ORDER BY name";

/* The holders whose run may last past the end ($2, epoch seconds): not
 * started yet (now + the whole run), or started + max run. A job whose
 * cancel is pending is left to it (it would be requeued). */
static const char sql_victims[] =
    "SELECT id, attempt, cluster_queue FROM jobs "
    "WHERE flavor = $1 AND state IN ('ADMITTED', 'QUEUED', 'RUNNING') "
    "AND NOT cancel_requested AND floor(extract(epoch FROM "
    "coalesce(run_started_at, now())))::bigint "
    "+ max_run_duration_s > $2::bigint "
    "ORDER BY seq LIMIT " STR(DB_WINDOW_EVICT_BATCH);

static const char sql_evict[] =
    "WITH o AS (SELECT state FROM jobs WHERE id = $1 AND attempt = $2::int "
    "AND state IN ('ADMITTED', 'QUEUED', 'RUNNING') AND NOT cancel_requested "
    "FOR UPDATE) "
    "UPDATE jobs SET state = 'EVICTING', reason = '" DB_WINDOW_REASON "', "
    "updated_at = now() FROM o WHERE id = $1 AND attempt = $2::int "
    "AND jobs.state IN ('ADMITTED', 'QUEUED', 'RUNNING') RETURNING o.state";

/* Evict one job; 1 when it was, 0 when it changed meanwhile, -1. */
static int evict(struct db_conn *c, const char *id, int attempt, bool batch,
                 const char *flavor, const char *until, long grace_s, char *err,
                 size_t errlen)
{
  char att[16], from[16], msg[256];
  const char *params[2] = {id, att};
  PGresult *res;
  int withdrawn = 1, rows = 0;

  snprintf(att, sizeof(att), "%d", attempt);
  /* the outbox row first: the dispatcher locks it before the job row */
  if (batch)
    withdrawn = db_batch_withdraw_create(c, id, attempt, err, errlen);
  if (withdrawn < 0)
    return -1;
  if (!(res = db_query(c, sql_evict, 2, params, err, errlen)))
    return -1;
  if (PQntuples(res) == 0) {
    PQclear(res);
    return 0;
  }
  snprintf(from, sizeof(from), "%s", PQgetvalue(res, 0, 0));
  PQclear(res);
  snprintf(msg, sizeof(msg),
           "the capacity window of flavor %s ends at %s; evicted %ld s "
           "before its end so that its checkpoint survives",
           flavor, until, grace_s);
  if (db_job_event(c, id, from, "EVICTING", DB_WINDOW_REASON, msg, err, errlen))
    return -1;
  if (!withdrawn) /* a Batch job exists: done when Batch confirms */
    return db_batch_request_cancel(c, id, err, errlen) ? -1 : 1;
  if (db_batch_requeue(c, id, "Requeued",
                       "evicted; waits again in its queue with its original "
                       "place",
                       &rows, err, errlen))
    return -1;
  return 1;
}

/* Evict the victims of one flavor; returns how many, or -1. */
static int evict_flavor(struct db_conn *c, const char *flavor, int64_t until,
                        const char *until_text, long grace_s, bool batch,
                        json_t *cqs, char *err, size_t errlen)
{
  char end[24];
  const char *params[2] = {flavor, end};
  PGresult *res;
  int i, n = 0, rc;

  snprintf(end, sizeof(end), "%lld", (long long)until);
  if (!(res = db_query(c, sql_victims, 2, params, err, errlen)))
    return -1;
  for (i = 0; i < PQntuples(res); i++) {
    rc = evict(c, PQgetvalue(res, i, 0),
               (int)strtol(PQgetvalue(res, i, 1), NULL, 10), batch, flavor,
               until_text, grace_s, err, errlen);
    if (rc < 0) {
      PQclear(res);
      return -1;
    }
    if (rc > 0 && cqs)
      json_array_append_new(cqs, json_string(PQgetvalue(res, i, 2)));
    n += rc;
  }
  PQclear(res);
  return n;
}

int db_window_evict(struct db_conn *c, long grace_s, bool batch, json_t *cqs,
                    char *err, size_t errlen)
{
  PGresult *res = db_query(c, sql_windows, 0, NULL, err, errlen);
  int i, n = 0, rc = 0;

  if (!res)
    return -1;
  for (i = 0; i < PQntuples(res) && rc >= 0; i++) {
    int64_t until, now = strtoll(PQgetvalue(res, i, 3), NULL, 10);

    if (rfc3339_parse(PQgetvalue(res, i, 2), 0, &until))
      continue; /* never stored so; the scheduler admits nothing there */
    if (now < until - grace_s)
      continue; /* not closing yet */
    rc = evict_flavor(c, PQgetvalue(res, i, 0), until, PQgetvalue(res, i, 2),
                      grace_s, batch, cqs, err, errlen);
    n += rc > 0 ? rc : 0;
  }
  PQclear(res);
  return rc < 0 ? -1 : n;
}

static const char sql_cq_windows[] =
    "SELECT f.name, f.spec->>'available_from', f.spec->>'available_until', "
    "floor(extract(epoch FROM now()))::bigint FROM cluster_queue_flavors q "
    "JOIN flavors f ON f.name = q.flavor WHERE q.cluster_queue = $1 "
    "AND f.spec->>'available_until' IS NOT NULL ORDER BY q.position";

enum gg_code db_window_status(struct db_conn *db, struct gg_err *err,
                              const char *cq, long grace_s, json_t **out)
{
  const char *params[1] = {cq};
  PGresult *res;
  int i;

  *out = NULL;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  if (!(res = db_err_exec(db, err, sql_cq_windows, 1, params)))
    return err->code;
  *out = json_array();
  for (i = 0; i < PQntuples(res); i++) {
    int64_t from, until, now = strtoll(PQgetvalue(res, i, 3), NULL, 10);
    char evict_at[RFC3339_LEN];
    const char *state;

    if (rfc3339_parse(PQgetvalue(res, i, 1), 1, &from) ||
        rfc3339_parse(PQgetvalue(res, i, 2), 0, &until))
      continue;
    state = now < from ? "Upcoming" : now < until ? "Open" : "Ended";
    rfc3339_format(until - grace_s > from ? until - grace_s : from, evict_at);
    json_array_append_new(
        *out,
        json_pack(
            "{s:s, s:s, s:s, s:s, s:I, s:I, s:s}", "flavor",
            PQgetvalue(res, i, 0), "available_from", PQgetvalue(res, i, 1),
            "available_until", PQgetvalue(res, i, 2), "state", state,
            "opens_in_s", (json_int_t)(now < from ? from - now : 0),
            "time_left_s",
            (json_int_t)(now < until ? until - (now > from ? now : from) : 0),
            "evictions_from", evict_at));
  }
  PQclear(res);
  return GG_OK;
}
