/*
 * it_dispatch.c — gpugate's Cloud Batch side end to end against the Batch
 * emulator (build/batch_emulator): the Job body each provisioning model
 * produces (SPEC §4), the reference scenario of SPEC §2 with real Batch
 * jobs (evictions cancel, requeued jobs run again as attempt 2, every Batch
 * job created exactly once), DWS Flex Start failover to the next location
 * after max_wait_s, and Pub/Sub push notifications moving job states while
 * the status sync is off; and dispatch at a real Batch's latency: with
 * every create taking 300 ms in the emulator (EMU_LATENCY_MS), 40 jobs
 * released at once are created by many calls under way together, each
 * job exactly once, and a user's cancel of jobs whose creates are under way
 * still wins.
 *
 * Each test case has its own emulator, database and gpugate, started by an
 * unchecked fixture (in the runner's process, so a failed forked test
 * leaves nothing running). What the emulator received is read back from
 * GET /emulator/requests and GET /emulator/jobs.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *dispatch_suite(void);

#define PROJECT "test-project"
#define MAX_ENV 24
#define PUSH_SECRET "push-secret-4f1c9a0e7b2d"

static struct h_server emu, srv;
static char db_url[512];
static char secret_file[64];
static char *tok;         /* member of team-x (single-team cases) */
static char *team_tok[4]; /* members of team-a … team-d (reference) */

static const char *const teams[4] = {"team-a", "team-b", "team-c", "team-d"};

/* ---- small helpers ---- */

static bool str_is(const json_t *o, const char *k, const char *want)
{
  const char *v = h_str(o, k);

  return v && want && !strcmp(v, want);
}

/* An int64 as Batch's JSON may carry it: a number or a decimal string. */
static long long num_of(const json_t *o, const char *k)
{
  json_t *v = json_object_get(o, k);
  char *end;
  long long n;

  if (json_is_integer(v))
    return json_integer_value(v);
  if (!json_is_string(v) || !*json_string_value(v))
    return -1;
  n = strtoll(json_string_value(v), &end, 10);
  return *end ? -1 : n;
}

static bool ends_with(const char *s, const char *suffix)
{
  size_t n = strlen(s), m = strlen(suffix);

  return n >= m && !strcmp(s + n - m, suffix);
}

/* "A|B|C" contains state. */
static bool state_in(const char *state, const char *states)
{
  size_t n = strlen(state);
  const char *p = states;

  while (state && (p = strstr(p, state)) != NULL) {
    if ((p == states || p[-1] == '|') && (p[n] == '\0' || p[n] == '|'))
      return true;
    p += n;
  }
  return false;
}

static bool is_uuid(const char *s)
{
  size_t i;

  if (!s || strlen(s) != 36)
    return false;
  for (i = 0; i < 36; i++) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-'
             : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
                 (s[i] >= 'A' && s[i] <= 'F')))
      return false;
  }
  return true;
}

/* A valid Batch job id: ^[a-z][a-z0-9-]*$, at most 63 characters. */
static bool batch_id_ok(const char *s)
{
  size_t i, n = s ? strlen(s) : 0;

  if (n == 0 || n > 63 || !(s[0] >= 'a' && s[0] <= 'z'))
    return false;
  for (i = 1; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '-'))
      return false;
  return true;
}

/* ---- processes ---- */

/*
 * Start the emulator (emu_env), create database db, apply fixture, and start
 * gpugate against both with the common test settings plus gp_env.
 */
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
}

static void teardown(void)
{
  int i;

  h_server_stop(&srv);
  h_server_stop(&emu);
  free(tok);
  tok = NULL;
  for (i = 0; i < 4; i++) {
    free(team_tok[i]);
    team_tok[i] = NULL;
  }
  if (secret_file[0])
    unlink(secret_file);
  secret_file[0] = '\0';
}

/* ---- HTTP ---- */

static void submit(const char *team, const char *token, const char *body,
                   char id[32])
{
  char path[128];
  json_t *j;

  snprintf(path, sizeof(path), "/v1/teams/%s/jobs", team);
  j = h_call(&srv, "POST", path, token, body, 201);
  snprintf(id, 32, "%s", h_str(j, "id") ? h_str(j, "id") : "");
  json_decref(j);
  ck_assert_msg(id[0], "no job id");
}

static json_t *get_job(const char *team, const char *token, const char *id)
{
  char path[160];

  snprintf(path, sizeof(path), "/v1/teams/%s/jobs/%.31s", team, id);
  return h_call(&srv, "GET", path, token, NULL, 200);
}

/* Poll the job until its state is one of states ("A|B"); returns it. */
static json_t *wait_state(const char *team, const char *token, const char *id,
                          const char *states, long ms)
{
  long long end = h_now_ms() + ms;
  json_t *j;
  char *dump;

  for (;;) {
    j = get_job(team, token, id);
    if (h_str(j, "state") && state_in(h_str(j, "state"), states))
      return j;
    if (h_now_ms() > end)
      break;
    json_decref(j);
    h_sleep_ms(50);
  }
  dump = json_dumps(j, JSON_COMPACT);
  ck_abort_msg("job %s not %s within %ld ms: %s", id, states, ms, dump);
  return NULL;
}

/* The job's events (new reference to the items array). */
static json_t *events_of(const char *team, const char *token, const char *id)
{
  char path[200];
  json_t *r, *items;

  snprintf(path, sizeof(path), "/v1/teams/%s/jobs/%.31s/events?limit=500", team,
           id);
  r = h_call(&srv, "GET", path, token, NULL, 200);
  items = json_incref(json_object_get(r, "items"));
  json_decref(r);
  return items;
}

static bool has_event(json_t *events, const char *to, const char *reason,
                      int attempt)
{
  json_t *e;
  size_t i;

  json_array_foreach (events, i, e) {
    if ((!to || str_is(e, "to", to)) &&
        (!reason || str_is(e, "reason", reason)) &&
        (attempt < 0 ||
         json_integer_value(json_object_get(e, "attempt")) == attempt))
      return true;
  }
  return false;
}

/* ---- what the emulator saw ---- */

static json_t *emu_requests(void)
{
  json_t *all = h_call(&emu, "GET", "/emulator/requests", NULL, NULL, 200);
  json_t *reqs = json_incref(json_object_get(all, "requests"));

  json_decref(all);
  ck_assert_ptr_nonnull(reqs);
  return reqs;
}

static void batch_id(const char *id, int attempt, char out[64])
{
  snprintf(out, 64, "gpugate-%.31s-a%d", id, attempt);
}

