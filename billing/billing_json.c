/*
 * billing_json.c — the fast JSON reader of billing rows (see
 * billing_json.h).
 *
 * Jansson allocates a value per JSON value, and the row's key text
 * (billing_key.h) is then written from the tree: most of the engine's
 * time. This reader does the same work in one pass over the line and
 * without allocating per row: it checks the JSON, writes the key text as
 * it goes (each value's meaning; the members of each object sorted when it
 * closes, those with no meaning left out), and keeps a flat tree of the
 * values (in a scratch reused from row to row) for the field checks (its
 * document view is billing_doc.c's; its strings are read by
 * billing_json_str.c). billing_key_text over Jansson's tree
 * stays the reference: the same text by construction (the scalars go
 * through the same billing_key_scalar, billing_key_decimal,
 * billing_key_real and billing_key_escape).
 *
 * It only ever accepts. Whatever it does not handle exactly as Jansson
 * does (any JSON error, a duplicate key, an integer of 19 digits or more,
 * nesting deeper than FAST_DEPTH, a real that overflows) is declined, and
 * billing_row.c then lets Jansson decide, so that rejections and their
 * messages are Jansson's by construction. For accepted rows the unit tests
 * and tests/fuzz/fuzz_billing_row.c compare both, field by field and key
 * by key.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/billing.h"
#include "billing/billing_json.h"
#include "billing/billing_json_internal.h"
#include "billing/billing_key.h"
#include "lib/jsonw.h"
#include "lib/real.h"

#define FAST_DEPTH 64
#define SCRATCH_KEEP (1 << 20) /* bytes of buffers kept between rows */

struct billing_scratch *billing_scratch_new(void)
{
  struct billing_scratch *s = calloc(1, sizeof(*s));

  return s;
}

/* Give back buffers a huge row grew. */
static void scratch_trim(struct billing_scratch *s)
{
  if (s->cap_nodes * sizeof(*s->nodes) > SCRATCH_KEEP) {
    free(s->nodes);
    s->nodes = NULL;
    s->cap_nodes = 0;
  }
  if (s->cap_mem * sizeof(*s->mem) > SCRATCH_KEEP) {
    free(s->mem);
    s->mem = NULL;
    s->cap_mem = 0;
  }
  if (s->canon_cap > SCRATCH_KEEP) {
    free(s->canon);
    s->canon = NULL;
    s->canon_cap = 0;
  }
  if (s->tmp_cap > SCRATCH_KEEP) {
    free(s->tmp);
    s->tmp = NULL;
    s->tmp_cap = 0;
  }
  if (s->strs_cap > SCRATCH_KEEP) {
    free(s->strs);
    s->strs = NULL;
    s->strs_cap = 0;
  }
}

void billing_scratch_free(struct billing_scratch *s)
{
  if (!s)
    return;
  free(s->nodes);
  free(s->mem);
  free(s->canon);
  free(s->tmp);
  free(s->strs);
  free(s);
}

/* p (of *cap elements of size bytes) grown to hold need: the new block, or
 * NULL with p untouched. */
static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
  size_t c = *cap ? *cap : 64;
  void *g;

  while (c < need)
    c *= 2;
  g = realloc(p, c * size);
  if (g)
    *cap = c;
  return g;
}

/* c_room's growing, out of its way. */
static __attribute__((noinline)) int c_grow(struct billing_scratch *s, size_t n)
{
  char *g = grow(s->canon, &s->canon_cap, s->canon_len + n, 1);

  if (!g)
    return -1;
  s->canon = g;
  return 0;
}

/* Room for n more bytes of canonical text (inline: it is asked for at
 * every piece of the text). */
static inline int c_room(struct billing_scratch *s, size_t n)
{
  return s->canon_cap - s->canon_len >= n ? 0 : c_grow(s, n);
}

static void c_put(struct billing_scratch *s, const char *p, size_t n)
{
  memcpy(s->canon + s->canon_len, p, n);
  s->canon_len += n;
}

struct fparse {
  struct billing_scratch *s;
  const char *p, *end;
  int depth;
};

static void f_ws(struct fparse *f)
{
  while (f->p < f->end &&
         (*f->p == ' ' || *f->p == '\t' || *f->p == '\n' || *f->p == '\r'))
    f->p++;
}

static bool f_at(const struct fparse *f, char c)
{
  return f->p < f->end && *f->p == c;
}

static bool is_digit(char c)
{
  return c >= '0' && c <= '9';
}

/* A new node of kind, child of parent (-1: none), as key (NULL: none):
 * its index, or -1 when out of memory. */
