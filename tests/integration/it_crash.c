/*
 * it_crash.c — exactly once against the Batch emulator (SPEC §4), as a
 * black box: build/gpugate with GPUGATE_BATCH_BACKEND=gcp pointed at
 * build/batch_emulator, one SPOT flavor with ample quota
 * (tests/fixtures/crash-config.json).
 *
 *   crash   2,000 jobs flow while gpugate is killed with SIGKILL at ten
 *           random moments (fixed seed) and restarted on the same
 *           database; submissions retry with their Idempotency-Key. In the
 *           end every job SUCCEEDED, exactly 2,000 exist, the emulator holds
 *           exactly one Batch job per (job, attempt), each created once,
 *           and nothing else; the outbox is empty.
 *   faults  20 % of Batch calls answer 429/503, 3 % time out: every job
 *           still succeeds, each Batch job was created once, and after a
 *           429 with Retry-After: 1 the next create of that job id came at
 *           least a second later.
 *   tokens  metadata server: Metadata-Flavor sent, tokens cached (one
 *           fetch per token source for many calls) and refreshed before
 *           expiry with a short lifetime; service-account key file: an
 *           RS256 JWT-bearer grant the emulator verifies, and a key the
 *           emulator rejects leaves jobs ADMITTED (retried, never failed)
 *           until a good key is configured.
 *
 * Every test starts its own emulator and gpugate inside the forked test
 * process (Check kills the test's process group afterwards, so a failed
 * test leaves nothing running) and polls with deadlines.
 */
#include <check.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *crash_suite(void);

#define CONFIG "tests/fixtures/crash-config.json"
#define TEAM "crash"
#define REGION_JOBS "projects/test-project/locations/us-central1/jobs/"
#define METADATA_TOKEN                                                         \
  "/computeMetadata/v1/instance/service-accounts/default/token"
#define BATCH_PREFIX "/v1/projects/test-project/locations/"

#define CRASH_JOBS 2000
#define CRASH_KILLS 10
#define CRASH_SUBMITTERS 4
#define CRASH_SPREAD_MS 10000 /* submissions spread over this long */
#define CRASH_SEED 20261122u

/* The emulator's "time" (RFC 3339, microseconds, UTC) in microseconds. */
static long long time_us(const char *s)
{
  struct tm tm;
  long usec = 0;

  memset(&tm, 0, sizeof(tm));
  if (!s ||
      sscanf(s, "%d-%d-%dT%d:%d:%d.%ldZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
             &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &usec) != 7)
    return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return (long long)timegm(&tm) * 1000000LL + usec;
}

/* Tokens and keys are never logged (SPEC §4). */
static void assert_no_secrets(const struct h_server *srv)
{
  ck_assert_msg(h_log_count(srv, "ya29.") == 0, "an access token is in %s",
                srv->log);
  ck_assert_msg(h_log_count(srv, "PRIVATE KEY") == 0, "a private key is in %s",
                srv->log);
  ck_assert_msg(h_log_count(srv, "eyJ") == 0, "a JWT is in %s", srv->log);
}

/* ---- database ------------------------------------------------------- */

static PGconn *connect_db(const char *url)
{
  PGconn *pg = h_db_connect(url);

  ck_assert_msg(PQstatus(pg) == CONNECTION_OK, "%s", PQerrorMessage(pg));
  return pg;
}

/* Wait until all n jobs are terminal; returns how many are. */
static long long wait_terminal(PGconn *pg, long long n, long long deadline_ms)
{
  long long done;

  for (;;) {
    done = h_db_int(pg, "SELECT count(*) FROM jobs WHERE state IN "
                        "('SUCCEEDED', 'FAILED', 'CANCELLED')");
    if (done >= n || h_now_ms() >= deadline_ms)
      return done;
    h_sleep_ms(250);
  }
}

/* ---- processes ------------------------------------------------------ */

static void start_emulator(struct h_server *emu, const char *const *extra)
{
  const char *env[32];
  size_t n = 0, i;

  env[n++] = "EMU_LOG_LEVEL=warn";
  env[n++] = "EMU_START_MS=50";
  for (i = 0; extra && extra[i] && n < 31; i++)
    env[n++] = extra[i];
  env[n] = NULL;
  ck_assert_int_eq(h_emulator_start(emu, env), 0);
}

/* gpugate against the emulator, plus extra "NAME=value" entries. */
static int start_gpugate(struct h_server *srv, const struct h_server *emu,
                         const char *db_url, const char *const *extra)
{
  static char store[H_GCP_ENV][128];
  const char *env[40];
  size_t n = 0, i;

  h_gcp_env(emu, store);
  for (i = 0; i < H_GCP_ENV; i++)
    env[n++] = store[i];
  env[n++] = "GPUGATE_RATE_LIMIT_RPS=100000";
  env[n++] = "GPUGATE_ADMISSION_INTERVAL_MS=200";
  env[n++] = "GPUGATE_SYNC_INTERVAL_MS=300";
  for (i = 0; extra && extra[i] && n < 39; i++)
    env[n++] = extra[i];
  env[n] = NULL;
  return h_server_start(srv, db_url, env);
}

