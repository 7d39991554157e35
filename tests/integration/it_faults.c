/*
 * it_faults.c — a cancel and a preemption always finish, whatever Batch
 * answered (issue 34; SPEC §10, the invariant written in db/batch.c): the
 * real binary, PostgreSQL and the Batch emulator with the faults a
 * production Batch has (tests/emulator/README.md, Faults):
 *
 *   refused cancel   Batch refuses the first :cancel and the first DELETE
 *                    with 400, then would accept: the cancel is tried again
 *                    until Batch takes it, and the job is CANCELLED.
 *   overtaking       a cancel queued while the create is at Batch (1.5 s),
 *                    whose answer is lost (a 503 after the job was made):
 *                    no create reaches Batch after the cancel.
 *   lost create      the same lost answer while the job is being preempted:
 *                    the eviction's cancel ends the Batch job, the job is
 *                    requeued and the preemptor admitted.
 *   shapes           the emulator's Job, ListJobsResponse and Operation, and
 *                    gpugate's create body, decode into Google's generated
 *                    Batch v1 messages with no unrecognised field
 *                    (tests/emulator/check_shapes.py).
 *
 * Each prints how long its job took to settle.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *faults_suite(void);

#define FIXTURE "tests/fixtures/faults.json"
#define PYTHONPATH                                                             \
  "PYTHONPATH=/usr/lib/google-cloud-sdk/lib/third_party:/usr/lib/"             \
  "google-cloud-sdk/lib"

static struct h_server emu, srv;
static char db_url[512];
static char *tok;

static bool str_is(const json_t *o, const char *k, const char *want)
{
  const char *v = h_str(o, k);

  return v && want && !strcmp(v, want);
}

static void setup(void)
{
  const char *emu_env[] = {"EMU_RUN_MS=600000",      "EMU_START_MS=50",
                           "EMU_CANCEL_MS=100",      "EMU_DELETE_MS=100",
                           "EMU_REQUIRE_AUTH=false", NULL};
  char gcp[H_GCP_ENV][128];
  const char *env[H_GCP_ENV + 8];
  size_t n = 0, i;

  ck_assert_msg(h_emulator_start(&emu, emu_env) == 0,
                "the emulator did not start; see %s", emu.log);
  h_gcp_env(&emu, gcp);
  h_db_apply("it_faults", FIXTURE, db_url, sizeof(db_url));
  for (i = 0; i < H_GCP_ENV; i++)
    env[n++] = gcp[i];
  env[n++] = "GPUGATE_SYNC_INTERVAL_MS=300";
  env[n++] = "GPUGATE_RATE_LIMIT_RPS=100000";
  env[n++] = "GPUGATE_ADMISSION_INTERVAL_MS=200";
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

static void faults(const char *spec)
{
  json_decref(h_call(&emu, "POST", "/emulator/faults", NULL, spec, 200));
}

static void emu_config(const char *spec)
{
  json_decref(h_call(&emu, "POST", "/emulator/config", NULL, spec, 200));
}

/* Submit a job of gpu GPUs that runs run_ms at Batch; id gets its id. */
static void submit(const char *name, const char *klass, int gpu, long run_ms,
                   char id[32])
{
  char body[768];
  json_t *j;

  snprintf(body, sizeof(body),
           "{\"name\": \"%s\", \"queue\": \"main\", \"task_count\": 1, "
           "\"priority_class\": \"%s\", \"max_run_duration_s\": 3600, "
           "\"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\", "
           "\"env\": {\"EMU_RUN_MS\": \"%ld\"}, \"cpu_milli\": 2000, "
           "\"memory_mib\": 10240, \"gpu\": %d}}",
           name, klass, run_ms, gpu);
  j = h_call(&srv, "POST", "/v1/teams/team-x/jobs", tok, body, 201);
  snprintf(id, 32, "%s", h_str(j, "id") ? h_str(j, "id") : "");
  json_decref(j);
  ck_assert_msg(id[0], "%s: no job id", name);
}

static json_t *get_job(const char *id)
{
  char path[160];

  snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%.31s", id);
  return h_call(&srv, "GET", path, tok, NULL, 200);
}

static void cancel(const char *id)
{
  char path[160];

  snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%.31s/cancel", id);
  json_decref(h_call(&srv, "POST", path, tok, NULL, 200));
}

/* Poll the job until its state is one of want ("A|B"); returns it. */
static json_t *wait_state(const char *id, const char *want, long ms)
{
  long long end = h_now_ms() + ms;
  json_t *j;

  for (;;) {
    const char *st;
    j = get_job(id);
    st = h_str(j, "state");
    if (st) {
      char pat[64], *tokp, *save = NULL;
      snprintf(pat, sizeof(pat), "%s", want);
      for (tokp = strtok_r(pat, "|", &save); tokp;
           tokp = strtok_r(NULL, "|", &save))
        if (!strcmp(st, tokp))
          return j;
    }
    ck_assert_msg(h_now_ms() < end, "job %s is %s after %ld ms, not %s", id,
                  st ? st : "?", ms, want);
    json_decref(j);
    h_sleep_ms(100);
  }
}

