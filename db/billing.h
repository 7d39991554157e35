/*
 * billing.h — the SQL behind billing-export ingestion: batches of rows
 * COPYed into a per-connection staging table and merged, in one
 * transaction, into billing_rows (new rows only, keyed by their hash) and
 * cost_rollups (their sums added).
 *
 * The batch holds the rows as COPY text, so its memory is the size of the
 * rows it holds; callers bound it with db_billing_batch_rows/_bytes.
 */
#ifndef GPUGATE_DB_BILLING_H
#define GPUGATE_DB_BILLING_H

#include <stddef.h>

#include "server/req.h"

struct db_conn;
struct db_billing_batch;

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
  const char *invoice_month; /* "YYYY-MM" or "" */
  const char *cost;
  const char *credits;    /* Σ credits[].amount */
  const char *gpu_amount; /* GPU usage, in the unit gpu_divisor says */
  int gpu_divisor;        /* 1: hours, 3600: seconds, 0: not GPU usage */
  const char *row;        /* the row's JSON text */
  size_t row_len;
};

/* A new empty batch, or NULL on allocation failure. */
struct db_billing_batch *db_billing_batch_new(void);

/* Free b and its buffer. Accepts NULL. */
void db_billing_batch_free(struct db_billing_batch *b);

/* Append r (copied) to b. Returns 0, or -1 on allocation failure. */
int db_billing_batch_add(struct db_billing_batch *b,
                         const struct db_billing_row *r);

/* Rows in b, and the bytes of COPY text they take. */
size_t db_billing_batch_rows(const struct db_billing_batch *b);
size_t db_billing_batch_bytes(const struct db_billing_batch *b);

/*
 * Store b's rows in one transaction: rows whose hash is already in
 * billing_rows (or earlier in b) are skipped, the others inserted and their
 * sums added to cost_rollups. Sets *inserted to the rows inserted. b is
 * emptied whether or not it succeeds. Returns GG_OK, or the failure's code
 * (logged; the transaction is rolled back). c must not be inside a
 * transaction.
 */
enum gg_code db_billing_flush(struct db_conn *c, struct db_billing_batch *b,
                              long *inserted);

/*
 * Escape s[0..n) for a field of COPY's text format (backslash, tab, newline
 * and carriage return become \\, \t, \n, \r) into out, which must hold 2 * n
 * bytes. Returns the length written (no NUL is added). Pure.
 */
size_t db_copy_escape(char *out, const char *s, size_t n);

#endif
