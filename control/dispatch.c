/*
 * dispatch.c — the Cloud Batch side of every replica: the dispatcher
 * threads that empty the outbox, with many Batch calls in flight at once,
 * and (control/dispatch_sync.c) the status sync that brings Batch's job
 * states back. Both are safe on all replicas at once: dispatchers claim
 * rows with FOR UPDATE SKIP LOCKED and a lease, and every state change is
 * conditional on the job's current state.
 *
 * A real Batch answers a create in a few hundred milliseconds, so one call
 * at a time per thread cannot spend a region's budget (100 mutations a
 * second needs ~40 calls under way at 400 ms each). Each dispatcher thread
 * owns a database connection and a libcurl multi handle (gcp/batch_client.c's
 * batch_multi) and loops:
 *
 *   1. while the replica may start more calls (control/dispatch_flow.c:
 *      per region about rate × observed latency × 1.5, at least 4, and at
 *      most 256 for the replica), claim up to CLAIM_MAX due rows in one
 *      statement (db_batch_claim_many), skipping the regions whose budget
 *      is spent or whose calls are at their limit (and about once a
 *      second, first the rows of a lease that ran out: a dead dispatcher
 *      renews none); every RENEW_US the leases of the calls under way are
 *      renewed (db_batch_renew);
 *   2. for each row, take its region's slot and a budget token, and start
 *      its call on the multi handle; a row that gets neither goes back at
 *      once (db_batch_unclaim): a row is never held while waiting for a
 *      token;
 *   3. wait (curl_multi_poll) for a transfer to end, a NOTIFY on
 *      gpugate_dispatch, a poke from this replica's admission leader
 *      (dispatch_poke: the creates of admissions it just committed, without
 *      the NOTIFY's way through PostgreSQL) or a stop;
 *   4. record each ended call's outcome on the thread's connection, in
 *      its own transaction, or start the row's next call (a cancel Batch
 *      refused: read the job, then delete it, with a token of its own).
 *
 * Batch mutations draw on one budget per region for the whole deployment
 * (control/budget.c: tokens leased a few at a time from a bucket row in
 * PostgreSQL), shared by the dispatchers and the sweep of every replica,
 * so the rate stays exact whatever the number of calls in flight. A create
 * is recorded exactly once as before: its Batch job id is deterministic
 * and its request id fixed per row, so a call repeated after a lost answer
 * or a crash gets the same job back (409 ALREADY_EXISTS counts as
 * success), and recording it is conditional on the job still waiting for
 * it. A job's rows go out one at a time (the claim's order; a raced
 * attempt's copies together), so a user's cancel follows the create it
 * cancels and wins over it.
 *
 * On stop, no row is claimed any more and the calls under way have
 * DRAIN_MS to end and be recorded; rows whose calls are still running
 * then are given back (their calls are harmless to repeat).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gcp/batch_client.h"
#include "gcp/batch_job.h"
#include "db/batch.h"
#include "control/dispatch.h"
#include "control/dispatch_worker.h"
#include "lib/log.h"
#include "lib/metrics.h"

#define DISPATCH_WORKERS 4 /* database connections claiming and recording */
#define MAX_SKIP 128       /* regions a claim can skip */
#define CLAIM_MAX 32       /* rows one claim takes at most */
#define CLAIM_ROUNDS 4     /* claims between two looks at ended calls */
#define IDLE_MS 500
#define DRAIN_MS 5000
/* how often a dispatcher looks for rows held under a lapsed lease or by a
 * session that is gone (a look passes every held row) */
#define LAPSED_US 1000000LL
/* A claim's lease, renewed every RENEW_US while the row's calls are under
 * way (up to three Batch calls, 15 s each at most): a live dispatcher
 * keeps its rows, whatever its database session went through (a
 * reconnect), and after a crash the rows wait at most this long. */
#define LEASE_S 15
#define RENEW_US 3000000LL

/* What a row's call under way is doing. */
enum step {
  STEP_CREATE,
  STEP_CANCEL,
  STEP_CANCEL_READ, /* Batch refused the cancel: has the job ended? */
  STEP_DELETE       /* … it has not: delete it */
};

