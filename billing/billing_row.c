/*
 * billing_row.c — a line of a billing export into a row to store (see
 * billing_row.h): the fast reader first, Jansson for whatever it declines
 * or the field checks refuse, so that every rejection is Jansson's.
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/billing_key.h"
#include "billing/billing_row.h"

/* ---- Jansson's tree as a billing_doc: a value is its json_t pointer ---- */

static const json_t *J(billing_val v)
{
  return (const json_t *)v;
}

static enum billing_kind jdoc_kind(struct billing_doc *d, billing_val v)
{
  (void)d;
  switch (v ? json_typeof(J(v)) : JSON_NULL) {
  case JSON_OBJECT:
    return BILLING_OBJECT;
  case JSON_ARRAY:
    return BILLING_ARRAY;
  case JSON_STRING:
    return BILLING_STRING;
  case JSON_INTEGER:
  case JSON_REAL:
    return BILLING_NUMBER;
  case JSON_TRUE:
  case JSON_FALSE:
    return BILLING_BOOL;
  case JSON_NULL:
    break;
  }
  return v ? BILLING_NULL : BILLING_ABSENT;
}

static billing_val jdoc_get(struct billing_doc *d, billing_val o,
                            const char *key)
{
  (void)d;
  return (billing_val)json_object_get(J(o), key);
}

static void jdoc_lookup(struct billing_doc *d, billing_val o,
                        const struct billing_key *keys, size_t n,
                        billing_val *out)
{
  size_t k;

  (void)d;
  for (k = 0; k < n; k++)
    out[k] = (billing_val)json_object_get(J(o), keys[k].name);
}

static billing_val jdoc_item(struct billing_doc *d, billing_val a,
                             billing_val prev, size_t i)
{
  (void)d;
  (void)prev;
  return (billing_val)json_array_get(J(a), i);
}

static const char *jdoc_string(struct billing_doc *d, billing_val v)
{
  (void)d;
  return json_string_value(J(v));
}

/* What a Jansson document is read for (its d->impl; NULL: as the
 * reference of the tests, reals as "%.17g"). */
struct jdoc_mode {
  bool inexact; /* an amount read was a real: the row is refused */
};

/* A JSON number as decimal text: an integer as it is; a real, which
 * Jansson holds as a double only, as "%.17g", the text that reads back as
 * that double. A row being stored (the fast reader, which keeps a number's
 * text as it was written, declined it) is then refused once its fields
 * are read (mode->inexact), so that money never goes through a double; a
 * row with another error keeps that error, Jansson's. */
static int jdoc_number(struct billing_doc *d, billing_val v,
                       char out[BILLING_AMOUNT_MAX])
{
  struct jdoc_mode *mode = d->impl;

  if (json_is_integer(J(v))) {
    snprintf(out, BILLING_AMOUNT_MAX, "%" JSON_INTEGER_FORMAT,
             json_integer_value(J(v)));
  } else if (json_is_real(J(v))) {
    snprintf(out, BILLING_AMOUNT_MAX, "%.17g", json_real_value(J(v)));
    if (mode)
      mode->inexact = true;
  } else {
    return -1;
  }
  return 0;
}

/* Whether v nests deeper than depth levels below it. */
static bool too_deep(const json_t *v, int depth)
{
  const json_t *e;
  const char *k;
  size_t i;

  if (!json_is_object(v) && !json_is_array(v))
    return false;
  if (depth <= 0)
    return true;
  if (json_is_array(v)) {
    json_array_foreach (v, i, e)
      if (too_deep(e, depth - 1))
        return true;
    return false;
  }
  json_object_foreach ((json_t *)v, k, e)
    if (too_deep(e, depth - 1))
      return true;
  return false;
}

static billing_val jdoc_member(struct billing_doc *d, billing_val o,
                               billing_val prev, size_t i, const char **key,
                               size_t *keylen)
{
  json_t *obj = (json_t *)o;
  void *it;

  (void)d;
  (void)prev;
  if (!obj || !json_is_object(obj))
    return BILLING_NONE;
  it = json_object_iter(obj);
  while (it && i-- > 0)
    it = json_object_iter_next(obj, it);
  if (!it)
    return BILLING_NONE;
  *key = json_object_iter_key(it);
  *keylen = strlen(*key);
  return (billing_val)json_object_iter_value(it);
}

static int jdoc_real(struct billing_doc *d, billing_val v, double *out)
{
  (void)d;
  if (!json_is_real(J(v)))
    return 0;
  *out = json_real_value(J(v));
  return 1;
}

static bool jdoc_truth(struct billing_doc *d, billing_val v)
{
  (void)d;
  return json_is_true(J(v));
}

static const struct billing_doc_ops jdoc_ops = {
    jdoc_kind,   jdoc_get,    jdoc_lookup, jdoc_item,  jdoc_string,
    jdoc_number, jdoc_member, jdoc_real,   jdoc_truth,
};

