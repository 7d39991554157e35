/*
 * sched_apply.c (db) — one admission cycle's decisions written back: the
 * admissions (one statement for them all), the evictions, and the pending
 * jobs' reasons, in the cycle's transaction. The snapshot read in is
 * sched.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/batch.h"
#include "db/sched.h"

/* A job whose cancel is pending is not evicted: its quota comes back when
 * Batch confirms the cancel, and an eviction could requeue it. */
static const char sql_evict[] =
    "UPDATE jobs SET state = 'EVICTING', reason = $3, updated_at = now() "
    "WHERE id = $1 AND attempt = $2::int AND state IN ('ADMITTED', 'QUEUED', "
    "'RUNNING') AND NOT cancel_requested RETURNING state";

static const char sql_reasons[] =
    "UPDATE jobs SET reason = v.reason FROM unnest($1::text[], $2::text[]) "
    "AS v(id, reason) WHERE jobs.id = v.id AND jobs.state = 'PENDING'";

/* The first of the flavor's regions the job allows (all when it names
 * none). */
static const char *location_of(const struct db_sched *s, int job,
                               const char *flavor)
{
  json_t *spec = json_object_get(s->flavor_specs, flavor);
  json_t *allowed = json_array_get(s->pending_locations, (size_t)job), *loc;
  size_t i, j;

  json_array_foreach (json_object_get(spec, "locations"), i, loc) {
    if (json_array_size(allowed) == 0)
      return json_string_value(loc);
    for (j = 0; j < json_array_size(allowed); j++)
      if (json_equal(loc, json_array_get(allowed, j)))
        return json_string_value(loc);
  }
  return json_string_value(
      json_array_get(json_object_get(spec, "locations"), 0));
}

static const char *evict_reason(enum sched_evict_reason r)
{
  return r == SCHED_EVICT_RECLAIM   ? "Reclaimed"
         : r == SCHED_EVICT_STOPPED ? "ClusterQueueStopped"
                                    : "Preempted";
}

const char *db_sched_evict_reason_name(enum sched_evict_reason r)
{
  return evict_reason(r);
}

/* Close an array literal built by append_or_null(). */
static int append_close(char **buf, size_t *len, size_t *cap)
{
  if (*len + 2 > *cap) {
    char *b = realloc(*buf, *len + 2);
    if (!b)
      return -1;
    *buf = b;
    *cap = *len + 2;
  }
  (*buf)[(*len)++] = '}';
  (*buf)[*len] = '\0';
  return 0;
}

/* All of a cycle's admissions in one statement (jobs and their events),
 * one for their outbox rows: the count of statements does not grow with
 * the admissions. A job is admitted when this statement runs, not when
 * the cycle's transaction began (its feed, its decisions before): its
 * quota, and its usage, are held from then. Each update names the job's attempt
 * and PENDING state, so a job cancelled meanwhile is left alone. Planned per
 * call (db_query_planned()), as is sql_reasons. */
static const char sql_admit_all[] =
    "WITH v AS (SELECT * FROM unnest($1::text[], $2::int[], $3::text[], "
    "$4::text[], $5::boolean[], $6::numeric[], $7::text[], $8::int[]) "
    "AS v(id, attempt, flavor, location, borrowed, cost, message, ord)), "
    "a AS (UPDATE jobs j SET state = 'ADMITTED', reason = NULL, "
    "flavor = v.flavor, location = v.location, borrowed = v.borrowed, "
    "admitted_at = statement_timestamp(), estimated_cost_usd = v.cost, "
    "updated_at = now() "
    "FROM v WHERE j.id = v.id AND j.attempt = v.attempt "
    "AND j.state = 'PENDING' "
    "RETURNING j.id, j.team, j.attempt, v.message, v.ord), "
    "e AS (INSERT INTO job_events (job_id, team, from_state, to_state, "
    "reason, attempt, message) SELECT id, team, 'PENDING', 'ADMITTED', "
    "'QuotaReserved', attempt, message FROM a ORDER BY ord) "
    "SELECT ord, id FROM a ORDER BY ord";

/* Append one element (NULL: SQL NULL) to a PostgreSQL array literal
 * opened with '{': quoted, a quote or backslash in it escaped. */