/* ---- jobs ----------------------------------------------------------- */

static void job_body(int i, char *out, size_t len)
{
  snprintf(out, len,
           "{\"name\": \"c-%d\", \"queue\": \"q\", \"task_count\": 1, "
           "\"task\": {\"image\": \"us-docker.pkg.dev/p/r/work:1\", "
           "\"commands\": [\"true\"], \"cpu_milli\": 100, \"memory_mib\": "
           "128, \"gpu\": 1}}",
           i);
}

/*
 * One submission to the server on port; 201 writes the job's id. Returns
 * the HTTP status, or 0 when no response arrived.
 */
static long submit_once(unsigned short port, const char *token, int i,
                        char id[40])
{
  struct h_server s;
  struct h_resp r;
  char body[512], key[64];
  const char *headers[2] = {key, NULL};
  long status;

  memset(&s, 0, sizeof(s));
  s.port = port;
  job_body(i, body, sizeof(body));
  snprintf(key, sizeof(key), "Idempotency-Key: crash-%d", i);
  if (h_request(&s, "POST", "/v1/teams/" TEAM "/jobs", token, body, headers,
                &r) != 0) {
    h_resp_free(&r);
    return 0;
  }
  status = r.status;
  if (status == 201 && h_str(r.json, "id"))
    snprintf(id, 40, "%s", h_str(r.json, "id"));
  else if (status == 201)
    status = -201; /* 201 without an id */
  h_resp_free(&r);
  return status;
}

/* Submit jobs 0..n-1 to a server that stays up. */
static void submit_all(const struct h_server *srv, const char *token, int n,
                       char (*ids)[40])
{
  int i;

  for (i = 0; i < n; i++) {
    long st = submit_once(srv->port, token, i, ids[i]);
    ck_assert_msg(st == 201, "submission %d: HTTP %ld", i, st);
  }
}

/* ---- the Batch side ------------------------------------------------- */

/*
 * The emulator holds exactly one Batch job per gpugate job (all in attempt
 * 1), named gpugate-<id>-a1, created once, and no other job; the database
 * names the same Batch job.
 */
static void assert_one_batch_job_each(const struct h_server *emu, PGconn *pg,
                                      long long want)
{
  json_t *dump = h_emu_get(emu, "/emulator/jobs");
  json_t *jobs = json_object_get(dump, "jobs");
  json_t *creates = json_object_get(dump, "creates");
  json_t *mine = json_object(), *j, *v;
  PGresult *res;
  const char *name;
  size_t i;
  int k;

  ck_assert_ptr_nonnull(jobs);
  ck_assert_ptr_nonnull(creates);
  res = PQexec(pg, "SELECT id, attempt, coalesce(batch_job_name, '') FROM "
                   "jobs ORDER BY id");
  ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
  ck_assert_int_eq(PQntuples(res), want);
  for (k = 0; k < PQntuples(res); k++) {
    char expect[256];
    ck_assert_msg(!strcmp(PQgetvalue(res, k, 1), "1"),
                  "job %s is in attempt %s: nothing here should retry an "
                  "attempt",
                  PQgetvalue(res, k, 0), PQgetvalue(res, k, 1));
    snprintf(expect, sizeof(expect), REGION_JOBS "gpugate-%s-a%s",
             PQgetvalue(res, k, 0), PQgetvalue(res, k, 1));
    ck_assert_msg(!strcmp(PQgetvalue(res, k, 2), expect),
                  "job %s: batch_job_name \"%s\", expected \"%s\"",
                  PQgetvalue(res, k, 0), PQgetvalue(res, k, 2), expect);
    json_object_set_new(mine, expect, json_integer(0));
  }
  PQclear(res);

  /* every Batch job belongs to a gpugate job attempt, once */
  json_array_foreach (jobs, i, j) {
    name = h_str(j, "name");
    ck_assert_ptr_nonnull(name);
    v = json_object_get(mine, name);
    ck_assert_msg(v != NULL, "Batch job %s belongs to no gpugate job attempt",
                  name);
    ck_assert_msg(json_integer_value(v) == 0, "Batch job %s is listed twice",
                  name);
    json_object_set_new(mine, name, json_integer(1));
    ck_assert_msg(
        json_integer_value(json_object_get(j, "createCount")) == 1,
        "Batch job %s was created %lld times", name,
        (long long)json_integer_value(json_object_get(j, "createCount")));
  }
  /* and every gpugate job attempt has its Batch job */
  json_object_foreach (mine, name, v) {
    ck_assert_msg(json_integer_value(v) == 1, "job attempt %s has no Batch job",
                  name);
  }
  ck_assert_int_eq((long long)json_array_size(jobs), want);
  /* no create was ever accepted for any other name, nor twice */
  ck_assert_int_eq((long long)json_object_size(creates), want);
  json_object_foreach (creates, name, v) {
    ck_assert_msg(json_object_get(mine, name) != NULL,
                  "a Batch job %s was created that no job attempt names", name);
    ck_assert_msg(json_integer_value(v) == 1, "%s was created %lld times", name,
                  (long long)json_integer_value(v));
  }
  json_decref(mine);
  json_decref(dump);
}

