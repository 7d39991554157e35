/*
 * batch_job.c — pure functions behind the Cloud Batch client: the full job
 * name, the labels and the Job body of SPEC §4 (the deterministic jobId and
 * its parse are lib/batch_names.c's) (what
 * gcp/batch_answer.c reads back: Batch → gpugate states, google.rpc.Status
 * errors and back-off). No I/O and no globals (see batch_job.h).
 *
 * The body is built from what the database stores (flavor and job specs as
 * normalised by handlers/flavors.c and handlers/jobs.c), so every field it
 * reads has already been validated once; this file still refuses input it
 * cannot map rather than send Batch a body it would reject.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcp/batch_job.h"

/* ------------------------------------------------------------- ids */

static bool lower_alnum(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

int batch_job_name(const char *project, const char *region,
                   const char *batch_job_id, char *out, size_t outlen)
{
  int n = snprintf(out, outlen, "projects/%s/locations/%s/jobs/%s", project,
                   region, batch_job_id);
  return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* ---------------------------------------------------------- labels */

size_t batch_label_sanitize(const char *s, char *out, size_t outlen)
{
  size_t n = 0, max;
  const unsigned char *p = (const unsigned char *)s;

  if (outlen == 0)
    return 0;
  max = outlen - 1;
  if (max > BATCH_LABEL_MAX)
    max = BATCH_LABEL_MAX;
  for (; *p && n < max; p++) {
    unsigned char c = *p;
    if (c >= 'A' && c <= 'Z')
      out[n++] = (char)(c - 'A' + 'a');
    else if (lower_alnum((char)c) || c == '_' || c == '-')
      out[n++] = (char)c;
    else if ((c & 0xC0) != 0x80) /* UTF-8 continuations fold into one */
      out[n++] = '_';
  }
  out[n] = '\0';
  return n;
}

bool batch_label_key_ok(const char *k)
{
  size_t i;

  if (!k || !(k[0] >= 'a' && k[0] <= 'z'))
    return false;
  for (i = 1; k[i]; i++)
    if (!lower_alnum(k[i]) && k[i] != '_' && k[i] != '-')
      return false;
  return i <= BATCH_LABEL_MAX;
}

/* Set labels[key] to the sanitised value; -1 when out of memory. */
static int put_label(json_t *labels, const char *key, const char *value)
{
  char v[BATCH_LABEL_MAX + 1];

  batch_label_sanitize(value, v, sizeof(v));
  return json_object_set_new(labels, key, json_string(v));
}

static bool reserved_label(const char *k)
{
  return strncmp(k, "gpugate-", 8) == 0 || strcmp(k, "cost-center") == 0;
}

/* The job's own labels (valid ones only), then gpugate's, which win. */
static json_t *make_labels(const struct batch_job_input *in)
{
  json_t *labels = json_object(), *v;
  json_t *own = json_object_get(in->job_spec, "labels");
  const char *k;
  int rc = labels ? 0 : -1;

  json_object_foreach (own, k, v) {
    if (rc == 0 && json_is_string(v) && batch_label_key_ok(k) &&
        !reserved_label(k))
      rc = put_label(labels, k, json_string_value(v));
  }
  if (rc == 0)
    rc = put_label(labels, "gpugate-team", in->team) ||
         put_label(labels, "gpugate-job", in->job_id) ||
         put_label(labels, "gpugate-queue", in->queue) ||
         put_label(labels, "gpugate-flavor", in->flavor);
  if (rc == 0 && in->cost_center && *in->cost_center)
    rc = put_label(labels, "cost-center", in->cost_center);
  if (rc == 0 && in->deployment && *in->deployment)
    rc = put_label(labels, "gpugate-deployment", in->deployment);
  if (rc != 0) {
    json_decref(labels);
    return NULL;
  }
  return labels;
}

/* ------------------------------------------------------------ body */

static bool region_ok(const char *r)
{
  size_t i;

  if (!r || !*r)
    return false;
  for (i = 0; r[i]; i++)
    if (!lower_alnum(r[i]) && r[i] != '-')
      return false;
  return i <= 64;
}

static const char *str_of(json_t *o, const char *k)
{
  return json_string_value(json_object_get(o, k));
}

static json_int_t int_of(json_t *o, const char *k, json_int_t dflt)
{
  json_t *v = json_object_get(o, k);
  return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* gpugate's provisioning model → Batch's; NULL when unknown. */
static const char *batch_model(const char *model)
{
  static const char *const map[][2] = {{"RESERVATION", "RESERVATION_BOUND"},
                                       {"STANDARD", "STANDARD"},
                                       {"SPOT", "SPOT"},
                                       {"FLEX_START", "FLEX_START"}};
  size_t i;

  for (i = 0; model && i < sizeof(map) / sizeof(map[0]); i++)
    if (!strcmp(model, map[i][0]))
      return map[i][1];
  return NULL;
}

/* {"variables": job env + GPUGATE_*}; NULL on bad input or no memory. */
static json_t *make_environment(const struct batch_job_input *in, json_t *task)
{
  json_t *vars = json_object(), *v;
  const char *k, *ckpt = str_of(in->job_spec, "checkpoint_uri");
  char attempt[16];
  int rc = vars ? 0 : -1;

  json_object_foreach (json_object_get(task, "env"), k, v) {
    if (rc == 0 && json_is_string(v))
      rc = json_object_set(vars, k, v);
  }
  snprintf(attempt, sizeof(attempt), "%d", in->attempt);
  if (rc == 0)
    rc = json_object_set_new(vars, "GPUGATE_JOB_ID", json_string(in->job_id)) ||
         json_object_set_new(vars, "GPUGATE_ATTEMPT", json_string(attempt));
  if (rc == 0 && ckpt && *ckpt)
    rc = json_object_set_new(vars, "GPUGATE_CHECKPOINT_URI", json_string(ckpt));
  if (rc != 0) {
    json_decref(vars);
    return NULL;
  }
  return json_pack("{s:o}", "variables", vars);
}

static json_t *make_task_spec(const struct batch_job_input *in, long max_run_s)
{
  json_t *task = json_object_get(in->job_spec, "task");
  json_t *commands = json_object_get(task, "commands");
  json_t *container = NULL, *spec = NULL, *env = NULL;
  const char *image = str_of(task, "image");
  json_int_t cpu = int_of(task, "cpu_milli", 0);
  json_int_t mem = int_of(task, "memory_mib", 0);
  char dur[32];

  if (!image || !*image || cpu <= 0 || mem <= 0)
    return NULL;
  container = json_pack("{s:s}", "imageUri", image);
  if (!container)
    goto fail;
  if (json_array_size(commands) > 0 &&
      json_object_set(container, "commands", commands) != 0)
    goto fail;
  env = make_environment(in, task);
  if (!env)
    goto fail;
  spec = json_pack("{s:[{s:o}], s:o, s:{s:I, s:I}, s:I}", "runnables",
                   "container", container, "environment", env,
                   "computeResource", "cpuMilli", cpu, "memoryMib", mem,
                   "maxRetryCount", int_of(in->job_spec, "max_retry_count", 0));
  container = env = NULL; /* stolen, even on failure */
  if (!spec)
    return NULL;
  if (max_run_s > 0) {
    snprintf(dur, sizeof(dur), "%lds", max_run_s);
    if (json_object_set_new(spec, "maxRunDuration", json_string(dur)) != 0)
      goto fail;
  }
  return spec;
fail:
  json_decref(container);
  json_decref(env);
  json_decref(spec);
  return NULL;
}

static json_t *make_policy(const struct batch_job_input *in)
{
  json_t *flavor = in->flavor_spec, *task;
  const char *model = batch_model(str_of(flavor, "provisioning_model"));
  const char *machine = str_of(flavor, "machine_type");
  const char *accel = str_of(flavor, "accelerator_type");
  const char *reservation = str_of(flavor, "reservation");
  json_t *policy;
  json_int_t gpu;

  task = json_object_get(in->job_spec, "task");
  gpu = int_of(task, "gpu", 0);
  if (!model || !machine || !*machine || gpu < 0 ||
      (gpu > 0 && (!accel || !*accel)))
    return NULL;
  if (!strcmp(model, "RESERVATION_BOUND") && (!reservation || !*reservation))
    return NULL;
  policy = json_pack("{s:s, s:s}", "machineType", machine, "provisioningModel",
                     model);
  if (policy && gpu > 0 &&
      json_object_set_new(
          policy, "accelerators",
          json_pack("[{s:s, s:I}]", "type", accel, "count", gpu)) != 0)
    goto fail;
  if (policy && !strcmp(model, "RESERVATION_BOUND") &&
      json_object_set_new(policy, "reservation", json_string(reservation)) != 0)
    goto fail;
  return policy;
fail:
  json_decref(policy);
  return NULL;
}

json_t *batch_job_body(const struct batch_job_input *in)
{
  json_t *task_spec = NULL, *policy = NULL, *labels = NULL, *alloc_labels;
  json_t *instance = NULL, *body = NULL;
  char id[BATCH_JOB_ID_MAX + 1], location[96];
  json_int_t tasks, parallelism;
  long max_run_s;
  bool gpu_flavor;

  if (!in || !in->job_spec || !in->flavor_spec || !in->team || !in->queue ||
      !in->flavor || !region_ok(in->region) ||
      batch_job_id(in->job_id, in->attempt, id, sizeof(id)) != 0)
    return NULL;
  tasks = int_of(in->job_spec, "task_count", 1);
  parallelism = int_of(in->job_spec, "parallelism", tasks);
  if (tasks < 1 || parallelism < 1 || parallelism > tasks)
    return NULL;
  max_run_s = in->max_run_duration_s;
  if (max_run_s <= 0)
    max_run_s = (long)int_of(in->flavor_spec, "max_run_duration_s", 0);
  snprintf(location, sizeof(location), "regions/%s", in->region);

  task_spec = make_task_spec(in, max_run_s);
  policy = make_policy(in);
  labels = make_labels(in);
  if (!task_spec || !policy || !labels)
    goto fail;
  alloc_labels = json_copy(labels); /* its values are shared, not edited */
  gpu_flavor =
      json_is_string(json_object_get(in->flavor_spec, "accelerator_type"));
  instance = json_pack("{s:o, s:b}", "policy", policy, "installGpuDrivers",
                       gpu_flavor);
  policy = NULL;
  body = json_pack("{s:[{s:I, s:I, s:o}],"
                   " s:{s:{s:[s]}, s:[o], s:o},"
                   " s:o, s:{s:s}}",
                   "taskGroups", "taskCount", tasks, "parallelism", parallelism,
                   "taskSpec", task_spec, "allocationPolicy", "location",
                   "allowedLocations", location, "instances", instance,
                   "labels", alloc_labels, "labels", labels, "logsPolicy",
                   "destination", "CLOUD_LOGGING");
  if (body && in->pubsub_topic && *in->pubsub_topic)
    json_object_set_new(body, "notifications",
                        json_pack("[{s:s, s:{s:s}}]", "pubsubTopic",
                                  in->pubsub_topic, "message", "type",
                                  "JOB_STATE_CHANGED"));
  if (body && in->service_account && *in->service_account)
    json_object_set_new(json_object_get(body, "allocationPolicy"),
                        "serviceAccount",
                        json_pack("{s:s}", "email", in->service_account));
  return body; /* the pack stole every "o", whatever its result */
fail:
  json_decref(task_spec);
  json_decref(policy);
  json_decref(labels);
  return NULL;
}
