/*
 * it_footprint.c — gpugate's footprint on Cloud Batch, end to end against
 * the Batch emulator: the outbox never holds a row lock across a Batch
 * call (a cancel during a slow create answers at once), every Batch job
 * carries the gpugate-deployment label, and the status sync sweeps the
 * Batch jobs of its own deployment that gpugate does not want (unknown
 * ids, superseded attempts) while it adopts a job whose create was
 * recorded late and never touches another deployment's jobs.
 *
 * Each test case has its own emulator, database and gpugate, started by an
 * unchecked fixture (in the runner's process, so a failed forked test
 * leaves nothing running).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *footprint_suite(void);

#define PROJECT "test-project"
#define MAX_ENV 24

static struct h_server emu, srv, more[3]; /* more: replicas 2, 3 and 4 */
static char db_url[512];
static char *tok;

static bool str_is(const json_t *o, const char *k, const char *want)
{
  const char *v = h_str(o, k);

  return v && want && !strcmp(v, want);
}

static char gcp_env[H_GCP_ENV][128], sync_env[64];
static const char *gp_env_all[MAX_ENV];

static void start_all(const char *db, const char *fixture,
                      const char *const *emu_env, long sync_ms,
                      const char *const *gp_env)
{
  size_t n = 0, i;

  ck_assert_msg(h_emulator_start(&emu, emu_env) == 0,
                "the emulator did not start; see %s", emu.log);
  h_gcp_env(&emu, gcp_env);
  h_db_apply(db, fixture, db_url, sizeof(db_url));
  for (i = 0; i < H_GCP_ENV; i++)
    gp_env_all[n++] = gcp_env[i];
  snprintf(sync_env, sizeof(sync_env), "GPUGATE_SYNC_INTERVAL_MS=%ld", sync_ms);
  gp_env_all[n++] = sync_env;
  gp_env_all[n++] = "GPUGATE_RATE_LIMIT_RPS=100000";
  gp_env_all[n++] = "GPUGATE_ADMISSION_INTERVAL_MS=200";
  for (i = 0; gp_env && gp_env[i] && n < MAX_ENV - 1; i++)
    gp_env_all[n++] = gp_env[i];
  gp_env_all[n] = NULL;
  ck_assert_msg(h_server_start(&srv, db_url, gp_env_all) == 0,
                "gpugate did not start; see %s", srv.log);
  tok = h_token("team-x", "member", 3600);
}

static void teardown(void)
{
  h_server_stop(&more[0]);
  h_server_stop(&more[1]);
  h_server_stop(&more[2]);
  h_server_stop(&srv);
  h_server_stop(&emu);
  free(tok);
  tok = NULL;
}

static void submit(const char *queue, const char *name, char id[32])
{
  char body[512];
  json_t *j;

  snprintf(body, sizeof(body),
           "{\"name\": \"%s\", \"queue\": \"%s\", \"task_count\": 1, "
           "\"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\", "
           "\"cpu_milli\": 1000, \"memory_mib\": 1024, \"gpu\": 1}}",
           name, queue);
  j = h_call(&srv, "POST", "/v1/teams/team-x/jobs", tok, body, 201);
  snprintf(id, 32, "%s", h_str(j, "id") ? h_str(j, "id") : "");
  json_decref(j);
  ck_assert_msg(id[0], "no job id");
}

static json_t *get_job(const char *id)
{
  char path[160];

  snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%.31s", id);
  return h_call(&srv, "GET", path, tok, NULL, 200);
}

/* Poll the job until its state is want; returns it (new reference). */
static json_t *wait_state(const char *id, const char *want, long ms)
{
  long long end = h_now_ms() + ms;
  json_t *j;
  char *dump;

  for (;;) {
    j = get_job(id);
    if (str_is(j, "state", want))
      return j;
    if (h_now_ms() > end)
      break;
    json_decref(j);
    h_sleep_ms(50);
  }
  dump = json_dumps(j, JSON_COMPACT);
  ck_abort_msg("job %s not %s within %ld ms: %s", id, want, ms, dump);
  return NULL;
}

/* The emulator's job named job_id (new reference), or NULL. */
static json_t *emu_job(const char *job_id)
{
  json_t *all = h_emu_get(&emu, "/emulator/jobs"), *e, *found = NULL;
  size_t i;

  json_array_foreach (json_object_get(all, "jobs"), i, e) {
    if (str_is(e, "jobId", job_id))
      found = json_incref(e);
  }
  json_decref(all);
  return found;
}

static long long injected_timeouts(void)
{
  json_t *f = h_emu_get(&emu, "/emulator/faults");
  long long n = json_integer_value(
      json_object_get(json_object_get(f, "injected"), "timeout"));

  json_decref(f);
  return n;
}

/* ======================================================================
 * 1. A cancel during a slow Batch create answers at once (issue 11)
 * ==================================================================== */

static void setup_slow(void)
{
  const char *emu_env[] = {"EMU_RUN_MS=60000", "EMU_START_MS=50",
                           "EMU_CANCEL_MS=100", NULL};

  start_all("it_footprint_slow", "tests/fixtures/dispatch-models.json", emu_env,
            300, NULL);
}