/*
 * Within ms, all n jobs terminal and SUCCEEDED (what names the moment in
 * the failure message), with one Batch job each.
 */
static void assert_all_succeeded(const struct h_server *emu,
                                 const struct h_server *srv, PGconn *pg,
                                 long long n, long ms, const char *what)
{
  char summary[256];
  long long done = wait_terminal(pg, n, h_now_ms() + ms);

  h_db_state_summary(pg, summary, sizeof(summary));
  ck_assert_msg(done == n && h_db_int(pg, "SELECT count(*) FROM jobs WHERE "
                                          "state = 'SUCCEEDED'") == n,
                "%s: %s; see %s", what, summary, srv->log);
  assert_one_batch_job_each(emu, pg, n);
}

static bool is_create(const json_t *e)
{
  const char *path = h_str(e, "path"), *m = h_str(e, "method");
  size_t n = path ? strlen(path) : 0;

  return m && !strcmp(m, "POST") && n > 5 &&
         !strncmp(path, BATCH_PREFIX, strlen(BATCH_PREFIX)) &&
         !strcmp(path + n - 5, "/jobs");
}

static bool is_batch(const json_t *e)
{
  const char *path = h_str(e, "path");

  return path && !strncmp(path, BATCH_PREFIX, strlen(BATCH_PREFIX));
}

static bool is_metadata_token(const json_t *e)
{
  const char *path = h_str(e, "path");

  return path && !strcmp(path, METADATA_TOKEN);
}

static bool is_oauth_token(const json_t *e)
{
  const char *path = h_str(e, "path"), *m = h_str(e, "method");

  return path && m && !strcmp(path, "/token") && !strcmp(m, "POST");
}

static long status_of(const json_t *e)
{
  return (long)json_integer_value(json_object_get(e, "status"));
}

/*
 * Over the recorded create requests: every repetition of a job_id carried
 * the request_id of its first try (the outbox row's), so Batch can tell a
 * retry from a second job. Returns how many job ids were sent more than
 * once; *non200 counts creates not answered 200.
 */
static long creates_consistent(const struct h_server *emu, long *non200)
{
  json_t *reqs = h_emu_get(emu, "/emulator/requests"), *first = json_object();
  json_t *tries = json_object(), *e, *v;
  const char *id, *rid;
  size_t i;
  long repeated = 0;

  *non200 = 0;
  json_array_foreach (json_object_get(reqs, "requests"), i, e) {
    if (!is_create(e))
      continue;
    id = h_str(json_object_get(e, "query"), "job_id");
    rid = h_str(json_object_get(e, "query"), "request_id");
    ck_assert_msg(id && rid, "a create without job_id or request_id");
    *non200 += status_of(e) != 200;
    if (!json_object_get(first, id))
      json_object_set_new(first, id, json_string(rid));
    ck_assert_msg(!strcmp(h_str(first, id), rid),
                  "creates of %s carried request ids %s and %s", id,
                  h_str(first, id), rid);
    v = json_object_get(tries, id);
    json_object_set_new(tries, id,
                        json_integer(v ? json_integer_value(v) + 1 : 1));
  }
  json_object_foreach (tries, id, v) {
    repeated += json_integer_value(v) > 1;
  }
  json_decref(tries);
  json_decref(first);
  json_decref(reqs);
  return repeated;
}

/* ==== 1. crash ========================================================= */

struct crash_run {
  atomic_uint port; /* the live server's port; changes on restart */
  const char *token;
  long long start_ms, deadline_ms;
  char (*ids)[40];
  atomic_int submitted, conn_errors, retries, conflicts;
  atomic_int bad;
  char bad_msg[256];
  pthread_mutex_t mu;
};

struct submitter {
  struct crash_run *run;
  int first; /* jobs first, first + CRASH_SUBMITTERS, ... */
  pthread_t thread;
};

static void crash_fail(struct crash_run *run, const char *what, int i, long st)
{
  pthread_mutex_lock(&run->mu);
  if (!atomic_load(&run->bad))
    snprintf(run->bad_msg, sizeof(run->bad_msg), "%s (job %d, HTTP %ld)", what,
             i, st);
  atomic_fetch_add(&run->bad, 1);
  pthread_mutex_unlock(&run->mu);
}

/*
 * Submit this thread's share, paced over CRASH_SPREAD_MS so that
 * submissions overlap the kills. A submission is retried with the same
 * Idempotency-Key until it gets 201: while gpugate is down (no response)
 * at once; a 409 (a claim of the key by a request that died with the
 * server, taken over after a minute) after the others.
 */
