/*
 * sched_state.c (db) — the SQL that keeps the admission leader's state in
 * memory current: one full read of the active jobs when it becomes leader
 * (and at reconciliation), then only the rows written since (0007's
 * change_xid), and the scheduler's input built from it. What the leader
 * publishes from it (positions, counts, team spend) is sched_publish.c.
 *
 * Watermark: a read returns, with its rows, the xmin of its own snapshot.
 * Every transaction that was invisible to that read — in flight, or not
 * yet begun — has an id ≥ that xmin, so the next read's
 * "change_xid >= xmin" sees each of them once committed, in whatever
 * order they commit. Rows already held (same change_xid) are skipped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/sched_regions.h"
#include "db/sched_state.h"

/* clang-format off */
#define JOB_COLS                                                               \
  "id, attempt, cluster_queue, team, priority, can_preempt, "                  \
  "(extract(epoch FROM created_at) * 1000000)::bigint, seq, gpu, cpu_milli, "  \
  "memory_mib, coalesce(flavor, ''), "                                         \
  "coalesce((extract(epoch FROM admitted_at) * 1000000)::bigint, 0), state, "  \
  "coalesce(estimated_cost_usd, 0)::float8, coalesce(reason, ''), "            \
  "max_run_duration_s, locations, "                                            \
  "coalesce((extract(epoch FROM backoff_until) * 1000000)::bigint, 0), "       \
  "queue, coalesce(change_xid::text, '0'), "                                   \
  "state IN ('PENDING', 'ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING') "       \
  "AS active, "                                                                \
  "coalesce((extract(epoch FROM finished_at) * 1000000)::bigint, 0)"

/* One row even when no job matches: the snapshot's xmin, now and the
 * configuration version, then the jobs (NULL id: none). */
#define READ(cond)                                                             \
  "SELECT x.xmin::text, x.now_s, x.now_us, x.version, x.snap, j.* FROM "     \
  "(SELECT pg_snapshot_xmin(pg_current_snapshot()), "                          \
  "floor(extract(epoch FROM now()))::bigint, "                                \
  "(extract(epoch FROM now()) * 1000000)::bigint, "                            \
  "(SELECT version FROM admission_config_version WHERE id = 1), "              \
  "pg_current_snapshot()::text) "                                              \
  "x(xmin, now_s, now_us, version, snap) LEFT JOIN LATERAL (SELECT " JOB_COLS  \
  " FROM jobs WHERE " cond ") j ON true"
/* clang-format on */

/* Planned per call (db_query_planned()), as is the full read below: how
 * many rows it returns decides the plan, and a generic plan made while
 * jobs was empty (a leader that took over before the first job) read the
 * whole table on every cycle. */
#define ACTIVE_JOBS                                                            \
  "state IN ('PENDING', 'ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING')"

static const char sql_feed[] = READ("change_xid >= $1::xid8");

enum {
  F_XMIN,
  F_NOW_S,
  F_NOW_US,
  F_VERSION,
  F_SNAPSHOT,
  F_ID,
  F_ATTEMPT,
  F_CQ,
  F_TEAM,
  F_PRIO,
  F_PREEMPT,
  F_CREATED,
  F_SEQ,
  F_GPU,
  F_CPU,
  F_MEM,
  F_FLAVOR,
  F_ADMITTED_AT,
  F_STATE,
  F_EST,
  F_REASON,
  F_MAX_RUN,
  F_LOCS,
  F_BACKOFF,
  F_QUEUE,
  F_XID,
  F_ACTIVE,
  F_FINISHED
};