START_TEST(cancel_during_slow_create_answers_at_once)
{
  char id[32], path[160], batch[64];
  struct h_resp r;
  long long end, t0, took;
  json_t *j, *e;

  /* the first create stalls 6 s in the emulator, then answers 503 */
  json_decref(h_call(&emu, "POST", "/emulator/faults", NULL,
                     "{\"timeout_rate\": 1, \"timeout_ms\": 6000, "
                     "\"methods\": [\"POST\"], \"max_faults\": 1}",
                     200));
  submit("standard", "slow-create", id);
  end = h_now_ms() + 10000;
  while (injected_timeouts() < 1) {
    ck_assert_msg(h_now_ms() < end, "the create never reached the emulator");
    h_sleep_ms(50);
  }
  h_sleep_ms(300); /* the dispatcher is inside its Batch call now */

  snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%s/cancel", id);
  t0 = h_now_ms();
  ck_assert_int_eq(h_request(&srv, "POST", path, tok, NULL, NULL, &r), 0);
  took = h_now_ms() - t0;
  ck_assert_msg(r.status == 200 || r.status == 202, "cancel answered %ld: %s",
                r.status, r.body);
  h_resp_free(&r);
  ck_assert_msg(took < 1000, "the cancel took %lld ms behind the Batch call",
                took);

  /* and it takes effect: the Batch job, if the retried create made one, is
   * cancelled, and the job ends CANCELLED */
  j = wait_state(id, "CANCELLED", 30000);
  json_decref(j);
  snprintf(batch, sizeof(batch), "gpugate-%s-a1", id);
  e = emu_job(batch);
  if (e)
    ck_assert_msg(str_is(e, "state", "CANCELLED") ||
                      str_is(e, "state", "CANCELLATION_IN_PROGRESS"),
                  "Batch job %s is %s", batch, h_str(e, "state"));
  json_decref(e);
}
END_TEST

/* An eviction (here a HoldAndDrain of the job's cluster queue) while the
 * job's create is at Batch — slow, and then successful — completes: the job
 * does not wait in EVICTING forever for a Batch job it never recorded, but
 * returns to PENDING with its next attempt, and no Batch job of the evicted
 * attempt keeps running. */
START_TEST(eviction_during_slow_create_completes)
{
  char id[32], batch[64];
  char *admin = h_token("platform", "admin", 3600);
  json_t *j, *e;

  json_decref(h_call(&emu, "POST", "/emulator/faults", NULL,
                     "{\"timeout_rate\": 1, \"timeout_ms\": 4000, "
                     "\"timeout_mode\": \"slow\", "
                     "\"methods\": [\"POST\"], \"max_faults\": 1}",
                     200));
  submit("standard", "slow-evict", id);
  {
    /* the dispatcher holds the create's lease: it is at Batch, stalled */
    PGconn *pg = h_db_connect(db_url);
    char sql[256];
    long long end = h_now_ms() + 30000;

    ck_assert_ptr_nonnull(pg);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM batch_ops WHERE job_id = '%s' "
             "AND op = 'create' AND claimed_by IS NOT NULL",
             id);
    while (h_db_int(pg, sql) < 1) {
      ck_assert_msg(h_now_ms() < end, "the create was never claimed");
      h_sleep_ms(50);
    }
    PQfinish(pg);
  }
  h_sleep_ms(300); /* the dispatcher is inside its Batch call now */
  json_decref(h_call(
      &srv, "PUT", "/v1/cluster-queues/cq-m-standard", admin,
      "{\"stop_policy\": \"HoldAndDrain\", \"flavors\": [{\"name\": "
      "\"m-standard\", \"resources\": {\"gpu\": {\"nominal\": 8}, "
      "\"cpu_milli\": {\"nominal\": 8000}, \"memory_mib\": {\"nominal\": "
      "40960}}}]}",
      200));
  j = wait_state(id, "PENDING", 40000);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "attempt")), 2);
  json_decref(j);
  snprintf(batch, sizeof(batch), "gpugate-%s-a1", id);
  e = emu_job(batch);
  if (e)
    ck_assert_msg(!str_is(e, "state", "RUNNING") &&
                      !str_is(e, "state", "QUEUED") &&
                      !str_is(e, "state", "SCHEDULED"),
                  "Batch job %s is %s", batch, h_str(e, "state"));
  json_decref(e);
  free(admin);
}
END_TEST

/* ======================================================================
 * 2. The deployment label and the orphan sweep
 * ==================================================================== */

static void setup_orphans(void)
{
  const char *emu_env[] = {"EMU_RUN_MS=120000",
                           "EMU_START_MS=50",
                           "EMU_CANCEL_MS=100",
                           "EMU_FLEX_WAIT_MS=100",
                           "EMU_REQUIRE_AUTH=false",
                           "EMU_CAPACITY=us-central1/FLEX_START=0",
                           NULL};

  start_all("it_footprint_orphans", "tests/fixtures/footprint.json", emu_env,
            300, NULL);
}

/* The Job body gpugate sent for batch (new reference), from the record. */
static json_t *sent_body(const char *batch)
{
  json_t *all = h_emu_get(&emu, "/emulator/requests"), *r, *body = NULL;
  size_t i;

  json_array_foreach (json_object_get(all, "requests"), i, r) {
    const char *q = h_str(json_object_get(r, "query"), "job_id");
    if (!body && str_is(r, "method", "POST") && q && !strcmp(q, batch) &&
        json_integer_value(json_object_get(r, "status")) == 200)
      body = json_deep_copy(json_object_get(r, "body"));
  }
  json_decref(all);
  ck_assert_msg(body != NULL, "no recorded create of %s", batch);
  return body;
}

/* Create a Batch job behind gpugate's back: body (borrowed) with the
 * deployment label set to deployment (NULL: removed). */
