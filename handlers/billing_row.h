/*
 * billing_row.h — one line of a billing export parsed into a row to store:
 * the fast reader (billing_json.h) when it can, Jansson when it cannot,
 * the fields checked once for both (billing_fields.h), and the row's key,
 * the SHA-256 of its canonical JSON (Jansson's dump with sorted keys,
 * compact), so the same row however its keys are ordered or spaced is
 * stored once.
 *
 * Amounts. Jansson holds a JSON number as a 64-bit integer or a double.
 * Integers are passed to SQL as they are; reals as "%.15g", whose 15
 * significant digits give back every decimal of at most 15 significant
 * digits exactly (1234.567890123, 0.1) and drop the binary noise of
 * float-valued exports (0.30000000000000004 becomes 0.3). Amounts with more
 * significant digits are rounded to 15. From there on everything is exact
 * decimal: the credits of a row are added in decimal (billing_decimal.h),
 * and PostgreSQL sums numerics.
 */
#ifndef GPUGATE_BILLING_ROW_H
#define GPUGATE_BILLING_ROW_H

#include <jansson.h>
#include <stddef.h>

#include "db/billing.h"
#include "handlers/billing_fields.h"
#include "handlers/billing_json.h"

/*
 * A parsed row. db's strings point into doc, into a scratch (see
 * billing_parse_row_with), into text, or (db.row) into the line it was
 * parsed from, which must outlive the row's use.
 */
struct billing_row {
  struct db_billing_row db;
  json_t *doc;                 /* owned: the parsed line (Jansson path) */
  struct billing_scratch *own; /* owned: from billing_parse_row */
  struct billing_field_text text;
};

/*
 * Parse and validate one line. Returns 0 with *out filled (release it with
 * billing_row_clear), or -1 with a message naming the field in err
 * ("cost: not a number", "not JSON: ..."); *out then needs no clearing.
 *
 * Two paths give the same results: the fast reader, and Jansson (load,
 * checks, sorted dump), which decides every row the first does not accept
 * — so every rejection, with its message, is Jansson's.
 */
int billing_parse_row(const char *line, size_t len, struct billing_row *out,
                      char *err, size_t errlen);

/* The same with a scratch the caller keeps (the engine keeps one): a row
 * parsed with it borrows from it until the next parse with it. */
int billing_parse_row_with(struct billing_scratch *s, const char *line,
                           size_t len, struct billing_row *out, char *err,
                           size_t errlen);

/*
 * The same, but the hash is left to the caller where the fast reader took
 * the row: *canon, *canon_len are then its canonical text (in s, until the
 * next parse) to hash (as db_billing_batch_add_canonical does, eight rows
 * at a time), and out->db.hash is not set; where Jansson took it, the hash
 * is set and *canon is NULL.
 */
int billing_parse_row_unhashed(struct billing_scratch *s, const char *line,
                               size_t len, struct billing_row *out,
                               const char **canon, size_t *canon_len, char *err,
                               size_t errlen);

/* The Jansson path alone: the reference the tests hold the other to. */
int billing_parse_row_jansson(const char *line, size_t len,
                              struct billing_row *out, char *err,
                              size_t errlen);

/* Release what a parsed row owns. Accepts a zeroed row. */
void billing_row_clear(struct billing_row *r);

#endif
