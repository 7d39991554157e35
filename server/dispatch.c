/*
 * dispatch.c — the Cloud Batch side of every replica: the dispatcher
 * workers that empty the outbox, and the status sync that brings Batch's
 * job states back. Both are safe on all replicas at once: dispatchers claim
 * rows with FOR UPDATE SKIP LOCKED and every state change is conditional
 * on the job's current state.
 *
 * Batch mutations draw on one budget per region for the whole deployment
 * (server/budget.c: tokens leased a few at a time from a bucket row in
 * PostgreSQL), shared by the dispatcher workers and the sweep of every
 * replica. A worker never waits for a token while holding a row: its claim
 * skips the regions whose bucket is empty, and a row it claimed without
 * getting a token goes back untouched. So one region's spent budget does
 * not hold up the others', and DISPATCH_WORKERS calls can be in flight at
 * once.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch/auth.h"
#include "batch/client.h"
#include "batch/job.h"
#include "db/batch.h"
#include "db/db.h"
#include "server/dispatch.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/budget.h"

/* calls in flight per replica: an operation (claim, call, record) takes a
 * few ms, so four workers do several hundred a second, more than four
 * regions' budgets */
#define DISPATCH_WORKERS 4
#define MAX_SKIP 64 /* regions with a spent budget a claim can skip */
#define IDLE_MS 500
#define FLEX_CHECK_MS 1000
#define SYNC_PAGE 500
#define UNSEEN_GRACE_S 30
/* A claim's lease: far longer than the calls of one operation can take
 * (token fetch and up to three Batch calls, 15 s each at most), so a live
 * dispatcher never loses its row; after a crash the row waits this long. */
#define LEASE_S 120

struct worker {
  struct dispatch *d;
  pthread_t thread;
  struct db_conn conn;
  struct batch_client *batch;
  bool listening;
  unsigned rng;     /* retry jitter (batch_backoff_ms) */
  char claimer[96]; /* this worker's name on the leases it takes */
};

struct dispatch {
  const struct config *cfg;
  atomic_bool stop;
  int wake[2];
  struct budget *mutations;          /* per region, the deployment's */
  struct batch_token_source *tokens; /* shared by every worker's client */
  struct worker dispatchers[DISPATCH_WORKERS];
  struct worker sync;
};

