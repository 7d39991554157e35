/*
 * emu_batch.c — Batch v1 REST handlers: request validation, the Job shape
 * (int64 fields echoed as JSON strings, as Google's JSON mapping does),
 * list filters and page tokens. State lives in emu_jobs.
 *
 * Supported list filters, joined by " AND ":
 *   labels.KEY:*              the job has label KEY
 *   labels.KEY="V"            label KEY equals V (key and value may be
 *   labels."KEY"=V            quoted or bare)
 *   status.state=S / state=S  the job is in state S
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/emulator/emu_batch.h"
#include "tests/emulator/emu_config.h"
#include "tests/emulator/emu_jobs.h"
#include "tests/emulator/emu_util.h"

#define ERR_MAX 512
#define PAGE_DEFAULT 100
#define PAGE_MAX 1000
#define TOKEN_PREFIX "emu1."
#define MAX_TERMS 8

/* ---- validation helpers: each returns false with a message in err ---- */

struct verr {
  char msg[ERR_MAX];
};

static bool fail(struct verr *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static bool fail(struct verr *e, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
  va_end(ap);
  return false;
}

/* Reject members of obj not in known (NULL-ended), as proto JSON does. */
static bool known_keys(json_t *obj, const char *const *known, const char *where,
                       struct verr *e)
{
  const char *key;
  json_t *v;

  json_object_foreach (obj, key, v) {
    size_t i;
    bool ok = false;
    for (i = 0; known[i] && !ok; i++)
      ok = !strcmp(known[i], key);
    if (!ok)
      return fail(e,
                  "Invalid JSON payload received. Unknown name \"%s\" at "
                  "'%s': Cannot find field.",
                  key, where);
  }
  return true;
}

static bool object_or_absent(json_t *v, const char *where, struct verr *e)
{
  if (v && !json_is_object(v))
    return fail(e, "Invalid value at '%s': expected an object.", where);
  return true;
}

/*
 * An int64 member (JSON number or decimal string) in [min, max], default
 * dflt when absent. as_string rewrites it as a string (the output form).
 */
static bool int64_member(json_t *obj, const char *key, const char *where,
                         long long min, long long max, long long dflt,
                         bool as_string, long long *out, struct verr *e)
{
  json_t *v = json_object_get(obj, key);
  long long n = dflt;
  char buf[24];

  if (v) {
    if (json_is_integer(v))
      n = json_integer_value(v);
    else if (!json_is_string(v) || !emu_parse_long(json_string_value(v), &n))
      return fail(e, "Invalid value at '%s.%s' (TYPE_INT64).", where, key);
    if (n < min || n > max)
      return fail(e, "Field '%s.%s' must be between %lld and %lld.", where, key,
                  min, max);
  }
  if (out)
    *out = n;
  if (v || as_string) {
    if (as_string) {
      snprintf(buf, sizeof(buf), "%lld", n);
      json_object_set_new(obj, key, json_string(buf));
    } else {
      json_object_set_new(obj, key, json_integer(n));
    }
  }
  return true;
}

static bool string_member(json_t *obj, const char *key, const char *where,
                          bool required, const char **out, struct verr *e)
{
  json_t *v = json_object_get(obj, key);

  if (!v && !required)
    return true;
  if (!json_is_string(v) || (required && !*json_string_value(v)))
    return fail(e, "Field '%s.%s' is required and must be a non-empty string.",
                where, key);
  if (out)
    *out = json_string_value(v);
  return true;
}

/* ^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$ */
static bool valid_job_id(const char *s)
{
  size_t n = strlen(s), i;

  if (n < 1 || n > 63 || !(s[0] >= 'a' && s[0] <= 'z') || s[n - 1] == '-')
    return false;
  for (i = 1; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '-'))
      return false;
  return true;
}

static bool label_chars(const char *s, size_t max)
{
  size_t n = strlen(s), i;

  if (n > max)
    return false;
  for (i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '_' || s[i] == '-'))
      return false;
  return true;
}

