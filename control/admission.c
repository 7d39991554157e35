/*
 * admission.c — the admission leader's in-memory state and its cycle.
 *
 * A cycle is one transaction: lock the quota configuration (concurrent
 * administrator changes wait for the commit), bring memory up to date from
 * the change feed (and the configuration when its version moved), and —
 * only when something changed, a backoff ended, the team spend moved or a
 * cluster queue's minimum runtime makes time itself matter — run the pure
 * scheduler on the state and write its decisions. Quota can therefore
 * never be exceeded by a change that lands mid-cycle. The leader's own
 * writes come back through the feed like everyone else's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db/sched.h"
#include "db/sched_state.h"
#include "db/window.h"
#include "scheduler/sched.h"
#include "scheduler/state.h"
#include "control/admission.h"
#include "control/admission_fs.h"
#include "lib/log.h"
#include "lib/metrics.h"

/* team spend (billing rollups) is re-read this often; a budget is an
 * input that moves slowly */
#define SPEND_MS 5000

struct admission {
  bool batch;
  long window_grace_s; /* GPUGATE_CAPACITY_WINDOW_GRACE_S */
  bool loaded;
  struct db_sched cfg; /* the configuration (valid when cfg_loaded) */
  bool cfg_loaded;
  int64_t cfg_version;
  struct sched_state st;
  uint64_t xmin; /* the change feed's watermark */
  bool dirty;    /* the scheduler has not seen the current state */
  /* since the last run given every pending job, something may have freed
   * quota or changed an old job's standing (db_sched_state_build's
   * taken_only is !full) */
  bool full;
  bool positions_dirty;
  bool time_sensitive;     /* a CQ has min_runtime_before_preemption_s */
  int64_t next_backoff_us; /* earliest backoff end seen by the last run */
  long long spend_at_ms;
  char *counts_last;       /* the queue counts published last (NULL: none) */
  struct admission_fs *fs; /* fair share over time */
};

static long long now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct admission *admission_new(bool batch, long window_grace_s)
{
  struct admission *a = calloc(1, sizeof(*a));

  if (!a)
    return NULL;
  a->batch = batch;
  a->window_grace_s = window_grace_s;
  a->full = true;
  sched_state_init(&a->st);
  if (!(a->fs = admission_fs_new())) {
    free(a);
    return NULL;
  }
  return a;
}

void admission_reset(struct admission *a)
{
  if (!a)
    return;
  if (a->cfg_loaded)
    db_sched_free(&a->cfg);
  a->cfg_loaded = false;
  sched_state_free(&a->st);
  a->loaded = false;
  a->dirty = true;
  a->full = true;
  a->positions_dirty = true;
  a->next_backoff_us = 0;
  free(a->counts_last);
  a->counts_last = NULL;
  admission_fs_reset(a->fs);
}

void admission_free(struct admission *a)
{
  if (!a)
    return;
  admission_reset(a);
  admission_fs_free(a->fs);
  free(a);
}

int admission_jobs(const struct admission *a)
{
  return a->st.n;
}

/* ---- metrics ---------------------------------------------------------- */

/* Pending reasons reported for every cluster queue (0 when none), as the
 * API names them. */
static const char *const pending_reasons[] = {"InsufficientQuota",
                                              "BudgetExceeded", "QueueStopped",
                                              "WaitingForHead", "Backoff"};
#define N_PENDING_REASONS                                                      \
  ((int)(sizeof(pending_reasons) / sizeof(pending_reasons[0])))
#define BACKOFF_REASON 4

static const char *const resource_names[SCHED_NRES] = {"gpu", "cpu_milli",
                                                       "memory_mib"};

static int reason_index(const char *name)
{
  int i;

  for (i = 0; i < N_PENDING_REASONS; i++)
    if (!strcmp(pending_reasons[i], name))
      return i;
  return 0; /* db_sched_reason_name() names only the reasons above */
}

/* Slot of global flavor f in cluster queue cq's flavor list, or -1. */
static int flavor_slot(const struct sched_cq *cq, int f)
{
  int k;

  for (k = 0; k < cq->n_flavors && k < SCHED_MAX_FLAVORS; k++)
    if (cq->flavors[k].flavor == f)
      return k;
  return -1;
}