static void *submitter(void *arg)
{
  struct submitter *s = arg;
  struct crash_run *run = s->run;
  int pending[CRASH_JOBS], n = 0, i, k;

  for (i = s->first; i < CRASH_JOBS; i += CRASH_SUBMITTERS)
    pending[n++] = i;
  while (n > 0 && h_now_ms() < run->deadline_ms) {
    int left = 0;
    for (k = 0; k < n && h_now_ms() < run->deadline_ms; k++) {
      long long due =
          run->start_ms + (long long)pending[k] * CRASH_SPREAD_MS / CRASH_JOBS;
      long st;
      i = pending[k];
      while (h_now_ms() < due)
        h_sleep_ms(2);
      for (;;) {
        st = submit_once((unsigned short)atomic_load(&run->port), run->token, i,
                         run->ids[i]);
        if (st == 201) {
          atomic_fetch_add(&run->submitted, 1);
          break;
        }
        if (st == 409) {
          atomic_fetch_add(&run->conflicts, 1);
          pending[left++] = i; /* in flight elsewhere: later */
          break;
        }
        if (st == 0)
          atomic_fetch_add(&run->conn_errors, 1);
        else if (st == 503 || st == 500 || st == 502)
          atomic_fetch_add(&run->retries, 1);
        else {
          crash_fail(run, "a submission got an unexpected status", i, st);
          return NULL;
        }
        if (h_now_ms() >= run->deadline_ms) {
          crash_fail(run, "a submission got no 201 before the deadline", i, st);
          return NULL;
        }
        h_sleep_ms(20);
      }
    }
    /* anything not reached before the deadline stays pending */
    for (; k < n; k++)
      pending[left++] = pending[k];
    n = left;
    if (n > 0)
      h_sleep_ms(250);
  }
  if (n > 0)
    crash_fail(run, "submissions got no 201 before the deadline", pending[0],
               0);
  return NULL;
}

static char crash_ids[CRASH_JOBS][40];

START_TEST(crash_kill9_exactly_once)
{
  /* capacity for all of them at once: nothing waits in Batch's queue */
  static const char *const emu_env[] = {
      "EMU_RUN_MS=200", "EMU_CAPACITY=us-central1/SPOT=100000", NULL};
  struct h_server emu, srv;
  struct submitter subs[CRASH_SUBMITTERS];
  struct crash_run run;
  char db_url[512], summary[256];
  unsigned seed = CRASH_SEED;
  long long t0, t_sub, t_kills, t_done, done;
  json_t *seen;
  long replays, non200;
  int k;
  PGconn *pg;

  t0 = h_now_ms();
  h_db_apply("it_crash", CONFIG, db_url, sizeof(db_url));
  start_emulator(&emu, emu_env);
  ck_assert_int_eq(start_gpugate(&srv, &emu, db_url, NULL), 0);
  pg = connect_db(db_url);

  memset(&run, 0, sizeof(run));
  pthread_mutex_init(&run.mu, NULL);
  atomic_init(&run.port, srv.port);
  run.token = h_token(TEAM, "member", 3600);
  ck_assert_ptr_nonnull(run.token);
  run.ids = crash_ids;
  run.start_ms = h_now_ms();
  run.deadline_ms = run.start_ms + 120000;
  for (k = 0; k < CRASH_SUBMITTERS; k++) {
    subs[k].run = &run;
    subs[k].first = k;
    ck_assert_int_eq(pthread_create(&subs[k].thread, NULL, submitter, &subs[k]),
                     0);
  }

  /* ten SIGKILLs, 0.5–3 s apart, each followed by a restart */
  for (k = 0; k < CRASH_KILLS; k++) {
    h_sleep_ms(500 + (long)(h_next_rand(&seed) % 2501u));
    ck_assert_msg(h_server_kill(&srv, SIGKILL) == 0, "kill %d failed", k + 1);
    ck_assert_msg(start_gpugate(&srv, &emu, db_url, NULL) == 0,
                  "restart %d failed; see %s", k + 1, srv.log);
    atomic_store(&run.port, srv.port);
  }
  t_kills = h_now_ms();
  for (k = 0; k < CRASH_SUBMITTERS; k++)
    pthread_join(subs[k].thread, NULL);
  t_sub = h_now_ms();
  ck_assert_msg(atomic_load(&run.bad) == 0, "%d submitters failed: %s",
                atomic_load(&run.bad), run.bad_msg);
  ck_assert_int_eq(atomic_load(&run.submitted), CRASH_JOBS);

  /* 2,000 distinct ids, as many jobs */
  seen = json_object();
  for (k = 0; k < CRASH_JOBS; k++) {
    ck_assert_msg(crash_ids[k][0], "job %d has no id", k);
    ck_assert_msg(!json_object_get(seen, crash_ids[k]),
                  "jobs %d and another got the same id %s", k, crash_ids[k]);
    json_object_set_new(seen, crash_ids[k], json_true());
  }
  json_decref(seen);

  done = wait_terminal(pg, CRASH_JOBS, h_now_ms() + 60000);
  t_done = h_now_ms();
  h_db_state_summary(pg, summary, sizeof(summary));
  ck_assert_msg(done == CRASH_JOBS,
                "%lld of %d jobs terminal after the deadline: %s; last log %s",
                done, CRASH_JOBS, summary, srv.log);
  ck_assert_int_eq(h_db_int(pg, "SELECT count(*) FROM jobs"), CRASH_JOBS);
  ck_assert_msg(h_db_int(pg, "SELECT count(*) FROM jobs WHERE state = "
                             "'SUCCEEDED'") == CRASH_JOBS,
                "not all jobs SUCCEEDED: %s", summary);
  ck_assert_int_eq(h_db_int(pg, "SELECT count(*) FROM jobs WHERE team = '" TEAM
                                "' AND name LIKE 'c-%'"),
                   CRASH_JOBS);
  /* the outbox drained; every job was recorded as created exactly once */
  ck_assert_int_eq(h_db_int(pg, "SELECT count(*) FROM batch_ops"), 0);
  ck_assert_int_eq(h_db_int(pg, "SELECT count(*) FROM job_events WHERE "
                                "reason = 'BatchJobCreated'"),
                   CRASH_JOBS);
  ck_assert_int_eq(h_db_int(pg, "SELECT count(DISTINCT job_id) FROM job_events "
                                "WHERE reason = 'BatchJobCreated'"),
                   CRASH_JOBS);
  assert_one_batch_job_each(&emu, pg, CRASH_JOBS);

  /* a create repeated after a crash (the dispatcher died between the
   * call and its commit) carried the same request id and was answered as
   * the same request: the path the outbox exists for */
  replays = creates_consistent(&emu, &non200);
  ck_assert_msg(non200 == 0, "%ld creates not answered 200", non200);
  fprintf(stderr,
          "crash: %d jobs, %d kills; submissions done %.1f s, kills done "
          "%.1f s, all terminal %.1f s after the first submission (setup "
          "%.1f s); %d connection errors, %d 5xx, %d 409 in-flight retries; "
          "%ld creates sent again after a crash\n",
          CRASH_JOBS, CRASH_KILLS, (double)(t_sub - run.start_ms) / 1000.0,
          (double)(t_kills - run.start_ms) / 1000.0,
          (double)(t_done - run.start_ms) / 1000.0,
          (double)(run.start_ms - t0) / 1000.0, atomic_load(&run.conn_errors),
          atomic_load(&run.retries), atomic_load(&run.conflicts), replays);

  PQfinish(pg);
  free((char *)run.token);
  h_server_stop(&srv);
  h_server_stop(&emu);
}
END_TEST