/* One claimed row with a call under way. */
struct flight {
  struct db_batch_op op;
  enum step step;
  char name[512]; /* the Batch job's full name (cancel, read, delete) */
  long long claimed_us;
  struct flight *prev, *next;
};

struct dispatcher {
  struct dispatch_worker w; /* first: the thread gets &w */
  struct flight *flights;
  long long lapsed_us;  /* the last look for lapsed leases */
  long long renewed_us; /* the last renewal of the calls' leases */
  bool lapsed_more;     /* that look took rows: look again */
};

struct dispatch {
  struct dispatch_shared shared;
  struct dispatcher dispatchers[DISPATCH_WORKERS];
  struct dispatch_worker sync;
};

static const char *const step_call[] = {"create", "cancel", "get", "delete"};
static const enum dispatch_method step_method[] = {
    DISPATCH_CREATE, DISPATCH_CANCEL, DISPATCH_GET, DISPATCH_DELETE};

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

static void not_recorded(const struct db_batch_op *op, const char *err)
{
  log_msg(LOG_WARN, "dispatch: %s of %s not recorded: %s", op->op, op->job_id,
          err);
}

static void record_failure(struct dispatcher *t, const struct db_batch_op *op,
                           const struct batch_result *r)
{
  struct dispatch_worker *w = &t->w;
  char err[256];
  int rc;

  /* A cancel is never given up (db/batch.c, the invariant): the Batch job
   * may exist, and nothing else would end it. A refusal (400 once, then
   * accepted, as Batch answers now and then) is tried again with backoff
   * until Batch reports the job ended or absent (404). */
  if (r->error.retryable || !strcmp(op->op, "cancel")) {
    long delay = batch_backoff_ms(op->tries, r->error.retry_after_ms, &w->rng);
    log_op(LOG_WARN, "batch call failed; will retry", op, r);
    rc =
        db_batch_retry(&w->conn, op, delay, r->error.message, err, sizeof(err));
  } else {
    log_op(LOG_ERROR, "batch call rejected", op, r);
    rc = db_batch_give_up(&w->conn, op, r->error.message, err, sizeof(err));
  }
  if (rc)
    not_recorded(op, err);
}

/* A call could not be started (out of memory): try the row again later. */
static void not_started(struct dispatcher *t, const struct db_batch_op *op)
{
  struct batch_result r;

  memset(&r, 0, sizeof(r));
  batch_error_transport(&r.error, "UNAVAILABLE", "out of memory", true);
  record_failure(t, op, &r);
}

/* The row's calls are over: its slot goes back. */
static void land(struct dispatcher *t, struct flight *f)
{
  dispatch_flow_release(t->w.d->flow, f->op.region);
  if (f->prev)
    f->prev->next = f->next;
  else
    t->flights = f->next;
  if (f->next)
    f->next->prev = f->prev;
  db_batch_op_free(&f->op);
  free(f);
}

static void start_create(struct dispatcher *t, struct flight *f)
{
  const struct control_config *cfg = t->w.d->cfg;
  const struct db_batch_op *op = &f->op;
  struct batch_job_input in;
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
  in.pubsub_topic = cfg->batch_pubsub_topic;
  in.service_account = cfg->batch_service_account;
  in.deployment = cfg->deployment;
  body = batch_job_body(&in);
  if (!body) {
    struct batch_result r;
    memset(&r, 0, sizeof(r));
    snprintf(r.error.message, sizeof(r.error.message),
             "the job could not be expressed as a Batch job");
    record_failure(t, op, &r);
    land(t, f);
    return;
  }
  f->step = STEP_CREATE;
  rc = batch_multi_create(t->w.multi, op->region, op->batch_job_id,
                          op->request_id, body, f);
  json_decref(body);
  if (rc != 0) {
    not_started(t, op);
    land(t, f);
  }
}

/* Start f's call for step on name (get, cancel or delete). */
static void start_named(struct dispatcher *t, struct flight *f, enum step step)
{
  struct batch_multi *m = t->w.multi;
  int rc;

  f->step = step;
  rc = step == STEP_CANCEL        ? batch_multi_cancel(m, f->name, f)
       : step == STEP_CANCEL_READ ? batch_multi_get(m, f->name, f)
                                  : batch_multi_delete(m, f->name, f);
  if (rc != 0) {
    not_started(t, &f->op);
    land(t, f);
  }
}

