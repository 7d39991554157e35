/*
 * metrics_series.c — the registry's building blocks: a family's bounded
 * table of labelled series, label sets (key="value", escaped: backslash,
 * double quote and newline), and fixed-bucket histograms. No locking: the
 * callers (metrics.c, metrics_gauges.c) hold the registry's lock, or own
 * the family outright.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/metrics.h"
#include "lib/metrics_internal.h"

void family_clear(struct family *f)
{
  int i;

  for (i = 0; i < f->n; i++)
    free(f->v[i].labels);
  free(f->v);
  f->v = NULL;
  f->n = f->cap = 0;
}

/* Append name{labels} = 0; NULL when the family is full or memory is out. */
struct series *family_append(struct family *f, const char *labels)
{
  struct series *s;

  if (f->n == METRICS_MAX_SERIES)
    return NULL;
  if (f->n == f->cap) {
    int cap = f->cap ? f->cap * 2 : 16;
    struct series *v = realloc(f->v, (size_t)cap * sizeof(*v));
    if (!v)
      return NULL;
    f->v = v;
    f->cap = cap;
  }
  s = &f->v[f->n];
  s->labels = strdup(labels);
  if (!s->labels)
    return NULL;
  s->value = 0;
  f->n++;
  return s;
}

/* The series name{labels}, added when new; NULL when it cannot be. */
struct series *family_lookup(struct family *f, const char *labels)
{
  int i;

  for (i = 0; i < f->n; i++)
    if (!strcmp(f->v[i].labels, labels))
      return &f->v[i];
  return family_append(f, labels);
}

/* Append key="value" (value escaped) to b. */
void lb_add(struct lbuf *b, const char *key, const char *value)
{
  size_t klen = strlen(key);
  const char *p;

  if (b->overflow)
    return;
  if (b->len + klen + 4 >= sizeof(b->s)) {
    b->overflow = true;
    return;
  }
  if (b->len)
    b->s[b->len++] = ',';
  memcpy(b->s + b->len, key, klen);
  b->len += klen;
  b->s[b->len++] = '=';
  b->s[b->len++] = '"';
  for (p = value ? value : ""; *p; p++) {
    char c = *p;
    bool esc = c == '\\' || c == '"' || c == '\n';
    if (b->len + (esc ? 2u : 1u) + 2 >= sizeof(b->s)) {
      b->overflow = true;
      return;
    }
    if (esc) {
      b->s[b->len++] = '\\';
      c = c == '\n' ? 'n' : c;
    }
    b->s[b->len++] = c;
  }
  b->s[b->len++] = '"';
  b->s[b->len] = '\0';
}

void lb_init(struct lbuf *b)
{
  b->len = 0;
  b->overflow = false;
  b->s[0] = '\0';
}

void histogram_observe(struct histogram *h, double v)
{
  int b;

  for (b = 0; b < h->nb; b++)
    if (v <= h->bounds[b]) {
      h->in[b]++;
      break;
    }
  h->count++;
  h->sum += v;
}

void histogram_clear(struct histogram *h)
{
  memset(h->in, 0, sizeof(h->in));
  h->count = 0;
  h->sum = 0;
}
