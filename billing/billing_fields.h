/*
 * billing_fields.h — the fields of a billing export row, read and checked
 * once for both row parsers.
 *
 * A parsed JSON document is seen through struct billing_doc: a few
 * operations over opaque value handles (billing_val), implemented over
 * Jansson's tree (billing_row.c) and over the fast reader's flat tree
 * (billing_json.c). billing_fields_read() applies every rule of a row to
 * either: required fields, types, bounds, the team and flavor labels, the
 * location's region, GPU usage, credits summed exactly, the invoice month.
 * The same document gives the same fields and the same message whichever
 * parser built it.
 */
#ifndef GPUGATE_BILLING_FIELDS_H
#define GPUGATE_BILLING_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db/billing.h"
#include "billing/billing_decimal.h"

/* Longest team, flavor, service, sku or location: they key the rollups,
 * whose index entries PostgreSQL limits to about 2.7 kB. */
#define BILLING_NAME_MAX 256
#define BILLING_UNATTRIBUTED "(unattributed)"

/* Write the message fmt makes into err[0..errlen) and return -1: how both
 * row parsers refuse a row. */
int billing_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The cost_type values a row may carry, NULL-terminated. */
extern const char *const billing_cost_types[];

/* Longest amount text: a NUMERIC is at most 29 + 9 digits, a sign and a
 * point; a JSON number the fast reader takes, less than 64 bytes. */
#define BILLING_AMOUNT_MAX 64

/* A value of a document; BILLING_NONE: absent. */
typedef uintptr_t billing_val;
#define BILLING_NONE ((billing_val)0)

enum billing_kind {
  BILLING_ABSENT,
  BILLING_NULL,
  BILLING_OBJECT,
  BILLING_ARRAY,
  BILLING_STRING,
  BILLING_NUMBER,
  BILLING_BOOL
};

struct billing_doc;

/* A member name and its length. */
struct billing_key {
  const char *name;
  size_t len;
};

/* What a parser's document offers; every operation accepts BILLING_NONE
 * and values of any kind. */
struct billing_doc_ops {
  enum billing_kind (*kind)(struct billing_doc *d, billing_val v);
  /* member key of object o (json_object_get), or BILLING_NONE */
  billing_val (*get)(struct billing_doc *d, billing_val o, const char *key);
  /* the members keys[0..n) of object o into out[0..n) (BILLING_NONE when
   * absent), in one pass over o: the row's top level */
  void (*lookup)(struct billing_doc *d, billing_val o,
                 const struct billing_key *keys, size_t n, billing_val *out);
  /* element i of array a, prev being element i - 1 (BILLING_NONE for
   * i = 0), or BILLING_NONE past the end or when a is not an array */
  billing_val (*item)(struct billing_doc *d, billing_val a, billing_val prev,
                      size_t i);
  /* json_string_value: decoded and NUL-terminated, borrowed from the
   * document; NULL when v is not a string */
  const char *(*string)(struct billing_doc *d, billing_val v);
  /* a number as decimal text, never through a double where the text is
   * there: as it was written (an integer's "-0" as "0"), which PostgreSQL's
   * numeric reads exactly ("1.50", "2e-07"); 0, or -1 when v is not a
   * number or its text is BILLING_AMOUNT_MAX bytes or more */
  int (*number)(struct billing_doc *d, billing_val v,
                char out[BILLING_AMOUNT_MAX]);
  /* member i of object o, prev being member i - 1 (BILLING_NONE for i =
   * 0), its name in *key (borrowed, *keylen bytes, not NUL-terminated),
   * or BILLING_NONE past the end or when o is not an object */
  billing_val (*member)(struct billing_doc *d, billing_val o, billing_val prev,
                        size_t i, const char **key, size_t *keylen);
  /* 1 with *out when v is a number written with a fraction or an exponent
   * (a FLOAT64's value), 0 when it is not */
  int (*real)(struct billing_doc *d, billing_val v, double *out);
  /* whether v is true */
  bool (*truth)(struct billing_doc *d, billing_val v);
};

struct billing_doc {
  const struct billing_doc_ops *ops;
  void *impl;       /* the parser's tree (borrowed) */
  billing_val root; /* the row: an object */
};

/* Whether s is a plain decimal ("-12.5", "3"; no exponent, no sign but
 * '-') shorter than BILLING_AMOUNT_MAX. */
bool billing_decimal_string(const char *s);

/* The text of a row's fields that is not in the document as it is. */
struct billing_field_text {
  char currency[4];
  char usage_start[48]; /* "YYYY-MM-DD HH:MM:SS[.ffffff]+00" */
  char usage_day[16];
  char invoice_month[8];
  char location[BILLING_NAME_MAX + 1];
  char cost[BILLING_AMOUNT_MAX];
  char credits[BILLING_DEC_MAX];
  char gpu_amount[BILLING_AMOUNT_MAX];
  char pricing_quantity[BILLING_AMOUNT_MAX];
};

/*
 * Read and check the fields of the row d->root (an object) into *db, whose
 * strings then borrow from d's document and from *text. db->hash, db->row
 * and db->row_len are left to the caller. Returns 0, or -1 with a message
 * naming the field in err ("cost: not a number").
 */
int billing_fields_read(struct billing_doc *d, struct db_billing_row *db,
                        struct billing_field_text *text, char *err,
                        size_t errlen);

/* The region of a zone ("us-central1-a" → "us-central1") into out; -1
 * when it does not fit outlen. */
int billing_zone_region(const char *zone, char *out, size_t outlen);

/* Which usage amount gives a GPU SKU's GPU-hours: 1, amount in pricing
 * units when those are hours; 3600, amount in seconds; 0, none (not a GPU
 * SKU, or no usable amount). */
int billing_gpu_divisor(const char *sku_desc, const char *pricing_unit,
                        bool has_in_pricing, const char *unit, bool has_amount);

#endif
