/*
 * test_batch.c — batch/ as tables of cases, without network: the Batch jobId
 * format, the Job body of SPEC §4 field by field for every provisioning
 * model, labels, Batch → gpugate states, google.rpc.Status error parsing,
 * back-off bounds with a fixed seed, the token cache's refresh timing under
 * an injected clock and fetch function, and the RS256 JWT-bearer assertion
 * (decoded, and its signature verified with tests/fixtures/keys/rsa1.pub.pem).
 * The client's argument checks run too: they fail before any request.
 *
 * Fixtures are read relative to the current directory: run the tests from
 * the repository root.
 */
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "gcp/auth.h"
#include "gcp/batch_client.h"
#include "server/config.h"
#include "gcp/http.h"
#include "gcp/batch_job.h"

Suite *batch_suite(void);

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define SA_KEY "tests/fixtures/sa-key.json"
#define RSA1_PUB "tests/fixtures/keys/rsa1.pub.pem"
#define NOW ((time_t)1700000000)

/* ------------------------------------------------------------ helpers */

/*
 * The value at a path like "taskGroups[0].taskSpec.runnables[0].container"
 * (borrowed), or NULL when any step is missing.
 */
static json_t *at(json_t *root, const char *path)
{
  char key[128];
  const char *p = path;
  json_t *cur = root;

  while (cur && *p) {
    size_t n = strcspn(p, ".[");
    if (n > 0) {
      ck_assert_uint_lt(n, sizeof(key));
      memcpy(key, p, n);
      key[n] = '\0';
      cur = json_object_get(cur, key);
      p += n;
    }
    while (cur && *p == '[') {
      char *end;
      long i = strtol(p + 1, &end, 10);
      ck_assert_int_eq(*end, ']');
      cur = json_array_get(cur, (size_t)i);
      p = end + 1;
    }
    if (*p == '.')
      p++;
  }
  return cur;
}

static const char *str_at(json_t *root, const char *path)
{
  return json_string_value(at(root, path));
}

static json_int_t int_at(json_t *root, const char *path)
{
  json_t *v = at(root, path);
  ck_assert_msg(json_is_integer(v), "%s is not an integer", path);
  return json_integer_value(v);
}

/* Assert o's keys are exactly the space-separated list keys. */
static void keys_are(json_t *o, const char *keys, const char *what)
{
  char buf[512], *save = NULL, *k;
  size_t n = 0;

  ck_assert_msg(json_is_object(o), "%s is not an object", what);
  snprintf(buf, sizeof(buf), "%s", keys);
  for (k = strtok_r(buf, " ", &save); k; k = strtok_r(NULL, " ", &save)) {
    ck_assert_msg(json_object_get(o, k) != NULL, "%s lacks \"%s\"", what, k);
    n++;
  }
  ck_assert_msg(json_object_size(o) == n, "%s has %zu keys, expected %zu (%s)",
                what, json_object_size(o), n, keys);
}

static json_t *parse(const char *text)
{
  json_error_t err;
  json_t *j = json_loads(text, JSON_DECODE_ANY, &err);
  ck_assert_msg(j != NULL, "bad test JSON: %s", err.text);
  return j;
}

/* ------------------------------------------------------------- job ids */

static const struct id_case {
  const char *id;
  int attempt;
  size_t outlen;    /* 0 = 64 */
  const char *want; /* NULL = must fail */
} id_cases[] = {
    {"j-01jdq8m2v7x3k9", 1, 0, "gpugate-j-01jdq8m2v7x3k9-a1"},
    {"j-01jdq8m2v7x3k9", 2, 0, "gpugate-j-01jdq8m2v7x3k9-a2"},
    {"j-01jdq8m2v7x3k9", 10, 0, "gpugate-j-01jdq8m2v7x3k9-a10"},
    {"j-01jdq8m2v7x3k9", 100, 0, "gpugate-j-01jdq8m2v7x3k9-a100"},
    {"j-01jdq8m2v7x3k9", 2147483647, 0, "gpugate-j-01jdq8m2v7x3k9-a2147483647"},
    /* 8 + 52 + 3 = 63 characters: the longest allowed */
    {"j-0123456789012345678901234567890123456789012345678x", 1, 0,
     "gpugate-j-0123456789012345678901234567890123456789012345678x-a1"},
    /* 64 characters */
    {"j-0123456789012345678901234567890123456789012345678x", 10, 0, NULL},
    {"j-01234567890123456789012345678901234567890123456789", 100, 0, NULL},
    {"j-01jdq8m2v7x3k9", 0, 0, NULL},
    {"j-01jdq8m2v7x3k9", -1, 0, NULL},
    {"J-01JDQ8M2V7X3K9", 1, 0, NULL}, /* upper case is not lowered */
    {"j_01jdq8m2v7x3k9", 1, 0, NULL},
    {"j.01", 1, 0, NULL},
    {"j 01", 1, 0, NULL},
    {"", 1, 0, NULL},
    {NULL, 1, 0, NULL},
    {"j-01jdq8m2v7x3k9", 1, 27, NULL}, /* no room for the NUL */
    {"j-01jdq8m2v7x3k9", 1, 28, "gpugate-j-01jdq8m2v7x3k9-a1"},
};

START_TEST(job_id)
{
  const struct id_case *tc = &id_cases[_i];
  char out[128];
  size_t outlen = tc->outlen ? tc->outlen : 64;
  regex_t re;
  int rc;

  memset(out, 'x', sizeof(out));
  rc = batch_job_id(tc->id, tc->attempt, out, outlen);
  if (!tc->want) {
    ck_assert_int_eq(rc, -1);
    ck_assert_str_eq(out, "");
    return;
  }
  ck_assert_int_eq(rc, 0);
  ck_assert_str_eq(out, tc->want);
  ck_assert_uint_le(strlen(out), 63);
  ck_assert_int_eq(
      regcomp(&re, "^[a-z]([a-z0-9-]*[a-z0-9])?$", REG_EXTENDED | REG_NOSUB),
      0);
  ck_assert_int_eq(regexec(&re, out, 0, NULL, 0), 0);
  regfree(&re);
}
END_TEST

START_TEST(job_name)
{
  char out[128];

  ck_assert_int_eq(batch_job_name("p1", "us-central1",
                                  "gpugate-j-01jdq8m2v7x3k9-a1", out,
                                  sizeof(out)),
                   0);
  ck_assert_str_eq(out, "projects/p1/locations/us-central1/jobs/"
                        "gpugate-j-01jdq8m2v7x3k9-a1");
  ck_assert_int_eq(batch_job_name("p1", "us-central1", "x", out, 20), -1);
}
END_TEST

/* Names gpugate made, and names it did not (the orphan sweep's input). */
static const struct parse_case {
  const char *name, *id;
  int attempt, race_k, rc;
} parse_cases[] = {
    {"gpugate-j-01jdq8m2v7x3k9-a1", "j-01jdq8m2v7x3k9", 1, 0, 0},
    {"projects/p/locations/us-central1/jobs/gpugate-j-01jdq8m2v7x3k9-a12",
     "j-01jdq8m2v7x3k9", 12, 0, 0},
    {"gpugate-j-01jdq8m2v7x3k9-a3-r2", "j-01jdq8m2v7x3k9", 3, 2, 0},
    {"gpugate-j-abc-a2-r10", "j-abc", 2, 10, 0},
    {"gpugate-x-abar", NULL, 0, 0, -1},   /* issue 11's poison name */
    {"gpugate-j-abc-a0", NULL, 0, 0, -1}, /* attempts start at 1 */
    {"gpugate-j-abc-a01", NULL, 0, 0, -1},
    {"gpugate-j-abc-r1", NULL, 0, 0, -1},
    {"gpugate--a1", NULL, 0, 0, -1},
    {"gpugate-a1", NULL, 0, 0, -1},
    {"other-j-abc-a1", NULL, 0, 0, -1},
    {"gpugate-j-abc-a1-r0", NULL, 0, 0, -1}, /* r0: not a raced copy */
    {"gpugate-j-abc-a9999999", NULL, 0, 0, -1},
    {"", NULL, 0, 0, -1},
};

START_TEST(job_id_parse)
{
  const struct parse_case *tc = &parse_cases[_i];
  char id[32] = "";
  int attempt = -1, k = -1;

  ck_assert_msg(batch_job_id_parse(tc->name, id, sizeof(id), &attempt, &k) ==
                    tc->rc,
                "%s", tc->name);
  if (tc->rc == 0) {
    ck_assert_str_eq(id, tc->id);
    ck_assert_int_eq(attempt, tc->attempt);
    ck_assert_int_eq(k, tc->race_k);
  }
}
END_TEST

/* --------------------------------------------------------------- labels */

static const struct label_case {
  const char *in, *want;
} label_cases[] = {
    {"ml-research", "ml-research"},
    {"ML Research", "ml_research"},
    {"ML/Research.EU", "ml_research_eu"},
    {"team_a-1", "team_a-1"},
    {"caf\xc3\xa9", "caf_"}, /* one UTF-8 character, one '_' */
    {"\xe2\x82\xac"
     "100",
     "_100"}, /* euro sign */
    {"", ""},
    {"0123456789012345678901234567890123456789012345678901234567890123456789",
     "012345678901234567890123456789012345678901234567890123456789012"},
};

START_TEST(label_sanitize)
{
  const struct label_case *tc = &label_cases[_i];
  char out[64];

  ck_assert_uint_eq(batch_label_sanitize(tc->in, out, sizeof(out)),
                    strlen(tc->want));
  ck_assert_str_eq(out, tc->want);
}
END_TEST