/* The recorded creates (POST …/jobs?job_id=batch) as a new array. */
static json_t *creates_of(json_t *reqs, const char *batch)
{
  json_t *out = json_array(), *r;
  size_t i;

  json_array_foreach (reqs, i, r) {
    const char *q = h_str(json_object_get(r, "query"), "job_id");
    const char *p = h_str(r, "path");
    if (str_is(r, "method", "POST") && p && ends_with(p, "/jobs") && q &&
        !strcmp(q, batch))
      json_array_append(out, r);
  }
  return out;
}

/* The one successful create of batch in region; asserts there is one. */
static json_t *the_create(json_t *reqs, const char *region, const char *batch)
{
  json_t *all = creates_of(reqs, batch), *r, *found = NULL;
  char path[200];
  size_t i;
  int ok = 0;

  snprintf(path, sizeof(path), "/v1/projects/%s/locations/%s/jobs", PROJECT,
           region);
  json_array_foreach (all, i, r) {
    if (json_integer_value(json_object_get(r, "status")) == 200) {
      ok++;
      found = r;
    }
  }
  ck_assert_msg(ok == 1, "%s: %d successful creates (of %zu)", batch, ok,
                json_array_size(all));
  ck_assert_msg(str_is(found, "path", path), "%s: created at %s, want %s",
                batch, h_str(found, "path"), path);
  json_incref(found);
  json_decref(all);
  return found;
}

/* The index of the first successful POST to path, or -1. */
static long long request_index(json_t *reqs, const char *method,
                               const char *path)
{
  json_t *r;
  size_t i;

  json_array_foreach (reqs, i, r) {
    if (str_is(r, "method", method) && str_is(r, "path", path) &&
        json_integer_value(json_object_get(r, "status")) == 200)
      return json_integer_value(json_object_get(r, "index"));
  }
  return -1;
}

static long long cancel_index(json_t *reqs, const char *region,
                              const char *batch)
{
  char path[200];

  snprintf(path, sizeof(path), "/v1/projects/%s/locations/%s/jobs/%s:cancel",
           PROJECT, region, batch);
  return request_index(reqs, "POST", path);
}

static long long create_index(json_t *reqs, const char *region,
                              const char *batch)
{
  json_t *all = creates_of(reqs, batch), *r;
  char path[200];
  long long at = -1;
  size_t i;

  snprintf(path, sizeof(path), "/v1/projects/%s/locations/%s/jobs", PROJECT,
           region);
  json_array_foreach (all, i, r) {
    if (at < 0 && str_is(r, "path", path) &&
        json_integer_value(json_object_get(r, "status")) == 200)
      at = json_integer_value(json_object_get(r, "index"));
  }
  json_decref(all);
  return at;
}

/* Parts of a recorded create's Job body (borrowed). */
static json_t *body_task_spec(json_t *create)
{
  return json_object_get(
      json_array_get(
          json_object_get(json_object_get(create, "body"), "taskGroups"), 0),
      "taskSpec");
}

static json_t *body_vars(json_t *create)
{
  return json_object_get(json_object_get(body_task_spec(create), "environment"),
                         "variables");
}

static json_t *body_policy(json_t *create)
{
  return json_object_get(
      json_array_get(
          json_object_get(json_object_get(json_object_get(create, "body"),
                                          "allocationPolicy"),
                          "instances"),
          0),
      "policy");
}

static const char *body_location(json_t *create)
{
  return json_string_value(json_array_get(
      json_object_get(
          json_object_get(json_object_get(json_object_get(create, "body"),
                                          "allocationPolicy"),
                          "location"),
          "allowedLocations"),
      0));
}

/* The Batch job's full name. */
static void batch_name(const char *region, const char *batch, char out[256])
{
  snprintf(out, 256, "projects/%s/locations/%s/jobs/%s", PROJECT, region,
           batch);
}

/* ======================================================================
 * 1. The Job body, field by field, for each provisioning model
 * ==================================================================== */

struct model_case {
  const char *queue, *flavor, *batch_model, *region, *machine, *accel,
      *reservation;
};

static const struct model_case models[4] = {
    {"reserved", "m-reserved", "RESERVATION_BOUND", "us-central1",
     "g2-standard-24", "nvidia-l4", "l4-reservation"},
    {"standard", "m-standard", "STANDARD", "us-east4", "a2-highgpu-2g",
     "nvidia-tesla-a100", NULL},
    {"spot", "m-spot", "SPOT", "europe-west4", "g2-standard-24", "nvidia-l4",
     NULL},
    {"flex", "m-flex", "FLEX_START", "us-central1", "a3-highgpu-2g",
     "nvidia-h100-80gb", NULL},
};

static void setup_models(void)
{
  const char *emu_env[] = {"EMU_RUN_MS=1500", "EMU_START_MS=50",
                           "EMU_CANCEL_MS=100", "EMU_FLEX_WAIT_MS=200", NULL};

  start_all("it_dispatch_body", "tests/fixtures/dispatch-models.json", emu_env,
            300, NULL);
  tok = h_token("team-x", "member", 3600);
}

static void check_labels(json_t *labels, const char *where, const char *id,
                         const struct model_case *m)
{
  char *dump = json_dumps(labels, JSON_COMPACT);

  ck_assert_msg(json_is_object(labels), "%s: no labels", where);
  ck_assert_msg(str_is(labels, "gpugate-team", "team-x") &&
                    str_is(labels, "gpugate-job", id) &&
                    str_is(labels, "gpugate-queue", m->queue) &&
                    str_is(labels, "gpugate-flavor", m->flavor) &&
                    str_is(labels, "cost-center", "ml-platform") &&
                    str_is(labels, "experiment", "sql-tune") &&
                    str_is(labels, "owner", "alice") &&
                    str_is(labels, "gpugate-deployment", "default") &&
                    json_object_size(labels) == 8,
                "%s labels: %s", where, dump);
  free(dump);
}

