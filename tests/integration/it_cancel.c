/*
 * it_cancel.c — a cancel wins over every automatic move, and the Batch
 * outbox's edges (issue 22): end to end against the Batch emulator (a
 * Flex Start job whose cancel is held up by Batch errors is neither failed
 * over nor backed off; a permanent refusal in one raced region drops that
 * region only), and against PostgreSQL through the functions the leader,
 * the dispatcher and the sync call (a random walk that interleaves cancels
 * with every automatic transition; a stale report about attempt N-1 does
 * not move attempt N; the shared mutation bucket is exact under
 * concurrent leases).
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gcp/batch_job.h"
#include "db/batch.h"
#include "db/budget.h"
#include "db/jobs.h"
#include "control/admission.h"
#include "lib/log.h"
#include "tests/integration/harness.h"
#include "tests/unit/rng.h"

Suite *cancel_suite(void);

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

static void teardown(void)
{
  h_server_stop(&srv);
  h_server_stop(&emu);
  free(tok);
  tok = NULL;
}

/* ---- HTTP ---- */

/* Submit a job with its priority class; id gets its id. */
static void submit(const char *queue, bool high, const char *name, char id[32])
{
  char body[512];
  json_t *j;

  snprintf(body, sizeof(body),
           "{\"name\": \"%s\", \"queue\": \"%s\", \"task_count\": 1, "
           "%s\"max_run_duration_s\": 3600, \"task\": {\"image\": "
           "\"us-docker.pkg.dev/p/r/trainer:1.2\", \"cpu_milli\": 2000, "
           "\"memory_mib\": 10240, \"gpu\": 2}}",
           name, queue, high ? "\"priority_class\": \"high\", " : "");
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

static long long attempt_of(const json_t *j)
{
  return json_integer_value(json_object_get(j, "attempt"));
}

/* Poll the job until its state is want; returns it (new reference). */
static json_t *wait_state(const char *id, const char *want, long ms)
{
  long long end = h_now_ms() + ms;
  json_t *j;

  for (;;) {
    j = get_job(id);
    if (str_is(j, "state", want))
      return j;
    ck_assert_msg(h_now_ms() < end, "job %s is %s (attempt %lld), not %s", id,
                  h_str(j, "state"), attempt_of(j), want);
    json_decref(j);
    h_sleep_ms(50);
  }
}

/* ======================================================================
 * 1. End to end: a cancel held up at Batch wins over max_wait_s
 * ==================================================================== */

static void start_e2e(const char *db, const char *const *emu_env)
{
  char gcp[H_GCP_ENV][128];
  const char *env[MAX_ENV];
  size_t n = 0, i;

  ck_assert_msg(h_emulator_start(&emu, emu_env) == 0,
                "the emulator did not start; see %s", emu.log);
  h_gcp_env(&emu, gcp);
  h_db_apply(db, "tests/fixtures/cancel.json", db_url, sizeof(db_url));
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

static void setup_e2e(void)
{
  const char *emu_env[] = {"EMU_RUN_MS=1500",
                           "EMU_START_MS=50",
                           "EMU_CANCEL_MS=100",
                           "EMU_FLEX_WAIT_MS=200",
                           "EMU_CAPACITY=us-central1/FLEX_START=0,"
                           "us-east4/FLEX_START=0,europe-west4/FLEX_START=0",
                           NULL};

  start_e2e("it_cancel_e2e", emu_env);
}

static void faults(const char *spec)
{
  json_decref(h_call(&emu, "POST", "/emulator/faults", NULL, spec, 200));
}

static void capacity(const char *spec)
{
  char body[256];

  snprintf(body, sizeof(body), "{\"EMU_CAPACITY\": \"%s\"}", spec);
  json_decref(h_call(&emu, "POST", "/emulator/config", NULL, body, 200));
}

/* Batch creates of jobId batch: how many were tried, how many succeeded. */
static void creates_of(const char *batch, int *tried, int *ok)
{
  json_t *all = h_emu_get(&emu, "/emulator/requests"), *r;
  size_t i;

  *tried = *ok = 0;
  json_array_foreach (json_object_get(all, "requests"), i, r) {
    const char *q = h_str(json_object_get(r, "query"), "job_id");
    if (str_is(r, "method", "POST") && q && !strcmp(q, batch)) {
      (*tried)++;
      *ok += json_integer_value(json_object_get(r, "status")) == 200;
    }
  }
  json_decref(all);
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

static bool stopped(const char *state)
{
  return !strcmp(state, "CANCELLATION_IN_PROGRESS") ||
         !strcmp(state, "CANCELLED") || !strcmp(state, "-");
}

/* Batch job k of the job's first attempt: its copy k, or (k 0) the one. */
static void first_attempt(const char *id, int k, char out[64])
{
  if (k > 0)
    snprintf(out, 64, "gpugate-%s-a1-r%d", id, k);
  else
    snprintf(out, 64, "gpugate-%s-a1", id);
}

/*
 * The reproduction of issue 22: a Flex Start job waits without capacity,
 * its cancel cannot reach Batch (every POST 503) past max_wait_s (2 s),
 * with then_capacity. The cancel wins: no next attempt is admitted or
 * created, and once Batch answers the job is CANCELLED and each of its
 * Batch jobs stopped. copies: the raced copies, or 0 for one Batch job.
 */
static void cancel_held_up_past_max_wait(const char *queue, int copies,
                                         const char *then_capacity)
{
  char id[32], batch[64], st[48], path[160];
  int k, tried = 0, ok;
  long long end;
  json_t *j;

  faults("{}");
  capacity("us-central1/FLEX_START=0,us-east4/FLEX_START=0,"
           "europe-west4/FLEX_START=0");
  submit(queue, false, "held-up", id);
  json_decref(wait_state(id, "QUEUED", 10000));
  end = h_now_ms() + 10000;
  for (k = copies ? 1 : 0; k <= copies; k++) {
    first_attempt(id, k, batch);
    for (emu_state(batch, st, sizeof(st)); !strcmp(st, "-");
         emu_state(batch, st, sizeof(st))) {
      ck_assert_msg(h_now_ms() < end, "%s never created", batch);
      h_sleep_ms(50);
    }
  }

  faults("{\"error_rate\": 1, \"codes\": [503], \"methods\": [\"POST\"]}");
  capacity(then_capacity);
  snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%s/cancel", id);
  json_decref(h_call(&srv, "POST", path, tok, NULL, 200));
  /* max_wait_s (2 s) passes twice over while the cancel is held up */
  end = h_now_ms() + 5000;
  while (h_now_ms() < end) {
    j = get_job(id);
    ck_assert_msg(attempt_of(j) == 1 && str_is(j, "state", "QUEUED"),
                  "with its cancel pending the job moved: %s, attempt %lld",
                  h_str(j, "state"), attempt_of(j));
    json_decref(j);
    h_sleep_ms(100);
  }

  faults("{}");
  j = wait_state(id, "CANCELLED", 30000);
  ck_assert_int_eq(attempt_of(j), 1);
  json_decref(j);
  /* no next attempt reached Batch */
  for (k = 0; k <= 3; k++) {
    int t;
    if (k > 0)
      snprintf(batch, sizeof(batch), "gpugate-%s-a2-r%d", id, k);
    else
      snprintf(batch, sizeof(batch), "gpugate-%s-a2", id);
    creates_of(batch, &t, &ok);
    tried += t;
  }
  ck_assert_msg(tried == 0, "%d creates of attempt 2", tried);
  /* the job is CANCELLED once Batch confirms one copy; the others'
   * cancels, queued with it, follow */
  end = h_now_ms() + 30000;
  for (k = copies ? 1 : 0; k <= copies; k++) {
    first_attempt(id, k, batch);
    for (emu_state(batch, st, sizeof(st)); !stopped(st);
         emu_state(batch, st, sizeof(st))) {
      ck_assert_msg(h_now_ms() < end, "Batch job %s is %s", batch, st);
      h_sleep_ms(100);
    }
  }
}

START_TEST(failover_waits_for_a_pending_cancel)
{
  /* the next location has capacity: a failover would run there */
  cancel_held_up_past_max_wait("failover", 0,
                               "us-central1/FLEX_START=0,us-east4/FLEX_START="
                               "0,europe-west4/FLEX_START=20");
}
END_TEST

START_TEST(race_backoff_waits_for_a_pending_cancel)
{
  /* no region has capacity: the race would back off (PENDING) */
  cancel_held_up_past_max_wait("race", 3,
                               "us-central1/FLEX_START=0,us-east4/FLEX_START="
                               "0,europe-west4/FLEX_START=0");
}
END_TEST

/*
 * A retried cancel of attempt N keeps attempt N+1's create behind it: a
 * Flex Start job waits past max_wait_s in us-central1 (no capacity), and
 * the cancel of its attempt 1 there is refused (503) three times before
 * Batch takes it; attempt 2's create (europe-west4, which has capacity)
 * was queued right behind that cancel and must not reach Batch before it
 * (the two Batch jobs would both hold the job's capacity). In the
 * emulator's record of requests, the accepted :cancel of attempt 1 comes
 * before the first create of attempt 2.
 */
START_TEST(next_attempt_waits_for_a_retried_cancel)
{
  char id[32], a1[64], a2[64], needle[96];
  long refused = 0, cancel_ok = -1, create2 = -1;
  json_t *all, *r;
  size_t i;

  faults("{}");
  capacity("us-central1/FLEX_START=0,us-east4/FLEX_START=0,"
           "europe-west4/FLEX_START=20");
  faults("{\"error_rate\": 1, \"codes\": [503], \"calls\": [\"cancel\"], "
         "\"regions\": [\"us-central1\"], \"max_faults\": 3}");
  submit("failover", false, "next-attempt", id);
  first_attempt(id, 0, a1);
  snprintf(a2, sizeof(a2), "gpugate-%s-a2", id);
  json_decref(wait_state(id, "SUCCEEDED", 60000));
  faults("{}");
  snprintf(needle, sizeof(needle), "/jobs/%s:cancel", a1);
  all = h_emu_get(&emu, "/emulator/requests");
  json_array_foreach (json_object_get(all, "requests"), i, r) {
    const char *q = h_str(json_object_get(r, "query"), "job_id");
    const char *path = h_str(r, "path");
    json_int_t status = json_integer_value(json_object_get(r, "status"));
    if (path && strstr(path, needle)) {
      if (status == 503)
        refused++;
      else if (status == 200 && cancel_ok < 0)
        cancel_ok = (long)i;
    }
    if (str_is(r, "method", "POST") && q && !strcmp(q, a2) && create2 < 0)
      create2 = (long)i;
  }
  json_decref(all);
  fprintf(stderr,
          "it_cancel next attempt: attempt 1's :cancel refused %ld times, "
          "taken as request #%ld; attempt 2's first create #%ld\n",
          refused, cancel_ok, create2);
  ck_assert_msg(refused == 3, "attempt 1's cancel refused %ld times", refused);
  ck_assert_msg(cancel_ok >= 0 && create2 > cancel_ok,
                "attempt 2's create (#%ld) reached Batch before attempt 1's "
                "cancel was taken (#%ld)",
                create2, cancel_ok);
}
END_TEST

/* Batch job batch's creates after the first: whether one was answered
 * other than refused (400), i.e. reached Batch and was taken. */
static bool later_create_taken(const char *batch)
{
  json_t *all = h_emu_get(&emu, "/emulator/requests"), *r;
  int seen = 0;
  bool taken = false;
  size_t i;

  json_array_foreach (json_object_get(all, "requests"), i, r) {
    const char *q = h_str(json_object_get(r, "query"), "job_id");
    if (str_is(r, "method", "POST") && q && !strcmp(q, batch) && seen++ > 0)
      taken |= json_integer_value(json_object_get(r, "status")) != 400;
  }
  json_decref(all);
  return taken;
}

/*
 * A create whose answer was lost and whose retry Batch then refuses (issue
 * 34, the invariant): the first try made the Batch job (answered 503
 * after the effect), the retry is refused with a 400. The job may not end
 * while that Batch job may still run: it is cancelled by its deterministic
 * id and the job ends (FAILED, BatchRejected) only once Batch reports it
 * ended; its quota is held until then. Before, the refusal failed the job
 * at once and the Batch job ran on with no quota held for it.
 */
START_TEST(refused_retry_of_a_lost_create_waits_for_batch)
{
  char id[32], batch[64], st[48];
  long long end;
  int round;
  json_t *j;

  faults("{}");
  capacity("us-central1/FLEX_START=20,us-east4/FLEX_START=0,"
           "europe-west4/FLEX_START=0");
  /* the Batch job runs until cancelled */
  json_decref(h_call(&emu, "POST", "/emulator/config", NULL,
                     "{\"EMU_RUN_MS\": 600000}", 200));
  for (round = 0;; round++) {
    ck_assert_msg(round < 5, "the retry always came before the refusal");
    faults("{\"lost_response_rate\": 1, \"lost_response_mode\": \"503\", "
           "\"calls\": [\"create\"], \"max_faults\": 1}");
    submit("failover", false, "lost-then-refused", id);
    first_attempt(id, 0, batch);
    end = h_now_ms() + 30000;
    for (emu_state(batch, st, sizeof(st)); !strcmp(st, "-");
         emu_state(batch, st, sizeof(st))) {
      ck_assert_msg(h_now_ms() < end, "%s never created", batch);
      h_sleep_ms(10);
    }
    faults("{\"error_rate\": 1, \"codes\": [400], \"calls\": [\"create\"]}");
    /* the retry went out (backoff 0-500 ms) before the refusal was set:
     * that job is an ordinary one; try again with another */
    if (!later_create_taken(batch))
      break;
    fprintf(stderr,
            "it_cancel lost then refused: round %d, the retry of %s "
            "was taken; again\n",
            round, batch);
  }
  /* the job ends only once Batch reports its Batch job ended */
  end = h_now_ms() + 60000;
  for (;;) {
    j = get_job(id);
    emu_state(batch, st, sizeof(st));
    if (str_is(j, "state", "FAILED") || str_is(j, "state", "CANCELLED") ||
        str_is(j, "state", "SUCCEEDED"))
      break;
    ck_assert_msg(h_now_ms() < end, "job %s is %s; Batch job %s is %s", id,
                  h_str(j, "state"), batch, st);
    json_decref(j);
    h_sleep_ms(50);
  }
  fprintf(stderr,
          "it_cancel lost then refused: job %s %s (%s); Batch job %s "
          "%s\n",
          id, h_str(j, "state"), h_str(j, "reason"), batch, st);
  ck_assert_msg(!strcmp(st, "CANCELLED") || !strcmp(st, "-"),
                "job %s is %s while its Batch job %s is %s", id,
                h_str(j, "state"), batch, st);
  ck_assert_str_eq(h_str(j, "state"), "FAILED");
  ck_assert_str_eq(h_str(j, "reason"), "BatchRejected");
  json_decref(j);
  faults("{}");
  json_decref(h_call(&emu, "POST", "/emulator/config", NULL,
                     "{\"EMU_RUN_MS\": 1500}", 200));
}
END_TEST

static void emu_config(const char *body)
{
  json_decref(h_call(&emu, "POST", "/emulator/config", NULL, body, 200));
}

/* Batch reported it ended, or has no such job (CANCELLATION_IN_PROGRESS
 * may still run). */
static bool ended_at_batch(const char *state)
{
  return !strcmp(state, "CANCELLED") || !strcmp(state, "SUCCEEDED") ||
         !strcmp(state, "FAILED") || !strcmp(state, "-");
}

/* Batch job batch's creates (cancel false) or :cancel calls (true)
 * that Batch answered with status. */
static int calls_answered(const char *batch, bool cancel, long status)
{
  json_t *all = h_emu_get(&emu, "/emulator/requests"), *r;
  int n = 0;
  size_t i;

  json_array_foreach (json_object_get(all, "requests"), i, r) {
    const char *q = h_str(json_object_get(r, "query"), "job_id");
    const char *path = h_str(r, "path");
    bool is_cancel = path && strstr(path, batch) && strstr(path, ":cancel");
    bool is_create = str_is(r, "method", "POST") && q && !strcmp(q, batch);
    if ((cancel ? is_cancel : is_create) &&
        json_integer_value(json_object_get(r, "status")) == status)
      n++;
  }
  json_decref(all);
  return n;
}

/*
 * The race-copy branch of a lost create refused on its retry (issue 34,
 * the invariant): every copy of a raced job is made by its first create,
 * whose answer is lost (503 after the effect, and so is every retry's
 * while that lasts); then Batch refuses the creates (400). No copy has
 * capacity, and Batch acts on a cancel 3 s after accepting it. Each
 * refused copy may exist: its cancel (by its deterministic id) is queued,
 * and the job, holding its quota, does not end while any copy is live at
 * Batch; it fails (BatchRejected) once Batch reports every copy ended.
 * Had a refusal dropped its copy as never made, the job would have failed
 * at the last refusal beside three live Batch jobs.
 */
START_TEST(refused_retry_of_a_lost_copy_create_waits_for_batch)
{
  char id[32], b[4][64], st[4][48];
  long long end;
  int k, polls = 0, held = 0;
  json_t *j;

  faults("{}");
  capacity("us-central1/FLEX_START=0,us-east4/FLEX_START=0,"
           "europe-west4/FLEX_START=0");
  emu_config("{\"EMU_CANCEL_LAG_MS\": 3000}");
  faults("{\"lost_response_rate\": 1, \"lost_response_mode\": \"503\", "
         "\"calls\": [\"create\"]}");
  submit("race", false, "copies-lost-then-refused", id);
  end = h_now_ms() + 30000;
  for (k = 1; k <= 3; k++) {
    first_attempt(id, k, b[k]);
    for (emu_state(b[k], st[k], sizeof(st[k])); !strcmp(st[k], "-");
         emu_state(b[k], st[k], sizeof(st[k]))) {
      ck_assert_msg(h_now_ms() < end, "%s never created", b[k]);
      h_sleep_ms(10);
    }
  }
  /* every try so far made its copy or met it, and lost its answer */
  faults("{\"error_rate\": 1, \"codes\": [400], \"calls\": [\"create\"]}");

  end = h_now_ms() + 60000;
  for (;;) {
    bool any_live = false, any_refused = false;
    j = get_job(id);
    for (k = 1; k <= 3; k++) {
      emu_state(b[k], st[k], sizeof(st[k]));
      any_live |= !ended_at_batch(st[k]);
    }
    if (!str_is(j, "state", "ADMITTED") && !str_is(j, "state", "QUEUED"))
      break;
    /* a copy refused, a copy live at Batch: the job waits for them */
    for (k = 1; k <= 3; k++)
      any_refused |= calls_answered(b[k], false, 400) > 0;
    held += any_refused && any_live;
    ck_assert_msg(h_now_ms() < end, "job %s is %s; copies %s %s %s", id,
                  h_str(j, "state"), st[1], st[2], st[3]);
    json_decref(j);
    polls++;
    h_sleep_ms(50);
  }
  fprintf(stderr,
          "it_cancel copies lost then refused: job %s %s (%s) after %d "
          "polls (%d of them with a copy refused and one live); copies %s "
          "%s %s\n",
          id, h_str(j, "state"), h_str(j, "reason"), polls, held, st[1], st[2],
          st[3]);
  for (k = 1; k <= 3; k++) {
    ck_assert_msg(ended_at_batch(st[k]), "job %s is %s while its copy %s is %s",
                  id, h_str(j, "state"), b[k], st[k]);
    ck_assert_msg(calls_answered(b[k], false, 400) >= 1,
                  "the create of %s was never refused", b[k]);
    ck_assert_msg(calls_answered(b[k], true, 200) >= 1,
                  "copy %s was never cancelled", b[k]);
  }
  ck_assert_str_eq(h_str(j, "state"), "FAILED");
  ck_assert_str_eq(h_str(j, "reason"), "BatchRejected");
  json_decref(j);
  faults("{}");
  emu_config("{\"EMU_CANCEL_LAG_MS\": 0}");
}
END_TEST

/*
 * Flex Start backoff waits for the old attempt's end (issue 34): a job
 * waits past max_wait_s in us-central1, then in europe-west4 (no capacity
 * in either), and backs off. Batch accepts each cancel but acts on it
 * only 6 s later (EMU_CANCEL_LAG_MS): the Batch job of the attempt being
 * left stays QUEUED and may still get capacity. The job gives its quota
 * back (PENDING) only once Batch reports that Batch job ended, and the
 * next attempt's create reaches Batch only after the last one's end.
 * Before, the backoff made the job PENDING at once beside a live Batch
 * job.
 */
START_TEST(flex_backoff_waits_for_the_old_attempt)
{
  char id[32], a1[64], a2[64], s1[48], s2[48];
  long long end;
  json_t *j;
  int polls = 0;

  faults("{}");
  capacity("us-central1/FLEX_START=0,us-east4/FLEX_START=0,"
           "europe-west4/FLEX_START=0");
  emu_config("{\"EMU_CANCEL_LAG_MS\": 6000}");
  submit("failover", false, "backoff-waits", id);
  first_attempt(id, 0, a1);
  snprintf(a2, sizeof(a2), "gpugate-%s-a2", id);
  end = h_now_ms() + 90000;
  for (;;) {
    j = get_job(id);
    emu_state(a1, s1, sizeof(s1));
    emu_state(a2, s2, sizeof(s2));
    /* attempt 2 is created only once attempt 1 has ended */
    ck_assert_msg(!strcmp(s2, "-") || ended_at_batch(s1),
                  "attempt 2 (%s) created while attempt 1 is %s", s2, s1);
    if (str_is(j, "state", "PENDING") && attempt_of(j) >= 2)
      break;
    ck_assert_msg(h_now_ms() < end, "job %s is %s (attempt %lld)", id,
                  h_str(j, "state"), attempt_of(j));
    json_decref(j);
    polls++;
    h_sleep_ms(50);
  }
  fprintf(stderr,
          "it_cancel backoff: job %s PENDING (%s), attempt %lld after %d "
          "polls; Batch: %s %s, %s %s\n",
          id, h_str(j, "reason"), attempt_of(j), polls, a1, s1, a2, s2);
  ck_assert_msg(strcmp(s2, "-") != 0, "attempt 2 never reached Batch");
  ck_assert_msg(ended_at_batch(s1) && ended_at_batch(s2),
                "job %s backed off while its Batch jobs are %s and %s", id, s1,
                s2);
  ck_assert_str_eq(h_str(j, "reason"), "Backoff");
  json_decref(j);
  emu_config("{\"EMU_CANCEL_LAG_MS\": 0}");
}
END_TEST

/*
 * A raced job's quota is held until its losers have ended (issue 34): the
 * copy in us-central1 wins (capacity), the other two wait without
 * capacity and Batch acts on their cancels only 8 s after accepting them
 * (EMU_CANCEL_LAG_MS); the winner succeeds at once. The job ends
 * (SUCCEEDED, its quota given back) only once Batch reports every loser
 * ended. Before, the winner's end released the quota beside live losers.
 */
START_TEST(race_winner_end_waits_for_losers)
{
  char id[32], b[4][64], st[4][48];
  long long end;
  json_t *j;
  int k;

  faults("{}");
  capacity("us-central1/FLEX_START=20,us-east4/FLEX_START=0,"
           "europe-west4/FLEX_START=0");
  emu_config("{\"EMU_CANCEL_LAG_MS\": 8000, \"EMU_RUN_MS\": 300}");
  submit("race", false, "losers-live", id);
  for (k = 1; k <= 3; k++)
    first_attempt(id, k, b[k]);
  end = h_now_ms() + 60000;
  for (;;) {
    j = get_job(id);
    for (k = 1; k <= 3; k++)
      emu_state(b[k], st[k], sizeof(st[k]));
    if (str_is(j, "state", "SUCCEEDED") || str_is(j, "state", "FAILED") ||
        str_is(j, "state", "CANCELLED"))
      break;
    ck_assert_msg(h_now_ms() < end, "job %s is %s", id, h_str(j, "state"));
    json_decref(j);
    h_sleep_ms(50);
  }
  fprintf(stderr, "it_cancel race end: job %s %s; copies %s %s %s\n", id,
          h_str(j, "state"), st[1], st[2], st[3]);
  ck_assert_str_eq(h_str(j, "state"), "SUCCEEDED");
  for (k = 2; k <= 3; k++)
    ck_assert_msg(ended_at_batch(st[k]),
                  "job %s ended while its losing copy %s is %s", id, b[k],
                  st[k]);
  json_decref(j);
  emu_config("{\"EMU_CANCEL_LAG_MS\": 0, \"EMU_RUN_MS\": 1500}");
}
END_TEST

/*
 * A cancel after a race's winner SUCCEEDED (issue 34): the winner's run is
 * over, and the job stays RUNNING (its quota held) only until its losers
 * are reported ended. Batch refuses every cancel (503) while the losers
 * are held, so that window stays open as long as the test needs it. The
 * cancel is refused, 409 problem+json naming the state: its run already
 * succeeded, and the job ends SUCCEEDED once the losers are cancelled at
 * Batch. Before, the cancel was accepted (200) and the job then ended
 * SUCCEEDED all the same: an accepted cancel that did not win.
 */
START_TEST(cancel_after_the_winner_succeeded_is_refused)
{
  char id[32], b[4][64], st[4][48], path[160];
  struct h_resp r;
  const char *detail;
  long long end;
  json_t *j;
  int k;

  faults("{\"error_rate\": 1, \"codes\": [503], \"calls\": [\"cancel\"]}");
  capacity("us-central1/FLEX_START=20,us-east4/FLEX_START=0,"
           "europe-west4/FLEX_START=0");
  emu_config("{\"EMU_RUN_MS\": 300}");
  submit("race", false, "cancel-after-win", id);
  for (k = 1; k <= 3; k++)
    first_attempt(id, k, b[k]);
  /* the winner's SUCCEEDED recorded, the job held RUNNING by its losers */
  end = h_now_ms() + 30000;
  for (;;) {
    j = get_job(id);
    if (str_is(json_object_get(j, "batch_job"), "state", "SUCCEEDED"))
      break;
    ck_assert_msg(h_now_ms() < end, "job %s is %s, its Batch job %s", id,
                  h_str(j, "state"),
                  h_str(json_object_get(j, "batch_job"), "state"));
    json_decref(j);
    h_sleep_ms(50);
  }
  ck_assert_str_eq(h_str(j, "state"), "RUNNING");
  json_decref(j);

  snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%s/cancel", id);
  ck_assert_int_eq(h_request(&srv, "POST", path, tok, NULL, NULL, &r), 0);
  detail = h_str(r.json, "detail");
  fprintf(stderr, "it_cancel cancel after the win: %ld %s\n", r.status,
          detail ? detail : r.body);
  ck_assert_msg(h_is_problem(&r, 409, NULL),
                "the cancel of %s after its winner SUCCEEDED answered %ld: %s",
                id, r.status, r.body);
  ck_assert(str_is(r.json, "type", "https://gpugate.dev/problems/conflict"));
  ck_assert_msg(detail && strstr(detail, "SUCCEEDED"),
                "the detail names no state: %s", detail ? detail : "(none)");
  h_resp_free(&r);

  /* Batch takes the losers' cancels: the job ends as its run did */
  faults("{}");
  end = h_now_ms() + 60000;
  for (;;) {
    j = get_job(id);
    for (k = 1; k <= 3; k++)
      emu_state(b[k], st[k], sizeof(st[k]));
    if (!str_is(j, "state", "RUNNING"))
      break;
    ck_assert_msg(h_now_ms() < end, "job %s is %s", id, h_str(j, "state"));
    json_decref(j);
    h_sleep_ms(50);
  }
  fprintf(stderr,
          "it_cancel cancel after the win: job %s %s; copies %s %s %s\n", id,
          h_str(j, "state"), st[1], st[2], st[3]);
  ck_assert_str_eq(h_str(j, "state"), "SUCCEEDED");
  ck_assert_str_eq(st[1], "SUCCEEDED");
  for (k = 2; k <= 3; k++)
    ck_assert_msg(!strcmp(st[k], "CANCELLED"),
                  "job %s ended while its losing copy %s is %s", id, b[k],
                  st[k]);
  json_decref(j);
  emu_config("{\"EMU_RUN_MS\": 1500}");
}
END_TEST

/* ======================================================================
 * 2. End to end: a raced region that refuses the create for good
 * ==================================================================== */

/* Copy k of the race job id's first attempt: creates tried and made. */
static void copy_creates(const char *id, int k, int *tried, int *ok)
{
  char batch[64];

  first_attempt(id, k, batch);
  creates_of(batch, tried, ok);
}

START_TEST(race_refusal_drops_one_region)
{
  char id[32];
  int k, tried, ok;
  json_t *j;

  /* us-central1 (the first copy) refuses every create with a 400 */
  faults("{\"error_rate\": 1, \"codes\": [400], \"methods\": [\"POST\"], "
         "\"regions\": [\"us-central1\"]}");
  capacity("us-central1/FLEX_START=20,us-east4/FLEX_START=0,"
           "europe-west4/FLEX_START=20");
  submit("race", false, "one-refused", id);
  j = wait_state(id, "SUCCEEDED", 20000);
  ck_assert_str_eq(h_str(json_object_get(j, "admission"), "location"),
                   "europe-west4");
  ck_assert_int_eq(attempt_of(j), 1);
  json_decref(j);
  copy_creates(id, 1, &tried, &ok);
  ck_assert_msg(tried >= 1 && ok == 0, "us-central1: %d tried, %d made", tried,
                ok);
  copy_creates(id, 2, &tried, &ok);
  ck_assert_msg(ok == 1, "us-east4: %d tried, %d made", tried, ok);
  copy_creates(id, 3, &tried, &ok);
  ck_assert_msg(ok == 1, "europe-west4: %d tried, %d made", tried, ok);

  /* every region refuses: the job fails once the last one has */
  faults("{\"error_rate\": 1, \"codes\": [400], \"methods\": [\"POST\"]}");
  submit("race", false, "all-refused", id);
  j = wait_state(id, "FAILED", 20000);
  ck_assert_str_eq(h_str(j, "reason"), "BatchRejected");
  json_decref(j);
  for (k = 1; k <= 3; k++) {
    copy_creates(id, k, &tried, &ok);
    ck_assert_msg(tried == 1 && ok == 0, "copy %d: %d tried, %d made", k, tried,
                  ok);
  }
  faults("{}");
}
END_TEST

/* ======================================================================
 * 3. PostgreSQL: what the leader, the dispatcher and the sync call
 * ==================================================================== */

#define N_WALK 5     /* random walks, one after the other */
#define WALK_JOBS 10 /* jobs each walk submits first */
#define MAX_JOBS 40  /* and at most this many with the arrivals */
#define STEPS 1000
#define LEADER_LOCK "7301002" /* control/loop.c LEADER_LOCK */

static PGconn *leader_lock; /* held: gpugate serves the API only */

static struct db_conn *conn_open(void)
{
  struct db_conn *c = calloc(1, sizeof(*c));

  ck_assert_ptr_nonnull(c);
  c->pg = h_db_connect(db_url);
  ck_assert(PQstatus(c->pg) == CONNECTION_OK);
  return c;
}

static void conn_close(struct db_conn *c)
{
  PQfinish(c->pg);
  free(c);
}

/* Run sql (no parameters); fails the test on error. */
/* sql with its values as $n parameters (n of them; none: a plain exec) */
static void exec_params(struct db_conn *c, const char *sql, int n,
                        const char *const *params)
{
  PGresult *res = PQexecParams(c->pg, sql, n, NULL, params, NULL, NULL, 0);

  ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK ||
                    PQresultStatus(res) == PGRES_TUPLES_OK,
                "%s: %s", sql, PQresultErrorMessage(res));
  PQclear(res);
}

static void exec_ok(struct db_conn *c, const char *sql)
{
  exec_params(c, sql, 0, NULL);
}

/* One column of the job as text (the column named as a parameter: the
 * row's JSON key); out gets it. */
static void job_field(struct db_conn *c, const char *id, const char *col,
                      char *out, size_t len)
{
  const char *params[2] = {id, col};
  PGresult *res;

  res =
      PQexecParams(c->pg, "SELECT to_jsonb(j) ->> $2 FROM jobs j WHERE id = $1",
                   2, NULL, params, NULL, NULL, 0);
  ck_assert_msg(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
                    !PQgetisnull(res, 0, 0),
                "%s of %s: %s", col, id, PQresultErrorMessage(res));
  snprintf(out, len, "%s", PQgetvalue(res, 0, 0));
  PQclear(res);
}

static int job_attempt(struct db_conn *c, const char *id)
{
  char v[16];

  job_field(c, id, "attempt", v, sizeof(v));
  return (int)strtol(v, NULL, 10);
}

static bool terminal(const char *state)
{
  return !strcmp(state, "SUCCEEDED") || !strcmp(state, "FAILED") ||
         !strcmp(state, "CANCELLED");
}

/*
 * The configuration of cancel.json with scarce quota (4 jobs of 2 GPUs per
 * cluster queue, so jobs wait and are preempted), a high priority class
 * that preempts, and a RESERVATION flavor whose capacity window opened
 * yesterday for 20 days; each walk n has its own copy of the queues
 * ("race-<n>"), so that what one walk leaves holds no quota of another's.
 * Written to a temp file (path).
 */
static void scarce_config(char *path, size_t len)
{
  json_error_t jerr;
  json_t *cfg = json_load_file("tests/fixtures/cancel.json", 0, &jerr), *cq;
  time_t now = time(NULL), from = now - 86400, until = now + 20 * 86400;
  char f[32], u[32], *text;
  const char *name;
  struct tm tm;

  ck_assert_msg(cfg != NULL, "cancel.json: %s", jerr.text);
  strftime(f, sizeof(f), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&from, &tm));
  strftime(u, sizeof(u), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&until, &tm));
  json_object_set_new(json_object_get(cfg, "priority_classes"), "high",
                      json_pack("{s:i, s:s, s:b}", "value", 20,
                                "preemption_policy", "PreemptLowerPriority",
                                "default", 0));
  json_object_set_new(
      json_object_get(cfg, "flavors"), "resv-window",
      json_pack("{s:s, s:s, s:s, s:i, s:[s], s:s, s:f, s:s, s:s}",
                "provisioning_model", "RESERVATION", "machine_type",
                "g2-standard-24", "accelerator_type", "nvidia-l4",
                "gpus_per_vm", 2, "locations", "us-central1", "reservation",
                "l4-reservation", "price_per_gpu_hour_usd", 0.71,
                "available_from", f, "available_until", u));
  json_object_set_new(json_object_get(cfg, "cluster_queues"), "cq-resv",
                      json_pack("{s:[{s:s, s:{s:{s:i}, s:{s:i}, s:{s:i}}}]}",
                                "flavors", "name", "resv-window", "resources",
                                "gpu", "nominal", 8, "cpu_milli", "nominal",
                                400000, "memory_mib", "nominal", 4096000));
  json_object_foreach (json_object_get(cfg, "cluster_queues"), name, cq) {
    json_t *res = json_object_get(
        json_array_get(json_object_get(cq, "flavors"), 0), "resources");
    json_object_set_new(json_object_get(res, "gpu"), "nominal",
                        json_integer(8));
    json_object_set_new(cq, "preemption",
                        json_pack("{s:s, s:s}", "within_cluster_queue",
                                  "LowerPriority", "reclaim_within_cohort",
                                  "Never"));
  }
  json_object_set_new(
      json_object_get(json_object_get(cfg, "team_queues"), "team-x"), "resv",
      json_pack("{s:s}", "cluster_queue", "cq-resv"));
  {
    json_t *cqs = json_object_get(cfg, "cluster_queues"),
           *tq = json_object_get(json_object_get(cfg, "team_queues"), "team-x"),
           *copies = json_object(), *queues = json_object(), *v;
    char key[64], q[64];
    int n;
    json_object_foreach (tq, name, v) {
      const char *cq_name = h_str(v, "cluster_queue");
      for (n = 0; n <= N_WALK; n++) { /* and one for the scripts */
        snprintf(key, sizeof(key), "%s-%d", cq_name, n);
        json_object_set_new(copies, key,
                            json_deep_copy(json_object_get(cqs, cq_name)));
        snprintf(q, sizeof(q), "%s-%d", name, n);
        json_object_set_new(queues, q,
                            json_pack("{s:s}", "cluster_queue", key));
      }
    }
    json_object_update(cqs, copies);
    json_object_update(tq, queues);
    json_decref(copies);
    json_decref(queues);
  }
  text = json_dumps(cfg, JSON_INDENT(1));
  ck_assert_ptr_nonnull(text);
  h_write_temp("cancel-config", text, path, len);
  free(text);
  json_decref(cfg);
}