/* ==== 2. faults ======================================================== */

#define FAULT_JOBS 100
static char fault_ids[FAULT_JOBS][40];

START_TEST(faults_retry_after_and_exactly_once)
{
  static const char *const emu_env[] = {"EMU_RUN_MS=200", "EMU_SEED=7", NULL};
  struct h_server emu, srv;
  char db_url[512], summary[256], *token;
  json_t *reqs, *e, *last429;
  long long t0 = h_now_ms(), done;
  long n429 = 0, n503 = 0, ntimeout = 0, checked = 0, creates = 0;
  long long min_gap_us = -1;
  size_t i;
  PGconn *pg;

  h_db_apply("it_crash_faults", CONFIG, db_url, sizeof(db_url));
  start_emulator(&emu, emu_env);
  json_decref(h_call(&emu, "POST", "/emulator/faults", NULL,
                     "{\"error_rate\": 0.2, \"codes\": [429, 503], "
                     "\"timeout_rate\": 0.03, \"timeout_ms\": 2000, "
                     "\"retry_after_s\": 1}",
                     200));
  ck_assert_int_eq(start_gpugate(&srv, &emu, db_url, NULL), 0);
  pg = connect_db(db_url);
  token = h_token(TEAM, "member", 3600);
  ck_assert_ptr_nonnull(token);
  submit_all(&srv, token, FAULT_JOBS, fault_ids);

  done = wait_terminal(pg, FAULT_JOBS, h_now_ms() + 100000);
  h_db_state_summary(pg, summary, sizeof(summary));
  ck_assert_msg(done == FAULT_JOBS, "%lld of %d jobs terminal: %s; see %s",
                done, FAULT_JOBS, summary, srv.log);
  ck_assert_msg(h_db_int(pg, "SELECT count(*) FROM jobs WHERE state = "
                             "'SUCCEEDED'") == FAULT_JOBS,
                "not all jobs SUCCEEDED: %s; see %s", summary, srv.log);
  ck_assert_int_eq(h_db_int(pg, "SELECT count(*) FROM batch_ops"), 0);
  assert_one_batch_job_each(&emu, pg, FAULT_JOBS);

  /* Retry-After: the next create of a job id after its 429 came ≥ 1 s
   * later (recorded times are when each request arrived) */
  reqs = h_emu_get(&emu, "/emulator/requests");
  last429 = json_object(); /* job_id → arrival of its latest 429, in µs */
  json_array_foreach (json_object_get(reqs, "requests"), i, e) {
    const char *id = h_str(json_object_get(e, "query"), "job_id");
    long long at = time_us(h_str(e, "time"));
    json_t *prev;
    const char *fault = h_str(e, "fault");
    if (!is_batch(e))
      continue;
    if (fault && !strcmp(fault, "timeout"))
      ntimeout++;
    else if (status_of(e) == 503)
      n503++;
    if (!is_create(e) || !id)
      continue;
    creates++;
    ck_assert_msg(at > 0, "bad request time %s", h_str(e, "time"));
    prev = json_object_get(last429, id);
    if (prev) {
      long long gap = at - json_integer_value(prev);
      ck_assert_msg(gap >= 1000000,
                    "create %s came %.3f s after its 429 with Retry-After: 1",
                    id, (double)gap / 1e6);
      if (min_gap_us < 0 || gap < min_gap_us)
        min_gap_us = gap;
      checked++;
      json_object_del(last429, id);
    }
    if (status_of(e) == 429) {
      n429++;
      json_object_set_new(last429, id, json_integer(at));
    }
  }
  /* a 429 is never the last word on a job that then succeeded */
  ck_assert_msg(json_object_size(last429) == 0,
                "%zu job ids have a 429 with no later create",
                json_object_size(last429));
  ck_assert_msg(n429 >= 1, "no create was answered 429 (of %ld creates)",
                creates);
  ck_assert_int_eq(checked, n429);
  json_decref(last429);
  json_decref(reqs);
  {
    long non200, repeated = creates_consistent(&emu, &non200);
    ck_assert_int_ge(repeated, 1);
    ck_assert_int_ge(non200, n429);
  }
  fprintf(stderr,
          "faults: %d jobs in %.1f s; %ld creates, %ld answered 429 (next "
          "create ≥ %.3f s later), %ld 503, %ld timeouts over all Batch "
          "calls\n",
          FAULT_JOBS, (double)(h_now_ms() - t0) / 1000.0, creates, n429,
          (double)min_gap_us / 1e6, n503, ntimeout);

  PQfinish(pg);
  free(token);
  h_server_stop(&srv);
  h_server_stop(&emu);
}
END_TEST

