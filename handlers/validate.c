/*
 * validate.c — field-table validation of JSON bodies, names and pages.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/validate.h"
#include "lib/cursor.h"
#include "server/problem.h"

static const char *const job_states[] = {"PENDING", "ADMITTED",  "QUEUED",
                                         "RUNNING", "EVICTING",  "SUCCEEDED",
                                         "FAILED",  "CANCELLED", NULL};

bool v_job_states(const char *s)
{
  while (*s) {
    size_t n = strcspn(s, ","), i;
    bool known = false;
    for (i = 0; job_states[i]; i++)
      known = known ||
              (strlen(job_states[i]) == n && !strncmp(job_states[i], s, n));
    if (!known)
      return false;
    s += n;
    if (*s == ',')
      s++;
  }
  return true;
}

bool v_is_name(const char *s)
{
  size_t n = strlen(s), i;

  if (n == 0 || n > 63)
    return false;
  for (i = 0; i < n; i++) {
    char c = s[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && !(c == '-' && i > 0 && i < n - 1))
      return false;
  }
  return true;
}

static bool is_region(const char *s)
{
  size_t n = strlen(s), i, dashes = 0;

  if (n < 4 || n > 40 || !(s[0] >= 'a' && s[0] <= 'z'))
    return false;
  for (i = 0; i < n; i++) {
    char c = s[i];
    if (c == '-')
      dashes++;
    else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
      return false;
  }
  return dashes >= 1 && s[n - 1] >= '0' && s[n - 1] <= '9';
}

/* append s[0..n) to out (of outlen bytes, *len used), cut at outlen - 1 */
static void path_put(char *out, size_t outlen, size_t *len, const char *s,
                     size_t n)
{
  if (n > outlen - 1 - *len)
    n = outlen - 1 - *len;
  memcpy(out + *len, s, n);
  *len += n;
}

/* "prefix.key", or "key" without a prefix, cut to outlen - 1 bytes as
 * snprintf() would (without its format parsing: this runs for every field
 * of every body) */
static void path_of(char *out, size_t outlen, const char *prefix,
                    const char *key)
{
  size_t len = 0;

  if (outlen == 0)
    return;
  if (*prefix) {
    path_put(out, outlen, &len, prefix, strlen(prefix));
    path_put(out, outlen, &len, ".", 1);
  }
  path_put(out, outlen, &len, key, strlen(key));
  out[len] = '\0';
}

static const char *type_name(const json_t *v)
{
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
  case JSON_REAL:
    return "a number";
  case JSON_TRUE:
  case JSON_FALSE:
    return "a boolean";
  default:
    return "null";
  }
}

static json_t *check_value(struct gg_req *req, const char *path, json_t *v,
                           const struct v_field *f);

static json_t *check_list(struct gg_req *req, const char *path, json_t *v,
                          const struct v_field *f)
{
  json_t *out, *item;
  size_t i, n;
  bool ok = true;

  if (!json_is_array(v)) {
    problem_field(req, path, "must be an array, not %s", type_name(v));
    return NULL;
  }
  n = json_array_size(v);
  if ((double)n < f->min || (double)n > f->max) {
    problem_field(req, path, "must have %.0f to %.0f items, not %zu", f->min,
                  f->max, n);
    return NULL;
  }
  out = json_array();
  json_array_foreach (v, i, item) {
    char ipath[256];
    json_t *c;
    snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
    c = check_value(req, ipath, item, f->fields);
    if (!c)
      ok = false;
    else
      json_array_append_new(out, c);
  }
  if (!ok) {
    json_decref(out);
    return NULL;
  }
  return out;
}

