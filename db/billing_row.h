/*
 * billing_row.h — one billing-export row as db/billing.h stores it, and
 * the length of its hash: the piece both the batch's interface
 * (billing.h) and its inside (billing_batch.h) need, so that neither
 * includes the other back.
 */
#ifndef GPUGATE_DB_BILLING_ROW_H
#define GPUGATE_DB_BILLING_ROW_H

#include <stddef.h>

#define DB_BILLING_HASH_LEN 32 /* SHA-256 */

/*
 * One row as stored. Every string is borrowed, NUL-terminated and already
 * validated by the caller; the numeric ones are decimal text PostgreSQL's
 * numeric accepts ("-1.25", "1e-07").
 */
struct db_billing_row {
  unsigned char hash[DB_BILLING_HASH_LEN];
  const char *team, *flavor, *service, *sku, *location;
  const char *currency;
  const char *usage_start; /* timestamptz text, e.g. "2026-08-01 10:00:00+00" */
  const char *usage_day;   /* "YYYY-MM-DD", the UTC day of usage_start */
  const char *invoice_month;   /* "YYYY-MM" or "" */
  const char *cost_type;       /* regular, tax, adjustment, rounding_error */
  const char *billing_account; /* billing_account_id, or "" */
  const char *cost;
  const char *credits;          /* Σ credits[].amount */
  const char *gpu_amount;       /* GPU usage, in the unit gpu_divisor says */
  int gpu_divisor;              /* 1: hours, 3600: seconds, 0: not GPU usage */
  const char *pricing_quantity; /* usage.amount_in_pricing_units, or "0" */
  const char *pricing_unit;     /* usage.pricing_unit, or "" */
  const char *row;              /* the row's JSON text */
  size_t row_len;
};

#endif