static void created(struct dispatcher *t, struct flight *f, int rc,
                    const struct batch_result *r)
{
  struct dispatch_worker *w = &t->w;
  const struct db_batch_op *op = &f->op;
  char name[512], err[256], id[32];
  int attempt, k;

  if (rc != 0) {
    record_failure(t, op, r);
    return;
  }
  {
    const char *given = json_string_value(json_object_get(r->json, "name"));
    if (given)
      snprintf(name, sizeof(name), "%s", given);
    else
      batch_job_name(batch_client_project(w->batch), op->region,
                     op->batch_job_id, name, sizeof(name));
  }
  if (db_batch_done_create(&w->conn, op, name, err, sizeof(err)) != 0) {
    not_recorded(op, err);
    return;
  }
  if (batch_job_id_parse(op->batch_job_id, id, sizeof(id), &attempt, &k) != 0)
    k = 0;
  if (k == 1)
    metrics_batch_race("started", NULL, 0);
  /* a race's later copies are not the job's creation */
  if (k <= 1)
    metrics_batch_admission_to_create(
        op->age_s + (double)(dispatch_now_us() - f->claimed_us) / 1e6);
}

/* The cancel (or the delete after it) ended well, or Batch has no such
 * job: the row is done. */
static void cancel_done(struct dispatcher *t, struct flight *f, bool gone)
{
  char err[256];

  char id[32];
  int attempt, k = 0;

  if (batch_job_id_parse(f->op.batch_job_id, id, sizeof(id), &attempt, &k) != 0)
    k = 0;
  if ((!gone
           /* Batch took it, but may never act on it: sent again after a
            * bound until Batch reports the job (or the raced copy) ended or
            * absent */
           ? db_batch_recheck_cancel(&t->w.conn, &f->op, err, sizeof(err))
           : db_batch_done_cancel(&t->w.conn, &f->op, gone, err,
                                  sizeof(err))) != 0 ||
      /* Batch has no such job: an eviction waiting for it completes now */
      (gone && db_batch_observe(&t->w.conn, f->name, "NOT_FOUND", err,
                                sizeof(err)) < 0) ||
      /* Batch took the cancel of a Batch job the job may not name yet (its
       * create's answer was lost): the job names it now (db/batch_report.c,
       * adopt), so that what Batch reports next ends the cancel or the
       * eviction (a raced copy: once every copy has ended,
       * batch_report.c race_observe) */
      (!gone && k == 0 &&
       db_batch_adopt(&t->w.conn, f->name, err, sizeof(err)) < 0))
    not_recorded(&f->op, err);
}

/* Batch refused the cancel; r is what reading the job gave. If it has just
 * finished, its outcome stands (a job that succeeded is not run again);
 * otherwise it is deleted, with a token of its own. Returns true when the
 * delete was started. */
static bool after_refused_cancel(struct dispatcher *t, struct flight *f, int rc,
                                 const struct batch_result *r)
{
  struct dispatch_worker *w = &t->w;
  const char *state = rc == 0
                          ? json_string_value(json_object_get(
                                json_object_get(r->json, "status"), "state"))
                          : NULL;
  char err[256];
  long wait_ms;

  if (state && (!strcmp(state, "SUCCEEDED") || !strcmp(state, "FAILED") ||
                !strcmp(state, "CANCELLED"))) {
    if (db_batch_done_cancel(&w->conn, &f->op, false, err, sizeof(err)) != 0 ||
        db_batch_observe_at(&w->conn, f->name, state,
                            batch_job_ended_us(r->json), err, sizeof(err)) < 0)
      not_recorded(&f->op, err);
    return false;
  }
  if (!budget_take(w->d->mutations, &w->conn, f->op.region, &wait_ms)) {
    /* the delete is a mutation too: try the row again later */
    if (db_batch_retry(&w->conn, &f->op, wait_ms, "mutation budget spent", err,
                       sizeof(err)) != 0)
      not_recorded(&f->op, err);
    return false;
  }
  start_named(t, f, STEP_DELETE);
  return true;
}

