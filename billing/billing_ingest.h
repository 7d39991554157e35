/*
 * billing_ingest.h — the billing-export ingest engine, shared by
 * POST /v1/billing/export-rows and `gpugate ingest-billing`.
 *
 * Input is NDJSON: one row of the Cloud Billing standard usage cost export
 * per line, as BigQuery writes them. The engine splits the lines across
 * chunk boundaries (billing_lines.h), parses and validates each row
 * (billing_row.h), records bad lines ({line, error}) without stopping, and
 * stores valid rows in batches of BILLING_BATCH_ROWS, each in one
 * transaction (db_billing_flush). Its memory is bounded whatever the input
 * size: the current partial line (at most BILLING_LINE_MAX), one batch,
 * and at most BILLING_REJECTED_MAX recorded rejections.
 *
 * The pieces it is made of, each in a file of its own with its own tests:
 * billing_lines (line splitting), billing_decimal (exact sums),
 * billing_time (timestamps, invoice months), lib/real (reals without
 * printf), billing_json (the fast JSON reader), billing_fields (the rules
 * of a row's fields, once for both parsers) and billing_row (a line into a
 * row). This header includes theirs.
 */
#ifndef GPUGATE_BILLING_INGEST_H
#define GPUGATE_BILLING_INGEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "db/billing.h"
#include "billing/billing_decimal.h"
#include "billing/billing_fields.h"
#include "billing/billing_json.h"
#include "billing/billing_lines.h"
#include "lib/real.h"
#include "billing/billing_row.h"
#include "billing/billing_time.h"

#define BILLING_LINE_MAX ((size_t)1024 * 1024) /* longer lines: rejected */
#define BILLING_BATCH_ROWS 5000                /* rows per transaction */
#define BILLING_BATCH_BYTES ((size_t)8 * 1024 * 1024) /* or COPY bytes */
#define BILLING_REJECTED_MAX 10000 /* rejections listed (all counted) */

struct db_conn;
struct billing_ingest;

/* ---- the engine ---------------------------------------------------- */

/*
 * A new engine storing into db (borrowed; it must outlive the engine and
 * not be used by anyone else in between). NULL on allocation failure.
 * Not thread-safe: one engine is fed by one thread.
 */
struct billing_ingest *billing_ingest_new(struct db_conn *db);

/* Free bi. Never touches the database. Accepts NULL. */
void billing_ingest_free(struct billing_ingest *bi);

/*
 * Feed the next n bytes of input (any split, lines may straddle calls).
 * Returns 0, or -1 once the database (or memory) has failed: batches
 * committed before stay committed, and nothing more is stored.
 */
int billing_ingest_feed(struct billing_ingest *bi, const char *data, size_t n);

/*
 * End of input: store what is left and return the report, a new reference:
 * {"inserted": n, "duplicates": n, "rejected": [{"line": n, "error": s}],
 *  "rejected_count": n, "truncated": bool}. NULL when the database (or
 * memory) failed, now or earlier. Call once.
 */
json_t *billing_ingest_finish(struct billing_ingest *bi);

/* Rows parsed so far (valid ones) and seconds since billing_ingest_new. */
void billing_ingest_progress(const struct billing_ingest *bi, long *rows,
                             double *seconds);

/* Rows in committed batches (inserted + duplicates): what a failure
 * leaves stored. */
long billing_ingest_committed(const struct billing_ingest *bi);

#endif