START_TEST(label_keys)
{
  ck_assert(batch_label_key_ok("experiment"));
  ck_assert(batch_label_key_ok("a"));
  ck_assert(batch_label_key_ok("cost-center"));
  ck_assert(batch_label_key_ok("x_1-y"));
  ck_assert(batch_label_key_ok(
      "a12345678901234567890123456789012345678901234567890123456789012"));
  ck_assert(!batch_label_key_ok(
      "a123456789012345678901234567890123456789012345678901234567890123"));
  ck_assert(!batch_label_key_ok(""));
  ck_assert(!batch_label_key_ok(NULL));
  ck_assert(!batch_label_key_ok("1abc"));
  ck_assert(!batch_label_key_ok("-abc"));
  ck_assert(!batch_label_key_ok("Experiment"));
  ck_assert(!batch_label_key_ok("exp.name"));
}
END_TEST

/* ----------------------------------------------------------------- body */

/* The SPEC §3 example as handlers/jobs.c stores it. */
#define JOB_SPEC                                                               \
  "{\"name\": \"finetune-gemma-2b\", \"queue\": \"lp\","                       \
  " \"priority_class\": \"high\", \"task_count\": 2, \"parallelism\": 2,"      \
  " \"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\","              \
  " \"commands\": [\"python\", \"train.py\", \"--epochs=8\"],"                 \
  " \"env\": {\"EPOCHS\": \"8\"}, \"cpu_milli\": 2000, \"memory_mib\": "       \
  "10240, \"gpu\": 2},"                                                        \
  " \"max_run_duration_s\": 3600, \"max_retry_count\": 2,"                     \
  " \"locations\": [\"us-central1\", \"europe-west4\"],"                       \
  " \"labels\": {\"experiment\": \"sql-tune\"},"                               \
  " \"checkpoint_uri\": \"gs://bucket/ckpt/finetune-gemma-2b/\"}"

static const struct body_case {
  const char *name;
  const char *flavor;      /* flavor name */
  const char *flavor_spec; /* as handlers/flavors.c stores it */
  const char *model;       /* Batch provisioningModel expected */
  const char *machine;
  const char *reservation; /* expected in the policy, or NULL */
  const char *region;
  int attempt;
  long max_run_s;       /* input */
  const char *duration; /* expected maxRunDuration, NULL = absent */
} body_cases[] = {
    {"flex-start", "dws",
     "{\"provisioning_model\": \"FLEX_START\", \"machine_type\": "
     "\"g2-standard-24\", \"accelerator_type\": \"nvidia-l4\", "
     "\"gpus_per_vm\": "
     "2, \"locations\": [\"us-central1\"], \"reservation\": null, "
     "\"max_run_duration_s\": 604800, \"max_wait_s\": 7200}",
     "FLEX_START", "g2-standard-24", NULL, "us-central1", 1, 3600, "3600s"},
    {"spot", "l4-spot",
     "{\"provisioning_model\": \"SPOT\", \"machine_type\": \"g2-standard-24\", "
     "\"accelerator_type\": \"nvidia-l4\", \"gpus_per_vm\": 2, \"locations\": "
     "[\"us-central1\"], \"reservation\": null, \"max_run_duration_s\": null}",
     "SPOT", "g2-standard-24", NULL, "europe-west4", 2, 3600, "3600s"},
    {"standard", "l4-on-demand",
     "{\"provisioning_model\": \"STANDARD\", \"machine_type\": "
     "\"g2-standard-24\", \"accelerator_type\": \"nvidia-l4\", "
     "\"gpus_per_vm\": "
     "2, \"locations\": [\"us-central1\"], \"reservation\": null}",
     "STANDARD", "g2-standard-24", NULL, "us-central1", 10, 86400, "86400s"},
    {"reservation", "l4-reserved",
     "{\"provisioning_model\": \"RESERVATION\", \"machine_type\": "
     "\"g2-standard-24\", \"accelerator_type\": \"nvidia-l4\", "
     "\"gpus_per_vm\": "
     "2, \"locations\": [\"us-central1\"], \"reservation\": \"l4-res-1\"}",
     "RESERVATION_BOUND", "g2-standard-24", "l4-res-1", "us-central1", 100,
     3600, "3600s"},
    /* no limit given: the flavor's (Flex Start defaults to 7 days) */
    {"flex-start-flavor-limit", "dws",
     "{\"provisioning_model\": \"FLEX_START\", \"machine_type\": "
     "\"a2-highgpu-2g\", \"accelerator_type\": \"nvidia-tesla-a100\", "
     "\"gpus_per_vm\": 2, \"locations\": [\"us-central1\"], \"reservation\": "
     "null, \"max_run_duration_s\": 604800}",
     "FLEX_START", "a2-highgpu-2g", NULL, "us-central1", 1, 0, "604800s"},
    /* no limit anywhere: none sent */
    {"spot-no-limit", "l4-spot",
     "{\"provisioning_model\": \"SPOT\", \"machine_type\": \"g2-standard-24\", "
     "\"accelerator_type\": \"nvidia-l4\", \"gpus_per_vm\": 2, \"locations\": "
     "[\"us-central1\"], \"reservation\": null, \"max_run_duration_s\": null}",
     "SPOT", "g2-standard-24", NULL, "us-central1", 1, 0, NULL},
};

static void check_labels(json_t *labels, const char *where, const char *flavor)
{
  keys_are(labels,
           "experiment gpugate-team gpugate-job gpugate-queue gpugate-flavor "
           "cost-center",
           where);
  ck_assert_str_eq(str_at(labels, "experiment"), "sql-tune");
  ck_assert_str_eq(str_at(labels, "gpugate-team"), "team-a");
  ck_assert_str_eq(str_at(labels, "gpugate-job"), "j-01jdq8m2v7x3k9");
  ck_assert_str_eq(str_at(labels, "gpugate-queue"), "lp");
  ck_assert_str_eq(str_at(labels, "gpugate-flavor"), flavor);
  ck_assert_str_eq(str_at(labels, "cost-center"), "ml-research");
}

START_TEST(body_models)
{
  const struct body_case *tc = &body_cases[_i];
  json_t *job = parse(JOB_SPEC), *flavor = parse(tc->flavor_spec), *b;
  json_t *ts, *policy, *vars, *cmds;
  struct batch_job_input in = {.job_id = "j-01jdq8m2v7x3k9",
                               .attempt = tc->attempt,
                               .team = "team-a",
                               .queue = "lp",
                               .cost_center = "ml-research",
                               .region = tc->region,
                               .flavor = tc->flavor,
                               .flavor_spec = flavor,
                               .job_spec = job,
                               .max_run_duration_s = tc->max_run_s};
  char attempt[16], loc[64];

  b = batch_job_body(&in);
  ck_assert_msg(b != NULL, "%s: no body", tc->name);
  keys_are(b, "taskGroups allocationPolicy labels logsPolicy", "job");

  /* one task group */
  ck_assert_uint_eq(json_array_size(at(b, "taskGroups")), 1);
  keys_are(at(b, "taskGroups[0]"), "taskCount parallelism taskSpec",
           "taskGroups[0]");
  ck_assert_int_eq(int_at(b, "taskGroups[0].taskCount"), 2);
  ck_assert_int_eq(int_at(b, "taskGroups[0].parallelism"), 2);
  ts = at(b, "taskGroups[0].taskSpec");
  keys_are(ts,
           tc->duration ? "runnables environment computeResource "
                          "maxRunDuration maxRetryCount"
                        : "runnables environment computeResource "
                          "maxRetryCount",
           "taskSpec");
  ck_assert_uint_eq(json_array_size(at(ts, "runnables")), 1);
  keys_are(at(ts, "runnables[0]"), "container", "runnables[0]");
  keys_are(at(ts, "runnables[0].container"), "imageUri commands", "container");
  ck_assert_str_eq(str_at(ts, "runnables[0].container.imageUri"),
                   "us-docker.pkg.dev/p/r/trainer:1.2");
  cmds = at(ts, "runnables[0].container.commands");
  ck_assert_uint_eq(json_array_size(cmds), 3);
  ck_assert_str_eq(str_at(cmds, "[0]"), "python");
  ck_assert_str_eq(str_at(cmds, "[1]"), "train.py");
  ck_assert_str_eq(str_at(cmds, "[2]"), "--epochs=8");

  /* environment: the job's plus GPUGATE_* */
  keys_are(at(ts, "environment"), "variables", "environment");
  vars = at(ts, "environment.variables");
  keys_are(vars, "EPOCHS GPUGATE_JOB_ID GPUGATE_ATTEMPT GPUGATE_CHECKPOINT_URI",
           "variables");
  ck_assert_str_eq(str_at(vars, "EPOCHS"), "8");
  ck_assert_str_eq(str_at(vars, "GPUGATE_JOB_ID"), "j-01jdq8m2v7x3k9");
  snprintf(attempt, sizeof(attempt), "%d", tc->attempt);
  ck_assert_str_eq(str_at(vars, "GPUGATE_ATTEMPT"), attempt);
  ck_assert_str_eq(str_at(vars, "GPUGATE_CHECKPOINT_URI"),
                   "gs://bucket/ckpt/finetune-gemma-2b/");

  keys_are(at(ts, "computeResource"), "cpuMilli memoryMib", "computeResource");
  ck_assert_int_eq(int_at(ts, "computeResource.cpuMilli"), 2000);
  ck_assert_int_eq(int_at(ts, "computeResource.memoryMib"), 10240);
  if (tc->duration)
    ck_assert_str_eq(str_at(ts, "maxRunDuration"), tc->duration);
  else
    ck_assert_ptr_null(at(ts, "maxRunDuration"));
  ck_assert_int_eq(int_at(ts, "maxRetryCount"), 2);

  /* allocation policy */
  keys_are(at(b, "allocationPolicy"), "location instances labels",
           "allocationPolicy");
  keys_are(at(b, "allocationPolicy.location"), "allowedLocations", "location");
  ck_assert_uint_eq(
      json_array_size(at(b, "allocationPolicy.location.allowedLocations")), 1);
  snprintf(loc, sizeof(loc), "regions/%s", tc->region);
  ck_assert_str_eq(str_at(b, "allocationPolicy.location.allowedLocations[0]"),
                   loc);
  ck_assert_uint_eq(json_array_size(at(b, "allocationPolicy.instances")), 1);
  keys_are(at(b, "allocationPolicy.instances[0]"), "policy installGpuDrivers",
           "instances[0]");
  ck_assert(
      json_is_true(at(b, "allocationPolicy.instances[0].installGpuDrivers")));
  policy = at(b, "allocationPolicy.instances[0].policy");
  keys_are(policy,
           tc->reservation
               ? "machineType provisioningModel accelerators reservation"
               : "machineType provisioningModel accelerators",
           "policy");
  ck_assert_str_eq(str_at(policy, "machineType"), tc->machine);
  ck_assert_str_eq(str_at(policy, "provisioningModel"), tc->model);
  if (tc->reservation)
    ck_assert_str_eq(str_at(policy, "reservation"), tc->reservation);
  ck_assert_uint_eq(json_array_size(at(policy, "accelerators")), 1);
  keys_are(at(policy, "accelerators[0]"), "type count", "accelerators[0]");
  ck_assert_str_eq(str_at(policy, "accelerators[0].type"),
                   str_at(flavor, "accelerator_type"));
  ck_assert_int_eq(int_at(policy, "accelerators[0].count"), 2);

  /* labels in both places, and logs */
  check_labels(at(b, "labels"), "labels", tc->flavor);
  check_labels(at(b, "allocationPolicy.labels"), "allocationPolicy.labels",
               tc->flavor);
  keys_are(at(b, "logsPolicy"), "destination", "logsPolicy");
  ck_assert_str_eq(str_at(b, "logsPolicy.destination"), "CLOUD_LOGGING");

  /* the inputs are borrowed, not changed */
  ck_assert_uint_eq(
      json_object_size(json_object_get(json_object_get(job, "task"), "env")),
      1);
  json_decref(b);
  json_decref(job);
  json_decref(flavor);
}
END_TEST