static void create_behind(const char *region, const char *job_id, json_t *body,
                          const char *deployment)
{
  json_t *b = json_deep_copy(body);
  json_t *labels[2] = {
      json_object_get(b, "labels"),
      json_object_get(json_object_get(b, "allocationPolicy"), "labels")};
  char path[256], *text;
  struct h_resp r;
  int i;

  for (i = 0; i < 2; i++) {
    if (deployment)
      json_object_set_new(labels[i], "gpugate-deployment",
                          json_string(deployment));
    else
      json_object_del(labels[i], "gpugate-deployment");
  }
  snprintf(path, sizeof(path), "regions/%s", region);
  json_object_set_new(
      json_object_get(json_object_get(b, "allocationPolicy"), "location"),
      "allowedLocations", json_pack("[s]", path));
  snprintf(path, sizeof(path), "/v1/projects/%s/locations/%s/jobs?job_id=%s",
           PROJECT, region, job_id);
  text = json_dumps(b, JSON_COMPACT);
  ck_assert_int_eq(h_request(&emu, "POST", path, NULL, text, NULL, &r), 0);
  ck_assert_msg(r.status == 200, "create %s: %ld %s", job_id, r.status, r.body);
  h_resp_free(&r);
  free(text);
  json_decref(b);
}

static bool emu_live(const char *job_id)
{
  json_t *e = emu_job(job_id);
  bool live =
      e && (str_is(e, "state", "QUEUED") || str_is(e, "state", "SCHEDULED") ||
            str_is(e, "state", "RUNNING"));

  json_decref(e);
  return live;
}

/* The value of a metric line "name{labels} v" on gpugate's /metrics. */
static double metric(const char *line_prefix)
{
  struct h_resp r;
  const char *p;
  double v = 0;

  ck_assert_int_eq(h_request(&srv, "GET", "/metrics", NULL, NULL, NULL, &r), 0);
  /* a sample line, not the # HELP or # TYPE line that names it too */
  for (p = r.body; p && (p = strstr(p, line_prefix)) != NULL; p++)
    if (p == r.body || p[-1] == '\n') {
      v = strtod(p + strlen(line_prefix), NULL);
      break;
    }
  h_resp_free(&r);
  return v;
}

#define SUPERSEDED                                                             \
  "gpugate_batch_orphans_total{region=\"europe-west4\",why=\"superseded\"} "

START_TEST(orphans_are_swept_and_a_late_create_is_adopted)
{
  char a[32], f[32], c[32], ba[64], bf1[64], bf2[64], bc[64];
  json_t *body, *j, *e;
  long long end;
  int sweeps0;
  double superseded0;

  /* a running job: its Batch job carries the deployment label */
  submit("standard", "keeps-running", a);
  j = wait_state(a, "RUNNING", 15000);
  json_decref(j);
  snprintf(ba, sizeof(ba), "gpugate-%s-a1", a);
  body = sent_body(ba);
  ck_assert_str_eq(h_str(json_object_get(body, "labels"), "gpugate-deployment"),
                   "default");
  ck_assert_str_eq(
      h_str(
          json_object_get(json_object_get(body, "allocationPolicy"), "labels"),
          "gpugate-deployment"),
      "default");

  /* a Flex Start job that fails over: attempt 1 is superseded */
  submit("flex", "fails-over", f);
  snprintf(bf1, sizeof(bf1), "gpugate-%s-a1", f);
  snprintf(bf2, sizeof(bf2), "gpugate-%s-a2", f);
  j = wait_state(f, "RUNNING", 20000);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "attempt")), 2);
  json_decref(j);

  /* a cancelled job: terminal */
  submit("standard", "cancelled", c);
  j = wait_state(c, "RUNNING", 15000);
  json_decref(j);
  {
    char path[160];
    snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%s/cancel", c);
    json_decref(h_call(&srv, "POST", path, tok, NULL, 200));
  }
  j = wait_state(c, "CANCELLED", 15000);
  json_decref(j);
  snprintf(bc, sizeof(bc), "gpugate-%s-a1", c);

  /* the failover's own end of attempt 1: its cancel, or a sweep when the
   * status sync sees it live first (a race under load); count from here */
  end = h_now_ms() + 15000;
  while (emu_live(bf1)) {
    ck_assert_msg(h_now_ms() < end, "%s still live after its failover", bf1);
    h_sleep_ms(100);
  }
  sweeps0 = h_log_count(&srv, "swept a Batch job");
  superseded0 = metric(SUPERSEDED);

  /* behind gpugate's back, with its labels */
  create_behind("us-east4", "gpugate-j-0unknown0000-a1", body, "default");
  create_behind("us-east4", "gpugate-x-abar", body, "default");
  create_behind("europe-west4", bf1, body, "default");
  create_behind("us-central1", bc, body, "default");
  /* never touched: another deployment's, and one from before the label */
  create_behind("us-east4", "gpugate-j-0otherdep000-a1", body, "staging");
  create_behind("us-east4", "gpugate-j-0nolabel0000-a1", body, NULL);

  end = h_now_ms() + 10000;
  while (emu_live("gpugate-j-0unknown0000-a1") || emu_live("gpugate-x-abar") ||
         emu_live(bc)) {
    ck_assert_msg(h_now_ms() < end, "orphans still live after 10 s");
    h_sleep_ms(100);
  }
  /* the superseded copy lives in europe-west4, where a2 runs too */
  while (1) {
    json_t *all = h_emu_get(&emu, "/emulator/jobs"), *x;
    size_t i;
    bool gone = false;
    json_array_foreach (json_object_get(all, "jobs"), i, x) {
      if (str_is(x, "jobId", bf1) && str_is(x, "location", "europe-west4") &&
          !str_is(x, "state", "RUNNING") && !str_is(x, "state", "QUEUED") &&
          !str_is(x, "state", "SCHEDULED"))
        gone = true;
    }
    json_decref(all);
    if (gone)
      break;
    ck_assert_msg(h_now_ms() < end, "superseded %s still live", bf1);
    h_sleep_ms(100);
  }
  h_sleep_ms(1000); /* three more sync periods */
  ck_assert_msg(emu_live("gpugate-j-0otherdep000-a1"),
                "another deployment's job was touched");
  ck_assert_msg(emu_live("gpugate-j-0nolabel0000-a1"),
                "a job without the deployment label was touched");
  ck_assert_msg(emu_live(ba), "a wanted job was touched");
  ck_assert_msg(emu_live(bf2), "a wanted job was touched");
  j = get_job(a);
  ck_assert_str_eq(h_str(j, "state"), "RUNNING");
  json_decref(j);

  ck_assert(metric("gpugate_batch_orphans_total{region=\"us-east4\","
                   "why=\"unknown\"} ") == 2);
  ck_assert(metric(SUPERSEDED) - superseded0 == 1);
  ck_assert(metric("gpugate_batch_orphans_total{region=\"us-central1\","
                   "why=\"terminal\"} ") == 1);
  ck_assert_msg(h_log_count(&srv, "swept a Batch job") - sweeps0 == 4,
                "%d sweeps logged", h_log_count(&srv, "swept a Batch job"));

  /* a create whose result is recorded late (the response was lost, as if
   * gpugate died before its commit) is adopted, never swept */
  json_decref(h_call(&emu, "POST", "/emulator/faults", NULL,
                     "{\"lost_response_rate\": 1, \"methods\": [\"POST\"], "
                     "\"max_faults\": 1}",
                     200));
  {
    char l[32], bl[64];
    submit("standard", "late-commit", l);
    snprintf(bl, sizeof(bl), "gpugate-%s-a1", l);
    j = wait_state(l, "RUNNING", 20000);
    json_decref(j);
    h_sleep_ms(1000);
    ck_assert_msg(emu_live(bl), "the late-recorded job was swept");
    e = emu_job(bl);
    ck_assert_str_eq(h_str(e, "state"), "RUNNING");
    ck_assert_int_eq(json_integer_value(json_object_get(e, "createCount")), 1);
    json_decref(e);
  }
  ck_assert_msg(h_log_count(&srv, "swept a Batch job") - sweeps0 == 4,
                "%d sweeps logged", h_log_count(&srv, "swept a Batch job"));
  json_decref(body);
}
END_TEST