/* f's call ended with rc and r: record the outcome, or start the next call
 * of the row. */
static void ended(struct dispatcher *t, struct flight *f, int rc,
                  const struct batch_result *r)
{
  /* an answer, or a timeout, says how long Batch takes; a call that never
   * left (no token, bad name) or found no server says nothing */
  if (r->http_status > 0 || !strcmp(r->error.status, "DEADLINE_EXCEEDED"))
    dispatch_flow_observe(t->w.d->flow, f->op.region, step_method[f->step],
                          r->elapsed_ms);
  metrics_batch_call(step_call[f->step], r->http_status);
  switch (f->step) {
  case STEP_CREATE:
    created(t, f, rc, r);
    break;
  case STEP_CANCEL:
  case STEP_DELETE:
    if (rc == 0 || r->error.not_found) {
      cancel_done(t, f, rc != 0);
    } else if (f->step == STEP_CANCEL && !r->error.retryable) {
      start_named(t, f, STEP_CANCEL_READ);
      return;
    } else {
      record_failure(t, &f->op, r);
    }
    break;
  case STEP_CANCEL_READ:
    if (after_refused_cancel(t, f, rc, r))
      return;
    break;
  }
  land(t, f);
}

static void take_ended(struct dispatcher *t)
{
  struct batch_result r;
  void *tag;
  int rc;

  while (batch_multi_next(t->w.multi, &tag, &rc, &r)) {
    ended(t, tag, rc, &r);
    batch_result_clear(&r);
  }
}

/* Give the rows ops[0..n) back at once (their calls were not made), and
 * free them. */
static void give_back(struct dispatcher *t, struct db_batch_op *ops, size_t n)
{
  char err[256];
  size_t i;

  if (n && db_batch_unclaim_many(&t->w.conn, ops, n, err, sizeof(err)))
    log_msg(LOG_WARN, "dispatch: giving back %zu rows: %s", n, err);
  for (i = 0; i < n; i++)
    db_batch_op_free(&ops[i]);
}

/* Start the first call of a claimed row (op is taken over: true), or
 * leave it to be given back (false) when its region has no slot or no
 * token now. */
static bool launch(struct dispatcher *t, struct db_batch_op *op)
{
  struct dispatch_worker *w = &t->w;
  struct flight *f;
  long wait_ms;

  if (!dispatch_flow_acquire(w->d->flow, op->region))
    return false;
  /* the region's budget spent (by this replica or another): the row goes
   * back, and the next claim skips the region until it refills */
  if (!budget_take(w->d->mutations, &w->conn, op->region, &wait_ms) ||
      !(f = calloc(1, sizeof(*f)))) {
    dispatch_flow_release(w->d->flow, op->region);
    return false;
  }
  f->op = *op; /* the spec references move with it */
  memset(op, 0, sizeof(*op));
  f->claimed_us = dispatch_now_us();
  f->next = t->flights;
  if (t->flights)
    t->flights->prev = f;
  t->flights = f;
  if (!strcmp(f->op.op, "create")) {
    start_create(t, f);
  } else {
    batch_job_name(batch_client_project(w->batch), f->op.region,
                   f->op.batch_job_id, f->name, sizeof(f->name));
    start_named(t, f, STEP_CANCEL);
  }
  return true;
}

/* Lease, per region, the tokens the claimed rows ops[0..n) need, in one
 * round trip each (rather than a whole lease that may lapse unspent). */
static void prefetch(struct dispatcher *t, const struct db_batch_op *ops, int n)
{
  int i, j, count;

  for (i = 0; i < n; i++) {
    for (j = 0; j < i && strcmp(ops[j].region, ops[i].region) != 0; j++)
      ;
    if (j < i)
      continue; /* counted with its region's first row */
    for (count = 0, j = i; j < n; j++)
      count += !strcmp(ops[j].region, ops[i].region);
    budget_prefetch(t->w.d->mutations, &t->w.conn, ops[i].region, count);
  }
}

/*
 * Record the ended calls, then claim due rows and start their calls while
 * the replica may have more in flight. *wait_ms: how long the thread may
 * wait before looking again.
 */