static int f_node(struct fparse *f, enum fkind kind, int parent,
                  const char *key, size_t keylen)
{
  struct billing_scratch *s = f->s;
  struct fnode *n;
  int i;

  if (s->n_nodes >= (size_t)INT32_MAX)
    return -1;
  if (s->n_nodes == s->cap_nodes) {
    struct fnode *g =
        grow(s->nodes, &s->cap_nodes, s->n_nodes + 1, sizeof(*s->nodes));
    if (!g)
      return -1;
    s->nodes = g;
  }
  i = (int)s->n_nodes++;
  n = &s->nodes[i];
  n->kind = kind;
  n->key = key;
  n->keylen = keylen;
  n->str = NULL;
  n->len = 0;
  n->cooked = false;
  n->child = n->last = n->next = -1;
  if (parent >= 0) {
    struct fnode *p = &s->nodes[parent];
    if (p->last >= 0)
      s->nodes[p->last].next = i;
    else
      p->child = i;
    p->last = i;
  }
  return i;
}

/* A string as the key text has it (billing_key_escape); cooked: d may hold
 * bytes to escape, else none (f_string), so that it is copied as it is. */
static int c_string(struct billing_scratch *s, const char *d, size_t n,
                    bool cooked)
{
  if (!cooked) {
    if (c_room(s, n + 2) != 0)
      return -1;
    s->canon[s->canon_len++] = '"';
    c_put(s, d, n);
    s->canon[s->canon_len++] = '"';
    return 0;
  }
  if (c_room(s, BILLING_KEY_ESCAPED_MAX(n)) != 0)
    return -1;
  s->canon_len += billing_key_escape(s->canon + s->canon_len, d, n);
  return 0;
}

/* The string at f->p (its opening quote): billing_json_string. */
static int f_string(struct fparse *f, const char **out, size_t *outlen,
                    bool *cooked)
{
  return billing_json_string(f->s, &f->p, f->end, out, outlen, cooked);
}

/* The number at f->p, into node i, its key text written: its value as a
 * NUMERIC (billing_key.h). 1, or -1 when declined. */
static int f_number(struct fparse *f, int i)
{
  struct billing_scratch *s = f->s;
  const char *p = f->p, *start = p, *end = f->end;
  char out[BILLING_AMOUNT_MAX];
  size_t len, n;
  int digits = 0;
  bool real = false;
  double v;

  if (p < end && *p == '-')
    p++;
  if (p < end && *p == '0') {
    p++;
    digits = 1;
    if (p < end && is_digit(*p))
      return -1;
  } else if (p < end && is_digit(*p)) {
    for (; p < end && is_digit(*p); p++)
      digits++;
  } else {
    return -1;
  }
  if (p < end && *p == '.') {
    p++;
    if (p >= end || !is_digit(*p))
      return -1;
    while (p < end && is_digit(*p))
      p++;
    real = true;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-'))
      p++;
    if (p >= end || !is_digit(*p))
      return -1;
    while (p < end && is_digit(*p))
      p++;
    real = true;
  }
  len = (size_t)(p - start);
  f->p = p;
  s->nodes[i].str = start;
  s->nodes[i].len = len;
  if (!real) {
    /* within strtoll's range for sure, as Jansson reads it. Its key text
     * is its text ("-0" as "0"): what billing_key_decimal writes of an
     * integer without leading zeros, and JSON has none */
    if (digits > 18)
      return -1;
    s->nodes[i].kind = FK_INT;
    if (len == 2 && start[0] == '-' && start[1] == '0') {
      start++;
      len--;
    }
    if (c_room(s, len) != 0)
      return -1;
    c_put(s, start, len);
    return 1;
  } else {
    /* a real is read as Jansson reads it: to a double (an overflow is
     * Jansson's error to report) */
    if (len >= BILLING_NUM_MAX)
      return -1;
    v = billing_read_real(start, len);
    if (isinf(v))
      return -1;
    s->nodes[i].kind = FK_REAL;
    billing_key_real(v, out);
  }
  n = strlen(out);
  if (c_room(s, n) != 0)
    return -1;
  c_put(s, out, n);
  return 1;
}