static long long now_us(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static int connect_db(struct worker *w, const char *listen)
{
  char err[256];

  if (w->conn.pg && PQstatus(w->conn.pg) == CONNECTION_OK)
    return 0;
  PQfinish(w->conn.pg);
  w->conn.pg = db_connect(w->d->cfg->direct_database_url, err, sizeof(err));
  w->conn.n_prepared = 0;
  w->listening = false;
  if (!w->conn.pg)
    return -1;
  if (listen) {
    PGresult *res = PQexec(w->conn.pg, listen);
    w->listening = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
  }
  return 0;
}

/* Wait up to ms for a NOTIFY on the worker's connection or a stop. */
static void wait_for(struct worker *w, long ms)
{
  struct pollfd fds[2];
  nfds_t n = 1;
  PGnotify *note;
  char drain[16];

  fds[0].fd = w->d->wake[0];
  fds[0].events = POLLIN;
  if (w->conn.pg && w->listening) {
    fds[1].fd = PQsocket(w->conn.pg);
    fds[1].events = POLLIN;
    n = 2;
  }
  if (poll(fds, n, (int)ms) < 0 && errno != EINTR)
    return;
  if ((fds[0].revents & POLLIN) && read(w->d->wake[0], drain, 1) < 0) {
    /* the stop flag is what matters */
  }
  if (n == 2 && (fds[1].revents & POLLIN) && PQconsumeInput(w->conn.pg))
    while ((note = PQnotifies(w->conn.pg)) != NULL)
      PQfreemem(note);
}

static void log_op(int level, const char *what, const struct db_batch_op *op,
                   const struct batch_result *r)
{
  json_t *f =
      json_pack("{s:s, s:s, s:i, s:s, s:I}", "job_id", op->job_id, "op", op->op,
                "attempt", op->attempt, "batch_job", op->batch_job_id,
                "http_status", (json_int_t)r->http_status);

  if (f && r->error.message[0])
    json_object_set_new(f, "error", json_string(r->error.message));
  log_json(level, what, f);
  json_decref(f);
}

static int record_failure(struct worker *w, const struct db_batch_op *op,
                          const struct batch_result *r, char *err,
                          size_t errlen)
{
  if (r->error.retryable) {
    long delay = batch_backoff_ms(op->tries, r->error.retry_after_ms, &w->rng);
    log_op(LOG_WARN, "batch call failed; will retry", op, r);
    return db_batch_retry(&w->conn, op, delay, r->error.message, err, errlen);
  }
  log_op(LOG_ERROR, "batch call rejected", op, r);
  return db_batch_give_up(&w->conn, op, r->error.message, err, errlen);
}

static int do_create(struct worker *w, const struct db_batch_op *op, char *err,
                     size_t errlen)
{
  struct batch_job_input in;
  struct batch_result r;
  char name[512];
  json_t *body;
  int rc;

  memset(&in, 0, sizeof(in));
  in.job_id = op->job_id;
  in.attempt = op->attempt;
  in.team = op->team;
  in.queue = op->queue;
  in.cost_center = op->cost_center;
  in.region = op->region;
  in.flavor = op->flavor;
  in.flavor_spec = op->flavor_spec;
  in.job_spec = op->job_spec;
  in.max_run_duration_s = (long)op->max_run_duration_s;
  in.pubsub_topic = w->d->cfg->batch_pubsub_topic;
  in.service_account = w->d->cfg->batch_service_account;
  in.deployment = w->d->cfg->deployment;
  body = batch_job_body(&in);
  if (!body) {
    memset(&r, 0, sizeof(r));
    snprintf(r.error.message, sizeof(r.error.message),
             "the job could not be expressed as a Batch job");
    return record_failure(w, op, &r, err, errlen);
  }
  rc = batch_client_create(w->batch, op->region, op->batch_job_id,
                           op->request_id, body, &r);
  json_decref(body);
  metrics_batch_call("create", r.http_status);
  if (rc != 0) {
    rc = record_failure(w, op, &r, err, errlen);
  } else {
    const char *given = json_string_value(json_object_get(r.json, "name"));
    if (given)
      snprintf(name, sizeof(name), "%s", given);
    else
      batch_job_name(batch_client_project(w->batch), op->region,
                     op->batch_job_id, name, sizeof(name));
    rc = db_batch_done_create(&w->conn, op, name, err, errlen);
    {
      char id[32];
      int attempt, k;
      if (rc == 0 &&
          batch_job_id_parse(op->batch_job_id, id, sizeof(id), &attempt, &k) ==
              0 &&
          k == 1)
        metrics_batch_race("started", NULL, 0);
    }
  }
  batch_result_clear(&r);
  return rc;
}

static int do_cancel(struct worker *w, const struct db_batch_op *op, char *err,
                     size_t errlen)
{
  struct batch_result r;
  char name[512];
  int rc;

  batch_job_name(batch_client_project(w->batch), op->region, op->batch_job_id,
                 name, sizeof(name));
  rc = batch_client_cancel(w->batch, name, &r);
  metrics_batch_call("cancel", r.http_status);
  if (rc != 0 && !r.error.retryable && !r.error.not_found) {
    /* Batch will not cancel it: if it has just finished, its outcome
     * stands (a job that succeeded is not run again); otherwise delete */
    const char *state;
    batch_result_clear(&r);
    rc = batch_client_get(w->batch, name, &r);
    metrics_batch_call("get", r.http_status);
    state = rc == 0 ? json_string_value(json_object_get(
                          json_object_get(r.json, "status"), "state"))
                    : NULL;
    if (state && (!strcmp(state, "SUCCEEDED") || !strcmp(state, "FAILED") ||
                  !strcmp(state, "CANCELLED"))) {
      char st[32];
      snprintf(st, sizeof(st), "%s", state);
      batch_result_clear(&r);
      if (db_batch_done_cancel(&w->conn, op, false, err, errlen))
        return -1;
      return db_batch_observe(&w->conn, name, st, err, errlen) < 0 ? -1 : 0;
    }
    batch_result_clear(&r);
    {
      long wait_ms;
      if (!budget_take(w->d->mutations, &w->conn, op->region, &wait_ms)) {
        /* the delete is a mutation too: try the row again later */
        if (db_batch_retry(&w->conn, op, wait_ms, "mutation budget spent", err,
                           errlen))
          return -1;
        return 0;
      }
    }
    rc = batch_client_delete(w->batch, name, &r);
    metrics_batch_call("delete", r.http_status);
  }
  if (rc == 0 || r.error.not_found) {
    bool gone = rc != 0;
    batch_result_clear(&r);
    if (db_batch_done_cancel(&w->conn, op, gone, err, errlen))
      return -1;
    /* Batch has no such job: an eviction waiting for it completes now */
    return gone && db_batch_observe(&w->conn, name, "NOT_FOUND", err, errlen) <
                       0
               ? -1
               : 0;
  }
  rc = record_failure(w, op, &r, err, errlen);
  batch_result_clear(&r);
  return rc;
}

/*
 * Claim a due row of a region whose bucket has a token now. Returns like
 * db_batch_claim(); *refill_ms is how long until the first skipped region
 * has a token again, 0 when none was skipped.
 */
static int claim(struct worker *w, struct db_batch_op *op, long *refill_ms,
                 char *err, size_t errlen)
{
  char spent[MAX_SKIP][BUDGET_REGION_MAX];
  const char *skip[MAX_SKIP];
  size_t i, n;

  n = budget_exhausted(w->d->mutations, spent, MAX_SKIP, refill_ms);
  for (i = 0; i < n; i++)
    skip[i] = spent[i];
  return db_batch_claim(&w->conn, skip, n, w->claimer, LEASE_S, op, err,
                        errlen);
}

static void *dispatcher(void *arg)
{
  struct worker *w = arg;
  struct dispatch *d = w->d;
  char err[256];

  while (!atomic_load(&d->stop)) {
    struct db_batch_op op;
    long refill_ms, retry;
    int got;

    if (connect_db(w, "LISTEN gpugate_dispatch") != 0) {
      wait_for(w, 1000);
      continue;
    }
    got = claim(w, &op, &refill_ms, err, sizeof(err));
    if (got == 0 && refill_ms > 0) {
      /* rows may be waiting for a spent budget: look again when it has
       * refilled (or sooner, on a NOTIFY) */
      wait_for(w, refill_ms);
      continue;
    }
    if (got <= 0) {
      if (got < 0)
        log_msg(LOG_WARN, "dispatch: claim failed: %s", err);
      metrics_dispatch_backlog(db_batch_backlog(&w->conn));
      wait_for(w, IDLE_MS);
      continue;
    }
    if (!budget_take(d->mutations, &w->conn, op.region, &retry)) {
      /* the region's budget is spent (by this replica or another): the
       * row goes back, and the next claim skips the region */
      if (db_batch_unclaim(&w->conn, &op, err, sizeof(err)))
        log_msg(LOG_WARN, "dispatch: releasing %s: %s", op.job_id, err);
    } else if ((!strcmp(op.op, "create")
                    ? do_create(w, &op, err, sizeof(err))
                    : do_cancel(w, &op, err, sizeof(err))) != 0) {
      log_msg(LOG_WARN, "dispatch: %s of %s not recorded: %s", op.op, op.job_id,
              err);
    }
    db_batch_op_free(&op);
  }
  return NULL;
}

static bool live(const char *batch_state)
{
  return !strcmp(batch_state, "QUEUED") || !strcmp(batch_state, "SCHEDULED") ||
         !strcmp(batch_state, "RUNNING");
}

/*
 * Cancel a Batch job gpugate does not want (deleted if Batch refuses the
 * cancel of a job that is still live), within the region's mutation
 * budget. Returns false when the budget is spent (the next sync retries).
 */
static bool sweep(struct worker *w, const char *region, const char *name,
                  const char *why)
{
  struct batch_result r;
  long retry;
  int rc;

  /* the list the sweep works from may be a moment old: a cancel of
   * gpugate's own (a race's losers, a failover's attempt) that landed
   * since leaves nothing to sweep (a read; no mutation budget) */
  rc = batch_client_get(w->batch, name, &r);
  metrics_batch_call("get", r.http_status);
  if (rc == 0 || r.error.not_found) {
    const char *st = rc == 0 ? json_string_value(json_object_get(
                                   json_object_get(r.json, "status"), "state"))
                             : NULL;
    if (!st || !live(st)) {
      batch_result_clear(&r);
      return true;
    }
  }
  batch_result_clear(&r);
  if (!budget_take(w->d->mutations, &w->conn, region, &retry))
    return false;
  rc = batch_client_cancel(w->batch, name, &r);
  metrics_batch_call("cancel", r.http_status);
  if (rc != 0 && !r.error.retryable && !r.error.not_found) {
    const char *st;
    batch_result_clear(&r);
    rc = batch_client_get(w->batch, name, &r);
    metrics_batch_call("get", r.http_status);
    st = rc == 0 ? json_string_value(json_object_get(
                       json_object_get(r.json, "status"), "state"))
                 : NULL;
    if (st && !live(st)) {
      batch_result_clear(&r); /* it ended meanwhile: leave its record */
      return true;
    }
    batch_result_clear(&r);
    if (!budget_take(w->d->mutations, &w->conn, region, &retry))
      return false;
    rc = batch_client_delete(w->batch, name, &r);
    metrics_batch_call("delete", r.http_status);
  }
  if (rc == 0 || r.error.not_found) {
    json_t *f = json_pack("{s:s, s:s, s:s}", "batch_job", name, "region",
                          region, "why", why);
    log_json(LOG_WARN, "sync: swept a Batch job gpugate does not want", f);
    json_decref(f);
    metrics_batch_orphan(region, why);
  } else {
    log_msg(LOG_WARN, "sync: sweeping %s failed: %s", name, r.error.message);
  }
  batch_result_clear(&r);
  return true;
}

/*
 * A listed Batch job of this deployment, live, that is no active job's
 * current Batch job: a candidate for the sweep (name, the gpugate id and
 * attempt its name carries, null when it carries none).
 */
static const char *base_of(const char *name)
{
  const char *slash = strrchr(name, '/');

  return slash ? slash + 1 : name;
}

static void add_candidate(json_t *cands, json_t *states, const char *name,
                          const char *state)
{
  char id[32];
  int attempt, k;

  if (batch_job_id_parse(name, id, sizeof(id), &attempt, &k) == 0)
    json_array_append_new(cands, json_pack("{s:s, s:s, s:i, s:s}", "name", name,
                                           "id", id, "attempt", attempt, "base",
                                           base_of(name)));
  else
    json_array_append_new(cands,
                          json_pack("{s:s, s:n, s:n, s:s}", "name", name, "id",
                                    "attempt", "base", base_of(name)));
  json_object_set_new(states, name, json_string(state));
}

/* Sweep the candidates gpugate does not want; adopt the others. */
static void settle_candidates(struct worker *w, const char *region,
                              json_t *cands, json_t *states)
{
  char err[256];
  json_t *orphans, *o;
  const char *name;
  size_t i;
  bool budget = true;

  if (json_array_size(cands) == 0)
    return;
  orphans = db_batch_orphans(&w->conn, cands, err, sizeof(err));
  if (!orphans) {
    log_msg(LOG_WARN, "sync: %s: %s", region, err);
    return;
  }
  json_array_foreach (orphans, i, o) {
    name = json_string_value(json_object_get(o, "name"));
    if (budget && name)
      budget =
          sweep(w, region, name, json_string_value(json_object_get(o, "why")));
    if (name)
      json_object_del(states, name);
  }
  json_decref(orphans);
  /* wanted: a create whose result is not recorded yet takes its name */
  {
    json_t *st;
    json_object_foreach (states, name, st) {
      if (db_batch_observe(&w->conn, name, json_string_value(st), err,
                           sizeof(err)) < 0)
        log_msg(LOG_WARN, "sync: %s: %s", name, err);
    }
  }
}

/* List one region's gpugate Batch jobs, apply their states, and sweep the
 * ones of this deployment that gpugate does not want. */
static int sync_region(struct worker *w, const char *region)
{
  char token[1024] = "", err[256];
  json_t *seen = json_array(), *job, *unseen, *known = NULL;
  json_t *cands = json_array(), *states = json_object(), *overlapping = NULL;
  const char *deployment = w->d->cfg->deployment;
  size_t i;
  int rc = -1;

  /* only jobs we wait on, and only when Batch reports something new: a
   * region keeps many finished jobs that need no transaction each */
  known = db_batch_active(&w->conn, region, err, sizeof(err));
  overlapping = db_batch_overlapping(&w->conn, region, err, sizeof(err));
  if (!known || !overlapping) {
    log_msg(LOG_WARN, "sync: %s: %s", region, err);
    goto out;
  }
  do {
    struct batch_result r;
    if (batch_client_list(w->batch, region, "labels.gpugate-team:*", SYNC_PAGE,
                          token, &r) != 0) {
      metrics_batch_call("list", r.http_status);
      log_msg(LOG_WARN, "sync: listing %s failed: %s", region, r.error.message);
      batch_result_clear(&r);
      goto out;
    }
    metrics_batch_call("list", r.http_status);
    json_array_foreach (json_object_get(r.json, "jobs"), i, job) {
      const char *name = json_string_value(json_object_get(job, "name"));
      const char *state = json_string_value(
          json_object_get(json_object_get(job, "status"), "state"));
      const char *dep = json_string_value(json_object_get(
          json_object_get(job, "labels"), "gpugate-deployment"));
      if (!name || !state)
        continue;
      json_array_append_new(seen, json_string(name));
      if (!json_object_get(known, name)) {
        /* another deployment's jobs, and jobs from before the label, are
         * never touched */
        if (dep && !strcmp(dep, deployment) && live(state))
          add_candidate(cands, states, name, state);
        else if (json_object_get(overlapping, base_of(name)) &&
                 db_batch_observe(&w->conn, name, state, err, sizeof(err)) < 0)
          /* a race loser that ran beside its winner has stopped */
          log_msg(LOG_WARN, "sync: %s: %s", name, err);
        continue;
      }
      if (!strcmp(json_string_value(json_object_get(known, name)), state))
        continue;
      if (db_batch_observe(&w->conn, name, state, err, sizeof(err)) < 0)
        log_msg(LOG_WARN, "sync: %s: %s", name, err);
    }
    snprintf(token, sizeof(token), "%s",
             json_string_value(json_object_get(r.json, "nextPageToken"))
                 ? json_string_value(json_object_get(r.json, "nextPageToken"))
                 : "");
    batch_result_clear(&r);
  } while (token[0] && !atomic_load(&w->d->stop));

  settle_candidates(w, region, cands, states);

  /* jobs Batch no longer has, that we did not cancel, are lost */
  unseen =
      db_batch_unseen(&w->conn, region, seen, UNSEEN_GRACE_S, err, sizeof(err));
  json_array_foreach (unseen, i, job) {
    if (db_batch_observe(&w->conn, json_string_value(job), "NOT_FOUND", err,
                         sizeof(err)) < 0)
      log_msg(LOG_WARN, "sync: %s: %s", json_string_value(job), err);
  }
  json_decref(unseen);
  rc = 0;
out:
  json_decref(known);
  json_decref(overlapping);
  json_decref(seen);
  json_decref(cands);
  json_decref(states);
  return rc;
}

static void *syncer(void *arg)
{
  struct worker *w = arg;
  struct dispatch *d = w->d;
  long long next_sync = 0;
  char err[256];

  while (!atomic_load(&d->stop)) {
    json_t *regions, *region;
    size_t i;

    if (connect_db(w, NULL) != 0) {
      wait_for(w, 1000);
      continue;
    }
    if (db_batch_flex_expired(&w->conn, err, sizeof(err)) < 0)
      log_msg(LOG_WARN, "dws: %s", err);
    if (now_us() >= next_sync) {
      bool first = next_sync == 0;
      next_sync = now_us() + d->cfg->sync_interval_ms * 1000LL;
      /* at start-up, at once the regions with active jobs; from the
       * next period on, every region a flavor uses, for the sweep */
      regions = first ? db_batch_regions(&w->conn, err, sizeof(err))
                      : db_batch_all_regions(&w->conn, err, sizeof(err));
      json_array_foreach (regions, i, region) {
        sync_region(w, json_string_value(region));
      }
      json_decref(regions);
    }
    wait_for(w, FLEX_CHECK_MS);
  }
  return NULL;
}

/* Start fn on w with its own Batch client (a client is one thread's). */
static int start_worker(struct dispatch *d, struct worker *w,
                        void *(*fn)(void *), char *err, size_t errlen)
{
  char host[64] = "";

  w->d = d;
  w->rng = (unsigned)now_us() ^ (unsigned)(uintptr_t)w;
  if (gethostname(host, sizeof(host) - 1) != 0)
    snprintf(host, sizeof(host), "gpugate");
  snprintf(w->claimer, sizeof(w->claimer), "%.63s/%ld/%p/%lld", host,
           (long)getpid(), (void *)w, now_us());
  w->batch = batch_client_new_shared(d->cfg, d->tokens, err, errlen);
  if (!w->batch)
    return -1;
  if (pthread_create(&w->thread, NULL, fn, w) != 0) {
    snprintf(err, errlen, "cannot start a thread");
    batch_client_free(w->batch);
    w->batch = NULL;
    return -1;
  }
  return 0;
}

static void stop_worker(struct worker *w)
{
  if (!w->batch)
    return;
  pthread_join(w->thread, NULL);
  batch_client_free(w->batch);
  PQfinish(w->conn.pg);
  w->conn.pg = NULL;
}

struct dispatch *dispatch_start(const struct config *cfg, char *err,
                                size_t errlen)
{
  struct dispatch *d = calloc(1, sizeof(*d));
  size_t i;

  if (!d) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  batch_global_init();
  db_batch_race_hook = metrics_batch_race;
  d->cfg = cfg;
  atomic_init(&d->stop, false);
  /* the deployment's budget: Batch's quota is 6,000 a minute per region */
  d->mutations = budget_new((double)cfg->batch_mutations_per_s,
                            cfg->batch_mutations_burst);
  if (!d->mutations || pipe(d->wake) != 0) {
    snprintf(err, errlen, "out of memory");
    budget_free(d->mutations);
    free(d);
    return NULL;
  }
  /* one cached token for the process, not one fetch per worker */
  d->tokens = batch_token_new(cfg, err, errlen);
  if (!d->tokens) {
    dispatch_stop(d);
    return NULL;
  }
  for (i = 0; i < DISPATCH_WORKERS; i++)
    if (start_worker(d, &d->dispatchers[i], dispatcher, err, errlen) != 0) {
      dispatch_stop(d);
      return NULL;
    }
  if (start_worker(d, &d->sync, syncer, err, errlen) != 0) {
    dispatch_stop(d);
    return NULL;
  }
  return d;
}

void dispatch_stop(struct dispatch *d)
{
  static const char bytes[DISPATCH_WORKERS + 1] = {0};
  size_t i;

  if (!d)
    return;
  atomic_store(&d->stop, true);
  /* one byte per worker: each poll wakes, and a worker reads at most one
   * before it sees the stop */
  if (write(d->wake[1], bytes, sizeof(bytes)) < 0) {
    /* the workers' polls time out soon enough */
  }
  for (i = 0; i < DISPATCH_WORKERS; i++)
    stop_worker(&d->dispatchers[i]);
  stop_worker(&d->sync);
  close(d->wake[0]);
  close(d->wake[1]);
  budget_free(d->mutations);
  batch_token_free(d->tokens); /* after the clients that borrow it */
  free(d);
}