/*
 * gpugate as an API server only: no Batch backend, and the test holds the
 * admission leader's lock. The test is the leader (admission_cycle()),
 * the dispatcher, the sync and Batch.
 */
static void setup_db(const char *db)
{
  char cfg_path[128];
  const char *env[] = {"GPUGATE_RATE_LIMIT_RPS=100000", NULL};
  PGresult *res;

  log_set_level(LOG_WARN); /* the leader's cycles run in this process */
  scarce_config(cfg_path, sizeof(cfg_path));
  h_db_apply(db, cfg_path, db_url, sizeof(db_url));
  unlink(cfg_path);
  leader_lock = h_db_connect(db_url);
  res = PQexec(leader_lock, "SELECT pg_advisory_lock(" LEADER_LOCK ")");
  ck_assert(PQresultStatus(res) == PGRES_TUPLES_OK);
  PQclear(res);
  ck_assert_msg(h_server_start(&srv, db_url, env) == 0,
                "gpugate did not start; see %s", srv.log);
  tok = h_token("team-x", "member", 3600);
}

static void setup_stale(void)
{
  setup_db("it_cancel_stale");
}

static void setup_walk(void)
{
  setup_db("it_cancel_walk");
}

static void teardown_db(void)
{
  teardown();
  PQfinish(leader_lock);
  leader_lock = NULL;
}

