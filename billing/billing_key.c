/*
 * billing_key.c — a billing row's key text (see billing_key.h).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/billing_key.h"
#include "billing/billing_time.h"

#define KEY_MEMBERS 64 /* members sorted on the stack; more: on the heap */

void billing_keytext_free(struct billing_keytext *t)
{
  if (!t)
    return;
  free(t->p);
  t->p = NULL;
  t->len = t->cap = 0;
}

/* Room for n more bytes and a NUL. */
static int reserve(struct billing_keytext *t, size_t n)
{
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 1024;
    char *g;
    while (cap < t->len + n + 1)
      cap *= 2;
    if (!(g = realloc(t->p, cap)))
      return -1;
    t->p = g;
    t->cap = cap;
  }
  return 0;
}

static int put(struct billing_keytext *t, const char *s, size_t n)
{
  if (reserve(t, n) != 0)
    return -1;
  memcpy(t->p + t->len, s, n);
  t->len += n;
  t->p[t->len] = '\0';
  return 0;
}

static int puts_(struct billing_keytext *t, const char *s)
{
  return put(t, s, strlen(s));
}

size_t billing_key_escape(char *out, const char *s, size_t n)
{
  static const char hex[] = "0123456789abcdef";
  size_t i, o = 0, run = 0;

  out[o++] = '"';
  for (i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch >= 0x20 && ch != '"' && ch != '\\')
      continue;
    memcpy(out + o, s + run, i - run);
    o += i - run;
    out[o] = '\\';
    out[o + 1] = 'u';
    out[o + 2] = '0';
    out[o + 3] = '0';
    out[o + 4] = hex[ch >> 4];
    out[o + 5] = hex[ch & 15];
    o += 6;
    run = i + 1;
  }
  memcpy(out + o, s + run, n - run);
  o += n - run;
  out[o++] = '"';
  return o;
}

/* s[0..n) as a JSON string. */
static int put_string(struct billing_keytext *t, const char *s, size_t n)
{
  if (reserve(t, BILLING_KEY_ESCAPED_MAX(n)) != 0)
    return -1;
  t->len += billing_key_escape(t->p + t->len, s, n);
  t->p[t->len] = '\0';
  return 0;
}

/* Drop trailing fractional zeros (and a bare point) of out, and "-0". */
static void trim(char *out)
{
  size_t n = strlen(out);

  if (strchr(out, '.')) {
    while (n > 0 && out[n - 1] == '0')
      out[--n] = '\0';
    if (n > 0 && out[n - 1] == '.')
      out[--n] = '\0';
  }
  if (!strcmp(out, "-0"))
    memcpy(out, "0", 2);
}

int billing_key_decimal(const char *s, char *out)
{
  char digits[BILLING_AMOUNT_MAX + 2];
  const char *p = s, *point;
  size_t ni, nf, n = 0, i;
  bool neg = *p == '-';

  if (neg || *p == '+')
    p++;
  while (*p == '0' && p[1] >= '0' && p[1] <= '9')
    p++; /* leading zeros */
  point = strchr(p, '.');
  ni = point ? (size_t)(point - p) : strlen(p);
  nf = point ? strlen(point + 1) : 0;
  if (ni + 12 > sizeof(digits))
    return -1;
  /* the digits to 9 decimals, one more in front for a carry */
  digits[n++] = '0';
  memcpy(digits + n, p, ni);
  n += ni;
  for (i = 0; i < 9; i++)
    digits[n++] = i < nf ? point[1 + i] : '0';
  if (nf > 9 && point[10] >= '5') { /* half away from zero */
    size_t k = n;
    while (k-- > 0) {
      if (digits[k] == '9') {
        digits[k] = '0';
        continue;
      }
      digits[k]++;
      break;
    }
  }
  /* sign, integer digits (no leading zeros), point, 9 decimals */
  {
    size_t start = 0, o = 0, intlen = n - 9;
    while (start + 1 < intlen && digits[start] == '0')
      start++;
    if (neg)
      out[o++] = '-';
    if (o + (intlen - start) + 11 > BILLING_AMOUNT_MAX)
      return -1;
    memcpy(out + o, digits + start, intlen - start);
    o += intlen - start;
    out[o++] = '.';
    memcpy(out + o, digits + intlen, 9);
    o += 9;
    out[o] = '\0';
  }
  trim(out);
  return 0;
}

void billing_key_real(double v, char *out)
{
  if (!isfinite(v) || fabs(v) >= 1e29) /* no NUMERIC: its own text */
    snprintf(out, 64, "%.17g", v);
  else
    snprintf(out, 64, "%.9f", v); /* the binary value, rounded */
  trim(out);
}