static void check_body(const struct model_case *m, const char *id,
                       json_t *create)
{
  json_t *body = json_object_get(create, "body"), *q;
  json_t *tg, *ts, *ctr, *vars, *cr, *ap, *inst, *pol, *acc, *want;
  char batch[64], ckpt[128];
  char *dump = json_dumps(body, JSON_COMPACT);

  batch_id(id, 1, batch);
  /* the call */
  ck_assert_str_eq(h_str(create, "method"), "POST");
  q = json_object_get(create, "query");
  ck_assert_str_eq(h_str(q, "job_id"), batch);
  ck_assert_msg(batch_id_ok(h_str(q, "job_id")), "bad job_id %s", batch);
  ck_assert_msg(is_uuid(h_str(q, "request_id")), "request_id %s",
                h_str(q, "request_id"));

  /* the task group */
  ck_assert_msg(json_array_size(json_object_get(body, "taskGroups")) == 1, "%s",
                dump);
  tg = json_array_get(json_object_get(body, "taskGroups"), 0);
  ck_assert_int_eq(num_of(tg, "taskCount"), 2);
  ck_assert_int_eq(num_of(tg, "parallelism"), 2);
  ts = json_object_get(tg, "taskSpec");
  ctr = json_object_get(json_array_get(json_object_get(ts, "runnables"), 0),
                        "container");
  ck_assert_msg(str_is(ctr, "imageUri", "us-docker.pkg.dev/p/r/trainer:1.2"),
                "%s", dump);
  want = json_pack("[s, s, s]", "python", "train.py", "--epochs=8");
  ck_assert_msg(json_equal(json_object_get(ctr, "commands"), want), "%s", dump);
  json_decref(want);
  vars = json_object_get(json_object_get(ts, "environment"), "variables");
  snprintf(ckpt, sizeof(ckpt), "gs://bucket/ckpt/body-%s/", m->queue);
  ck_assert_msg(str_is(vars, "GPUGATE_JOB_ID", id) &&
                    str_is(vars, "GPUGATE_ATTEMPT", "1") &&
                    str_is(vars, "GPUGATE_CHECKPOINT_URI", ckpt) &&
                    str_is(vars, "EPOCHS", "8") &&
                    str_is(vars, "EMU_RUN_MS", "30000"),
                "environment: %s", dump);
  cr = json_object_get(ts, "computeResource");
  ck_assert_int_eq(num_of(cr, "cpuMilli"), 2000);
  ck_assert_int_eq(num_of(cr, "memoryMib"), 10240);
  ck_assert_msg(str_is(ts, "maxRunDuration", "3600s"), "%s", dump);
  ck_assert_int_eq(num_of(ts, "maxRetryCount"), 2);

  /* the allocation policy */
  ap = json_object_get(body, "allocationPolicy");
  {
    char loc[64];
    snprintf(loc, sizeof(loc), "regions/%s", m->region);
    want = json_pack("[s]", loc);
    ck_assert_msg(json_equal(json_object_get(json_object_get(ap, "location"),
                                             "allowedLocations"),
                             want),
                  "allowedLocations: %s", dump);
    json_decref(want);
  }
  ck_assert_uint_eq(json_array_size(json_object_get(ap, "instances")), 1);
  inst = json_array_get(json_object_get(ap, "instances"), 0);
  ck_assert_msg(json_is_true(json_object_get(inst, "installGpuDrivers")), "%s",
                dump);
  pol = json_object_get(inst, "policy");
  ck_assert_msg(str_is(pol, "machineType", m->machine), "%s", dump);
  ck_assert_msg(str_is(pol, "provisioningModel", m->batch_model), "%s", dump);
  if (m->reservation)
    ck_assert_msg(str_is(pol, "reservation", m->reservation), "%s", dump);
  else
    ck_assert_msg(!json_object_get(pol, "reservation"), "%s", dump);
  ck_assert_uint_eq(json_array_size(json_object_get(pol, "accelerators")), 1);
  acc = json_array_get(json_object_get(pol, "accelerators"), 0);
  ck_assert_msg(str_is(acc, "type", m->accel), "%s", dump);
  ck_assert_int_eq(num_of(acc, "count"), 2);

  /* labels twice (the job's reach the billing export via the VMs) */
  check_labels(json_object_get(body, "labels"), "job", id, m);
  check_labels(json_object_get(ap, "labels"), "allocationPolicy", id, m);
  ck_assert_msg(str_is(json_object_get(body, "logsPolicy"), "destination",
                       "CLOUD_LOGGING"),
                "%s", dump);
  free(dump);
}

START_TEST(body_for_each_provisioning_model)
{
  char ids[4][32], body[1024];
  json_t *reqs;
  int i;

  for (i = 0; i < 4; i++) {
    snprintf(body, sizeof(body),
             "{\"name\": \"body-%s\", \"queue\": \"%s\", \"task_count\": 2, "
             "\"parallelism\": 2, \"task\": {\"image\": "
             "\"us-docker.pkg.dev/p/r/trainer:1.2\", \"commands\": "
             "[\"python\", \"train.py\", \"--epochs=8\"], \"env\": "
             "{\"EPOCHS\": \"8\", \"EMU_RUN_MS\": \"30000\"}, \"cpu_milli\": "
             "2000, \"memory_mib\": 10240, \"gpu\": 2}, "
             "\"max_run_duration_s\": 3600, \"max_retry_count\": 2, "
             "\"labels\": {\"experiment\": \"sql-tune\", \"owner\": "
             "\"alice\"}, \"checkpoint_uri\": \"gs://bucket/ckpt/body-%s/\"}",
             models[i].queue, models[i].queue, models[i].queue);
    submit("team-x", tok, body, ids[i]);
  }
  for (i = 0; i < 4; i++) {
    json_t *j = wait_state("team-x", tok, ids[i], "QUEUED|RUNNING", 20000);
    json_t *bj = json_object_get(j, "batch_job");
    char batch[64], name[256];

    batch_id(ids[i], 1, batch);
    batch_name(models[i].region, batch, name);
    ck_assert_msg(json_is_object(bj), "%s: no batch_job", ids[i]);
    ck_assert_str_eq(h_str(bj, "name"), name);
    ck_assert_msg(h_str(bj, "state") &&
                      state_in(h_str(bj, "state"), "QUEUED|SCHEDULED|RUNNING"),
                  "batch_job.state %s", h_str(bj, "state"));
    ck_assert_str_eq(h_str(json_object_get(j, "admission"), "flavor"),
                     models[i].flavor);
    ck_assert_str_eq(h_str(json_object_get(j, "admission"), "location"),
                     models[i].region);
    json_decref(j);
  }
  reqs = emu_requests();
  for (i = 0; i < 4; i++) {
    char batch[64];
    json_t *create;

    batch_id(ids[i], 1, batch);
    create = the_create(reqs, models[i].region, batch);
    check_body(&models[i], ids[i], create);
    json_decref(create);
  }
  json_decref(reqs);
}
END_TEST

/* ======================================================================
 * 2. The reference scenario on Batch
 * ==================================================================== */

static void setup_reference(void)
{
  const char *emu_env[] = {
      "EMU_RUN_MS=6000",
      "EMU_START_MS=50",
      "EMU_CANCEL_MS=100",
      "EMU_FLEX_WAIT_MS=300",
      "EMU_CAPACITY=us-central1/RESERVATION_BOUND=64,us-central1/STANDARD=64,"
      "us-central1/SPOT=256,us-central1/FLEX_START=64",
      NULL};
  int i;

  start_all("it_dispatch_reference",
            "deploy/examples/reference-architecture.json", emu_env, 300, NULL);
  for (i = 0; i < 4; i++)
    team_tok[i] = h_token(teams[i], "member", 3600);
}