static int64_t num(const PGresult *r, int row, int col)
{
  return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static void copy(char *dst, size_t n, const PGresult *r, int row, int col)
{
  snprintf(dst, n, "%s", PQgetvalue(r, row, col));
}

/* Row → job, its names those of st; locations borrowed from the result
 * (put() copies them). Returns 0, or -1 when out of memory. */
static int job_of(struct sched_state *st, const PGresult *r, int row,
                  struct sched_state_job *j)
{
  memset(j, 0, sizeof(*j));
  copy(j->id, sizeof(j->id), r, row, F_ID);
  j->attempt = (int)num(r, row, F_ATTEMPT);
  copy(j->state, sizeof(j->state), r, row, F_STATE);
  copy(j->reason, sizeof(j->reason), r, row, F_REASON);
  if (!(j->team = sched_state_name(st, PQgetvalue(r, row, F_TEAM))) ||
      !(j->queue = sched_state_name(st, PQgetvalue(r, row, F_QUEUE))) ||
      !(j->cq = sched_state_name(st, PQgetvalue(r, row, F_CQ))) ||
      !(j->flavor = sched_state_name(st, PQgetvalue(r, row, F_FLAVOR))))
    return -1;
  j->priority = (int32_t)num(r, row, F_PRIO);
  j->can_preempt = PQgetvalue(r, row, F_PREEMPT)[0] == 't';
  j->created_at = num(r, row, F_CREATED);
  j->seq = num(r, row, F_SEQ);
  j->request[SCHED_GPU] = num(r, row, F_GPU);
  j->request[SCHED_CPU] = num(r, row, F_CPU);
  j->request[SCHED_MEM] = num(r, row, F_MEM);
  j->admitted_at_us = num(r, row, F_ADMITTED_AT);
  j->backoff_until = num(r, row, F_BACKOFF);
  j->max_run_s = num(r, row, F_MAX_RUN);
  j->estimated_cost = strtod(PQgetvalue(r, row, F_EST), NULL);
  j->locations =
      PQgetisnull(r, row, F_LOCS) ? NULL : PQgetvalue(r, row, F_LOCS);
  j->change_xid = strtoull(PQgetvalue(r, row, F_XID), NULL, 10);
  return 0;
}

static void header_of(const PGresult *r, struct db_feed *f)
{
  f->xmin = strtoull(PQgetvalue(r, 0, F_XMIN), NULL, 10);
  f->now_s = num(r, 0, F_NOW_S);
  f->now_us = num(r, 0, F_NOW_US);
  f->config_version = num(r, 0, F_VERSION);
  /* a snapshot too long to keep (a great many transactions in flight)
   * is kept as none: what it would tell is then read as told */
  if (strlen(PQgetvalue(r, 0, F_SNAPSHOT)) < sizeof(f->snapshot))
    copy(f->snapshot, sizeof(f->snapshot), r, 0, F_SNAPSHOT);
}

/* The full read goes through a cursor in the caller's transaction, a
 * chunk at a time: a leader's load and every reconciliation hold one
 * chunk of rows, never a result (and, for the reconciliation, a second
 * state) as large as all active jobs. The cursor's query is planned when
 * it is declared. */
#define FULL_CHUNK 2000
#define STR_(x) #x
#define STR(x) STR_(x)
static const char sql_full_declare[] =
    "DECLARE gg_full NO SCROLL CURSOR FOR " READ(ACTIVE_JOBS);
static const char sql_full_fetch[] = "FETCH " STR(FULL_CHUNK) " FROM gg_full";
static const char sql_full_close[] = "CLOSE gg_full";

/* Call fn(arg, res, row) for each active job, f getting the header;
 * stop at the first fn that fails. Returns 0, or -1 with err filled. */
static int full_read(struct db_conn *c, struct db_feed *f,
                     int (*fn)(void *arg, const PGresult *r, int row),
                     void *arg, char *err, size_t errlen)
{
  PGresult *res;
  int i, n, rc = 0;
  bool first = true;

  memset(f, 0, sizeof(*f));
  if (db_run_planned(c, sql_full_declare, 0, NULL, NULL, err, errlen))
    return -1;
  do {
    if (!(res = db_query(c, sql_full_fetch, 0, NULL, err, errlen)))
      return -1;
    n = PQntuples(res);
    if (first && n > 0)
      header_of(res, f);
    first = false;
    for (i = 0; i < n && rc == 0; i++)
      if (!PQgetisnull(res, i, F_ID))
        rc = fn(arg, res, i);
    PQclear(res);
  } while (rc == 0 && n == FULL_CHUNK);
  if (rc) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  return db_run(c, sql_full_close, 0, NULL, NULL, err, errlen);
}

struct loading {
  struct sched_state *st;
  struct db_feed *f;
};

static int load_row(void *arg, const PGresult *r, int row)
{
  struct loading *l = arg;
  struct sched_state_job j;

  if (job_of(l->st, r, row, &j) || sched_state_put(l->st, &j) < 0)
    return -1;
  l->f->changed++;
  l->f->material++;
  l->f->freeing++;
  return 0;
}

int db_sched_state_load(struct db_conn *c, struct sched_state *st,
                        struct db_feed *f, char *err, size_t errlen)
{
  struct loading l = {st, f};

  sched_state_free(st);
  if (full_read(c, f, load_row, &l, err, errlen)) {
    sched_state_free(st);
    return -1;
  }
  return 0;
}

struct reconciling {
  struct sched_state *st;
  unsigned char *seen; /* by index into st: the full read has the job */
  int n_seen;
  int drift;
  db_sched_state_diff_fn *diff;
  void *arg;
};

static int reconcile_row(void *arg, const PGresult *r, int row)
{
  struct reconciling *x = arg;
  struct sched_state_job j;
  int k;

  if (job_of(x->st, r, row, &j))
    return -1;
  k = sched_state_find(x->st, j.id);
  if (k < 0 || !sched_state_job_equal(&x->st->jobs[k], &j)) {
    x->diff(x->arg, j.id, k < 0 ? NULL : &x->st->jobs[k], &j);
    x->drift++;
    if ((k = sched_state_put(x->st, &j)) < 0)
      return -1;
  }
  if (k >= x->n_seen) { /* a job put just now: past the end */
    int n = x->st->cap;
    unsigned char *seen = realloc(x->seen, (size_t)n);
    if (!seen)
      return -1;
    memset(seen + x->n_seen, 0, (size_t)(n - x->n_seen));
    x->seen = seen;
    x->n_seen = n;
  }
  x->seen[k] = 1;
  return 0;
}

int db_sched_state_reconcile(struct db_conn *c, struct sched_state *st,
                             db_sched_state_diff_fn *diff, void *arg,
                             int *drift, char *err, size_t errlen)
{
  struct reconciling x = {st, NULL, 0, 0, diff, arg};
  struct db_feed f;
  char id[sizeof(st->jobs[0].id)];
  int i;

  *drift = 0;
  if (st->n && !(x.seen = calloc((size_t)st->n, 1))) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  x.n_seen = st->n;
  if (full_read(c, &f, reconcile_row, &x, err, errlen)) {
    free(x.seen);
    return -1;
  }
  /* held in memory, not active in the database; from the end, so that
   * the job a removal moves into place i has been looked at already */
  for (i = st->n - 1; i >= 0; i--) {
    if (i < x.n_seen && x.seen[i])
      continue;
    diff(arg, st->jobs[i].id, &st->jobs[i], NULL);
    x.drift++;
    snprintf(id, sizeof(id), "%s", st->jobs[i].id);
    sched_state_remove(st, id);
  }
  free(x.seen);
  *drift = x.drift;
  return 0;
}

static bool holding(const struct sched_state_job *j)
{
  return !sched_state_pending(j) && strcmp(j->state, "EVICTING") != 0;
}

/* Whether a material change of a job (held: NULL when new) can only take
 * quota, never free it nor let an old pending job choose anew: a
 * submission, an admission, and a held job moving on (QUEUED, RUNNING) in
 * the same quota. */
static bool takes_only(const struct sched_state_job *held,
                       const struct sched_state_job *new_)
{
  int r;

  if (!held)
    return sched_state_pending(new_);
  if (sched_state_pending(held))
    return holding(new_);
  /* both jobs' names are the state's: equal names are equal pointers */
  if (!holding(held) || !holding(new_) || held->cq != new_->cq ||
      held->flavor != new_->flavor)
    return false;
  for (r = 0; r < SCHED_NRES; r++)
    if (held->request[r] != new_->request[r])
      return false;
  return true;
}

/* The same for a job that left the active set: a pending job cancelled
 * (not a preemptor) frees nothing. */
static bool gone_takes_only(const struct sched_state_job *held)
{
  return sched_state_pending(held) && !held->preempting;
}

/* New differs from held only in its pending reason (and so its
 * change_xid): the leader's own reasons coming back. */
static bool reason_only(const struct sched_state_job *held,
                        const struct sched_state_job *new_)
{
  struct sched_state_job h = *held;

  snprintf(h.reason, sizeof(h.reason), "%s", new_->reason);
  h.change_xid = new_->change_xid;
  return sched_state_job_equal(&h, new_);
}

int db_sched_state_feed(struct db_conn *c, struct sched_state *st,
                        uint64_t xmin, struct db_feed *f, char *err,
                        size_t errlen)
{
  char x[24];
  const char *params[1] = {x};
  PGresult *res;
  struct sched_state_job j;
  int i, k;

  memset(f, 0, sizeof(*f));
  snprintf(x, sizeof(x), "%llu", (unsigned long long)xmin);
  if (!(res = db_query_planned(c, sql_feed, 1, params, err, errlen)))
    return -1;
  header_of(res, f);
  for (i = 0; i < PQntuples(res); i++) {
    if (PQgetisnull(res, i, F_ID))
      continue;
    k = sched_state_find(st, PQgetvalue(res, i, F_ID));
    if (PQgetvalue(res, i, F_ACTIVE)[0] != 't') {
      if (k >= 0) {
        f->freeing += !gone_takes_only(&st->jobs[k]);
        /* a finished job's usage ends when it ended, not when we read it */
        sched_state_end(st, PQgetvalue(res, i, F_ID), num(res, i, F_FINISHED));
        f->changed++;
        f->material++;
      }
      continue;
    }
    if (k >= 0 &&
        st->jobs[k].change_xid == strtoull(PQgetvalue(res, i, F_XID), NULL, 10))
      continue;
    if (job_of(st, res, i, &j)) {
      snprintf(err, errlen, "out of memory");
      PQclear(res);
      return -1;
    }
    if (k < 0 || !reason_only(&st->jobs[k], &j)) {
      f->material++;
      f->freeing += !takes_only(k < 0 ? NULL : &st->jobs[k], &j);
    }
    if (sched_state_put(st, &j) < 0) {
      snprintf(err, errlen, "out of memory");
      PQclear(res);
      return -1;
    }
    f->changed++;
  }
  PQclear(res);
  return 0;
}

#define ALLOC(ptr, n) ((ptr) = calloc((size_t)(n) + 1, sizeof(*(ptr))))

/* a cycle's names are copied whole (memcpy: a cycle copies every job's) */
#define SAME_SIZE(a, b)                                                        \
  (sizeof(((struct db_sched *)0)->a[0]) ==                                     \
   sizeof(((struct sched_state_job *)0)->b))
_Static_assert(SAME_SIZE(admitted_ids, id) && SAME_SIZE(pending_ids, id) &&
                   SAME_SIZE(admitted_state, state) &&
                   SAME_SIZE(pending_reason, reason),
               "db_sched's name arrays are sized as sched_state_job's");

void db_sched_state_run_free(struct db_sched *run)
{
  free(run->teams);
  free(run->admitted);
  free(run->admitted_ids);
  free(run->admitted_attempt);
  free(run->admitted_state);
  free(run->pending);
  free(run->pending_ids);
  free(run->pending_attempt);
  free(run->pending_reason);
  free(run->pending_max_run_s);
  free(run->pending_state);
  free(run->old_left_out);
  json_decref(run->pending_locations);
  memset(run, 0, sizeof(*run));
}

/* A name's index in the configuration as a cluster queue, a team and a
 * flavor (-1: none of that kind), by the name's id: looked up once per
 * name, not once per job. */
struct name_index {
  int cq, team, flavor;
};

static struct name_index *index_names(const struct sched_state *st,
                                      const struct db_sched *cfg)
{
  struct name_index *x = calloc((size_t)st->n_names + 1, sizeof(*x));
  int i;

  for (i = 0; x && i < st->n_names; i++) {
    const char *s = st->names[i]->s;
    x[i].cq = db_sched_find((const char(*)[DB_NAME_LEN])cfg->cq_names,
                            cfg->in.n_cqs, s);
    x[i].team = db_sched_find((const char(*)[DB_NAME_LEN])cfg->team_names,
                              cfg->in.n_teams, s);
    x[i].flavor = db_sched_find((const char(*)[DB_NAME_LEN])cfg->flavor_names,
                                cfg->in.n_flavors, s);
  }
  return x;
}

/*
 * Team queues by the state's name ids (fair share over time): tq_first
 * [queue name id] is the first team queue of that name (-1 none), tq_next
 * chains the others, tq_team their team name ids. Built once per cycle
 * from the names (a few), so a job's team queue costs a short chain walk
 * of integer compares. NULL arrays when no cluster queue orders by usage.
 */
struct tq_index {
  int *first, *next, *team;
};

static void tq_index_free(struct tq_index *t)
{
  free(t->first);
  free(t->next);
  free(t->team);
}

static int tq_index_of(const struct sched_state *st, const struct db_sched *cfg,
                       struct tq_index *t)
{
  int i, k, n = cfg->in.n_tqs;

  memset(t, 0, sizeof(*t));
  if (n == 0)
    return 0;
  t->first = malloc(((size_t)st->n_names + 1) * sizeof(int));
  t->next = malloc((size_t)n * sizeof(int));
  t->team = malloc((size_t)n * sizeof(int));
  if (!t->first || !t->next || !t->team)
    return -1;
  for (i = 0; i < st->n_names; i++)
    t->first[i] = -1;
  for (k = n - 1; k >= 0; k--) {
    int q = -1;
    t->team[k] = -1;
    t->next[k] = -1;
    for (i = 0; i < st->n_names; i++) {
      if (!strcmp(st->names[i]->s, cfg->tq_queue[k]))
        q = i;
      if (!strcmp(st->names[i]->s, cfg->tq_team[k]))
        t->team[k] = i;
    }
    if (q >= 0 && t->team[k] >= 0) {
      t->next[k] = t->first[q];
      t->first[q] = k;
    }
  }
  return 0;
}

/* Job j's team queue index into cfg->tqs, or -1. */
static int tq_find(const struct tq_index *t, const struct sched_state_job *j)
{
  int k;

  if (!t->first)
    return -1;
  for (k = t->first[j->queue->id]; k >= 0; k = t->next[k])
    if (t->team[k] == j->team->id)
      return k;
  return -1;
}

/* The scheduler's view of job j (indices into cfg), or -1 when its
 * cluster queue is unknown (deleted meanwhile). */
static int sched_job_of(const struct name_index *x,
                        const struct sched_state_job *j, struct sched_job *sj)
{
  int r;

  memset(sj, 0, sizeof(*sj));
  sj->cq = x[j->cq->id].cq;
  sj->team = x[j->team->id].team;
  sj->priority = j->priority;
  sj->can_preempt = j->can_preempt;
  sj->created_at = j->created_at;
  sj->seq = j->seq;
  for (r = 0; r < SCHED_NRES; r++)
    sj->request[r] = j->request[r];
  sj->flavor = -1;
  sj->tq = -1;
  return sj->cq < 0 ? -1 : 0;
}

/* Which cluster queues' old pending jobs a taken_only cycle leaves out
 * (see db_sched_state_build()); x maps the jobs' names. Returns a new
 * array of n_cqs flags, or NULL when out of memory. */
static bool *leave_out(const struct sched_state *st, const struct db_sched *cfg,
                       const struct name_index *x)
{
  bool *out = calloc((size_t)cfg->in.n_cqs + 1, sizeof(*out));
  int i;

  if (!out)
    return NULL;
  for (i = 0; i < cfg->in.n_teams; i++)
    if (cfg->teams[i].hold)
      return out; /* none: a budget ties the CQs together */
  for (i = 0; i < cfg->in.n_cqs; i++) {
    const struct sched_cq *cq = &cfg->cqs[i];
    out[i] = cq->cohort < 0 && cq->strategy == SCHED_BEST_EFFORT_FIFO &&
             cq->stop == SCHED_STOP_NONE;
  }
  for (i = 0; i < st->n; i++) {
    const struct sched_state_job *j = &st->jobs[i];
    int c = x[j->cq->id].cq;
    if (c < 0 || !out[c] || j->fresh || !sched_state_pending(j))
      continue;
    if (j->preempting ||
        (j->can_preempt && cfg->cqs[c].within != SCHED_WITHIN_NEVER))
      out[c] = false;
  }
  return out;
}

int db_sched_state_build(const struct sched_state *st,
                         const struct db_sched *cfg, int64_t now_s,
                         int64_t now_us, bool taken_only, struct db_sched *run,
                         int64_t *next_backoff_us)
{
  struct sched_regions memo;
  double *price = calloc((size_t)cfg->in.n_cqs + 1, sizeof(*price));
  struct name_index *x = index_names(st, cfg);
  struct tq_index tqx = {NULL, NULL, NULL};
  int i, na = 0, np = 0, n_pending = 0, n_admitted;

  *run = *cfg; /* the configuration, borrowed */
  run->teams = NULL;
  run->admitted = NULL;
  run->admitted_ids = NULL;
  run->admitted_attempt = NULL;
  run->admitted_state = NULL;
  run->pending = NULL;
  run->pending_ids = NULL;
  run->pending_attempt = NULL;
  run->pending_reason = NULL;
  run->pending_max_run_s = NULL;
  run->pending_state = NULL;
  run->pending_locations = json_array();
  run->old_left_out = NULL;
  *next_backoff_us = 0;
  run->in.now = now_s;
  /* each side's arrays sized by its own jobs: with most jobs admitted, a
   * pending side as large as the whole state was most of a cycle's
   * memory */
  if (sched_regions_init(&memo, cfg->in.n_cqs) || tq_index_of(st, cfg, &tqx) ||
      !x || (taken_only && !(run->old_left_out = leave_out(st, cfg, x))))
    goto oom;
  for (i = 0; i < st->n; i++)
    n_pending += sched_state_pending(&st->jobs[i]);
  /* a pending job's estimate: its CQ's dearest flavor, once per CQ */
  for (i = 0; price && i < cfg->in.n_cqs; i++)
    price[i] = db_sched_max_price(cfg, i);
  n_admitted = st->n - n_pending;
  if (!price || !run->pending_locations ||
      !ALLOC(run->teams, cfg->in.n_teams) ||
      !ALLOC(run->admitted, n_admitted) ||
      !ALLOC(run->admitted_ids, n_admitted) ||
      !ALLOC(run->admitted_attempt, n_admitted) ||
      !ALLOC(run->admitted_state, n_admitted) ||
      !ALLOC(run->pending, n_pending) || !ALLOC(run->pending_ids, n_pending) ||
      !ALLOC(run->pending_attempt, n_pending) ||
      !ALLOC(run->pending_reason, n_pending) ||
      !ALLOC(run->pending_max_run_s, n_pending) ||
      !ALLOC(run->pending_state, n_pending))
    goto oom;
  if (cfg->in.n_teams)
    memcpy(run->teams, cfg->teams,
           (size_t)cfg->in.n_teams * sizeof(*run->teams));

  for (i = 0; i < st->n; i++) {
    const struct sched_state_job *j = &st->jobs[i];
    struct sched_job *sj;
    json_t *locs;

    if (!sched_state_pending(j)) {
      sj = &run->admitted[na];
      /* as db_sched_load: the estimate counts even when the flavor or
       * CQ is gone */
      sched_job_of(x, j, sj);
      if (sj->cq >= 0 && cfg->cqs[sj->cq].usage_fs)
        sj->tq = tq_find(&tqx, j);
      if (sj->team >= 0)
        run->teams[sj->team].spent += j->estimated_cost;
      if (sj->cq < 0)
        continue;
      sj->flavor = x[j->flavor->id].flavor;
      if (sj->flavor < 0)
        continue;
      sj->admitted_at = j->admitted_at_us / 1000000;
      sj->evicting = !strcmp(j->state, "EVICTING");
      memcpy(run->admitted_ids[na], j->id, sizeof(j->id));
      run->admitted_attempt[na] = j->attempt;
      memcpy(run->admitted_state[na], j->state, sizeof(j->state));
      na++;
      continue;
    }
    if (j->backoff_until > now_us) {
      if (!*next_backoff_us || j->backoff_until < *next_backoff_us)
        *next_backoff_us = j->backoff_until;
      continue;
    }
    if (run->old_left_out && !j->fresh && x[j->cq->id].cq >= 0 &&
        run->old_left_out[x[j->cq->id].cq])
      continue;
    sj = &run->pending[np];
    if (sched_job_of(x, j, sj))
      continue;
    if (cfg->cqs[sj->cq].usage_fs)
      sj->tq = tq_find(&tqx, j);
    memcpy(run->pending_ids[np], j->id, sizeof(j->id));
    run->pending_attempt[np] = j->attempt;
    memcpy(run->pending_reason[np], j->reason, sizeof(j->reason));
    run->pending_max_run_s[np] = j->max_run_s;
    run->pending_state[np] = i;
    sj->max_run_s = j->max_run_s;
    sj->preempting = j->preempting;
    sj->estimated_cost = price[sj->cq] * (double)sj->request[SCHED_GPU] *
                         (double)j->max_run_s / 3600.0;
    locs = sched_regions_get(&memo, cfg, sj->cq, j->locations,
                             &sj->excluded_flavors);
    if (!locs || json_array_append_new(run->pending_locations, locs))
      goto oom;
    np++;
  }
  run->in.n_admitted = na;
  run->in.n_pending = np;
  run->in.teams = run->teams;
  run->in.admitted = run->admitted;
  run->in.pending = run->pending;
  sched_regions_free(&memo);
  free(price);
  free(x);
  tq_index_free(&tqx);
  return 0;
oom:
  sched_regions_free(&memo);
  free(price);
  free(x);
  tq_index_free(&tqx);
  db_sched_state_run_free(run);
  return -1;
}
