/*
 * billing_decimal.h — exact decimal arithmetic for billing amounts: the
 * credits of a row are added here, digit for digit, never as doubles.
 *
 * Operands are decimal text as "%.15g" writes a double ("-1.5", "2e-07",
 * "-0") or as an integer is written; sums are plain decimal ("-0.0000002").
 * Pure functions, thread-safe.
 */
#ifndef GPUGATE_BILLING_DECIMAL_H
#define GPUGATE_BILLING_DECIMAL_H

/* Large enough for any exact sum of a row's credits (see billing_decimal.c). */
#define BILLING_DEC_MAX 720

/*
 * Exact decimal sum: *acc += x, both decimal text as "%.15g" writes it
 * ("-1.5", "2e-07", "-0"); acc is rewritten as plain decimal ("-0.0000002")
 * and must hold BILLING_DEC_MAX bytes. Returns 0, or -1 when either is not
 * a number or the sum is out of range.
 */
int billing_dec_add(char *acc, const char *x);

/* The same on the full decimal grid only (billing_dec_add takes a 64-bit
 * shortcut when it can): the reference for tests. */
int billing_dec_add_grid(char *acc, const char *x);

#endif