static int append_or_null(char **buf, size_t *len, size_t *cap, const char *v)
{
  size_t n = (v ? 2 * strlen(v) : 4) + 4;
  char *o;

  if (*len + n + 2 > *cap) {
    size_t ncap = (*cap + n) * 2;
    char *b = realloc(*buf, ncap);
    if (!b)
      return -1;
    *buf = b;
    *cap = ncap;
  }
  o = *buf + *len;
  if (*len > 1)
    *o++ = ',';
  if (!v) {
    memcpy(o, "NULL", 4);
    o += 4;
  } else {
    *o++ = '"';
    for (; *v; v++) {
      if (*v == '"' || *v == '\\')
        *o++ = '\\';
      *o++ = *v;
    }
    *o++ = '"';
  }
  *o = '\0';
  *len = (size_t)(o - *buf);
  return 0;
}

enum {
  A_ID,
  A_ATTEMPT,
  A_FLAVOR,
  A_LOC,
  A_BORROWED,
  A_COST,
  A_MSG,
  A_ORD,
  A_N
};

static int admit_all(struct db_conn *c, const struct db_sched *s,
                     const struct sched_output *out, bool batch,
                     struct db_sched_stats *stats, char *err, size_t errlen)
{
  char *arr[A_N] = {NULL}, *ids = NULL;
  size_t len[A_N], cap[A_N], ilen = 1, icap = 2;
  const char *params[A_N];
  char num_s[48], msg[256];
  PGresult *res = NULL;
  int i, k, rc = -1;

  for (k = 0; k < A_N; k++) {
    arr[k] = malloc(2);
    if (!arr[k])
      goto out;
    memcpy(arr[k], "{", 2);
    len[k] = 1;
    cap[k] = 2;
  }
  for (i = 0; i < out->n_admissions; i++) {
    const struct sched_admission *a = &out->admissions[i];
    const char *flavor = s->flavor_names[a->flavor];
    json_t *fspec = json_object_get(s->flavor_specs, flavor);
    double price =
        json_number_value(json_object_get(fspec, "price_per_gpu_hour_usd"));
    const struct sched_job *j = &s->pending[a->job];

    if (append_or_null(&arr[A_ID], &len[A_ID], &cap[A_ID],
                       s->pending_ids[a->job]))
      goto out;
    snprintf(num_s, sizeof(num_s), "%d", s->pending_attempt[a->job]);
    if (append_or_null(&arr[A_ATTEMPT], &len[A_ATTEMPT], &cap[A_ATTEMPT],
                       num_s) ||
        append_or_null(&arr[A_FLAVOR], &len[A_FLAVOR], &cap[A_FLAVOR],
                       flavor) ||
        append_or_null(&arr[A_LOC], &len[A_LOC], &cap[A_LOC],
                       location_of(s, a->job, flavor)) ||
        append_or_null(&arr[A_BORROWED], &len[A_BORROWED], &cap[A_BORROWED],
                       a->borrowed ? "true" : "false"))
      goto out;
    snprintf(num_s, sizeof(num_s), "%.6f",
             price * (double)j->request[SCHED_GPU] *
                 (double)s->pending_max_run_s[a->job] / 3600.0);
    snprintf(msg, sizeof(msg), "quota reserved in flavor %s%s", flavor,
             a->borrowed ? " (borrowed from the cohort)" : "");
    if (append_or_null(&arr[A_COST], &len[A_COST], &cap[A_COST], num_s) ||
        append_or_null(&arr[A_MSG], &len[A_MSG], &cap[A_MSG], msg))
      goto out;
    snprintf(num_s, sizeof(num_s), "%d", i);
    if (append_or_null(&arr[A_ORD], &len[A_ORD], &cap[A_ORD], num_s))
      goto out;
  }
  for (k = 0; k < A_N; k++) {
    if (append_close(&arr[k], &len[k], &cap[k]))
      goto out;
    params[k] = arr[k];
  }
  if (!(res = db_query_planned(c, sql_admit_all, A_N, params, err, errlen)))
    goto fail;
  if (!(ids = malloc(icap)))
    goto out;
  memcpy(ids, "{", 2);
  for (i = 0; i < PQntuples(res); i++) {
    k = (int)strtol(PQgetvalue(res, i, 0), NULL, 10);
    stats->admitted++;
    if (stats->admission_written && k >= 0 && k < out->n_admissions)
      stats->admission_written[k] = true;
    if (append_or_null(&ids, &ilen, &icap, PQgetvalue(res, i, 1)))
      goto out;
  }
  if (append_close(&ids, &ilen, &icap))
    goto out;
  if (batch && stats->admitted &&
      db_batch_request_create_many(c, ids, err, errlen))
    goto fail;
  rc = 0;
  goto done;
out:
  snprintf(err, errlen, "out of memory");
fail:
done:
  PQclear(res);
  for (k = 0; k < A_N; k++)
    free(arr[k]);
  free(ids);
  return rc;
}