/* Admission cycles of the leader (its window step included) until it has
 * nothing more to write at once. */
static void leader_cycle(struct admission *a, struct db_conn *c)
{
  struct admission_result r;
  char err[256];
  int rc, n = 0;

  do {
    rc = admission_cycle(a, c, &r, err, sizeof(err));
    ck_assert_msg(rc >= 0, "admission: %s", err);
  } while (rc == 1 && ++n < 5);
}

/* --- 3a. a report about attempt N-1 does not move attempt N ----------- */

struct observe_arg {
  struct db_conn *c;
  const char *name, *state;
  int rc;
  char err[256];
};

static void *observe_thread(void *p)
{
  struct observe_arg *a = p;

  a->rc = db_batch_observe(a->c, a->name, a->state, a->err, sizeof(a->err));
  return NULL;
}

/* Wait until the session of c2 waits on a lock. */
static void wait_blocked(struct db_conn *c, struct db_conn *c2)
{
  long long end = h_now_ms() + 10000;
  char q[160];

  snprintf(q, sizeof(q),
           "SELECT count(*) FROM pg_stat_activity WHERE pid = %d "
           "AND wait_event_type = 'Lock'",
           PQbackendPID(c2->pg));
  while (h_db_int(c->pg, q) != 1) {
    ck_assert_msg(h_now_ms() < end, "the report never waited on the job");
    h_sleep_ms(10);
  }
}

