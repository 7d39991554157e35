/*
 * batch_sync.c (db) — what the sync reads about the Batch jobs gpugate
 * wants (the regions, the active and overlapping Batch jobs, the orphans,
 * the unseen), and Flex Start jobs that waited past max_wait_s (failover
 * or backoff). The outbox and the dispatcher's side are in batch.c, what
 * Batch reports in batch_report.c.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/batch.h"

/* ---- what the sync reads ---------------------------------------------- */

static const char sql_regions[] =
    "SELECT coalesce(json_agg(DISTINCT location), '[]') FROM jobs "
    "WHERE batch_job_name IS NOT NULL AND location IS NOT NULL AND state IN "
    "('ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING')";

static json_t *json_of(struct db_conn *c, const char *sql, int n,
                       const char *const *params, char *err, size_t errlen)
{
  PGresult *res = db_query(c, sql, n, params, err, errlen);
  json_t *out;

  if (!res)
    return NULL;
  out = json_loads(PQgetvalue(res, 0, 0), 0, NULL);
  PQclear(res);
  return out;
}

static const char sql_active[] =
    "SELECT coalesce(json_object_agg(batch_job_name, coalesce(batch_state, "
    "'')), '{}') FROM jobs WHERE location = $1 AND batch_job_name IS NOT "
    "NULL AND state IN ('ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING')";

json_t *db_batch_active(struct db_conn *c, const char *region, char *err,
                        size_t errlen)
{
  const char *params[1] = {region};

  return json_of(c, sql_active, 1, params, err, errlen);
}

/* Losers seen running beside their winner, and copies whose cancel is in
 * the outbox and whose end Batch has not yet reported (the invariant: the
 * job's cancel or eviction waits for it). */
static const char sql_overlapping[] =
    "SELECT coalesce(json_object_agg(c.batch_job_id, true), '{}') FROM "
    "batch_copies c WHERE c.region = $1 AND (c.overlap_since IS NOT NULL "
    "OR (c.ended_at IS NULL AND EXISTS (SELECT 1 FROM batch_ops o "
    "WHERE o.job_id = c.job_id AND o.attempt = c.attempt "
    "AND o.op = 'cancel' AND o.batch_job_id = c.batch_job_id)))";

json_t *db_batch_overlapping(struct db_conn *c, const char *region, char *err,
                             size_t errlen)
{
  const char *params[1] = {region};

  return json_of(c, sql_overlapping, 1, params, err, errlen);
}

json_t *db_batch_regions(struct db_conn *c, char *err, size_t errlen)
{
  return json_of(c, sql_regions, 0, NULL, err, errlen);
}

/*
 * Why gpugate does not want each listed Batch job of its deployment: no
 * such gpugate job (or an attempt it never reached), an attempt already
 * superseded, a job already terminal, or a raced copy that lost. A job with an
 * outbox row for that attempt is being handled (a cancel is on its way) and is
 * never swept; "pending" when the row is this Batch job's own create, whose
 * outcome its dispatcher records (the sync leaves it alone).
 */
static const char sql_orphans[] =
    "SELECT coalesce(json_agg(json_build_object('name', l.name, 'why', "
    "v.why)), '[]') FROM json_to_recordset($1::json) AS l(name text, id "
    "text, attempt int, base text) LEFT JOIN jobs j ON j.id = l.id "
    "CROSS JOIN LATERAL (SELECT CASE "
    "WHEN j.id IS NULL THEN 'unknown' "
    "WHEN EXISTS (SELECT 1 FROM batch_ops o WHERE o.job_id = j.id "
    "AND o.attempt = l.attempt AND o.op = 'create' "
    "AND o.batch_job_id = l.base) THEN 'pending' "
    "WHEN EXISTS (SELECT 1 FROM batch_ops o WHERE o.job_id = j.id "
    "AND o.attempt = l.attempt) THEN NULL "
    "WHEN j.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED') THEN 'terminal' "
    "WHEN j.attempt > l.attempt THEN 'superseded' "
    "WHEN j.attempt < l.attempt THEN 'unknown' "
    "WHEN j.batch_job_name IS NOT NULL AND l.base <> "
    "regexp_replace(j.batch_job_name, '^.*/', '') THEN 'race_loser' "
    "ELSE NULL END AS why) v WHERE v.why IS NOT NULL";

