/*
 * billing_sync.h — the BigQuery pull of the Cloud Billing export (SPEC §9
 * "Finance at the source"), run by the admission leader every
 * GPUGATE_BILLING_SYNC_INTERVAL_S or once by `gpugate billing-sync`.
 *
 * A sync asks BigQuery for every usage day's row count and MAX(export_time)
 * over the window (from the latest stored day minus
 * GPUGATE_BILLING_REREAD_DAYS; everything on the first sync), compares
 * them with what billing_sync_days holds (billing_sync_plan), and re-reads
 * only the days that changed or were never loaded. A re-read day replaces
 * that day's rows and rollups in one transaction (a closed month's rollups
 * stay: the difference is posted as corrections in the first open month,
 * db/billing_sync.h): its old rows are deleted,
 * the new ones parsed and stored by the same code as the NDJSON upload
 * (billing_parse_row_unhashed, db_billing_batch_add_canonical,
 * db_billing_flush), page by
 * page, and the day's figures recorded; a failure on the way rolls all of
 * it back. Three things overlap: the next page, and the next day's first
 * (its jobs.query, on a second client), are fetched (gcp/bigquery.h)
 * while this one's rows are parsed into a batch, while the batches before,
 * of this day or of the days before, are stored and their days committed
 * by a thread of its own (control/billing_store.h; three pages and three
 * batches in memory). The money arrives as exact decimals (CAST(cost AS
 * NUMERIC) inside TO_JSON_STRING), never as a float.
 */
#ifndef GPUGATE_SERVER_BILLING_SYNC_H
#define GPUGATE_SERVER_BILLING_SYNC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "db/billing_sync.h"

struct control_config;
struct db_conn;
struct batch_token_source;

/* A day to re-read: remote is its index in the remote figures, or -1
 * when the export no longer has it (its rows are then removed). */
struct billing_day_plan {
  char day[11];
  long remote;
};

/*
 * The days to re-read, given the export's figures remote[0..nr) and the
 * stored ones stored[0..ns), both in day order: a remote day not stored,
 * or stored with another export_time or row count; a stored day (with
 * rows) the export no longer has. out holds nr + ns entries; returns how
 * many were written, in day order. Pure.
 */
size_t billing_sync_plan(const struct billing_day_figures *remote, size_t nr,
                         const struct billing_day_figures *stored, size_t ns,
                         struct billing_day_plan *out);

/*
 * The first usage day a sync sums again, given the export's partitions of
 * the window remote[0..nr) and those read before stored[0..ns) (both in
 * day order; db/billing_sync.h) and the window's first day `from` ("":
 * everything): `from`, or the earlier first usage day of a partition
 * whose MAX(export_time) moved or that was never read — a late row for an
 * old usage day, as Koku finds it. Into out (11 bytes). Pure.
 */
void billing_sync_scan_from(const struct billing_partition *remote, size_t nr,
                            const struct billing_partition *stored, size_t ns,
                            const char *from, char out[11]);

/* What a sync did. */
struct billing_sync_report {
  long days_remote;       /* days in the window of the export */
  long days_read;         /* days re-read (replaced) */
  long rows_read;         /* rows stored by them */
  long rows_rejected;     /* rows the row parser refused (logged) */
  long days_unreconciled; /* days rolled back: not reconciled */
  long calls;             /* HTTP calls to BigQuery */
  long long bytes;        /* Σ totalBytesProcessed of its queries */
};

/*
 * One sync on db (a connection of the caller's, outside any transaction),
 * with tokens from ts (NULL: none). progress: a line per day on stderr.
 * cancel (NULL: none), once set, stops it at the next row (the day being
 * read is rolled back). Records the outcome in billing_sync_state. Returns
 * 0, or -1 with a one-line message in err (days replaced before the
 * failure stay).
 */
int billing_sync_run(const struct control_config *cfg, struct db_conn *db,
                     struct batch_token_source *ts, bool progress,
                     const atomic_bool *cancel, struct billing_sync_report *rep,
                     char *err, size_t errlen);

/* Set the pull's gauges from the database (any replica may call it). */
void billing_sync_publish(struct db_conn *db);

/* Test hook: first backoff of BigQuery retries in ms (default 200). */
void billing_sync_set_backoff_ms(long ms);

#endif
