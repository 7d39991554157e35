/*
 * it_soak.c — three gpugate replicas on one database, behind no load
 * balancer, under a mixed load for GPUGATE_SOAK_SECONDS (default 300, the
 * 5 minutes of issue 6; 30 gives a quick local run).
 *
 * Setup: the reference architecture (deploy/examples/) applied to a fresh
 * database; one Batch emulator (capacity twice the quota per location and
 * provisioning model; jobs run 0.4-3 s, set per job) pushing Pub/Sub
 * notifications to replica 0; three `gpugate serve` with the gcp backend,
 * a status sync every second and admission every 200 ms.
 *
 * Load: SOAK_CLIENTS threads send requests round-robin over the three
 * replicas: submissions with Idempotency-Keys to random team queues (lp,
 * hp, compact, dws; classes default, high, compact; now and then a burst
 * of high-priority jobs that must preempt), replays of earlier submissions
 * to another replica (same id back), gets, lists, pending queues, events,
 * and cancels of about 5 % of the jobs. 3 % of the jobs are told to fail.
 *
 * Throughout:
 *   - a watcher with its own connection checks the quota invariants from
 *     the database about every 15 ms (per cluster queue, flavor and
 *     resource: usage of ADMITTED/QUEUED/RUNNING/EVICTING jobs ≤ nominal +
 *     borrowing_limit; per cohort ≤ Σ nominal; no PENDING job holds a
 *     flavor; no holding job lacks one), and samples the leader lock in
 *     pg_locks (at most one holder, and who it is);
 *   - every ~3 s the emulator's jobs: no Batch job created twice, none
 *     gpugate did not name, per gpugate job at most one live Batch job
 *     (queued, scheduled, running) and that one of its latest attempt (an
 *     evicted attempt may still be CANCELLATION_IN_PROGRESS: SPEC §4 ends
 *     an eviction there; such overlaps are counted);
 *   - every response is the one expected: no 5xx, no request without a
 *     response (h_request gives up after 30 s), none slower than 10 s.
 *
 * At the end, submissions stop; every job must become terminal (the ones
 * still waiting after a deadline are cancelled and counted). Then:
 *   - each job ended as asked: SUCCEEDED, or FAILED when told to fail, or
 *     CANCELLED only when this test cancelled it;
 *   - Batch: every create accepted once per name, at most one Batch job per
 *     (job, attempt), none that no gpugate job attempt names, none still
 *     running, each job's last Batch job in the job's final state, every
 *     recorded BatchJobCreated among the creates;
 *   - the outbox holds nothing for terminal jobs; the emulator's pushes
 *     were all accepted;
 *   - one leader for the whole run: one "this replica is the leader" line
 *     in all three logs, admission cycles only in the leader's, one lock
 *     holder ever seen in pg_locks;
 *   - all three replicas served traffic (each ≥ 25 % of the requests);
 *   - with ≥ 60 s of load, at least one eviction happened.
 * A summary line goes to stderr: jobs, outcomes, evictions (and how many
 * repeated an eviction for the same preemptor), Batch creates, requests
 * per second and per replica, latency, checks, and CPU used.
 */
#include <check.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *soak_suite(void);

#define N_REPLICAS 3
#define SOAK_CLIENTS 4
#define SOAK_DEFAULT_S 300
#define PUSH_SECRET "soak-push-secret-81d3c0"
#define LEADER_LOCK "7301002" /* control/loop.c LEADER_LOCK */
#define LEADER_LINE "this replica is the leader"
#define LOST_LINE "lost the leader lock"
#define CYCLE_LINE "\"admission cycle\""
#define DRAIN_MS 150000 /* submissions stopped: all terminal by then */
#define CANCEL_MS 60000 /* the leftovers cancelled: terminal by then */
#define OUTBOX_MS 30000 /* the outbox drained by then */
#define SLOW_MS 10000   /* a request slower than this hangs */
#define EMU_SAMPLE_MS 3000
#define JOB_PREFIX "gpugate-"

static const char *const teams[4] = {"team-a", "team-b", "team-c", "team-d"};

enum op {
  OP_SUBMIT,
  OP_REPLAY,
  OP_GET,
  OP_LIST,
  OP_PENDING,
  OP_EVENTS,
  OP_CANCEL,
  OP_QUEUES,
  N_OPS
};
static const char *const op_names[N_OPS] = {
    "submit", "replay", "get", "list", "pending", "events", "cancel", "queues"};

static bool terminal(const char *state)
{
  return state && (!strcmp(state, "SUCCEEDED") || !strcmp(state, "FAILED") ||
                   !strcmp(state, "CANCELLED"));
}

static long soak_seconds(void)
{
  const char *v = getenv("GPUGATE_SOAK_SECONDS");
  long s = v && *v ? strtol(v, NULL, 10) : SOAK_DEFAULT_S;

  return s < 5 ? 5 : s > 7200 ? 7200 : s;
}

/* ---- the run's shared state ------------------------------------------- */

/* One submitted job, as the clients know it. */
struct job {
  char id[40];
  int key;         /* Idempotency-Key soak-<key>, name soak-<key> */
  int team, queue; /* teams[], queues[] */
  int klass;       /* classes[] */
  int tasks, gpu;  /* task_count, GPUs per task */
  int run_ms;      /* the emulator runs it this long */
  bool fail;       /* the emulator fails it */
  bool cancelled;  /* this test asked to cancel it */
};

static const char *const queues[4] = {"lp", "hp", "compact", "dws"};
static const char *const classes[3] = {"default", "high", "compact"};

struct soak {
  struct h_server srv[N_REPLICAS];
  char *tokens[4];
  atomic_uint rr;      /* round-robin over the replicas */
  atomic_int next_key; /* Idempotency-Keys */
  atomic_bool stop;    /* the load phase is over */
  long long deadline;  /* clients stop at this time */

  pthread_mutex_t mu; /* jobs, n_jobs, cap, first_bad */
  struct job *jobs;
  size_t n_jobs, cap;

  atomic_long requests, per_replica[N_REPLICAS], per_op[N_OPS];
  atomic_long no_response, server_errors, unexpected, slow;
  atomic_long max_latency_ms, submitted, replays, cancels, bursts;
  atomic_long latency_sum_ms;
  char first_bad[512];
};

static struct soak S;