/* ==== 3. tokens ======================================================== */

struct token_stats {
  long token_calls, token_ok, batch_calls, batch_unauth, batch_401;
  long long first_token_us, last_token_us, first_batch_us, last_batch_us;
  long long token_us[64];
};

static void token_stats(const struct h_server *emu,
                        bool (*is_token)(const json_t *),
                        struct token_stats *st)
{
  json_t *reqs = h_emu_get(emu, "/emulator/requests"), *e;
  size_t i;

  memset(st, 0, sizeof(*st));
  json_array_foreach (json_object_get(reqs, "requests"), i, e) {
    long long at = time_us(h_str(e, "time"));
    if (is_token(e)) {
      if (st->token_calls < 64)
        st->token_us[st->token_calls] = at;
      st->token_calls++;
      st->token_ok += status_of(e) == 200;
      if (!st->first_token_us)
        st->first_token_us = at;
      st->last_token_us = at;
    } else if (is_batch(e)) {
      st->batch_calls++;
      st->batch_unauth += !json_is_true(json_object_get(e, "authorization"));
      st->batch_401 += status_of(e) == 401;
      if (!st->first_batch_us)
        st->first_batch_us = at;
      st->last_batch_us = at;
    }
  }
  json_decref(reqs);
}

START_TEST(tokens_metadata_cached)
{
  static const char *const emu_env[] = {"EMU_RUN_MS=200", NULL};
  struct h_server emu, srv;
  struct token_stats st;
  char db_url[512], *token, ids[40][40];
  long long t0 = h_now_ms();
  PGconn *pg;

  h_db_apply("it_crash_tok_cache", CONFIG, db_url, sizeof(db_url));
  start_emulator(&emu, emu_env);
  ck_assert_int_eq(start_gpugate(&srv, &emu, db_url, NULL), 0);
  pg = connect_db(db_url);
  token = h_token(TEAM, "member", 3600);
  submit_all(&srv, token, 40, ids);
  assert_all_succeeded(&emu, &srv, pg, 40, 30000, "jobs");

  token_stats(&emu, is_metadata_token, &st);
  /* every fetch answered 200: the emulator refuses one without
   * Metadata-Flavor: Google (403) */
  ck_assert_msg(st.token_ok == st.token_calls,
                "%ld of %ld metadata token requests failed",
                st.token_calls - st.token_ok, st.token_calls);
  ck_assert_int_eq(st.batch_unauth, 0);
  ck_assert_int_eq(st.batch_401, 0);
  ck_assert_int_ge(st.batch_calls, 40);
  /* cached: one fetch per token source (the dispatcher's and the status
   * sync's), not one per call */
  ck_assert_msg(st.token_calls >= 1 && st.token_calls <= 2,
                "%ld token fetches for %ld Batch calls", st.token_calls,
                st.batch_calls);
  fprintf(stderr,
          "tokens (metadata, 1 h): %ld fetches for %ld Batch calls, %.1f s\n",
          st.token_calls, st.batch_calls, (double)(h_now_ms() - t0) / 1000.0);
  PQfinish(pg);
  free(token);
  h_server_stop(&srv);
  assert_no_secrets(&srv);
  h_server_stop(&emu);
}
END_TEST