/* GCP label rules: keys [a-z][a-z0-9_-]{0,62}, values [a-z0-9_-]{0,63}. */
static bool labels_ok(json_t *labels, const char *where, struct verr *e)
{
  const char *k;
  json_t *v;

  if (!labels)
    return true;
  if (!json_is_object(labels))
    return fail(e, "Invalid value at '%s': labels must be a map.", where);
  if (json_object_size(labels) > 64)
    return fail(e, "Field '%s' has more than 64 labels.", where);
  json_object_foreach (labels, k, v) {
    if (!*k || !(k[0] >= 'a' && k[0] <= 'z') || !label_chars(k, 63) ||
        !strncmp(k, "goog", 4))
      return fail(e,
                  "Invalid label key \"%s\" in '%s': keys start with a "
                  "lowercase letter, hold only lowercase letters, digits, "
                  "'_' and '-', at most 63 characters, and do not start "
                  "with \"goog\".",
                  k, where);
    if (!json_is_string(v) || !label_chars(json_string_value(v), 63))
      return fail(e,
                  "Invalid label value for \"%s\" in '%s': values hold only "
                  "lowercase letters, digits, '_' and '-', at most 63 "
                  "characters.",
                  k, where);
  }
  return true;
}

/* "3600s", "1.5s" */
static bool valid_duration(const char *s)
{
  size_t i = 0, frac = 0;

  while (isdigit((unsigned char)s[i]))
    i++;
  if (i == 0)
    return false;
  if (s[i] == '.') {
    i++;
    while (isdigit((unsigned char)s[i])) {
      i++;
      frac++;
    }
    if (frac == 0 || frac > 9)
      return false;
  }
  return s[i] == 's' && s[i + 1] == '\0';
}

static bool runnable_ok(json_t *rn, size_t idx, struct verr *e)
{
  static const char *const known[] = {
      "container",        "script",     "barrier",   "displayName",
      "ignoreExitStatus", "background", "alwaysRun", "environment",
      "timeout",          "labels",     NULL};
  char where[96];
  json_t *c, *cmds, *x;
  int kinds;
  size_t i;

  snprintf(where, sizeof(where), "job.task_groups[0].task_spec.runnables[%zu]",
           idx);
  if (!json_is_object(rn))
    return fail(e, "Invalid value at '%s': expected an object.", where);
  if (!known_keys(rn, known, where, e))
    return false;
  c = json_object_get(rn, "container");
  kinds = (c != NULL) + (json_object_get(rn, "script") != NULL) +
          (json_object_get(rn, "barrier") != NULL);
  if (kinds != 1)
    return fail(e,
                "Runnable %zu must set exactly one of container, script or "
                "barrier.",
                idx);
  if (c) {
    if (!json_is_object(c))
      return fail(e, "Invalid value at '%s.container'.", where);
    if (!string_member(c, "imageUri", where, true, NULL, e))
      return false;
    cmds = json_object_get(c, "commands");
    if (cmds && !json_is_array(cmds))
      return fail(e, "Invalid value at '%s.container.commands'.", where);
    json_array_foreach (cmds, i, x) {
      if (!json_is_string(x))
        return fail(e, "Invalid value at '%s.container.commands[%zu]'.", where,
                    i);
    }
  }
  if (json_object_get(rn, "script")) {
    json_t *s = json_object_get(rn, "script");
    if (!json_is_object(s) || (!json_is_string(json_object_get(s, "text")) &&
                               !json_is_string(json_object_get(s, "path"))))
      return fail(e, "Field '%s.script' needs a text or a path.", where);
  }
  return true;
}

/* Variable name of vars, when set, a whole number of milliseconds into
 * *out. */
static bool env_ms(json_t *vars, const char *name, long long *out,
                   struct verr *e)
{
  json_t *v = json_object_get(vars, name);
  long long ms;

  if (!v)
    return true;
  if (!emu_parse_long(json_string_value(v), &ms) || ms < 0)
    return fail(e, "%s must be a whole number of milliseconds.", name);
  *out = ms;
  return true;
}

/* taskSpec.environment.variables: per-job overrides for the emulator. */
static bool environment_ok(json_t *env, struct emu_job_spec *spec,
                           struct verr *e)
{
  const char *k;
  json_t *v, *vars;