static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void bad(const char *fmt, ...)
{
  va_list ap;

  pthread_mutex_lock(&S.mu);
  if (!S.first_bad[0]) {
    va_start(ap, fmt);
    vsnprintf(S.first_bad, sizeof(S.first_bad), fmt, ap);
    va_end(ap);
  }
  pthread_mutex_unlock(&S.mu);
}

/*
 * One request to the next replica in turn; counts it and its latency.
 * Returns the status, 0 when no response arrived (recorded as a failure).
 */
static long call(enum op op, const char *method, const char *path, int team,
                 const char *body, const char *const *headers, struct h_resp *r)
{
  unsigned k = atomic_fetch_add(&S.rr, 1u) % N_REPLICAS;
  long long t0 = h_now_ms(), took;
  long prev;
  int rc = h_request(&S.srv[k], method, path, S.tokens[team], body, headers, r);

  took = h_now_ms() - t0;
  atomic_fetch_add(&S.requests, 1);
  atomic_fetch_add(&S.per_replica[k], 1);
  atomic_fetch_add(&S.per_op[op], 1);
  atomic_fetch_add(&S.latency_sum_ms, took);
  prev = atomic_load(&S.max_latency_ms);
  while (took > prev &&
         !atomic_compare_exchange_weak(&S.max_latency_ms, &prev, took)) {
  }
  if (took > SLOW_MS) {
    atomic_fetch_add(&S.slow, 1);
    bad("%s %s via replica %u took %lld ms", method, path, k, took);
  }
  if (rc != 0) {
    atomic_fetch_add(&S.no_response, 1);
    bad("%s %s via replica %u: no response after %lld ms", method, path, k,
        took);
    return 0;
  }
  if (r->status >= 500) {
    atomic_fetch_add(&S.server_errors, 1);
    bad("%s %s via replica %u: %ld %.300s", method, path, k, r->status,
        r->body ? r->body : "");
  }
  return r->status;
}

/* The status must be want (a 5xx or no response is already counted). */
static bool expect(long got, long want, const char *method, const char *path,
                   const struct h_resp *r)
{
  if (got == want)
    return true;
  if (got > 0 && got < 500) {
    atomic_fetch_add(&S.unexpected, 1);
    bad("%s %s: %ld (expected %ld) %.300s", method, path, got, want,
        r->body ? r->body : "");
  }
  return false;
}

/* ---- jobs ------------------------------------------------------------- */

static void job_body(const struct job *j, char *out, size_t len)
{
  char env[96];

  snprintf(env, sizeof(env), "{\"EMU_RUN_MS\": \"%d\"%s}", j->run_ms,
           j->fail ? ", \"EMU_OUTCOME\": \"FAILED\"" : "");
  snprintf(out, len,
           "{\"name\": \"soak-%d\", \"queue\": \"%s\", \"priority_class\": "
           "\"%s\", \"task_count\": %d, \"max_run_duration_s\": 3600, "
           "\"labels\": {\"soak\": \"yes\"}, \"task\": {\"image\": "
           "\"us-docker.pkg.dev/p/r/soak:1\", \"commands\": [\"true\"], "
           "\"cpu_milli\": %d, \"memory_mib\": %d, \"gpu\": %d, \"env\": %s}}",
           j->key, queues[j->queue], classes[j->klass], j->tasks, 1000 * j->gpu,
           5120 * j->gpu, j->gpu, env);
}

/* A random job of team t (queue < 0: a random queue of the team's). */
static void random_job(unsigned *rng, int t, int queue, struct job *j)
{
  unsigned r = h_next_rand(rng) % 100;

  memset(j, 0, sizeof(*j));
  j->team = t;
  if (queue >= 0)
    j->queue = queue;
  else if (r < 50)
    j->queue = 0; /* lp */
  else if (r < 75)
    j->queue = 1; /* hp */
  else if (r < 81)
    j->queue = 2; /* compact */
  else
    j->queue = t < 2 ? 3 : 0; /* dws: teams a and b only */
  j->tasks = 1 + (int)(h_next_rand(rng) % 2);
  j->gpu = 1 + (int)(h_next_rand(rng) % 2);
  switch (j->queue) {
  case 1:
    j->klass = h_next_rand(rng) % 4 ? 1 : 0; /* mostly high */
    break;
  case 2:
    j->klass = h_next_rand(rng) % 2 ? 2 : 0;
    j->tasks = 1; /* the compact quota is 2 GPUs */
    break;
  default:
    j->klass = 0;
  }
  j->run_ms = 400 + (int)(h_next_rand(rng) % 2601);
  j->fail = h_next_rand(rng) % 100 < 3;
}

/* Submit j (a new key); records it when created. */
static void submit(struct job *j)
{
  char path[64], body[1024], key[64];
  const char *headers[2] = {key, NULL};
  struct h_resp r;
  long st;

  j->key = atomic_fetch_add(&S.next_key, 1);
  snprintf(path, sizeof(path), "/v1/teams/%s/jobs", teams[j->team]);
  snprintf(key, sizeof(key), "Idempotency-Key: soak-%d", j->key);
  job_body(j, body, sizeof(body));
  st = call(OP_SUBMIT, "POST", path, j->team, body, headers, &r);
  if (expect(st, 201, "POST", path, &r)) {
    const char *id = h_str(r.json, "id");
    if (!id) {
      atomic_fetch_add(&S.unexpected, 1);
      bad("POST %s: 201 without an id: %.300s", path, r.body);
    } else {
      snprintf(j->id, sizeof(j->id), "%s", id);
      pthread_mutex_lock(&S.mu);
      if (S.n_jobs == S.cap) {
        size_t cap = S.cap ? S.cap * 2 : 4096;
        struct job *grown = realloc(S.jobs, cap * sizeof(*grown));
        if (grown) {
          S.jobs = grown;
          S.cap = cap;
        }
      }
      if (S.n_jobs < S.cap)
        S.jobs[S.n_jobs++] = *j;
      pthread_mutex_unlock(&S.mu);
      atomic_fetch_add(&S.submitted, 1);
    }
  }
  h_resp_free(&r);
}