/* ======================================================================
 * 3. One Batch mutation budget for all replicas
 * ==================================================================== */

/* Scaled down together: the emulator accepts QUOTA mutations per region in
 * any WINDOW_MS, and gpugate's budget (RATE a second after BURST) grants at
 * most BURST + RATE × (WINDOW + 0.75 s) = 182.5 in that time. Three
 * replicas each pacing themselves at RATE would send 450. */
#define QUOTA 200
#define WINDOW_MS 5000
#define RATE 30
#define BURST 10
#define N_BUDGET_JOBS 3000

static const char *const budget_regions[4] = {
    "us-central1", "us-east4", "europe-west4", "asia-southeast1"};

static void setup_budget(void)
{
  char quota[64], window[64];
  const char *emu_env[] = {"EMU_RUN_MS=300",
                           "EMU_START_MS=20",
                           "EMU_CANCEL_MS=100",
                           quota,
                           window,
                           NULL};
  const char *gp_env[] = {"GPUGATE_BATCH_MUTATIONS_PER_S=30",
                          "GPUGATE_BATCH_MUTATIONS_BURST=10",
                          "GPUGATE_LOG_LEVEL=warn", NULL};
  int i;

  snprintf(quota, sizeof(quota), "EMU_MUTATION_QUOTA=%d", QUOTA);
  snprintf(window, sizeof(window), "EMU_QUOTA_WINDOW_MS=%d", WINDOW_MS);
  start_all("it_footprint_budget", "tests/fixtures/footprint-budget.json",
            emu_env, 2000, gp_env);
  for (i = 0; i < 2; i++)
    ck_assert_msg(h_server_start(&more[i], db_url, gp_env_all) == 0,
                  "replica %d did not start; see %s", i + 2, more[i].log);
}

static size_t created_count(json_t **creates_out)
{
  json_t *all = h_emu_get(&emu, "/emulator/jobs");
  size_t n = json_object_size(json_object_get(all, "creates"));

  if (creates_out)
    *creates_out = json_incref(json_object_get(all, "creates"));
  json_decref(all);
  return n;
}

static int cmp_ll(const void *a, const void *b)
{
  long long x = *(const long long *)a, y = *(const long long *)b;

  return x < y ? -1 : x > y;
}

