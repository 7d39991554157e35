/*
 * it_calendar.c — DWS Calendar-mode capacity windows on a RESERVATION
 * flavor, end to end against the Batch emulator.
 *
 * window: a flavor whose window opens 20 s after the test starts and
 * lasts 30 s, with GPUGATE_CAPACITY_WINDOW_GRACE_S=8. A job that fits only
 * there waits PENDING until the window opens and is admitted at once when
 * it does; a job too long for what is left of the window goes to the next
 * flavor, or stays pending when there is none it fits; a job whose run
 * (its start was held back by Batch capacity) would outlast the window is
 * evicted with reason CapacityWindowEnded 8 s before the end — its Batch
 * job cancelled, the job back to PENDING as attempt 2 — and is not taken
 * in again. The cluster queue's status shows the window and the time
 * left.
 *
 * validation: windows only on RESERVATION, both ends, in order, at most
 * 90 days, RFC 3339 — each a problem naming the field; offsets are
 * normalised to UTC.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/rfc3339.h"
#include "tests/integration/harness.h"

Suite *calendar_suite(void);

#define OPENS_IN_S 20
#define WINDOW_S 30
#define GRACE_S 8
#define STR_(x) #x
#define STR(x) STR_(x)

static struct h_server emu, srv;
static char db_url[512];
static char *admin, *member;
static long long win_from, win_until; /* the window, epoch seconds */

/* ---- processes ---- */

static void start_all(const char *db, const char *const *emu_env)
{
  char gcp[H_GCP_ENV][128];
  const char *env[16];
  size_t n = 0, i;

  ck_assert_msg(h_emulator_start(&emu, emu_env) == 0,
                "the emulator did not start; see %s", emu.log);
  h_gcp_env(&emu, gcp);
  ck_assert_int_eq(h_db_create(db, db_url, sizeof(db_url)), 0);
  for (i = 0; i < H_GCP_ENV; i++)
    env[n++] = gcp[i];
  env[n++] = "GPUGATE_SYNC_INTERVAL_MS=300";
  env[n++] = "GPUGATE_ADMISSION_INTERVAL_MS=200";
  env[n++] = "GPUGATE_RATE_LIMIT_RPS=100000";
  env[n++] = "GPUGATE_CAPACITY_WINDOW_GRACE_S=" STR(GRACE_S);
  env[n] = NULL;
  ck_assert_msg(h_server_start(&srv, db_url, env) == 0,
                "gpugate did not start; see %s", srv.log);
  admin = h_token("platform", "admin", 3600);
  member = h_token("team-x", "member", 3600);
  ck_assert_ptr_nonnull(admin);
  ck_assert_ptr_nonnull(member);
}

static void teardown(void)
{
  h_server_stop(&srv);
  h_server_stop(&emu);
  free(admin);
  free(member);
  admin = member = NULL;
}

/* ---- helpers ---- */

static void put(const char *path, const char *body, long want)
{
  json_decref(h_call(&srv, "PUT", path, admin, body, want));
}

/* A RESERVATION flavor "cal" with the window [from, until) (epoch s). */
static char *cal_flavor(long long from, long long until)
{
  char f[RFC3339_LEN], u[RFC3339_LEN], *body = malloc(1024);

  ck_assert_ptr_nonnull(body);
  rfc3339_format(from, f);
  rfc3339_format(until, u);
  snprintf(body, 1024,
           "{\"provisioning_model\": \"RESERVATION\", "
           "\"reservation\": \"cal-booking\", \"machine_type\": "
           "\"a3-highgpu-8g\", \"accelerator_type\": \"nvidia-h100-80gb\", "
           "\"gpus_per_vm\": 8, \"locations\": [\"us-central1\"], "
           "\"price_per_gpu_hour_usd\": 3, "
           "\"available_from\": \"%s\", \"available_until\": \"%s\"}",
           f, u);
  return body;
}