/* A copy of a known job: of the last `recent` (0: any); false if none. */
static bool pick(unsigned *rng, size_t recent, struct job *out, size_t *index)
{
  bool ok = false;

  pthread_mutex_lock(&S.mu);
  if (S.n_jobs > 0) {
    size_t n = recent && recent < S.n_jobs ? recent : S.n_jobs;
    size_t i = S.n_jobs - 1 - h_next_rand(rng) % n;
    *out = S.jobs[i];
    if (index)
      *index = i;
    ok = true;
  }
  pthread_mutex_unlock(&S.mu);
  return ok;
}

/* The same submission again, with its key, to (likely) another replica. */
static void replay(unsigned *rng)
{
  struct job j;
  char path[64], body[1024], key[64];
  const char *headers[2] = {key, NULL};
  struct h_resp r;
  long st;

  if (!pick(rng, 0, &j, NULL))
    return;
  snprintf(path, sizeof(path), "/v1/teams/%s/jobs", teams[j.team]);
  snprintf(key, sizeof(key), "Idempotency-Key: soak-%d", j.key);
  job_body(&j, body, sizeof(body));
  st = call(OP_REPLAY, "POST", path, j.team, body, headers, &r);
  if (expect(st, 201, "POST (replay)", path, &r)) {
    const char *id = h_str(r.json, "id");
    if (!id || strcmp(id, j.id) != 0) {
      atomic_fetch_add(&S.unexpected, 1);
      bad("replay of soak-%d answered id %s, not %s", j.key, id ? id : "-",
          j.id);
    }
    atomic_fetch_add(&S.replays, 1);
  }
  h_resp_free(&r);
}

static void get_job(unsigned *rng)
{
  struct job j;
  char path[128];
  struct h_resp r;
  long st;

  if (!pick(rng, h_next_rand(rng) % 2 ? 64 : 0, &j, NULL))
    return;
  snprintf(path, sizeof(path), "/v1/teams/%s/jobs/%s", teams[j.team], j.id);
  st = call(OP_GET, "GET", path, j.team, NULL, NULL, &r);
  if (expect(st, 200, "GET", path, &r) &&
      (!h_str(r.json, "id") || strcmp(h_str(r.json, "id"), j.id) != 0 ||
       !h_str(r.json, "state"))) {
    atomic_fetch_add(&S.unexpected, 1);
    bad("GET %s: not the job: %.300s", path, r.body);
  }
  h_resp_free(&r);
}

static void events(unsigned *rng)
{
  struct job j;
  char path[160];
  struct h_resp r;
  long st;

  if (!pick(rng, 64, &j, NULL))
    return;
  snprintf(path, sizeof(path), "/v1/teams/%s/jobs/%s/events", teams[j.team],
           j.id);
  st = call(OP_EVENTS, "GET", path, j.team, NULL, NULL, &r);
  if (expect(st, 200, "GET", path, &r) &&
      !json_is_array(json_object_get(r.json, "items"))) {
    atomic_fetch_add(&S.unexpected, 1);
    bad("GET %s: no items: %.300s", path, r.body);
  }
  h_resp_free(&r);
}

static void list(unsigned *rng)
{
  static const char *const filters[] = {"", "&state=RUNNING",
                                        "&state=PENDING,ADMITTED", "&queue=lp",
                                        "&label=soak=yes"};
  int t = (int)(h_next_rand(rng) % 4);
  char path[160];
  struct h_resp r;
  long st;

  snprintf(path, sizeof(path), "/v1/teams/%s/jobs?limit=50%s", teams[t],
           filters[h_next_rand(rng) % 5]);
  st = call(OP_LIST, "GET", path, t, NULL, NULL, &r);
  if (expect(st, 200, "GET", path, &r) &&
      !json_is_array(json_object_get(r.json, "items"))) {
    atomic_fetch_add(&S.unexpected, 1);
    bad("GET %s: no items: %.300s", path, r.body);
  }
  h_resp_free(&r);
}

static void pending(unsigned *rng)
{
  int t = (int)(h_next_rand(rng) % 4);
  int q = (int)(h_next_rand(rng) % (t < 2 ? 4 : 3));
  char path[160];
  struct h_resp r;
  long st;

  snprintf(path, sizeof(path), "/v1/teams/%s/queues/%s/pending?limit=20",
           teams[t], queues[q]);
  st = call(OP_PENDING, "GET", path, t, NULL, NULL, &r);
  if (expect(st, 200, "GET", path, &r) &&
      !json_is_array(json_object_get(r.json, "items"))) {
    atomic_fetch_add(&S.unexpected, 1);
    bad("GET %s: no items: %.300s", path, r.body);
  }
  h_resp_free(&r);
}

static void team_queues(unsigned *rng)
{
  int t = (int)(h_next_rand(rng) % 4);
  char path[96];
  struct h_resp r;
  long st;

  snprintf(path, sizeof(path), "/v1/teams/%s/queues", teams[t]);
  st = call(OP_QUEUES, "GET", path, t, NULL, NULL, &r);
  expect(st, 200, "GET", path, &r);
  h_resp_free(&r);
}

/* Cancel one of the last 32 jobs (most are still on their way). */
static void cancel(unsigned *rng)
{
  struct job j;
  size_t i;
  char path[160];
  struct h_resp r;
  long st;

  if (!pick(rng, 32, &j, &i))
    return;
  pthread_mutex_lock(&S.mu);
  S.jobs[i].cancelled = true; /* before the call: it may take effect */
  pthread_mutex_unlock(&S.mu);
  snprintf(path, sizeof(path), "/v1/teams/%s/jobs/%s/cancel", teams[j.team],
           j.id);
  st = call(OP_CANCEL, "POST", path, j.team, NULL, NULL, &r);
  if (expect(st, 200, "POST", path, &r))
    atomic_fetch_add(&S.cancels, 1);
  h_resp_free(&r);
}

struct client {
  pthread_t thread;
  unsigned rng;
};