static void ref_submit(int team, const char *queue, const char *name,
                       const char *klass, long run_ms, char id[32])
{
  char body[768];

  snprintf(body, sizeof(body),
           "{\"name\": \"%s\", \"queue\": \"%s\", \"priority_class\": \"%s\", "
           "\"task_count\": 2, \"task\": {\"image\": "
           "\"us-docker.pkg.dev/p/r/trainer:1.2\", \"commands\": [\"python\", "
           "\"train.py\"], \"env\": {\"EMU_RUN_MS\": \"%ld\"}, \"cpu_milli\": "
           "2000, \"memory_mib\": 10240, \"gpu\": 2}}",
           name, queue, klass, run_ms);
  submit(teams[team], team_tok[team], body, id);
}

static char lp[16][32], hp[16][32], dws_id[32];
static int lp_team[16], hp_team[16];

static bool active(const char *state)
{
  return state && state_in(state, "ADMITTED|QUEUED|RUNNING");
}

/*
 * Whether the jobs show, per team, what the spec expects once the
 * high-priority jobs arrived: one on the reservation, one on on-demand, two
 * pending; and exactly one low-priority job evicted (attempt 2, PENDING).
 * evicted[t] receives that job's index into lp. Summary in why.
 */
static bool reclaimed(int evicted[4], char *why, size_t whylen)
{
  int t, k;
  bool ok = true;
  size_t used = 0;

  why[0] = '\0';
  for (t = 0; t < 4; t++) {
    int reserved = 0, on_demand = 0, pending = 0, requeued = 0;
    evicted[t] = -1;
    for (k = 0; k < 16; k++) {
      json_t *j;
      const char *st, *fl;
      if (hp_team[k] != t)
        continue;
      j = get_job(teams[t], team_tok[t], hp[k]);
      st = h_str(j, "state");
      fl = h_str(json_object_get(j, "admission"), "flavor");
      if (st && !strcmp(st, "PENDING"))
        pending++;
      else if (active(st) && fl && !strcmp(fl, "l4-reserved"))
        reserved++;
      else if (active(st) && fl && !strcmp(fl, "l4-on-demand"))
        on_demand++;
      json_decref(j);
    }
    for (k = 0; k < 16; k++) {
      json_t *j;
      if (lp_team[k] != t)
        continue;
      j = get_job(teams[t], team_tok[t], lp[k]);
      if (str_is(j, "state", "PENDING") &&
          json_integer_value(json_object_get(j, "attempt")) == 2) {
        requeued++;
        evicted[t] = k;
      }
      json_decref(j);
    }
    if (reserved != 1 || on_demand != 1 || pending != 2 || requeued != 1)
      ok = false;
    if (used < whylen)
      used +=
          (size_t)snprintf(why + used, whylen - used,
                           "%s: hp reserved %d on-demand %d pending %d, "
                           "lp requeued %d; ",
                           teams[t], reserved, on_demand, pending, requeued);
  }
  return ok;
}

START_TEST(reference_scenario_on_batch)
{
  int i, k, t, evicted[4];
  long long end;
  char why[1024];
  json_t *reqs, *ejobs, *creates, *v;
  const char *key;

  /* the shared DWS queue: a Flex Start Batch job */
  ref_submit(0, "dws", "dws-0", "default", 1500, dws_id);

  /* four low-priority jobs per team, round-robin: all sixteen run */
  for (i = 0, k = 0; i < 4; i++)
    for (t = 0; t < 4; t++, k++) {
      char name[16];
      snprintf(name, sizeof(name), "lp-%d", i);
      lp_team[k] = t;
      ref_submit(t, "lp", name, "default", 9000, lp[k]);
    }
  for (k = 0; k < 16; k++) {
    json_t *j = wait_state(teams[lp_team[k]], team_tok[lp_team[k]], lp[k],
                           "QUEUED|RUNNING", 15000);
    char batch[64], name[256];
    batch_id(lp[k], 1, batch);
    batch_name("us-central1", batch, name);
    ck_assert_str_eq(h_str(json_object_get(j, "batch_job"), "name"), name);
    json_decref(j);
  }
  for (t = 0; t < 4; t++) {
    int reserved = 0, spot = 0;
    for (k = 0; k < 16; k++) {
      json_t *j;
      const char *fl;
      if (lp_team[k] != t)
        continue;
      j = get_job(teams[t], team_tok[t], lp[k]);
      fl = h_str(json_object_get(j, "admission"), "flavor");
      reserved += fl && !strcmp(fl, "l4-reserved");
      spot += fl && !strcmp(fl, "l4-spot");
      json_decref(j);
    }
    ck_assert_msg(reserved == 1 && spot == 3, "%s: %d reserved %d spot",
                  teams[t], reserved, spot);
  }

  /* four high-priority jobs per team */
  for (i = 0, k = 0; i < 4; i++)
    for (t = 0; t < 4; t++, k++) {
      char name[16];
      snprintf(name, sizeof(name), "hp-%d", i);
      hp_team[k] = t;
      ref_submit(t, "hp", name, "high", 6000, hp[k]);
    }
  end = h_now_ms() + 15000;
  while (!reclaimed(evicted, why, sizeof(why))) {
    ck_assert_msg(h_now_ms() < end, "after the high-priority jobs: %s", why);
    h_sleep_ms(100);
  }

  /* each evicted job: its attempt-1 Batch job was cancelled */
  reqs = emu_requests();
  for (t = 0; t < 4; t++) {
    const char *id = lp[evicted[t]];
    char batch[64];
    json_t *ev;

    batch_id(id, 1, batch);
    ck_assert_msg(cancel_index(reqs, "us-central1", batch) >= 0,
                  "no cancel of %s", batch);
    ev = events_of(teams[t], team_tok[t], id);
    ck_assert_msg(has_event(ev, "EVICTING", "Reclaimed", 1) &&
                      has_event(ev, "PENDING", NULL, 2),
                  "%s: events lack the eviction", id);
    json_decref(ev);
  }
  json_decref(reqs);

  /* everything finishes; the evicted jobs ran again as attempt 2 */
  end = h_now_ms() + 60000;
  for (k = 0; k < 33; k++) {
    int team = k < 16 ? lp_team[k] : k < 32 ? hp_team[k - 16] : 0;
    const char *id = k < 16 ? lp[k] : k < 32 ? hp[k - 16] : dws_id;
    long left = (long)(end - h_now_ms());
    json_t *j = wait_state(teams[team], team_tok[team], id,
                           "SUCCEEDED|FAILED|CANCELLED", left > 0 ? left : 1);
    ck_assert_msg(str_is(j, "state", "SUCCEEDED"), "%s ended %s (%s)", id,
                  h_str(j, "state"), h_str(j, "reason"));
    json_decref(j);
  }
  reqs = emu_requests();
  for (t = 0; t < 4; t++) {
    const char *id = lp[evicted[t]];
    json_t *j = get_job(teams[t], team_tok[t], id), *create;
    char batch[64], name[256];
    long long attempt = json_integer_value(json_object_get(j, "attempt"));

    ck_assert_msg(attempt >= 2, "%s: attempt %lld", id, attempt);
    batch_id(id, (int)attempt, batch);
    batch_name("us-central1", batch, name);
    ck_assert_str_eq(h_str(json_object_get(j, "batch_job"), "name"), name);
    batch_id(id, 2, batch);
    create = the_create(reqs, "us-central1", batch);
    ck_assert_msg(str_is(body_vars(create), "GPUGATE_ATTEMPT", "2"),
                  "%s: GPUGATE_ATTEMPT %s", batch,
                  h_str(body_vars(create), "GPUGATE_ATTEMPT"));
    json_decref(create);
    json_decref(j);
  }

  /* the DWS job went to Batch as FLEX_START */
  {
    char batch[64];
    json_t *create, *pol;
    batch_id(dws_id, 1, batch);
    create = the_create(reqs, "us-central1", batch);
    pol = body_policy(create);
    ck_assert_msg(str_is(pol, "provisioningModel", "FLEX_START"),
                  "dws provisioningModel %s", h_str(pol, "provisioningModel"));
    json_decref(create);
  }
  json_decref(reqs);

  /* exactly one create per Batch job: 16 + 16 + 4 requeued + 1 DWS */
  ejobs = h_call(&emu, "GET", "/emulator/jobs", NULL, NULL, 200);
  creates = json_object_get(ejobs, "creates");
  json_object_foreach (creates, key, v) {
    ck_assert_msg(json_integer_value(v) == 1, "%s created %lld times", key,
                  (long long)json_integer_value(v));
  }
  ck_assert_msg(json_object_size(creates) >= 37, "%zu Batch jobs",
                json_object_size(creates));
  for (k = 0; k < 32; k++) {
    char batch[64], name[256];
    batch_id(k < 16 ? lp[k] : hp[k - 16], 1, batch);
    batch_name("us-central1", batch, name);
    ck_assert_msg(json_object_get(creates, name) != NULL, "%s never created",
                  name);
  }
  json_decref(ejobs);
}
END_TEST