static double wall_seconds(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Count the written admissions (with their wait from created_at) and
 * evictions, and publish pending jobs per queue and reason and quota per
 * queue, flavor and resource as they stand after the cycle. Usage is the
 * loaded jobs' plus this cycle's admissions; evicted jobs still count
 * until their eviction completes. Jobs in backoff are counted from memory.
 */
static void record_cycle(const struct admission *a, const struct db_sched *s,
                         const struct sched_output *out,
                         const struct db_sched_stats *st, int64_t now_us)
{
  const struct sched_input *in = &s->in;
  struct metrics_gauges *g = metrics_gauges_new();
  long *pending =
      calloc((size_t)in->n_cqs * N_PENDING_REASONS + 1, sizeof(*pending));
  int64_t(*use)[SCHED_MAX_FLAVORS][SCHED_NRES] =
      calloc((size_t)in->n_cqs + 1, sizeof(*use));
  double now = wall_seconds();
  int *cq_of = NULL; /* by name id: the name's cluster queue index */
  int i, k, r;

  for (i = 0; i < out->n_admissions; i++) {
    const struct sched_admission *ad = &out->admissions[i];
    const struct sched_job *j = &in->pending[ad->job];
    if (!st->admission_written || !st->admission_written[i])
      continue;
    metrics_admitted(s->cq_names[j->cq], s->flavor_names[ad->flavor]);
    metrics_admission_wait(now - (double)j->created_at / 1e6);
    k = flavor_slot(&in->cqs[j->cq], ad->flavor);
    if (use && k >= 0)
      for (r = 0; r < SCHED_NRES; r++)
        use[j->cq][k][r] += j->request[r];
  }
  for (i = 0; i < out->n_evictions; i++) {
    const struct sched_eviction *e = &out->evictions[i];
    if (st->eviction_written && st->eviction_written[i])
      metrics_evicted(s->cq_names[in->admitted[e->job].cq],
                      db_sched_evict_reason_name(e->reason));
  }
  if (!g || !pending || !use)
    goto out;

  for (i = 0; i < in->n_admitted; i++) {
    const struct sched_job *j = &in->admitted[i];
    k = flavor_slot(&in->cqs[j->cq], j->flavor);
    if (k >= 0)
      for (r = 0; r < SCHED_NRES; r++)
        use[j->cq][k][r] += j->request[r];
  }
  for (i = 0; i < in->n_pending; i++)
    if (out->reasons[i] != SCHED_ADMITTED)
      pending[in->pending[i].cq * N_PENDING_REASONS +
              reason_index(db_sched_reason_name(out->reasons[i]))]++;
  /* from memory: jobs in backoff, and the old jobs a run left out (their
   * reasons are as written, unchanged by the run); each name's cluster
   * queue looked up once */
  cq_of = calloc((size_t)a->st.n_names + 1, sizeof(*cq_of));
  if (!cq_of)
    goto out;
  for (i = 0; i < a->st.n_names; i++)
    cq_of[i] = db_sched_find((const char(*)[DB_NAME_LEN])s->cq_names, in->n_cqs,
                             a->st.names[i]->s);
  for (i = 0; i < a->st.n; i++) {
    const struct sched_state_job *j = &a->st.jobs[i];
    bool backoff = j->backoff_until > now_us;
    int cq = cq_of[j->cq->id];
    if (!sched_state_pending(j) || cq < 0 ||
        (!backoff && (!s->old_left_out || !s->old_left_out[cq] || j->fresh)))
      continue;
    pending[cq * N_PENDING_REASONS +
            (backoff ? BACKOFF_REASON : reason_index(j->reason))]++;
  }

  for (i = 0; i < in->n_cqs; i++) {
    const struct sched_cq *cq = &in->cqs[i];
    for (k = 0; k < N_PENDING_REASONS; k++)
      metrics_gauge_pending(g, s->cq_names[i], pending_reasons[k],
                            (double)pending[i * N_PENDING_REASONS + k]);
    for (k = 0; k < cq->n_flavors && k < SCHED_MAX_FLAVORS; k++)
      for (r = 0; r < SCHED_NRES; r++) {
        const struct sched_quota *q = &cq->flavors[k].quota[r];
        metrics_gauge_quota(
            g, s->cq_names[i], s->flavor_names[cq->flavors[k].flavor],
            resource_names[r], (double)use[i][k][r], (double)q->nominal,
            q->borrowing_limit == SCHED_UNLIMITED ? -1
                                                  : (double)q->borrowing_limit);
      }
  }
  admission_fs_gauges(a->fs, s, g);
  metrics_publish_queues(g);
  g = NULL;
out:
  metrics_gauges_free(g);
  free(cq_of);
  free(pending);
  free(use);
}

/* ---- the cycle ---------------------------------------------------------- */

/* Whether time alone can change a decision: a minimum runtime before
 * preemption, or a flavor's capacity window (opening, closing, a job's run
 * fitting before its end). Then the scheduler runs every cycle. */
static bool time_matters(const struct db_sched *cfg)
{
  int i, k;

  for (i = 0; i < cfg->in.n_cqs; i++) {
    if (cfg->cqs[i].min_runtime_s > 0)
      return true;
    for (k = 0; k < cfg->cqs[i].n_flavors; k++)
      if (cfg->cqs[i].flavors[k].window_from ||
          cfg->cqs[i].flavors[k].window_until)
        return true;
  }
  return false;
}

/* Bring memory up to date inside the cycle's transaction. */
static int refresh(struct admission *a, struct db_conn *c, struct db_feed *f,
                   char *err, size_t errlen)
{
  bool moved = false, resync = false;

  if (!a->loaded) {
    if (db_sched_state_load(c, &a->st, f, err, errlen))
      return -1;
    a->st.log_quota = true; /* fair share over time accrues from it */
    resync = true;
    a->loaded = true;
    a->dirty = true;
    a->positions_dirty = true;
  } else if (db_sched_state_feed(c, &a->st, a->xmin, f, err, errlen)) {
    return -1;
  }
  a->xmin = f->xmin;
  if (f->material) {
    a->dirty = true;
    a->positions_dirty = true;
  }
  if (f->freeing)
    a->full = true;
  if (!a->cfg_loaded || f->config_version != a->cfg_version) {
    struct db_sched cfg;
    if (db_sched_load_config(c, &cfg, err, errlen))
      return -1;
    if (a->cfg_loaded)
      db_sched_free(&a->cfg);
    a->cfg = cfg;
    a->cfg_loaded = true;
    a->cfg_version = f->config_version;
    a->time_sensitive = time_matters(&a->cfg);
    resync = true;
    a->spend_at_ms = now_ms();
    a->dirty = true;
    a->full = true;
  } else if (now_ms() - a->spend_at_ms >= SPEND_MS) {
    if (db_sched_state_spend(c, &a->cfg, &moved, err, errlen))
      return -1;
    a->spend_at_ms = now_ms();
    a->dirty = a->dirty || moved;
    a->full = a->full || moved;
  }
  if (a->next_backoff_us && f->now_us >= a->next_backoff_us)
    a->dirty = a->full = true;
  if (a->time_sensitive && a->st.n > 0)
    a->dirty = a->full = true;
  return admission_fs_update(a->fs, c, &a->cfg, &a->st, resync, f->now_us,
                             f->snapshot, err, errlen);
}

int admission_cycle(struct admission *a, struct db_conn *c,
                    struct admission_result *r, char *err, size_t errlen)
{
  struct db_feed f;
  struct db_sched run;
  struct sched_output out;
  struct db_sched_stats stats;
  long long t0 = now_ms();
  bool built = false;
  json_t *window_cqs = json_array(); /* evicted by windows: metrics */
  size_t i;

  memset(r, 0, sizeof(*r));
  memset(&out, 0, sizeof(out));
  memset(&stats, 0, sizeof(stats));
  memset(&run, 0, sizeof(run));
  if (!window_cqs) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  /* capacity windows closing: evict first; the feed then reads it back */
  if (db_sched_lock(c, err, errlen) ||
      db_window_evict(c, a->window_grace_s, a->batch, window_cqs, err, errlen) <
          0 ||
      refresh(a, c, &f, err, errlen))
    goto fail;
  r->changed = f.changed;
  if (!a->dirty) {
    if (db_commit(c) != GG_OK) {
      snprintf(err, errlen, "COMMIT failed");
      goto fail;
    }
    metrics_admission_cycle((double)(now_ms() - t0) / 1000.0);
    json_decref(window_cqs);
    return 0;
  }
  /* the budget input as of now: a bill that just arrived holds the very
   * next job (between runs it is re-read every SPEND_MS only) */
  {
    bool moved;
    if (db_sched_state_spend(c, &a->cfg, &moved, err, errlen))
      goto fail;
    a->spend_at_ms = now_ms();
    a->full = a->full || moved;
  }
  admission_fs_scores(a->fs, &a->cfg, f.now_us);
  if (db_sched_state_build(&a->st, &a->cfg, f.now_s, f.now_us, !a->full, &run,
                           &a->next_backoff_us)) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  built = true;
  if (sched_cycle(&run.in, &out) != 0) {
    snprintf(err, errlen, "scheduler rejected its input");
    goto fail;
  }
  /* metrics: which decisions were written (NULL when out of memory) */
  stats.admission_written = calloc((size_t)out.n_admissions + 1, sizeof(bool));
  stats.eviction_written = calloc((size_t)out.n_evictions + 1, sizeof(bool));
  if (db_sched_apply(c, &run, &out, a->batch, &stats, err, errlen))
    goto fail;
  if (db_commit(c) != GG_OK) {
    snprintf(err, errlen, "COMMIT failed");
    goto fail;
  }
  a->dirty = false;
  /* the preemptors go first next cycle (scheduler/sched.c,
   * preemptors_first()); memory is as built until the next feed. An
   * eviction frees quota: the next run is given every pending job. */
  a->full = out.n_evictions > 0 || stats.admitted < out.n_admissions;
  for (i = 0; i < (size_t)run.in.n_pending; i++)
    a->st.jobs[run.pending_state[i]].preempting =
        out.reasons[i] == SCHED_PREEMPTING;
  metrics_admission_cycle((double)(now_ms() - t0) / 1000.0);
  for (i = 0; i < json_array_size(window_cqs); i++)
    metrics_evicted(json_string_value(json_array_get(window_cqs, i)),
                    DB_WINDOW_REASON);
  json_decref(window_cqs);
  window_cqs = NULL;
  record_cycle(a, &run, &out, &stats, f.now_us);
  for (i = 0; i < (size_t)run.in.n_pending; i++)
    a->st.jobs[run.pending_state[i]].fresh = false;
  r->ran = true;
  r->admitted = stats.admitted;
  r->evicted = stats.evicted;
  r->requeued = stats.requeued;
  r->pending = run.in.n_pending;
  if (stats.admitted || stats.evicted) {
    json_t *fl = json_pack("{s:i, s:i, s:i, s:i, s:i, s:I}", "pending",
                           run.in.n_pending, "admitted", stats.admitted,
                           "evicted", stats.evicted, "requeued", stats.requeued,
                           "reasons_changed", stats.reasons_changed,
                           "duration_ms", (json_int_t)(now_ms() - t0));
    log_json(LOG_INFO, "admission cycle", fl);
    json_decref(fl);
  }
  free(stats.admission_written);
  free(stats.eviction_written);
  sched_output_free(&out);
  db_sched_state_run_free(&run);
  /* requeued victims and their preemptors are decided in the next cycle;
   * after any write, the next cycle reads it back at once, so that the
   * positions published after it are those of the new state */
  return stats.requeued > 0 || stats.admitted > 0 || stats.evicted > 0 ||
                 stats.reasons_changed > 0
             ? 1
             : 0;
fail:
  db_rollback(c);
  json_decref(window_cqs);
  free(stats.admission_written);
  free(stats.eviction_written);
  sched_output_free(&out);
  if (built)
    db_sched_state_run_free(&run);
  /* memory may hold part of a feed: start again from a full read */
  admission_reset(a);
  return -1;
}

int admission_publish(struct admission *a, struct db_conn *c, int max_rows,
                      char *err, size_t errlen)
{
  int left = 0;

  if (!a->loaded)
    return 0;
  /* in a cluster queue that orders by usage, positions follow the scores
   * of the last cycle: a team queue whose place among the others changed
   * has its pending jobs placed again (only those) */
  if (a->cfg_loaded && admission_fs_order(&a->cfg, &a->st)) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (!a->positions_dirty && !a->st.fs_changed)
    return 0;
  if (db_sched_state_publish(c, &a->st, max_rows, &left, err, errlen) ||
      db_sched_state_publish_counts(c, &a->st, &a->counts_last, err, errlen))
    return -1;
  a->positions_dirty = left > 0;
  return left;
}

/* ---- reconciliation ------------------------------------------------------ */

static void log_drift(void *arg, const char *id,
                      const struct sched_state_job *mem,
                      const struct sched_state_job *db)
{
  json_t *f = json_pack("{s:s, s:s, s:i, s:s, s:i}", "job_id", id,
                        "memory_state", mem ? mem->state : "(absent)",
                        "memory_attempt", mem ? mem->attempt : 0,
                        "database_state", db ? db->state : "(absent)",
                        "database_attempt", db ? db->attempt : 0);

  (void)arg;
  log_json(LOG_WARN, "admission state drift repaired", f);
  json_decref(f);
}

static const char sql_snapshot[] =
    "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

int admission_reconcile(struct admission *a, struct db_conn *c, long *drift,
                        char *err, size_t errlen)
{
  struct db_feed f;
  int k, n;

  *drift = 0;
  if (!a->loaded)
    return 0;
  /* one snapshot: the feed brings memory to it, the full read is it */
  if (db_run(c, sql_snapshot, 0, NULL, NULL, err, errlen))
    return -1;
  if (db_sched_state_feed(c, &a->st, a->xmin, &f, err, errlen) ||
      db_sched_state_reconcile(c, &a->st, log_drift, NULL, &n, err, errlen)) {
    db_rollback(c);
    admission_reset(a);
    return -1;
  }
  db_rollback(c); /* read only */
  a->xmin = f.xmin;
  /* positions of jobs that left the queue: shown by nobody, kept by
   * nobody */
  if (db_sched_state_prune(c, &a->st, &k, err, errlen))
    return -1;
  if (f.material || n) {
    a->dirty = true;
    a->positions_dirty = true;
  }
  if (f.freeing || n)
    a->full = true;
  *drift = n;
  return 0;
}