size_t billing_key_scalar(const char *s, size_t n, char *out)
{
  char z[BILLING_KEY_SCALAR_MAX], ts[48], day[16];

  /* the cheap tests first: most strings are neither */
  if (n >= BILLING_KEY_SCALAR_MAX ||
      !((n >= 19 && s[4] == '-' && s[7] == '-' &&
         (s[10] == ' ' || s[10] == 'T')) ||
        s[0] == '-' || (s[0] >= '0' && s[0] <= '9')))
    return 0;
  memcpy(z, s, n); /* a timestamp is at most 39 bytes, a decimal 63 */
  z[n] = '\0';
  if (n >= 19 && z[4] == '-' && z[7] == '-' && (z[10] == ' ' || z[10] == 'T') &&
      billing_parse_timestamp(z, ts, day) == 0) {
    /* "YYYY-MM-DD HH:MM:SS[.ffffff]+00" → "YYYY-MM-DDTHH:MM:SS[.f]Z" */
    char *plus = strrchr(ts, '+');
    size_t k;
    if (plus)
      *plus = '\0';
    ts[10] = 'T';
    trim(ts);
    k = strlen(ts);
    out[0] = '"';
    memcpy(out + 1, ts, k);
    memcpy(out + 1 + k, "Z\"", 3);
    return k + 3;
  }
  if (billing_decimal_string(z) && billing_key_decimal(z, out) == 0)
    return strlen(out);
  return 0;
}

/* A string's meaning: a timestamp's instant, a decimal's value, or the
 * string. */
static int put_scalar_string(struct billing_keytext *t, const char *s)
{
  size_t n = strlen(s), k;
  char out[BILLING_KEY_SCALAR_MAX];

  if ((k = billing_key_scalar(s, n, out)) > 0)
    return put(t, out, k);
  return put_string(t, s, n);
}

/* A member of an object being sorted. */
struct member {
  const char *key;
  size_t len;
  billing_val v;
};

static int by_key(const void *a, const void *b)
{
  const struct member *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->key, y->key, n);

  return c ? c : x->len < y->len ? -1 : x->len > y->len ? 1 : 0;
}

static int value(struct billing_doc *d, billing_val v,
                 struct billing_keytext *t, int depth);

/* The members of o, sorted, those with no meaning left out. 1 when any
 * was written, 0 when none (nothing written), -1 on failure. */
static int object(struct billing_doc *d, billing_val o,
                  struct billing_keytext *t, int depth)
{
  struct member stack[KEY_MEMBERS], *m = stack;
  billing_val v = BILLING_NONE;
  size_t n = 0, cap = KEY_MEMBERS, i, start = t->len;
  const char *key;
  size_t keylen;
  int rc = -1, any = 0;

  while ((v = d->ops->member(d, o, v, n, &key, &keylen)) != BILLING_NONE) {
    if (n == cap) {
      struct member *g = malloc(2 * cap * sizeof(*g));
      if (!g)
        goto out;
      memcpy(g, m, n * sizeof(*g));
      if (m != stack)
        free(m);
      m = g;
      cap *= 2;
    }
    m[n].key = key;
    m[n].len = keylen;
    m[n++].v = v;
  }
  qsort(m, n, sizeof(*m), by_key);
  for (i = 0; i < n; i++) {
    size_t at = t->len;
    int w;
    if (put(t, any ? "," : "{", 1) != 0 ||
        put_string(t, m[i].key, m[i].len) != 0 || put(t, ":", 1) != 0)
      goto out;
    w = value(d, m[i].v, t, depth + 1);
    if (w < 0)
      goto out;
    if (w == 0)
      t->len = at; /* no meaning: the member is dropped */
    else
      any = 1;
  }
  if (any && put(t, "}", 1) != 0)
    goto out;
  if (!any)
    t->len = start;
  rc = any;
out:
  if (m != stack)
    free(m);
  return rc;
}

static int value(struct billing_doc *d, billing_val v,
                 struct billing_keytext *t, int depth)
{
  char num[64];
  double real;
  size_t i;
  billing_val e = BILLING_NONE;

  if (depth > BILLING_KEY_DEPTH)
    return -1;
  switch (d->ops->kind(d, v)) {
  case BILLING_ABSENT:
  case BILLING_NULL:
    return 0;
  case BILLING_OBJECT:
    return object(d, v, t, depth);
  case BILLING_ARRAY:
    for (i = 0; (e = d->ops->item(d, v, e, i)) != BILLING_NONE; i++) {
      int w;
      if (put(t, i ? "," : "[", 1) != 0)
        return -1;
      w = value(d, e, t, depth + 1);
      if (w < 0 || (w == 0 && puts_(t, "null") != 0))
        return -1;
    }
    if (i == 0)
      return 0; /* an empty REPEATED column: as if absent */
    return put(t, "]", 1) == 0 ? 1 : -1;
  case BILLING_STRING:
    return put_scalar_string(t, d->ops->string(d, v)) == 0 ? 1 : -1;
  case BILLING_NUMBER:
    if (d->ops->real(d, v, &real))
      billing_key_real(real, num);
    else if (d->ops->number(d, v, num) != 0 ||
             billing_key_decimal(num, num) != 0)
      return -1;
    return puts_(t, num) == 0 ? 1 : -1;
  case BILLING_BOOL:
    return puts_(t, d->ops->truth(d, v) ? "true" : "false") == 0 ? 1 : -1;
  }
  return -1;
}

int billing_key_text(struct billing_doc *d, struct billing_keytext *t)
{
  t->len = 0;
  if (put(t, "", 0) != 0)
    return -1;
  return value(d, d->root, t, 0) < 0 ? -1 : 0;
}
