/*
 * loop.c — leader election and the admission cycle.
 *
 * The loop has its own connection (not the request pool): the advisory
 * lock that makes it leader lives as long as that session, so a leader
 * that dies — even by kill -9 — releases it when PostgreSQL sees the
 * connection close, and a follower, retrying every second, takes over.
 *
 * The leader keeps the admission state in memory (control/admission.c):
 * loaded in full when it becomes leader, current from the change feed
 * after that, reconciled with a full read every
 * GPUGATE_ADMISSION_RECONCILE_S.
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
#include "control/admission.h"
#include "lib/log.h"
#include "control/billing_pull.h"
#include "control/dispatch.h"
#include "control/loop.h"
#include "lib/metrics.h"

/* arbitrary constant: "gpugate admission leader" */
#define LEADER_LOCK "7301002"
#define FOLLOWER_RETRY_MS 1000

struct loop {
  const struct control_config *cfg;
  pthread_t thread;
  atomic_bool stop;
  int wake[2];         /* pipe: loop_stop() wakes the poll */
  struct db_conn conn; /* the loop's own connection */
  bool leader;
  long long costs_at_ms; /* metrics: last team cost refresh (0: never) */
  struct admission *adm; /* the leader's admission state */
  long long reconciled_at_ms;
  long long published_at_ms; /* last round of queue positions */
  struct billing_pull *pull; /* the leader's BigQuery pull; NULL: off */
  struct dispatch *dispatch; /* poked when a cycle admits; NULL: none */
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
    admission_reset(l->adm);
  }
  l->leader = false;
}

/* Team spend gauges are re-read at most every TEAM_COSTS_MS; failures
 * are logged and never fail a cycle. */
#define TEAM_COSTS_MS 30000

/* Queue positions published per round: a cycle that moved the head of a
 * long queue publishes over the next rounds, nearest the head first.
 * Rounds are at least an admission interval apart: under churn every cycle
 * moves most of a long queue, and publishing after each one rewrote
 * ~2,000 rows per cycle (the Kueue-shape bench: 1.08 M rows, 7.8 s of
 * PostgreSQL's time in a 2-minute run). */
#define PUBLISH_MAX_ROWS 20000

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
  admission_reset(l->adm); /* loaded in full by the first cycle */
  l->reconciled_at_ms = now_ms();
  log_msg(LOG_INFO, "admission: this replica is the leader");
  return 0;
}

/* One cycle, then the positions it moved and, when due, a
 * reconciliation. Returns 1 when another should follow at once, 0, or
 * -1. */
static int cycle(struct loop *l)
{
  struct admission_result r;
  char err[256] = "";
  long drift = 0;
  int again, left;

  again = admission_cycle(l->adm, &l->conn, &r, err, sizeof(err));
  if (again < 0) {
    log_msg(LOG_WARN, "admission: cycle failed: %s", err);
    return -1;
  }
  if (r.admitted > 0) /* committed: their creates are in the outbox */
    dispatch_poke(l->dispatch);
  /* positions only from a state that holds the cycle's own writes, and
   * at most once an interval (the wait below comes back for them) */
  left = 0;
  if (again == 0 &&
      now_ms() - l->published_at_ms >= l->cfg->admission_interval_ms) {
    left =
        admission_publish(l->adm, &l->conn, PUBLISH_MAX_ROWS, err, sizeof(err));
    l->published_at_ms = now_ms();
  }
  if (left < 0)
    log_msg(LOG_WARN, "admission: publishing queue positions: %s", err);
  if (now_ms() - l->reconciled_at_ms >= l->cfg->admission_reconcile_s * 1000) {
    l->reconciled_at_ms = now_ms();
    if (admission_reconcile(l->adm, &l->conn, &drift, err, sizeof(err))) {
      log_msg(LOG_WARN, "admission: reconciliation failed: %s", err);
      return -1;
    }
    metrics_admission_drift(drift);
    if (drift > 0)
      again = 1; /* decide again on the repaired state */
  }
  return again > 0 || left > 0 ? 1 : 0;
}

/*
 * Read the notifications waiting on the loop's session. Returns true when
 * one of them is more than a submission (a job finished, was cancelled or
 * moved in Batch; the configuration changed): something that can free
 * quota or change a decision.
 */