static void *client(void *arg)
{
  struct client *c = arg;

  while (!atomic_load(&S.stop) && h_now_ms() < S.deadline) {
    unsigned r = h_next_rand(&c->rng) % 1000;
    struct job j;

    if (r < 220) {
      if (h_next_rand(&c->rng) % 100 < 8) {
        /* a burst of big urgent jobs in one team: they reclaim the
         * reservation from borrowing low-priority jobs */
        int t = (int)(h_next_rand(&c->rng) % 4), k;
        atomic_fetch_add(&S.bursts, 1);
        for (k = 0; k < 3; k++) {
          random_job(&c->rng, t, 1, &j);
          j.klass = 1;
          j.tasks = 2;
          j.gpu = 2;
          submit(&j);
        }
      } else {
        random_job(&c->rng, (int)(h_next_rand(&c->rng) % 4), -1, &j);
        submit(&j);
      }
    } else if (r < 240) {
      replay(&c->rng);
    } else if (r < 600) {
      get_job(&c->rng);
    } else if (r < 700) {
      list(&c->rng);
    } else if (r < 800) {
      pending(&c->rng);
    } else if (r < 870) {
      events(&c->rng);
    } else if (r < 883) {
      cancel(&c->rng);
    } else {
      team_queues(&c->rng);
    }
    h_sleep_ms(50 + (long)(h_next_rand(&c->rng) % 101));
  }
  return NULL;
}

/* ---- the database ------------------------------------------------------ */

#define TERMINAL "('SUCCEEDED', 'FAILED', 'CANCELLED')"

/* Holders of the admission leader lock in this database. */
static const char sql_leader[] =
    "SELECT coalesce(string_agg(pid::text, ','), '') FROM pg_locks "
    "WHERE locktype = 'advisory' AND classid = 0 AND objid = " LEADER_LOCK
    " AND objsubid = 1 AND granted AND database = (SELECT oid FROM "
    "pg_database WHERE datname = current_database())";

/* Prepared once per connection: planning costs more than running them. */
static bool prepare_checks(PGconn *pg)
{
  PGresult *a =
      PQprepare(pg, "soak_violations", h_sql_quota_violations, 0, NULL);
  PGresult *b = PQprepare(pg, "soak_leader", sql_leader, 0, NULL);
  bool ok = PQresultStatus(a) == PGRES_COMMAND_OK &&
            PQresultStatus(b) == PGRES_COMMAND_OK;

  PQclear(a);
  PQclear(b);
  return ok;
}

struct watcher {
  pthread_t thread;
  const char *db_url;
  atomic_bool stop;
  long checks, bad;
  char first[512];
  /* the leader lock */
  long samples, none, many, changes;
  char holder[32];
  char holders[256]; /* every holder pid seen, in order */
};

static void *watch(void *arg)
{
  struct watcher *w = arg;
  PGconn *pg = h_db_connect(w->db_url);
  long k = 0;

  if (PQstatus(pg) != CONNECTION_OK || !prepare_checks(pg)) {
    snprintf(w->first, sizeof(w->first), "watcher: %s", PQerrorMessage(pg));
    w->bad = -1;
    PQfinish(pg);
    return NULL;
  }
  while (!atomic_load(&w->stop)) {
    char first[512];
    int n = h_db_violations(pg, "soak_violations", first, sizeof(first));
    if (n != 0) {
      if (!w->bad)
        snprintf(w->first, sizeof(w->first), "%s", first);
      w->bad++;
    }
    w->checks++;
    if (k++ % 5 == 0) {
      PGresult *res = PQexecPrepared(pg, "soak_leader", 0, NULL, NULL, NULL, 0);
      if (PQresultStatus(res) == PGRES_TUPLES_OK) {
        const char *pids = PQgetvalue(res, 0, 0);
        w->samples++;
        if (!*pids) {
          w->none++;
        } else if (strchr(pids, ',')) {
          w->many++;
          if (!w->bad)
            snprintf(w->first, sizeof(w->first),
                     "the leader lock is held by backends %s", pids);
          w->bad++;
        } else if (strcmp(pids, w->holder) != 0) {
          size_t used = strlen(w->holders);
          if (w->holder[0])
            w->changes++;
          snprintf(w->holder, sizeof(w->holder), "%s", pids);
          snprintf(w->holders + used, sizeof(w->holders) - used, "%s%s",
                   used ? "," : "", pids);
        }
      }
      PQclear(res);
    }
    h_sleep_ms(15);
  }
  PQfinish(pg);
  return NULL;
}

/* ---- logs ------------------------------------------------------------- */

