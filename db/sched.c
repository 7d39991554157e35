/*
 * sched.c (db) — the admission loop's SQL: one snapshot of the quota
 * configuration and the active jobs in, the names of the scheduler's
 * reasons, and the leader's team-cost gauge feed. One cycle's decisions
 * out are sched_apply.c.
 *
 * Names are loaded in "C" collation order so the indices the scheduler
 * sees — and so its tie-breaks — never depend on the database's locale.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