static bool drain_notes(struct loop *l)
{
  PGnotify *note;
  bool news = false;

  if (!PQconsumeInput(l->conn.pg))
    return true; /* the next step notices the broken connection */
  while ((note = PQnotifies(l->conn.pg)) != NULL) {
    if (!note->extra || strcmp(note->extra, "submit") != 0)
      news = true;
    PQfreemem(note);
  }
  return news;
}

/* Wait up to ms for a notification or loop_stop(). */
static void wait_for(struct loop *l, long ms)
{
  struct pollfd fds[2];
  int n = 1;
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
  if (n == 2 && (fds[1].revents & POLLIN))
    drain_notes(l);
}

/*
 * A cycle that wrote decisions is followed by another at once (it reads
 * its own writes back; requeued victims' preemptors are decided then) —
 * unless only submissions arrived, which wait until PACE times the
 * cycle's own length has passed since it ended. A cycle still costs the
 * size of the state (building the scheduler's input passes over every
 * active job), and back to back under a stream of submissions the loop
 * took a whole core from the requests, more as the backlog grew. Paced,
 * the jobs that arrive meanwhile are decided together in the next cycle,
 * so a cycle's cost is shared by more jobs the longer it takes. Anything
 * that can free quota or change a decision (a finish, a cancellation, a
 * Batch state, a configuration change, loop_stop()) ends the pause.
 */
#define PACE 1

static void pause_after(struct loop *l, long ms)
{
  long long until = now_ms() + ms;
  struct pollfd fds[2] = {{.fd = l->wake[0], .events = POLLIN},
                          {.fd = PQsocket(l->conn.pg), .events = POLLIN}};

  /* notifications that came in during the cycle are already in libpq's
   * queue, where poll() does not see them */
  if (drain_notes(l))
    return;
  while (!atomic_load(&l->stop) && ms > 0) {
    if (poll(fds, 2, (int)ms) < 0 && errno != EINTR)
      return;
    if (fds[0].revents & POLLIN)
      return; /* loop_stop(): the loop sees its flag next */
    if (fds[1].revents & (POLLERR | POLLHUP | POLLNVAL))
      return; /* the next cycle notices the broken connection */
    if ((fds[1].revents & POLLIN) && drain_notes(l))
      return;
    ms = (long)(until - now_ms());
  }
}

static void *run(void *arg)
{
  struct loop *l = arg;
  char err[256];

  while (!atomic_load(&l->stop)) {
    int again = 0;
    long long t0;
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
    t0 = now_ms();
    again = cycle(l);
    if (again > 0) {
      long ms = (long)(now_ms() - t0) * PACE;
      pause_after(l, ms < l->cfg->admission_interval_ms
                         ? ms
                         : l->cfg->admission_interval_ms);
    }
    if (again >= 0)
      refresh_team_costs(l);
    billing_pull_tick(l->pull, l->leader);
    if (again < 0 && PQstatus(l->conn.pg) != CONNECTION_OK)
      disconnect(l);
    if (again <= 0)
      wait_for(l,
               again < 0 ? FOLLOWER_RETRY_MS : l->cfg->admission_interval_ms);
  }
  disconnect(l);
  return NULL;
}

struct loop *loop_start(const struct control_config *cfg,
                        struct dispatch *dispatch)
{
  struct loop *l = calloc(1, sizeof(*l));

  if (!l)
    return NULL;
  l->cfg = cfg;
  l->dispatch = dispatch;
  atomic_init(&l->stop, false);
  l->adm = admission_new(strcmp(cfg->batch_backend, "gcp") == 0,
                         cfg->capacity_window_grace_s);
  if (!l->adm || pipe(l->wake) != 0) {
    admission_free(l->adm);
    free(l);
    return NULL;
  }
  l->pull = billing_pull_start(cfg);
  if (pthread_create(&l->thread, NULL, run, l) != 0) {
    billing_pull_stop(l->pull);
    close(l->wake[0]);
    close(l->wake[1]);
    admission_free(l->adm);
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
  billing_pull_stop(l->pull);
  close(l->wake[0]);
  close(l->wake[1]);
  admission_free(l->adm);
  free(l);
}
