/*
 * bq_page.c — a query reply's rows walked in place (see bq_page.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcp/bq_page.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

struct cur {
  const char *p, *end;
};

static void ws(struct cur *c)
{
  while (c->p < c->end &&
         (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
    c->p++;
}

/* The first quote or backslash in [p, end), or end. A row's JSON is one
 * string with an escaped quote every few bytes: sixteen bytes are looked
 * at a time where SSE2 is there. */
#ifdef __SSE2__
/* The bits of v's bytes that are a quote, and a backslash. */
struct specials {
  unsigned quote, bslash;
};

static struct specials specials16(__m128i v)
{
  struct specials sp;

  sp.quote = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
  sp.bslash =
      (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
  return sp;
}
#endif

static const char *special(const char *p, const char *end)
{
#ifdef __SSE2__
  while (end - p >= 16) {
    struct specials sp =
        specials16(_mm_loadu_si128((const __m128i *)(const void *)p));
    unsigned m = sp.quote | sp.bslash;
    if (m)
      return p + __builtin_ctz(m);
    p += 16;
  }
#endif
  while (p < end && *p != '"' && *p != '\\')
    p++;
  return p;
}

/* Past the string starting at c->p ('"'); -1 when unterminated. A
 * backslash escapes the byte after it; the first quote not escaped ends
 * it. */
static int skip_string(struct cur *c)
{
  const char *p = c->p + 1;

  for (;;) {
#ifdef __SSE2__
    /* sixteen bytes at a time while their backslashes stand alone and none
     * is the last (each escapes the byte after it, in the block): a row's
     * JSON, as a string, is a \" every few bytes */
    while (c->end - p >= 16) {
      struct specials sp =
          specials16(_mm_loadu_si128((const __m128i *)(const void *)p));
      unsigned b = sp.bslash, q;
      if ((b & (b << 1)) || (b & 0x8000u))
        break;
      q = sp.quote & ~(b << 1); /* the quotes not escaped */
      if (q) {
        c->p = p + __builtin_ctz(q) + 1;
        return 0;
      }
      p += 16;
    }
#endif
    p = special(p, c->end);
    if (p >= c->end)
      return -1;
    if (*p == '"') {
      c->p = p + 1;
      return 0;
    }
    p += 2; /* a backslash and the byte it escapes */
  }
}

/* Past the value at c->p (not checked beyond its nesting); -1 when it ends
 * early. */
static int skip_value(struct cur *c)
{
  int depth = 0;

  ws(c);
  if (c->p >= c->end)
    return -1;
  if (*c->p == '"')
    return skip_string(c);
  if (*c->p != '{' && *c->p != '[') { /* a number, true, false, null */
    const char *s = c->p;
    while (c->p < c->end && !strchr(",}] \t\r\n", *c->p))
      c->p++;
    return c->p > s ? 0 : -1;
  }
  while (c->p < c->end) {
    char ch = *c->p;
    if (ch == '"') {
      if (skip_string(c) != 0)
        return -1;
      continue;
    }
    c->p++;
    if (ch == '{' || ch == '[')
      depth++;
    else if ((ch == '}' || ch == ']') && --depth == 0)
      return 0;
  }
  return -1;
}

static bool eat(struct cur *c, char ch)
{
  ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return true;
  }
  return false;
}

/* A key: the raw text between its quotes (no escapes expected in the keys
 * we look for) and the colon after it. */
static int key(struct cur *c, const char **k, size_t *n)
{
  const char *s;

  ws(c);
  if (c->p >= c->end || *c->p != '"')
    return -1;
  s = c->p + 1;
  if (skip_string(c) != 0)
    return -1;
  *k = s;
  *n = (size_t)(c->p - 1 - s);
  return eat(c, ':') ? 0 : -1;
}

static bool key_is(const char *k, size_t n, const char *want)
{
  return n == strlen(want) && !memcmp(k, want, n);
}