/* SHA-256 of text[0..n) into hash; 0 or -1. */
static int sha256(const char *text, size_t n, unsigned char *hash)
{
  unsigned int hn = 0;

  return EVP_Digest(text, n, hash, &hn, EVP_sha256(), NULL) &&
                 hn == DB_BILLING_HASH_LEN
             ? 0
             : -1;
}

/* The row's key (billing_key.h): the SHA-256 of its meaning. */
static int key_hash(struct billing_doc *d, unsigned char *hash)
{
  struct billing_keytext t = {NULL, 0, 0};
  int rc = billing_key_text(d, &t) == 0 ? sha256(t.p, t.len, hash) : -1;

  billing_keytext_free(&t);
  return rc;
}

/* The row by Jansson; mode NULL: reals as "%.17g" (the tests'
 * reference), else refused as amounts (a row being stored). */
static int parse_jansson(const char *line, size_t len, struct billing_row *out,
                         struct jdoc_mode *mode, char *err, size_t errlen)
{
  struct billing_doc d = {&jdoc_ops, mode, BILLING_NONE};
  json_error_t jerr;

  memset(out, 0, sizeof(*out));
  out->doc = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!out->doc)
    return billing_fail(err, errlen, "not JSON: %s (column %d)", jerr.text,
                        jerr.column);
  if (!json_is_object(out->doc)) {
    billing_fail(err, errlen, "not a JSON object");
    goto bad;
  }
  /* the key of a row (billing_key.h) goes 64 deep, as the fast reader */
  if (too_deep(out->doc, BILLING_KEY_DEPTH)) {
    billing_fail(err, errlen, "nested deeper than %d levels",
                 BILLING_KEY_DEPTH);
    goto bad;
  }
  d.root = (billing_val)out->doc;
  if (billing_fields_read(&d, &out->db, &out->text, err, errlen) != 0)
    goto bad;
  if (mode && mode->inexact) {
    billing_fail(err, errlen, BILLING_NOT_EXACT);
    goto bad;
  }
  if (key_hash(&d, out->db.hash) != 0) {
    billing_fail(err, errlen, "out of memory");
    goto bad;
  }
  out->db.row = line;
  out->db.row_len = len;
  return 0;
bad:
  billing_row_clear(out);
  return -1;
}

int billing_key_text_jansson(const char *line, size_t len,
                             struct billing_keytext *t)
{
  struct billing_doc d = {&jdoc_ops, NULL, BILLING_NONE};
  json_t *doc = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL); /* new */
  int rc = -1;

  if (json_is_object(doc) && !too_deep(doc, BILLING_KEY_DEPTH)) {
    d.root = (billing_val)doc;
    rc = billing_key_text(&d, t);
  }
  json_decref(doc);
  return rc;
}

int billing_parse_row_jansson(const char *line, size_t len,
                              struct billing_row *out, char *err, size_t errlen)
{
  return parse_jansson(line, len, out, NULL, err, errlen);
}

int billing_parse_row_unhashed(struct billing_scratch *s, const char *line,
                               size_t len, struct billing_row *out,
                               const char **canon, size_t *canon_len, char *err,
                               size_t errlen)
{
  struct billing_doc d;
  char ignored[8];

  memset(out, 0, sizeof(*out));
  if (billing_json_parse(s, line, len) == 0) {
    billing_json_doc(s, &d);
    if (billing_fields_read(&d, &out->db, &out->text, ignored,
                            sizeof(ignored)) == 0) {
      /* the key text was written as the row was read */
      out->db.row = line;
      out->db.row_len = len;
      *canon = billing_json_canonical(s, canon_len);
      return 0;
    }
  }
  *canon = NULL;
  *canon_len = 0;
  {
    struct jdoc_mode exact = {false};
    return parse_jansson(line, len, out, &exact, err, errlen);
  }
}

int billing_parse_row_with(struct billing_scratch *s, const char *line,
                           size_t len, struct billing_row *out, char *err,
                           size_t errlen)
{
  const char *canon;
  size_t n;

  if (billing_parse_row_unhashed(s, line, len, out, &canon, &n, err, errlen) !=
      0)
    return -1;
  if (canon && sha256(canon, n, out->db.hash) != 0) {
    billing_row_clear(out);
    return billing_fail(err, errlen, "out of memory");
  }
  return 0;
}

int billing_parse_row(const char *line, size_t len, struct billing_row *out,
                      char *err, size_t errlen)
{
  struct billing_scratch *s = billing_scratch_new();
  int rc;

  if (!s) {
    memset(out, 0, sizeof(*out));
    return billing_fail(err, errlen, "out of memory");
  }
  rc = billing_parse_row_with(s, line, len, out, err, errlen);
  if (rc == 0 && !out->doc)
    out->own = s; /* the row's strings are in it */
  else
    billing_scratch_free(s);
  return rc;
}

void billing_row_clear(struct billing_row *r)
{
  json_decref(r->doc);
  r->doc = NULL;
  billing_scratch_free(r->own);
  r->own = NULL;
}
