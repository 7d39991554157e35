/*
 * jsonw.c — JSON text into a growing buffer, as Jansson writes it (see
 * jsonw.h). The escaping and the real numbers follow Jansson 2.14's
 * dump.c and strconv.c; tests/unit/test_jsonw.c compares the two.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/real.h"
#include "lib/jsonw.h"

/* room for n more bytes and the NUL; false once out of memory */
static bool room(struct jsonw *w, size_t n)
{
  size_t cap;
  char *p;

  if (w->failed)
    return false;
  if (w->len + n + 1 <= w->cap)
    return true;
  cap = w->cap ? w->cap : 1024;
  while (cap < w->len + n + 1)
    cap *= 2;
  if (!(p = realloc(w->data, cap))) {
    w->failed = true;
    return false;
  }
  w->data = p;
  w->cap = cap;
  return true;
}

void jsonw_raw(struct jsonw *w, const char *s, size_t n)
{
  if (!room(w, n))
    return;
  memcpy(w->data + w->len, s, n);
  w->len += n;
  w->data[w->len] = '\0';
}

size_t jsonw_escape(char *dst, const char *s, size_t n)
{
  static const char hex[] = "0123456789ABCDEF";
  char *d = dst;
  size_t i, run = 0;

  *d++ = '"';
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char e = 0;

    if (c >= 0x20 && c != '"' && c != '\\')
      continue;
    /* the plain bytes before this one, at once */
    memcpy(d, s + run, i - run);
    d += i - run;
    run = i + 1;
    switch (c) {
    case '"':
      e = '"';
      break;
    case '\\':
      e = '\\';
      break;
    case '\b':
      e = 'b';
      break;
    case '\f':
      e = 'f';
      break;
    case '\n':
      e = 'n';
      break;
    case '\r':
      e = 'r';
      break;
    case '\t':
      e = 't';
      break;
    default:
      break;
    }
    *d++ = '\\';
    if (e) {
      *d++ = e;
    } else {
      d[0] = 'u';
      d[1] = '0';
      d[2] = '0';
      d[3] = hex[c >> 4];
      d[4] = hex[c & 15];
      d += 5;
    }
  }
  memcpy(d, s + run, n - run);
  d += n - run;
  *d++ = '"';
  return (size_t)(d - dst);
}

void jsonw_string(struct jsonw *w, const char *s)
{
  size_t n;

  if (!s) {
    jsonw_lit(w, "null");
    return;
  }
  n = strlen(s);
  if (!room(w, JSONW_ESCAPED_MAX(n)))
    return;
  w->len += jsonw_escape(w->data + w->len, s, n);
  w->data[w->len] = '\0';
}

void jsonw_int(struct jsonw *w, long long v)
{
  char buf[24], *p = buf + sizeof(buf);
  /* the magnitude as unsigned: -LLONG_MIN does not fit a long long */
  unsigned long long u =
      v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0)
    *--p = '-';
  jsonw_raw(w, p, (size_t)(buf + sizeof(buf) - p));
}

void jsonw_real(struct jsonw *w, double v)
{
  char buf[40];
  size_t n;

  if (!isfinite(v) ||
      (n = billing_real_jansson(v, 15, buf, sizeof(buf))) == 0) {
    w->failed = true; /* Jansson holds no such real */
    return;
  }
  jsonw_raw(w, buf, n);
}

char *jsonw_finish(struct jsonw *w, size_t *len)
{
  char *out = w->data;

  if (w->failed || !out) {
    free(out);
    out = NULL;
  } else if (len) {
    *len = w->len;
  }
  w->data = NULL;
  w->len = w->cap = 0;
  return out;
}