START_TEST(three_replicas_share_one_budget)
{
  char id[32], name[32], queue[8];
  json_t *creates = NULL, *reqs, *r, *v;
  long long end, *times[4];
  size_t counts[4] = {0}, i, n;
  const char *key;
  int k, refused = 0, killed = 0;
  long long t0 = h_now_ms();

  for (k = 0; k < N_BUDGET_JOBS; k++) {
    snprintf(name, sizeof(name), "b-%d", k);
    snprintf(queue, sizeof(queue), "q%d", k % 4 + 1);
    submit(queue, name, id);
    if (k + 1 == N_BUDGET_JOBS / 3) {
      /* replica 3 is killed once dispatch is under way and two thirds of
       * the jobs are still to come, however fast this host submits:
       * dispatch goes on without it (its leases end with it) */
      end = h_now_ms() + 150000;
      while ((n = created_count(NULL)) == 0) {
        ck_assert_msg(h_now_ms() < end, "no job created after 150 s");
        h_sleep_ms(100);
      }
      ck_assert_int_eq(h_server_kill(&more[1], SIGKILL), 0);
      killed = 1;
    }
  }
  ck_assert_msg(killed, "replica 3 was never killed");
  end = h_now_ms() + 150000;
  while ((n = created_count(NULL)) < N_BUDGET_JOBS) {
    ck_assert_msg(h_now_ms() < end, "%zu of %d jobs created after 150 s", n,
                  N_BUDGET_JOBS);
    h_sleep_ms(500);
  }

  /* each created exactly once */
  created_count(&creates);
  ck_assert_uint_eq(json_object_size(creates), N_BUDGET_JOBS);
  json_object_foreach (creates, key, v)
    ck_assert_msg(json_integer_value(v) == 1, "%s created %lld times", key,
                  (long long)json_integer_value(v));
  json_decref(creates);

  /* no 429, and every window of the quota's length within it */
  reqs = h_emu_get(&emu, "/emulator/requests");
  for (k = 0; k < 4; k++)
    times[k] = calloc(N_BUDGET_JOBS * 4, sizeof(long long));
  json_array_foreach (json_object_get(reqs, "requests"), i, r) {
    const char *m = h_str(r, "method"), *p = h_str(r, "path");
    long st = (long)json_integer_value(json_object_get(r, "status"));
    if (!m || !p || (strcmp(m, "POST") != 0 && strcmp(m, "DELETE") != 0) ||
        !strstr(p, "/locations/"))
      continue;
    if (st == 429)
      refused++;
    for (k = 0; k < 4; k++) {
      char needle[64];
      snprintf(needle, sizeof(needle), "/locations/%s/jobs", budget_regions[k]);
      if (strstr(p, needle) && st != 429 && counts[k] < N_BUDGET_JOBS * 4)
        times[k][counts[k]++] =
            (long long)json_integer_value(json_object_get(r, "atMs"));
    }
  }
  json_decref(reqs);
  ck_assert_msg(refused == 0, "%d mutations answered 429", refused);
  fprintf(stderr,
          "budget: 3 replicas (one killed), %d jobs over 4 regions "
          "in %.1f s, 0 x 429; most mutations in a %d-ms window "
          "(quota %d):",
          N_BUDGET_JOBS, (double)(h_now_ms() - t0) / 1000.0, WINDOW_MS, QUOTA);
  for (k = 0; k < 4; k++) {
    size_t lo = 0, hi, most = 0;
    ck_assert_uint_ge(counts[k], N_BUDGET_JOBS / 4);
    qsort(times[k], counts[k], sizeof(long long), cmp_ll);
    for (hi = 0; hi < counts[k]; hi++) {
      while (times[k][hi] - times[k][lo] >= WINDOW_MS)
        lo++;
      if (hi - lo + 1 > most)
        most = hi - lo + 1;
    }
    fprintf(stderr, " %s %zu%s", budget_regions[k], most, k == 3 ? "\n" : "");
    ck_assert_msg(most <= QUOTA, "%s: %zu mutations in one %d-ms window",
                  budget_regions[k], most, WINDOW_MS);
    /* the load was real: windows came near the budget (loosely: a loaded
     * machine dispatches slower than the budget allows) */
    ck_assert_msg(most >= QUOTA / 4, "%s: at most %zu mutations a window",
                  budget_regions[k], most);
    free(times[k]);
  }
}
END_TEST

/* The emulator refuses mutations over its quota with 429, per region. */
START_TEST(emulator_enforces_the_quota)
{
  char path[256];
  struct h_resp r;
  int i;

  json_decref(h_call(&emu, "POST", "/emulator/config", NULL,
                     "{\"EMU_MUTATION_QUOTA\": 3, \"EMU_QUOTA_WINDOW_MS\": "
                     "60000}",
                     200));
  /* regions nothing else used: whatever the body, each call counts */
  for (i = 0; i < 5; i++) {
    snprintf(path, sizeof(path),
             "/v1/projects/%s/locations/me-west1/jobs?job_id=quota-%d", PROJECT,
             i);
    ck_assert_int_eq(h_request(&emu, "POST", path, NULL, "{}", NULL, &r), 0);
    ck_assert_msg(i < 3 ? r.status != 429 : r.status == 429,
                  "mutation %d: %ld %s", i, r.status, r.body);
    h_resp_free(&r);
  }
  snprintf(path, sizeof(path),
           "/v1/projects/%s/locations/me-west1/jobs/quota-0:cancel", PROJECT);
  ck_assert_int_eq(h_request(&emu, "POST", path, NULL, "{}", NULL, &r), 0);
  ck_assert_int_eq(r.status, 429);
  h_resp_free(&r);
  /* another region has its own quota; reads are not mutations */
  snprintf(path, sizeof(path),
           "/v1/projects/%s/locations/me-central1/jobs?job_id=quota-x",
           PROJECT);
  ck_assert_int_eq(h_request(&emu, "POST", path, NULL, "{}", NULL, &r), 0);
  ck_assert_msg(r.status != 429, "other region: %ld %s", r.status, r.body);
  h_resp_free(&r);
  snprintf(path, sizeof(path), "/v1/projects/%s/locations/me-west1/jobs",
           PROJECT);
  ck_assert_int_eq(h_request(&emu, "GET", path, NULL, NULL, NULL, &r), 0);
  ck_assert_int_eq(r.status, 200);
  h_resp_free(&r);
}
END_TEST

/* ======================================================================
 * 4. Race mode: one Flex Start copy per region, the first to start wins
 * ==================================================================== */

#define RACE_SYNC_MS 500
#define NO_CAPACITY                                                            \
  "us-central1/FLEX_START=0,us-east4/FLEX_START=0,europe-west4/FLEX_START=0"

static const char *const race_regions[3] = {"us-central1", "us-east4",
                                            "europe-west4"};