  if (!env)
    return true;
  if (!json_is_object(env))
    return fail(e, "Invalid value at 'job.task_groups[0].task_spec."
                   "environment'.");
  vars = json_object_get(env, "variables");
  if (vars && !json_is_object(vars))
    return fail(e, "Invalid value at 'job.task_groups[0].task_spec."
                   "environment.variables': expected a map.");
  json_object_foreach (vars, k, v) {
    if (!json_is_string(v))
      return fail(e, "Environment variable \"%s\" must be a string.", k);
  }
  if (!env_ms(vars, "EMU_RUN_MS", &spec->run_ms, e) ||
      !env_ms(vars, "EMU_START_MS", &spec->start_ms, e))
    return false;
  v = json_object_get(vars, "EMU_OUTCOME");
  if (v) {
    if (!strcmp(json_string_value(v), "FAILED"))
      spec->outcome = EMU_OUTCOME_FAIL;
    else if (!strcmp(json_string_value(v), "SUCCEEDED"))
      spec->outcome = EMU_OUTCOME_SUCCEED;
    else
      return fail(e, "EMU_OUTCOME must be FAILED or SUCCEEDED.");
  }
  v = json_object_get(vars, "EMU_FAIL_FIRST_ATTEMPT");
  if (v) {
    if (!strcmp(json_string_value(v), "true"))
      spec->fail_first = true;
    else if (strcmp(json_string_value(v), "false") != 0)
      return fail(e, "EMU_FAIL_FIRST_ATTEMPT must be true or false.");
  }
  return true;
}

static bool task_spec_ok(json_t *ts, struct emu_job_spec *spec, struct verr *e)
{
  static const char *const known[] = {
      "runnables",     "computeResource",   "maxRunDuration",
      "maxRetryCount", "lifecyclePolicies", "environments",
      "volumes",       "environment",       NULL};
  static const char *const where = "job.task_groups[0].task_spec";
  json_t *runnables = json_object_get(ts, "runnables"), *cr, *x;
  const char *dur = NULL;
  size_t i;

  if (!json_is_object(ts))
    return fail(e, "Field 'job.task_groups[0].task_spec' is required.");
  if (!known_keys(ts, known, where, e))
    return false;
  if (!json_is_array(runnables) || json_array_size(runnables) == 0)
    return fail(e, "Field '%s.runnables' must hold at least one runnable.",
                where);
  json_array_foreach (runnables, i, x) {
    if (!runnable_ok(x, i, e))
      return false;
  }
  cr = json_object_get(ts, "computeResource");
  if (!object_or_absent(cr, "job.task_groups[0].task_spec.compute_resource", e))
    return false;
  /* int64 fields are strings in Google's JSON output */
  for (i = 0; cr && i < 3; i++) {
    static const char *const f[] = {"cpuMilli", "memoryMib", "bootDiskMib"};
    if (json_object_get(cr, f[i]) &&
        !int64_member(cr, f[i], "job.task_groups[0].task_spec.compute_resource",
                      0, 1LL << 40, 0, true, NULL, e))
      return false;
  }
  if (!string_member(ts, "maxRunDuration", where, false, &dur, e))
    return false;
  if (dur && !valid_duration(dur))
    return fail(e,
                "Invalid value at '%s.max_run_duration' (Duration): "
                "\"%s\".",
                where, dur);
  if (!int64_member(ts, "maxRetryCount", where, 0, 10, 0, false,
                    &spec->max_retry, e))
    return false;
  return environment_ok(json_object_get(ts, "environment"), spec, e);
}

static bool allowed_locations_ok(json_t *loc, const char *location,
                                 struct verr *e)
{
  json_t *arr, *x;
  size_t i, llen = strlen(location);

  if (!loc)
    return true;
  if (!json_is_object(loc))
    return fail(e, "Invalid value at 'job.allocation_policy.location'.");
  arr = json_object_get(loc, "allowedLocations");
  if (arr && !json_is_array(arr))
    return fail(e, "Invalid value at 'job.allocation_policy.location."
                   "allowed_locations'.");
  json_array_foreach (arr, i, x) {
    const char *s = json_string_value(x);
    bool ok = s && ((!strncmp(s, "regions/", 8) && !strcmp(s + 8, location)) ||
                    (!strncmp(s, "zones/", 6) &&
                     !strncmp(s + 6, location, llen) && s[6 + llen] == '-'));
    if (!ok)
      return fail(e,
                  "Allowed location \"%s\" is not in the job's region \"%s\" "
                  "(use regions/%s or zones/%s-*).",
                  s ? s : "?", location, location, location);
  }
  return true;
}