static uint64_t key_prefix(const char *key, size_t n)
{
  uint64_t v = 0;
  size_t i;

  if (n >= 8) {
    memcpy(&v, key, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
  }
  for (i = 0; i < 8; i++)
    v = v << 8 | (i < n ? (unsigned char)key[i] : 0u);
  return v;
}

/* Keys compare as Jansson's sort does: strcmp of the decoded keys (which
 * hold no NUL, so that the zero padding of the prefixes sorts first). */
static int key_cmp(const struct fmember *a, const struct fmember *b)
{
  size_t n = a->keylen < b->keylen ? a->keylen : b->keylen;
  int c;

  if (a->pfx != b->pfx)
    return a->pfx < b->pfx ? -1 : 1;
  if (n > 8 && (c = memcmp(a->key + 8, b->key + 8, n - 8)) != 0)
    return c;
  return a->keylen < b->keylen ? -1 : a->keylen > b->keylen;
}

static int member_cmp(const void *a, const void *b)
{
  return key_cmp(a, b);
}

static int f_value(struct fparse *f, int i);

/* Rewrite the n members of an object, whose text starts at open + 1, in
 * key order, those with no meaning (start == end) left out. -1 on a
 * duplicate key (or memory). */
static int f_sort(struct billing_scratch *s, size_t base, size_t n, size_t open)
{
  struct fmember *m = s->mem + base;
  const struct fmember *small[64], **order = small;
  size_t i, j, t = 0, total = s->canon_len - open - 1;

  if (n <= sizeof(small) / sizeof(small[0])) {
    for (i = 0; i < n; i++) { /* insertion sort of pointers */
      const struct fmember *x = &m[i];
      for (j = i; j > 0 && key_cmp(order[j - 1], x) > 0; j--)
        order[j] = order[j - 1];
      order[j] = x;
    }
  } else {
    qsort(m, n, sizeof(*m), member_cmp);
    order = NULL;
  }
  for (i = 1; i < n; i++)
    if (key_cmp(order ? order[i - 1] : &m[i - 1], order ? order[i] : &m[i]) ==
        0)
      return -1; /* Jansson: "duplicate object key" */
  if (s->tmp_cap < total) {
    char *g = grow(s->tmp, &s->tmp_cap, total, 1);
    if (!g)
      return -1;
    s->tmp = g;
  }
  for (i = 0; i < n; i++) {
    const struct fmember *x = order ? order[i] : &m[i];
    if (x->end == x->start)
      continue;
    if (t > 0)
      s->tmp[t++] = ',';
    memcpy(s->tmp + t, s->canon + x->start, x->end - x->start);
    t += x->end - x->start;
  }
  memcpy(s->canon + open + 1, s->tmp, t);
  return 0;
}

/* The object at f->p, into node i. Its key text: the members with a
 * meaning, sorted by key; nothing when none has one. 1 when written, 0
 * when not, -1 when declined. */
static int f_object(struct fparse *f, int i)
{
  struct billing_scratch *s = f->s;
  size_t base = s->n_mem, open = s->canon_len, written = 0;
  bool sorted = true;

  if (++f->depth > FAST_DEPTH || c_room(s, 1) != 0)
    return -1;
  s->canon[s->canon_len++] = '{';
  f->p++;
  f_ws(f);
  if (f_at(f, '}')) {
    f->p++;
  } else {
    for (;;) {
      struct fmember m;
      size_t mark = s->canon_len;
      int child, w;
      bool cooked;
      if (!f_at(f, '"'))
        return -1;
      if (written > 0) {
        if (c_room(s, 1) != 0)
          return -1;
        s->canon[s->canon_len++] = ',';
      }
      m.start = s->canon_len;
      if (f_string(f, &m.key, &m.keylen, &cooked) != 0 ||
          c_string(s, m.key, m.keylen, cooked) != 0 || c_room(s, 1) != 0)
        return -1;
      s->canon[s->canon_len++] = ':';
      m.pfx = key_prefix(m.key, m.keylen);
      f_ws(f);
      if (!f_at(f, ':'))
        return -1;
      f->p++;
      f_ws(f);
      if ((child = f_node(f, FK_NULL, i, m.key, m.keylen)) < 0 ||
          (w = f_value(f, child)) < 0)
        return -1;
      if (w == 0) { /* no meaning: left out of the text (not of the tree) */
        s->canon_len = mark;
        m.start = m.end = mark;
      } else {
        m.end = s->canon_len;
        written++;
      }
      if (s->n_mem == s->cap_mem) {
        struct fmember *g =
            grow(s->mem, &s->cap_mem, s->n_mem + 1, sizeof(*s->mem));
        if (!g)
          return -1;
        s->mem = g;
      }
      if (s->n_mem > base && key_cmp(&s->mem[s->n_mem - 1], &m) >= 0)
        sorted = false;
      s->mem[s->n_mem++] = m;
      f_ws(f);
      if (f_at(f, ',')) {
        f->p++;
        f_ws(f);
        continue;
      }
      if (!f_at(f, '}'))
        return -1;
      f->p++;
      break;
    }
  }
  if (!sorted && f_sort(s, base, s->n_mem - base, open) != 0)
    return -1;
  s->n_mem = base;
  f->depth--;
  if (written == 0) {
    s->canon_len = open;
    return 0;
  }
  if (c_room(s, 1) != 0)
    return -1;
  s->canon[s->canon_len++] = '}';
  return 1;
}

/* The array at f->p, into node i. Its key text: its items, "null" for
 * those with no meaning; nothing when it has none. 1, 0 or -1 as
 * f_object. */
static int f_array(struct fparse *f, int i)
{
  struct billing_scratch *s = f->s;
  size_t open = s->canon_len, n = 0;

  if (++f->depth > FAST_DEPTH || c_room(s, 1) != 0)
    return -1;
  s->canon[s->canon_len++] = '[';
  f->p++;
  f_ws(f);
  if (f_at(f, ']')) {
    f->p++;
  } else {
    for (;;) {
      int child = f_node(f, FK_NULL, i, NULL, 0), w;
      if (child < 0)
        return -1;
      if (n++ > 0) {
        if (c_room(s, 1) != 0)
          return -1;
        s->canon[s->canon_len++] = ',';
      }
      if ((w = f_value(f, child)) < 0)
        return -1;
      if (w == 0) {
        if (c_room(s, 4) != 0)
          return -1;
        c_put(s, "null", 4);
      }
      f_ws(f);
      if (f_at(f, ',')) {
        f->p++;
        f_ws(f);
        continue;
      }
      if (!f_at(f, ']'))
        return -1;
      f->p++;
      break;
    }
  }
  f->depth--;
  if (n == 0) {
    s->canon_len = open;
    return 0;
  }
  if (c_room(s, 1) != 0)
    return -1;
  s->canon[s->canon_len++] = ']';
  return 1;
}

/* A literal word: true, false or null (null means nothing: 0). */
static int f_word(struct fparse *f, int i, const char *w, enum fkind kind)
{
  size_t n = strlen(w);

  if ((size_t)(f->end - f->p) < n || memcmp(f->p, w, n) != 0)
    return -1;
  f->p += n;
  f->s->nodes[i].kind = kind;
  if (kind == FK_NULL)
    return 0;
  if (c_room(f->s, n) != 0)
    return -1;
  c_put(f->s, w, n);
  return 1;
}

/* A string value's key text: a timestamp's instant, a decimal's value, or
 * the string (billing_key.h). 1, or -1 when out of memory. */
static int f_scalar(struct billing_scratch *s, const char *str, size_t len,
                    bool cooked)
{
  char out[BILLING_KEY_SCALAR_MAX];
  size_t k = billing_key_scalar(str, len, out);

  if (k > 0) {
    if (c_room(s, k) != 0)
      return -1;
    c_put(s, out, k);
    return 1;
  }
  return c_string(s, str, len, cooked) == 0 ? 1 : -1;
}

/* The value at f->p into node i, its key text written: 1, 0 when it has
 * no meaning (null, or an empty array or object: nothing written), -1
 * when declined. */
static int f_value(struct fparse *f, int i)
{
  if (f->p >= f->end)
    return -1;
  switch (*f->p) {
  case '{':
    f->s->nodes[i].kind = FK_OBJ;
    return f_object(f, i);
  case '[':
    f->s->nodes[i].kind = FK_ARR;
    return f_array(f, i);
  case '"': {
    const char *str;
    size_t len;
    bool cooked;
    if (f_string(f, &str, &len, &cooked) != 0)
      return -1;
    f->s->nodes[i].kind = FK_STR;
    f->s->nodes[i].str = str;
    f->s->nodes[i].len = len;
    f->s->nodes[i].cooked = cooked;
    return f_scalar(f->s, str, len, cooked);
  }
  case 't':
    return f_word(f, i, "true", FK_TRUE);
  case 'f':
    return f_word(f, i, "false", FK_FALSE);
  case 'n':
    return f_word(f, i, "null", FK_NULL);
  default:
    return f_number(f, i);
  }
}

int billing_json_parse(struct billing_scratch *s, const char *line, size_t len)
{
  struct fparse f = {s, line, line + len, 0};

  scratch_trim(s); /* the previous row is done with it */
  s->n_nodes = s->n_mem = s->canon_len = s->strs_len = 0;
  if (s->strs_cap < len + 1) {
    char *g = grow(s->strs, &s->strs_cap, len + 1, 1);
    if (!g)
      return -1;
    s->strs = g;
  }
  f_ws(&f);
  if (!f_at(&f, '{') || f_node(&f, FK_OBJ, -1, NULL, 0) != 0 ||
      f_value(&f, 0) < 0)
    return -1;
  f_ws(&f);
  return f.p == f.end ? 0 : -1;
}

const char *billing_json_canonical(const struct billing_scratch *s, size_t *len)
{
  *len = s->canon_len;
  return s->canon;
}