/* ======================================================================
 * 3. DWS: Flex Start failover after max_wait_s
 * ==================================================================== */

static void setup_dws(void)
{
  const char *emu_env[] = {
      "EMU_RUN_MS=1500",
      "EMU_START_MS=50",
      "EMU_CANCEL_MS=100",
      "EMU_FLEX_WAIT_MS=200",
      "EMU_CAPACITY=us-central1/FLEX_START=0,europe-west4/FLEX_START=20",
      NULL};

  start_all("it_dispatch_dws", "tests/fixtures/dispatch-dws.json", emu_env, 300,
            NULL);
  tok = h_token("team-x", "member", 3600);
}

START_TEST(flex_start_fails_over_to_the_next_location)
{
  char id[32], a1[64], a2[64], name[256];
  long long end, c1 = -1, cancel = -1, c2 = -1;
  json_t *reqs = NULL, *j, *ev, *create, *pol, *ejobs, *e;
  size_t i;

  submit("team-x", tok,
         "{\"name\": \"dws-failover\", \"queue\": \"dws\", \"task_count\": 2, "
         "\"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\", "
         "\"cpu_milli\": 2000, \"memory_mib\": 10240, \"gpu\": 2}}",
         id);
  batch_id(id, 1, a1);
  batch_id(id, 2, a2);

  /* first us-central1, where Flex Start never gets capacity */
  end = h_now_ms() + 10000;
  while (c1 < 0) {
    ck_assert_msg(h_now_ms() < end, "no create of %s", a1);
    h_sleep_ms(100);
    json_decref(reqs);
    reqs = emu_requests();
    c1 = create_index(reqs, "us-central1", a1);
  }
  create = the_create(reqs, "us-central1", a1);
  pol = body_policy(create);
  ck_assert_str_eq(h_str(pol, "provisioningModel"), "FLEX_START");
  json_decref(create);

  /* after max_wait_s (2 s): cancel a1, create a2 in europe-west4 */
  end = h_now_ms() + 10000;
  while (cancel < 0 || c2 < 0) {
    ck_assert_msg(
        h_now_ms() < end, "within 10 s: cancel of %s %s, create of %s %s", a1,
        cancel < 0 ? "missing" : "seen", a2, c2 < 0 ? "missing" : "seen");
    h_sleep_ms(100);
    json_decref(reqs);
    reqs = emu_requests();
    cancel = cancel_index(reqs, "us-central1", a1);
    c2 = create_index(reqs, "europe-west4", a2);
  }
  ck_assert_msg(c1 < cancel && cancel < c2,
                "order: create a1 %lld, cancel a1 %lld, create a2 %lld", c1,
                cancel, c2);
  create = the_create(reqs, "europe-west4", a2);
  ck_assert_msg(str_is(body_vars(create), "GPUGATE_ATTEMPT", "2"),
                "GPUGATE_ATTEMPT %s",
                h_str(body_vars(create), "GPUGATE_ATTEMPT"));
  ck_assert_str_eq(body_location(create), "regions/europe-west4");
  ck_assert_str_eq(h_str(body_policy(create), "provisioningModel"),
                   "FLEX_START");
  json_decref(create);
  ck_assert_int_eq(create_index(reqs, "europe-west4", a1), -1);
  json_decref(reqs);

  /* it runs there and succeeds */
  j = wait_state("team-x", tok, id, "SUCCEEDED|FAILED|CANCELLED", 15000);
  ck_assert_str_eq(h_str(j, "state"), "SUCCEEDED");
  ck_assert_int_eq(json_integer_value(json_object_get(j, "attempt")), 2);
  ck_assert_str_eq(h_str(json_object_get(j, "admission"), "location"),
                   "europe-west4");
  batch_name("europe-west4", a2, name);
  ck_assert_str_eq(h_str(json_object_get(j, "batch_job"), "name"), name);
  json_decref(j);

  ev = events_of("team-x", tok, id);
  ck_assert_msg(has_event(ev, "ADMITTED", "FlexStartWaitExceeded", -1),
                "no FlexStartWaitExceeded event");
  json_decref(ev);

  /* the emulator's view: a1 cancelled in us-central1, a2 done elsewhere */
  ejobs = h_call(&emu, "GET", "/emulator/jobs", NULL, NULL, 200);
  json_array_foreach (json_object_get(ejobs, "jobs"), i, e) {
    if (str_is(e, "jobId", a1)) {
      ck_assert_str_eq(h_str(e, "location"), "us-central1");
      ck_assert_msg(
          state_in(h_str(e, "state"), "CANCELLATION_IN_PROGRESS|CANCELLED"),
          "a1 %s", h_str(e, "state"));
    } else if (str_is(e, "jobId", a2)) {
      ck_assert_str_eq(h_str(e, "location"), "europe-west4");
      ck_assert_str_eq(h_str(e, "provisioningModel"), "FLEX_START");
      ck_assert_str_eq(h_str(e, "state"), "SUCCEEDED");
    }
  }
  json_decref(ejobs);
}
END_TEST