START_TEST(stale_report_does_not_move_the_next_attempt)
{
  struct db_conn *c = conn_open(), *c2 = conn_open();
  struct admission *adm = admission_new(true, 600);
  struct db_batch_op op;
  struct observe_arg a;
  char err[256], a1[256], a2[256], st[32], id[32];
  pthread_t t;
  int rc;

  /* attempt 1 is admitted, created in us-central1 and waits there */
  submit("failover", false, "stale", id);
  leader_cycle(adm, c);
  admission_free(adm);
  rc = db_batch_claim(c, NULL, 0, "stale", 60, &op, err, sizeof(err));
  ck_assert_msg(rc == 1, "no create to claim: %s", err);
  ck_assert_str_eq(op.job_id, id);
  batch_job_name(PROJECT, op.region, op.batch_job_id, a1, sizeof(a1));
  ck_assert_int_eq(db_batch_done_create(c, &op, a1, err, sizeof(err)), 0);
  db_batch_op_free(&op);
  job_field(c, id, "state", st, sizeof(st));
  ck_assert_str_eq(st, "QUEUED");

  /* Batch's report that attempt 1 failed is decided while the job moves
   * on (its row locked) to attempt 2, waiting in europe-west4 in the same
   * state, as a Flex Start failover and the create of a2 leave it */
  exec_ok(c, "BEGIN");
  exec_params(c, "SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE", 1,
              (const char *const[]){id});
  a = (struct observe_arg){c2, a1, "FAILED", 0, ""};
  ck_assert_int_eq(pthread_create(&t, NULL, observe_thread, &a), 0);
  wait_blocked(c, c2);
  snprintf(a2, sizeof(a2),
           "projects/" PROJECT "/locations/europe-west4/jobs/gpugate-%s-a2",
           id);
  exec_params(c,
              "UPDATE jobs SET attempt = 2, location = 'europe-west4', "
              "location_index = 1, batch_job_name = $1, batch_state = "
              "'QUEUED', queued_at = now() WHERE id = $2",
              2, (const char *const[]){a2, id});
  exec_ok(c, "COMMIT");
  pthread_join(t, NULL);
  ck_assert_msg(a.rc >= 0, "observe: %s", a.err);

  job_field(c, id, "state", st, sizeof(st));
  ck_assert_msg(!strcmp(st, "QUEUED"),
                "a report about attempt 1 moved attempt 2 to %s", st);
  ck_assert_int_eq(job_attempt(c, id), 2);
  ck_assert_int_eq(a.rc, 0);
  /* done with the job: left QUEUED, it would pass its max_wait_s (2 s)
   * during a later case on a slow host, and that case's flex_expired
   * would fail it over, with a create in the outbox for the next claims */
  exec_params(c, "DELETE FROM batch_ops WHERE job_id = $1", 1,
              (const char *const[]){id});
  exec_params(c,
              "UPDATE jobs SET state = 'CANCELLED', finished_at = now() "
              "WHERE id = $1",
              1, (const char *const[]){id});
  conn_close(c);
  conn_close(c2);
}
END_TEST

/* --- 3a''. a redelivered report does not move batch_state back -------- */

/*
 * Pub/Sub redelivers a message it did not see acknowledged, after later
 * ones: QUEUED arrives again once the Flex Start job is SCHEDULED (it has
 * its capacity). Batch's state must not go back to QUEUED, or the job,
 * past max_wait_s, fails over to its next location though it is about to
 * run. Before: batch_state went back, and the failover moved the job.
 */
START_TEST(redelivered_report_does_not_move_back)
{
  struct db_conn *c = conn_open();
  struct admission *adm = admission_new(true, 600);
  struct db_batch_op op;
  char err[256], name[256], st[32], bst[32], id[32];
  int rc, moved;

  submit("failover", false, "redelivered", id);
  leader_cycle(adm, c);
  admission_free(adm);
  rc = db_batch_claim(c, NULL, 0, "redelivered", 60, &op, err, sizeof(err));
  ck_assert_msg(rc == 1, "no create to claim: %s", err);
  ck_assert_str_eq(op.job_id, id);
  batch_job_name(PROJECT, op.region, op.batch_job_id, name, sizeof(name));
  ck_assert_int_eq(db_batch_done_create(c, &op, name, err, sizeof(err)), 0);
  db_batch_op_free(&op);
  ck_assert_int_ge(db_batch_observe(c, name, "SCHEDULED", err, sizeof(err)), 0);
  /* the first QUEUED, redelivered */
  ck_assert_int_ge(db_batch_observe(c, name, "QUEUED", err, sizeof(err)), 0);
  job_field(c, id, "batch_state", bst, sizeof(bst));
  /* past max_wait_s (2 s) */
  exec_params(c,
              "UPDATE jobs SET queued_at = now() - interval '1 hour' "
              "WHERE id = $1",
              1, (const char *const[]){id});
  moved = db_batch_flex_expired(c, err, sizeof(err));
  ck_assert_msg(moved >= 0, "flex_expired: %s", err);
  job_field(c, id, "state", st, sizeof(st));
  fprintf(stderr,
          "it_cancel redelivered QUEUED after SCHEDULED: batch_state %s, "
          "%d moved, the job %s attempt %d\n",
          bst, moved, st, job_attempt(c, id));
  ck_assert_str_eq(bst, "SCHEDULED");
  ck_assert_int_eq(job_attempt(c, id), 1);
  ck_assert_str_eq(st, "QUEUED");
  exec_params(c, "DELETE FROM batch_ops WHERE job_id = $1", 1,
              (const char *const[]){id});
  exec_params(c,
              "UPDATE jobs SET state = 'CANCELLED', finished_at = now() "
              "WHERE id = $1",
              1, (const char *const[]){id});
  conn_close(c);
}
END_TEST

/* --- 3a'. a cancel reads the job under its lock (issue 34, defect 3) --- */

struct cancel_arg {
  struct db_pool *pool;
  const char *id;
  enum gg_code code;
  volatile bool done;
};

static void *cancel_thread(void *p)
{
  struct cancel_arg *a = p;
  struct db_conn *db = db_acquire(a->pool, 5000);
  struct gg_err err;
  json_t *out = NULL;

  err_init(&err);
  a->code = db_job_cancel(db, &err, db_pool_batch(a->pool), NULL, "team-x",
                          a->id, &out);
  a->done = true;
  json_decref(out);
  err_clear(&err);
  db_release(a->pool, db);
  return NULL;
}

/* The user's cancel (a) while c's open transaction holds the job's row:
 * it runs once the cancel waits on that lock (seen from look, another
 * session: c's transaction sees one snapshot of the statistics views),
 * then c commits and the cancel ends. */
static void cancel_behind(struct db_conn *c, struct db_conn *look,
                          struct cancel_arg *a)
{
  char q[256];
  long long end = h_now_ms() + 10000;
  pthread_t t;

  ck_assert_int_eq(pthread_create(&t, NULL, cancel_thread, a), 0);
  snprintf(q, sizeof(q),
           "SELECT count(*) FROM pg_stat_activity WHERE pid <> %d "
           "AND wait_event_type = 'Lock' AND datname = current_database()",
           PQbackendPID(c->pg));
  while (h_db_int(look->pg, q) < 1) {
    ck_assert_msg(h_now_ms() < end && !a->done,
                  "the cancel never waited on the job (%s: %d)",
                  a->done ? "done" : "running", (int)a->code);
    h_sleep_ms(10);
  }
  exec_ok(c, "COMMIT");
  pthread_join(t, NULL);
}

/*
 * The user's cancel reads a PENDING job while an admission of it is under
 * way (its transaction holds the job row, its create written): the cancel
 * waits for the job's lock, and once the admission commits it must not
 * leave that create in the outbox, where a dispatcher would send it after
 * the cancel was accepted. Before: the cancel had read the attempt without
 * a lock and withdrawn nothing, and the create stayed.
 */
START_TEST(cancel_reads_the_job_under_its_lock)
{
  struct db_conn *c = conn_open(), *look = conn_open();
  struct db_pool *pool = db_pool_new(db_url, 2);
  struct cancel_arg a;
  char id[32], q[256], st[32];
  long long creates;

  ck_assert_ptr_nonnull(pool);
  db_pool_set_batch(pool, true);
  submit("failover", false, "locked", id);
  /* the admission, as db_sched_apply writes it, not yet committed */
  exec_ok(c, "BEGIN");
  exec_params(c,
              "UPDATE jobs SET state = 'ADMITTED', flavor = 'flex-failover', "
              "location = 'us-central1', admitted_at = now() WHERE id = $1",
              1, (const char *const[]){id});
  exec_params(c,
              "INSERT INTO batch_ops (job_id, attempt, op, region, "
              "batch_job_id) VALUES ($1, 1, 'create', 'us-central1', "
              "'gpugate-' || $1 || '-a1')",
              1, (const char *const[]){id});
  a = (struct cancel_arg){pool, id, GG_OK, false};
  cancel_behind(c, look, &a);
  ck_assert_int_eq(a.code, GG_OK);
  snprintf(q, sizeof(q),
           "SELECT count(*) FROM batch_ops WHERE job_id = '%s' "
           "AND op = 'create'",
           id);
  creates = h_db_int(c->pg, q);
  job_field(c, id, "state", st, sizeof(st));
  fprintf(stderr,
          "it_cancel cancel under lock: the job is %s, %lld create(s) left "
          "in the outbox\n",
          st, creates);
  ck_assert_msg(creates == 0,
                "%lld create(s) of %s left in the outbox after its cancel",
                creates, id);
  ck_assert_str_eq(st, "CANCELLED");
  /* the cancel queued behind a withdrawn create (404 at Batch) is not
   * the next cases' */
  exec_params(c, "DELETE FROM batch_ops WHERE job_id = $1", 1,
              (const char *const[]){id});
  db_pool_free(pool);
  conn_close(look);
  conn_close(c);
}
END_TEST