static void setup_race(void)
{
  const char *emu_env[] = {"EMU_RUN_MS=120000",         "EMU_START_MS=300",
                           "EMU_CANCEL_MS=100",         "EMU_FLEX_WAIT_MS=100",
                           "EMU_CAPACITY=" NO_CAPACITY, NULL};

  start_all("it_footprint_race", "tests/fixtures/footprint-race.json", emu_env,
            RACE_SYNC_MS, NULL);
}

static void set_capacity(const char *spec)
{
  char body[512];

  snprintf(body, sizeof(body), "{\"EMU_CAPACITY\": \"%s\"}", spec);
  json_decref(h_call(&emu, "POST", "/emulator/config", NULL, body, 200));
}

/* Wait until each of the job's three copies exists in the emulator. */
static void wait_copies(const char *id)
{
  long long end = h_now_ms() + 10000;
  char copy[64];
  int k, have;

  do {
    ck_assert_msg(h_now_ms() < end, "the copies of %s were not all created",
                  id);
    h_sleep_ms(100);
    for (k = 1, have = 0; k <= 3; k++) {
      json_t *e;
      snprintf(copy, sizeof(copy), "gpugate-%s-a1-r%d", id, k);
      e = emu_job(copy);
      have += e != NULL;
      json_decref(e);
    }
  } while (have < 3);
}

/* The state of copy k of the job's first attempt in the emulator. */
static const char *copy_state(const char *id, int k, char *out, size_t len)
{
  char copy[64];
  json_t *e;

  snprintf(copy, sizeof(copy), "gpugate-%s-a1-r%d", id, k);
  e = emu_job(copy);
  snprintf(out, len, "%s", e && h_str(e, "state") ? h_str(e, "state") : "-");
  if (e) {
    ck_assert_msg(
        json_integer_value(json_object_get(e, "createCount")) == 1,
        "%s created %lld times", copy,
        (long long)json_integer_value(json_object_get(e, "createCount")));
    ck_assert_str_eq(h_str(e, "location"), race_regions[k - 1]);
  }
  json_decref(e);
  return out;
}

static bool stopped(const char *state)
{
  return !strcmp(state, "CANCELLATION_IN_PROGRESS") ||
         !strcmp(state, "CANCELLED") || !strcmp(state, "-");
}

static bool has_reason(const char *id, const char *reason)
{
  char path[200];
  json_t *r, *e;
  size_t i;
  bool found = false;

  snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%s/events?limit=500", id);
  r = h_call(&srv, "GET", path, tok, NULL, 200);
  json_array_foreach (json_object_get(r, "items"), i, e) {
    if (str_is(e, "reason", reason))
      found = true;
  }
  json_decref(r);
  return found;
}

START_TEST(race_capacity_in_region_3_first)
{
  char id[32], plain[64], st[3][48], want_name[256];
  long long end, t_won;
  json_t *j;
  int k;

  submit("race", "race-r3", id);
  wait_copies(id);
  j = wait_state(id, "QUEUED", 30000);
  ck_assert_msg(!h_str(json_object_get(j, "batch_job"), "name"),
                "a Batch job named before any copy won: %s",
                h_str(json_object_get(j, "batch_job"), "name"));
  json_decref(j);

  /* capacity appears in region 3 (europe-west4) only */
  set_capacity("us-central1/FLEX_START=0,us-east4/FLEX_START=0,"
               "europe-west4/FLEX_START=8");
  j = wait_state(id, "RUNNING", 15000);
  t_won = h_now_ms();
  ck_assert_str_eq(h_str(json_object_get(j, "admission"), "location"),
                   "europe-west4");
  snprintf(want_name, sizeof(want_name),
           "projects/%s/locations/europe-west4/jobs/gpugate-%s-a1-r3", PROJECT,
           id);
  ck_assert_str_eq(h_str(json_object_get(j, "batch_job"), "name"), want_name);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "attempt")), 1);
  json_decref(j);
  ck_assert_msg(has_reason(id, "RaceWon"), "no RaceWon event");

  /* the copies in regions 1 and 2 are cancelled within one sync period
   * (plus the cancel's own round trip) */
  end = t_won + RACE_SYNC_MS + 1500;
  for (;;) {
    copy_state(id, 1, st[0], sizeof(st[0]));
    copy_state(id, 2, st[1], sizeof(st[1]));
    if (stopped(st[0]) && stopped(st[1]))
      break;
    ck_assert_msg(h_now_ms() < end,
                  "copies still %s / %s %lld ms after the win", st[0], st[1],
                  h_now_ms() - t_won);
    h_sleep_ms(50);
  }
  copy_state(id, 3, st[2], sizeof(st[2]));
  ck_assert_str_eq(st[2], "RUNNING");

  /* exactly one copy per region and attempt; no unraced create */
  snprintf(plain, sizeof(plain), "gpugate-%s-a1", id);
  j = emu_job(plain);
  ck_assert_ptr_null(j);
  for (k = 1; k <= 3; k++)
    copy_state(id, k, st[k - 1], sizeof(st[k - 1]));

  ck_assert(metric("gpugate_batch_races_total ") == 1);
  ck_assert(
      metric("gpugate_batch_race_winners_total{region=\"europe-west4\"} ") ==
      1);
  ck_assert(metric("gpugate_batch_race_overlap_seconds_total{") == 0);
  /* the losers are gone for good: nothing left to sweep */
  h_sleep_ms(2 * RACE_SYNC_MS);
  ck_assert_int_eq(h_log_count(&srv, "swept a Batch job"), 0);
}
END_TEST