static bool allocation_ok(json_t *ap, const char *location, long long parallel,
                          struct emu_job_spec *spec, struct verr *e)
{
  static const char *const known[] = {"location", "instances", "serviceAccount",
                                      "labels",   "network",   "placement",
                                      "tags",     NULL};
  static const char *const known_ipt[] = {
      "policy",          "instanceTemplate",    "installGpuDrivers",
      "installOpsAgent", "blockProjectSshKeys", NULL};
  static const char *const known_pol[] = {
      "machineType", "minCpuPlatform", "provisioningModel", "accelerators",
      "bootDisk",    "disks",          "reservation",       NULL};
  json_t *inst, *ipt, *pol, *accs, *a;
  const char *model = NULL, *reservation = NULL;
  size_t i;

  snprintf(spec->model, sizeof(spec->model), "STANDARD");
  spec->gpus = 0;
  if (!ap)
    return true;
  if (!json_is_object(ap))
    return fail(e, "Invalid value at 'job.allocation_policy'.");
  if (!known_keys(ap, known, "job.allocation_policy", e) ||
      !allowed_locations_ok(json_object_get(ap, "location"), location, e) ||
      !labels_ok(json_object_get(ap, "labels"), "job.allocation_policy.labels",
                 e))
    return false;
  inst = json_object_get(ap, "instances");
  if (!inst)
    return true;
  if (!json_is_array(inst) || json_array_size(inst) > 1)
    return fail(e, "Field 'job.allocation_policy.instances' holds at most one "
                   "instance policy or template.");
  ipt = json_array_get(inst, 0);
  if (!ipt)
    return true;
  if (!json_is_object(ipt) ||
      !known_keys(ipt, known_ipt, "job.allocation_policy.instances[0]", e))
    return json_is_object(ipt)
               ? false
               : fail(e, "Invalid value at 'job.allocation_policy."
                         "instances[0]'.");
  pol = json_object_get(ipt, "policy");
  if (!pol && !json_is_string(json_object_get(ipt, "instanceTemplate")))
    return fail(e, "Field 'job.allocation_policy.instances[0]' needs a policy "
                   "or an instanceTemplate.");
  if (!pol)
    return true;
  if (!json_is_object(pol) ||
      !known_keys(pol, known_pol, "job.allocation_policy.instances[0].policy",
                  e))
    return json_is_object(pol) ? false
                               : fail(e, "Invalid value at "
                                         "'job.allocation_policy.instances[0]"
                                         ".policy'.");
  if (!string_member(pol, "provisioningModel", "policy", false, &model, e) ||
      !string_member(pol, "reservation", "policy", false, &reservation, e))
    return false;
  if (model && strcmp(model, "PROVISIONING_MODEL_UNSPECIFIED") != 0) {
    if (!emu_model_valid(model))
      return fail(e,
                  "Invalid value at 'job.allocation_policy.instances[0]."
                  "policy.provisioning_model' (ProvisioningModel): \"%s\".",
                  model);
    snprintf(spec->model, sizeof(spec->model), "%s", model);
  }
  if (!strcmp(spec->model, "RESERVATION_BOUND") &&
      (!reservation || !*reservation))
    return fail(e, "A RESERVATION_BOUND instance policy needs a "
                   "reservation.");
  accs = json_object_get(pol, "accelerators");
  if (accs && !json_is_array(accs))
    return fail(e, "Invalid value at 'job.allocation_policy.instances[0]."
                   "policy.accelerators'.");
  json_array_foreach (accs, i, a) {
    long long count = 1;
    if (!json_is_object(a) ||
        !string_member(a, "type", "accelerators", true, NULL, e) ||
        !int64_member(a, "count", "accelerators", 1, 16, 1, true, &count, e))
      return json_is_object(a) ? false : fail(e, "Invalid accelerator %zu.", i);
    if (i == 0)
      spec->gpus = parallel * count;
  }
  return true;
}