static void fill(struct dispatcher *t, long *wait_ms)
{
  struct dispatch_worker *w = &t->w;
  struct dispatch_shared *d = w->d;
  char spent[MAX_SKIP][BUDGET_REGION_MAX], err[256];
  const char *skip[MAX_SKIP];
  struct db_batch_op ops[CLAIM_MAX];
  int round, got, i, want;
  size_t n_spent, n_full, n_back, j;
  bool lapsed;
  long long now_us;
  long refill_ms;

  for (round = 0; round < CLAIM_ROUNDS; round++) {
    /* the outcomes first: a Batch job waits unrecorded no longer than
     * needed (a status report would otherwise adopt it first) */
    dispatch_wait(w, 0);
    take_ended(t);
    if (atomic_load(&d->stop))
      return;
    want = dispatch_flow_room(d->flow);
    if (want <= 0)
      return; /* the next ended call wakes the thread */
    if (want > CLAIM_MAX)
      want = CLAIM_MAX;
    n_spent = budget_exhausted(d->mutations, spent, MAX_SKIP / 2, &refill_ms);
    n_full = dispatch_flow_full(d->flow, spent + n_spent, MAX_SKIP / 2);
    for (j = 0; j < n_spent + n_full; j++)
      skip[j] = spent[j];
    now_us = dispatch_now_us();
    lapsed = t->lapsed_more || now_us - t->lapsed_us >= LAPSED_US;
    if (lapsed)
      t->lapsed_us = now_us;
    got = db_batch_claim_many(&w->conn, skip, n_spent + n_full, w->claimer,
                              LEASE_S, &lapsed, ops, want, err, sizeof(err));
    t->lapsed_more = got > 0 && lapsed;
    if (got < 0) {
      log_msg(LOG_WARN, "dispatch: claim failed: %s", err);
      *wait_ms = 1000;
      return;
    }
    if (got == 0) {
      /* rows may be waiting for a spent budget: look again when it has
       * refilled (or sooner, on a NOTIFY or an ended call) */
      if (refill_ms > 0 && refill_ms < *wait_ms)
        *wait_ms = refill_ms;
      if (n_spent + n_full == 0 && !t->flights)
        metrics_dispatch_backlog(db_batch_backlog(&w->conn));
      return;
    }
    prefetch(t, ops, got);
    n_back = 0;
    for (i = 0; i < got; i++)
      if (!launch(t, &ops[i]))
        ops[n_back++] = ops[i]; /* moved down: launched ones are taken */
    give_back(t, ops, n_back);
    if (got < want)
      return;
  }
  *wait_ms = 0; /* more may be due: look at once, after the ended calls */
}

/* Renew the leases of the rows whose calls are under way, every
 * RENEW_US: a lease is live while its holder renews it (db/batch_lease.c). */
static void renew(struct dispatcher *t)
{
  long long now = dispatch_now_us(), *ids;
  struct flight *f;
  size_t n = 0;
  char err[256];

  if (!t->flights || now - t->renewed_us < RENEW_US)
    return;
  for (f = t->flights; f; f = f->next)
    n++;
  if (!(ids = malloc(n * sizeof(*ids))))
    return; /* tried again at the next turn */
  for (n = 0, f = t->flights; f; f = f->next)
    ids[n++] = (long long)f->op.id;
  if (db_batch_renew(&t->w.conn, t->w.claimer, ids, n, LEASE_S, err,
                     sizeof(err)) != 0)
    log_msg(LOG_WARN, "dispatch: renewing %zu leases: %s", n, err);
  else
    t->renewed_us = now;
  free(ids);
}

/* Stopping with calls still under way after DRAIN_MS: their rows go back. */
static void abandon(struct dispatcher *t)
{
  while (t->flights) {
    struct flight *f = t->flights;
    char err[256];
    if (db_batch_unclaim(&t->w.conn, &f->op, err, sizeof(err)))
      log_msg(LOG_WARN, "dispatch: releasing %s: %s", f->op.job_id, err);
    land(t, f);
  }
}

