/*
 * loop.c — leader election and the admission cycle.
 *
 * The loop has its own connection (not the request pool): the advisory
 * lock that makes it leader lives as long as that session, so a leader
 * that dies — even by kill -9 — releases it when PostgreSQL sees the
 * connection close, and a follower, retrying every second, takes over.
 *
 * A cycle is one transaction: lock the quota configuration (concurrent
 * administrator changes wait for the commit), load the state, run the pure
 * scheduler, write its decisions. Quota can therefore never be exceeded by
 * a change that lands mid-cycle.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db/db.h"
#include "db/sched.h"
#include "db/window.h"
#include "scheduler/sched.h"
#include "server/log.h"
#include "server/loop.h"
#include "server/metrics.h"

/* arbitrary constant: "gpugate admission leader" */
#define LEADER_LOCK "7301002"
#define FOLLOWER_RETRY_MS 1000

struct loop {
  const struct config *cfg;
  pthread_t thread;
  atomic_bool stop;
  int wake[2];         /* pipe: loop_stop() wakes the poll */
  struct db_conn conn; /* the loop's own connection */
  bool leader;
  long long costs_at_ms; /* metrics: last team cost refresh (0: never) */
};

static long long now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void disconnect(struct loop *l)
{
  PQfinish(l->conn.pg);
  l->conn.pg = NULL;
  l->conn.n_prepared = 0;
  if (l->leader) {
    if (atomic_load(&l->stop))
      log_msg(LOG_INFO, "admission: leader lock released at shutdown");
    else
      log_msg(LOG_WARN, "admission: lost the leader lock with the connection");
    /* only the leader reports the queue and spend gauges */
    metrics_publish_queues(NULL);
    metrics_publish_team_costs(NULL);
    l->costs_at_ms = 0;
  }
  l->leader = false;
}

/*
 * Metrics feed (GET /metrics). After a committed cycle the leader counts
 * the decisions it wrote and publishes its view of the queues; team spend
 * is re-read at most every TEAM_COSTS_MS. Failures here are logged and
 * never fail a cycle.
 */
#define TEAM_COSTS_MS 30000

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
 * until their eviction completes (a victim requeued at once is followed
 * by another cycle at once, which publishes again).
 */