static bool logs_policy_ok(json_t *lp, struct verr *e)
{
  const char *dest = NULL;

  if (!lp)
    return true;
  if (!json_is_object(lp) ||
      !string_member(lp, "destination", "job.logs_policy", false, &dest, e))
    return json_is_object(lp) ? false
                              : fail(e, "Invalid value at 'job.logs_policy'.");
  if (dest && strcmp(dest, "CLOUD_LOGGING") != 0 && strcmp(dest, "PATH") != 0 &&
      strcmp(dest, "DESTINATION_UNSPECIFIED") != 0)
    return fail(e,
                "Invalid value at 'job.logs_policy.destination' "
                "(Destination): \"%s\".",
                dest);
  if (dest && !strcmp(dest, "PATH") &&
      !json_is_string(json_object_get(lp, "logsPath")))
    return fail(e, "A PATH logs policy needs a logsPath.");
  return true;
}

/*
 * Validate job (owned by the caller, rewritten in place into the form to
 * echo) and fill spec's model, GPUs, task count and overrides.
 */
static bool job_ok(json_t *job, struct emu_job_spec *spec, struct verr *e)
{
  static const char *const known[] = {
      "name",          "uid",    "priority",   "taskGroups", "allocationPolicy",
      "labels",        "status", "createTime", "updateTime", "logsPolicy",
      "notifications", NULL};
  static const char *const known_tg[] = {"name",
                                         "taskSpec",
                                         "taskCount",
                                         "parallelism",
                                         "schedulingPolicy",
                                         "taskEnvironments",
                                         "taskCountPerNode",
                                         "requireHostsFile",
                                         "permissiveSsh",
                                         "runAsNonRoot",
                                         NULL};
  json_t *tgs = json_object_get(job, "taskGroups"), *tg;
  long long parallel = 1;
  char tg_name[512];

  if (!known_keys(job, known, "job", e))
    return false;
  /* output-only fields are ignored on input */
  json_object_del(job, "name");
  json_object_del(job, "uid");
  json_object_del(job, "status");
  json_object_del(job, "createTime");
  json_object_del(job, "updateTime");
  if (json_object_get(job, "priority") &&
      !int64_member(job, "priority", "job", 0, 99, 0, true, NULL, e))
    return false;
  if (!json_is_array(tgs) || json_array_size(tgs) != 1)
    return fail(e, "Field 'job.task_groups' must hold exactly one task "
                   "group.");
  tg = json_array_get(tgs, 0);
  if (!json_is_object(tg))
    return fail(e, "Invalid value at 'job.task_groups[0]'.");
  if (!known_keys(tg, known_tg, "job.task_groups[0]", e) ||
      !int64_member(tg, "taskCount", "job.task_groups[0]", 1, 1000000, 1, true,
                    &spec->task_count, e) ||
      !int64_member(tg, "parallelism", "job.task_groups[0]", 1, 1000000,
                    spec->task_count, true, &parallel, e) ||
      !task_spec_ok(json_object_get(tg, "taskSpec"), spec, e) ||
      !allocation_ok(json_object_get(job, "allocationPolicy"), spec->location,
                     parallel, spec, e) ||
      !labels_ok(json_object_get(job, "labels"), "job.labels", e) ||
      !logs_policy_ok(json_object_get(job, "logsPolicy"), e))
    return false;
  if (json_object_get(tg, "taskCountPerNode") &&
      !int64_member(tg, "taskCountPerNode", "job.task_groups[0]", 1, 1000000, 1,
                    true, NULL, e))
    return false;
  snprintf(tg_name, sizeof(tg_name),
           "projects/%s/locations/%s/jobs/%s/taskGroups/group0", spec->project,
           spec->location, spec->id);
  json_object_set_new(tg, "name", json_string(tg_name));
  return true;
}

/* ---- request plumbing ---- */

