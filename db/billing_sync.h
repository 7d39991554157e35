/*
 * billing_sync.h — the SQL of the BigQuery pull (server/billing_sync.h):
 * what is stored per usage day, a day's rows and rollups replaced in one
 * transaction, the outcome of a sync, and GET /v1/billing/status.
 */
#ifndef GPUGATE_DB_BILLING_SYNC_H
#define GPUGATE_DB_BILLING_SYNC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "server/req.h"

struct db_conn;

#define BILLING_EXPORT_TIME_MAX 40

/* A usage day's figures in the export: MAX(export_time) and its rows. */
struct billing_day_figures {
  char day[11]; /* "YYYY-MM-DD" */
  char export_time[BILLING_EXPORT_TIME_MAX];
  long rows;
};

/*
 * The days stored from the export from day `from` on ("" = all), in day
 * order, into a new array *out (free it) of *n. GG_OK or the failure.
 */
enum gg_code db_billing_sync_days(struct db_conn *c, const char *from,
                                  struct billing_day_figures **out, size_t *n);

/* The first day of a sync's window: the latest stored day minus reread
 * days, into day (11 bytes; "" when nothing is stored: every day). */
enum gg_code db_billing_sync_window(struct db_conn *c, long reread,
                                    char day[11]);

/*
 * Open the transaction that replaces day (under the SHARE lock on
 * month_closes a month close waits for): its billing rows and its rollups
 * in open months are deleted; its rollups in closed months stay as they
 * are, and their sums are taken back as corrections where the day's rows
 * are now reported (the first open month, db_month_attribute), so that the
 * new rows, stored with db_billing_flush (which nests) and reported there
 * too, leave new − old in that month.
 */
enum gg_code db_billing_day_begin(struct db_conn *c, const char *day);

/* Record day's figures and commit the replacement (corrections that came
 * to zero, a day read again unchanged, are dropped). */
enum gg_code db_billing_day_commit(struct db_conn *c,
                                   const struct billing_day_figures *f);

/* Roll the replacement back: the day is as it was before. */
void db_billing_day_abort(struct db_conn *c);

/* Record a sync's outcome (error "" on success) and what it read. */
enum gg_code db_billing_sync_record(struct db_conn *c, bool ok,
                                    const char *error, long days, long rows);

/*
 * GET /v1/billing/status: {"last_sync_at", "last_outcome",
 * "last_success_at", "last_error", "data_through", "days_read",
 * "rows_read", "days": [{"day", "rows", "export_time", "loaded_at"}]} of
 * the last `limit` days, newest first. *out is a new reference.
 */
enum gg_code db_billing_status(struct db_conn *c, int limit, json_t **out);

/* Seconds since the epoch of the last successful sync (0: never) and the
 * rows the pull holds. */
enum gg_code db_billing_last_success(struct db_conn *c, double *at, long *rows);

#endif
