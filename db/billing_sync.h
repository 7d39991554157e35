/*
 * billing_sync.h — the SQL of the BigQuery pull (control/billing_sync.h):
 * what is stored per usage day, a day's rows and rollups replaced in one
 * transaction, the outcome of a sync, and GET /v1/billing/status.
 */
#ifndef GPUGATE_DB_BILLING_SYNC_H
#define GPUGATE_DB_BILLING_SYNC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/err.h"

struct db_conn;

#define BILLING_EXPORT_TIME_MAX 40
#define BILLING_SUM_MAX 64       /* an exact sum as decimal text */
#define BILLING_ACCOUNTS_MAX 512 /* a day's accounts, comma-separated */

/* Advisory lock keys (pg_advisory_lock(int, int)): one BigQuery pull at a
 * time per deployment (session lock of the sync), and a day's replacement
 * exclusive of uploads (transaction locks: exclusive for the day, shared
 * for an upload's batch). */
#define BILLING_LOCK_CLASS 1735418215
#define BILLING_LOCK_PULL 1
#define BILLING_LOCK_DAY 2

/* A usage day's figures in the export: MAX(export_time), its rows, their
 * exact sums of cost and of credits (decimal text, as BigQuery's CAST(SUM(
 * CAST(x AS NUMERIC)) AS STRING) writes them) and the billing accounts of
 * its rows ("a,b"). Stored days have no sums or accounts here. */
struct billing_day_figures {
  char day[11]; /* "YYYY-MM-DD" */
  char export_time[BILLING_EXPORT_TIME_MAX];
  long rows;
  char cost[BILLING_SUM_MAX];
  char credits[BILLING_SUM_MAX];
  char accounts[BILLING_ACCOUNTS_MAX];
};

/* What was stored of a day, when it did not reconcile with the export. */
struct billing_day_stored {
  long rows;
  char cost[BILLING_SUM_MAX];
  char credits[BILLING_SUM_MAX];
};

/*
 * The days stored from the export from day `from` on ("" = all), in day
 * order, into a new array *out (free it) of *n. GG_OK or the failure.
 */
enum gg_code db_billing_sync_days(struct db_conn *c, const char *from,
                                  struct billing_day_figures **out, size_t *n);

/* A partition of the export (DATE(_PARTITIONTIME)): MAX(export_time) of
 * its rows and the first usage day it holds. */
struct billing_partition {
  char day[11];
  char export_time[BILLING_EXPORT_TIME_MAX];
  char first[11];
};

/* The partitions stored from day `from` on ("" = all), in day order, into
 * a new array *out (free it) of *n. GG_OK or the failure. */
enum gg_code db_billing_sync_partitions(struct db_conn *c, const char *from,
                                        struct billing_partition **out,
                                        size_t *n);

/* Record the partitions p[0..n) as read (upserted). GG_OK or the
 * failure. */
enum gg_code db_billing_sync_partitions_save(struct db_conn *c,
                                             const struct billing_partition *p,
                                             size_t n);

/* The first day of a sync's window: the latest stored day minus reread
 * days, into day (11 bytes; "" when nothing is stored: every day). */
enum gg_code db_billing_sync_window(struct db_conn *c, long reread,
                                    char day[11]);

/*
 * Open the transaction that replaces day (under the SHARE lock on
 * month_closes a month close waits for, and the day lock an upload's batch
 * waits for): its billing rows and its rollups in open months are deleted
 * — those of the accounts in `accounts` ("a,b": the export's) and of the
 * accounts the pull stored for the day before, never another account's;
 * its rollups in closed months stay as they are, and their sums are taken
 * back as corrections where the day's rows are now reported (the first
 * open month, db_month_attribute), so that the new rows, stored with
 * db_billing_flush (which nests) and reported there too, leave new − old
 * in that month.
 */
enum gg_code db_billing_day_begin(struct db_conn *c, const char *day,
                                  const char *accounts);

/*
 * Reconcile and end the replacement: when what is now stored of the day
 * for its accounts (the rollups: rows, Σ cost, Σ credits) equals f's
 * figures exactly, record them and commit (corrections that came to zero,
 * a day read again unchanged, are dropped), *reconciled true; else roll
 * back (the day is as it was), record the difference in
 * billing_unreconciled, fill *stored, *reconciled false. GG_OK either
 * way; a failure of the database otherwise.
 */
enum gg_code db_billing_day_commit(struct db_conn *c,
                                   const struct billing_day_figures *f,
                                   bool *reconciled,
                                   struct billing_day_stored *stored);

/* Roll the replacement back: the day is as it was before. */
void db_billing_day_abort(struct db_conn *c);

/* Record a sync's outcome (error "" on success), what it read and the
 * bytes its queries processed. */
enum gg_code db_billing_sync_record(struct db_conn *c, bool ok,
                                    const char *error, long days, long rows,
                                    long long bytes);

/* One pull at a time: wait for the deployment's pull lock on c's session
 * (GG_OK), and give it back. */
enum gg_code db_billing_pull_lock(struct db_conn *c);
void db_billing_pull_unlock(struct db_conn *c);

/*
 * GET /v1/billing/status: {"last_sync_at", "last_outcome",
 * "last_success_at", "last_error", "data_through", "days_read",
 * "rows_read", "bytes_processed", "days_unreconciled", "days": [{"day",
 * "rows", "export_time", "loaded_at", "reconciled", and when not
 * reconciled "source" and "stored": {"rows", "cost", "credits"}}]} of the
 * last `limit` days (loaded or not reconciled), newest first. *out is a
 * new reference.
 */
enum gg_code db_billing_status(struct db_conn *c, int limit, json_t **out);

/* Seconds since the epoch of the last successful sync (0: never), the
 * rows the pull holds, the days not reconciled and the last sync's bytes
 * processed. */
enum gg_code db_billing_last_success(struct db_conn *c, double *at, long *rows,
                                     long *unreconciled, long long *bytes);

#endif