/*
 * A cancel decides on a race's succeeded run under the job's row lock
 * (issue 34): a raced job RUNNING on its winner, two losers not yet
 * reported ended. The report that records the winner's SUCCEEDED holds
 * the job's row when the cancel comes; the cancel waits for it, and once
 * it commits the cancel is refused (GG_CONFLICT, 409 at the API): the
 * job is not cancel-requested and no cancel is queued. The losers' ends
 * then end the job SUCCEEDED (batch_report.c, end_after_losers). Before,
 * the cancel was accepted and the job ended SUCCEEDED all the same.
 */
START_TEST(cancel_sees_the_succeeded_run_under_its_lock)
{
  struct db_conn *c = conn_open(), *look = conn_open();
  struct db_pool *pool = db_pool_new(db_url, 2);
  struct cancel_arg a;
  char id[32], q[256], st[32], copy[64], name[4][256];
  int k;

  ck_assert_ptr_nonnull(pool);
  db_pool_set_batch(pool, true);
  submit("race", false, "won-and-done", id);
  for (k = 1; k <= 3; k++) {
    const char *region = k == 1   ? "us-central1"
                         : k == 2 ? "us-east4"
                                  : "europe-west4";
    char kk[8];
    snprintf(copy, sizeof(copy), "gpugate-%s-a1-r%d", id, k);
    snprintf(kk, sizeof(kk), "%d", k);
    batch_job_name(PROJECT, region, copy, name[k], sizeof(name[k]));
    exec_params(c,
                "INSERT INTO batch_copies (job_id, attempt, k, region, "
                "batch_job_id) VALUES ($1, 1, $2::int, $3, $4)",
                4, (const char *const[]){id, kk, region, copy});
  }
  /* the copy in us-central1 won and runs; the losers' cancels went out */
  exec_params(c,
              "UPDATE jobs SET state = 'RUNNING', flavor = 'flex-race', "
              "location = 'us-central1', admitted_at = now(), "
              "queued_at = now(), run_started_at = now(), "
              "batch_job_name = $2, batch_state = 'RUNNING' WHERE id = $1",
              2, (const char *const[]){id, name[1]});

  /* the winner's SUCCEEDED is being recorded (sql_observe_note's write)
   * when the cancel comes */
  exec_ok(c, "BEGIN");
  exec_params(c,
              "UPDATE jobs SET batch_state = 'SUCCEEDED' WHERE id = $1 "
              "AND batch_job_name = $2",
              2, (const char *const[]){id, name[1]});
  a = (struct cancel_arg){pool, id, GG_OK, false};
  cancel_behind(c, look, &a);
  /* an accepted cancel's rows are not the next cases' */
  exec_params(c, "DELETE FROM batch_ops WHERE job_id = $1", 1,
              (const char *const[]){id});
  job_field(c, id, "state", st, sizeof(st));
  snprintf(q, sizeof(q),
           "SELECT count(*) FROM jobs WHERE id = '%s' AND cancel_requested",
           id);
  fprintf(stderr,
          "it_cancel succeeded run under lock: cancel %s (code %d); the job "
          "%s, cancel_requested %lld\n",
          a.code == GG_OK ? "accepted" : "refused", (int)a.code, st,
          h_db_int(c->pg, q));
  ck_assert_msg(a.code == GG_CONFLICT,
                "the cancel of %s after its winner SUCCEEDED: code %d, not "
                "GG_CONFLICT",
                id, (int)a.code);
  ck_assert_int_eq(h_db_int(c->pg, q), 0);
  ck_assert_str_eq(st, "RUNNING");

  /* the losers end: the job ends as its run did */
  for (k = 2; k <= 3; k++)
    ck_assert_msg(db_batch_observe(c, name[k], "CANCELLED", q, sizeof(q)) >= 0,
                  "observe %s: %s", name[k], q);
  job_field(c, id, "state", st, sizeof(st));
  ck_assert_str_eq(st, "SUCCEEDED");
  db_pool_free(pool);
  conn_close(look);
  conn_close(c);
}
END_TEST

/* --- 3c. a 404 to a user's cancel: no BatchJobCreated ------------------ */

/*
 * A user cancels an ADMITTED job whose create is at Batch (under a lease):
 * the cancel is queued behind it. The create never made the Batch job,
 * and the cancel is answered 404: the job is CANCELLED with no
 * BatchJobCreated event for a Batch job that never existed. Before (issue
 * 34, defect 6): the 404 adopted the name as a create's answer would,
 * ADMITTED -> QUEUED BatchJobCreated, then CANCELLED.
 */
START_TEST(cancel_404_writes_no_created_event)
{
  struct db_conn *c = conn_open();
  struct admission *adm = admission_new(true, 600);
  struct db_pool *pool = db_pool_new(db_url, 2);
  struct cancel_arg a;
  struct db_batch_op op;
  char err[256], name[256], st[32], id[32], q[256];
  long long created;
  int rc;

  ck_assert_ptr_nonnull(pool);
  db_pool_set_batch(pool, true);
  submit("failover", false, "never-made", id);
  leader_cycle(adm, c);
  admission_free(adm);
  rc = db_batch_claim(c, NULL, 0, "never-made", 60, &op, err, sizeof(err));
  ck_assert_msg(rc == 1, "no create to claim: %s", err);
  ck_assert_str_eq(op.job_id, id);
  batch_job_name(PROJECT, op.region, op.batch_job_id, name, sizeof(name));
  a = (struct cancel_arg){pool, id, GG_OK, false};
  cancel_thread(&a);
  ck_assert_int_eq(a.code, GG_OK);
  /* the dispatcher: the create failed (nothing made), the cancel 404 */
  ck_assert_int_eq(db_batch_retry(c, &op, 0, "lost", err, sizeof(err)), 0);
  db_batch_op_free(&op);
  ck_assert_int_ge(db_batch_observe(c, name, "NOT_FOUND", err, sizeof(err)), 0);
  job_field(c, id, "state", st, sizeof(st));
  snprintf(q, sizeof(q),
           "SELECT count(*) FROM job_events WHERE job_id = '%s' "
           "AND reason = 'BatchJobCreated'",
           id);
  created = h_db_int(c->pg, q);
  fprintf(stderr,
          "it_cancel cancel answered 404: the job %s, %lld BatchJobCreated "
          "event(s)\n",
          st, created);
  ck_assert_str_eq(st, "CANCELLED");
  ck_assert_msg(created == 0,
                "%lld BatchJobCreated event(s) for a Batch job that never "
                "existed",
                created);
  exec_params(c, "DELETE FROM batch_ops WHERE job_id = $1", 1,
              (const char *const[]){id});
  db_pool_free(pool);
  conn_close(c);
}
END_TEST

/*
 * A create taken over after its dispatcher's lease ran out, then refused
 * (issue 34, the invariant): the dead dispatcher's call may have made the
 * Batch job, so the refusal does not fail the job. It keeps its state
 * (and its quota), the deterministic Batch job is cancelled, and the job
 * fails (BatchRejected) only once Batch reports that Batch job absent.
 * Before, the refusal failed the job at once.
 */
START_TEST(refused_takeover_of_a_lapsed_create_waits_for_batch)
{
  struct db_conn *c = conn_open();
  struct admission *adm = admission_new(true, 600);
  struct db_batch_op op;
  char err[256], name[256], st[32], reason[64], id[32], q[256];
  long long cancels;
  int rc;

  submit("failover", false, "lapsed-refused", id);
  leader_cycle(adm, c);
  admission_free(adm);
  /* a dispatcher claims the create, calls Batch and dies */
  rc = db_batch_claim(c, NULL, 0, "dead-dispatcher", 60, &op, err, sizeof(err));
  ck_assert_msg(rc == 1, "no create to claim: %s", err);
  ck_assert_str_eq(op.job_id, id);
  db_batch_op_free(&op);
  exec_params(c,
              "UPDATE batch_ops SET claimed_until = now() - interval "
              "'1 second' WHERE job_id = $1",
              1, (const char *const[]){id});
  /* another takes it over; Batch refuses this try */
  rc = db_batch_claim(c, NULL, 0, "live-dispatcher", 60, &op, err, sizeof(err));
  ck_assert_msg(rc == 1, "the lapsed create was not taken over: %s", err);
  ck_assert_str_eq(op.op, "create");
  batch_job_name(PROJECT, op.region, op.batch_job_id, name, sizeof(name));
  ck_assert_int_eq(
      db_batch_give_up(c, &op, "400 INVALID_ARGUMENT", err, sizeof(err)), 0);
  db_batch_op_free(&op);
  job_field(c, id, "state", st, sizeof(st));
  snprintf(q, sizeof(q),
           "SELECT count(*) FROM batch_ops WHERE job_id = '%s' "
           "AND op = 'cancel' AND batch_job_id = 'gpugate-%s-a1'",
           id, id);
  cancels = h_db_int(c->pg, q);
  fprintf(stderr,
          "it_cancel lapsed create refused: the job %s, %lld cancel(s) of "
          "its Batch job queued\n",
          st, cancels);
  ck_assert_msg(!strcmp(st, "ADMITTED") && cancels == 1,
                "refused after a lapsed lease: the job %s, %lld cancel(s) of "
                "the Batch job the dead dispatcher may have made",
                st, cancels);
  /* Batch answers the cancel 404: nothing was made */
  ck_assert_int_ge(db_batch_observe(c, name, "NOT_FOUND", err, sizeof(err)), 0);
  job_field(c, id, "state", st, sizeof(st));
  job_field(c, id, "reason", reason, sizeof(reason));
  ck_assert_str_eq(st, "FAILED");
  ck_assert_str_eq(reason, "BatchRejected");
  exec_params(c, "DELETE FROM batch_ops WHERE job_id = $1", 1,
              (const char *const[]){id});
  conn_close(c);
}
END_TEST

/* --- 3b. the random walk: cancels against every automatic move -------- */

/* Batch as the walk knows it: each Batch job ever created. */
struct bjob {
  char name[256];
  int job; /* index into the walk's jobs */
  char state[24];
};

struct walk {
  struct db_conn *c;
  struct db_pool *pool;
  struct admission *adm;
  struct rng rng;
  int n; /* which walk */
  char ids[MAX_JOBS][32];
  int n_jobs;
  bool cancelled[MAX_JOBS];
  bool refused[MAX_JOBS]; /* a cancel answered 409: its run succeeded */
  int cancel_attempt[MAX_JOBS];
  struct bjob b[MAX_JOBS * 24];
  int nb;
  char err[256];
};

static int walk_job(const struct walk *w, const char *id)
{
  int i;

  for (i = 0; i < w->n_jobs; i++)
    if (!strcmp(w->ids[i], id))
      return i;
  return -1;
}

static struct bjob *bjob_of(struct walk *w, const char *name)
{
  int i;

  for (i = 0; i < w->nb; i++)
    if (!strcmp(w->b[i].name, name))
      return &w->b[i];
  return NULL;
}

/* Batch creates name for job j (once: a repeated create is
 * ALREADY_EXISTS). */
static void batch_creates(struct walk *w, const char *name, int j)
{
  struct bjob *b;

  if (bjob_of(w, name))
    return;
  ck_assert_int_lt(w->nb, (int)(sizeof(w->b) / sizeof(w->b[0])));
  b = &w->b[w->nb++];
  snprintf(b->name, sizeof(b->name), "%s", name);
  b->job = j;
  snprintf(b->state, sizeof(b->state), "QUEUED");
}

static bool live(const char *state)
{
  return !strcmp(state, "QUEUED") || !strcmp(state, "RUNNING");
}

/* Batch reports a Batch job's state (the sync or a push). */
static void report(struct walk *w, struct bjob *b)
{
  ck_assert_msg(
      db_batch_observe(w->c, b->name, b->state, w->err, sizeof(w->err)) >= 0,
      "observe %s %s: %s", b->name, b->state, w->err);
}

