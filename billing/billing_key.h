/*
 * billing_key.h — a billing row's key: the SHA-256 of its meaning, so that
 * one row is one row whichever form it came in. BigQuery writes a row two
 * ways: TO_JSON_STRING (the pull: TIMESTAMP as "2026-08-01T04:00:00Z", a
 * NUMERIC with a fraction quoted, NULL fields present) and its own NDJSON
 * export (an upload: "2026-08-01 04:00:00 UTC", FLOAT64 money as numbers,
 * NULL fields left out). The key text is the row with
 *
 *   - members sorted by name, and null, empty-array and empty-object
 *     members dropped (a NULL and an empty REPEATED column mean the same);
 *   - every string that is a timestamp written as its UTC instant,
 *     "YYYY-MM-DDTHH:MM:SS[.ffffff]Z" (no trailing fractional zeros);
 *   - every number, and every string that is a plain decimal, written as a
 *     NUMERIC: rounded half away from zero to 9 decimals (a FLOAT64 from
 *     its binary value, as CAST(x AS NUMERIC) does; a decimal string from
 *     its digits), no trailing zeros, no exponent, "-0" as "0";
 *
 * compact, with the other strings JSON-escaped. Pure, thread-safe.
 */
#ifndef GPUGATE_BILLING_KEY_H
#define GPUGATE_BILLING_KEY_H

#include <stddef.h>

#include "billing/billing_fields.h"

/* Levels of arrays and objects a row may nest (as the fast reader). */
#define BILLING_KEY_DEPTH 64

/* The key text being written; reused from row to row. */
struct billing_keytext {
  char *p;
  size_t len, cap;
};

/* The key text of row d->root into t (emptied first). 0, or -1 when out
 * of memory or the row nests deeper than 64. */
int billing_key_text(struct billing_doc *d, struct billing_keytext *t);

/* A decimal ("-12.30", "007", "1.0000000005") as a NUMERIC's text into
 * out (BILLING_AMOUNT_MAX bytes): rounded half away from zero to 9
 * decimals, no trailing zeros. 0, or -1 when it does not fit. */
int billing_key_decimal(const char *s, char *out);

/* A FLOAT64 as CAST(x AS NUMERIC) would write it, into out (64 bytes:
 * BILLING_AMOUNT_MAX). */
void billing_key_real(double v, char *out);

/* The key text of a string s[0..n) (decoded; no NUL in it) that is a
 * timestamp or a plain decimal, into out (BILLING_KEY_SCALAR_MAX bytes,
 * not NUL-terminated): its length, or 0 when s is neither (it is then
 * written as a string: billing_key_escape). */
#define BILLING_KEY_SCALAR_MAX 64
size_t billing_key_scalar(const char *s, size_t n, char *out);

/* s[0..n) as a key text's JSON string, quotes included, into out (at
 * least BILLING_KEY_ESCAPED_MAX(n) bytes; not NUL-terminated): control
 * characters, '"' and '\\' as \u00XX, every other byte as it is. Its
 * length. */
#define BILLING_KEY_ESCAPED_MAX(n) (6 * (n) + 2)
size_t billing_key_escape(char *out, const char *s, size_t n);

void billing_keytext_free(struct billing_keytext *t); /* accepts NULL */

#endif
