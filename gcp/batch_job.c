/*
 * job.c — pure functions behind the Cloud Batch client: the deterministic
 * jobId, the Job body of SPEC §4, Batch → gpugate states, google.rpc.Status
 * errors and back-off. No I/O and no globals (see job.h).
 *
 * The body is built from what the database stores (flavor and job specs as
 * normalised by handlers/flavors.c and handlers/jobs.c), so every field it
 * reads has already been validated once; this file still refuses input it
 * cannot map rather than send Batch a body it would reject.
 */
#include <ctype.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcp/batch_job.h"
#include "lib/rfc3339.h"

#define RETRY_INFO_TYPE "type.googleapis.com/google.rpc.RetryInfo"
#define MAX_DELAY_MS (24L * 3600 * 1000) /* a bound for hostile headers */

/* ------------------------------------------------------------- ids */

static bool lower_alnum(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* ^[a-z]([a-z0-9-]*[a-z0-9])?$ and at most max characters */
static bool batch_id_ok(const char *s, size_t max)
{
  size_t i, n = strlen(s);

  if (n == 0 || n > max || !(s[0] >= 'a' && s[0] <= 'z') ||
      !lower_alnum(s[n - 1]))
    return false;
  for (i = 1; i < n; i++)
    if (!lower_alnum(s[i]) && s[i] != '-')
      return false;
  return true;
}

int batch_job_id(const char *job_id, int attempt, char *out, size_t outlen)
{
  int n;

  if (!out || outlen == 0)
    return -1;
  out[0] = '\0';
  if (!job_id || !*job_id || attempt < 1)
    return -1;
  n = snprintf(out, outlen, "gpugate-%s-a%d", job_id, attempt);
  if (n < 0 || (size_t)n >= outlen || !batch_id_ok(out, BATCH_JOB_ID_MAX)) {
    out[0] = '\0';
    return -1;
  }
  return 0;
}

/* The decimal number of digits s[0..n) (n >= 1, at most 6 digits, no
 * leading zero), or -1. */
static int small_number(const char *s, size_t n)
{
  int v = 0;
  size_t i;

  if (n == 0 || n > 6 || (s[0] == '0' && n > 1))
    return -1;
  for (i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

/* The start of a trailing "-<letter><digits>" of s[0..*n) as its number,
 * shortening *n to before it; -1 when s does not end so. */
static int trailing(const char *s, size_t *n, char letter)
{
  size_t end = *n, i = end;
  int v;

  while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
    i--;
  if (i < 2 || s[i - 1] != letter || s[i - 2] != '-')
    return -1;
  if ((v = small_number(s + i, end - i)) < 0)
    return -1;
  *n = i - 2;
  return v;
}

int batch_job_id_parse(const char *name, char *id, size_t idlen, int *attempt,
                       int *race_k)
{
  const char *base = name ? strrchr(name, '/') : NULL;
  size_t n, idn;
  int a, k = 0;

  if (!name)
    return -1;
  base = base ? base + 1 : name;
  n = strlen(base);
  if (n <= 8 || strncmp(base, "gpugate-", 8) != 0)
    return -1;
  {
    size_t m = n;
    int r = trailing(base, &m, 'r');
    if (r >= 1) {
      k = r;
      n = m;
    }
  }
  if ((a = trailing(base, &n, 'a')) < 1 || n <= 8)
    return -1;
  idn = n - 8;
  if (idn >= idlen)
    return -1;
  memcpy(id, base + 8, idn);
  id[idn] = '\0';
  *attempt = a;
  if (race_k)
    *race_k = k;
  return 0;
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

/* ---------------------------------------------------------- states */

int64_t batch_job_ended_us(const json_t *job)
{
  const json_t *status = json_object_get(job, "status"), *ev;
  const char *state = json_string_value(json_object_get(status, "state"));
  int64_t last = 0, t;
  size_t i;

  if (!state ||
      (strcmp(state, "SUCCEEDED") != 0 && strcmp(state, "FAILED") != 0 &&
       strcmp(state, "CANCELLED") != 0))
    return 0;
  json_array_foreach (json_object_get(status, "statusEvents"), i, ev) {
    if (rfc3339_parse_us(json_string_value(json_object_get(ev, "eventTime")),
                         &t) == 0 &&
        t > last)
      last = t;
  }
  return last;
}

enum batch_state batch_state_parse(const char *s)
{
  static const struct {
    const char *name;
    enum batch_state st;
  } map[] = {{"QUEUED", BATCH_STATE_QUEUED},
             {"SCHEDULED", BATCH_STATE_QUEUED},
             {"RUNNING", BATCH_STATE_RUNNING},
             {"SUCCEEDED", BATCH_STATE_SUCCEEDED},
             {"FAILED", BATCH_STATE_FAILED},
             {"CANCELLATION_IN_PROGRESS", BATCH_STATE_CANCELLING},
             {"CANCELLED", BATCH_STATE_CANCELLED},
             {"DELETION_IN_PROGRESS", BATCH_STATE_DELETED}};
  size_t i;

  for (i = 0; s && i < sizeof(map) / sizeof(map[0]); i++)
    if (!strcmp(s, map[i].name))
      return map[i].st;
  return BATCH_STATE_UNKNOWN;
}

const char *batch_state_target(enum batch_state st, enum batch_intent intent,
                               const char **reason)
{
  const char *to = NULL, *why = NULL;
  bool stopping = intent != BATCH_INTENT_NONE;

  switch (st) {
  case BATCH_STATE_QUEUED:
    to = stopping ? NULL : "QUEUED";
    break;
  case BATCH_STATE_RUNNING:
    to = stopping ? NULL : "RUNNING";
    break;
  case BATCH_STATE_CANCELLING:
    /* the Batch job may still run: a cancel or an eviction (and the quota
     * it holds) waits for CANCELLED; one cancelled outside gpugate is
     * judged then too (db/batch.c, the invariant) */
    break;
  case BATCH_STATE_SUCCEEDED: /* finished before our cancel took effect */
    to = "SUCCEEDED";
    break;
  case BATCH_STATE_FAILED:
  case BATCH_STATE_CANCELLED:
  case BATCH_STATE_DELETED:
    if (intent == BATCH_INTENT_EVICT) {
      to = "PENDING";
      why = "Evicted";
    } else if (intent == BATCH_INTENT_CANCEL) {
      to = "CANCELLED";
      why = "CancelledByUser";
    } else if (st == BATCH_STATE_FAILED) {
      to = "FAILED";
      why = "BatchJobFailed";
    } else if (st == BATCH_STATE_CANCELLED) {
      to = "FAILED";
      why = "BatchJobCancelledOutsideGpugate";
    } else {
      to = "FAILED";
      why = "BatchJobDeleted";
    }
    break;
  case BATCH_STATE_UNKNOWN:
  default:
    break;
  }
  if (reason)
    *reason = why;
  return to;
}

/* ---------------------------------------------------------- errors */

/* The google.rpc.Code name HTTP usually carries a status as. */
static const char *code_for_http(long http)
{
  switch (http) {
  case 400:
    return "INVALID_ARGUMENT";
  case 401:
    return "UNAUTHENTICATED";
  case 403:
    return "PERMISSION_DENIED";
  case 404:
    return "NOT_FOUND";
  case 408:
  case 504:
    return "DEADLINE_EXCEEDED";
  case 409:
    return "ALREADY_EXISTS"; /* bare 409s only answer creates here */
  case 429:
    return "RESOURCE_EXHAUSTED";
  case 499:
    return "CANCELLED";
  case 500:
    return "INTERNAL";
  case 501:
    return "UNIMPLEMENTED";
  case 502:
  case 503:
    return "UNAVAILABLE";
  default:
    return http >= 200 && http < 300 ? "OK" : "UNKNOWN";
  }
}

/*
 * Copy n bytes of src into dst as one printable line: control characters
 * become spaces, runs of spaces fold, ends are trimmed, and a cut never
 * splits a UTF-8 sequence.
 */
static void put_text(char *dst, size_t dstlen, const char *src, size_t n)
{
  size_t i, o = 0;
  bool space = false;

  for (i = 0; i < n && o + 1 < dstlen; i++) {
    unsigned char c = (unsigned char)src[i];
    if (c < 0x20 || c == 0x7F || c == ' ') {
      space = o > 0;
      continue;
    }
    if (space) {
      if (o + 2 >= dstlen)
        break;
      dst[o++] = ' ';
      space = false;
    }
    dst[o++] = (char)c;
  }
  /* drop a trailing partial UTF-8 sequence */
  if (o > 0 && ((unsigned char)dst[o - 1] & 0x80)) {
    size_t start = o, need;
    unsigned char lead;
    while (start > 0 && ((unsigned char)dst[start - 1] & 0xC0) == 0x80)
      start--;
    if (start > 0) {
      lead = (unsigned char)dst[start - 1];
      need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
      if (o - (start - 1) < need)
        o = start - 1;
    }
  }
  dst[o] = '\0';
}

/* A non-JSON body (HTML error page, proxy text) as a short message. */
static void text_message(char *dst, size_t dstlen, const char *body)
{
  const char *t = strcasestr(body, "<title>"), *end;
  char buf[2048];
  size_t n = 0;
  const char *p;

  if (t && (end = strcasestr(t, "</title>")) != NULL) {
    t += 7;
    put_text(dst, dstlen, t, (size_t)(end - t));
    if (*dst)
      return;
  }
  /* strip tags, and the text of <style> and <script> */
  for (p = body; *p && n + 1 < sizeof(buf); p++) {
    if (*p == '<') {
      const char *skip_to = NULL;
      if (!strncasecmp(p, "<style", 6))
        skip_to = strcasestr(p, "</style>");
      else if (!strncasecmp(p, "<script", 7))
        skip_to = strcasestr(p, "</script>");
      if (skip_to)
        p = skip_to;
      p = strchr(p, '>');
      if (!p)
        break;
      buf[n++] = ' ';
      continue;
    }
    buf[n++] = *p;
  }
  put_text(dst, dstlen, buf, n);
}

/* Google's JSON Duration, "1.5s", as whole milliseconds rounded up. */
static long duration_ms(const char *s)
{
  long sec = 0, ms = 0, scale = 100;
  bool rest = false;
  const char *p = s;

  if (!isdigit((unsigned char)*p))
    return -1;
  for (; isdigit((unsigned char)*p); p++) {
    if (sec > MAX_DELAY_MS / 1000)
      return MAX_DELAY_MS;
    sec = sec * 10 + (*p - '0');
  }
  if (*p == '.') {
    for (p++; isdigit((unsigned char)*p); p++) {
      if (scale > 0)
        ms += (*p - '0') * scale;
      else if (*p != '0')
        rest = true;
      scale /= 10;
    }
  }
  if (*p != 's' || p[1] != '\0')
    return -1;
  ms += sec * 1000 + (rest ? 1 : 0);
  return ms > MAX_DELAY_MS ? MAX_DELAY_MS : ms;
}

/* The RetryInfo delay among google.rpc.Status details; -1 when none. */
static long retry_info_ms(json_t *details)
{
  size_t i;
  json_t *d;

  json_array_foreach (details, i, d) {
    json_t *delay = json_object_get(d, "retryDelay");
    const char *type = str_of(d, "@type");
    if (!type || strcmp(type, RETRY_INFO_TYPE) != 0)
      continue;
    if (json_is_string(delay))
      return duration_ms(json_string_value(delay));
    if (json_is_object(delay)) { /* {"seconds": n, "nanos": n} */
      json_int_t s = int_of(delay, "seconds", 0);
      json_int_t ns = int_of(delay, "nanos", 0);
      if (s < 0 || ns < 0 || s > MAX_DELAY_MS / 1000)
        return s < 0 || ns < 0 ? -1 : MAX_DELAY_MS;
      return (long)(s * 1000 + (ns + 999999) / 1000000);
    }
  }
  return -1;
}

/* Retry-After: delta-seconds or an HTTP-date (three formats); -1 if bad. */
static long retry_after_ms(const char *h, time_t now)
{
  static const char *const formats[] = {
      "%a, %d %b %Y %H:%M:%S GMT", /* IMF-fixdate */
      "%A, %d-%b-%y %H:%M:%S GMT", /* RFC 850 */
      "%a %b %e %H:%M:%S %Y"};     /* asctime */
  char buf[64];
  size_t i, n;
  long secs = 0;

  while (*h == ' ' || *h == '\t')
    h++;
  n = strlen(h);
  while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t' || h[n - 1] == '\r' ||
                   h[n - 1] == '\n'))
    n--;
  if (n == 0 || n >= sizeof(buf))
    return -1;
  memcpy(buf, h, n);
  buf[n] = '\0';
  for (i = 0; i < n && isdigit((unsigned char)buf[i]); i++)
    if (secs <= MAX_DELAY_MS / 1000)
      secs = secs * 10 + (buf[i] - '0');
  if (i == n) {
    if (secs > MAX_DELAY_MS / 1000)
      return MAX_DELAY_MS;
    return secs * 1000;
  }
  for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
    struct tm tm;
    const char *end;
    time_t t;
    memset(&tm, 0, sizeof(tm));
    end = strptime(buf, formats[i], &tm);
    if (!end || *end)
      continue;
    t = timegm(&tm);
    if (t == (time_t)-1)
      return -1;
    if (t <= now)
      return 0;
    if (t - now > MAX_DELAY_MS / 1000)
      return MAX_DELAY_MS;
    return (long)(t - now) * 1000;
  }
  return -1;
}

static void set_str(char *dst, size_t dstlen, const char *src)
{
  put_text(dst, dstlen, src, strlen(src));
}

int batch_parse_error_at(long http_status, const char *body,
                         const char *retry_after_header, time_t now,
                         struct batch_error *e)
{
  json_t *root = NULL, *err;
  json_error_t jerr;
  long ra = -1, ri = -1;
  int rc = -1;

  memset(e, 0, sizeof(*e));
  e->http_status = http_status;
  set_str(e->status, sizeof(e->status), code_for_http(http_status));
  if (body && *body)
    root = json_loads(body, JSON_REJECT_DUPLICATES, &jerr);
  err = json_object_get(root, "error");
  if (json_is_object(err)) { /* google.rpc.Status */
    const char *st = str_of(err, "status"), *msg = str_of(err, "message");
    if (st && *st)
      set_str(e->status, sizeof(e->status), st);
    if (msg)
      set_str(e->message, sizeof(e->message), msg);
    ri = retry_info_ms(json_object_get(err, "details"));
    rc = 0;
  } else if (json_is_string(err)) { /* OAuth 2.0 token endpoint (RFC 6749) */
    const char *desc = str_of(root, "error_description");
    char msg[sizeof(e->message)];
    snprintf(msg, sizeof(msg), "%s%s%s", json_string_value(err),
             desc ? ": " : "", desc ? desc : "");
    set_str(e->message, sizeof(e->message), msg);
    rc = 0;
  } else if (body && *body && !root) {
    text_message(e->message, sizeof(e->message), body);
  }
  if (!*e->message)
    snprintf(e->message, sizeof(e->message), "HTTP %ld", http_status);
  if (retry_after_header)
    ra = retry_after_ms(retry_after_header, now);
  e->retry_after_ms = ra > ri ? ra : ri;
  e->not_found = http_status == 404;
  e->already_exists =
      http_status == 409 && !strcmp(e->status, "ALREADY_EXISTS");
  e->retryable = http_status == 408 || http_status == 429 ||
                 http_status == 500 || http_status == 502 ||
                 http_status == 503 || http_status == 504 ||
                 (http_status == 409 && !strcmp(e->status, "ABORTED"));
  json_decref(root);
  return rc;
}

int batch_parse_error(long http_status, const char *body,
                      const char *retry_after_header, struct batch_error *e)
{
  return batch_parse_error_at(http_status, body, retry_after_header, time(NULL),
                              e);
}

void batch_error_transport(struct batch_error *e, const char *status,
                           const char *message, bool retryable)
{
  memset(e, 0, sizeof(*e));
  set_str(e->status, sizeof(e->status), status);
  set_str(e->message, sizeof(e->message), message);
  e->retry_after_ms = -1;
  e->retryable = retryable;
}

/* --------------------------------------------------------- backoff */

long batch_backoff_ms(int try_no, long retry_after_ms, unsigned *rng_state)
{
  unsigned x = *rng_state ? *rng_state : 0x9E3779B9u;
  long ceiling = BATCH_BACKOFF_BASE_MS, d;
  int i;

  /* xorshift32: cheap, per caller, reproducible from a seed */
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  *rng_state = x;
  for (i = 0; i < try_no && ceiling < BATCH_BACKOFF_CAP_MS; i++)
    ceiling *= 2;
  if (ceiling > BATCH_BACKOFF_CAP_MS)
    ceiling = BATCH_BACKOFF_CAP_MS;
  d = (long)(x % (unsigned)(ceiling + 1));
  if (retry_after_ms >= 0 && d < retry_after_ms)
    d = retry_after_ms;
  return d;
}
