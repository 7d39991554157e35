/*
 * billing_doc.c — the row the fast reader (billing_json.c) just parsed, as
 * a struct billing_doc for the field checks (billing_fields.h): lookups
 * over its flat tree of values, strings decoded on first use.
 */
#include <string.h>

#include "billing/billing_json.h"
#include "billing/billing_json_internal.h"
#include "lib/real.h"

/* ---- the parsed row as a billing_doc: value i + 1 is node i ------------ */

static int node_of(const struct billing_doc *d, billing_val v)
{
  const struct billing_scratch *s = d->impl;

  return v == BILLING_NONE || v > s->n_nodes ? -1 : (int)(v - 1);
}

static enum billing_kind doc_kind(struct billing_doc *d, billing_val v)
{
  const struct billing_scratch *s = d->impl;
  int i = node_of(d, v);

  if (i < 0)
    return BILLING_ABSENT;
  switch (s->nodes[i].kind) {
  case FK_OBJ:
    return BILLING_OBJECT;
  case FK_ARR:
    return BILLING_ARRAY;
  case FK_STR:
    return BILLING_STRING;
  case FK_INT:
  case FK_REAL:
    return BILLING_NUMBER;
  case FK_TRUE:
  case FK_FALSE:
    return BILLING_BOOL;
  case FK_NULL:
    break;
  }
  return BILLING_NULL;
}

/* json_object_get: the members are few, a scan is the fastest lookup. */
static billing_val doc_get(struct billing_doc *d, billing_val o,
                           const char *key)
{
  const struct billing_scratch *s = d->impl;
  int i = node_of(d, o), c;
  size_t n;

  if (i < 0 || s->nodes[i].kind != FK_OBJ)
    return BILLING_NONE;
  n = strlen(key);
  for (c = s->nodes[i].child; c >= 0; c = s->nodes[c].next)
    if (s->nodes[c].keylen == n &&
        (n == 0 ||
         (s->nodes[c].key[0] == key[0] && !memcmp(s->nodes[c].key, key, n))))
      return (billing_val)c + 1;
  return BILLING_NONE;
}

/* The row's top-level members in one pass (what a get per key would find:
 * keys are unique). */
static void doc_lookup(struct billing_doc *d, billing_val o,
                       const struct billing_key *keys, size_t n,
                       billing_val *out)
{
  const struct billing_scratch *s = d->impl;
  int i = node_of(d, o), c;
  size_t k;

  for (k = 0; k < n; k++)
    out[k] = BILLING_NONE;
  if (i < 0 || s->nodes[i].kind != FK_OBJ)
    return;
  for (c = s->nodes[i].child; c >= 0; c = s->nodes[c].next) {
    const struct fnode *m = &s->nodes[c];
    for (k = 0; k < n; k++)
      if (m->keylen == keys[k].len &&
          (m->keylen == 0 || (m->key[0] == keys[k].name[0] &&
                              !memcmp(m->key, keys[k].name, m->keylen)))) {
        out[k] = (billing_val)c + 1;
        break;
      }
  }
}

static billing_val doc_item(struct billing_doc *d, billing_val a,
                            billing_val prev, size_t index)
{
  const struct billing_scratch *s = d->impl;
  int i = node_of(d, a), c;

  (void)index;
  if (i < 0 || s->nodes[i].kind != FK_ARR)
    return BILLING_NONE;
  c = prev == BILLING_NONE ? s->nodes[i].child : s->nodes[prev - 1].next;
  return c < 0 ? BILLING_NONE : (billing_val)c + 1;
}

/* json_string_value: the decoded, NUL-terminated text (copied into strs
 * the first time it is asked for; strs was sized for the whole line). */
static const char *doc_string(struct billing_doc *d, billing_val v)
{
  struct billing_scratch *s = d->impl;
  struct fnode *n;
  int i = node_of(d, v);

  if (i < 0 || s->nodes[i].kind != FK_STR)
    return NULL;
  n = &s->nodes[i];
  if (!n->cooked) {
    char *t = s->strs + s->strs_len;
    memcpy(t, n->str, n->len);
    t[n->len] = '\0';
    s->strs_len += n->len + 1;
    n->str = t;
    n->cooked = true;
  }
  return n->str;
}

/* A number as it was written: the exact decimal the row holds, to
 * PostgreSQL's numeric ("-0" as "0", as Jansson reads it). */
static int doc_number(struct billing_doc *d, billing_val v,
                      char out[BILLING_AMOUNT_MAX])
{
  const struct billing_scratch *s = d->impl;
  const struct fnode *n;
  int i = node_of(d, v);

  if (i < 0)
    return -1;
  n = &s->nodes[i];
  if ((n->kind != FK_INT && n->kind != FK_REAL) || n->len >= BILLING_AMOUNT_MAX)
    return -1;
  if (n->kind == FK_INT && n->len == 2 && n->str[0] == '-' &&
      n->str[1] == '0') {
    memcpy(out, "0", 2);
  } else {
    memcpy(out, n->str, n->len);
    out[n->len] = '\0';
  }
  return 0;
}

static billing_val doc_member(struct billing_doc *d, billing_val o,
                              billing_val prev, size_t i, const char **key,
                              size_t *keylen)
{
  const struct billing_scratch *s = d->impl;
  int n = node_of(d, o), c;

  (void)i;
  if (n < 0 || s->nodes[n].kind != FK_OBJ)
    return BILLING_NONE;
  c = prev == BILLING_NONE ? s->nodes[n].child : s->nodes[prev - 1].next;
  if (c < 0)
    return BILLING_NONE;
  *key = s->nodes[c].key;
  *keylen = s->nodes[c].keylen;
  return (billing_val)c + 1;
}

static int doc_real(struct billing_doc *d, billing_val v, double *out)
{
  const struct billing_scratch *s = d->impl;
  int i = node_of(d, v);

  if (i < 0 || s->nodes[i].kind != FK_REAL)
    return 0;
  *out = billing_read_real(s->nodes[i].str, s->nodes[i].len);
  return 1;
}

static bool doc_truth(struct billing_doc *d, billing_val v)
{
  const struct billing_scratch *s = d->impl;
  int i = node_of(d, v);

  return i >= 0 && s->nodes[i].kind == FK_TRUE;
}

static const struct billing_doc_ops doc_ops = {
    doc_kind,   doc_get,    doc_lookup, doc_item,  doc_string,
    doc_number, doc_member, doc_real,   doc_truth,
};

void billing_json_doc(struct billing_scratch *s, struct billing_doc *out)
{
  out->ops = &doc_ops;
  out->impl = s;
  out->root = 1; /* node 0: the row */
}