/*
 * One call of a dispatcher: claim an outbox row and give it an outcome as
 * Batch would (all_ok: every call succeeds, for the drain). Returns
 * whether a row was claimed.
 */
static bool dispatch_one(struct walk *w, bool all_ok)
{
  struct db_batch_op op;
  char name[256];
  int rc, j, roll = below(&w->rng, 100);
  struct bjob *b;

  rc = db_batch_claim(w->c, NULL, 0, "walk", 60, &op, w->err, sizeof(w->err));
  ck_assert_msg(rc >= 0, "claim: %s", w->err);
  if (rc == 0)
    return false;
  j = walk_job(w, op.job_id);
  if (j < 0) {
    /* an earlier walk's (one that failed): out of this one's way */
    ck_assert_int_eq(db_batch_retry(w->c, &op, 86400000L, "another walk's",
                                    w->err, sizeof(w->err)),
                     0);
    db_batch_op_free(&op);
    return true;
  }
  batch_job_name(PROJECT, op.region, op.batch_job_id, name, sizeof(name));
  if (!strcmp(op.op, "create")) {
    ck_assert_msg(!w->cancelled[j] || op.attempt <= w->cancel_attempt[j],
                  "job %s: a create of attempt %d after its cancel at "
                  "attempt %d",
                  op.job_id, op.attempt, w->cancel_attempt[j]);
    if (!all_ok && roll < 20) {
      rc = db_batch_retry(w->c, &op, 0, "HTTP 503", w->err, sizeof(w->err));
    } else if (!all_ok && roll < 26) {
      rc = db_batch_give_up(w->c, &op, "HTTP 400", w->err, sizeof(w->err));
    } else {
      batch_creates(w, name, j);
      rc = db_batch_done_create(w->c, &op, name, w->err, sizeof(w->err));
    }
  } else {
    b = bjob_of(w, name);
    if (!all_ok && roll < 50) {
      /* Batch errors keep a cancel pending a while */
      rc = db_batch_retry(w->c, &op, 0, "HTTP 503", w->err, sizeof(w->err));
    } else if (!b) {
      /* 404: as the dispatcher, done and reported NOT_FOUND */
      rc =
          db_batch_done_cancel(w->c, &op, true, w->err, sizeof(w->err)) ||
          db_batch_observe(w->c, name, "NOT_FOUND", w->err, sizeof(w->err)) < 0;
    } else if (live(b->state)) {
      snprintf(b->state, sizeof(b->state), "CANCELLED");
      rc = db_batch_done_cancel(w->c, &op, false, w->err, sizeof(w->err));
    } else {
      /* already over: the dispatcher reads and reports its state */
      rc = db_batch_done_cancel(w->c, &op, false, w->err, sizeof(w->err));
      if (!rc)
        report(w, b);
    }
  }
  ck_assert_msg(rc == 0, "%s of %s: %s", op.op, op.job_id, w->err);
  db_batch_op_free(&op);
  return true;
}

/*
 * A dispatcher dies during its call: the row stays claimed until its lease
 * runs out (leases_run_out()). A create may have reached Batch (its
 * response lost); the next claim's call then counts Batch's
 * ALREADY_EXISTS as success.
 */
static void dispatcher_dies(struct walk *w)
{
  struct db_batch_op op;
  char name[256];
  int rc, j;

  rc = db_batch_claim(w->c, NULL, 0, "walk-dead", 60, &op, w->err,
                      sizeof(w->err));
  ck_assert_msg(rc >= 0, "claim: %s", w->err);
  if (rc == 0)
    return;
  j = walk_job(w, op.job_id);
  if (j >= 0 && !strcmp(op.op, "create") && below(&w->rng, 2)) {
    batch_job_name(PROJECT, op.region, op.batch_job_id, name, sizeof(name));
    batch_creates(w, name, j);
  }
  db_batch_op_free(&op);
}

static void leases_run_out(struct walk *w)
{
  exec_ok(w->c, "UPDATE batch_ops SET claimed_until = now() - interval "
                "'1 second' WHERE claimed_by = 'walk-dead'");
}

/* Batch moves one of its jobs on, and reports it. */
static void batch_moves(struct walk *w)
{
  struct bjob *b;

  if (w->nb == 0)
    return;
  b = &w->b[below(&w->rng, w->nb)];
  if (!strcmp(b->state, "QUEUED") && below(&w->rng, 2))
    snprintf(b->state, sizeof(b->state), "RUNNING");
  else if (!strcmp(b->state, "RUNNING") && below(&w->rng, 4) == 0)
    /* a cancelled job's Batch job does not succeed after its cancel */
    snprintf(b->state, sizeof(b->state), "%s",
             w->cancelled[b->job] || below(&w->rng, 2) ? "FAILED"
                                                       : "SUCCEEDED");
  report(w, b);
}

/* Run sql with $1 the id of one of the walk's jobs, picked at random. */
static void on_a_job(struct walk *w, const char *sql)
{
  const char *params[1] = {w->ids[below(&w->rng, w->n_jobs)]};
  PGresult *res = PQexecParams(w->c->pg, sql, 1, NULL, params, NULL, NULL, 0);

  ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "%s: %s", sql,
                PQresultErrorMessage(res));
  PQclear(res);
}

/* max_wait_s passes (the waits of the walk's jobs move back an hour), and
 * the sync's Flex Start step runs. */
static void max_wait_passes(struct walk *w)
{
  char name[32];
  const char *params[1] = {name};
  PGresult *res;

  snprintf(name, sizeof(name), "walk-%d", w->n);
  res = PQexecParams(w->c->pg,
                     "UPDATE jobs SET queued_at = queued_at - interval "
                     "'1 hour' WHERE name = $1 AND queued_at IS NOT NULL",
                     1, NULL, params, NULL, NULL, 0);
  ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "%s",
                PQresultErrorMessage(res));
  PQclear(res);
  ck_assert_msg(db_batch_flex_expired(w->c, w->err, sizeof(w->err)) >= 0,
                "flex expired: %s", w->err);
}

/* A backoff (after a Flex Start job waited in every location) runs out,
 * so the leader may admit the job again. */
static void backoff_ends(struct walk *w)
{
  on_a_job(w, "UPDATE jobs SET backoff_until = now() "
              "WHERE id = $1 AND backoff_until > now()");
}

/* An administrator moves the end of the reservation's capacity window
 * (from now, an interval): two minutes, and the leader's next cycles
 * evict its holders; 20 days, and it admits to it again. */
static void window_ends_in(struct walk *w, const char *interval)
{
  const char *params[1] = {interval};
  PGresult *res = PQexecParams(
      w->c->pg,
      "UPDATE flavors SET spec = (spec::jsonb || jsonb_build_object("
      "'available_until', to_char(now() AT TIME ZONE 'UTC' + $1::interval, "
      "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')))::json WHERE name = 'resv-window'",
      1, NULL, params, NULL, NULL, 0);

  ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "%s",
                PQresultErrorMessage(res));
  PQclear(res);
}

/* A job arrives in the walk's queue (a fresh copy of queue). */
static void submit_to(struct walk *w, const char *queue, bool high)
{
  char name[32], q[32];

  snprintf(name, sizeof(name), "walk-%d", w->n);
  snprintf(q, sizeof(q), "%s-%d", queue, w->n);
  ck_assert_int_lt(w->n_jobs, MAX_JOBS);
  submit(q, high, name, w->ids[w->n_jobs++]);
}

/* A job arrives (one in three of high priority, which preempts). */
static void job_arrives(struct walk *w)
{
  static const char *const queues[3] = {"failover", "race", "resv"};

  if (w->n_jobs < MAX_JOBS)
    submit_to(w, queues[below(&w->rng, 3)], below(&w->rng, 3) == 0);
}

/* The user cancels job j through the API's cancel (db_job_cancel). */
static void user_cancels(struct walk *w, int j)
{
  struct db_conn *db;
  struct gg_err err;
  enum gg_code code;
  char st[32];
  json_t *out = NULL;

  job_field(w->c, w->ids[j], "state", st, sizeof(st));
  if (w->cancelled[j] || terminal(st))
    return;
  err_init(&err);
  db = db_acquire(w->pool, 5000);
  code = db_job_cancel(db, &err, db_pool_batch(w->pool), NULL, "team-x",
                       w->ids[j], &out);
  json_decref(out);
  db_release(w->pool, db);
  if (code == GG_CONFLICT) {
    /* refused: the job's Batch job (a race's winner) SUCCEEDED before
     * the cancel, and the job waits for its losers' end */
    bool succeeded = false;
    int i;
    for (i = 0; i < w->nb; i++)
      succeeded |= w->b[i].job == j && !strcmp(w->b[i].state, "SUCCEEDED");
    ck_assert_msg(succeeded && strstr(err.detail, "SUCCEEDED"),
                  "cancel of %s (%s) refused: %s", w->ids[j], st, err.detail);
    err_clear(&err);
    w->refused[j] = true;
    return;
  }
  ck_assert_msg(code == GG_OK, "cancel of %s: %d %s", w->ids[j], (int)code,
                err.detail);
  err_clear(&err);
  w->cancelled[j] = true;
  w->cancel_attempt[j] = job_attempt(w->c, w->ids[j]);
}

/* Jobs of the walk not yet final. */
static int unfinished(struct walk *w)
{
  char st[32];
  int j, n = 0;

  for (j = 0; j < w->n_jobs; j++) {
    job_field(w->c, w->ids[j], "state", st, sizeof(st));
    n += !terminal(st);
  }
  return n;
}

/* Every cancelled job: CANCELLED at the attempt it was cancelled at, with
 * no Batch job left running. */
static void check_cancelled(struct walk *w, unsigned seed)
{
  char st[32];
  int j, i;

  for (j = 0; j < w->n_jobs; j++) {
    const char *id = w->ids[j];
    if (w->refused[j] && !w->cancelled[j]) {
      /* a cancel refused (409) once the run had succeeded */
      job_field(w->c, id, "state", st, sizeof(st));
      ck_assert_msg(!strcmp(st, "SUCCEEDED"),
                    "walk %d (seed %u): job %s, its cancel refused as its "
                    "run succeeded, ends %s",
                    w->n, seed, id, st);
      continue;
    }
    if (!w->cancelled[j])
      continue;
    /* an accepted cancel wins (batch_moves never makes a cancelled job's
     * Batch job succeed; a cancel after a race's winner SUCCEEDED is
     * refused) */
    job_field(w->c, id, "state", st, sizeof(st));
    ck_assert_msg(!strcmp(st, "CANCELLED"),
                  "walk %d (seed %u): job %s cancelled at attempt %d ends %s "
                  "(attempt %d)",
                  w->n, seed, id, w->cancel_attempt[j], st,
                  job_attempt(w->c, id));
    ck_assert_msg(job_attempt(w->c, id) == w->cancel_attempt[j],
                  "walk %d: job %s cancelled at attempt %d is at attempt %d",
                  w->n, id, w->cancel_attempt[j], job_attempt(w->c, id));
    for (i = 0; i < w->nb; i++)
      ck_assert_msg(w->b[i].job != j || !live(w->b[i].state),
                    "walk %d: job %s is CANCELLED and Batch job %s is %s", w->n,
                    id, w->b[i].name, w->b[i].state);
  }
}

/* What the walk went through, from its jobs' events: the moves it
 * interleaved the cancels with. */
static void coverage(struct walk *w)
{
  char name[32];
  const char *params[1] = {name};
  PGresult *res;
  int i, cancelled = 0, refused = 0;

  for (i = 0; i < w->n_jobs; i++) {
    cancelled += w->cancelled[i];
    refused += w->refused[i] && !w->cancelled[i];
  }
  snprintf(name, sizeof(name), "walk-%d", w->n);
  res = PQexecParams(
      w->c->pg,
      "SELECT string_agg(reason || ' ' || n, ', ' ORDER BY reason) FROM "
      "(SELECT e.reason, count(*) AS n FROM job_events e JOIN jobs j "
      "ON j.id = e.job_id WHERE j.name = $1 GROUP BY e.reason) x",
      1, NULL, params, NULL, NULL, 0);
  ck_assert(PQresultStatus(res) == PGRES_TUPLES_OK);
  fprintf(stderr,
          "cancel walk %d: %d jobs, %d cancelled, %d refused (run "
          "succeeded), %d Batch jobs; events: %s\n",
          w->n, w->n_jobs, cancelled, refused, w->nb, PQgetvalue(res, 0, 0));
  PQclear(res);
}