static void configure(long long from, long long until)
{
  char *cal = cal_flavor(from, until);

  put("/v1/priority-classes/default",
      "{\"value\": 10, \"preemption_policy\": \"Never\", \"default\": true}",
      201);
  put("/v1/flavors/cal", cal, 201);
  free(cal);
  put("/v1/flavors/spot",
      "{\"provisioning_model\": \"SPOT\", \"machine_type\": "
      "\"g2-standard-24\", "
      "\"accelerator_type\": \"nvidia-l4\", \"gpus_per_vm\": 2, "
      "\"locations\": [\"us-central1\"], \"price_per_gpu_hour_usd\": 0.25}",
      201);
  put("/v1/cluster-queues/cq-cal",
      "{\"flavors\": [{\"name\": \"cal\", \"resources\": {"
      "\"gpu\": {\"nominal\": 8}, \"cpu_milli\": {\"nominal\": 64000}, "
      "\"memory_mib\": {\"nominal\": 262144}}}, {\"name\": \"spot\", "
      "\"resources\": {\"gpu\": {\"nominal\": 2}, \"cpu_milli\": "
      "{\"nominal\": 16000}, \"memory_mib\": {\"nominal\": 65536}}}]}",
      201);
  put("/v1/teams/team-x",
      "{\"display_name\": \"Team X\", \"cost_center\": \"ml\", "
      "\"monthly_budget_usd\": 100000, \"budget_policy\": \"none\"}",
      201);
  put("/v1/teams/team-x/queues/cal", "{\"cluster_queue\": \"cq-cal\"}", 201);
}

/* Submit a one-task job of gpu GPUs and max_run seconds that runs (in the
 * emulator) run_ms; its id goes to id. */
static void submit(const char *name, int gpu, int max_run, long run_ms,
                   char id[32])
{
  char body[1024];
  json_t *j;

  snprintf(body, sizeof(body),
           "{\"name\": \"%s\", \"queue\": \"cal\", \"task_count\": 1, "
           "\"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1\", "
           "\"commands\": [\"python\", \"train.py\"], "
           "\"env\": {\"EMU_RUN_MS\": \"%ld\"}, \"cpu_milli\": 8000, "
           "\"memory_mib\": 32768, \"gpu\": %d}, \"max_run_duration_s\": %d, "
           "\"checkpoint_uri\": \"gs://b/ckpt/%s/\"}",
           name, run_ms, gpu, max_run, name);
  j = h_call(&srv, "POST", "/v1/teams/team-x/jobs", member, body, 201);
  snprintf(id, 32, "%s", h_str(j, "id") ? h_str(j, "id") : "");
  json_decref(j);
  ck_assert_msg(id[0], "%s: no job id", name);
}

static json_t *get_job(const char *id)
{
  char path[160];

  snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%.31s", id);
  return h_call(&srv, "GET", path, member, NULL, 200);
}

/* "A|B|C" contains the job's state. */
static bool state_is(const json_t *j, const char *states)
{
  const char *s = h_str(j, "state"), *p = states;
  size_t n = s ? strlen(s) : 0;

  while (s && (p = strstr(p, s)) != NULL) {
    if ((p == states || p[-1] == '|') && (p[n] == '\0' || p[n] == '|'))
      return true;
    p += n;
  }
  return false;
}

/* Poll until the job is in one of states ("A|B"); returns it. */
static json_t *wait_state(const char *id, const char *states, long ms)
{
  long long end = h_now_ms() + ms;
  json_t *j;
  char *dump;

  for (;;) {
    j = get_job(id);
    if (state_is(j, states))
      return j;
    if (h_now_ms() > end)
      break;
    json_decref(j);
    h_sleep_ms(100);
  }
  dump = json_dumps(j, JSON_COMPACT);
  ck_abort_msg("job %s not %s within %ld ms: %s", id, states, ms, dump);
  return NULL;
}