START_TEST(tokens_metadata_refreshed_before_expiry)
{
  /* 20 s tokens: the client refreshes min(300, 20 / 10) = 2 s early.
   * Jobs run 40 s, so the status sync lists all the time; a job submitted
   * every 2 s keeps the dispatcher calling too. */
  static const char *const emu_env[] = {"EMU_TOKEN_TTL_S=20",
                                        "EMU_RUN_MS=40000", NULL};
  struct h_server emu, srv;
  struct token_stats st;
  char db_url[512], *token, id[40];
  long long t0 = h_now_ms(), first_token;
  long k, after_expiry = 0, refresh = -1;
  json_t *reqs, *e;
  size_t i;
  PGconn *pg;

  h_db_apply("it_crash_tok_ttl", CONFIG, db_url, sizeof(db_url));
  start_emulator(&emu, emu_env);
  ck_assert_int_eq(start_gpugate(&srv, &emu, db_url, NULL), 0);
  pg = connect_db(db_url);
  token = h_token(TEAM, "member", 3600);
  for (k = 0; k < 13; k++) {
    ck_assert_int_eq(submit_once(srv.port, token, (int)k, id), 201);
    h_sleep_ms(2000);
  }
  /* ~26 s after the first submission */
  token_stats(&emu, is_metadata_token, &st);
  ck_assert_msg(st.token_calls >= 2, "%ld token fetches", st.token_calls);
  ck_assert_int_eq(st.token_ok, st.token_calls);
  first_token = st.first_token_us;
  for (k = 1; k < st.token_calls && k < 64; k++) {
    long long age = st.token_us[k] - first_token;
    if (age >= 10000000 && age < 20000000 && refresh < 0)
      refresh = k;
  }
  ck_assert_msg(refresh > 0,
                "no token fetch 10-20 s after the first (of %ld fetches)",
                st.token_calls);
  /* still cached: a few fetches, not one per call */
  ck_assert_msg(st.token_calls <= 6, "%ld token fetches for %ld calls",
                st.token_calls, st.batch_calls);
  ck_assert_int_eq(st.batch_unauth, 0);
  ck_assert_msg(st.batch_401 == 0, "%ld Batch calls got 401", st.batch_401);
  /* calls continued past the first token's expiry, authorised */
  reqs = h_emu_get(&emu, "/emulator/requests");
  json_array_foreach (json_object_get(reqs, "requests"), i, e) {
    if (is_batch(e) && time_us(h_str(e, "time")) > first_token + 20000000)
      after_expiry += status_of(e) == 200;
  }
  json_decref(reqs);
  ck_assert_msg(after_expiry >= 5,
                "only %ld successful Batch calls after the first token "
                "expired",
                after_expiry);
  ck_assert_int_eq(h_db_int(pg, "SELECT count(*) FROM jobs WHERE state IN "
                                "('FAILED', 'CANCELLED')"),
                   0);
  fprintf(stderr,
          "tokens (metadata, 20 s): %ld fetches, refresh %.1f s after the "
          "first, %ld Batch calls (%ld after the first token's expiry), "
          "%.1f s\n",
          st.token_calls, (double)(st.token_us[refresh] - first_token) / 1e6,
          st.batch_calls, after_expiry, (double)(h_now_ms() - t0) / 1000.0);
  PQfinish(pg);
  free(token);
  h_server_stop(&srv);
  assert_no_secrets(&srv);
  h_server_stop(&emu);
}
END_TEST

/* A service-account key like tests/fixtures/sa-key.json with the PEM of
 * pem_path and the emulator's token URI; path written into out. */
static void write_key_file(const char *pem_path, unsigned short port, char *out,
                           size_t outlen)
{
  json_t *key = json_load_file("tests/fixtures/sa-key.json", 0, NULL);
  FILE *f = fopen(pem_path, "r");
  char pem[8192], uri[128], tmpl[] = "/tmp/gpugate-sa-key-XXXXXX";
  size_t n;
  int fd;

  ck_assert_ptr_nonnull(key);
  ck_assert_ptr_nonnull(f);
  n = fread(pem, 1, sizeof(pem) - 1, f);
  fclose(f);
  pem[n] = '\0';
  snprintf(uri, sizeof(uri), "http://127.0.0.1:%u/token", port);
  json_object_set_new(key, "private_key", json_string(pem));
  json_object_set_new(key, "token_uri", json_string(uri));
  fd = mkstemp(tmpl);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ck_assert_int_eq(json_dump_file(key, tmpl, JSON_INDENT(2)), 0);
  json_decref(key);
  snprintf(out, outlen, "%s", tmpl);
}