#define SPOT_FLAVOR                                                            \
  "{\"provisioning_model\": \"SPOT\", \"machine_type\": \"g2-standard-24\", "  \
  "\"accelerator_type\": \"nvidia-l4\", \"gpus_per_vm\": 2, \"locations\": "   \
  "[\"us-central1\"], \"reservation\": null}"

/* Variants of the job spec: what changes in the body. */
START_TEST(body_variants)
{
  json_t *job = parse(JOB_SPEC), *flavor = parse(SPOT_FLAVOR), *b, *task;
  struct batch_job_input in = {.job_id = "j-01jdq8m2v7x3k9",
                               .attempt = 3,
                               .team = "team-a",
                               .queue = "lp",
                               .cost_center = NULL,
                               .region = "us-central1",
                               .flavor = "l4-spot",
                               .flavor_spec = flavor,
                               .job_spec = job,
                               .max_run_duration_s = 60};

  /* no checkpoint, no commands, no cost center, 1 GPU, parallelism 1 of 5,
   * labels that try to shadow gpugate's or break the rules */
  task = json_object_get(job, "task");
  json_object_set_new(job, "checkpoint_uri", json_null());
  json_object_set_new(task, "commands", json_array());
  json_object_set_new(task, "gpu", json_integer(1));
  json_object_set_new(json_object_get(task, "env"), "GPUGATE_JOB_ID",
                      json_string("forged"));
  json_object_set_new(job, "task_count", json_integer(5));
  json_object_set_new(job, "parallelism", json_integer(1));
  json_object_set_new(job, "max_retry_count", json_integer(0));
  json_object_set_new(json_object_get(job, "labels"), "gpugate-team",
                      json_string("team-b"));
  json_object_set_new(json_object_get(job, "labels"), "Bad", json_string("x"));
  json_object_set_new(json_object_get(job, "labels"), "owner",
                      json_string("Alice Smith"));
  b = batch_job_body(&in);
  ck_assert_ptr_nonnull(b);
  ck_assert_int_eq(int_at(b, "taskGroups[0].taskCount"), 5);
  ck_assert_int_eq(int_at(b, "taskGroups[0].parallelism"), 1);
  ck_assert_int_eq(int_at(b, "taskGroups[0].taskSpec.maxRetryCount"), 0);
  ck_assert_str_eq(str_at(b, "taskGroups[0].taskSpec.maxRunDuration"), "60s");
  keys_are(at(b, "taskGroups[0].taskSpec.runnables[0].container"), "imageUri",
           "container");
  keys_are(at(b, "taskGroups[0].taskSpec.environment.variables"),
           "EPOCHS GPUGATE_JOB_ID GPUGATE_ATTEMPT", "variables");
  ck_assert_str_eq(
      str_at(b, "taskGroups[0].taskSpec.environment.variables.GPUGATE_JOB_ID"),
      "j-01jdq8m2v7x3k9");
  ck_assert_str_eq(
      str_at(b, "taskGroups[0].taskSpec.environment.variables.GPUGATE_ATTEMPT"),
      "3");
  ck_assert_int_eq(
      int_at(b, "allocationPolicy.instances[0].policy.accelerators[0].count"),
      1);
  keys_are(at(b, "labels"),
           "experiment owner gpugate-team gpugate-job gpugate-queue "
           "gpugate-flavor",
           "labels");
  ck_assert_str_eq(str_at(b, "labels.gpugate-team"), "team-a");
  ck_assert_str_eq(str_at(b, "labels.owner"), "alice_smith");
  ck_assert(json_equal(at(b, "labels"), at(b, "allocationPolicy.labels")));
  json_decref(b);

  /* a cost center is sanitised to a label value */
  in.cost_center = "ML Research/EU";
  b = batch_job_body(&in);
  ck_assert_str_eq(str_at(b, "labels.cost-center"), "ml_research_eu");
  ck_assert_str_eq(str_at(b, "allocationPolicy.labels.cost-center"),
                   "ml_research_eu");
  json_decref(b);
  in.cost_center = "";
  b = batch_job_body(&in);
  ck_assert_ptr_null(at(b, "labels.cost-center"));
  ck_assert_ptr_null(at(b, "labels.gpugate-deployment"));
  json_decref(b);

  /* the deployment label (SPEC §8), on the job and its allocation policy,
   * which a job's own label of that name cannot override */
  in.deployment = "staging";
  json_object_set_new(json_object_get(job, "labels"), "gpugate-deployment",
                      json_string("production"));
  b = batch_job_body(&in);
  ck_assert_str_eq(str_at(b, "labels.gpugate-deployment"), "staging");
  ck_assert_str_eq(str_at(b, "allocationPolicy.labels.gpugate-deployment"),
                   "staging");
  json_decref(b);
  json_object_del(json_object_get(job, "labels"), "gpugate-deployment");
  in.deployment = NULL;

  /* a CPU-only task on a GPU flavor: no accelerators, drivers still on */
  json_object_set_new(task, "gpu", json_integer(0));
  b = batch_job_body(&in);
  ck_assert_ptr_null(
      at(b, "allocationPolicy.instances[0].policy.accelerators"));
  ck_assert(
      json_is_true(at(b, "allocationPolicy.instances[0].installGpuDrivers")));
  json_decref(b);

  /* a CPU flavor: no drivers */
  json_object_set_new(flavor, "accelerator_type", json_null());
  b = batch_job_body(&in);
  ck_assert(
      json_is_false(at(b, "allocationPolicy.instances[0].installGpuDrivers")));
  json_decref(b);

  /* parallelism absent: task_count */
  json_object_del(job, "parallelism");
  b = batch_job_body(&in);
  ck_assert_int_eq(int_at(b, "taskGroups[0].parallelism"), 5);
  json_decref(b);

  json_decref(job);
  json_decref(flavor);
}
END_TEST

/* Input batch_job_body() must refuse: {field, JSON value or NULL}. */
static const struct bad_body_case {
  const char *what;
  const char *flavor_key, *flavor_value; /* set in the flavor */
  const char *task_key, *task_value;     /* set in the task */
  const char *job_key, *job_value;       /* set in the job */
  const char *region;
  int attempt;
  const char *job_id;
} bad_body_cases[] = {
    {"reservation without name", "provisioning_model", "\"RESERVATION\"", NULL,
     NULL, NULL, NULL, "us-central1", 1, "j-1"},
    {"unknown model", "provisioning_model", "\"PREEMPTIBLE\"", NULL, NULL, NULL,
     NULL, "us-central1", 1, "j-1"},
    {"no machine type", "machine_type", "null", NULL, NULL, NULL, NULL,
     "us-central1", 1, "j-1"},
    {"GPUs without accelerator", "accelerator_type", "null", NULL, NULL, NULL,
     NULL, "us-central1", 1, "j-1"},
    {"no image", NULL, NULL, "image", "null", NULL, NULL, "us-central1", 1,
     "j-1"},
    {"empty image", NULL, NULL, "image", "\"\"", NULL, NULL, "us-central1", 1,
     "j-1"},
    {"no cpu", NULL, NULL, "cpu_milli", "0", NULL, NULL, "us-central1", 1,
     "j-1"},
    {"parallelism over task_count", NULL, NULL, NULL, NULL, "parallelism", "3",
     "us-central1", 1, "j-1"},
    {"zero tasks", NULL, NULL, NULL, NULL, "task_count", "0", "us-central1", 1,
     "j-1"},
    {"upper-case region", NULL, NULL, NULL, NULL, NULL, NULL, "US-central1", 1,
     "j-1"},
    {"region with a slash", NULL, NULL, NULL, NULL, NULL, NULL,
     "regions/us-central1", 1, "j-1"},
    {"empty region", NULL, NULL, NULL, NULL, NULL, NULL, "", 1, "j-1"},
    {"attempt 0", NULL, NULL, NULL, NULL, NULL, NULL, "us-central1", 0, "j-1"},
    {"upper-case id", NULL, NULL, NULL, NULL, NULL, NULL, "us-central1", 1,
     "J-1"},
};