/* Seconds since the epoch of an RFC 3339 member k of o (-1: none). */
static long long when(const json_t *o, const char *k)
{
  const char *s = h_str(o, k);
  int64_t t;

  return s && rfc3339_parse(s, 0, &t) == 0 ? (long long)t : -1;
}

/* The event of the job into `to` with reason, as a new reference. */
static json_t *event_of(const char *id, const char *to, const char *reason)
{
  char path[200];
  json_t *r, *e, *found = NULL;
  size_t i;

  snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%.31s/events?limit=500",
           id);
  r = h_call(&srv, "GET", path, member, NULL, 200);
  json_array_foreach (json_object_get(r, "items"), i, e) {
    const char *t = h_str(e, "to"), *why = h_str(e, "reason");
    if (!found && t && !strcmp(t, to) && why && !strcmp(why, reason))
      found = json_incref(e);
  }
  json_decref(r);
  return found;
}

static json_t *cq_window(void)
{
  json_t *cq =
      h_call(&srv, "GET", "/v1/cluster-queues/cq-cal", admin, NULL, 200);
  json_t *w = json_array_get(
      json_object_get(json_object_get(cq, "status"), "capacity_windows"), 0);

  json_incref(w);
  json_decref(cq);
  ck_assert_msg(w != NULL, "cq-cal status shows no capacity window");
  return w;
}

static void sleep_until(long long epoch_s)
{
  while ((long long)time(NULL) < epoch_s)
    h_sleep_ms(100);
}

/* ---- tests ---- */

static void setup_window(void)
{
  const char *emu_env[] = {"EMU_CAPACITY=us-central1/RESERVATION_BOUND=0",
                           NULL};

  start_all("it_calendar_window", emu_env);
  win_from = (long long)time(NULL) + OPENS_IN_S;
  win_until = win_from + WINDOW_S;
  configure(win_from, win_until);
}

static void setup_validation(void)
{
  start_all("it_calendar_validation", NULL);
}

