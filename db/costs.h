/*
 * costs.h — the SQL behind the cost reports: per-team costs from the
 * billing rollups, a team's budget status, spot/DWS savings, and job
 * estimates next to the billed cost.
 *
 * Reports read only cost_rollups (never billing_rows). Money is summed in
 * PostgreSQL numeric and handed back as the exact decimal text PostgreSQL
 * prints, rounded to at most 6 decimals, so that CSV can repeat it
 * verbatim; currencies are never summed together.
 */
#ifndef GPUGATE_DB_COSTS_H
#define GPUGATE_DB_COSTS_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/err.h"

struct db_conn;

/* The dimensions a cost report can be grouped by, in output order. */
enum db_cost_dim {
  DB_COST_DAY,
  DB_COST_MONTH,
  DB_COST_SERVICE,
  DB_COST_SKU,
  DB_COST_FLAVOR,
  DB_COST_LOCATION,
  DB_COST_NDIMS
};

/* "day", "month", ... indexed by enum db_cost_dim. */
extern const char *const db_cost_dim_names[DB_COST_NDIMS];

#define DB_COST_MAX_COLS 16

/* How a column's text is shown in JSON. */
enum db_cost_kind {
  DB_COST_TEXT,    /* a string */
  DB_COST_NUMBER,  /* an exact decimal: a JSON number */
  DB_COST_INTEGER, /* a count: a JSON integer */
};

/*
 * A report's rows as text: column names (static strings), their kinds,
 * and the rows. Each row is an array of ncols cells; a cell is
 * a string (numbers as PostgreSQL prints the numeric, exact) or null.
 */
struct db_cost_table {
  int ncols;
  const char *cols[DB_COST_MAX_COLS];
  enum db_cost_kind kind[DB_COST_MAX_COLS];
  json_t *rows; /* owned: array of arrays */
};

/* Release what t owns and empty it. Accepts a zeroed table. */
void db_cost_table_free(struct db_cost_table *t);

/* What a report covers. Dates are validated YYYY-MM-DD strings. */
struct db_cost_query {
  const char *from; /* first day, inclusive */
  const char *to;   /* last day, inclusive */
  const char *team; /* one team, or NULL for every team */
  bool dims[DB_COST_NDIMS];
  bool invoice_month; /* month_basis=invoice */
};

/*
 * Costs per team, the requested dimensions, charge class (null, or
 * "Correction" for rows posted here for a closed month) and currency, in
 * that order, with cost, credits, net_cost and usage_gpu_hours (into
 * rows), selected by report day (or invoice month); and per
 * currency cost, credits and net_cost (into totals). Both tables are
 * filled by this call (the caller frees them with db_cost_table_free, also
 * on failure). Errors are recorded on req.
 */
enum gg_code db_costs_report(struct db_conn *db, struct gg_err *err,
                             const struct db_cost_query *q,
                             struct db_cost_table *rows,
                             struct db_cost_table *totals);

/*
 * Budget status of team for the current UTC month: {"monthly_budget_usd",
 * "budget_policy", "month", "month_to_date_net_usd",
 * "committed_estimate_usd", "forecast_usd", "over_budget"}. *out is a new
 * reference. GG_NOT_FOUND (recorded on req) when the team does not exist.
 */
enum gg_code db_costs_budget(struct db_conn *db, struct gg_err *err,
                             const char *team, json_t **out);

/*
 * Spot and Flex Start usage per team, flavor and currency, priced at the
 * flavor's on-demand reference (rows), and per currency (totals). Flavor
 * prices are in USD, so the on-demand equivalent and the savings of rows
 * billed in another currency are null. Ownership as db_costs_report.
 */
enum gg_code db_costs_savings(struct db_conn *db, struct gg_err *err,
                              const struct db_cost_query *q,
                              struct db_cost_table *rows,
                              struct db_cost_table *totals);

/*
 * Per team and month: the jobs admitted in the month (by admitted_at,
 * UTC), the sum of their estimates and of their accrued cost, next to the
 * net cost billed in USD for that team and usage month (rows); and the
 * same summed over all (totals: one row). Ownership as db_costs_report.
 */
enum gg_code db_costs_estimates(struct db_conn *db, struct gg_err *err,
                                const struct db_cost_query *q,
                                struct db_cost_table *rows,
                                struct db_cost_table *totals);

#endif