/* Optional settings: the Pub/Sub topic for state notifications and the
 * service account of the VMs appear only when configured. */
START_TEST(body_notifications_and_account)
{
  json_t *job = parse(JOB_SPEC), *flavor = parse(SPOT_FLAVOR), *b;
  struct batch_job_input in = {.job_id = "j-01jdq8m2v7x3k9",
                               .attempt = 1,
                               .team = "team-a",
                               .queue = "lp",
                               .region = "us-central1",
                               .flavor = "l4-spot",
                               .flavor_spec = flavor,
                               .job_spec = job,
                               .max_run_duration_s = 60};

  b = batch_job_body(&in);
  ck_assert_ptr_nonnull(b);
  ck_assert_ptr_null(json_object_get(b, "notifications"));
  ck_assert_ptr_null(json_object_get(json_object_get(b, "allocationPolicy"),
                                     "serviceAccount"));
  json_decref(b);

  in.pubsub_topic = "projects/p/topics/gpugate-batch";
  in.service_account = "gpugate-batch@p.iam.gserviceaccount.com";
  b = batch_job_body(&in);
  ck_assert_ptr_nonnull(b);
  ck_assert_str_eq(str_at(b, "notifications[0].pubsubTopic"),
                   "projects/p/topics/gpugate-batch");
  ck_assert_str_eq(str_at(b, "notifications[0].message.type"),
                   "JOB_STATE_CHANGED");
  ck_assert_str_eq(str_at(b, "allocationPolicy.serviceAccount.email"),
                   "gpugate-batch@p.iam.gserviceaccount.com");
  json_decref(b);
  json_decref(job);
  json_decref(flavor);
}
END_TEST

START_TEST(body_bad)
{
  const struct bad_body_case *tc = &bad_body_cases[_i];
  json_t *job = parse(JOB_SPEC), *flavor = parse(SPOT_FLAVOR), *b;
  struct batch_job_input in = {.job_id = tc->job_id,
                               .attempt = tc->attempt,
                               .team = "team-a",
                               .queue = "lp",
                               .cost_center = NULL,
                               .region = tc->region,
                               .flavor = "l4-spot",
                               .flavor_spec = flavor,
                               .job_spec = job,
                               .max_run_duration_s = 60};

  if (tc->flavor_key)
    json_object_set_new(flavor, tc->flavor_key, parse(tc->flavor_value));
  if (tc->task_key)
    json_object_set_new(json_object_get(job, "task"), tc->task_key,
                        parse(tc->task_value));
  if (tc->job_key)
    json_object_set_new(job, tc->job_key, parse(tc->job_value));
  b = batch_job_body(&in);
  ck_assert_msg(b == NULL, "%s: accepted", tc->what);
  json_decref(job);
  json_decref(flavor);
}
END_TEST

START_TEST(body_null_input)
{
  json_t *flavor = parse(SPOT_FLAVOR);
  struct batch_job_input in = {.job_id = "j-1",
                               .attempt = 1,
                               .team = "t",
                               .queue = "q",
                               .region = "us-central1",
                               .flavor = "f",
                               .flavor_spec = flavor,
                               .job_spec = NULL};

  ck_assert_ptr_null(batch_job_body(NULL));
  ck_assert_ptr_null(batch_job_body(&in));
  json_decref(flavor);
}
END_TEST

/* --------------------------------------------------------------- states */

static const struct state_case {
  const char *batch;
  enum batch_state st;
} state_cases[] = {
    {"QUEUED", BATCH_STATE_QUEUED},
    {"SCHEDULED", BATCH_STATE_QUEUED},
    {"RUNNING", BATCH_STATE_RUNNING},
    {"SUCCEEDED", BATCH_STATE_SUCCEEDED},
    {"FAILED", BATCH_STATE_FAILED},
    {"CANCELLATION_IN_PROGRESS", BATCH_STATE_CANCELLING},
    {"CANCELLED", BATCH_STATE_CANCELLED},
    {"DELETION_IN_PROGRESS", BATCH_STATE_DELETED},
    {"STATE_UNSPECIFIED", BATCH_STATE_UNKNOWN},
    {"running", BATCH_STATE_UNKNOWN},
    {"", BATCH_STATE_UNKNOWN},
    {NULL, BATCH_STATE_UNKNOWN},
};

START_TEST(state_parse)
{
  ck_assert_int_eq(batch_state_parse(state_cases[_i].batch),
                   state_cases[_i].st);
}
END_TEST

/* When Batch says a job ended: a final state's latest event time. */
#define EV(t) "{\"type\": \"STATUS_CHANGED\", \"eventTime\": \"" t "\"}"
static const struct {
  const char *what, *job;
  int64_t want_us;
} ended_cases[] = {
    {"succeeded: its last event",
     "{\"status\": {\"state\": \"SUCCEEDED\", \"statusEvents\": [" EV(
         "2026-11-27T04:21:03.936689Z") ", " EV("2026-11-27T04:21:04."
                                                "239665Z") "]}}",
     1795753264239665},
    {"events out of order: the latest",
     "{\"status\": {\"state\": \"FAILED\", \"statusEvents\": [" EV(
         "2026-11-27T04:21:04.5Z") ", " EV("2026-11-27T04:21:03Z") "]}}",
     1795753264500000},
    {"cancelled, nanoseconds truncated",
     "{\"status\": {\"state\": \"CANCELLED\", \"statusEvents\": [" EV(
         "2026-11-27T04:21:04.123456789Z") "]}}",
     1795753264123456},
    {"a bad time is skipped",
     "{\"status\": {\"state\": \"SUCCEEDED\", \"statusEvents\": [" EV(
         "2026-11-27T04:21:04Z") ", " EV("yesterday") "]}}",
     1795753264000000},
    {"running: not ended",
     "{\"status\": {\"state\": \"RUNNING\", \"statusEvents\": [" EV(
         "2026-11-27T04:21:04Z") "]}}",
     0},
    {"cancelling: not ended",
     "{\"status\": {\"state\": \"CANCELLATION_IN_PROGRESS\", "
     "\"statusEvents\": [" EV("2026-11-27T04:21:04Z") "]}}",
     0},
    {"no events", "{\"status\": {\"state\": \"SUCCEEDED\"}}", 0},
    {"events not a list",
     "{\"status\": {\"state\": \"SUCCEEDED\", \"statusEvents\": 3}}", 0},
    {"no status", "{}", 0},
};
#undef EV

START_TEST(job_ended)
{
  json_t *job = json_loads(ended_cases[_i].job, 0, NULL);

  ck_assert_msg(job, "case \"%s\": bad JSON", ended_cases[_i].what);
  ck_assert_msg(batch_job_ended_us(job) == ended_cases[_i].want_us,
                "case \"%s\": %lld, want %lld", ended_cases[_i].what,
                (long long)batch_job_ended_us(job),
                (long long)ended_cases[_i].want_us);
  json_decref(job);
  ck_assert_int_eq(batch_job_ended_us(NULL), 0);
}
END_TEST

static const struct target_case {
  enum batch_state st;
  enum batch_intent intent;
  const char *to, *reason; /* NULL = no change / no reason */
} target_cases[] = {
    {BATCH_STATE_QUEUED, BATCH_INTENT_NONE, "QUEUED", NULL},
    {BATCH_STATE_RUNNING, BATCH_INTENT_NONE, "RUNNING", NULL},
    {BATCH_STATE_SUCCEEDED, BATCH_INTENT_NONE, "SUCCEEDED", NULL},
    {BATCH_STATE_FAILED, BATCH_INTENT_NONE, "FAILED", "BatchJobFailed"},
    {BATCH_STATE_CANCELLED, BATCH_INTENT_NONE, "FAILED",
     "BatchJobCancelledOutsideGpugate"},
    {BATCH_STATE_DELETED, BATCH_INTENT_NONE, "FAILED", "BatchJobDeleted"},
    {BATCH_STATE_UNKNOWN, BATCH_INTENT_NONE, NULL, NULL},
    /* Batch is still cancelling: the job may run, the quota stays held */
    {BATCH_STATE_CANCELLING, BATCH_INTENT_NONE, NULL, NULL},
    {BATCH_STATE_CANCELLING, BATCH_INTENT_CANCEL, NULL, NULL},
    {BATCH_STATE_CANCELLING, BATCH_INTENT_EVICT, NULL, NULL},
    /* the user cancelled */
    {BATCH_STATE_QUEUED, BATCH_INTENT_CANCEL, NULL, NULL},
    {BATCH_STATE_RUNNING, BATCH_INTENT_CANCEL, NULL, NULL},
    {BATCH_STATE_CANCELLED, BATCH_INTENT_CANCEL, "CANCELLED",
     "CancelledByUser"},
    {BATCH_STATE_DELETED, BATCH_INTENT_CANCEL, "CANCELLED", "CancelledByUser"},
    {BATCH_STATE_FAILED, BATCH_INTENT_CANCEL, "CANCELLED", "CancelledByUser"},
    {BATCH_STATE_SUCCEEDED, BATCH_INTENT_CANCEL, "SUCCEEDED", NULL},
    /* we evicted it: back to PENDING */
    {BATCH_STATE_QUEUED, BATCH_INTENT_EVICT, NULL, NULL},
    {BATCH_STATE_RUNNING, BATCH_INTENT_EVICT, NULL, NULL},
    {BATCH_STATE_CANCELLED, BATCH_INTENT_EVICT, "PENDING", "Evicted"},
    {BATCH_STATE_DELETED, BATCH_INTENT_EVICT, "PENDING", "Evicted"},
    {BATCH_STATE_FAILED, BATCH_INTENT_EVICT, "PENDING", "Evicted"},
    {BATCH_STATE_SUCCEEDED, BATCH_INTENT_EVICT, "SUCCEEDED", NULL},
    {BATCH_STATE_UNKNOWN, BATCH_INTENT_EVICT, NULL, NULL},
};