static bool valid_location(const char *s, bool allow_dash)
{
  size_t i;

  if (allow_dash && !strcmp(s, "-"))
    return true;
  if (!(s[0] >= 'a' && s[0] <= 'z') || strlen(s) > 62)
    return false;
  for (i = 0; s[i]; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '-'))
      return false;
  return true;
}

/* params[0] must be the configured project, params[1] a location. */
static bool parent_ok(struct emu_req *r, const char *permission,
                      bool allow_dash)
{
  struct emu_config c;

  emu_config_get(&c);
  if (strcmp(r->params[0], c.project) != 0) {
    emu_reply_error(r, 403, "PERMISSION_DENIED", NULL,
                    "Permission '%s' denied on resource "
                    "'projects/%s/locations/%s' (or it may not exist).",
                    permission, r->params[0], r->params[1]);
    return false;
  }
  if (!valid_location(r->params[1], allow_dash)) {
    emu_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
                    "Invalid location \"%s\".", r->params[1]);
    return false;
  }
  return true;
}

/* A query argument under its snake_case or lowerCamelCase name. */
static const char *query2(const struct emu_req *r, const char *snake,
                          const char *camel)
{
  const char *v = emu_req_query(r, snake);

  return v ? v : emu_req_query(r, camel);
}

static void job_name(const struct emu_req *r, char *buf, size_t len)
{
  snprintf(buf, len, "projects/%s/locations/%s/jobs/%s", r->params[0],
           r->params[1], r->params[2]);
}

void emu_batch_create(struct emu_req *r)
{
  struct emu_job_spec spec;
  struct verr e;
  const char *job_id = query2(r, "job_id", "jobId");
  const char *request_id = query2(r, "request_id", "requestId");
  json_t *job = NULL, *out = NULL;
  enum emu_jobs_rc rc;
  char name[512];

  if (!parent_ok(r, "batch.jobs.create", false))
    return;
  memset(&spec, 0, sizeof(spec));
  spec.run_ms = -1;
  spec.start_ms = -1;
  snprintf(spec.project, sizeof(spec.project), "%s", r->params[0]);
  snprintf(spec.location, sizeof(spec.location), "%s", r->params[1]);
  if (job_id && !valid_job_id(job_id)) {
    emu_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
                    "Job id \"%s\" is invalid: it must match "
                    "^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$.",
                    job_id);
    return;
  }
  if (job_id) {
    snprintf(spec.id, sizeof(spec.id), "%s", job_id);
  } else {
    char hex[17];
    emu_random_hex(hex, 8);
    snprintf(spec.id, sizeof(spec.id), "job-%s", hex);
  }
  if (request_id && !emu_is_uuid(request_id)) {
    emu_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
                    "request_id \"%s\" must be a valid, non-zero UUID.",
                    request_id);
    return;
  }
  snprintf(spec.request_id, sizeof(spec.request_id), "%s",
           request_id ? request_id : "");
  if (!json_is_object(r->json)) {
    emu_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
                    "The request body must be a Job object.");
    return;
  }
  job = json_deep_copy(r->json);
  if (!job || !job_ok(job, &spec, &e)) {
    emu_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "%s",
                    job ? e.msg : "out of memory");
    json_decref(job);
    return;
  }
  rc = emu_jobs_create(&spec, job, &out);
  snprintf(name, sizeof(name), "projects/%s/locations/%s/jobs/%s", spec.project,
           spec.location, spec.id);
  switch (rc) {
  case EMU_JOBS_OK:
  case EMU_JOBS_SAME_REQUEST:
    emu_reply_json(r, 200, out);
    return;
  case EMU_JOBS_EXISTS:
    emu_reply_error(r, 409, "ALREADY_EXISTS", NULL,
                    "Resource \"%s\" already exists", name);
    return;
  case EMU_JOBS_NOT_FOUND:
  case EMU_JOBS_BAD_STATE:
  case EMU_JOBS_NO_MEMORY:
    break;
  }
  json_decref(out);
  emu_reply_error(r, 500, "INTERNAL", NULL, "Could not create the job.");
}