/* ======================================================================
 * 4. Pub/Sub push with the status sync off
 * ==================================================================== */

static void setup_push(void)
{
  /* RUNNING comes 300 ms after the create, well after gpugate recorded the
   * Batch job: a push for a job not yet recorded is acknowledged and lost */
  const char *emu_env[] = {"EMU_RUN_MS=1500", "EMU_START_MS=300",
                           "EMU_CANCEL_MS=100", NULL};
  char env_secret[128];
  const char *gp_env[] = {env_secret, NULL};

  h_write_temp("push", PUSH_SECRET "\n", secret_file, sizeof(secret_file));
  snprintf(env_secret, sizeof(env_secret), "GPUGATE_PUBSUB_PUSH_SECRET_FILE=%s",
           secret_file);
  start_all("it_dispatch_push", "tests/fixtures/dispatch-models.json", emu_env,
            600000, gp_env);
  tok = h_token("team-x", "member", 3600);
}

static const char envelope_unknown[] =
    "{\"message\": {\"attributes\": {\"Type\": \"JOB_STATE_CHANGED\", "
    "\"JobName\": \"projects/test-project/locations/us-east4/jobs/"
    "gpugate-nosuchjob-a1\", \"JobUID\": \"gpugate-nosuchjob-a1-0000\", "
    "\"NewJobState\": \"RUNNING\", \"Origin\": \"test\"}, \"data\": \"e30=\", "
    "\"messageId\": \"1\", \"publishTime\": \"2026-01-01T00:00:00Z\"}, "
    "\"subscription\": \"projects/test-project/subscriptions/gpugate\"}";

static void notify(const char *query, const char *auth, const char *body,
                   long want, bool problem)
{
  char path[160], hdr[160];
  const char *headers[] = {hdr, NULL};
  struct h_resp r;

  snprintf(path, sizeof(path), "/v1/batch/notifications%s", query);
  if (auth)
    snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", auth);
  ck_assert_int_eq(
      h_request(&srv, "POST", path, NULL, body, auth ? headers : NULL, &r), 0);
  ck_assert_msg(r.status == want, "POST %s (auth %s): %ld %s", path,
                auth ? auth : "-", r.status, r.body ? r.body : "");
  if (problem)
    ck_assert_msg(h_is_problem(&r, want, NULL), "not problem+json: %s",
                  r.body ? r.body : "");
  h_resp_free(&r);
}

START_TEST(push_notifications_move_jobs_without_sync)
{
  char cfg[512], id[32];
  json_t *r, *j, *reqs, *e, *health;
  long long start, end;
  bool saw_running = false;
  size_t i;

  /* the shared secret: as ?token= only (a bearer is an OIDC token) */
  notify("?token=wrong-secret", NULL, envelope_unknown, 401, true);
  notify("", "wrong-secret", envelope_unknown, 401, true);
  notify("", NULL, envelope_unknown, 401, true);
  notify("?token=", NULL, envelope_unknown, 401, true);
  notify("?token=" PUSH_SECRET, NULL, envelope_unknown, 204, false);
  notify("", PUSH_SECRET, envelope_unknown, 401, true);
  /* not a push envelope: acknowledged, never redelivered */
  notify("?token=" PUSH_SECRET, NULL, "{\"subscription\": \"x\"}", 204, false);

  snprintf(cfg, sizeof(cfg),
           "{\"EMU_PUSH_URL\": \"http://127.0.0.1:%u/v1/batch/"
           "notifications?token=%s\"}",
           srv.port, PUSH_SECRET);
  r = h_call(&emu, "POST", "/emulator/config", NULL, cfg, 200);
  ck_assert_msg(h_str(r, "EMU_PUSH_URL") &&
                    strstr(h_str(r, "EMU_PUSH_URL"), "/v1/batch/notifications"),
                "EMU_PUSH_URL not set");
  json_decref(r);

  start = h_now_ms();
  submit("team-x", tok,
         "{\"name\": \"pushed\", \"queue\": \"standard\", \"task_count\": 2, "
         "\"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\", "
         "\"cpu_milli\": 2000, \"memory_mib\": 10240, \"gpu\": 2}}",
         id);
  end = start + 10000;
  for (;;) {
    j = get_job("team-x", tok, id);
    if (str_is(j, "state", "RUNNING"))
      saw_running = true;
    if (state_in(h_str(j, "state"), "SUCCEEDED|FAILED|CANCELLED"))
      break;
    ck_assert_msg(h_now_ms() < end, "still %s after 10 s (sync is off)",
                  h_str(j, "state"));
    json_decref(j);
    h_sleep_ms(25);
  }
  ck_assert_str_eq(h_str(j, "state"), "SUCCEEDED");
  ck_assert_str_eq(h_str(json_object_get(j, "batch_job"), "state"),
                   "SUCCEEDED");
  json_decref(j);
  ck_assert_msg(saw_running, "RUNNING was never visible");
  j = events_of("team-x", tok, id);
  ck_assert_msg(has_event(j, "RUNNING", NULL, 1) &&
                    has_event(j, "SUCCEEDED", NULL, 1),
                "events lack RUNNING/SUCCEEDED");
  json_decref(j);

  /* no list call reached Batch: the states came by push */
  reqs = emu_requests();
  json_array_foreach (reqs, i, e) {
    const char *p = h_str(e, "path");
    ck_assert_msg(!(str_is(e, "method", "GET") && p && ends_with(p, "/jobs")),
                  "the sync listed %s", p);
  }
  json_decref(reqs);
  /* the emulator counts a push delivered when gpugate's answer is back,
   * which can be just after gpugate shows the state it applied */
  end = h_now_ms() + 30000;
  for (;;) {
    health = h_call(&emu, "GET", "/emulator/healthz", NULL, NULL, 200);
    if (json_integer_value(json_object_get(json_object_get(health, "pushes"),
                                           "delivered")) >= 4 ||
        h_now_ms() > end)
      break;
    json_decref(health);
    h_sleep_ms(25);
  }
  ck_assert_int_ge(json_integer_value(json_object_get(
                       json_object_get(health, "pushes"), "delivered")),
                   4);
  ck_assert_int_eq(json_integer_value(json_object_get(
                       json_object_get(health, "pushes"), "failed")),
                   0);
  json_decref(health);
}
END_TEST

