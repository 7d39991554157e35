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
  if (l->leader)
    log_msg(LOG_WARN, "admission: lost the leader lock with the connection");
  l->leader = false;
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

  memset(&out, 0, sizeof(out));
  if (db_sched_lock(&l->conn, err, sizeof(err)) ||
      db_sched_load(&l->conn, &state, err, sizeof(err)))
    goto fail;
  if (sched_cycle(&state.in, &out) != 0) {
    snprintf(err, sizeof(err), "scheduler rejected its input");
    db_sched_free(&state);
    goto fail;
  }
  if (db_sched_apply(&l->conn, &state, &out, batch, &stats, err, sizeof(err)) ||
      db_commit(&l->conn) != GG_OK) {
    sched_output_free(&out);
    db_sched_free(&state);
    goto fail;
  }
  metrics_admission_cycle((double)(now_ms() - t0) / 1000.0);
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
      l->conn.pg = db_connect(l->cfg->database_url, err, sizeof(err));
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
