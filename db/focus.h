/*
 * focus.h — the rollups a FOCUS export streams, read through a cursor on
 * a connection of the export's own, so that an export of any length holds
 * one batch of rows in memory and no connection of the request pool while
 * the client downloads.
 */
#ifndef GPUGATE_DB_FOCUS_H
#define GPUGATE_DB_FOCUS_H

#include "lib/err.h"

struct db_conn;

struct db_focus;

/* One rollup; every string borrowed until the next db_focus_next(). Money
 * is exact decimal text (PostgreSQL's numeric, trailing zeros trimmed). */
struct db_focus_row {
  const char *team, *flavor, *service, *sku, *location, *currency;
  const char *cost_type, *billing_account;
  const char *charge_class; /* "" or "Correction" */
  const char *month;        /* the invoice month it counts in, YYYY-MM */
  const char *day;          /* its usage day, YYYY-MM-DD */
  const char *cost, *credits, *gpu_hours;
  const char *pricing_quantity; /* Σ usage.amount_in_pricing_units */
  const char *pricing_unit;     /* their usage.pricing_unit, or "" */
};

/*
 * Open the rollups reported on the days from..to (valid YYYY-MM-DD) of
 * team (NULL: every team) in a stable order, in one read-only snapshot.
 * NULL with the problem recorded on req (404 for a team that does not
 * exist, 503 when no connection can be opened).
 */
struct db_focus *db_focus_open(struct db_conn *db, struct gg_err *err,
                               const char *from, const char *to,
                               const char *team);

/* The next rollup into *row: 1, 0 at the end, -1 on a failure (logged).
 * Thread: the caller's, one at a time. */
int db_focus_next(struct db_focus *f, struct db_focus_row *row);

/* End the snapshot and close the connection. Accepts NULL. */
void db_focus_close(struct db_focus *f);

#endif