json_t *db_batch_orphans(struct db_conn *c, json_t *listed, char *err,
                         size_t errlen)
{
  char *text = json_dumps(listed, JSON_COMPACT);
  const char *params[1] = {text};
  json_t *out;

  if (!text) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  out = json_of(c, sql_orphans, 1, params, err, errlen);
  free(text);
  return out;
}

/* Every region gpugate may have Batch jobs in: its flavors' locations and
 * its active jobs' (a job's own location list narrows a flavor's). */
static const char sql_all_regions[] =
    "SELECT coalesce(json_agg(DISTINCT r), '[]') FROM ("
    "SELECT json_array_elements_text(spec->'locations') AS r FROM flavors "
    "WHERE json_typeof(spec->'locations') = 'array' UNION "
    "SELECT location FROM jobs WHERE batch_job_name IS NOT NULL AND "
    "location IS NOT NULL AND state IN ('ADMITTED', 'QUEUED', 'RUNNING', "
    "'EVICTING')) x";

json_t *db_batch_all_regions(struct db_conn *c, char *err, size_t errlen)
{
  return json_of(c, sql_all_regions, 0, NULL, err, errlen);
}

static const char sql_unseen[] =
    "SELECT coalesce(json_agg(batch_job_name), '[]') FROM jobs "
    "WHERE location = $1 AND batch_job_name IS NOT NULL "
    "AND state IN ('QUEUED', 'RUNNING', 'EVICTING') "
    "AND queued_at < now() - $3::int * interval '1 second' "
    "AND NOT (batch_job_name = ANY (ARRAY(SELECT json_array_elements_text("
    "$2::json))))";

json_t *db_batch_unseen(struct db_conn *c, const char *region, json_t *seen,
                        int grace_s, char *err, size_t errlen)
{
  char grace[16], *names = json_dumps(seen, JSON_COMPACT);
  const char *params[3] = {region, names, grace};
  json_t *out;

  if (!names)
    return NULL;
  snprintf(grace, sizeof(grace), "%d", grace_s);
  out = json_of(c, sql_unseen, 3, params, err, errlen);
  free(names);
  return out;
}

/* ---- DWS: Flex Start that waited too long ------------------------------- */

/* A job whose cancel is pending waits where it is for Batch to confirm:
 * moved on, its next attempt would be created (failover) or admitted again
 * (backoff) with nothing left to cancel it. */
static const char sql_flex_expired[] =
    "SELECT j.id, j.location, j.location_index, j.spec->'locations', "
    "f.spec->'locations', j.batch_job_name, j.backoffs, "
    "coalesce(f.spec->>'multi_region', 'failover') = 'race' "
    "FROM jobs j JOIN flavors f ON f.name = j.flavor "
    "WHERE j.state = 'QUEUED' AND NOT j.cancel_requested "
    "AND coalesce(j.batch_state, 'QUEUED') = "
    "'QUEUED' AND f.spec->>'provisioning_model' = "
    "'FLEX_START' AND j.queued_at < now() - "
    "(f.spec->>'max_wait_s')::bigint * interval '1 second' "
    "ORDER BY j.queued_at LIMIT 100 FOR UPDATE OF j SKIP LOCKED";

/* The next attempt waits for capacity in the next location. */
static const char sql_flex_move[] =
    "UPDATE jobs SET state = 'ADMITTED', attempt = attempt + 1, "
    "location = $2, location_index = $3::int, batch_job_name = NULL, "
    "batch_state = NULL, queued_at = NULL, updated_at = now() "
    "WHERE id = $1";