static json_t *check_map(struct gg_req *req, const char *path, json_t *v,
                         const struct v_field *f)
{
  json_t *out, *item;
  const char *key;
  bool ok = true;
  int k;

  if (!json_is_object(v)) {
    problem_field(req, path, "must be an object, not %s", type_name(v));
    return NULL;
  }
  json_object_foreach (v, key, item) {
    bool known = false;
    for (k = 0; f->keys[k]; k++)
      known = known || !strcmp(f->keys[k], key);
    if (!known) {
      char kpath[256];
      path_of(kpath, sizeof(kpath), path, key);
      problem_field(req, kpath, "unknown key");
      ok = false;
    }
  }
  if (!ok)
    return NULL;
  if (json_object_size(v) < (size_t)f->min) {
    problem_field(req, path, "must have at least %.0f keys", f->min);
    return NULL;
  }
  out = json_object();
  for (k = 0; f->keys[k]; k++) {
    char kpath[256];
    json_t *c;
    item = json_object_get(v, f->keys[k]);
    if (!item)
      continue;
    path_of(kpath, sizeof(kpath), path, f->keys[k]);
    c = check_value(req, kpath, item, f->fields);
    if (!c)
      ok = false;
    else
      json_object_set_new(out, f->keys[k], c);
  }
  if (!ok) {
    json_decref(out);
    return NULL;
  }
  return out;
}

static json_t *check_dict(struct gg_req *req, const char *path, json_t *v,
                          const struct v_field *f)
{
  json_t *out, *item;
  const char *key;
  bool ok = true;

  if (!json_is_object(v)) {
    problem_field(req, path, "must be an object, not %s", type_name(v));
    return NULL;
  }
  if ((double)json_object_size(v) < f->min ||
      (double)json_object_size(v) > f->max) {
    problem_field(req, path, "must have %.0f to %.0f keys, not %zu", f->min,
                  f->max, json_object_size(v));
    return NULL;
  }
  out = json_object();
  json_object_foreach (v, key, item) {
    char kpath[256];
    json_t *c;
    path_of(kpath, sizeof(kpath), path, key);
    if (!f->key_ok(key)) {
      problem_field(req, kpath, "key must be %s", f->key_rule);
      ok = false;
      continue;
    }
    c = check_value(req, kpath, item, f->fields);
    if (!c)
      ok = false;
    else
      json_object_set_new(out, key, c);
  }
  if (!ok) {
    json_decref(out);
    return NULL;
  }
  return out;
}

/* Returns a new reference to the normalised value, or NULL (recorded). */
static json_t *check_value(struct gg_req *req, const char *path, json_t *v,
                           const struct v_field *f)
{
  int i;

  if (json_is_null(v)) {
    if (f->flags & V_NULLABLE)
      return json_null();
    problem_field(req, path, "must not be null");
    return NULL;
  }
  switch (f->type) {
  case V_STRING:
  case V_NAME:
  case V_REGION:
  case V_ENUM: {
    const char *s;
    if (!json_is_string(v)) {
      problem_field(req, path, "must be a string, not %s", type_name(v));
      return NULL;
    }
    s = json_string_value(v);
    if (strlen(s) != json_string_length(v)) {
      problem_field(req, path, "must not contain NUL characters");
      return NULL;
    }
    if (f->type == V_NAME && !v_is_name(s)) {
      problem_field(req, path,
                    "must be 1-63 characters of a-z, 0-9 and '-', starting "
                    "and ending with a letter or digit");
      return NULL;
    }
    if (f->type == V_REGION && !is_region(s)) {
      problem_field(req, path, "must be a region such as \"us-central1\"");
      return NULL;
    }
    if (f->type == V_STRING && (double)json_string_length(v) > f->max) {
      problem_field(req, path, "must be at most %.0f bytes long", f->max);
      return NULL;
    }
    if (f->type == V_STRING && (double)json_string_length(v) < f->min) {
      problem_field(req, path, "must be at least %.0f bytes long", f->min);
      return NULL;
    }
    if (f->type == V_ENUM) {
      for (i = 0; f->choices[i]; i++)
        if (!strcmp(f->choices[i], s))
          return json_incref(v);
      {
        char list[256] = "";
        size_t used = 0;
        for (i = 0; f->choices[i] && used < sizeof(list); i++) {
          int w = snprintf(list + used, sizeof(list) - used, "%s%s",
                           i ? ", " : "", f->choices[i]);
          if (w > 0)
            used += (size_t)w;
        }
        problem_field(req, path, "must be one of: %s", list);
      }
      return NULL;
    }
    return json_incref(v);
  }
  case V_INT: {
    json_int_t n;
    if (!json_is_integer(v)) {
      problem_field(req, path, "must be an integer, not %s",
                    json_is_real(v) ? "a fraction" : type_name(v));
      return NULL;
    }
    n = json_integer_value(v);
    if ((double)n < f->min || (double)n > f->max) {
      problem_field(req, path, "must be between %.0f and %.0f", f->min, f->max);
      return NULL;
    }
    return json_incref(v);
  }
  case V_NUMBER: {
    double d;
    if (!json_is_number(v)) {
      problem_field(req, path, "must be a number, not %s", type_name(v));
      return NULL;
    }
    d = json_number_value(v);
    if (!isfinite(d) || d < f->min || d > f->max) {
      problem_field(req, path, "must be between %g and %g", f->min, f->max);
      return NULL;
    }
    return json_incref(v);
  }
  case V_BOOL:
    if (!json_is_boolean(v)) {
      problem_field(req, path, "must be true or false, not %s", type_name(v));
      return NULL;
    }
    return json_incref(v);
  case V_OBJECT:
    return v_object(req, path, v, f->fields);
  case V_LIST:
    return check_list(req, path, v, f);
  case V_MAP:
    return check_map(req, path, v, f);
  case V_DICT:
    return check_dict(req, path, v, f);
  }
  return NULL;
}

