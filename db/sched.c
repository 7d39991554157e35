/*
 * sched.c (db) — the admission loop's SQL: one snapshot of the quota
 * configuration and the active jobs in, one cycle's decisions out.
 *
 * Names are loaded in "C" collation order so the indices the scheduler
 * sees — and so its tie-breaks — never depend on the database's locale.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/batch.h"
#include "db/sched.h"
#include "scheduler/fairshare.h"
#include "lib/rfc3339.h"

static const char sql_lock[] =
    "LOCK TABLE cluster_queues, cluster_queue_flavors, flavors, teams "
    "IN SHARE MODE";

static const char sql_flavors[] =
    "SELECT name, spec FROM flavors ORDER BY name COLLATE \"C\"";

static const char sql_cohorts[] =
    "SELECT DISTINCT cohort COLLATE \"C\" FROM cluster_queues "
    "WHERE cohort IS NOT NULL ORDER BY 1";

static const char sql_cqs[] = "SELECT name, cohort, spec FROM cluster_queues "
                              "ORDER BY name COLLATE \"C\"";

/* spent: the team's net cost billed in USD this UTC month (from the
 * rollups of the billing export) plus the whole estimates of its jobs
 * holding quota — on the safe side: what a running job has been billed so
 * far counts in both. The billed part comes from here; the estimates are
 * added up from the admitted jobs in memory (db_sched_state_build()). */
static const char sql_teams[] =
    "SELECT t.name, t.spec->>'budget_policy', "
    "(t.spec->>'monthly_budget_usd')::float8, coalesce(b.net, 0)::float8 "
    "FROM teams t LEFT JOIN (SELECT team, sum(cost + credits) net "
    "FROM cost_rollups WHERE currency = 'USD' "
    "AND report_day >= date_trunc('month', now() AT TIME ZONE 'UTC')::date "
    "GROUP BY team) b ON b.team = t.name ORDER BY t.name COLLATE \"C\"";

/* the team queues of the cluster queues that order by usage */
static const char sql_tqs[] =
    "SELECT q.team, q.name, q.cluster_queue, "
    "coalesce((q.spec->>'fair_sharing_weight')::float8, 1) "
    "FROM team_queues q JOIN cluster_queues c ON c.name = q.cluster_queue "
    "WHERE json_typeof(c.spec->'usage_fair_sharing') = 'object' "
    "ORDER BY q.team COLLATE \"C\", q.name COLLATE \"C\"";

/* whole seconds elapsed: a window never opens early by a rounding */
static const char sql_now[] = "SELECT floor(extract(epoch FROM now()))::bigint";

int db_sched_lock(struct db_conn *c, char *err, size_t errlen)
{
  PGresult *res;

  if (db_begin(c) != GG_OK) {
    snprintf(err, errlen, "BEGIN failed");
    return -1;
  }
  res = db_query(c, sql_lock, 0, NULL, err, errlen);
  PQclear(res);
  return res ? 0 : -1;
}

static int cmp_name(const void *a, const void *b)
{
  return strcmp((const char *)a, (const char *)b);
}

/* Index of name in a sorted table of n names, or -1. */
static int find(const char (*names)[DB_NAME_LEN], int n, const char *name)
{
  const char(*hit)[DB_NAME_LEN] =
      bsearch(name, names, (size_t)n, DB_NAME_LEN, cmp_name);

  return hit ? (int)(hit - names) : -1;
}