/* No location left: wait before trying again. The quota goes back only
 * when the Batch job of this attempt (or each raced copy) is reported
 * ended or absent (the invariant, as for an eviction: the job is EVICTING
 * until then, and db_batch_requeue makes it PENDING, Backoff); it may
 * still get its capacity meanwhile. The backoff counts from now. */
static const char sql_flex_backoff[] =
    "UPDATE jobs SET state = 'EVICTING', reason = 'Backoff', "
    "backoffs = backoffs + 1, backoff_until = now() + "
    "least(3600, 60 * power(2, backoffs)) * interval '1 second', "
    "updated_at = now() WHERE id = $1";

/* The allowed locations of a job in a flavor, in the flavor's order. */
static json_t *candidates(json_t *job_locs, json_t *flavor_locs)
{
  json_t *out = json_array(), *loc;
  size_t i, j;

  json_array_foreach (flavor_locs, i, loc) {
    bool ok = json_array_size(job_locs) == 0;
    for (j = 0; j < json_array_size(job_locs) && !ok; j++)
      ok = json_equal(loc, json_array_get(job_locs, j));
    if (ok)
      json_array_append(out, loc);
  }
  return out;
}

int db_batch_flex_expired(struct db_conn *c, char *err, size_t errlen)
{
  PGresult *res = NULL;
  int i, n, moved = 0;

  if (db_begin(c) != GG_OK) {
    snprintf(err, errlen, "BEGIN failed");
    return -1;
  }
  if (!(res = db_query(c, sql_flex_expired, 0, NULL, err, errlen)))
    goto fail;
  n = PQntuples(res);
  for (i = 0; i < n; i++) {
    const char *id = PQgetvalue(res, i, 0);
    const char *params[3] = {id, NULL, NULL};
    json_t *job_locs = json_loads(PQgetvalue(res, i, 3), 0, NULL);
    json_t *fl_locs = json_loads(PQgetvalue(res, i, 4), 0, NULL);
    json_t *cands = candidates(job_locs, fl_locs);
    /* a race waited in all its regions at once: none is left to try */
    int next = PQgetvalue(res, i, 7)[0] == 't'
                   ? INT_MAX
                   : (int)strtol(PQgetvalue(res, i, 2), NULL, 10) + 1;
    char idx[16], msg[200];
    int rc;

    json_decref(job_locs);
    json_decref(fl_locs);
    /* the waiting Batch job of this attempt goes first */
    rc = db_batch_request_cancel(c, id, err, errlen);
    if (!rc && next != INT_MAX && next < (int)json_array_size(cands)) {
      const char *where =
          json_string_value(json_array_get(cands, (size_t)next));
      snprintf(idx, sizeof(idx), "%d", next);
      params[1] = where;
      params[2] = idx;
      snprintf(msg, sizeof(msg),
               "no Flex Start capacity in %s within max_wait_s; trying %s",
               PQgetvalue(res, i, 1), where);
      rc = db_run(c, sql_flex_move, 3, params, NULL, err, errlen) ||
           db_job_event(c, id, "QUEUED", "ADMITTED", "FlexStartWaitExceeded",
                        msg, err, errlen) ||
           db_batch_request_create(c, id, err, errlen);
    } else if (!rc) {
      snprintf(msg, sizeof(msg),
               "no Flex Start capacity in any allowed location; its Batch "
               "job is cancelled, and it backs off once Batch reports it "
               "ended");
      rc = db_run(c, sql_flex_backoff, 1, params, NULL, err, errlen) ||
           db_job_event(c, id, "QUEUED", "EVICTING", "Backoff", msg, err,
                        errlen);
    }
    json_decref(cands);
    if (rc)
      goto fail;
    moved++;
  }
  PQclear(res);
  res = NULL;
  if (db_commit(c) != GG_OK) {
    snprintf(err, errlen, "COMMIT failed");
    goto fail;
  }
  return moved;
fail:
  PQclear(res);
  db_rollback(c);
  return -1;
}

long db_batch_backlog(struct db_conn *c)
{
  char err[256];

  return db_query_long(c, "SELECT count(*) FROM batch_ops", 0, NULL, err,
                       sizeof(err));
}