START_TEST(state_target)
{
  const struct target_case *tc = &target_cases[_i];
  const char *reason = "unset", *to;

  to = batch_state_target(tc->st, tc->intent, &reason);
  if (tc->to)
    ck_assert_str_eq(to, tc->to);
  else
    ck_assert_ptr_null(to);
  if (tc->reason)
    ck_assert_str_eq(reason, tc->reason);
  else
    ck_assert_ptr_null(reason);
  ck_assert_ptr_eq(batch_state_target(tc->st, tc->intent, NULL), to);
}
END_TEST

/* --------------------------------------------------------------- errors */

#define GOOGLE_502                                                             \
  "<!DOCTYPE html>\n<html lang=en>\n  <meta charset=utf-8>\n  <meta "          \
  "name=viewport content=\"initial-scale=1, minimum-scale=1, "                 \
  "width=device-width\">\n  <title>Error 502 (Server Error)!!1</title>\n  "    \
  "<style>\n    *{margin:0;padding:0}html,code{font:15px/22px arial}\n  "      \
  "</style>\n  <a href=//www.google.com/><span id=logo "                       \
  "aria-label=Google></span></a>\n  <p><b>502.</b> <ins>That\xe2\x80\x99s "    \
  "an error.</ins>\n  <p>The server encountered a temporary error and could "  \
  "not complete your request.<p>Please try again in 30 seconds.  "             \
  "<ins>That\xe2\x80\x99s all we know.</ins>\n"

static const struct error_case {
  const char *what;
  long http;
  const char *body, *retry_after;
  int rc;
  const char *status, *message;
  long retry_ms;
  bool retryable, exists, not_found;
} error_cases[] = {
    {"429 with Retry-After", 429,
     "{\"error\": {\"code\": 429, \"message\": \"Quota exceeded for quota "
     "metric 'Job mutation requests' and limit 'Job mutation requests per "
     "minute per region' of service 'batch.googleapis.com'.\", \"status\": "
     "\"RESOURCE_EXHAUSTED\"}}",
     "7", 0, "RESOURCE_EXHAUSTED",
     "Quota exceeded for quota metric 'Job mutation requests' and limit 'Job "
     "mutation requests per minute per region' of service "
     "'batch.googleapis.com'.",
     7000, true, false, false},
    {"429 with RetryInfo", 429,
     "{\"error\": {\"code\": 429, \"message\": \"Resource has been "
     "exhausted (e.g. check quota).\", \"status\": \"RESOURCE_EXHAUSTED\", "
     "\"details\": [{\"@type\": \"type.googleapis.com/google.rpc.ErrorInfo\", "
     "\"reason\": \"RATE_LIMIT_EXCEEDED\", \"domain\": \"googleapis.com\"}, "
     "{\"@type\": \"type.googleapis.com/google.rpc.RetryInfo\", "
     "\"retryDelay\": \"1.5s\"}]}}",
     NULL, 0, "RESOURCE_EXHAUSTED",
     "Resource has been exhausted (e.g. check quota).", 1500, true, false,
     false},
    {"429: the longer of both", 429,
     "{\"error\": {\"code\": 429, \"message\": \"slow down\", \"status\": "
     "\"RESOURCE_EXHAUSTED\", \"details\": [{\"@type\": "
     "\"type.googleapis.com/google.rpc.RetryInfo\", \"retryDelay\": "
     "\"30s\"}]}}",
     "2", 0, "RESOURCE_EXHAUSTED", "slow down", 30000, true, false, false},
    {"RetryInfo as seconds/nanos", 503,
     "{\"error\": {\"code\": 503, \"message\": \"try later\", \"status\": "
     "\"UNAVAILABLE\", \"details\": [{\"@type\": "
     "\"type.googleapis.com/google.rpc.RetryInfo\", \"retryDelay\": "
     "{\"seconds\": 2, \"nanos\": 1}}]}}",
     NULL, 0, "UNAVAILABLE", "try later", 2001, true, false, false},
    {"RetryInfo sub-millisecond", 503,
     "{\"error\": {\"code\": 503, \"message\": \"m\", \"status\": "
     "\"UNAVAILABLE\", \"details\": [{\"@type\": "
     "\"type.googleapis.com/google.rpc.RetryInfo\", \"retryDelay\": "
     "\"0.000001s\"}]}}",
     NULL, 0, "UNAVAILABLE", "m", 1, true, false, false},
    {"503 with an HTTP-date", 503, "", "Tue, 14 Nov 2023 22:15:20 GMT", -1,
     "UNAVAILABLE", "HTTP 503", 120000, true, false, false},
    {"HTTP-date in the past", 503, NULL, "Tue, 14 Nov 2023 22:00:00 GMT", -1,
     "UNAVAILABLE", "HTTP 503", 0, true, false, false},
    {"RFC 850 date", 503, NULL, "Tuesday, 14-Nov-23 22:13:50 GMT", -1,
     "UNAVAILABLE", "HTTP 503", 30000, true, false, false},
    {"asctime date", 503, NULL, "Tue Nov 14 22:13:25 2023", -1, "UNAVAILABLE",
     "HTTP 503", 5000, true, false, false},
    {"Retry-After garbage", 429, NULL, "soon", -1, "RESOURCE_EXHAUSTED",
     "HTTP 429", -1, true, false, false},
    {"Retry-After huge", 429, NULL, "99999999999999999999", -1,
     "RESOURCE_EXHAUSTED", "HTTP 429", 86400000, true, false, false},
    {"409 ALREADY_EXISTS", 409,
     "{\"error\": {\"code\": 409, \"message\": \"Resource "
     "\\\"projects/p/locations/us-central1/jobs/gpugate-j-01jdq8m2v7x3k9-a1\\\""
     " already exists\", \"status\": \"ALREADY_EXISTS\"}}",
     NULL, 0, "ALREADY_EXISTS",
     "Resource "
     "\"projects/p/locations/us-central1/jobs/gpugate-j-01jdq8m2v7x3k9-a1\" "
     "already exists",
     -1, false, true, false},
    {"409 ABORTED", 409,
     "{\"error\": {\"code\": 409, \"message\": \"concurrent update\", "
     "\"status\": \"ABORTED\"}}",
     NULL, 0, "ABORTED", "concurrent update", -1, true, false, false},
    {"404", 404,
     "{\"error\": {\"code\": 404, \"message\": \"Job "
     "projects/p/locations/us-central1/jobs/x not found\", \"status\": "
     "\"NOT_FOUND\"}}",
     NULL, 0, "NOT_FOUND",
     "Job projects/p/locations/us-central1/jobs/x not found", -1, false, false,
     true},
    {"400 INVALID_ARGUMENT", 400,
     "{\"error\": {\"code\": 400, \"message\": \"Invalid value at "
     "'job.task_groups[0].task_spec.compute_resource.cpu_milli' "
     "(TYPE_INT64), \\\"x\\\"\", \"status\": \"INVALID_ARGUMENT\", "
     "\"details\": [{\"@type\": \"type.googleapis.com/google.rpc.BadRequest\","
     " \"fieldViolations\": [{\"field\": "
     "\"job.task_groups[0].task_spec.compute_resource.cpu_milli\", "
     "\"description\": \"Invalid value\"}]}]}}",
     NULL, 0, "INVALID_ARGUMENT",
     "Invalid value at "
     "'job.task_groups[0].task_spec.compute_resource.cpu_milli' (TYPE_INT64), "
     "\"x\"",
     -1, false, false, false},
    {"401", 401,
     "{\"error\": {\"code\": 401, \"message\": \"Request had invalid "
     "authentication credentials.\", \"status\": \"UNAUTHENTICATED\"}}",
     NULL, 0, "UNAUTHENTICATED",
     "Request had invalid authentication credentials.", -1, false, false,
     false},
    {"403", 403,
     "{\"error\": {\"code\": 403, \"message\": \"Permission "
     "'batch.jobs.create' denied\", \"status\": \"PERMISSION_DENIED\"}}",
     NULL, 0, "PERMISSION_DENIED", "Permission 'batch.jobs.create' denied", -1,
     false, false, false},
    {"500 INTERNAL", 500,
     "{\"error\": {\"code\": 500, \"message\": \"Internal error "
     "encountered.\", \"status\": \"INTERNAL\"}}",
     NULL, 0, "INTERNAL", "Internal error encountered.", -1, true, false,
     false},
    {"501 is final", 501, NULL, NULL, -1, "UNIMPLEMENTED", "HTTP 501", -1,
     false, false, false},
    {"HTML 502", 502, GOOGLE_502, NULL, -1, "UNAVAILABLE",
     "Error 502 (Server Error)!!1", -1, true, false, false},
    {"HTML without title", 502,
     "<html><head><style>p{}</style></head><body><h1>Bad "
     "Gateway</h1>\r\n<p>nginx</p></body></html>",
     NULL, -1, "UNAVAILABLE", "Bad Gateway nginx", -1, true, false, false},
    {"proxy text 503", 503,
     "upstream connect error or disconnect/reset before headers. reset "
     "reason: connection termination",
     NULL, -1, "UNAVAILABLE",
     "upstream connect error or disconnect/reset before headers. reset "
     "reason: connection termination",
     -1, true, false, false},
    {"empty 503", 503, "", NULL, -1, "UNAVAILABLE", "HTTP 503", -1, true, false,
     false},
    {"no body 504", 504, NULL, NULL, -1, "DEADLINE_EXCEEDED", "HTTP 504", -1,
     true, false, false},
    {"bare 409", 409, "", NULL, -1, "ALREADY_EXISTS", "HTTP 409", -1, false,
     true, false},
    {"408", 408, NULL, NULL, -1, "DEADLINE_EXCEEDED", "HTTP 408", -1, true,
     false, false},
    {"OAuth error", 400,
     "{\"error\": \"invalid_grant\", \"error_description\": \"Invalid JWT "
     "Signature.\"}",
     NULL, 0, "INVALID_ARGUMENT", "invalid_grant: Invalid JWT Signature.", -1,
     false, false, false},
    {"JSON without error", 500, "{\"oops\": 1}", NULL, -1, "INTERNAL",
     "HTTP 500", -1, true, false, false},
    {"control characters", 400,
     "{\"error\": {\"code\": 400, \"message\": \"line one\\nline\\ttwo  "
     "\\u0007three\", \"status\": \"FAILED_PRECONDITION\"}}",
     NULL, 0, "FAILED_PRECONDITION", "line one line two three", -1, false,
     false, false},
};