/* Walk n's state (its queues are the n-th copies), before any step. */
static struct walk *walk_new(int n)
{
  struct walk *w = calloc(1, sizeof(*w));

  ck_assert_ptr_nonnull(w);
  w->c = conn_open();
  w->pool = db_pool_new(db_url, 2);
  w->adm = admission_new(true, 600);
  ck_assert(w->pool && w->adm);
  db_pool_set_batch(w->pool, true);
  w->n = n;
  return w;
}

static void walk_free(struct walk *w)
{
  admission_free(w->adm);
  db_pool_free(w->pool);
  conn_close(w->c);
  free(w);
}

/* Only the outbox rows of the walk's job j are due. */
static void only(struct walk *w, int j)
{
  const char *params[1] = {w->ids[j]};
  PGresult *res = PQexecParams(
      w->c->pg,
      "UPDATE batch_ops SET next_at = CASE WHEN job_id = $1 THEN now() "
      "ELSE now() + interval '1 day' END",
      1, NULL, params, NULL, NULL, 0);

  ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "%s",
                PQresultErrorMessage(res));
  PQclear(res);
}

/* Every call succeeds and Batch reports each of its jobs, with the
 * leader's cycles, until nothing is left to do. */
static void drain(struct walk *w)
{
  int rounds, i;

  leases_run_out(w);
  for (rounds = 0; rounds < 50; rounds++) {
    bool any = false;
    while (dispatch_one(w, true))
      any = true;
    for (i = 0; i < w->nb; i++)
      report(w, &w->b[i]);
    leader_cycle(w->adm, w->c);
    if (!any && h_db_int(w->c->pg, "SELECT count(*) FROM batch_ops "
                                   "WHERE next_at <= now()") == 0)
      break;
  }
}

static void run_walk(int n, unsigned seed)
{
  struct walk *w = walk_new(n);
  int step, j;

  w->rng.s = seed;
  window_ends_in(w, "20 days");
  for (j = 0; j < WALK_JOBS; j++)
    job_arrives(w);

  for (step = 0; step < STEPS; step++) {
    int r = below(&w->rng, 100);
    if (r < 28)
      dispatch_one(w, false);
    else if (r < 48)
      batch_moves(w);
    else if (r < 70)
      leader_cycle(w->adm, w->c);
    else if (r < 78)
      max_wait_passes(w);
    else if (r < 88)
      backoff_ends(w);
    else if (r < 92)
      job_arrives(w);
    else if (r < 96)
      user_cancels(w, below(&w->rng, w->n_jobs));
    else if (r < 98)
      dispatcher_dies(w);
    else if (r < 99)
      leases_run_out(w);
    else
      window_ends_in(w, "2 minutes");
  }

  /* the user cancels whatever is left, and everything settles */
  for (j = 0; j < w->n_jobs; j++)
    user_cancels(w, j);
  drain(w);
  check_cancelled(w, seed);
  ck_assert_msg(unfinished(w) == 0, "walk %d: %d jobs never finished", n,
                unfinished(w));
  coverage(w);
  walk_free(w);
}

static void expect_state(struct walk *w, int j, const char *want)
{
  char st[32];

  job_field(w->c, w->ids[j], "state", st, sizeof(st));
  ck_assert_msg(!strcmp(st, want), "job %s is %s (attempt %d), not %s",
                w->ids[j], st, job_attempt(w->c, w->ids[j]), want);
}

/*
 * The cases a walk seldom meets, scripted:
 * - a cancel while the create is at Batch (its dispatcher then dies, and
 *   the lease runs out), then the capacity window closes: the eviction
 *   would withdraw the create and requeue the job;
 * - a raced job preempted (EVICTING), then cancelled: its copies' end
 *   completes the cancel, not the eviction.
 */
START_TEST(evictions_wait_for_a_pending_cancel)
{
  struct walk *w = walk_new(N_WALK);
  int j, victim = -1;

  /* 1. the window */
  window_ends_in(w, "20 days");
  submit_to(w, "resv", false);
  leader_cycle(w->adm, w->c);
  expect_state(w, 0, "ADMITTED");
  only(w, 0);
  dispatcher_dies(w); /* the create, lost with its dispatcher */
  user_cancels(w, 0);
  expect_state(w, 0, "ADMITTED"); /* its create may be at Batch */
  leases_run_out(w);
  window_ends_in(w, "2 minutes");
  leader_cycle(w->adm, w->c);
  ck_assert_int_eq(job_attempt(w->c, w->ids[0]), 1);
  drain(w);
  check_cancelled(w, 0);

  /* 2. preemption of a race */
  for (j = 1; j <= 4; j++)
    submit_to(w, "race", false);
  leader_cycle(w->adm, w->c);
  while (dispatch_one(w, true))
    ;
  for (j = 1; j <= 4; j++)
    expect_state(w, j, "QUEUED");
  submit_to(w, "race", true);
  leader_cycle(w->adm, w->c);
  for (j = 1; j <= 4; j++) {
    char st[32];
    job_field(w->c, w->ids[j], "state", st, sizeof(st));
    if (!strcmp(st, "EVICTING"))
      victim = j;
  }
  ck_assert_msg(victim > 0, "no race job was preempted");
  user_cancels(w, victim);
  drain(w);
  check_cancelled(w, 0);
  walk_free(w);
}
END_TEST

/*
 * Migration 0018 on what the old Flex Start step left: a job backed off
 * to PENDING with its cancel pending, a job whose next attempt runs with
 * its cancel pending and nothing left to cancel it, and a raced job
 * admitted again whose creates were dropped. Applied again (as on an
 * upgrade), it completes each cancel; the dispatcher and Batch do the
 * rest.
 */
START_TEST(migration_0018_completes_pending_cancels)
{
  struct walk *w = walk_new(N_WALK);
  const char *migrate[] = {"migrate", NULL};
  struct db_batch_op op;
  char sql[256], out[4096], name[256];
  int j;

  submit("failover", false, "backed-off", w->ids[0]);
  submit("failover", false, "moved-on", w->ids[1]);
  submit("race", false, "admitted-again", w->ids[2]);
  w->n_jobs = 3;
  leader_cycle(w->adm, w->c);
  /* the failover job's create (its next attempt's, as the old code made) */
  only(w, 1);
  ck_assert_int_eq(
      db_batch_claim(w->c, NULL, 0, "walk", 60, &op, w->err, sizeof(w->err)),
      1);
  batch_job_name(PROJECT, op.region, op.batch_job_id, name, sizeof(name));
  batch_creates(w, name, 1);
  ck_assert_int_eq(
      db_batch_done_create(w->c, &op, name, w->err, sizeof(w->err)), 0);
  db_batch_op_free(&op);
  snprintf(sql, sizeof(sql),
           "UPDATE jobs SET state = 'PENDING', flavor = NULL, location = "
           "NULL, reason = 'Backoff' WHERE id = '%s'",
           w->ids[0]);
  exec_ok(w->c, sql);
  exec_ok(w->c, "DELETE FROM batch_ops"); /* the race's creates, dropped */
  for (j = 0; j < 3; j++) {
    snprintf(sql, sizeof(sql),
             "UPDATE jobs SET cancel_requested = true WHERE id = '%s'",
             w->ids[j]);
    exec_ok(w->c, sql);
    w->cancelled[j] = true;
    w->cancel_attempt[j] = 1;
  }

  exec_ok(w->c, "DELETE FROM schema_migrations WHERE version = 18");
  ck_assert_msg(h_gpugate(db_url, migrate, out, sizeof(out)) == 0,
                "migrate: %s", out);
  expect_state(w, 0, "CANCELLED");
  snprintf(sql, sizeof(sql),
           "SELECT count(*) FROM job_events WHERE job_id = '%s' AND "
           "from_state = 'PENDING' AND to_state = 'CANCELLED'",
           w->ids[0]);
  ck_assert_int_eq(h_db_int(w->c->pg, sql), 1);
  snprintf(sql, sizeof(sql),
           "SELECT count(*) FROM batch_ops WHERE job_id = '%s' AND op = "
           "'cancel'",
           w->ids[1]);
  ck_assert_int_eq(h_db_int(w->c->pg, sql), 1);
  snprintf(sql, sizeof(sql),
           "SELECT count(*) FROM batch_ops WHERE job_id = '%s' AND op = "
           "'cancel'",
           w->ids[2]);
  ck_assert_int_eq(h_db_int(w->c->pg, sql), 3);

  drain(w);
  check_cancelled(w, 0);
  walk_free(w);
}
END_TEST

START_TEST(cancel_wins_over_every_automatic_move)
{
  run_walk(_i, 0x5eed0000u + (unsigned)_i * 7919u);
}
END_TEST

/* --- 3c. the shared mutation bucket is exact -------------------------- */

#define LEASERS 4
#define LEASES 250
#define RATE 1e7 /* tokens a second: each microsecond counts */
#define BURST 1000000

struct leaser {
  struct db_conn *c;
  long long granted;
  char err[256];
  int rc;
};

static void *lease_thread(void *p)
{
  struct leaser *l = p;
  int i, got;
  long wait_ms;

  for (i = 0; i < LEASES && !l->rc; i++) {
    l->rc = db_budget_lease(l->c, "budget-test", BURST, RATE, BURST, &got,
                            &wait_ms, l->err, sizeof(l->err));
    l->granted += got;
  }
  return NULL;
}

/*
 * A claim takes the rows no one holds; a row held under a lease that ran
 * out is taken only by a claim that looks for lapsed leases (a
 * dispatcher's, about once a second), which then says whether it found
 * any. A lease is live while its holder renews it (db_batch_renew: the
 * dispatcher renews the leases of its calls under way), whatever became of
 * the session that took it: a dispatcher that reconnected has another
 * backend pid and its lease is as live as before; a pid that a new session
 * reuses keeps no lease alive. Each case holds the job's create as stated
 * (by this test's second session, the claimer "holder"), renews as stated,
 * then claims as stated.
 */
#define HOLD(lease) "UPDATE batch_ops SET " lease " WHERE job_id = $1"
#define LIVE "claimed_until = now() + interval '60 s'"
#define LAPSED "claimed_until = now() - interval '1 s'"
START_TEST(lapsed_leases_are_taken_by_the_look_for_them)
{
  static const struct {
    const char *hold;  /* how the row is held: its lease, set by SQL */
    const char *renew; /* who renews it then (NULL: no one) */
    bool lapsed;       /* the claim looks for lapsed leases */
    int rows;          /* rows it takes */
  } cases[] = {
      {HOLD(LIVE), NULL, false, 0},
      {HOLD(LIVE), NULL, true, 0},
      {HOLD(LAPSED), NULL, false, 0},
      {HOLD(LAPSED), NULL, true, 1},
      /* the holder reconnected: the session that claimed is gone (no such
       * backend pid), the lease is live */
      {HOLD(LIVE ", claimed_pid = 2147483000"), NULL, false, 0},
      {HOLD(LIVE ", claimed_pid = 2147483000"), NULL, true, 0},
      /* the holder died and its pid went to a live session: not renewed,
       * the lease lapses all the same */
      {HOLD(LAPSED ", claimed_pid = (SELECT max(pid) FROM pg_stat_activity "
                   "WHERE pid <> pg_backend_pid())"),
       NULL, true, 1},
      /* renewed by its holder (after a reconnect too): live again */
      {HOLD(LAPSED ", claimed_pid = 2147483000"), "holder", true, 0},
      /* only the holder renews */
      {HOLD(LAPSED), "taker", true, 1},
  };
  struct db_conn *c = conn_open(), *holder = conn_open();
  struct admission *adm = admission_new(true, 600);
  struct db_batch_op op, ops[4];
  char err[256], id[32];
  bool lapsed;
  size_t k;
  int n, i;

  submit("failover", false, "lapsed", id);
  leader_cycle(adm, c);
  admission_free(adm);
  for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    /* the job's create, held by the second session (alive) */
    exec_params(c,
                "UPDATE batch_ops SET claimed_by = NULL, claimed_pid = "
                "NULL, claimed_until = NULL WHERE job_id = $1",
                1, (const char *const[]){id});
    ck_assert_int_eq(
        db_batch_claim(holder, NULL, 0, "holder", 60, &op, err, sizeof(err)),
        1);
    ck_assert_str_eq(op.job_id, id);
    exec_params(c, cases[k].hold, 1, (const char *const[]){id});
    if (cases[k].renew) {
      long long held = op.id;
      ck_assert_msg(db_batch_renew(holder, cases[k].renew, &held, 1, 60, err,
                                   sizeof(err)) == 0,
                    "renew: %s", err);
    }
    db_batch_op_free(&op);

    lapsed = cases[k].lapsed;
    n = db_batch_claim_many(c, NULL, 0, "taker", 60, &lapsed, ops, 4, err,
                            sizeof(err));
    ck_assert_msg(n == cases[k].rows,
                  "case %zu (%s, renewed by %s, look %d): "
                  "%d rows: %s",
                  k, cases[k].hold, cases[k].renew ? cases[k].renew : "no one",
                  cases[k].lapsed, n, err);
    ck_assert_msg(lapsed == (cases[k].lapsed && cases[k].rows > 0),
                  "case %zu: look again %d", k, lapsed);
    for (i = 0; i < n; i++) {
      ck_assert_str_eq(ops[i].job_id, id);
      db_batch_op_free(&ops[i]);
    }
  }
  exec_params(c, "DELETE FROM batch_ops WHERE job_id = $1", 1,
              (const char *const[]){id});
  conn_close(holder);
  conn_close(c);
}
END_TEST