int bq_page_split(const char *body, size_t len, json_t **doc, const char **rows,
                  size_t *rows_len)
{
  static const char null_value[4] = {'n', 'u', 'l', 'l'};
  struct cur c = {body, body + len};
  const char *k, *vs = NULL, *ve = NULL;
  size_t kn;
  char *rest;

  *doc = NULL;
  *rows = NULL;
  *rows_len = 0;
  if (!eat(&c, '{'))
    return -1;
  if (!eat(&c, '}')) {
    do {
      if (key(&c, &k, &kn) != 0)
        return -1;
      ws(&c);
      if (key_is(k, kn, "rows"))
        vs = c.p;
      if (skip_value(&c) != 0)
        return -1;
      if (key_is(k, kn, "rows"))
        ve = c.p;
    } while (eat(&c, ','));
    if (!eat(&c, '}'))
      return -1;
  }
  if (!vs || !ve) { /* no rows (ve is set whenever vs is) */
    *doc = json_loadb(body, len, 0, NULL);
    return *doc ? 0 : -1;
  }
  /* the reply with "rows": null in place of its rows */
  rest = malloc(len - (size_t)(ve - vs) + 5);
  if (!rest)
    return -1;
  memcpy(rest, body, (size_t)(vs - body));
  memcpy(rest + (vs - body), null_value, sizeof(null_value));
  memcpy(rest + (vs - body) + 4, ve, (size_t)(body + len - ve));
  *doc = json_loadb(rest, len - (size_t)(ve - vs) + 4, 0, NULL);
  free(rest);
  if (!json_is_object(*doc)) {
    json_decref(*doc);
    *doc = NULL;
    return -1;
  }
  *rows = vs;
  *rows_len = (size_t)(ve - vs);
  return 0;
}

static int reserve(struct bq_scratch *s, size_t need)
{
  size_t cap = s->cap ? s->cap : 4096;
  char *g;

  if (need <= s->cap)
    return 0;
  while (cap < need)
    cap *= 2;
  if (!(g = realloc(s->p, cap)))
    return -1;
  s->p = g;
  s->cap = cap;
  return 0;
}

static int hex4(const char *p, unsigned *v)
{
  int i;

  *v = 0;
  for (i = 0; i < 4; i++) {
    char ch = p[i];
    *v <<= 4;
    if (ch >= '0' && ch <= '9')
      *v |= (unsigned)(ch - '0');
    else if (ch >= 'a' && ch <= 'f')
      *v |= (unsigned)(ch - 'a' + 10);
    else if (ch >= 'A' && ch <= 'F')
      *v |= (unsigned)(ch - 'A' + 10);
    else
      return -1;
  }
  return 0;
}

/* The string at c->p unescaped (UTF-8) and NUL-terminated at s->p + *at;
 * *at moves past it. */