/* ======================================================================
 * 5. At a real Batch's latency: many calls in flight
 * ==================================================================== */

#define LAT_JOBS 40
#define LAT_CANCELS 5
/* every create 300 ms (no spread: the test does not depend on a draw) */
#define LAT_SPEC                                                               \
  "create:300,get:40/120,list:60/200,cancel:150/400,delete:150/400"

static void setup_latency(void)
{
  const char *emu_env[] = {"EMU_LATENCY_MS=" LAT_SPEC, "EMU_RUN_MS=600000",
                           "EMU_START_MS=50", "EMU_CANCEL_MS=100", NULL};

  start_all("it_dispatch_latency", "tests/fixtures/dispatch-latency.json",
            emu_env, 300, NULL);
  tok = h_token("team-x", "member", 3600);
}

/* The Batch job (from GET /emulator/jobs, borrowed) named batch, or NULL. */
static json_t *emu_job(json_t *jobs, const char *batch)
{
  json_t *j;
  size_t i;

  json_array_foreach (json_object_get(jobs, "jobs"), i, j) {
    if (str_is(j, "jobId", batch))
      return j;
  }
  return NULL;
}

/* Submit n 1-CPU jobs named prefix-<i> to the held queue "lat" (ids may
 * be NULL), then release the queue: one cycle admits them all. */
static void submit_held_then_release(const char *prefix, int n, char (*ids)[32])
{
  char body[512], id[32];
  char *admin = h_token(NULL, "admin", 3600);
  int i;

  for (i = 0; i < n; i++) {
    snprintf(body, sizeof(body),
             "{\"name\": \"%s-%d\", \"queue\": \"lat\", \"task_count\": 1, "
             "\"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\", "
             "\"cpu_milli\": 1000, \"memory_mib\": 1024}}",
             prefix, i);
    submit("team-x", tok, body, ids ? ids[i] : id);
  }
  json_decref(
      h_call(&srv, "PUT", "/v1/cluster-queues/cq-lat", admin,
             "{\"stop_policy\": \"None\", \"flavors\": [{\"name\": "
             "\"lat-cpu\", \"resources\": {\"cpu_milli\": {\"nominal\": "
             "1000000}, \"memory_mib\": {\"nominal\": 10000000}}}]}",
             200));
  free(admin);
}

START_TEST(dispatch_keeps_many_calls_in_flight)
{
  char ids[LAT_JOBS][32], path[128], batch[64], sql[256];
  char name[256];
  char *admin = h_token(NULL, "admin", 3600);
  json_t *r, *health, *jobs, *reqs, *ej;
  long long t0, most, created;
  struct h_resp m;
  PGconn *pg;
  int i;

  /* the emulator takes 300 ms for each create: one call at a time per
   * dispatcher thread (4) would need 40 × 0.3 / 4 = 3 s */
  r = h_call(&emu, "GET", "/emulator/config", NULL, NULL, 200);
  ck_assert_str_eq(h_str(r, "EMU_LATENCY_MS"), LAT_SPEC);
  json_decref(r);
  /* a bad spec is refused, naming the item, and changes nothing */
  ck_assert_int_eq(h_request_raw(&emu, "POST", "/emulator/config", NULL,
                                 "{\"EMU_LATENCY_MS\": \"create:300/100\"}",
                                 strlen("{\"EMU_LATENCY_MS\": "
                                        "\"create:300/100\"}"),
                                 NULL, &m),
                   0);
  ck_assert_int_eq(m.status, 400);
  ck_assert_msg(str_is(json_object_get(m.json, "error"), "message",
                       "EMU_LATENCY_MS: \"create:300/100\": the p99 is "
                       "below the median"),
                "%s", m.body ? m.body : "");
  h_resp_free(&m);
  r = h_call(&emu, "GET", "/emulator/config", NULL, NULL, 200);
  ck_assert_str_eq(h_str(r, "EMU_LATENCY_MS"), LAT_SPEC);
  json_decref(r);
  t0 = h_now_ms();
  submit_held_then_release("lat", LAT_JOBS, ids);
  /* a user's cancel, while the job's create may be under way, wins */
  for (i = 0; i < LAT_CANCELS; i++) {
    snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%.31s/cancel", ids[i]);
    json_decref(h_call(&srv, "POST", path, tok, NULL, 200));
  }
  for (i = 0; i < LAT_JOBS; i++)
    json_decref(wait_state("team-x", tok, ids[i],
                           i < LAT_CANCELS ? "CANCELLED" : "QUEUED|RUNNING",
                           30000));
  fprintf(stderr,
          "latency: %d jobs submitted, released at once and created (%d "
          "cancelled) in %.1f s\n",
          LAT_JOBS - LAT_CANCELS, LAT_CANCELS,
          (double)(h_now_ms() - t0) / 1000.0);

  /* many creates were under way at once (the emulator counts them) */
  health = h_call(&emu, "GET", "/emulator/healthz", NULL, NULL, 200);
  most = json_integer_value(
      json_object_get(json_object_get(health, "maxInFlight"), "create"));
  json_decref(health);
  fprintf(stderr, "latency: at most %lld creates under way at once\n", most);
  ck_assert_msg(most >= 16,
                "at most %lld creates were under way at once, want >= 16 "
                "(4 dispatcher threads one call each would give 4)",
                most);

  /* each running job's Batch job was created exactly once */
  reqs = emu_requests();
  jobs = h_emu_get(&emu, "/emulator/jobs");
  pg = h_db_connect(db_url);
  ck_assert_int_eq(PQstatus(pg), CONNECTION_OK);
  for (i = LAT_CANCELS; i < LAT_JOBS; i++) {
    batch_id(ids[i], 1, batch);
    batch_name("us-central1", batch, name);
    json_decref(the_create(reqs, "us-central1", batch));
    ck_assert_int_eq(json_integer_value(json_object_get(
                         json_object_get(jobs, "creates"), name)),
                     1);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM job_events WHERE job_id = '%.31s' AND "
             "reason = 'BatchJobCreated'",
             ids[i]);
    ck_assert_msg(h_db_int(pg, sql) == 1, "%s: not one BatchJobCreated event",
                  ids[i]);
  }
  /* a cancelled job's Batch job, if its create went out, is cancelled */
  for (i = 0; i < LAT_CANCELS; i++) {
    long long end = h_now_ms() + 15000;
    batch_id(ids[i], 1, batch);
    batch_name("us-central1", batch, name);
    ck_assert_int_le(json_integer_value(json_object_get(
                         json_object_get(jobs, "creates"), name)),
                     1);
    for (;;) {
      json_t *now = h_emu_get(&emu, "/emulator/jobs");
      ej = emu_job(now, batch);
      if (!ej ||
          state_in(h_str(ej, "state"), "CANCELLED|DELETION_IN_PROGRESS")) {
        json_decref(now);
        break;
      }
      ck_assert_msg(h_now_ms() < end, "%s still %s in Batch after its cancel",
                    batch, h_str(ej, "state"));
      json_decref(now);
      h_sleep_ms(100);
    }
  }
  json_decref(jobs);
  json_decref(reqs);
  PQfinish(pg);

  /* admission to creation is measured */
  ck_assert_int_eq(
      h_request_raw(&srv, "GET", "/metrics", admin, NULL, 0, NULL, &m), 0);
  ck_assert_int_eq(m.status, 200);
  {
    const char *p = strstr(m.body ? m.body : "",
                           "gpugate_batch_admission_to_create_seconds_count ");
    ck_assert_msg(p, "no admission-to-create histogram on /metrics");
    created = strtoll(p + strlen("gpugate_batch_admission_to_create_seconds_"
                                 "count "),
                      NULL, 10);
    ck_assert_int_ge(created, LAT_JOBS - LAT_CANCELS);
  }
  h_resp_free(&m);
  free(admin);
}
END_TEST