START_TEST(parse_error)
{
  const struct error_case *tc = &error_cases[_i];
  struct batch_error e;
  /* NOW is Tue, 14 Nov 2023 22:13:20 GMT */
  int rc = batch_parse_error_at(tc->http, tc->body, tc->retry_after, NOW, &e);

  ck_assert_msg(rc == tc->rc, "%s: rc %d", tc->what, rc);
  ck_assert_int_eq(e.http_status, tc->http);
  ck_assert_str_eq(e.status, tc->status);
  ck_assert_str_eq(e.message, tc->message);
  ck_assert_msg(e.retry_after_ms == tc->retry_ms, "%s: retry_after_ms %ld",
                tc->what, e.retry_after_ms);
  ck_assert_msg(e.retryable == tc->retryable, "%s: retryable", tc->what);
  ck_assert_msg(e.already_exists == tc->exists, "%s: already_exists", tc->what);
  ck_assert_msg(e.not_found == tc->not_found, "%s: not_found", tc->what);
}
END_TEST

/* A long message is cut whole at a UTF-8 boundary, within the buffer. */
START_TEST(parse_error_long)
{
  char body[2048], msg[1400];
  struct batch_error e;
  size_t i, n;

  /* "é" (2 bytes) repeated: 511 bytes hold 255 of them and 1 spare byte */
  for (i = 0, n = 0; i < 600; i++) {
    msg[n++] = '\xc3';
    msg[n++] = '\xa9';
  }
  msg[n] = '\0';
  snprintf(body, sizeof(body),
           "{\"error\": {\"code\": 400, \"message\": \"%s\", \"status\": "
           "\"INVALID_ARGUMENT\"}}",
           msg);
  ck_assert_int_eq(batch_parse_error(400, body, NULL, &e), 0);
  ck_assert_uint_eq(strlen(e.message), 510);
  ck_assert_int_eq(strncmp(e.message, msg, 510), 0);

  /* a long status is cut too */
  ck_assert_int_eq(batch_parse_error(400,
                                     "{\"error\": {\"status\": "
                                     "\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                                     "AAAAAAAAAAAAAAAA\"}}",
                                     NULL, &e),
                   0);
  ck_assert_uint_eq(strlen(e.status), 31);
}
END_TEST

START_TEST(transport_error)
{
  struct batch_error e;

  batch_error_transport(&e, "DEADLINE_EXCEEDED", "create: timed out", true);
  ck_assert_int_eq(e.http_status, 0);
  ck_assert_str_eq(e.status, "DEADLINE_EXCEEDED");
  ck_assert_str_eq(e.message, "create: timed out");
  ck_assert_int_eq(e.retry_after_ms, -1);
  ck_assert(e.retryable);
  ck_assert(!e.already_exists && !e.not_found);
}
END_TEST

/* -------------------------------------------------------------- backoff */

static const struct backoff_case {
  int try_no;
  long retry_after, lo, hi;
} backoff_cases[] = {
    {0, -1, 0, 500},           {1, -1, 0, 1000},  {2, -1, 0, 2000},
    {3, -1, 0, 4000},          {5, -1, 0, 16000}, {6, -1, 0, 32000},
    {7, -1, 0, 60000},         {8, -1, 0, 60000}, {30, -1, 0, 60000},
    {1000, -1, 0, 60000},      {-5, -1, 0, 500},  {0, 300, 300, 500},
    {2, 1500, 1500, 2000},     {0, 0, 0, 500},    {3, 90000, 90000, 90000},
    {20, 61000, 61000, 61000},
};

START_TEST(backoff_bounds)
{
  const struct backoff_case *tc = &backoff_cases[_i];
  unsigned seed = 12345, again = 12345;
  long lo = -1, hi = -1, d;
  int i;

  for (i = 0; i < 2000; i++) {
    d = batch_backoff_ms(tc->try_no, tc->retry_after, &seed);
    ck_assert_int_ge(d, tc->lo);
    ck_assert_int_le(d, tc->hi);
    ck_assert_int_eq(d, batch_backoff_ms(tc->try_no, tc->retry_after, &again));
    lo = lo < 0 || d < lo ? d : lo;
    hi = d > hi ? d : hi;
  }
  /* full jitter: the whole range is used */
  if (tc->lo != tc->hi) {
    ck_assert_int_le(lo, tc->lo + (tc->hi - tc->lo) / 10);
    ck_assert_int_ge(hi, tc->hi - (tc->hi - tc->lo) / 10);
  }
}
END_TEST

START_TEST(backoff_seed)
{
  unsigned a = 0, b = 1;
  long da = batch_backoff_ms(4, -1, &a), db;

  ck_assert_uint_ne(a, 0); /* a zero state is replaced, then advanced */
  db = batch_backoff_ms(4, -1, &b);
  ck_assert_uint_ne(b, 1);
  ck_assert(da != db || a != b);
}
END_TEST

/* ---------------------------------------------------------- token cache */

struct fake {
  time_t now;
  int fetches;
  long lifetime;
  bool fail;
  bool empty;
  pthread_mutex_t mu; /* the threaded case counts from many threads */
};

static time_t fake_clock(void *ctx)
{
  return ((struct fake *)ctx)->now;
}

static int fake_fetch(void *ctx, char *token, size_t toklen, long *expires_in_s,
                      struct batch_error *e)
{
  struct fake *f = ctx;
  int n;

  pthread_mutex_lock(&f->mu);
  n = ++f->fetches;
  pthread_mutex_unlock(&f->mu);
  if (f->fail) {
    batch_error_transport(e, "UNAVAILABLE", "token: connection refused", true);
    return -1;
  }
  snprintf(token, toklen, f->empty ? "" : "ya29.token-%d", n);
  *expires_in_s = f->lifetime;
  return 0;
}

static const struct margin_case {
  long lifetime, margin;
} margin_cases[] = {
    {3600, 300}, {3599, 300}, {3000, 300}, {2999, 299},
    {600, 60},   {100, 10},   {9, 0},      {86400, 300},
};

START_TEST(token_margin)
{
  ck_assert_int_eq(batch_token_refresh_margin_s(margin_cases[_i].lifetime),
                   margin_cases[_i].margin);
}
END_TEST

/* For each lifetime: cached before the refresh point, fetched at it. */
START_TEST(token_refresh_timing)
{
  const struct margin_case *tc = &margin_cases[_i];
  struct fake f = {.now = 1000, .lifetime = tc->lifetime};
  struct batch_token_source *ts;
  struct batch_error e;
  char tok[BATCH_TOKEN_MAX];
  time_t refresh_at = 1000 + tc->lifetime - tc->margin;

  pthread_mutex_init(&f.mu, NULL);
  ts = batch_token_new_custom(fake_fetch, &f, fake_clock, &f);
  ck_assert_ptr_nonnull(ts);
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), 0);
  ck_assert_str_eq(tok, "ya29.token-1");
  ck_assert_int_eq(f.fetches, 1);
  f.now = refresh_at - 1;
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), 0);
  ck_assert_str_eq(tok, "ya29.token-1");
  ck_assert_int_eq(f.fetches, 1);
  f.now = refresh_at;
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), 0);
  ck_assert_str_eq(tok, "ya29.token-2");
  ck_assert_int_eq(f.fetches, 2);
  /* the new token is timed from its own fetch */
  f.now = refresh_at + tc->lifetime - tc->margin - 1;
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), 0);
  ck_assert_int_eq(f.fetches, 2);
  f.now++;
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), 0);
  ck_assert_str_eq(tok, "ya29.token-3");
  batch_token_free(ts);
  pthread_mutex_destroy(&f.mu);
}
END_TEST

/* A failed refresh keeps a still-valid token; an expired one is dropped. */
START_TEST(token_refresh_failure)
{
  struct fake f = {.now = 0, .lifetime = 3600};
  struct batch_token_source *ts;
  struct batch_error e;
  char tok[BATCH_TOKEN_MAX];

  pthread_mutex_init(&f.mu, NULL);
  ts = batch_token_new_custom(fake_fetch, &f, fake_clock, &f);

  /* nothing cached, fetch fails: an error, retryable */
  f.fail = true;
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), -1);
  ck_assert_str_eq(tok, "");
  ck_assert(e.retryable);
  ck_assert_str_eq(e.status, "UNAVAILABLE");
  ck_assert_int_eq(f.fetches, 1);

  f.fail = false;
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), 0);
  ck_assert_str_eq(tok, "ya29.token-2");

  /* due for refresh (t = 3300), the service is down: keep the old token,
   * and do not ask again for 5 s */
  f.fail = true;
  f.now = 3300;
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), 0);
  ck_assert_str_eq(tok, "ya29.token-2");
  ck_assert_int_eq(f.fetches, 3);
  f.now = 3304;
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), 0);
  ck_assert_int_eq(f.fetches, 3);
  f.now = 3305;
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), 0);
  ck_assert_int_eq(f.fetches, 4);

  /* 10 s before expiry the old token is no longer handed out */
  f.now = 3590;
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), -1);
  ck_assert_str_eq(tok, "");
  f.now = 3591;
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), -1);
  ck_assert_int_eq(f.fetches, 6);

  /* recovery */
  f.fail = false;
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), 0);
  ck_assert_str_eq(tok, "ya29.token-7");

  /* after a 401 the token is dropped at once */
  batch_token_invalidate(ts);
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), 0);
  ck_assert_str_eq(tok, "ya29.token-8");

  /* an empty token or lifetime is a failure */
  batch_token_invalidate(ts);
  f.empty = true;
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), -1);
  f.empty = false;
  f.lifetime = 0;
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), -1);
  f.lifetime = 3600;

  /* a buffer too small for the token */
  ck_assert_int_eq(batch_token_get(ts, tok, 5, &e), -1);
  ck_assert_str_eq(e.status, "INTERNAL");
  batch_token_free(ts);
  pthread_mutex_destroy(&f.mu);
}
END_TEST