/* The emulator's state of Batch job batch ("-" when it has none). */
static void emu_state(const char *batch, char *out, size_t len)
{
  json_t *all = h_emu_get(&emu, "/emulator/jobs"), *e;
  size_t i;

  snprintf(out, len, "-");
  json_array_foreach (json_object_get(all, "jobs"), i, e) {
    if (str_is(e, "jobId", batch))
      snprintf(out, len, "%s", h_str(e, "state") ? h_str(e, "state") : "");
  }
  json_decref(all);
}

static bool live(const char *state)
{
  return !strcmp(state, "QUEUED") || !strcmp(state, "SCHEDULED") ||
         !strcmp(state, "RUNNING");
}

/* Wait until the emulator has a create under way (its latency). */
static void wait_create_in_flight(long ms)
{
  long long end = h_now_ms() + ms;

  for (;;) {
    json_t *h = h_emu_get(&emu, "/emulator/healthz");
    json_int_t n = json_integer_value(
        json_object_get(json_object_get(h, "inFlight"), "create"));
    json_decref(h);
    if (n > 0)
      return;
    ck_assert_msg(h_now_ms() < end, "no create under way after %ld ms", ms);
    h_sleep_ms(20);
  }
}

/* Indexes in the emulator's record of the last create and the first
 * :cancel of Batch job batch (-1: none). */
static void call_order(const char *batch, long *last_create, long *first_cancel)
{
  json_t *all = h_emu_get(&emu, "/emulator/requests"), *r;
  char needle[96];
  size_t i;

  snprintf(needle, sizeof(needle), "/jobs/%s:cancel", batch);
  *last_create = *first_cancel = -1;
  json_array_foreach (json_object_get(all, "requests"), i, r) {
    const char *q = h_str(json_object_get(r, "query"), "job_id");
    const char *path = h_str(r, "path");
    if (str_is(r, "method", "POST") && q && !strcmp(q, batch))
      *last_create = (long)i;
    if (path && strstr(path, needle) && *first_cancel < 0)
      *first_cancel = (long)i;
  }
  json_decref(all);
}

/* ---- refused cancel ---------------------------------------------------- */

START_TEST(refused_cancel_is_not_lost)
{
  char id[32], batch[64], st[48];
  long long t0;
  json_t *j;

  faults("{}");
  submit("refused", "default", 2, 600000, id);
  json_decref(wait_state(id, "RUNNING", 30000));
  snprintf(batch, sizeof(batch), "gpugate-%s-a1", id);
  /* the :cancel and then the DELETE refused once each, then accepted */
  faults("{\"error_rate\": 1, \"codes\": [400], \"calls\": [\"cancel\", "
         "\"delete\"], \"max_faults\": 2}");
  t0 = h_now_ms();
  cancel(id);
  j = wait_state(id, "CANCELLED", 40000);
  json_decref(j);
  emu_state(batch, st, sizeof(st));
  fprintf(stderr,
          "it_faults refused cancel: CANCELLED %.1f s after the cancel, "
          "Batch job %s\n",
          (double)(h_now_ms() - t0) / 1000.0, st);
  ck_assert_msg(!live(st), "Batch job %s is %s", batch, st);
  faults("{}");
}
END_TEST

/* ---- a cancel behind a create whose answer was lost -----------------------
 */

START_TEST(cancel_never_overtakes_its_create)
{
  char id[32], batch[64], st[48];
  long last_create, first_cancel;
  long long t0;

  emu_config("{\"EMU_LATENCY_MS\": \"create:1500\"}");
  faults("{\"lost_response_rate\": 1, \"lost_response_mode\": \"503\", "
         "\"calls\": [\"create\"], \"max_faults\": 1}");
  submit("overtaken", "default", 2, 600000, id);
  snprintf(batch, sizeof(batch), "gpugate-%s-a1", id);
  wait_create_in_flight(20000);
  t0 = h_now_ms();
  cancel(id);
  json_decref(wait_state(id, "CANCELLED", 40000));
  emu_config("{\"EMU_LATENCY_MS\": \"\"}");
  faults("{}");
  h_sleep_ms(1500); /* any create still to come (none must) */
  call_order(batch, &last_create, &first_cancel);
  emu_state(batch, st, sizeof(st));
  fprintf(stderr,
          "it_faults overtaking: CANCELLED %.1f s after the cancel; last "
          "create #%ld, first cancel #%ld; Batch job %s\n",
          (double)(h_now_ms() - t0) / 1000.0, last_create, first_cancel, st);
  ck_assert_msg(first_cancel < 0 || last_create < first_cancel,
                "a create (#%ld) reached Batch after the cancel (#%ld)",
                last_create, first_cancel);
  ck_assert_msg(!live(st), "Batch job %s is %s", batch, st);
}
END_TEST

/* ---- a preemption whose victim's create answer was lost ------------------ */