START_TEST(race_capacity_in_two_regions_at_once)
{
  char id[32], st[3][48];
  long long end;
  json_t *j;
  int k, running;

  submit("race", "race-two", id);
  wait_copies(id);
  /* regions 1 and 2 get capacity in the same instant */
  set_capacity("us-central1/FLEX_START=8,us-east4/FLEX_START=8,"
               "europe-west4/FLEX_START=0");
  j = wait_state(id, "RUNNING", 15000);
  json_decref(j);
  end = h_now_ms() + 4 * RACE_SYNC_MS + 2000;
  for (;;) {
    for (k = 1, running = 0; k <= 3; k++)
      running += !stopped(copy_state(id, k, st[k - 1], sizeof(st[k - 1])));
    if (running == 1)
      break;
    ck_assert_msg(h_now_ms() < end, "copies %s / %s / %s", st[0], st[1], st[2]);
    h_sleep_ms(50);
  }
  /* and it is the one the job names */
  j = get_job(id);
  for (k = 1; k <= 3; k++)
    if (!stopped(st[k - 1]))
      ck_assert_str_eq(h_str(json_object_get(j, "admission"), "location"),
                       race_regions[k - 1]);
  json_decref(j);
  h_sleep_ms(1000);
  for (k = 1, running = 0; k <= 3; k++)
    running += !stopped(copy_state(id, k, st[k - 1], sizeof(st[k - 1])));
  ck_assert_int_eq(running, 1);
}
END_TEST

/* kill -9 of the (only) dispatching replica at random moments while 200
 * raced jobs are dispatched and race in three regions with capacity. */
#define N_RACED 200

static void setup_race_crash(void)
{
  const char *emu_env[] = {"EMU_RUN_MS=600000",
                           "EMU_START_MS=200",
                           "EMU_CANCEL_MS=100",
                           "EMU_FLEX_WAIT_MS=300",
                           "EMU_CAPACITY=us-central1/FLEX_START=2000,"
                           "us-east4/FLEX_START=2000,"
                           "europe-west4/FLEX_START=2000",
                           NULL};

  int i;

  start_all("it_footprint_race_crash", "tests/fixtures/footprint-race.json",
            emu_env, RACE_SYNC_MS, NULL);
  for (i = 0; i < 3; i++)
    ck_assert_msg(h_server_start(&more[i], db_url, gp_env_all) == 0,
                  "replica %d did not start; see %s", i + 2, more[i].log);
}

static bool live_state(const char *st)
{
  return st && (!strcmp(st, "QUEUED") || !strcmp(st, "SCHEDULED") ||
                !strcmp(st, "RUNNING"));
}

START_TEST(race_survives_kill9)
{
  static char ids[N_RACED][32];
  struct h_server *victims[3] = {&srv, &more[0], &more[1]};
  struct h_server *survivor = &more[2];
  char name[32], why[256] = "", body[512], path[160];
  unsigned seed = (unsigned)h_now_ms() | 1u;
  long long end;
  int i, kills = 0;
  bool ok = false;

  for (i = 0; i < N_RACED; i++) {
    json_t *j;
    snprintf(name, sizeof(name), "raced-%d", i);
    snprintf(body, sizeof(body),
             "{\"name\": \"%s\", \"queue\": \"race\", \"task_count\": 1, "
             "\"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\", "
             "\"cpu_milli\": 1000, \"memory_mib\": 1024, \"gpu\": 1}}",
             name);
    j = h_call(survivor, "POST", "/v1/teams/team-x/jobs", tok, body, 201);
    snprintf(ids[i], sizeof(ids[i]), "%s", h_str(j, "id"));
    json_decref(j);
    if (i % 60 == 59 && kills < 3) {
      /* a dispatching replica dies at a random moment of the dispatch */
      h_sleep_ms((long)(h_next_rand(&seed) % 500));
      ck_assert_int_eq(h_server_kill(victims[kills], SIGKILL), 0);
      kills++;
    }
  }
  ck_assert_int_eq(kills, 3);
  fprintf(stderr, "race kill -9: %d replicas killed during %d raced jobs\n",
          kills, N_RACED);

  /* after recovery: one live copy per job, the one it names; no other
   * live Batch job at all */
  end = h_now_ms() + 60000;
  while (!ok) {
    json_t *all, *e, *named = json_object();
    size_t k;
    int live = 0;

    ck_assert_msg(h_now_ms() < end, "not settled after 60 s: %s", why);
    ok = true;
    for (i = 0; i < N_RACED && ok; i++) {
      json_t *j;
      const char *bj;
      snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%.31s", ids[i]);
      j = h_call(survivor, "GET", path, tok, NULL, 200);
      bj = h_str(json_object_get(j, "batch_job"), "name");
      if (!str_is(j, "state", "RUNNING") || !bj) {
        snprintf(why, sizeof(why), "job %.31s is %.16s (%.160s)", ids[i],
                 h_str(j, "state"), bj ? bj : "no Batch job");
        ok = false;
      } else {
        json_object_set_new(named, bj, json_true());
      }
      json_decref(j);
    }
    all = h_emu_get(&emu, "/emulator/jobs");
    json_array_foreach (json_object_get(all, "jobs"), k, e) {
      ck_assert_msg(
          json_integer_value(json_object_get(e, "createCount")) == 1,
          "%s created %lld times", h_str(e, "name"),
          (long long)json_integer_value(json_object_get(e, "createCount")));
      if (!live_state(h_str(e, "state")))
        continue;
      live++;
      if (ok && !json_object_get(named, h_str(e, "name"))) {
        snprintf(why, sizeof(why), "%s is %s but no job's Batch job",
                 h_str(e, "name"), h_str(e, "state"));
        ok = false;
      }
    }
    if (ok && live != N_RACED) {
      snprintf(why, sizeof(why), "%d live Batch jobs for %d jobs", live,
               N_RACED);
      ok = false;
    }
    json_decref(named);
    json_decref(all);
    if (!ok)
      h_sleep_ms(500);
  }
}
END_TEST

