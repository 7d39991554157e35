/*
 * billing_numeric.h — the numeric arithmetic of storing a batch of billing
 * rows (db/billing_flush.c), done in C exactly as PostgreSQL 15's numeric
 * does it, so that the batch's rollup sums and its rows' GPU-hours can be
 * sent ready instead of computed by a statement over every row: a sum's
 * display scale is the largest of its terms' (as sum() and + give it), a
 * GPU-hour is trim_scale(seconds / 3600) with the scale and rounding of
 * PostgreSQL's division (select_div_scale, div_var rounding half away from
 * zero).
 *
 * A value is held as a 128-bit integer and a scale; one that does not fit
 * (more than 36 digits in all) is refused, and the caller leaves the
 * arithmetic to PostgreSQL. Pure functions, thread-safe.
 */
#ifndef GPUGATE_DB_BILLING_NUMERIC_H
#define GPUGATE_DB_BILLING_NUMERIC_H

#include <stddef.h>

__extension__ typedef __int128 bn_int;

/* value = m × 10^-scale; scale is the display scale (digits after the
 * point as PostgreSQL prints the numeric). */
struct bnum {
  bn_int m;
  int scale;
};

#define BNUM_TEXT_MAX 72 /* a bnum as plain decimal text, with its NUL */

/* Decimal text as numeric_in takes it ("-1.50", "2e-07", "1.5E+3") into
 * *out with numeric_in's display scale. 0, or -1 when it is not a number
 * or does not fit. */
int bnum_parse(const char *text, struct bnum *out);

/* *acc += x (the display scale the larger). 0, or -1 when it would not
 * fit (acc unchanged). */
int bnum_add(struct bnum *acc, const struct bnum *x);

/* trim_scale(x / 3600) as PostgreSQL 15 computes it. 0, or -1 when it
 * would not fit. */
int bnum_div3600(const struct bnum *x, struct bnum *out);

/* x as numeric_out prints it ("-0.50", "12"), into out (BNUM_TEXT_MAX
 * bytes). */
void bnum_text(const struct bnum *x, char out[BNUM_TEXT_MAX]);

#endif