/* CPU seconds (user + system) process pid has used so far; -1 if gone. */
static double cpu_seconds(pid_t pid)
{
  char path[64], buf[1024], *p, *end;
  unsigned long long utime, stime;
  FILE *f;
  size_t n;
  int field;

  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  f = fopen(path, "r");
  if (!f)
    return -1;
  n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* after "(comm) ": state ppid pgrp session tty tpgid flags minflt
   * cminflt majflt cmajflt, then utime and stime (fields 14 and 15) */
  p = strrchr(buf, ')');
  for (field = 0; p && field < 12; field++)
    p = strchr(p + 1, ' ');
  if (!p)
    return -1;
  utime = strtoull(p + 1, &end, 10);
  if (end == p + 1 || *end != ' ')
    return -1;
  stime = strtoull(end + 1, &p, 10);
  if (p == end + 1)
    return -1;
  return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* ---- the emulator ------------------------------------------------------ */

/* "gpugate-<id>-a<n>" (the jobId or the last part of a name) into id and
 * attempt; false when it is no gpugate job id. */
static bool parse_batch_id(const char *name, char *id, size_t idlen,
                           int *attempt)
{
  const char *base = strrchr(name, '/'), *dash;
  char *end;
  long n;

  base = base ? base + 1 : name;
  dash = strrchr(base, '-');
  if (strncmp(base, JOB_PREFIX, strlen(JOB_PREFIX)) != 0 || !dash ||
      dash <= base + strlen(JOB_PREFIX) || dash[1] != 'a')
    return false;
  n = strtol(dash + 2, &end, 10);
  if (*end || n < 1)
    return false;
  snprintf(id, idlen, "%.*s", (int)(dash - base - (int)strlen(JOB_PREFIX)),
           base + strlen(JOB_PREFIX));
  *attempt = (int)n;
  return true;
}

/* A Batch job that runs or may still run: not finished, not being
 * stopped. */
static bool batch_live(const char *state)
{
  return state && (!strcmp(state, "QUEUED") || !strcmp(state, "SCHEDULED") ||
                   !strcmp(state, "RUNNING"));
}

/*
 * A look at the emulator while the load runs: no Batch job was created
 * twice; per gpugate job at most one live Batch job (queued, scheduled or
 * running), and that one of its latest attempt. An earlier attempt may
 * still be CANCELLATION_IN_PROGRESS when the next is created (SPEC §4: an
 * eviction completes on CANCELLATION_IN_PROGRESS); *overlaps counts those.
 * Returns how many Batch jobs it saw.
 */
static size_t emu_sample(const struct h_server *emu, long *overlaps)
{
  json_t *dump = h_emu_get(emu, "/emulator/jobs");
  json_t *latest = json_object(), *live = json_object(), *stopping, *j, *v;
  const char *name;
  size_t i, n = json_array_size(json_object_get(dump, "jobs"));

  json_object_foreach (json_object_get(dump, "creates"), name, v) {
    ck_assert_msg(json_integer_value(v) == 1, "Batch job %s created %lld times",
                  name, (long long)json_integer_value(v));
  }
  stopping = json_object();
  json_array_foreach (json_object_get(dump, "jobs"), i, j) {
    char id[40];
    int attempt;
    const char *state = h_str(j, "state");
    name = h_str(j, "name");
    ck_assert_msg(name && parse_batch_id(name, id, sizeof(id), &attempt),
                  "a Batch job gpugate did not name: %s", name ? name : "-");
    if (attempt > json_integer_value(json_object_get(latest, id)))
      json_object_set_new(latest, id, json_integer(attempt));
    if (batch_live(state)) {
      const char *prev = h_str(live, id);
      ck_assert_msg(!prev, "gpugate job %s has two live Batch jobs: %s and %s",
                    id, prev ? prev : "", name);
      json_object_set_new(live, id, json_pack("[s, i]", name, attempt));
    } else if (!terminal(state)) {
      json_object_set_new(stopping, id, json_true());
    }
  }
  json_object_foreach (live, name, v) {
    int attempt = (int)json_integer_value(json_array_get(v, 1));
    ck_assert_msg(attempt == json_integer_value(json_object_get(latest, name)),
                  "Batch job %s of attempt %d still runs, though attempt "
                  "%lld was created",
                  json_string_value(json_array_get(v, 0)), attempt,
                  (long long)json_integer_value(json_object_get(latest, name)));
    if (json_object_get(stopping, name))
      (*overlaps)++;
  }
  json_decref(stopping);
  json_decref(live);
  json_decref(latest);
  json_decref(dump);
  return n;
}

/* Wait until the emulator has no unfinished Batch job; how many it has. */
static size_t emu_wait_finished(const struct h_server *emu, long long deadline)
{
  for (;;) {
    json_t *dump = h_emu_get(emu, "/emulator/jobs"), *j;
    size_t i, busy = 0;
    json_array_foreach (json_object_get(dump, "jobs"), i, j) {
      busy += !terminal(h_str(j, "state"));
    }
    json_decref(dump);
    if (busy == 0 || h_now_ms() >= deadline)
      return busy;
    h_sleep_ms(250);
  }
}

/*
 * The Batch side after the drain. jobs: id → [attempt, state,
 * batch_job_name or ""] of every gpugate job. Returns the number of creates.
 */
static size_t assert_batch(const struct h_server *emu, PGconn *pg, json_t *jobs)
{
  json_t *dump = h_emu_get(emu, "/emulator/jobs");
  json_t *creates = json_object_get(dump, "creates");
  json_t *attempts = json_object(), *states = json_object(), *j, *v, *row;
  const char *name;
  PGresult *res;
  size_t i, n_creates = json_object_size(creates);
  int k;

  ck_assert_ptr_nonnull(creates);
  /* every create: once, for a gpugate job attempt, one name per attempt */
  json_object_foreach (creates, name, v) {
    char id[40], key[64];
    int attempt;
    ck_assert_msg(json_integer_value(v) == 1,
                  "Batch job %s was created %lld "
                  "times",
                  name, (long long)json_integer_value(v));
    ck_assert_msg(parse_batch_id(name, id, sizeof(id), &attempt),
                  "a Batch job gpugate did not name: %s", name);
    row = json_object_get(jobs, id);
    ck_assert_msg(row != NULL, "Batch job %s belongs to no gpugate job", name);
    ck_assert_msg(attempt <= json_integer_value(json_array_get(row, 0)),
                  "Batch job %s is for attempt %d; the job is in attempt "
                  "%lld",
                  name, attempt,
                  (long long)json_integer_value(json_array_get(row, 0)));
    snprintf(key, sizeof(key), "%s-a%d", id, attempt);
    ck_assert_msg(!json_object_get(attempts, key),
                  "job attempt %s has two Batch jobs: %s and %s", key,
                  h_str(attempts, key), name);
    json_object_set_new(attempts, key, json_string(name));
  }
  /* every Batch job: created once, finished, known to the creates */
  json_array_foreach (json_object_get(dump, "jobs"), i, j) {
    const char *state = h_str(j, "state");
    name = h_str(j, "name");
    ck_assert_ptr_nonnull(name);
    ck_assert_msg(json_object_get(creates, name) != NULL,
                  "Batch job %s is not among the creates", name);
    ck_assert_msg(
        json_integer_value(json_object_get(j, "createCount")) == 1,
        "Batch job %s: createCount %lld", name,
        (long long)json_integer_value(json_object_get(j, "createCount")));
    ck_assert_msg(terminal(state),
                  "Batch job %s is still %s though every job is terminal", name,
                  state);
    ck_assert_msg(!json_object_get(states, name), "Batch job %s listed twice",
                  name);
    json_object_set_new(states, name, json_string(state));
  }
  /* each job's last Batch job ended as the job did; earlier attempts were
   * stopped (evicted) */
  json_object_foreach (jobs, name, row) {
    const char *state = json_string_value(json_array_get(row, 1));
    const char *bname = json_string_value(json_array_get(row, 2));
    const char *bstate;
    if (!bname || !*bname) {
      ck_assert_msg(strcmp(state, "SUCCEEDED") != 0 &&
                        strcmp(state, "FAILED") != 0,
                    "job %s is %s without a Batch job", name, state);
      continue;
    }
    bstate = h_str(states, bname);
    ck_assert_msg(bstate != NULL,
                  "job %s names Batch job %s, which the "
                  "emulator does not have",
                  name, bname);
    if (!strcmp(state, "CANCELLED"))
      ck_assert_msg(!strcmp(bstate, "CANCELLED") || !strcmp(bstate, "FAILED"),
                    "job %s is CANCELLED, its Batch job %s %s", name, bname,
                    bstate);
    else
      ck_assert_msg(!strcmp(state, bstate), "job %s is %s, its Batch job %s %s",
                    name, state, bname, bstate);
  }
  json_object_foreach (states, name, v) {
    char id[40];
    int attempt;
    row = parse_batch_id(name, id, sizeof(id), &attempt)
              ? json_object_get(jobs, id)
              : NULL;
    ck_assert_ptr_nonnull(row);
    if (attempt < json_integer_value(json_array_get(row, 0)))
      ck_assert_msg(!strcmp(json_string_value(v), "CANCELLED") ||
                        !strcmp(json_string_value(v), "FAILED"),
                    "Batch job %s of an evicted attempt is %s", name,
                    json_string_value(v));
  }
  /* every Batch job gpugate recorded as created is among the creates, and
   * recorded at most once per attempt */
  res = PQexec(pg, "SELECT job_id, attempt, count(*), min(message) FROM "
                   "job_events WHERE reason = 'BatchJobCreated' GROUP BY 1, 2");
  ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
  for (k = 0; k < PQntuples(res); k++) {
    ck_assert_msg(!strcmp(PQgetvalue(res, k, 2), "1"),
                  "job %s attempt %s: BatchJobCreated %s times",
                  PQgetvalue(res, k, 0), PQgetvalue(res, k, 1),
                  PQgetvalue(res, k, 2));
    ck_assert_msg(json_object_get(creates, PQgetvalue(res, k, 3)) != NULL,
                  "job %s attempt %s recorded Batch job %s, never created",
                  PQgetvalue(res, k, 0), PQgetvalue(res, k, 1),
                  PQgetvalue(res, k, 3));
  }
  PQclear(res);
  json_decref(states);
  json_decref(attempts);
  json_decref(dump);
  return n_creates;
}

/* ---- the test --------------------------------------------------------- */

static void start_replica(int k, const struct h_server *emu, const char *db_url,
                          const char *secret_env)
{
  static char gcp[H_GCP_ENV][128];
  const char *env[16];
  size_t n = 0, i;

  h_gcp_env(emu, gcp);
  for (i = 0; i < H_GCP_ENV; i++)
    env[n++] = gcp[i];
  env[n++] = "GPUGATE_RATE_LIMIT_RPS=100000";
  env[n++] = "GPUGATE_ADMISSION_INTERVAL_MS=200";
  env[n++] = "GPUGATE_SYNC_INTERVAL_MS=1000";
  env[n++] = secret_env;
  env[n] = NULL;
  ck_assert_msg(h_server_start(&S.srv[k], db_url, env) == 0,
                "replica %d did not start; see %s", k, S.srv[k].log);
}

/* Wait until sql (a count) is 0 or the deadline passes; the last count. */
static long long wait_zero(PGconn *pg, const char *sql, long long deadline)
{
  long long v;

  while ((v = h_db_int(pg, sql)) != 0 && h_now_ms() < deadline)
    h_sleep_ms(250);
  return v;
}

START_TEST(soak_three_replicas)
{
  /* twice the reference architecture's quota per location and model */
  static const char capacity[] =
      "EMU_CAPACITY=us-central1/SPOT=112,us-central1/STANDARD=32,"
      "us-central1/RESERVATION_BOUND=32,us-central1/FLEX_START=40";
  static const char *const emu_env[] = {"EMU_LOG_LEVEL=warn", "EMU_RUN_MS=2000",
                                        "EMU_START_MS=100", capacity, NULL};
  long seconds = soak_seconds();
  struct client clients[SOAK_CLIENTS];
  struct watcher w;
  struct h_server emu;
  char db_url[512], secret_file[64], secret_env[128], cfg[256];
  char summary[512];
  long long t0 = h_now_ms(), t_load, t_stop, t_drained, t_end, left;
  long long n_db, succeeded, failed, cancelled, evictions, requeued;
  long long max_attempt, repeat_evictions;
  long long leftover = 0;
  size_t emu_jobs = 0, n_creates, i;
  long samples = 0, overlaps = 0, pushes_delivered = 0;
  double cpu_replicas = 0, cpu_emu, cpu_self;
  int k, leader = -1, leader_lines = 0, lost_lines = 0;
  json_t *jobs, *known;
  PGresult *res;
  PGconn *pg;

  memset(&S, 0, sizeof(S));
  pthread_mutex_init(&S.mu, NULL);

  /* the database, the emulator, the push secret, three replicas */
  h_db_apply("it_soak", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_msg(h_emulator_start(&emu, emu_env) == 0,
                "the emulator did not start; see %s", emu.log);
  h_write_temp("soak", PUSH_SECRET "\n", secret_file, sizeof(secret_file));
  snprintf(secret_env, sizeof(secret_env), "GPUGATE_PUBSUB_PUSH_SECRET_FILE=%s",
           secret_file);
  for (k = 0; k < N_REPLICAS; k++)
    start_replica(k, &emu, db_url, secret_env);
  snprintf(cfg, sizeof(cfg),
           "{\"EMU_PUSH_URL\": \"http://127.0.0.1:%u/v1/batch/"
           "notifications?token=" PUSH_SECRET "\"}",
           S.srv[0].port);
  {
    struct h_resp r;
    ck_assert_int_eq(
        h_request(&emu, "POST", "/emulator/config", NULL, cfg, NULL, &r), 0);
    ck_assert_msg(r.status == 200, "POST /emulator/config: %ld %s", r.status,
                  r.body);
    h_resp_free(&r);
  }
  for (k = 0; k < 4; k++) {
    S.tokens[k] = h_token(teams[k], "member", 86400);
    ck_assert_ptr_nonnull(S.tokens[k]);
  }
  pg = h_db_connect(db_url);
  ck_assert_msg(PQstatus(pg) == CONNECTION_OK && prepare_checks(pg), "%s",
                PQerrorMessage(pg));
  fprintf(stderr, "soak: %ld s; logs %s %s %s, emulator %s\n", seconds,
          S.srv[0].log, S.srv[1].log, S.srv[2].log, emu.log);

  /* the watcher, then the load */
  memset(&w, 0, sizeof(w));
  w.db_url = db_url;
  atomic_init(&w.stop, false);
  ck_assert_int_eq(pthread_create(&w.thread, NULL, watch, &w), 0);
  t_load = h_now_ms();
  S.deadline = t_load + seconds * 1000;
  for (k = 0; k < SOAK_CLIENTS; k++) {
    clients[k].rng = 0x50a4c0deu + 7919u * (unsigned)k;
    ck_assert_int_eq(
        pthread_create(&clients[k].thread, NULL, client, &clients[k]), 0);
  }
  while (h_now_ms() < S.deadline) {
    h_sleep_ms(EMU_SAMPLE_MS);
    emu_jobs = emu_sample(&emu, &overlaps);
    samples++;
  }
  atomic_store(&S.stop, true);
  for (k = 0; k < SOAK_CLIENTS; k++)
    pthread_join(clients[k].thread, NULL);
  t_stop = h_now_ms();

  /* the drain: every job terminal, the leftovers cancelled */
  left = wait_zero(pg, "SELECT count(*) FROM jobs WHERE state NOT IN " TERMINAL,
                   h_now_ms() + DRAIN_MS);
  if (left) {
    res = PQexec(pg, "SELECT id, team FROM jobs WHERE state NOT IN " TERMINAL);
    ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
    for (k = 0; k < PQntuples(res); k++) {
      char path[160];
      struct h_resp r;
      int t;
      for (t = 0; t < 3 && strcmp(teams[t], PQgetvalue(res, k, 1)) != 0; t++) {
      }
      snprintf(path, sizeof(path), "/v1/teams/%s/jobs/%s/cancel", teams[t],
               PQgetvalue(res, k, 0));
      pthread_mutex_lock(&S.mu);
      for (i = 0; i < S.n_jobs; i++)
        if (!strcmp(S.jobs[i].id, PQgetvalue(res, k, 0)))
          S.jobs[i].cancelled = true;
      pthread_mutex_unlock(&S.mu);
      expect(call(OP_CANCEL, "POST", path, t, NULL, NULL, &r), 200, "POST",
             path, &r);
      h_resp_free(&r);
      leftover++;
    }
    PQclear(res);
    left =
        wait_zero(pg, "SELECT count(*) FROM jobs WHERE state NOT IN " TERMINAL,
                  h_now_ms() + CANCEL_MS);
  }
  t_drained = h_now_ms();
  h_db_state_summary(pg, summary, sizeof(summary));
  ck_assert_msg(left == 0, "%lld jobs not terminal after the drain: %s", left,
                summary);
  ck_assert_msg(wait_zero(pg,
                          "SELECT count(*) FROM batch_ops o JOIN jobs j ON "
                          "j.id = o.job_id WHERE j.state IN " TERMINAL,
                          h_now_ms() + OUTBOX_MS) == 0,
                "the outbox still holds operations of terminal jobs");

  ck_assert_msg(emu_wait_finished(&emu, h_now_ms() + 15000) == 0,
                "Batch jobs still unfinished though every job is terminal");

  atomic_store(&w.stop, true);
  pthread_join(w.thread, NULL);

  /* no failed, slow or unanswered request */
  ck_assert_msg(
      atomic_load(&S.no_response) == 0 && atomic_load(&S.server_errors) == 0 &&
          atomic_load(&S.unexpected) == 0 && atomic_load(&S.slow) == 0,
      "%ld without response, %ld 5xx, %ld unexpected, %ld slower "
      "than %d ms; first: %s",
      atomic_load(&S.no_response), atomic_load(&S.server_errors),
      atomic_load(&S.unexpected), atomic_load(&S.slow), SLOW_MS, S.first_bad);
  /* every replica served its share */
  for (k = 0; k < N_REPLICAS; k++)
    ck_assert_msg(atomic_load(&S.per_replica[k]) * 4 >=
                      atomic_load(&S.requests),
                  "replica %d served %ld of %ld requests", k,
                  atomic_load(&S.per_replica[k]), atomic_load(&S.requests));

  /* the invariants held at every check, and hold now */
  ck_assert_msg(w.bad == 0,
                "invariants violated at %ld of %ld checks, first: "
                "%s",
                w.bad, w.checks, w.first);
  /* every ~15 ms when idle; slower on a busy machine, but not blind */
  ck_assert_msg(w.checks >= seconds * 2, "only %ld invariant checks in %ld s",
                w.checks, seconds);
  {
    char first[512] = "";
    int n = h_db_violations(pg, "soak_violations", first, sizeof(first));
    ck_assert_msg(n == 0, "after the drain: %d violations, e.g. %s", n, first);
  }

  /* one leader all along */
  for (k = 0; k < N_REPLICAS; k++) {
    int lines = h_log_count(&S.srv[k], LEADER_LINE);
    leader_lines += lines;
    lost_lines += h_log_count(&S.srv[k], LOST_LINE);
    if (lines)
      leader = k;
  }
  ck_assert_msg(leader_lines == 1 && lost_lines == 0,
                "%d leader lines and %d lost-lock lines in the three logs",
                leader_lines, lost_lines);
  for (k = 0; k < N_REPLICAS; k++) {
    int cycles = h_log_count(&S.srv[k], CYCLE_LINE);
    if (k == leader)
      ck_assert_msg(cycles > 0,
                    "the leader (replica %d) logged no admission "
                    "cycle; see %s",
                    k, S.srv[k].log);
    else
      ck_assert_msg(cycles == 0,
                    "replica %d, not the leader, logged %d "
                    "admission cycles; see %s",
                    k, cycles, S.srv[k].log);
  }
  ck_assert_msg(w.many == 0 && w.changes == 0 && w.holder[0],
                "leader lock holders seen: \"%s\" (%ld samples with more than "
                "one)",
                w.holders, w.many);
  ck_assert_msg(w.none * 100 <= w.samples, "no leader at %ld of %ld samples",
                w.none, w.samples);

  /* each job ended as asked; nothing lost, nothing duplicated */
  jobs = json_object();
  res = PQexec(pg, "SELECT id, attempt, state, coalesce(batch_job_name, '') "
                   "FROM jobs");
  ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
  for (k = 0; k < PQntuples(res); k++)
    json_object_set_new(
        jobs, PQgetvalue(res, k, 0),
        json_pack("[i, s, s]", (int)strtol(PQgetvalue(res, k, 1), NULL, 10),
                  PQgetvalue(res, k, 2), PQgetvalue(res, k, 3)));
  PQclear(res);
  n_db = (long long)json_object_size(jobs);
  ck_assert_int_eq(n_db, (long long)S.n_jobs);
  ck_assert_int_eq(n_db, atomic_load(&S.submitted));
  known = json_object();
  for (i = 0; i < S.n_jobs; i++) {
    const struct job *j = &S.jobs[i];
    json_t *row = json_object_get(jobs, j->id);
    const char *state = row ? json_string_value(json_array_get(row, 1)) : NULL;
    bool ok;
    ck_assert_msg(row != NULL, "job %s (soak-%d) is not in the database", j->id,
                  j->key);
    ck_assert_msg(!json_object_get(known, j->id), "two submissions got id %s",
                  j->id);
    json_object_set_new(known, j->id, json_true());
    ok = !strcmp(state, j->fail ? "FAILED" : "SUCCEEDED") ||
         (j->cancelled && !strcmp(state, "CANCELLED"));
    ck_assert_msg(ok, "job %s (soak-%d, %s, %s%s) ended %s", j->id, j->key,
                  queues[j->queue],
                  j->fail ? "told to fail" : "told to succeed",
                  j->cancelled ? ", cancelled" : "", state);
  }
  json_decref(known);

  /* the Batch side: no job dispatched twice */
  n_creates = assert_batch(&emu, pg, jobs);
  json_decref(jobs);

  /* the push notifications reached replica 0, none refused */
  {
    json_t *health = h_emu_get(&emu, "/emulator/healthz");
    json_t *pushes = json_object_get(health, "pushes");
    pushes_delivered =
        (long)json_integer_value(json_object_get(pushes, "delivered"));
    long push_failed =
        (long)json_integer_value(json_object_get(pushes, "failed"));
    ck_assert_msg(pushes_delivered > 0 && push_failed == 0,
                  "pushes: %ld delivered, %ld failed", pushes_delivered,
                  push_failed);
    json_decref(health);
  }
  for (k = 0; k < N_REPLICAS; k++)
    cpu_replicas += cpu_seconds(S.srv[k].pid);
  cpu_emu = cpu_seconds(emu.pid);
  cpu_self = cpu_seconds(getpid());

  succeeded = h_db_int(pg, "SELECT count(*) FROM jobs WHERE state = "
                           "'SUCCEEDED'");
  failed = h_db_int(pg, "SELECT count(*) FROM jobs WHERE state = 'FAILED'");
  cancelled = h_db_int(pg, "SELECT count(*) FROM jobs WHERE state = "
                           "'CANCELLED'");
  evictions = h_db_int(pg, "SELECT count(*) FROM job_events WHERE to_state = "
                           "'EVICTING'");
  requeued = h_db_int(pg, "SELECT count(*) FROM jobs WHERE attempt > 1");
  max_attempt = h_db_int(pg, "SELECT max(attempt) FROM jobs");
  /* the same job evicted again for the same preemptor: the preemptor waited
   * for another victim while this one was admitted again into the quota it
   * had freed (reported, not asserted) */
  repeat_evictions = h_db_int(
      pg, "SELECT count(*) - count(DISTINCT (job_id, substring(message FROM "
          "'make room for job ([a-z0-9-]+)'))) FROM job_events WHERE "
          "to_state = 'EVICTING' AND message LIKE '%make room for job%'");
  if (seconds >= 60)
    ck_assert_msg(evictions > 0,
                  "no eviction in %ld s: the load never "
                  "preempted",
                  seconds);
  t_end = h_now_ms();

  {
    char ops[256];
    size_t used = 0;
    long reqs = atomic_load(&S.requests);
    for (k = 0; k < N_OPS && used < sizeof(ops); k++) {
      int n = snprintf(ops + used, sizeof(ops) - used, "%s%s %ld",
                       k ? ", " : "", op_names[k], atomic_load(&S.per_op[k]));
      used += n > 0 ? (size_t)n : 0;
    }
    fprintf(stderr,
            "soak: %ld s of load on %d replicas (setup %.1f s, drain %.1f s, "
            "checks %.1f s): %lld jobs submitted (%ld bursts), %lld "
            "succeeded, %lld failed as told, %lld cancelled (%lld left after "
            "the drain), %lld evictions (%lld again for the same preemptor), "
            "%lld jobs ran more than one attempt "
            "(at most %lld), "
            "%zu Batch creates (%zu Batch jobs at the last of %ld samples; "
            "%ld times a new attempt ran while the evicted one was still "
            "cancelling); "
            "%ld requests, %.1f/s (replicas %ld/%ld/%ld; %s), mean %.1f ms, "
            "max %ld ms; %ld invariant checks, %ld leader lock samples "
            "(backend %s, replica %d); %ld pushes; CPU: replicas %.1f s, "
            "emulator %.1f s, this test %.1f s\n",
            seconds, N_REPLICAS, (double)(t_load - t0) / 1000.0,
            (double)(t_drained - t_stop) / 1000.0,
            (double)(t_end - t_drained) / 1000.0, n_db, atomic_load(&S.bursts),
            succeeded, failed, cancelled, leftover, evictions, repeat_evictions,
            requeued, max_attempt, n_creates, emu_jobs, samples, overlaps, reqs,
            (double)reqs * 1000.0 / (double)(t_stop - t_load),
            atomic_load(&S.per_replica[0]), atomic_load(&S.per_replica[1]),
            atomic_load(&S.per_replica[2]), ops,
            (double)atomic_load(&S.latency_sum_ms) / (double)(reqs ? reqs : 1),
            atomic_load(&S.max_latency_ms), w.checks, w.samples, w.holder,
            leader, pushes_delivered, cpu_replicas, cpu_emu, cpu_self);
  }

  PQfinish(pg);
  for (k = 0; k < N_REPLICAS; k++)
    h_server_stop(&S.srv[k]);
  h_server_stop(&emu);
  unlink(secret_file);
  for (k = 0; k < 4; k++)
    free(S.tokens[k]);
  free(S.jobs);
}
END_TEST

Suite *soak_suite(void)
{
  Suite *s = suite_create("soak");
  TCase *tc = tcase_create("soak");

  /* the load, the drain and cancel deadlines, setup and checks */
  tcase_set_timeout(tc, (double)(soak_seconds() + 330));
  tcase_add_test(tc, soak_three_replicas);
  suite_add_tcase(s, tc);
  return s;
}