struct hammer {
  struct batch_token_source *ts;
  int ok;
};

static void *hammer_run(void *arg)
{
  struct hammer *h = arg;
  struct batch_error e;
  char tok[BATCH_TOKEN_MAX];
  int i;

  for (i = 0; i < 2000; i++)
    if (batch_token_get(h->ts, tok, sizeof(tok), &e) == 0 &&
        !strcmp(tok, "ya29.token-1"))
      h->ok++;
  return NULL;
}

/* Eight threads, one clock instant: one fetch, every call served. */
START_TEST(token_threads)
{
  struct fake f = {.now = 50, .lifetime = 3600};
  struct hammer h[8];
  pthread_t th[8];
  int i;

  pthread_mutex_init(&f.mu, NULL);
  h[0].ts = batch_token_new_custom(fake_fetch, &f, fake_clock, &f);
  for (i = 0; i < 8; i++) {
    h[i].ts = h[0].ts;
    h[i].ok = 0;
    ck_assert_int_eq(pthread_create(&th[i], NULL, hammer_run, &h[i]), 0);
  }
  for (i = 0; i < 8; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(h[i].ok, 2000);
  }
  ck_assert_int_eq(f.fetches, 1);
  batch_token_free(h[0].ts);
  pthread_mutex_destroy(&f.mu);
}
END_TEST

static void cfg_init(struct config *cfg, const char *source, const char *key)
{
  memset(cfg, 0, sizeof(*cfg));
  snprintf(cfg->gcp.batch_endpoint, sizeof(cfg->gcp.batch_endpoint),
           "http://127.0.0.1:9/");
  snprintf(cfg->gcp.gcp_project, sizeof(cfg->gcp.gcp_project), "gpugate-test");
  snprintf(cfg->gcp.gcp_token_source, sizeof(cfg->gcp.gcp_token_source), "%s",
           source);
  snprintf(cfg->gcp.gcp_key_file, sizeof(cfg->gcp.gcp_key_file), "%s", key);
  snprintf(cfg->gcp.metadata_host, sizeof(cfg->gcp.metadata_host),
           "metadata.google.internal");
}

START_TEST(token_sources)
{
  struct config cfg;
  struct batch_token_source *ts;
  struct batch_error e;
  char tok[64], err[1024];

  cfg_init(&cfg, "none", "");
  ts = batch_token_new(&cfg.gcp, err, sizeof(err));
  ck_assert_ptr_nonnull(ts);
  ck_assert_int_eq(batch_token_get(ts, tok, sizeof(tok), &e), 1);
  ck_assert_str_eq(tok, "");
  batch_token_invalidate(ts);
  batch_token_free(ts);

  cfg_init(&cfg, "metadata", "");
  ts = batch_token_new(&cfg.gcp, err, sizeof(err));
  ck_assert_ptr_nonnull(ts);
  batch_token_free(ts);

  cfg_init(&cfg, "key-file", SA_KEY);
  ts = batch_token_new(&cfg.gcp, err, sizeof(err));
  ck_assert_msg(ts != NULL, "%s", err);
  batch_token_free(ts);

  cfg_init(&cfg, "key-file", "");
  ck_assert_ptr_null(batch_token_new(&cfg.gcp, err, sizeof(err)));
  ck_assert_str_eq(err, "GPUGATE_GCP_KEY_FILE: required when "
                        "GPUGATE_GCP_TOKEN_SOURCE=key-file");

  cfg_init(&cfg, "key-file", "tests/fixtures/no-such-key.json");
  ck_assert_ptr_null(batch_token_new(&cfg.gcp, err, sizeof(err)));
  ck_assert_ptr_nonnull(strstr(err, "cannot read the key file"));

  cfg_init(&cfg, "magic", "");
  ck_assert_ptr_null(batch_token_new(&cfg.gcp, err, sizeof(err)));
  ck_assert_ptr_nonnull(strstr(err, "GPUGATE_GCP_TOKEN_SOURCE"));
}
END_TEST

/* ------------------------------------------------------------------ JWT */

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "rb");
  char *buf;
  size_t n;

  ck_assert_msg(f != NULL, "cannot open %s (run from the repository root)",
                path);
  buf = malloc(65536);
  ck_assert_ptr_nonnull(buf);
  n = fread(buf, 1, 65535, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* base64url (no padding) → new NUL-terminated buffer; *len its size. */
static unsigned char *unb64url(const char *s, size_t n, size_t *len)
{
  char *std = malloc(n + 4);
  unsigned char *out = malloc(n + 4);
  size_t i, m = n;
  int got;

  ck_assert_ptr_nonnull(std);
  ck_assert_ptr_nonnull(out);
  for (i = 0; i < n; i++) {
    ck_assert_msg(s[i] != '+' && s[i] != '/' && s[i] != '=',
                  "not base64url without padding");
    std[i] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
  }
  while (m % 4)
    std[m++] = '=';
  got = EVP_DecodeBlock(out, (unsigned char *)std, (int)m);
  ck_assert_int_ge(got, 0);
  *len = (size_t)got - (m - n); /* DecodeBlock counts padding as zeros */
  out[*len] = '\0';
  free(std);
  return out;
}

static bool verify_rs256(const char *signing, size_t slen,
                         const unsigned char *sig, size_t siglen)
{
  char *pem = slurp(RSA1_PUB);
  BIO *bio = BIO_new_mem_buf(pem, -1);
  EVP_PKEY *pub = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  int ok;

  ck_assert_ptr_nonnull(pub);
  ok = EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pub) == 1 &&
       EVP_DigestVerify(md, sig, siglen, (const unsigned char *)signing,
                        slen) == 1;
  EVP_MD_CTX_free(md);
  EVP_PKEY_free(pub);
  BIO_free(bio);
  free(pem);
  return ok;
}

START_TEST(jwt_assertion)
{
  struct batch_sa_key key;
  char err[512], *jwt = NULL, *dot1, *dot2;
  unsigned char *hdr, *pay, *sig;
  size_t hlen, plen, siglen;
  json_t *h, *p;

  ck_assert_msg(batch_token_read_key(SA_KEY, &key, err, sizeof(err)) == 0, "%s",
                err);
  ck_assert_str_eq(key.client_email,
                   "gpugate-test@gpugate-test.iam.gserviceaccount.com");
  ck_assert_str_eq(key.private_key_id, "rsa1-test-key-id");
  ck_assert_str_eq(key.token_uri, "http://127.0.0.1:0/token");
  /* a test may point the grant elsewhere */
  snprintf(key.token_uri, sizeof(key.token_uri),
           "https://oauth2.googleapis.com/token");

  ck_assert_int_eq(batch_token_assertion(&key, NOW, &jwt, err, sizeof(err)), 0);
  dot1 = strchr(jwt, '.');
  ck_assert_ptr_nonnull(dot1);
  dot2 = strchr(dot1 + 1, '.');
  ck_assert_ptr_nonnull(dot2);
  ck_assert_ptr_null(strchr(dot2 + 1, '.'));

  hdr = unb64url(jwt, (size_t)(dot1 - jwt), &hlen);
  pay = unb64url(dot1 + 1, (size_t)(dot2 - dot1 - 1), &plen);
  sig = unb64url(dot2 + 1, strlen(dot2 + 1), &siglen);
  h = parse((char *)hdr);
  p = parse((char *)pay);
  keys_are(h, "alg typ kid", "header");
  ck_assert_str_eq(str_at(h, "alg"), "RS256");
  ck_assert_str_eq(str_at(h, "typ"), "JWT");
  ck_assert_str_eq(str_at(h, "kid"), "rsa1-test-key-id");
  keys_are(p, "iss scope aud iat exp", "claims");
  ck_assert_str_eq(str_at(p, "iss"),
                   "gpugate-test@gpugate-test.iam.gserviceaccount.com");
  ck_assert_str_eq(str_at(p, "scope"),
                   "https://www.googleapis.com/auth/cloud-platform");
  ck_assert_str_eq(str_at(p, "aud"), "https://oauth2.googleapis.com/token");
  ck_assert_int_eq(int_at(p, "iat"), 1700000000);
  ck_assert_int_eq(int_at(p, "exp"), 1700003600);

  /* RS256 with rsa1: 2048-bit, so a 256-byte signature that verifies */
  ck_assert_uint_eq(siglen, 256);
  ck_assert(verify_rs256(jwt, (size_t)(dot2 - jwt), sig, siglen));
  /* and does not verify over other bytes */
  jwt[dot1 - jwt + 3] ^= 1;
  ck_assert(!verify_rs256(jwt, (size_t)(dot2 - jwt), sig, siglen));

  /* without a key id there is no "kid" */
  key.private_key_id[0] = '\0';
  free(jwt);
  ck_assert_int_eq(batch_token_assertion(&key, NOW, &jwt, err, sizeof(err)), 0);
  free(hdr);
  hdr = unb64url(jwt, (size_t)(strchr(jwt, '.') - jwt), &hlen);
  json_decref(h);
  h = parse((char *)hdr);
  keys_are(h, "alg typ", "header without kid");

  /* the BigQuery pull's tokens name BigQuery's scope */
  free(jwt);
  free(pay);
  json_decref(p);
  ck_assert_int_eq(batch_token_assertion_scoped(
                       &key, "https://www.googleapis.com/auth/bigquery", NOW,
                       &jwt, err, sizeof(err)),
                   0);
  dot1 = strchr(jwt, '.');
  dot2 = strchr(dot1 + 1, '.');
  pay = unb64url(dot1 + 1, (size_t)(dot2 - dot1 - 1), &plen);
  p = parse((char *)pay);
  ck_assert_str_eq(str_at(p, "scope"),
                   "https://www.googleapis.com/auth/bigquery");

  json_decref(h);
  json_decref(p);
  free(hdr);
  free(pay);
  free(sig);
  free(jwt);
  batch_token_key_free(&key);
}
END_TEST

