/*
 * billing_row.c — a line of a billing export into a row to store (see
 * billing_row.h): the fast reader first, Jansson for whatever it declines
 * or the field checks refuse, so that every rejection is Jansson's.
 */
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/billing_row.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

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

/* A JSON number as decimal text (see billing_row.h on "%.15g"). */
static int jdoc_number(struct billing_doc *d, billing_val v, char out[32])
{
  (void)d;
  if (json_is_integer(J(v)))
    snprintf(out, 32, "%" JSON_INTEGER_FORMAT, json_integer_value(J(v)));
  else if (json_is_real(J(v)))
    snprintf(out, 32, "%.15g", json_real_value(J(v)));
  else
    return -1;
  return 0;
}

static const struct billing_doc_ops jdoc_ops = {
    jdoc_kind, jdoc_get, jdoc_lookup, jdoc_item, jdoc_string, jdoc_number,
};

/* SHA-256 of the canonical dump of doc. Rows fit the stack buffer; a
 * larger one is dumped into the heap. Returns 0 or -1 (memory). */
static int canonical_hash(const json_t *doc, unsigned char *hash)
{
  const size_t flags = JSON_SORT_KEYS | JSON_COMPACT;
  char stack[8192], *text = stack;
  size_t n = json_dumpb(doc, stack, sizeof(stack), flags);
  unsigned int hn = 0;
  int ok;

  if (n == 0)
    return -1;
  if (n > sizeof(stack)) {
    text = malloc(n);
    if (!text || json_dumpb(doc, text, n, flags) != n) {
      free(text);
      return -1;
    }
  }
  ok = EVP_Digest(text, n, hash, &hn, EVP_sha256(), NULL);
  if (text != stack)
    free(text);
  return ok && hn == DB_BILLING_HASH_LEN ? 0 : -1;
}

int billing_parse_row_jansson(const char *line, size_t len,
                              struct billing_row *out, char *err, size_t errlen)
{
  struct billing_doc d = {&jdoc_ops, NULL, BILLING_NONE};
  json_error_t jerr;

  memset(out, 0, sizeof(*out));
  out->doc = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!out->doc)
    return fail(err, errlen, "not JSON: %s (column %d)", jerr.text,
                jerr.column);
  if (!json_is_object(out->doc)) {
    fail(err, errlen, "not a JSON object");
    goto bad;
  }
  d.root = (billing_val)out->doc;
  if (billing_fields_read(&d, &out->db, &out->text, err, errlen) != 0)
    goto bad;
  if (canonical_hash(out->doc, out->db.hash) != 0) {
    fail(err, errlen, "out of memory");
    goto bad;
  }
  out->db.row = line;
  out->db.row_len = len;
  return 0;
bad:
  billing_row_clear(out);
  return -1;
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
      out->db.row = line;
      out->db.row_len = len;
      *canon = billing_json_canonical(s, canon_len);
      return 0;
    }
  }
  *canon = NULL;
  *canon_len = 0;
  return billing_parse_row_jansson(line, len, out, err, errlen);
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
  if (canon && billing_json_hash(s, out->db.hash) != 0) {
    billing_row_clear(out);
    return fail(err, errlen, "out of memory");
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
    return fail(err, errlen, "out of memory");
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