START_TEST(race_flavor_validation)
{
  static const char flex[] =
      "\"provisioning_model\": \"FLEX_START\", \"machine_type\": "
      "\"g2-standard-24\", \"accelerator_type\": \"nvidia-l4\", "
      "\"gpus_per_vm\": 2, \"locations\": [\"us-central1\", \"us-east4\"]";
  static const char spot[] =
      "\"provisioning_model\": \"SPOT\", \"machine_type\": "
      "\"g2-standard-24\", \"accelerator_type\": \"nvidia-l4\", "
      "\"gpus_per_vm\": 2, \"locations\": [\"us-central1\"]";
  char *admin = h_token("platform", "admin", 600), body[1024];
  struct h_resp r;
  json_t *j;

  /* round trip, and the default */
  snprintf(body, sizeof(body),
           "{%s, \"multi_region\": \"race\", \"max_parallel_regions\": 2}",
           flex);
  j = h_call(&srv, "PUT", "/v1/flavors/raced", admin, body, 201);
  ck_assert_str_eq(h_str(j, "multi_region"), "race");
  ck_assert_int_eq(
      json_integer_value(json_object_get(j, "max_parallel_regions")), 2);
  json_decref(j);
  j = h_call(&srv, "GET", "/v1/flavors/raced", admin, NULL, 200);
  ck_assert_str_eq(h_str(j, "multi_region"), "race");
  json_decref(j);
  snprintf(body, sizeof(body), "{%s}", flex);
  j = h_call(&srv, "PUT", "/v1/flavors/plain", admin, body, 201);
  ck_assert_str_eq(h_str(j, "multi_region"), "failover");
  ck_assert(json_is_null(json_object_get(j, "max_parallel_regions")));
  json_decref(j);

  /* race on another model: 422 naming multi_region */
  snprintf(body, sizeof(body), "{%s, \"multi_region\": \"race\"}", spot);
  ck_assert_int_eq(
      h_request(&srv, "PUT", "/v1/flavors/spot-race", admin, body, NULL, &r),
      0);
  ck_assert_msg(h_is_problem(&r, 422, "multi_region"), "%ld %s", r.status,
                r.body);
  h_resp_free(&r);
  /* max_parallel_regions without race: 422 */
  snprintf(body, sizeof(body), "{%s, \"max_parallel_regions\": 2}", flex);
  ck_assert_int_eq(
      h_request(&srv, "PUT", "/v1/flavors/half", admin, body, NULL, &r), 0);
  ck_assert_msg(h_is_problem(&r, 422, "max_parallel_regions"), "%ld %s",
                r.status, r.body);
  h_resp_free(&r);
  /* bad values: 400 naming the field */
  snprintf(body, sizeof(body), "{%s, \"multi_region\": \"both\"}", flex);
  ck_assert_int_eq(
      h_request(&srv, "PUT", "/v1/flavors/bad1", admin, body, NULL, &r), 0);
  ck_assert_msg(h_is_problem(&r, 400, "multi_region"), "%ld %s", r.status,
                r.body);
  h_resp_free(&r);
  snprintf(body, sizeof(body),
           "{%s, \"multi_region\": \"race\", \"max_parallel_regions\": 0}",
           flex);
  ck_assert_int_eq(
      h_request(&srv, "PUT", "/v1/flavors/bad2", admin, body, NULL, &r), 0);
  ck_assert_msg(h_is_problem(&r, 400, "max_parallel_regions"), "%ld %s",
                r.status, r.body);
  h_resp_free(&r);
  free(admin);
}
END_TEST

Suite *footprint_suite(void)
{
  Suite *s = suite_create("footprint");
  TCase *slow = tcase_create("slow_create"), *orphans, *budget, *race,
        *race_crash;

  tcase_add_unchecked_fixture(slow, setup_slow, teardown);
  tcase_set_timeout(slow, 90);
  tcase_add_test(slow, cancel_during_slow_create_answers_at_once);
  tcase_add_test(slow, eviction_during_slow_create_completes);
  suite_add_tcase(s, slow);

  orphans = tcase_create("orphans");
  tcase_add_unchecked_fixture(orphans, setup_orphans, teardown);
  tcase_set_timeout(orphans, 90);
  tcase_add_test(orphans, orphans_are_swept_and_a_late_create_is_adopted);
  tcase_add_test(orphans, emulator_enforces_the_quota);
  suite_add_tcase(s, orphans);

  race = tcase_create("race");
  tcase_add_unchecked_fixture(race, setup_race, teardown);
  tcase_set_timeout(race, 90);
  tcase_add_test(race, race_flavor_validation);
  tcase_add_test(race, race_capacity_in_region_3_first);
  tcase_add_test(race, race_capacity_in_two_regions_at_once);
  suite_add_tcase(s, race);

  race_crash = tcase_create("race_crash");
  tcase_add_unchecked_fixture(race_crash, setup_race_crash, teardown);
  tcase_set_timeout(race_crash, 120);
  tcase_add_test(race_crash, race_survives_kill9);
  suite_add_tcase(s, race_crash);

  budget = tcase_create("budget");
  tcase_add_unchecked_fixture(budget, setup_budget, teardown);
  tcase_set_timeout(budget, 240);
  tcase_add_test(budget, three_replicas_share_one_budget);
  suite_add_tcase(s, budget);
  return s;
}