json_t *v_object(struct gg_req *req, const char *prefix, json_t *in,
                 const struct v_field *fields)
{
  const struct v_field *f;
  const char *key;
  json_t *val, *out;
  bool ok = true;
  char path[256];

  if (!json_is_object(in)) {
    problem_field(req, *prefix ? prefix : "body", "must be an object, not %s",
                  type_name(in));
    return NULL;
  }
  json_object_foreach (in, key, val) {
    for (f = fields; f->key; f++)
      if (!strcmp(f->key, key))
        break;
    if (!f->key) {
      path_of(path, sizeof(path), prefix, key);
      problem_field(req, path, "unknown field");
      ok = false;
    }
  }
  out = json_object();
  for (f = fields; f->key; f++) {
    json_t *c;
    path_of(path, sizeof(path), prefix, f->key);
    val = json_object_get(in, f->key);
    if (!val) {
      if (f->flags & V_REQUIRED) {
        problem_field(req, path, "is required");
        ok = false;
      } else if (f->dflt) {
        json_object_set_new(out, f->key,
                            json_loads(f->dflt, JSON_DECODE_ANY, NULL));
      }
      continue;
    }
    c = check_value(req, path, val, f);
    if (!c)
      ok = false;
    else
      json_object_set_new(out, f->key, c);
  }
  if (!ok) {
    json_decref(out);
    return NULL;
  }
  return out;
}

bool v_path_name(struct gg_req *req, const char *param)
{
  const char *v = req_param(req, param);

  if (v && v_is_name(v))
    return true;
  problem_field(req, param,
                "must be 1-63 characters of a-z, 0-9 and '-', starting and "
                "ending with a letter or digit");
  return false;
}

bool v_cursor(struct gg_req *req, const char *position, char *out,
              size_t outlen)
{
  return req_cursor_for(req, position, out, outlen) == 0;
}

bool v_page(struct gg_req *req, int *limit, char *after, size_t afterlen)
{
  const char *l = req_query(req, "limit");
  const char *c = req_query(req, "cursor");
  bool ok = true;

  *limit = 50;
  after[0] = '\0';
  if (l) {
    char *end;
    long n = strtol(l, &end, 10);
    if (*l == '\0' || *end || n < 1 || n > 500) {
      problem_field(req, "limit", "must be an integer from 1 to 500");
      ok = false;
    } else {
      *limit = (int)n;
    }
  }
  if (c &&
      (req_cursor_read(req, c, after, afterlen) != 0 || !v_is_name(after))) {
    problem_field(req, "cursor", "is not a cursor this API returned");
    ok = false;
  }
  return ok;
}