int db_sched_apply(struct db_conn *c, const struct db_sched *s,
                   const struct sched_output *out, bool batch,
                   struct db_sched_stats *stats, char *err, size_t errlen)
{
  char attempt[16], msg[256];
  const char *params[6];
  char *ids = NULL, *reasons = NULL;
  size_t ilen = 1, icap = 0, rlen = 1, rcap = 0;
  int i, rows, rc = -1;

  {
    bool *aw = stats->admission_written, *ew = stats->eviction_written;
    memset(stats, 0, sizeof(*stats));
    stats->admission_written = aw;
    stats->eviction_written = ew;
  }
  if (out->n_admissions && admit_all(c, s, out, batch, stats, err, errlen))
    goto out;
  for (i = 0; i < out->n_evictions; i++) {
    const struct sched_eviction *e = &out->evictions[i];
    const char *reason = evict_reason(e->reason);

    int withdrawn = 1;

    snprintf(attempt, sizeof(attempt), "%d", s->admitted_attempt[e->job]);
    /* the outbox row first: the dispatcher locks it before the job row */
    if (batch)
      withdrawn = db_batch_withdraw_create(
          c, s->admitted_ids[e->job], s->admitted_attempt[e->job], err, errlen);
    if (withdrawn < 0)
      goto out;
    params[0] = s->admitted_ids[e->job];
    params[1] = attempt;
    params[2] = reason;
    if (db_run(c, sql_evict, 3, params, &rows, err, errlen))
      goto out;
    if (!rows)
      continue;
    stats->evicted++;
    if (stats->eviction_written)
      stats->eviction_written[i] = true;
    if (e->preemptor >= 0)
      snprintf(msg, sizeof(msg), "%s to make room for job %s",
               e->reason == SCHED_EVICT_RECLAIM
                   ? "its cluster queue's borrowed quota was reclaimed"
                   : "preempted by a higher-priority job",
               s->pending_ids[e->preemptor]);
    else
      snprintf(msg, sizeof(msg), "cluster queue %s is draining",
               s->cq_names[s->admitted[e->job].cq]);
    if (db_job_event(c, s->admitted_ids[e->job], s->admitted_state[e->job],
                     "EVICTING", reason, msg, err, errlen))
      goto out;
    if (!withdrawn) {
      /* a Batch job exists: cancel it; the eviction completes when Batch
       * confirms */
      if (db_batch_request_cancel(c, s->admitted_ids[e->job], err, errlen))
        goto out;
      continue;
    }
    if (db_batch_requeue(c, s->admitted_ids[e->job], "Requeued",
                         "evicted; waits again in its queue with its "
                         "original place",
                         &rows, err, errlen))
      goto out;
    stats->requeued += rows;
  }

  /* pending reasons that changed, in one statement */
  ids = malloc(2);
  reasons = malloc(2);
  if (!ids || !reasons)
    goto out;
  icap = rcap = 2;
  ids[0] = reasons[0] = '{';
  ids[1] = reasons[1] = '\0';
  for (i = 0; i < s->in.n_pending; i++) {
    const char *name = db_sched_reason_name(out->reasons[i]);
    if (!*name || !strcmp(name, s->pending_reason[i]))
      continue;
    if (append_or_null(&ids, &ilen, &icap, s->pending_ids[i]) ||
        append_or_null(&reasons, &rlen, &rcap, name))
      goto out;
    stats->reasons_changed++;
  }
  if (stats->reasons_changed) {
    ids[ilen++] = '}';
    ids[ilen] = '\0';
    reasons[rlen++] = '}';
    reasons[rlen] = '\0';
    params[0] = ids;
    params[1] = reasons;
    if (db_run_planned(c, sql_reasons, 2, params, NULL, err, errlen))
      goto out;
  }
  rc = 0;
out:
  free(ids);
  free(reasons);
  return rc;
}