/*
 * A cancel withdraws a create no one holds, and leaves one under a live
 * lease to its holder (it may be at Batch now): the cancel goes out after
 * it. The holder reconnected since its claim (the session that claimed is
 * gone): its lease is live all the same, and the create is not withdrawn.
 */
START_TEST(withdraw_leaves_a_create_under_a_live_lease)
{
  struct db_conn *c = conn_open(), *holder = conn_open();
  struct admission *adm = admission_new(true, 600);
  struct db_batch_op op;
  char err[256], id[32];
  int rc;

  exec_ok(c, "DELETE FROM batch_ops"); /* the cases' before */
  submit("failover", false, "withdraw", id);
  leader_cycle(adm, c);
  admission_free(adm);
  ck_assert_int_eq(
      db_batch_claim(holder, NULL, 0, "holder", 60, &op, err, sizeof(err)), 1);
  ck_assert_str_eq(op.job_id, id);
  db_batch_op_free(&op);
  exec_params(c, HOLD(LIVE ", claimed_pid = 2147483000"), 1,
              (const char *const[]){id});
  rc = db_batch_withdraw_create(c, id, 1, err, sizeof(err));
  ck_assert_msg(rc == 0,
                "withdraw gave %d (1: withdrawn, as if no Batch job "
                "could exist): %s",
                rc, err);
  ck_assert_int_eq(
      h_db_int(c->pg, "SELECT count(*) FROM batch_ops WHERE op = 'create' "
                      "AND claimed_by = 'holder'"),
      1);
  exec_ok(c, "DELETE FROM batch_ops");
  conn_close(holder);
  conn_close(c);
}
END_TEST
#undef LAPSED
#undef LIVE
#undef HOLD

/*
 * A claim reads the rows it takes, not the outbox: a dispatcher that has
 * looked at an empty outbox (its prepared claim planned for no rows) and
 * then finds 3,000 creates reads about as many rows as it claims (the
 * generic plan made for an empty table read them all for each: millions
 * of rows, 875 ms with 2,000). Rows read are the transaction's own
 * counts of batch_ops (pg_stat_xact_user_tables): heap rows fetched by
 * sequential and index scans.
 */
START_TEST(claim_reads_do_not_grow_with_the_outbox)
{
  struct db_conn *c = conn_open();
  struct db_batch_op ops[32];
  char err[256];
  bool lapsed = false;
  PGresult *res;
  long reads;
  int i, n;

  /* an empty outbox, as a vacuum found it */
  exec_ok(c, "DELETE FROM batch_ops");
  exec_ok(c, "VACUUM (ANALYZE) batch_ops");
  for (i = 0; i < 8; i++) /* idle looks: the plan is made for none */
    ck_assert_int_eq(db_batch_claim_many(c, NULL, 0, "idle", 60, &lapsed, ops,
                                         32, err, sizeof(err)),
                     0);
  exec_ok(c, "INSERT INTO jobs (id, team, queue, cluster_queue, name, "
             "priority_class, priority, can_preempt, state, gpu, cpu_milli, "
             "memory_mib, max_run_duration_s, spec) SELECT 'flat-' || "
             "lpad(g::text, 5, '0'), 'team-x', 'flex', 'cq-flex', 'flat', "
             "'default', 10, false, 'ADMITTED', 2, 2000, 10240, 3600, '{}' "
             "FROM generate_series(1, 3000) g");
  exec_ok(c, "INSERT INTO batch_ops (job_id, attempt, op, region, "
             "batch_job_id) SELECT id, 1, 'create', 'us-central1', "
             "'gpugate-' || id || '-a1' FROM jobs WHERE id LIKE 'flat-%'");
  exec_ok(c, "BEGIN");
  n = db_batch_claim_many(c, NULL, 0, "taker", 60, &lapsed, ops, 32, err,
                          sizeof(err));
  res = PQexec(c->pg, "SELECT coalesce(seq_tup_read, 0) + "
                      "coalesce(idx_tup_fetch, 0) FROM "
                      "pg_stat_xact_user_tables WHERE relname = 'batch_ops'");
  ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
  reads = strtol(PQgetvalue(res, 0, 0), NULL, 10);
  PQclear(res);
  exec_ok(c, "COMMIT");
  ck_assert_msg(n == 32, "claimed %d: %s", n, err);
  ck_assert_msg(reads <= 8 * 32, "a claim of %d read %ld rows of batch_ops", n,
                reads);
  for (i = 0; i < n; i++) {
    ck_assert_str_eq(ops[i].op, "create");
    db_batch_op_free(&ops[i]);
  }
  exec_ok(c, "DELETE FROM batch_ops WHERE job_id LIKE 'flat-%'");
  exec_ok(c, "DELETE FROM jobs WHERE id LIKE 'flat-%'");
  conn_close(c);
}
END_TEST

START_TEST(budget_leases_are_exact)
{
  struct db_conn *c = conn_open();
  struct leaser l[LEASERS];
  pthread_t t[LEASERS];
  PGresult *res;
  double prev_tokens = 0;
  long long granted = 0, logged = 0, prev_at = 0, first_at = 0;
  int i, n;

  /* every write of the bucket, in the order they were made; times in µs */
  exec_ok(c, "CREATE TABLE budget_log (seq bigserial, tokens float8, "
             "at bigint, grant_ int)");
  exec_ok(c, "CREATE FUNCTION budget_log() RETURNS trigger LANGUAGE plpgsql "
             "AS $$ BEGIN INSERT INTO budget_log (tokens, at, grant_) VALUES "
             "(NEW.tokens, (extract(epoch FROM NEW.refilled_at - "
             "'2026-01-01Z') * 1000000)::bigint, "
             "CASE WHEN TG_OP = 'UPDATE' THEN NEW.last_grant ELSE 0 END); "
             "RETURN NEW; END $$");
  exec_ok(c, "CREATE TRIGGER budget_log AFTER INSERT OR UPDATE ON "
             "batch_budget FOR EACH ROW WHEN (NEW.region = 'budget-test') "
             "EXECUTE FUNCTION budget_log()");
  for (i = 0; i < LEASERS; i++) {
    l[i] = (struct leaser){conn_open(), 0, "", 0};
    ck_assert_int_eq(pthread_create(&t[i], NULL, lease_thread, &l[i]), 0);
  }
  for (i = 0; i < LEASERS; i++) {
    pthread_join(t[i], NULL);
    ck_assert_msg(l[i].rc == 0, "lease: %s", l[i].err);
    granted += l[i].granted;
    conn_close(l[i].c);
  }

  res = PQexec(c->pg, "SELECT tokens, at, grant_ FROM budget_log ORDER BY seq");
  ck_assert(PQresultStatus(res) == PGRES_TUPLES_OK);
  n = PQntuples(res);
  ck_assert_int_ge(n, LEASERS * LEASES);
  for (i = 0; i < n; i++) {
    double tokens = strtod(PQgetvalue(res, i, 0), NULL);
    long long at = strtoll(PQgetvalue(res, i, 1), NULL, 10);
    long grant = strtol(PQgetvalue(res, i, 2), NULL, 10);
    ck_assert_msg(tokens >= 0, "write %d of %d: the bucket holds %.3f", i, n,
                  tokens);
    ck_assert_msg(grant >= 0 && grant <= BURST, "write %d: granted %ld", i,
                  grant);
    if (i == 0) {
      first_at = at;
    } else {
      /* what the bucket held after the refill up to its new stamp, less
       * what was granted: nothing more, nothing less */
      double avail = prev_tokens + RATE * (double)(at - prev_at) / 1e6;
      double want = (avail < BURST ? avail : BURST) - (double)grant;
      ck_assert_msg(at >= prev_at, "write %d: the stamp went back", i);
      ck_assert_msg(tokens > want - 1e-3 && tokens < want + 1e-3,
                    "write %d of %d: the bucket holds %.3f, its ledger "
                    "%.3f (granted %ld over %lld us)",
                    i, n, tokens, want, grant, at - prev_at);
    }
    logged += grant;
    prev_tokens = tokens;
    prev_at = at;
  }
  PQclear(res);
  /* the grants the leases saw are the grants the bucket recorded, and no
   * more than it held at first and gained since */
  ck_assert_int_eq(logged, granted);
  ck_assert_msg((double)granted <=
                    BURST + RATE * (double)(prev_at - first_at) / 1e6 + 1e-3,
                "granted %lld in %lld us", granted, prev_at - first_at);
  conn_close(c);
}
END_TEST

Suite *cancel_suite(void)
{
  Suite *s = suite_create("cancel");
  TCase *e2e = tcase_create("e2e");
  TCase *stale = tcase_create("stale");
  TCase *walk = tcase_create("walk");

  tcase_add_unchecked_fixture(e2e, setup_e2e, teardown);
  tcase_set_timeout(e2e, 180);
  tcase_add_test(e2e, failover_waits_for_a_pending_cancel);
  tcase_add_test(e2e, race_backoff_waits_for_a_pending_cancel);
  tcase_add_test(e2e, race_refusal_drops_one_region);
  tcase_add_test(e2e, next_attempt_waits_for_a_retried_cancel);
  tcase_add_test(e2e, refused_retry_of_a_lost_create_waits_for_batch);
  tcase_add_test(e2e, refused_retry_of_a_lost_copy_create_waits_for_batch);
  tcase_add_test(e2e, flex_backoff_waits_for_the_old_attempt);
  tcase_add_test(e2e, race_winner_end_waits_for_losers);
  tcase_add_test(e2e, cancel_after_the_winner_succeeded_is_refused);
  suite_add_tcase(s, e2e);

  tcase_add_unchecked_fixture(stale, setup_stale, teardown_db);
  tcase_set_timeout(stale, 60);
  tcase_add_test(stale, stale_report_does_not_move_the_next_attempt);
  tcase_add_test(stale, cancel_reads_the_job_under_its_lock);
  tcase_add_test(stale, cancel_sees_the_succeeded_run_under_its_lock);
  tcase_add_test(stale, redelivered_report_does_not_move_back);
  tcase_add_test(stale, cancel_404_writes_no_created_event);
  tcase_add_test(stale, refused_takeover_of_a_lapsed_create_waits_for_batch);
  tcase_add_test(stale, budget_leases_are_exact);
  tcase_add_test(stale, lapsed_leases_are_taken_by_the_look_for_them);
  tcase_add_test(stale, withdraw_leaves_a_create_under_a_live_lease);
  tcase_add_test(stale, migration_0018_completes_pending_cancels);
  tcase_add_test(stale, claim_reads_do_not_grow_with_the_outbox);
  suite_add_tcase(s, stale);

  tcase_add_unchecked_fixture(walk, setup_walk, teardown_db);
  tcase_set_timeout(walk, 120);
  tcase_add_loop_test(walk, cancel_wins_over_every_automatic_move, 0, N_WALK);
  tcase_add_test(walk, evictions_wait_for_a_pending_cancel);
  suite_add_tcase(s, walk);
  return s;
}