START_TEST(window)
{
  char a[32], b[32], c[32], d[32], e_id[32], cfg[160];
  int e_run;
  json_t *j, *w, *e;
  long long at;

  /* the status shows the window before it opens */
  w = cq_window();
  ck_assert_str_eq(h_str(w, "flavor"), "cal");
  ck_assert_str_eq(h_str(w, "state"), "Upcoming");
  ck_assert_int_eq(when(w, "available_from"), win_from);
  ck_assert_int_eq(when(w, "available_until"), win_until);
  ck_assert_int_eq(when(w, "evictions_from"), win_until - GRACE_S);
  at = json_integer_value(json_object_get(w, "opens_in_s"));
  ck_assert_msg(at > 0 && at <= OPENS_IN_S, "opens_in_s %lld", at);
  ck_assert_int_eq(json_integer_value(json_object_get(w, "time_left_s")),
                   WINDOW_S);
  json_decref(w);

  /* A needs 4 GPUs (only cal has them); its run fits the window */
  submit("a", 4, WINDOW_S - 6, 600000, a);
  h_sleep_ms(1000); /* a cycle or more: its pending reason is set */
  while ((long long)time(NULL) < win_from - 1) {
    j = get_job(a);
    ck_assert_msg(state_is(j, "PENDING"), "admitted before the window: %s",
                  h_str(j, "state"));
    ck_assert_str_eq(h_str(j, "reason") ? h_str(j, "reason") : "",
                     "InsufficientQuota");
    json_decref(j);
    h_sleep_ms(500);
  }

  /* admitted at opening, in cal */
  j = wait_state(a, "ADMITTED|QUEUED|RUNNING", 30000);
  at = when(json_object_get(j, "admission"), "admitted_at");
  ck_assert_msg(at >= win_from && at <= win_from + 4,
                "admitted at %lld, opens %lld", at, win_from);
  ck_assert_str_eq(h_str(json_object_get(j, "admission"), "flavor"), "cal");
  json_decref(j);
  w = cq_window();
  ck_assert_str_eq(h_str(w, "state"), "Open");
  at = json_integer_value(json_object_get(w, "time_left_s"));
  ck_assert_msg(at > 0 && at <= WINDOW_S, "time_left_s %lld", at);
  json_decref(w);

  /* B (2 GPUs) is too long for the window: the next flavor, spot */
  submit("b", 2, 3600, 600000, b);
  j = wait_state(b, "ADMITTED|QUEUED|RUNNING", 30000);
  ck_assert_str_eq(h_str(json_object_get(j, "admission"), "flavor"), "spot");
  json_decref(j);

  /* C (4 GPUs) is too long and fits no other flavor: it stays pending,
   * although D, the same size but short, goes into the window after it */
  submit("c", 4, 3600, 600000, c);
  submit("d", 4, 10, 1000, d);
  j = wait_state(d, "ADMITTED|QUEUED|RUNNING|SUCCEEDED", 30000);
  ck_assert_str_eq(h_str(json_object_get(j, "admission"), "flavor"), "cal");
  json_decref(j);
  j = get_job(c);
  ck_assert_str_eq(h_str(j, "state"), "PENDING");
  json_decref(j);

  /* Batch capacity for A arrives late: A starts 8 s after the opening or
   * later, so its run (24 s) would end 2 s or more past the window */
  sleep_until(win_from + 8);
  snprintf(cfg, sizeof(cfg),
           "{\"EMU_CAPACITY\": \"us-central1/RESERVATION_BOUND=8\"}");
  json_decref(h_call(&emu, "POST", "/emulator/config", NULL, cfg, 200));
  json_decref(wait_state(a, "RUNNING", 30000));
  json_decref(wait_state(d, "SUCCEEDED", 15000));

  /* E starts at once and its run ends by the window's end: it will be
   * left alone at end − grace */
  e_run = (int)(win_until - (long long)time(NULL) - 6);
  ck_assert_msg(e_run > 2, "too late for E: %d s", e_run);
  submit("e", 4, e_run, 600000, e_id);
  j = wait_state(e_id, "RUNNING", 30000);
  ck_assert_str_eq(h_str(json_object_get(j, "admission"), "flavor"), "cal");
  json_decref(j);

  /* running, untouched until end − grace */
  sleep_until(win_until - GRACE_S - 2);
  j = get_job(a);
  ck_assert_str_eq(h_str(j, "state"), "RUNNING");
  json_decref(j);
  ck_assert_ptr_null(event_of(a, "EVICTING", "CapacityWindowEnded"));

  /* evicted at end − grace, back to PENDING as attempt 2 */
  j = wait_state(a, "PENDING", 30000);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "attempt")), 2);
  json_decref(j);
  e = event_of(a, "EVICTING", "CapacityWindowEnded");
  ck_assert_msg(e != NULL, "no CapacityWindowEnded event");
  at = when(e, "at");
  ck_assert_msg(at >= win_until - GRACE_S && at < win_until - GRACE_S + 4,
                "evicted at %lld; end %lld, grace %d", at, win_until, GRACE_S);
  json_decref(e);
  ck_assert_msg((long long)time(NULL) < win_until,
                "the eviction completed only after the window closed");

  /* E, whose run ends by the end, was not evicted */
  j = get_job(e_id);
  ck_assert_msg(state_is(j, "RUNNING|SUCCEEDED|FAILED"), "E: %s",
                h_str(j, "state"));
  ck_assert_int_eq(json_integer_value(json_object_get(j, "attempt")), 1);
  json_decref(j);
  ck_assert_ptr_null(event_of(e_id, "EVICTING", "CapacityWindowEnded"));

  /* counted by reason */
  {
    struct h_resp m;
    const char *line, *cq, *eol;

    ck_assert_int_eq(h_request(&srv, "GET", "/metrics", admin, NULL, NULL, &m),
                     0);
    ck_assert_int_eq(m.status, 200);
    line = strstr(m.body, "reason=\"CapacityWindowEnded\"");
    ck_assert_msg(line != NULL, "no CapacityWindowEnded eviction counted");
    while (line > m.body && line[-1] != '\n')
      line--;
    eol = strchr(line, '\n');
    cq = strstr(line, "cluster_queue=\"cq-cal\"");
    ck_assert_msg(!strncmp(line, "gpugate_evicted_jobs_total{", 27) && eol &&
                      cq && cq < eol && !strncmp(strchr(line, '}'), "} 1\n", 4),
                  "metric line: %.200s", line);
    h_resp_free(&m);
  }

  /* its Batch job was cancelled; it is not taken in again */
  {
    json_t *reqs = h_emu_get(&emu, "/emulator/requests");
    char want[200];
    bool cancelled = false;
    size_t i;
    json_t *r;

    snprintf(want, sizeof(want),
             "/v1/projects/test-project/locations/us-central1/jobs/"
             "gpugate-%s-a1:cancel",
             a);
    json_array_foreach (json_object_get(reqs, "requests"), i, r)
      cancelled =
          cancelled || (h_str(r, "path") && !strcmp(h_str(r, "path"), want) &&
                        !strcmp(h_str(r, "method"), "POST"));
    json_decref(reqs);
    ck_assert_msg(cancelled, "no cancel of %s", want);
  }
  h_sleep_ms(1500);
  j = get_job(a);
  ck_assert_str_eq(h_str(j, "state"), "PENDING");
  json_decref(j);
  j = get_job(b);
  ck_assert_msg(state_is(j, "QUEUED|RUNNING"), "B (spot) left alone: %s",
                h_str(j, "state"));
  json_decref(j);
}
END_TEST