void emu_batch_get(struct emu_req *r)
{
  char name[512];
  json_t *out = NULL;

  if (!parent_ok(r, "batch.jobs.get", false))
    return;
  job_name(r, name, sizeof(name));
  if (emu_jobs_get(name, &out) != EMU_JOBS_OK) {
    emu_reply_error(r, 404, "NOT_FOUND", NULL, "Job \"%s\" not found.", name);
    return;
  }
  emu_reply_json(r, 200, out);
}

/* ---- list filters ---- */

enum term_kind { T_HAS_LABEL, T_LABEL_EQ, T_STATE_EQ };

struct term {
  enum term_kind kind;
  char key[72];
  char value[72];
};

struct filter {
  struct term t[MAX_TERMS];
  int n;
};

/* A bare or double-quoted token at *p into out; advances *p. */
static bool token(const char **p, const char *stops, char *out, size_t outlen)
{
  const char *s = *p;
  size_t n;

  while (*s == ' ')
    s++;
  if (*s == '"') {
    const char *end = strchr(s + 1, '"');
    if (!end)
      return false;
    n = (size_t)(end - s - 1);
    if (n >= outlen)
      return false;
    memcpy(out, s + 1, n);
    s = end + 1;
  } else {
    n = strcspn(s, stops);
    if (n == 0 || n >= outlen)
      return false;
    memcpy(out, s, n);
    s += n;
  }
  out[n] = '\0';
  while (*s == ' ')
    s++;
  *p = s;
  return true;
}

static bool parse_term(const char *s, struct term *t)
{
  const char *p = s;

  memset(t, 0, sizeof(*t));
  if (!strncmp(p, "labels.", 7)) {
    p += 7;
    if (!token(&p, ":= ", t->key, sizeof(t->key)))
      return false;
    if (!strcmp(p, ":*")) {
      t->kind = T_HAS_LABEL;
      return true;
    }
    if (*p != '=' && *p != ':')
      return false;
    p++;
    t->kind = T_LABEL_EQ;
    return token(&p, " ", t->value, sizeof(t->value)) && *p == '\0';
  }
  if (!strncmp(p, "status.state", 12))
    p += 12;
  else if (!strncmp(p, "state", 5))
    p += 5;
  else
    return false;
  while (*p == ' ')
    p++;
  if (*p != '=' && *p != ':')
    return false;
  p++;
  t->kind = T_STATE_EQ;
  return token(&p, " ", t->value, sizeof(t->value)) && *p == '\0';
}

static bool parse_filter(const char *s, struct filter *f)
{
  char buf[1024], *p, *and;

  f->n = 0;
  if (!s)
    return true;
  if (strlen(s) >= sizeof(buf))
    return false;
  snprintf(buf, sizeof(buf), "%s", s);
  for (p = buf; p; p = and) {
    char *end;
    and = strstr(p, " AND ");
    if (and) {
      *and = '\0';
      and += 5;
    }
    while (*p == ' ')
      p++;
    end = p + strlen(p);
    while (end > p && end[-1] == ' ')
      *--end = '\0';
    if (!*p && !and&&f->n == 0)
      return true; /* empty filter */
    if (f->n >= MAX_TERMS || !parse_term(p, &f->t[f->n]))
      return false;
    f->n++;
  }
  return true;
}

static bool filter_match(const json_t *labels, const char *state, void *ud)
{
  const struct filter *f = ud;
  int i;

  for (i = 0; i < f->n; i++) {
    const struct term *t = &f->t[i];
    const char *v = json_string_value(json_object_get(labels, t->key));
    switch (t->kind) {
    case T_HAS_LABEL:
      if (!v)
        return false;
      break;
    case T_LABEL_EQ:
      if (!v || strcmp(v, t->value) != 0)
        return false;
      break;
    case T_STATE_EQ:
      if (strcmp(state, t->value) != 0)
        return false;
      break;
    }
  }
  return true;
}