static int unescape(struct cur *c, struct bq_scratch *s, size_t *at)
{
  const char *p = c->p + 1, *end = c->end;
  size_t o = *at;

  for (;;) {
    const char *q;
#ifdef __SSE2__
    /* sixteen bytes copied at a time, as far as the next quote or
     * backslash (the bytes stored past it are overwritten next) */
    while (end - p >= 16) {
      __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
      struct specials sp = specials16(v);
      unsigned m = sp.quote | sp.bslash, b = sp.bslash, k, gone = 0;
      if (reserve(s, o + 32 + 8) != 0)
        return -1;
      _mm_storeu_si128((__m128i *)(void *)(s->p + o), v);
      if (!m) {
        p += 16;
        o += 16;
        continue;
      }
      /* a block of plain bytes and \" pairs (a row's JSON, as a string)
       * in one go: the quotes are exactly the bytes after the backslashes
       * (so no backslash is last, escaping a byte past the block, and no
       * quote ends the string). Each backslash is dropped by storing what
       * follows it one byte lower, sixteen bytes at a time (so thirty-two
       * must be readable). Anything else goes the byte-wise way. */
      if (end - p < 32 || sp.quote != (b << 1)) {
        k = (unsigned)__builtin_ctz(m);
        p += k;
        o += k;
        break;
      }
      while (b) {
        k = (unsigned)__builtin_ctz(b);
        _mm_storeu_si128(
            (__m128i *)(void *)(s->p + o + k - gone),
            _mm_loadu_si128((const __m128i *)(const void *)(p + k + 1)));
        gone++;
        b &= b - 1;
      }
      p += 16;
      o += 16 - gone;
    }
#endif
    q = special(p, end);
    /* room for the run, an escape's at most 4 bytes, and the NUL */
    if (reserve(s, o + (size_t)(q - p) + 8) != 0)
      return -1;
    memcpy(s->p + o, p, (size_t)(q - p));
    o += (size_t)(q - p);
    p = q;
    if (p == end)
      return -1; /* unterminated */
    if (*p == '"') {
      s->p[o++] = '\0';
      c->p = p + 1;
      *at = o;
      return 0;
    }
    if (++p >= end)
      return -1;
    switch (*p++) {
    case '"':
      s->p[o++] = '"';
      break;
    case '\\':
      s->p[o++] = '\\';
      break;
    case '/':
      s->p[o++] = '/';
      break;
    case 'b':
      s->p[o++] = '\b';
      break;
    case 'f':
      s->p[o++] = '\f';
      break;
    case 'n':
      s->p[o++] = '\n';
      break;
    case 'r':
      s->p[o++] = '\r';
      break;
    case 't':
      s->p[o++] = '\t';
      break;
    case 'u': {
      unsigned u, lo;
      if (end - p < 4 || hex4(p, &u) != 0)
        return -1;
      p += 4;
      if (u >= 0xD800 && u <= 0xDBFF) { /* a surrogate pair */
        if (end - p < 6 || p[0] != '\\' || p[1] != 'u' ||
            hex4(p + 2, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF)
          return -1;
        p += 6;
        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
      } else if (u >= 0xDC00 && u <= 0xDFFF) {
        return -1;
      }
      /* at most 4 bytes for the at least 6 read */
      if (u < 0x80) {
        s->p[o++] = (char)u;
      } else if (u < 0x800) {
        s->p[o++] = (char)(0xC0 | (u >> 6));
        s->p[o++] = (char)(0x80 | (u & 0x3F));
      } else if (u < 0x10000) {
        s->p[o++] = (char)(0xE0 | (u >> 12));
        s->p[o++] = (char)(0x80 | ((u >> 6) & 0x3F));
        s->p[o++] = (char)(0x80 | (u & 0x3F));
      } else {
        s->p[o++] = (char)(0xF0 | (u >> 18));
        s->p[o++] = (char)(0x80 | ((u >> 12) & 0x3F));
        s->p[o++] = (char)(0x80 | ((u >> 6) & 0x3F));
        s->p[o++] = (char)(0x80 | (u & 0x3F));
      }
      break;
    }
    default:
      return -1;
    }
  }
}

/* One cell {"v": string | null, ...}: its offset in s (or -1: null). */
static int cell(struct cur *c, struct bq_scratch *s, size_t *at, long *off)
{
  const char *k;
  size_t kn;

  *off = -1;
  if (!eat(c, '{'))
    return -1;
  if (eat(c, '}'))
    return 0;
  do {
    if (key(c, &k, &kn) != 0)
      return -1;
    ws(c);
    if (key_is(k, kn, "v") && c->p < c->end && *c->p == '"') {
      *off = (long)*at;
      if (unescape(c, s, at) != 0)
        return -1;
    } else if (skip_value(c) != 0) {
      return -1;
    }
  } while (eat(c, ','));
  return eat(c, '}') ? 0 : -1;
}

int bq_page_rows(const char *rows, size_t len, struct bq_scratch *s,
                 bq_cells_fn fn, void *ctx, char *err, size_t errlen)
{
  struct cur c = {rows, rows + len};
  long off[BQ_MAX_CELLS];
  const char *cells[BQ_MAX_CELLS];
  const char *k;
  size_t kn, n, at, i;

  if (len == 0 || (len == 4 && !memcmp(rows, "null", 4)))
    return 0;
  if (!eat(&c, '['))
    goto bad;
  if (eat(&c, ']'))
    return 0;
  do {
    n = 0;
    at = 0;
    if (!eat(&c, '{'))
      goto bad;
    if (!eat(&c, '}')) {
      do {
        if (key(&c, &k, &kn) != 0)
          goto bad;
        if (!key_is(k, kn, "f")) {
          if (skip_value(&c) != 0)
            goto bad;
          continue;
        }
        if (!eat(&c, '['))
          goto bad;
        if (eat(&c, ']'))
          continue;
        do {
          long o;
          if (cell(&c, s, &at, &o) != 0)
            goto bad;
          if (n < BQ_MAX_CELLS)
            off[n++] = o;
        } while (eat(&c, ','));
        if (!eat(&c, ']'))
          goto bad;
      } while (eat(&c, ','));
      if (!eat(&c, '}'))
        goto bad;
    }
    for (i = 0; i < n; i++)
      cells[i] = off[i] < 0 ? NULL : s->p + off[i];
    if (fn(ctx, cells, n, err, errlen) != 0)
      return -1;
  } while (eat(&c, ','));
  if (eat(&c, ']')) {
    ws(&c);
    if (c.p == c.end)
      return 0;
  }
bad:
  snprintf(err, errlen, "getQueryResults: malformed rows at byte %zu",
           (size_t)(c.p - rows));
  return -1;
}
