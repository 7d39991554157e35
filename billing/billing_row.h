/*
 * billing_row.h — one line of a billing export parsed into a row to store:
 * the fast reader (billing_json.h) when it can, Jansson when it cannot,
 * the fields checked once for both (billing_fields.h), and the row's key,
 * the SHA-256 of its meaning (billing_key.h: instants, exact decimals,
 * nulls dropped, keys sorted), so the same row however it is written —
 * BigQuery's TO_JSON_STRING or its NDJSON export, any key order or
 * spacing — is stored once.
 *
 * Amounts stay decimal text from the line to PostgreSQL's numeric: a
 * number as it was written ("12345678.123456789", "2e-07"), a NUMERIC's
 * quoted decimal as it is; only a row the fast reader declines has its
 * reals through Jansson's double, written as "%.17g" (the same double,
 * not the same digits). The credits of a row are added in decimal
 * (billing_decimal.h), and PostgreSQL sums numerics.
 */
#ifndef GPUGATE_BILLING_ROW_H
#define GPUGATE_BILLING_ROW_H

#include <jansson.h>
#include <stddef.h>

#include "db/billing.h"
#include "billing/billing_fields.h"
#include "billing/billing_json.h"
#include "billing/billing_key.h"

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
 * the row: *canon, *canon_len are then its key text (in s, until the
 * next parse) to hash (as db_billing_batch_add_canonical does, sixteen rows
 * at a time), and out->db.hash is not set; where Jansson took it, the hash
 * is set and *canon is NULL.
 */
int billing_parse_row_unhashed(struct billing_scratch *s, const char *line,
                               size_t len, struct billing_row *out,
                               const char **canon, size_t *canon_len, char *err,
                               size_t errlen);

/*
 * The error of a row whose amounts (cost, credits, usage) include a real
 * and which the fast reader declined (an integer of 19 digits or more, a
 * number of 64 characters or more in it): Jansson holds a real only as a
 * double, so the row is refused rather than stored inexact. A pulled day
 * holding one does not reconcile.
 */
#define BILLING_NOT_EXACT                                                      \
  "amounts: not read exactly (a real amount in a row with a number of 19 "     \
  "digits or more, or of 64 characters or more, which only a double holds)"

/* The Jansson path alone: the reference the tests hold the other to (its
 * reals as "%.17g", where billing_parse_row_with refuses them). */
int billing_parse_row_jansson(const char *line, size_t len,
                              struct billing_row *out, char *err,
                              size_t errlen);

/* The key text of a JSON object line as billing_key_text writes it of
 * Jansson's tree (the reference the fast reader's is held to, in tests):
 * 0, or -1 when Jansson does not read it as an object or it nests deeper
 * than 64. */
int billing_key_text_jansson(const char *line, size_t len,
                             struct billing_keytext *t);

/* Release what a parsed row owns. Accepts a zeroed row. */
void billing_row_clear(struct billing_row *r);

#endif