static void *dispatcher(void *arg)
{
  struct dispatcher *t = arg;
  struct dispatch_worker *w = &t->w;
  long long drain_until = 0;

  for (;;) {
    long wait_ms = IDLE_MS;

    if (atomic_load(&w->d->stop)) {
      if (!t->flights)
        break;
      if (!drain_until) {
        drain_until = dispatch_now_us() + DRAIN_MS * 1000LL;
      } else if (dispatch_now_us() >= drain_until) {
        abandon(t);
        break;
      }
      wait_ms = 100;
    } else if (dispatch_connect(w, "LISTEN gpugate_dispatch") != 0) {
      wait_ms = 1000; /* the calls under way go on meanwhile */
    } else {
      renew(t);
      fill(t, &wait_ms);
    }
    if (t->flights && wait_ms > RENEW_US / 1000)
      wait_ms = RENEW_US / 1000;
    dispatch_wait(w, wait_ms);
    take_ended(t);
  }
  return NULL;
}

struct dispatch *dispatch_start(const struct control_config *cfg, char *err,
                                size_t errlen)
{
  struct dispatch *d = calloc(1, sizeof(*d));
  struct dispatch_shared *s;
  size_t i;

  if (!d) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  s = &d->shared;
  s->wake[0] = s->wake[1] = s->poke[0] = s->poke[1] = -1;
  batch_global_init();
  db_batch_race_hook = metrics_batch_race;
  s->cfg = cfg;
  atomic_init(&s->stop, false);
  /* the deployment's budget: Batch's quota is 6,000 a minute per region */
  s->mutations = budget_new((double)cfg->batch_mutations_per_s,
                            cfg->batch_mutations_burst);
  s->flow = dispatch_flow_new((double)cfg->batch_mutations_per_s);
  if (!s->mutations || !s->flow || pipe(s->wake) != 0 || pipe(s->poke) != 0 ||
      fcntl(s->poke[0], F_SETFL, O_NONBLOCK) != 0 ||
      fcntl(s->poke[1], F_SETFL, O_NONBLOCK) != 0) {
    snprintf(err, errlen, "out of memory");
    dispatch_stop(d);
    return NULL;
  }
  /* one cached token for the process, not one fetch per worker */
  s->tokens = batch_token_new(&cfg->gcp, err, errlen);
  if (!s->tokens) {
    dispatch_stop(d);
    return NULL;
  }
  for (i = 0; i < DISPATCH_WORKERS; i++) {
    d->dispatchers[i].w.pokeable = true;
    if (dispatch_worker_start(s, &d->dispatchers[i].w, dispatcher, err,
                              errlen) != 0) {
      dispatch_stop(d);
      return NULL;
    }
  }
  if (dispatch_worker_start(s, &d->sync, dispatch_sync_run, err, errlen) != 0) {
    dispatch_stop(d);
    return NULL;
  }
  return d;
}

void dispatch_poke(struct dispatch *d)
{
  /* a full pipe holds pokes enough already: EAGAIN is fine */
  if (d && d->shared.poke[1] >= 0 && write(d->shared.poke[1], "p", 1) < 0) {
    /* the NOTIFY comes anyway */
  }
}

void dispatch_stop(struct dispatch *d)
{
  static const char bytes[64] = {0};
  struct dispatch_shared *s;
  size_t i;

  if (!d)
    return;
  s = &d->shared;
  atomic_store(&s->stop, true);
  /* a byte for each waiting thread (a thread reads one, then sees the
   * stop and no longer looks at the pipe) */
  if (s->wake[1] >= 0 && write(s->wake[1], bytes, sizeof(bytes)) < 0) {
    /* the workers' waits time out soon enough */
  }
  for (i = 0; i < DISPATCH_WORKERS; i++)
    dispatch_worker_stop(&d->dispatchers[i].w);
  dispatch_worker_stop(&d->sync);
  if (s->wake[0] >= 0) {
    close(s->wake[0]);
    close(s->wake[1]);
  }
  if (s->poke[0] >= 0) {
    close(s->poke[0]);
    close(s->poke[1]);
  }
  budget_free(s->mutations);
  dispatch_flow_free(s->flow);
  batch_token_free(s->tokens); /* after the clients that borrow it */
  free(d);
}
