/*
 * jsonx.c — JSON with exact decimal numbers.
 *
 * Money is PostgreSQL numeric: any number of digits. A Jansson real is a
 * double, which rounds cents and turns a sum past 1.8e308 into inf (that
 * Jansson then refuses, so the reply fails). Here a decimal is carried
 * through a Jansson tree as a string whose first byte is NUL — a string no
 * request or database value can hold (PostgreSQL text has no NUL; request
 * strings with NUL are refused) — and jsonx_dumps() writes it as the bare
 * number it holds, digit for digit.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/jsonx.h"

#define MARK_LEN 5
static const char mark[MARK_LEN] = {'\0', 'd', 'e', 'c', ':'};

bool jsonx_number_text(const char *s)
{
  const char *p = s;

  if (!s)
    return false;
  if (*p == '-')
    p++;
  if (*p == '0')
    p++;
  else if (*p >= '1' && *p <= '9')
    while (*p >= '0' && *p <= '9')
      p++;
  else
    return false;
  if (*p == '.') {
    p++;
    if (!(*p >= '0' && *p <= '9'))
      return false;
    while (*p >= '0' && *p <= '9')
      p++;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-')
      p++;
    if (!(*p >= '0' && *p <= '9'))
      return false;
    while (*p >= '0' && *p <= '9')
      p++;
  }
  return *p == '\0' && p - s <= JSONX_DECIMAL_MAX;
}

json_t *jsonx_decimal(const char *text)
{
  char buf[MARK_LEN + JSONX_DECIMAL_MAX + 1];
  size_t n;

  if (!jsonx_number_text(text))
    return json_null();
  n = strlen(text);
  memcpy(buf, mark, sizeof(mark));
  memcpy(buf + MARK_LEN, text, n + 1);
  return json_stringn(buf, MARK_LEN + n);
}

/* The decimal text v carries, or NULL when v is no jsonx_decimal(). */
static const char *decimal_of(const json_t *v, size_t *len)
{
  const char *s;
  size_t n;

  if (!json_is_string(v))
    return NULL;
  s = json_string_value(v);
  n = json_string_length(v);
  if (n <= MARK_LEN || memcmp(s, mark, sizeof(mark)) != 0)
    return NULL;
  *len = n - MARK_LEN;
  return s + MARK_LEN;
}

struct out {
  char *data;
  size_t len, cap;
  bool failed;
};

static void put(struct out *o, const char *s, size_t n)
{
  if (o->failed)
    return;
  if (o->len + n + 1 > o->cap) {
    size_t cap = o->cap ? o->cap : 1024;
    char *p;
    while (cap < o->len + n + 1)
      cap *= 2;
    p = realloc(o->data, cap);
    if (!p) {
      o->failed = true;
      return;
    }
    o->data = p;
    o->cap = cap;
  }
  memcpy(o->data + o->len, s, n);
  o->len += n;
  o->data[o->len] = '\0';
}

/* A scalar (or a key as a string) as Jansson writes it. */
static void put_scalar(struct out *o, const json_t *v, size_t flags)
{
  char *t = json_dumps(v, flags | JSON_ENCODE_ANY);

  if (!t) {
    o->failed = true;
    return;
  }
  put(o, t, strlen(t));
  free(t);
}

static void put_value(struct out *o, const json_t *v, size_t flags, int depth)
{
  const char *dec, *key;
  size_t n, i;
  json_t *item;
  bool first = true;

  if (depth > 64) {
    o->failed = true;
    return;
  }
  if ((dec = decimal_of(v, &n))) {
    put(o, dec, n);
  } else if (json_is_object(v)) {
    put(o, "{", 1);
    json_object_foreach ((json_t *)v, key, item) {
      json_t *k = json_string(key);
      if (!first)
        put(o, ",", 1);
      first = false;
      if (!k) {
        o->failed = true;
        return;
      }
      put_scalar(o, k, flags);
      json_decref(k);
      put(o, ":", 1);
      put_value(o, item, flags, depth + 1);
    }
    put(o, "}", 1);
  } else if (json_is_array(v)) {
    put(o, "[", 1);
    json_array_foreach (v, i, item) {
      if (i)
        put(o, ",", 1);
      put_value(o, item, flags, depth + 1);
    }
    put(o, "]", 1);
  } else {
    put_scalar(o, v, flags);
  }
}

char *jsonx_dumps(const json_t *v, size_t flags, size_t *len)
{
  struct out o = {NULL, 0, 0, false};

  put_value(&o, v, flags, 0);
  if (o.failed || !o.data) {
    free(o.data);
    return NULL;
  }
  if (len)
    *len = o.len;
  return o.data;
}