/* A stop while creates are under way: they end and are recorded. */
#define DRAIN_JOBS 20

static void setup_drain(void)
{
  const char *emu_env[] = {"EMU_LATENCY_MS=create:800", "EMU_RUN_MS=600000",
                           NULL};

  start_all("it_dispatch_drain", "tests/fixtures/dispatch-latency.json",
            emu_env, 300, NULL);
  tok = h_token("team-x", "member", 3600);
}

START_TEST(stop_records_the_calls_under_way)
{
  char sql[400];
  json_t *health, *jobs, *j;
  long long under_way = 0, end, created;
  PGconn *pg;
  size_t i;

  submit_held_then_release("drain", DRAIN_JOBS, NULL);
  /* each create takes 0.8 s at Batch: stop while several are under way */
  end = h_now_ms() + 20000;
  while (under_way < 4) {
    ck_assert_msg(h_now_ms() < end, "no creates under way after 20 s");
    health = h_call(&emu, "GET", "/emulator/healthz", NULL, NULL, 200);
    under_way = json_integer_value(
        json_object_get(json_object_get(health, "inFlight"), "create"));
    json_decref(health);
    if (under_way < 4)
      h_sleep_ms(20);
  }
  ck_assert_msg(h_server_kill(&srv, SIGTERM) == 0,
                "gpugate did not stop within 10 s; see %s", srv.log);

  /* every Batch job a create made is recorded: the job names it, with
   * one BatchJobCreated event; the rows whose calls were not made wait,
   * unclaimed, for the next dispatcher */
  pg = h_db_connect(db_url);
  ck_assert_int_eq(PQstatus(pg), CONNECTION_OK);
  jobs = h_emu_get(&emu, "/emulator/jobs");
  created = (long long)json_array_size(json_object_get(jobs, "jobs"));
  ck_assert_msg(created >= under_way, "%lld Batch jobs, %lld were under way",
                created, under_way);
  json_array_foreach (json_object_get(jobs, "jobs"), i, j) {
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM jobs WHERE batch_job_name = '%.200s' AND "
             "state IN ('QUEUED', 'RUNNING')",
             h_str(j, "name"));
    ck_assert_msg(h_db_int(pg, sql) == 1, "%s was created but not recorded",
                  h_str(j, "name"));
  }
  ck_assert_int_eq(h_db_int(pg, "SELECT count(*) FROM job_events WHERE "
                                "reason = 'BatchJobCreated'"),
                   created);
  ck_assert_int_eq(
      h_db_int(pg, "SELECT count(*) FROM batch_ops WHERE claimed_by IS NOT "
                   "NULL"),
      0);
  ck_assert_int_eq(h_db_int(pg, "SELECT count(*) FROM batch_ops"),
                   DRAIN_JOBS - created);
  json_decref(jobs);
  PQfinish(pg);
}
END_TEST

Suite *dispatch_suite(void)
{
  Suite *s = suite_create("dispatch");
  TCase *body = tcase_create("body");
  TCase *ref = tcase_create("reference");
  TCase *dws = tcase_create("dws");
  TCase *push = tcase_create("push");
  TCase *latency = tcase_create("latency");
  TCase *drain = tcase_create("drain");

  tcase_add_unchecked_fixture(body, setup_models, teardown);
  tcase_set_timeout(body, 120);
  tcase_add_test(body, body_for_each_provisioning_model);
  suite_add_tcase(s, body);

  tcase_add_unchecked_fixture(ref, setup_reference, teardown);
  tcase_set_timeout(ref, 180);
  tcase_add_test(ref, reference_scenario_on_batch);
  suite_add_tcase(s, ref);

  tcase_add_unchecked_fixture(dws, setup_dws, teardown);
  tcase_set_timeout(dws, 120);
  tcase_add_test(dws, flex_start_fails_over_to_the_next_location);
  suite_add_tcase(s, dws);

  tcase_add_unchecked_fixture(push, setup_push, teardown);
  tcase_set_timeout(push, 120);
  tcase_add_test(push, push_notifications_move_jobs_without_sync);
  suite_add_tcase(s, push);

  tcase_add_unchecked_fixture(latency, setup_latency, teardown);
  tcase_set_timeout(latency, 120);
  tcase_add_test(latency, dispatch_keeps_many_calls_in_flight);
  suite_add_tcase(s, latency);

  tcase_add_unchecked_fixture(drain, setup_drain, teardown);
  tcase_set_timeout(drain, 120);
  tcase_add_test(drain, stop_records_the_calls_under_way);
  suite_add_tcase(s, drain);
  return s;
}
