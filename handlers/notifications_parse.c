/*
 * notifications_parse.c — Pub/Sub push bodies read without side effects
 * (see notifications_parse.h). Anything a user can put into a Batch job or
 * a Pub/Sub message ends up here, so every field is bounded and checked
 * before the database is asked about it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "handlers/notifications_parse.h"

static bool digits(const char *s, size_t n, size_t max)
{
  size_t i;

  if (n == 0 || n > max)
    return false;
  for (i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return true;
}

bool notifications_is_gpugate_job(const char *base)
{
  size_t n = strlen(base), i;
  const char *dash;

  if (n > 63 || strncmp(base, "gpugate-", 8) != 0)
    return false;
  for (i = 8; i < n; i++)
    if (!((base[i] >= 'a' && base[i] <= 'z') ||
          (base[i] >= '0' && base[i] <= '9') || base[i] == '-'))
      return false;
  /* an optional -r<k> of a raced region, then -a<attempt> */
  dash = memrchr(base, '-', n);
  if (dash && dash[1] == 'r' &&
      digits(dash + 2, n - (size_t)(dash - base) - 2, 4) && dash > base + 8)
    n = (size_t)(dash - base);
  dash = memrchr(base, '-', n);
  if (!dash || dash <= base + 8 || dash[1] != 'a' ||
      !digits(dash + 2, n - (size_t)(dash - base) - 2, 9))
    return false;
  /* the job id between: no empty or dangling parts */
  return base[8] != '-' && dash[-1] != '-';
}

static bool state_ok(const char *s)
{
  size_t i;

  for (i = 0; s[i]; i++)
    if (!((s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_'))
      return false;
  return i > 0 && i < PUSH_STATE_MAX;
}

static enum push_kind fail(struct push_msg *out, enum push_kind kind,
                           const char *why)
{
  out->kind = kind;
  out->why = why;
  out->job_name[0] = '\0';
  out->state[0] = '\0';
  return kind;
}

enum push_kind notifications_parse_envelope(const json_t *env,
                                            struct push_msg *out)
{
  const json_t *msg, *attrs, *type, *name, *state; /* borrowed */
  const char *base;

  memset(out, 0, sizeof(*out));
  msg = json_is_object(env) ? json_object_get(env, "message") : NULL;
  if (!json_is_object(msg))
    return fail(out, PUSH_MALFORMED, "no message object");
  attrs = json_object_get(msg, "attributes");
  if (!attrs)
    return fail(out, PUSH_IGNORED, "no attributes");
  if (!json_is_object(attrs))
    return fail(out, PUSH_MALFORMED, "attributes not an object");
  type = json_object_get(attrs, "Type");
  name = json_object_get(attrs, "JobName");
  state = json_object_get(attrs, "NewJobState");
  if ((type && !json_is_string(type)) || (name && !json_is_string(name)) ||
      (state && !json_is_string(state)))
    return fail(out, PUSH_MALFORMED, "attribute not a string");
  if (type && strcmp(json_string_value(type), "JOB_STATE_CHANGED") != 0)
    return fail(out, PUSH_IGNORED, "not a job state change");
  if (!name || !state)
    return fail(out, PUSH_IGNORED, "no JobName or NewJobState");
  if (json_string_length(name) >= PUSH_NAME_MAX ||
      strlen(json_string_value(name)) != json_string_length(name))
    return fail(out, PUSH_MALFORMED, "JobName too long");
  if (!state_ok(json_string_value(state)) ||
      strlen(json_string_value(state)) != json_string_length(state))
    return fail(out, PUSH_MALFORMED, "NewJobState not a state");
  base = strrchr(json_string_value(name), '/');
  base = base ? base + 1 : json_string_value(name);
  if (!notifications_is_gpugate_job(base))
    return fail(out, PUSH_FOREIGN, "not a gpugate Batch job");
  snprintf(out->job_name, sizeof(out->job_name), "%s", json_string_value(name));
  snprintf(out->state, sizeof(out->state), "%s", json_string_value(state));
  out->kind = PUSH_JOB_STATE;
  out->why = NULL;
  return PUSH_JOB_STATE;
}

enum push_kind notifications_parse_push(const char *body, size_t len,
                                        struct push_msg *out)
{
  json_t *env = NULL; /* new */
  enum push_kind kind;

  if (body)
    env = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
  if (!json_is_object(env)) {
    json_decref(env);
    memset(out, 0, sizeof(*out));
    return fail(out, PUSH_MALFORMED, "not a JSON object");
  }
  kind = notifications_parse_envelope(env, out);
  json_decref(env);
  return kind;
}