static int64_t num(const PGresult *r, int row, int col)
{
  return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static int64_t limit_of(json_t *q, const char *key)
{
  json_t *v = json_object_get(q, key);

  return json_is_integer(v) ? (int64_t)json_integer_value(v) : SCHED_UNLIMITED;
}

static const char *str(json_t *o, const char *key)
{
  const char *s = json_string_value(json_object_get(o, key));

  return s ? s : "";
}

/* A flavor's capacity window (stored normalised, validated on PUT); both
 * 0 when it has none. One that cannot be read (never written so) counts
 * as a window already over, so the flavor admits nothing. */
static void window_of(json_t *flavor, int64_t *from, int64_t *until)
{
  const char *f = json_string_value(json_object_get(flavor, "available_from"));
  const char *u = json_string_value(json_object_get(flavor, "available_until"));

  *from = *until = 0;
  if (!f && !u)
    return;
  if (!f || !u || rfc3339_parse(f, 1, from) || rfc3339_parse(u, 0, until) ||
      *until <= *from) {
    *from = 1;
    *until = 2;
  }
}

/* A stored cluster-queue spec as the scheduler's struct. */
static void parse_cq(struct db_sched *s, json_t *spec, int cohort,
                     struct sched_cq *cq)
{
  static const char *const res[SCHED_NRES] = {"gpu", "cpu_milli", "memory_mib"};
  json_t *fl;
  size_t i;
  int r;

  memset(cq, 0, sizeof(*cq));
  cq->cohort = cohort;
  cq->strategy = !strcmp(str(spec, "queueing_strategy"), "StrictFIFO")
                     ? SCHED_STRICT_FIFO
                     : SCHED_BEST_EFFORT_FIFO;
  cq->within =
      !strcmp(str(json_object_get(spec, "preemption"), "within_cluster_queue"),
              "LowerPriority")
          ? SCHED_WITHIN_LOWER_PRIORITY
          : SCHED_WITHIN_NEVER;
  {
    const char *rc =
        str(json_object_get(spec, "preemption"), "reclaim_within_cohort");
    cq->reclaim = !strcmp(rc, "Any")             ? SCHED_RECLAIM_ANY
                  : !strcmp(rc, "LowerPriority") ? SCHED_RECLAIM_LOWER_PRIORITY
                                                 : SCHED_RECLAIM_NEVER;
  }
  cq->when_borrow = !strcmp(str(json_object_get(spec, "flavor_fungibility"),
                                "when_can_borrow"),
                            "TryNextFlavor")
                        ? SCHED_BORROW_TRY_NEXT
                        : SCHED_BORROW;
  cq->when_preempt = !strcmp(str(json_object_get(spec, "flavor_fungibility"),
                                 "when_can_preempt"),
                             "Preempt")
                         ? SCHED_PREEMPT
                         : SCHED_PREEMPT_TRY_NEXT;
  cq->weight = json_number_value(json_object_get(spec, "fair_sharing_weight"));
  cq->min_runtime_s = (int64_t)json_integer_value(
      json_object_get(spec, "min_runtime_before_preemption_s"));
  {
    const char *sp = str(spec, "stop_policy");
    cq->stop = !strcmp(sp, "Hold")           ? SCHED_STOP_HOLD
               : !strcmp(sp, "HoldAndDrain") ? SCHED_STOP_DRAIN
                                             : SCHED_STOP_NONE;
  }
  {
    json_t *u = json_object_get(spec, "usage_fair_sharing");
    json_t *w = json_object_get(u, "resource_weights");
    cq->usage_fs = json_is_object(u);
    cq->precedence = !strcmp(str(u, "precedence"), "priority")
                         ? SCHED_PRECEDENCE_PRIORITY
                         : SCHED_PRECEDENCE_USAGE;
    cq->fs_weights[SCHED_GPU] =
        json_object_get(w, "gpu") ? json_number_value(json_object_get(w, "gpu"))
                                  : 1;
    cq->fs_weights[SCHED_CPU] = json_number_value(json_object_get(w, "cpu"));
    cq->fs_weights[SCHED_MEM] = json_number_value(json_object_get(w, "memory"));
    /* absent in a spec stored before the field: the default */
    cq->fs_min_charge_s =
        json_is_number(json_object_get(u, "min_charge_s"))
            ? json_number_value(json_object_get(u, "min_charge_s"))
            : FS_MIN_CHARGE_S;
    if (!(cq->fs_min_charge_s >= 0)) /* validation refuses it; be safe */
      cq->fs_min_charge_s = 0;
    if (cq->fs_min_charge_s > FS_MIN_CHARGE_MAX)
      cq->fs_min_charge_s = FS_MIN_CHARGE_MAX;
  }
  json_array_foreach (json_object_get(spec, "flavors"), i, fl) {
    struct sched_cq_flavor *f;
    int idx = find((const char(*)[DB_NAME_LEN])s->flavor_names, s->in.n_flavors,
                   str(fl, "name"));
    if (idx < 0 || cq->n_flavors == SCHED_MAX_FLAVORS)
      continue;
    f = &cq->flavors[cq->n_flavors++];
    f->flavor = idx;
    window_of(json_object_get(s->flavor_specs, s->flavor_names[idx]),
              &f->window_from, &f->window_until);
    for (r = 0; r < SCHED_NRES; r++) {
      json_t *q = json_object_get(json_object_get(fl, "resources"), res[r]);
      f->quota[r].nominal =
          q ? (int64_t)json_integer_value(json_object_get(q, "nominal")) : 0;
      f->quota[r].borrowing_limit = q ? limit_of(q, "borrowing_limit") : 0;
      f->quota[r].lending_limit = q ? limit_of(q, "lending_limit") : 0;
    }
  }
}

/* The most expensive flavor of a CQ, per GPU-hour: a pending job's
 * estimate before it is placed. */
static double max_price(const struct db_sched *s, const struct sched_cq *cq)
{
  double best = 0;
  int i;

  for (i = 0; i < cq->n_flavors; i++) {
    json_t *spec = json_object_get(s->flavor_specs,
                                   s->flavor_names[cq->flavors[i].flavor]);
    double p =
        json_number_value(json_object_get(spec, "price_per_gpu_hour_usd"));
    if (p > best)
      best = p;
  }
  return best;
}

/* The CQ's flavors that offer none of the regions a job allows. */
static uint32_t excluded(const struct db_sched *s, const struct sched_cq *cq,
                         json_t *allowed)
{
  uint32_t mask = 0;
  int k;

  if (json_array_size(allowed) == 0)
    return 0;
  for (k = 0; k < cq->n_flavors; k++) {
    json_t *spec = json_object_get(s->flavor_specs,
                                   s->flavor_names[cq->flavors[k].flavor]);
    json_t *loc;
    size_t i, j;
    bool any = false;

    json_array_foreach (json_object_get(spec, "locations"), i, loc) {
      for (j = 0; j < json_array_size(allowed); j++)
        any = any || json_equal(loc, json_array_get(allowed, j));
    }
    if (!any)
      mask |= 1u << k;
  }
  return mask;
}

#define ALLOC(ptr, n) ((ptr) = calloc((size_t)(n) + 1, sizeof(*(ptr))))

int db_sched_load_config(struct db_conn *c, struct db_sched *s, char *err,
                         size_t errlen)
{
  PGresult *res = NULL;
  int i, n;

  memset(s, 0, sizeof(*s));
  s->flavor_specs = json_object();
  s->pending_locations = json_array();

  if (!(res = db_query(c, sql_now, 0, NULL, err, errlen)))
    goto fail;
  s->in.now = num(res, 0, 0);
  PQclear(res);

  if (!(res = db_query(c, sql_flavors, 0, NULL, err, errlen)))
    goto fail;
  n = PQntuples(res);
  if (!ALLOC(s->flavor_names, n))
    goto oom;
  for (i = 0; i < n; i++) {
    snprintf(s->flavor_names[i], DB_NAME_LEN, "%s", PQgetvalue(res, i, 0));
    json_object_set_new(s->flavor_specs, s->flavor_names[i],
                        json_loads(PQgetvalue(res, i, 1), 0, NULL));
  }
  s->in.n_flavors = n;
  PQclear(res);

  {
    char(*cohorts)[DB_NAME_LEN] = NULL;
    PGresult *cq = NULL;
    if (!(res = db_query(c, sql_cohorts, 0, NULL, err, errlen)))
      goto fail;
    n = PQntuples(res);
    if (!ALLOC(cohorts, n))
      goto oom;
    for (i = 0; i < n; i++)
      snprintf(cohorts[i], DB_NAME_LEN, "%s", PQgetvalue(res, i, 0));
    s->in.n_cohorts = n;
    PQclear(res);
    res = NULL;
    if (!(cq = db_query(c, sql_cqs, 0, NULL, err, errlen))) {
      free(cohorts);
      goto fail;
    }
    n = PQntuples(cq);
    if (!ALLOC(s->cq_names, n) || !ALLOC(s->cqs, n) ||
        !ALLOC(s->fs_half_life, n)) {
      free(cohorts);
      PQclear(cq);
      goto oom;
    }
    s->in.n_cqs = n;
    for (i = 0; i < n; i++) {
      json_t *spec = json_loads(PQgetvalue(cq, i, 2), 0, NULL);
      int cohort = PQgetisnull(cq, i, 1)
                       ? -1
                       : find((const char(*)[DB_NAME_LEN])cohorts,
                              s->in.n_cohorts, PQgetvalue(cq, i, 1));
      snprintf(s->cq_names[i], DB_NAME_LEN, "%s", PQgetvalue(cq, i, 0));
      parse_cq(s, spec, cohort, &s->cqs[i]);
      s->fs_half_life[i] =
          s->cqs[i].usage_fs
              ? json_number_value(json_object_get(
                    json_object_get(spec, "usage_fair_sharing"), "half_life_s"))
              : 0;
      if (!(s->fs_half_life[i] > 0))
        s->cqs[i].usage_fs = false; /* validation refuses it; be safe */
      json_decref(spec);
    }
    free(cohorts);
    PQclear(cq);
  }

  if (!(res = db_query(c, sql_teams, 0, NULL, err, errlen)))
    goto fail;
  n = PQntuples(res);
  if (!ALLOC(s->team_names, n) || !ALLOC(s->teams, n))
    goto oom;
  for (i = 0; i < n; i++) {
    snprintf(s->team_names[i], DB_NAME_LEN, "%s", PQgetvalue(res, i, 0));
    s->teams[i].hold =
        !strcmp(PQgetvalue(res, i, 1), "hold") && !PQgetisnull(res, i, 2);
    s->teams[i].budget = strtod(PQgetvalue(res, i, 2), NULL);
    s->teams[i].spent = strtod(PQgetvalue(res, i, 3), NULL);
  }
  s->in.n_teams = n;
  PQclear(res);

  if (!(res = db_query(c, sql_tqs, 0, NULL, err, errlen)))
    goto fail;
  n = PQntuples(res);
  if (!ALLOC(s->tq_team, n) || !ALLOC(s->tq_queue, n) || !ALLOC(s->tqs, n))
    goto oom;
  s->in.n_tqs = 0;
  for (i = 0; i < n; i++) {
    int cq = find((const char(*)[DB_NAME_LEN])s->cq_names, s->in.n_cqs,
                  PQgetvalue(res, i, 2));
    struct sched_tq *t = &s->tqs[s->in.n_tqs];
    if (cq < 0 || !s->cqs[cq].usage_fs)
      continue;
    snprintf(s->tq_team[s->in.n_tqs], DB_NAME_LEN, "%s", PQgetvalue(res, i, 0));
    snprintf(s->tq_queue[s->in.n_tqs], DB_NAME_LEN, "%s",
             PQgetvalue(res, i, 1));
    t->cq = cq;
    t->weight = strtod(PQgetvalue(res, i, 3), NULL);
    if (!(t->weight > 0))
      t->weight = 1;
    t->score = 0;
    s->in.n_tqs++;
  }
  PQclear(res);
  s->in.tqs = s->tqs;
  s->in.cqs = s->cqs;
  s->in.teams = s->teams;
  return 0;
oom:
  snprintf(err, errlen, "out of memory");
fail:
  PQclear(res);
  db_sched_free(s);
  return -1;
}

void db_sched_free(struct db_sched *s)
{
  free(s->flavor_names);
  json_decref(s->flavor_specs);
  free(s->cq_names);
  free(s->cqs);
  free(s->team_names);
  free(s->teams);
  free(s->fs_half_life);
  free(s->tq_team);
  free(s->tq_queue);
  free(s->tqs);
  free(s->admitted);
  free(s->admitted_ids);
  free(s->admitted_attempt);
  free(s->admitted_state);
  free(s->pending);
  free(s->pending_ids);
  free(s->pending_attempt);
  free(s->pending_reason);
  free(s->pending_max_run_s);
  free(s->pending_state);
  json_decref(s->pending_locations);
  memset(s, 0, sizeof(*s));
}

const char *db_sched_reason_name(enum sched_pending_reason r)
{
  switch (r) {
  case SCHED_BUDGET_EXCEEDED:
    return "BudgetExceeded";
  case SCHED_QUEUE_STOPPED:
    return "QueueStopped";
  case SCHED_WAITING_FOR_HEAD:
    return "WaitingForHead";
  case SCHED_ADMITTED:
    return "";
  case SCHED_INSUFFICIENT_QUOTA:
  case SCHED_PREEMPTING:
  default:
    /* a preemptor waits for its victims' quota: still insufficient quota;
     * the victims' events name it */
    return "InsufficientQuota";
  }
}

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

/* Append s to a PostgreSQL array literal (values are ids and reason names:
 * no quoting needed beyond the braces, but quote anyway). */
static int append(char **buf, size_t *len, size_t *cap, const char *s)
{
  size_t n = strlen(s) + 4;

  if (*len + n + 2 > *cap) {
    size_t ncap = (*cap + n) * 2;
    char *b = realloc(*buf, ncap);
    if (!b)
      return -1;
    *buf = b;
    *cap = ncap;
  }
  *len += (size_t)snprintf(*buf + *len, *cap - *len, "%s\"%s\"",
                           *len > 1 ? "," : "", s);
  return 0;
}

/* Close an array literal built by append()/append_or_null(). */
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

/* Append one element (NULL: SQL NULL) to a PostgreSQL array literal;
 * values are names, numbers and fixed messages without quotes or
 * backslashes. */
static int append_or_null(char **buf, size_t *len, size_t *cap, const char *v)
{
  size_t n = (v ? strlen(v) : 4) + 4;

  if (*len + n + 2 > *cap) {
    size_t ncap = (*cap + n) * 2;
    char *b = realloc(*buf, ncap);
    if (!b)
      return -1;
    *buf = b;
    *cap = ncap;
  }
  *len += (size_t)snprintf(*buf + *len, *cap - *len, v ? "%s\"%s\"" : "%sNULL",
                           *len > 1 ? "," : "", v ? v : "");
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
    if (append(&ids, &ilen, &icap, PQgetvalue(res, i, 1)))
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
    if (append(&ids, &ilen, &icap, s->pending_ids[i]) ||
        append(&reasons, &rlen, &rcap, name))
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

/*
 * Metrics feed: read-only queries for the leader's gauges, run after a
 * cycle's commit on the loop's connection. Not part of admission.
 */

static const char sql_costs_exist[] =
    "SELECT to_regclass('cost_rollups') IS NOT NULL";

/* the month as db/costs.c's budget status counts it: usage days of the
 * current UTC month, USD rows only */
static const char sql_team_costs[] =
    "WITH m AS (SELECT CASE WHEN t.name IS NULL THEN '(unattributed)' "
    "ELSE r.team END AS team, r.cost + r.credits AS net "
    "FROM cost_rollups r LEFT JOIN teams t ON t.name = r.team "
    "WHERE r.currency = 'USD' "
    "AND r.report_day >= date_trunc('month', now() AT TIME ZONE 'UTC')::date) "
    "SELECT team, net FROM (SELECT t.name AS team, "
    "coalesce(sum(m.net), 0)::float8 AS net FROM teams t "
    "LEFT JOIN m ON m.team = t.name GROUP BY t.name "
    "UNION ALL SELECT '(unattributed)', sum(net)::float8 FROM m "
    "WHERE team = '(unattributed)' HAVING count(*) > 0) u "
    "ORDER BY team COLLATE \"C\"";

int db_sched_team_costs(struct db_conn *c, char (**names)[DB_NAME_LEN],
                        double **usd, int *n, char *err, size_t errlen)
{
  PGresult *res = db_query(c, sql_costs_exist, 0, NULL, err, errlen);
  int i, rows;

  *names = NULL;
  *usd = NULL;
  *n = 0;
  if (!res)
    return -1;
  rows = PQgetvalue(res, 0, 0)[0] == 't';
  PQclear(res);
  if (!rows)
    return 1;
  if (!(res = db_query(c, sql_team_costs, 0, NULL, err, errlen)))
    return -1;
  rows = PQntuples(res);
  if (!ALLOC(*names, rows) || !ALLOC(*usd, rows)) {
    free(*names);
    free(*usd);
    *names = NULL;
    *usd = NULL;
    PQclear(res);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (i = 0; i < rows; i++) {
    snprintf((*names)[i], DB_NAME_LEN, "%s", PQgetvalue(res, i, 0));
    (*usd)[i] = strtod(PQgetvalue(res, i, 1), NULL);
  }
  *n = rows;
  PQclear(res);
  return 0;
}

int db_sched_find(const char (*names)[DB_NAME_LEN], int n, const char *name)
{
  return find(names, n, name);
}

double db_sched_max_price(const struct db_sched *s, int cq)
{
  return max_price(s, &s->cqs[cq]);
}

uint32_t db_sched_excluded(const struct db_sched *s, int cq, json_t *allowed)
{
  return excluded(s, &s->cqs[cq], allowed);
}