START_TEST(eviction_ends_a_create_whose_answer_was_lost)
{
  char low[32], high[32], batch[64], st[48];
  long long t0;
  json_t *j;

  emu_config("{\"EMU_LATENCY_MS\": \"create:1500\"}");
  faults("{\"lost_response_rate\": 1, \"lost_response_mode\": \"503\", "
         "\"calls\": [\"create\"], \"max_faults\": 1}");
  submit("low", "default", 2, 600000, low);
  snprintf(batch, sizeof(batch), "gpugate-%s-a1", low);
  wait_create_in_flight(20000);
  t0 = h_now_ms();
  submit("high", "urgent", 2, 600000, high);
  j = wait_state(high, "ADMITTED|QUEUED|RUNNING", 45000);
  json_decref(j);
  j = get_job(low);
  emu_state(batch, st, sizeof(st));
  fprintf(stderr,
          "it_faults lost create: the preemptor admitted %.1f s after it "
          "arrived; the victim %s (attempt %lld), its Batch job %s\n",
          (double)(h_now_ms() - t0) / 1000.0, h_str(j, "state"),
          (long long)json_integer_value(json_object_get(j, "attempt")), st);
  ck_assert_msg(str_is(j, "state", "PENDING"), "the victim is %s",
                h_str(j, "state"));
  json_decref(j);
  ck_assert_msg(!live(st), "the victim's Batch job %s is %s", batch, st);
  emu_config("{\"EMU_LATENCY_MS\": \"\"}");
  faults("{}");
  cancel(high);
  cancel(low);
}
END_TEST

/* ---- shapes ------------------------------------------------------------- */

START_TEST(shapes_match_googles_messages)
{
  char id[32], path[256], file[256], out[4096];
  const char *base = "/v1/projects/test-project/locations/us-central1";
  json_t *doc = json_object(), *jobs = json_array(), *lists = json_array(),
         *ops = json_array(), *all, *r, *op;
  const char *argv[] = {"/usr/bin/python3", "tests/emulator/check_shapes.py",
                        NULL, NULL};
  const char *env[] = {PYTHONPATH, NULL};
  size_t i;
  char *text;
  int rc;

  faults("{}");
  submit("shapes", "default", 2, 600000, id);
  json_decref(wait_state(id, "RUNNING", 30000));
  snprintf(path, sizeof(path), "%s/jobs/gpugate-%s-a1", base, id);
  json_array_append_new(jobs, h_call(&emu, "GET", path, NULL, NULL, 200));
  snprintf(path, sizeof(path), "%s/jobs", base);
  json_array_append_new(lists, h_call(&emu, "GET", path, NULL, NULL, 200));
  /* gpugate's own create bodies, as the emulator received them */
  all = h_emu_get(&emu, "/emulator/requests");
  json_array_foreach (json_object_get(all, "requests"), i, r) {
    if (str_is(r, "method", "POST") &&
        h_str(json_object_get(r, "query"), "job_id") &&
        json_is_object(json_object_get(r, "body")))
      json_array_append(jobs, json_object_get(r, "body"));
  }
  json_decref(all);
  cancel(id);
  json_decref(wait_state(id, "CANCELLED", 30000));
  /* an Operation as :cancel answers it, and done */
  submit("shapes-op", "default", 2, 600000, id);
  json_decref(wait_state(id, "RUNNING", 30000));
  snprintf(path, sizeof(path), "%s/jobs/gpugate-%s-a1:cancel", base, id);
  op = h_call(&emu, "POST", path, NULL, "{}", 200);
  ck_assert_ptr_nonnull(op);
  snprintf(path, sizeof(path), "/v1/%s", h_str(op, "name"));
  json_array_append_new(ops, op);
  h_sleep_ms(500);
  json_array_append_new(ops, h_call(&emu, "GET", path, NULL, NULL, 200));
  json_object_set_new(doc, "Job", jobs);
  json_object_set_new(doc, "ListJobsResponse", lists);
  json_object_set_new(doc, "Operation", ops);
  text = json_dumps(doc, JSON_COMPACT);
  h_write_temp("shapes", text, file, sizeof(file));
  free(text);
  json_decref(doc);
  argv[2] = file;
  rc = h_run(argv, env, 60000, NULL, out, sizeof(out));
  unlink(file);
  fprintf(stderr, "it_faults shapes:\n%s", out);
  ck_assert_msg(rc == 0, "check_shapes.py exited %d:\n%s", rc, out);
  ck_assert_ptr_nonnull(strstr(out, "Job[1]: ok"));
  /* cancelled at Batch, not through gpugate */
  json_decref(wait_state(id, "FAILED|CANCELLED", 30000));
}
END_TEST

/* Each case on its own gpugate, emulator and database: a job one case
 * leaves holding quota does not hold up the next. */
static TCase *one_case(const char *name, const TTest *test)
{
  TCase *tc = tcase_create(name);

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test);
  return tc;
}

Suite *faults_suite(void)
{
  Suite *s = suite_create("faults");

  suite_add_tcase(s, one_case("refused", refused_cancel_is_not_lost));
  suite_add_tcase(s, one_case("overtaking", cancel_never_overtakes_its_create));
  suite_add_tcase(
      s, one_case("lost_create", eviction_ends_a_create_whose_answer_was_lost));
  suite_add_tcase(s, one_case("shapes", shapes_match_googles_messages));
  return s;
}