static void record_cycle(struct loop *l, const struct db_sched *s,
                         const struct sched_output *out,
                         const struct db_sched_stats *st)
{
  const struct sched_input *in = &s->in;
  struct metrics_gauges *g = metrics_gauges_new();
  long *pending =
      calloc((size_t)in->n_cqs * N_PENDING_REASONS + 1, sizeof(*pending));
  long *backoff = calloc((size_t)in->n_cqs + 1, sizeof(*backoff));
  int64_t(*use)[SCHED_MAX_FLAVORS][SCHED_NRES] =
      calloc((size_t)in->n_cqs + 1, sizeof(*use));
  double now = wall_seconds();
  char err[256];
  int i, k, r;

  for (i = 0; i < out->n_admissions; i++) {
    const struct sched_admission *a = &out->admissions[i];
    const struct sched_job *j = &in->pending[a->job];
    if (!st->admission_written || !st->admission_written[i])
      continue;
    metrics_admitted(s->cq_names[j->cq], s->flavor_names[a->flavor]);
    metrics_admission_wait(now - (double)j->created_at / 1e6);
    k = flavor_slot(&in->cqs[j->cq], a->flavor);
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
  if (!g || !pending || !backoff || !use)
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
  if (db_sched_backoff_counts(&l->conn, s, backoff, err, sizeof(err)))
    log_msg(LOG_WARN, "metrics: backoff counts: %s", err);
  for (i = 0; i < in->n_cqs; i++)
    pending[i * N_PENDING_REASONS + BACKOFF_REASON] += backoff[i];

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
  metrics_publish_queues(g);
  g = NULL;
out:
  metrics_gauges_free(g);
  free(pending);
  free(backoff);
  free(use);
}

/* Re-read team spend when TEAM_COSTS_MS have passed since the last read. */
static void refresh_team_costs(struct loop *l)
{
  char(*names)[DB_NAME_LEN] = NULL;
  double *usd = NULL;
  char err[256];
  int i, n, rc;
  struct metrics_gauges *g;

  if (l->costs_at_ms && now_ms() - l->costs_at_ms < TEAM_COSTS_MS)
    return;
  l->costs_at_ms = now_ms();
  rc = db_sched_team_costs(&l->conn, &names, &usd, &n, err, sizeof(err));
  if (rc < 0) {
    log_msg(LOG_WARN, "metrics: team costs: %s", err);
    return;
  }
  g = metrics_gauges_new();
  for (i = 0; g && i < n; i++)
    metrics_gauge_team_cost(g, names[i], usd[i]);
  if (g)
    metrics_publish_team_costs(g);
  free(names);
  free(usd);
}

static int simple(struct loop *l, const char *sql, char *val, size_t vlen)
{
  PGresult *res = PQexec(l->conn.pg, sql);
  int ok = PQresultStatus(res) == PGRES_TUPLES_OK ||
           PQresultStatus(res) == PGRES_COMMAND_OK;

  if (ok && val && vlen)
    snprintf(val, vlen, "%s", PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "");
  PQclear(res);
  return ok ? 0 : -1;
}

/* Become leader if nobody is. Returns 0 (leader or not), -1 on error. */
static int try_lead(struct loop *l)
{
  char got[8];

  if (simple(l, "SELECT pg_try_advisory_lock(" LEADER_LOCK ")", got,
             sizeof(got)))
    return -1;
  if (got[0] != 't')
    return 0;
  if (simple(l, "LISTEN gpugate_admission", NULL, 0))
    return -1;
  l->leader = true;
  log_msg(LOG_INFO, "admission: this replica is the leader");
  return 0;
}

/* One cycle. Returns 1 when another should follow at once, 0, or -1. */
static int cycle(struct loop *l)
{
  struct db_sched state;
  struct sched_output out;
  struct db_sched_stats stats;
  bool batch = strcmp(l->cfg->batch_backend, "gcp") == 0;
  char err[256] = "";
  long long t0 = now_ms();
  json_t *window_cqs = json_array(); /* evicted by windows: metrics */
  size_t i;

  memset(&out, 0, sizeof(out));
  memset(&stats, 0, sizeof(stats));
  if (!window_cqs)
    goto fail;
  /* capacity windows closing: evict first, so the load sees it */
  if (db_sched_lock(&l->conn, err, sizeof(err)) ||
      db_window_evict(&l->conn, l->cfg->capacity_window_grace_s, batch,
                      window_cqs, err, sizeof(err)) < 0 ||
      db_sched_load(&l->conn, &state, err, sizeof(err)))
    goto fail;
  if (sched_cycle(&state.in, &out) != 0) {
    snprintf(err, sizeof(err), "scheduler rejected its input");
    db_sched_free(&state);
    goto fail;
  }
  /* metrics: which decisions were written (NULL when out of memory) */
  stats.admission_written = calloc((size_t)out.n_admissions + 1, sizeof(bool));
  stats.eviction_written = calloc((size_t)out.n_evictions + 1, sizeof(bool));
  if (db_sched_apply(&l->conn, &state, &out, batch, &stats, err, sizeof(err)) ||
      db_commit(&l->conn) != GG_OK) {
    free(stats.admission_written);
    free(stats.eviction_written);
    sched_output_free(&out);
    db_sched_free(&state);
    goto fail;
  }
  metrics_admission_cycle((double)(now_ms() - t0) / 1000.0);
  for (i = 0; i < json_array_size(window_cqs); i++)
    metrics_evicted(json_string_value(json_array_get(window_cqs, i)),
                    DB_WINDOW_REASON);
  json_decref(window_cqs);
  record_cycle(l, &state, &out, &stats);
  free(stats.admission_written);
  free(stats.eviction_written);
  if (stats.admitted || stats.evicted) {
    json_t *f = json_pack("{s:i, s:i, s:i, s:i, s:i, s:I}", "pending",
                          state.in.n_pending, "admitted", stats.admitted,
                          "evicted", stats.evicted, "requeued", stats.requeued,
                          "reasons_changed", stats.reasons_changed,
                          "duration_ms", (json_int_t)(now_ms() - t0));
    log_json(LOG_INFO, "admission cycle", f);
    json_decref(f);
  }
  sched_output_free(&out);
  db_sched_free(&state);
  /* requeued victims and their preemptors are decided in the next cycle */
  return stats.requeued > 0 ? 1 : 0;
fail:
  json_decref(window_cqs);
  db_rollback(&l->conn);
  log_msg(LOG_WARN, "admission: cycle failed: %s", err);
  return -1;
}

/* Wait up to ms for a notification or loop_stop(). */
static void wait_for(struct loop *l, long ms)
{
  struct pollfd fds[2];
  int n = 1;
  PGnotify *note;
  char drain[16];

  fds[0].fd = l->wake[0];
  fds[0].events = POLLIN;
  if (l->conn.pg && l->leader) {
    fds[1].fd = PQsocket(l->conn.pg);
    fds[1].events = POLLIN;
    n = 2;
  }
  if (poll(fds, (nfds_t)n, (int)ms) < 0 && errno != EINTR)
    return;
  if (fds[0].revents & POLLIN) {
    if (read(l->wake[0], drain, sizeof(drain)) < 0) {
      /* nothing to do: the stop flag is what matters */
    }
  }
  if (n == 2 && (fds[1].revents & POLLIN)) {
    if (!PQconsumeInput(l->conn.pg))
      return; /* the next step notices the broken connection */
    while ((note = PQnotifies(l->conn.pg)) != NULL)
      PQfreemem(note);
  }
}

static void *run(void *arg)
{
  struct loop *l = arg;
  char err[256];

  while (!atomic_load(&l->stop)) {
    int again = 0;
    if (!l->conn.pg) {
      l->conn.pg = db_connect(l->cfg->direct_database_url, err, sizeof(err));
      if (!l->conn.pg) {
        wait_for(l, FOLLOWER_RETRY_MS);
        continue;
      }
    }
    if (!l->leader && try_lead(l) != 0) {
      disconnect(l);
      continue;
    }
    if (!l->leader) {
      wait_for(l, FOLLOWER_RETRY_MS);
      continue;
    }
    again = cycle(l);
    if (again >= 0)
      refresh_team_costs(l);
    if (again < 0 && PQstatus(l->conn.pg) != CONNECTION_OK)
      disconnect(l);
    if (again <= 0)
      wait_for(l,
               again < 0 ? FOLLOWER_RETRY_MS : l->cfg->admission_interval_ms);
  }
  disconnect(l);
  return NULL;
}

struct loop *loop_start(const struct config *cfg)
{
  struct loop *l = calloc(1, sizeof(*l));

  if (!l)
    return NULL;
  l->cfg = cfg;
  atomic_init(&l->stop, false);
  if (pipe(l->wake) != 0) {
    free(l);
    return NULL;
  }
  if (pthread_create(&l->thread, NULL, run, l) != 0) {
    close(l->wake[0]);
    close(l->wake[1]);
    free(l);
    return NULL;
  }
  return l;
}

void loop_stop(struct loop *l)
{
  if (!l)
    return;
  atomic_store(&l->stop, true);
  if (write(l->wake[1], "x", 1) < 0) {
    /* the poll times out soon enough */
  }
  pthread_join(l->thread, NULL);
  close(l->wake[0]);
  close(l->wake[1]);
  free(l);
}