struct bad {
  const char *what;
  const char *from, *until; /* JSON values or NULL (absent) */
  const char *model;
  long status;
  const char *field;
};

START_TEST(validation)
{
  static const struct bad bads[] = {
      {"not RESERVATION", "\"2026-12-01T08:00:00Z\"",
       "\"2026-12-02T08:00:00Z\"", "SPOT", 422, "available_from"},
      {"only the start", "\"2026-12-01T08:00:00Z\"", NULL, "RESERVATION", 422,
       "available_until"},
      {"only the end", NULL, "\"2026-12-01T08:00:00Z\"", "RESERVATION", 422,
       "available_from"},
      {"end before start", "\"2026-12-02T08:00:00Z\"",
       "\"2026-12-01T08:00:00Z\"", "RESERVATION", 422, "available_until"},
      {"empty window", "\"2026-12-01T08:00:00Z\"",
       "\"2026-12-01T09:00:00+01:00\"", "RESERVATION", 422, "available_until"},
      {"longer than 90 days", "\"2026-12-01T08:00:00Z\"",
       "\"2027-03-01T08:00:01Z\"", "RESERVATION", 422, "available_until"},
      {"no time zone", "\"2026-12-01T08:00:00\"", "\"2026-12-02T08:00:00Z\"",
       "RESERVATION", 400, "available_from"},
      {"not a date", "\"tomorrow\"", "\"2026-12-02T08:00:00Z\"", "RESERVATION",
       400, "available_from"},
      {"a number", "1796112000", "\"2026-12-02T08:00:00Z\"", "RESERVATION", 400,
       "available_from"},
  };
  char body[1024], extra[256];
  struct h_resp r;
  json_t *f;
  size_t i;

  for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
    const struct bad *b = &bads[i];
    int n = 0;

    extra[0] = '\0';
    if (b->from)
      n = snprintf(extra, sizeof(extra), ", \"available_from\": %s", b->from);
    if (b->until)
      snprintf(extra + n, sizeof(extra) - (size_t)n,
               ", \"available_until\": %s", b->until);
    snprintf(body, sizeof(body),
             "{\"provisioning_model\": \"%s\", %s\"machine_type\": "
             "\"a3-highgpu-8g\", \"accelerator_type\": \"nvidia-h100-80gb\", "
             "\"gpus_per_vm\": 8, \"locations\": [\"us-central1\"]%s}",
             b->model,
             !strcmp(b->model, "RESERVATION") ? "\"reservation\": \"r\", " : "",
             extra);
    ck_assert_int_eq(
        h_request(&srv, "PUT", "/v1/flavors/w", admin, body, NULL, &r), 0);
    ck_assert_msg(h_is_problem(&r, b->status, b->field),
                  "%s: want %ld naming %s, got %ld %s", b->what, b->status,
                  b->field, r.status, r.body);
    h_resp_free(&r);
  }
  /* 90 days exactly, with offsets: stored in UTC */
  put("/v1/flavors/w",
      "{\"provisioning_model\": \"RESERVATION\", \"reservation\": \"r\", "
      "\"machine_type\": \"a3-highgpu-8g\", \"accelerator_type\": "
      "\"nvidia-h100-80gb\", \"gpus_per_vm\": 8, \"locations\": "
      "[\"us-central1\"], \"available_from\": \"2026-12-01T09:00:00+01:00\", "
      "\"available_until\": \"2027-03-01T03:00:00.5-05:00\"}",
      201);
  f = h_call(&srv, "GET", "/v1/flavors/w", admin, NULL, 200);
  ck_assert_str_eq(h_str(f, "available_from"), "2026-12-01T08:00:00Z");
  ck_assert_str_eq(h_str(f, "available_until"), "2027-03-01T08:00:00Z");
  json_decref(f);
  /* a flavor without a window has neither key; null removes one */
  put("/v1/flavors/w",
      "{\"provisioning_model\": \"RESERVATION\", \"reservation\": \"r\", "
      "\"machine_type\": \"a3-highgpu-8g\", \"accelerator_type\": "
      "\"nvidia-h100-80gb\", \"gpus_per_vm\": 8, \"locations\": "
      "[\"us-central1\"], \"available_from\": null, "
      "\"available_until\": null}",
      200);
  f = h_call(&srv, "GET", "/v1/flavors/w", admin, NULL, 200);
  ck_assert_ptr_null(json_object_get(f, "available_from"));
  ck_assert_ptr_null(json_object_get(f, "available_until"));
  json_decref(f);
}
END_TEST