START_TEST(tokens_key_file)
{
  static const char *const emu_env[] = {
      "EMU_RUN_MS=200", "EMU_SA_PUBLIC_KEY=tests/fixtures/keys/rsa1.pub.pem",
      "EMU_SA_EMAIL=gpugate-test@gpugate-test.iam.gserviceaccount.com", NULL};
  struct h_server emu, srv;
  struct token_stats st;
  char db_url[512], summary[256], *token, ids[5][40];
  char bad_key[64], good_key[64], bad_env[128], good_env[128];
  const char *env[3] = {"GPUGATE_GCP_TOKEN_SOURCE=key-file", NULL, NULL};
  long long t0 = h_now_ms(), deadline;
  PGconn *pg;

  h_db_apply("it_crash_tok_key", CONFIG, db_url, sizeof(db_url));
  start_emulator(&emu, emu_env);
  write_key_file("tests/fixtures/keys/rsa2.pem", emu.port, bad_key,
                 sizeof(bad_key));
  write_key_file("tests/fixtures/keys/rsa1.pem", emu.port, good_key,
                 sizeof(good_key));
  snprintf(bad_env, sizeof(bad_env), "GPUGATE_GCP_KEY_FILE=%s", bad_key);
  snprintf(good_env, sizeof(good_env), "GPUGATE_GCP_KEY_FILE=%s", good_key);
  pg = connect_db(db_url);
  token = h_token(TEAM, "member", 3600);

  /* a key the emulator does not know: every grant refused, jobs wait */
  env[1] = bad_env;
  ck_assert_int_eq(start_gpugate(&srv, &emu, db_url, env), 0);
  submit_all(&srv, token, 5, ids);
  /* each create tried, some more than once (a token error is retryable) */
  deadline = h_now_ms() + 15000;
  do {
    h_sleep_ms(250);
    token_stats(&emu, is_oauth_token, &st);
  } while (
      (h_db_int(pg, "SELECT count(*) FROM batch_ops WHERE op = 'create' "
                    "AND tries >= 1") < 5 ||
       h_db_int(pg, "SELECT count(*) FROM batch_ops WHERE tries >= 2") < 2) &&
      h_now_ms() < deadline);
  token_stats(&emu, is_oauth_token, &st);
  ck_assert_msg(st.token_calls >= 7, "%ld JWT-bearer grants in 15 s",
                st.token_calls);
  ck_assert_msg(st.token_ok == 0, "%ld grants signed by rsa2 were accepted",
                st.token_ok);
  ck_assert_int_eq(st.batch_calls, 0); /* nothing sent without a token */
  h_db_state_summary(pg, summary, sizeof(summary));
  ck_assert_msg(h_db_int(pg, "SELECT count(*) FROM jobs WHERE state = "
                             "'ADMITTED'") == 5,
                "with a rejected key: %s", summary);
  ck_assert_int_eq(h_db_int(pg, "SELECT count(*) FROM batch_ops WHERE op = "
                                "'create' AND tries >= 1"),
                   5);
  ck_assert_int_ge(h_db_int(pg, "SELECT count(*) FROM batch_ops WHERE "
                                "tries >= 2"),
                   2);
  ck_assert_int_eq(h_db_int(pg, "SELECT count(*) FROM job_events WHERE "
                                "to_state = 'FAILED'"),
                   0);
  h_server_stop(&srv);
  assert_no_secrets(&srv);

  /* the right key: the same jobs are created and run */
  env[1] = good_env;
  json_decref(h_call(&emu, "DELETE", "/emulator/requests", NULL, NULL, 200));
  ck_assert_int_eq(start_gpugate(&srv, &emu, db_url, env), 0);
  assert_all_succeeded(&emu, &srv, pg, 5, 30000, "with the right key");
  token_stats(&emu, is_oauth_token, &st);
  ck_assert_msg(st.token_calls >= 1 && st.token_calls <= 2 &&
                    st.token_ok == st.token_calls,
                "%ld grants, %ld accepted", st.token_calls, st.token_ok);
  ck_assert_int_eq(st.batch_unauth, 0);
  ck_assert_int_eq(st.batch_401, 0);
  {
    struct token_stats md;
    token_stats(&emu, is_metadata_token, &md);
    ck_assert_int_eq(md.token_calls, 0);
  }
  fprintf(stderr, "tokens (key file): %.1f s\n",
          (double)(h_now_ms() - t0) / 1000.0);
  unlink(bad_key);
  unlink(good_key);
  PQfinish(pg);
  free(token);
  h_server_stop(&srv);
  assert_no_secrets(&srv);
  h_server_stop(&emu);
}
END_TEST

Suite *crash_suite(void)
{
  Suite *s = suite_create("crash");
  TCase *crash = tcase_create("crash");
  TCase *faults = tcase_create("faults");
  TCase *tokens = tcase_create("tokens");

  tcase_set_timeout(crash, 220);
  tcase_add_test(crash, crash_kill9_exactly_once);
  tcase_set_timeout(faults, 120);
  tcase_add_test(faults, faults_retry_after_and_exactly_once);
  tcase_set_timeout(tokens, 60);
  tcase_add_test(tokens, tokens_metadata_cached);
  tcase_add_test(tokens, tokens_metadata_refreshed_before_expiry);
  tcase_add_test(tokens, tokens_key_file);
  suite_add_tcase(s, crash);
  suite_add_tcase(s, faults);
  suite_add_tcase(s, tokens);
  return s;
}