void emu_batch_list(struct emu_req *r)
{
  const char *filter = emu_req_query(r, "filter");
  const char *size_s = query2(r, "page_size", "pageSize");
  const char *tok = query2(r, "page_token", "pageToken");
  struct filter f;
  long long size = PAGE_DEFAULT, after = 0;
  unsigned long long next = 0;
  json_t *jobs, *out;

  if (!parent_ok(r, "batch.jobs.list", true))
    return;
  if (size_s && (!emu_parse_long(size_s, &size) || size < 0)) {
    emu_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
                    "page_size must be a non-negative integer.");
    return;
  }
  if (size == 0)
    size = PAGE_DEFAULT;
  if (size > PAGE_MAX)
    size = PAGE_MAX;
  if (tok && *tok &&
      (strncmp(tok, TOKEN_PREFIX, strlen(TOKEN_PREFIX)) != 0 ||
       !emu_parse_long(tok + strlen(TOKEN_PREFIX), &after) || after <= 0)) {
    emu_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "Invalid page token.");
    return;
  }
  if (!parse_filter(filter, &f)) {
    emu_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
                    "Unsupported or malformed filter \"%s\".", filter);
    return;
  }
  jobs = emu_jobs_list(r->params[0], r->params[1], filter_match, &f,
                       (unsigned long long)after, (size_t)size, &next);
  out = json_object();
  if (!jobs || !out) {
    json_decref(jobs);
    json_decref(out);
    emu_reply_error(r, 500, "INTERNAL", NULL, "out of memory");
    return;
  }
  /* proto3 JSON omits empty repeated fields and empty strings */
  if (json_array_size(jobs))
    json_object_set(out, "jobs", jobs);
  json_decref(jobs);
  if (next) {
    char t[48];
    snprintf(t, sizeof(t), TOKEN_PREFIX "%llu", next);
    json_object_set_new(out, "nextPageToken", json_string(t));
  }
  emu_reply_json(r, 200, out);
}

/*
 * Run fn, a cancel or delete, on the job the path names and answer: its
 * operation, 404 for an unknown job, 400 when the job's state refuses it
 * ("cannot be <done>"), else 500 ("Could not <verb> the job.").
 */
static void job_op(struct emu_req *r,
                   enum emu_jobs_rc (*fn)(const char *, json_t **),
                   const char *verb, const char *done)
{
  char name[512];
  json_t *op = NULL, *job = NULL;

  job_name(r, name, sizeof(name));
  switch (fn(name, &op)) {
  case EMU_JOBS_OK:
    emu_reply_json(r, 200, op);
    return;
  case EMU_JOBS_NOT_FOUND:
    emu_reply_error(r, 404, "NOT_FOUND", NULL, "Job \"%s\" not found.", name);
    return;
  case EMU_JOBS_BAD_STATE:
    emu_jobs_get(name, &job);
    emu_reply_error(r, 400, "FAILED_PRECONDITION", NULL,
                    "Job \"%s\" is in state %s and cannot be %s.", name,
                    json_string_value(json_object_get(
                        json_object_get(job, "status"), "state")),
                    done);
    json_decref(job);
    return;
  case EMU_JOBS_SAME_REQUEST:
  case EMU_JOBS_EXISTS:
  case EMU_JOBS_NO_MEMORY:
    break;
  }
  json_decref(op);
  emu_reply_error(r, 500, "INTERNAL", NULL, "Could not %s the job.", verb);
}

void emu_batch_cancel(struct emu_req *r)
{
  if (!parent_ok(r, "batch.jobs.cancel", false))
    return;
  if (r->json && !json_is_object(r->json)) {
    emu_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
                    "The request body must be a CancelJobRequest object.");
    return;
  }
  job_op(r, emu_jobs_cancel, "cancel", "cancelled");
}

void emu_batch_delete(struct emu_req *r)
{
  if (!parent_ok(r, "batch.jobs.delete", false))
    return;
  job_op(r, emu_jobs_delete, "delete", "deleted");
}

void emu_batch_operation(struct emu_req *r)
{
  char name[512];
  json_t *op = NULL;

  if (!parent_ok(r, "batch.operations.get", false))
    return;
  snprintf(name, sizeof(name), "projects/%s/locations/%s/operations/%s",
           r->params[0], r->params[1], r->params[2]);
  if (emu_jobs_operation(name, &op) != EMU_JOBS_OK) {
    emu_reply_error(r, 404, "NOT_FOUND", NULL, "Operation \"%s\" not found.",
                    name);
    return;
  }
  emu_reply_json(r, 200, op);
}