/* Key files that must be refused, written to a temporary file. */
static const struct key_case {
  const char *what, *json, *err;
} key_cases[] = {
    {"not JSON", "private_key", "is not a JSON object"},
    {"no client_email", "{\"private_key\": \"@RSA1\"}",
     "has no usable client_email"},
    {"no private_key", "{\"client_email\": \"a@b\"}", "unencrypted RSA PEM"},
    {"garbage key", "{\"client_email\": \"a@b\", \"private_key\": \"xyz\"}",
     "unencrypted RSA PEM"},
    {"EC key", "{\"client_email\": \"a@b\", \"private_key\": \"@EC1\"}",
     "unencrypted RSA PEM"},
    {"bad token_uri",
     "{\"client_email\": \"a@b\", \"token_uri\": 5, "
     "\"private_key\": \"@RSA1\"}",
     "has a bad token_uri"},
    {"good, default token_uri",
     "{\"client_email\": \"a@b\", \"private_key\": \"@RSA1\"}", NULL},
};

START_TEST(key_files)
{
  const struct key_case *tc = &key_cases[_i];
  char path[] = "/tmp/gpugate-sa-XXXXXX", err[1024];
  struct batch_sa_key key;
  json_t *j = NULL;
  char *text;
  int fd, rc;
  FILE *f;

  fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  f = fdopen(fd, "w");
  ck_assert_ptr_nonnull(f);
  if (strstr(tc->json, "@RSA1") || strstr(tc->json, "@EC1")) {
    char *pem =
        slurp(strstr(tc->json, "@RSA1") ? "tests/fixtures/keys/rsa1.pem"
                                        : "tests/fixtures/keys/ec1.pem");
    j = parse(tc->json);
    json_object_set_new(j, "private_key", json_string(pem));
    free(pem);
    text = json_dumps(j, 0);
    fputs(text, f);
    free(text);
    json_decref(j);
  } else {
    fputs(tc->json, f);
  }
  fclose(f);
  rc = batch_token_read_key(path, &key, err, sizeof(err));
  unlink(path);
  if (tc->err) {
    ck_assert_msg(rc == -1, "%s: accepted", tc->what);
    ck_assert_msg(strstr(err, tc->err) != NULL, "%s: \"%s\"", tc->what, err);
    ck_assert_msg(strstr(err, "PRIVATE KEY-----") == NULL, "key in message");
  } else {
    ck_assert_msg(rc == 0, "%s: %s", tc->what, err);
    ck_assert_str_eq(key.token_uri, BATCH_TOKEN_DEFAULT_URI);
    ck_assert_str_eq(key.private_key_id, "");
  }
  batch_token_key_free(&key);
}
END_TEST

/* ----------------------------------------------------- URLs and client */

static const struct esc_case {
  const char *in, *want;
} esc_cases[] = {
    {"labels.gpugate-team:*", "labels.gpugate-team%3A%2A"},
    {"a b&c=d/e?f#g", "a%20b%26c%3Dd%2Fe%3Ff%23g"},
    {"AZaz09-._~", "AZaz09-._~"},
    {"caf\xc3\xa9", "caf%C3%A9"},
    {"", ""},
};

START_TEST(url_escape)
{
  char buf[128] = "x=";
  char small[8] = "";

  ck_assert_int_eq(batch_http_escape(buf, sizeof(buf), esc_cases[_i].in), 0);
  ck_assert_str_eq(buf + 2, esc_cases[_i].want);
  if (strlen(esc_cases[_i].want) >= sizeof(small))
    ck_assert_int_eq(batch_http_escape(small, sizeof(small), esc_cases[_i].in),
                     -1);
}
END_TEST

/* Arguments the client refuses before any request is made. */
START_TEST(client_arguments)
{
  struct config cfg;
  struct batch_client *c;
  struct batch_result r;
  json_t *body = json_object();
  char err[256];

  batch_global_init();
  batch_global_init(); /* once, whoever calls */

  cfg_init(&cfg, "none", "");
  cfg.gcp.gcp_project[0] = '\0';
  ck_assert_ptr_null(batch_client_new(&cfg.gcp, err, sizeof(err)));
  ck_assert_str_eq(err, "GPUGATE_GCP_PROJECT: required for Cloud Batch");
  cfg_init(&cfg, "none", "");
  snprintf(cfg.gcp.batch_endpoint, sizeof(cfg.gcp.batch_endpoint), "ftp://x");
  ck_assert_ptr_null(batch_client_new(&cfg.gcp, err, sizeof(err)));
  ck_assert_ptr_nonnull(strstr(err, "GPUGATE_BATCH_ENDPOINT"));
  cfg_init(&cfg, "key-file", "");
  ck_assert_ptr_null(batch_client_new(&cfg.gcp, err, sizeof(err)));

  cfg_init(&cfg, "none", "");
  c = batch_client_new(&cfg.gcp, err, sizeof(err));
  ck_assert_msg(c != NULL, "%s", err);
  ck_assert_str_eq(batch_client_project(c), "gpugate-test");

  ck_assert_int_eq(batch_client_get(c, "projects/p/locations/r/jobs/../x", &r),
                   -1);
  ck_assert_str_eq(r.error.status, "INVALID_ARGUMENT");
  ck_assert(!r.error.retryable);
  ck_assert_int_eq(r.http_status, 0);
  ck_assert_int_eq(batch_client_get(c, "projects/p/locations/r/jobs/x?y", &r),
                   -1);
  ck_assert_int_eq(
      batch_client_get(c, "projects/p/locations/r/jobs/x/extra", &r), -1);
  ck_assert_int_eq(batch_client_get(c, "projects/p/zones/r/jobs/x", &r), -1);
  ck_assert_int_eq(batch_client_cancel(c, "projects//locations/r/jobs/x", &r),
                   -1);
  ck_assert_int_eq(batch_client_delete(c, NULL, &r), -1);
  ck_assert_int_eq(batch_client_list(c, "us central1", NULL, 0, NULL, &r), -1);
  ck_assert_int_eq(
      batch_client_create(c, "us-central1", "Gpugate-x", NULL, body, &r), -1);
  ck_assert_int_eq(
      batch_client_create(c, "us-central1", "gpugate-x-", NULL, body, &r), -1);
  ck_assert_int_eq(
      batch_client_create(c, "us-central1", "gpugate-x-a1", NULL, NULL, &r),
      -1);
  ck_assert_str_eq(r.error.status, "INVALID_ARGUMENT");
  batch_result_clear(&r);
  batch_client_free(c);
  batch_client_free(NULL);
  json_decref(body);
}
END_TEST

/* ---------------------------------------------------------------- suite */

/* The batch suite: ids, bodies, states, errors, back-off, tokens, JWT. */
Suite *batch_suite(void)
{
  Suite *s = suite_create("batch");
  TCase *tc;

  tc = tcase_create("job");
  tcase_add_loop_test(tc, job_id, 0, N_OF(id_cases));
  tcase_add_test(tc, job_name);
  tcase_add_loop_test(tc, job_id_parse, 0, N_OF(parse_cases));
  tcase_add_loop_test(tc, label_sanitize, 0, N_OF(label_cases));
  tcase_add_test(tc, label_keys);
  tcase_add_loop_test(tc, body_models, 0, N_OF(body_cases));
  tcase_add_test(tc, body_variants);
  tcase_add_test(tc, body_notifications_and_account);
  tcase_add_loop_test(tc, body_bad, 0, N_OF(bad_body_cases));
  tcase_add_test(tc, body_null_input);
  tcase_add_loop_test(tc, state_parse, 0, N_OF(state_cases));
  tcase_add_loop_test(tc, job_ended, 0, N_OF(ended_cases));
  tcase_add_loop_test(tc, state_target, 0, N_OF(target_cases));
  suite_add_tcase(s, tc);

  tc = tcase_create("errors");
  tcase_add_loop_test(tc, parse_error, 0, N_OF(error_cases));
  tcase_add_test(tc, parse_error_long);
  tcase_add_test(tc, transport_error);
  tcase_add_loop_test(tc, backoff_bounds, 0, N_OF(backoff_cases));
  tcase_add_test(tc, backoff_seed);
  suite_add_tcase(s, tc);

  tc = tcase_create("token");
  tcase_add_loop_test(tc, token_margin, 0, N_OF(margin_cases));
  tcase_add_loop_test(tc, token_refresh_timing, 0, N_OF(margin_cases));
  tcase_add_test(tc, token_refresh_failure);
  tcase_add_test(tc, token_threads);
  tcase_add_test(tc, token_sources);
  tcase_add_test(tc, jwt_assertion);
  tcase_add_loop_test(tc, key_files, 0, N_OF(key_cases));
  suite_add_tcase(s, tc);

  tc = tcase_create("client");
  tcase_add_loop_test(tc, url_escape, 0, N_OF(esc_cases));
  tcase_add_test(tc, client_arguments);
  suite_add_tcase(s, tc);
  return s;
}