/* An administrator's change of a window reaches admission at once: a job
 * waiting for a window an hour away is admitted when the window is moved
 * to now. */
START_TEST(admin_moves_window)
{
  long long now = (long long)time(NULL);
  char a[32], *cal;
  json_t *j;

  configure(now + 3600, now + 7200);
  submit("a", 4, 600, 1000, a);
  h_sleep_ms(1000);
  j = get_job(a);
  ck_assert_str_eq(h_str(j, "state"), "PENDING");
  json_decref(j);
  cal = cal_flavor(now - 1, now + 7200);
  put("/v1/flavors/cal", cal, 200);
  free(cal);
  j = wait_state(a, "ADMITTED|QUEUED|RUNNING|SUCCEEDED", 30000);
  ck_assert_str_eq(h_str(json_object_get(j, "admission"), "flavor"), "cal");
  json_decref(j);
}
END_TEST

Suite *calendar_suite(void)
{
  Suite *s = suite_create("calendar");
  TCase *val = tcase_create("validation");
  TCase *win = tcase_create("window");

  tcase_add_unchecked_fixture(val, setup_validation, teardown);
  tcase_set_timeout(val, 60);
  tcase_add_test(val, validation);
  tcase_add_test(val, admin_moves_window);
  suite_add_tcase(s, val);
  tcase_add_unchecked_fixture(win, setup_window, teardown);
  tcase_set_timeout(win, 120);
  tcase_add_test(win, window);
  suite_add_tcase(s, win);
  return s;
}
