/*
 * billing.h — the SQL behind billing-export ingestion: batches of rows
 * stored, in one transaction each, into billing_rows (new rows only, keyed
 * by their hash) and cost_rollups (their sums added).
 *
 * The batch holds its rows already in PostgreSQL's binary COPY format (and
 * their amounts as text), so its memory is about the size of the rows it
 * holds; callers bound it with db_billing_batch_rows/_bytes.
 */
#ifndef GPUGATE_DB_BILLING_H
#define GPUGATE_DB_BILLING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db/billing_row.h"
#include "lib/err.h"

struct db_conn;
struct db_billing_batch;

/* A new empty batch, or NULL on allocation failure. */
struct db_billing_batch *db_billing_batch_new(void);

/* Free b and its buffers. Accepts NULL. */
void db_billing_batch_free(struct db_billing_batch *b);

/* Append r (copied) to b. Returns 0, or -1 on allocation failure or a
 * field PostgreSQL would not accept (a malformed timestamp or number). */
int db_billing_batch_add(struct db_billing_batch *b,
                         const struct db_billing_row *r);

/*
 * The same for a row whose hash is not computed yet (r->hash is ignored):
 * it is SHA-256 of canon[0..canon_len) (copied), computed with the next
 * rows added so, SHA256_LANES at a time, and for the last few when b is
 * stored. canon NULL: r->hash is the row's (db_billing_batch_add).
 */
int db_billing_batch_add_canonical(struct db_billing_batch *b,
                                   const struct db_billing_row *r,
                                   const char *canon, size_t canon_len);

/* Empty b without storing it, keeping its memory. */
void db_billing_batch_clear(struct db_billing_batch *b);

/* Rows in b, and the bytes of row data they take. */
size_t db_billing_batch_rows(const struct db_billing_batch *b);
size_t db_billing_batch_bytes(const struct db_billing_batch *b);

/*
 * Store b's rows in one transaction: rows whose hash is already in
 * billing_rows (or earlier in b) are skipped, the others inserted and their
 * sums added to cost_rollups — a row late for a closed month as a
 * correction in the first open month (db/months.h), decided under a SHARE
 * lock on month_closes that a month close waits for — and
 * billing_freshness raised to their latest usage_start. Sets *inserted to the
 * rows inserted. b is emptied whether or not it succeeds. Returns GG_OK, or the
 * failure's code (logged; the transaction is rolled back). When c is inside a
 * transaction (the BigQuery pull replacing a day), the batch is a savepoint
 * of it instead, and the caller commits.
 *
 * expect_new is a hint (say, when the previous batch had no known row):
 * the rows are then stored without looking each up first, and the batch is
 * tried again, looking them up, if one turns out to be known. Either way
 * the result is the same.
 */
enum gg_code db_billing_flush(struct db_conn *c, struct db_billing_batch *b,
                              bool expect_new, long *inserted);

/*
 * A new connection to the same database, with the same parameters, as c
 * (for a thread of its own), or NULL when it cannot be opened (logged).
 * Close it with db_billing_disconnect.
 */
struct db_conn *db_billing_connect_like(const struct db_conn *c);
void db_billing_disconnect(struct db_conn *c); /* accepts NULL */

/* ---- PostgreSQL's binary forms (pure, exposed for tests) ---------------- */

/*
 * Decimal text ("-1.25", "1e-07", "0.000") as numeric_send writes the
 * numeric numeric_in makes of it (same digits, same display scale) into
 * out, which holds cap bytes. Returns the length, or -1 when text is not a
 * number or out is too small.
 */
int db_numeric_binary(const char *text, unsigned char *out, size_t cap);

/* "YYYY-MM-DD HH:MM:SS[.ffffff]+00" → microseconds since 2000-01-01 UTC
 * (timestamptz's binary form); 0 or -1. */
int db_timestamptz_binary(const char *text, int64_t *us);

/* "YYYY-MM-DD" → days since 2000-01-01 (date's binary form); 0 or -1. */
int db_date_binary(const char *text, int32_t *days);

#endif
