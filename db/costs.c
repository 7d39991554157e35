/*
 * costs.c — the SQL behind the cost reports, the team budget status, the
 * savings of spot and Flex Start capacity, and estimates against the bill.
 *
 * Each report is one static statement. Optional group-by dimensions are
 * boolean parameters: a dimension that was not asked for is a constant
 * NULL (CASE WHEN $n THEN column END), so grouping by every CASE expression
 * groups by exactly the requested ones. Totals come from the same
 * statement as a second grouping set, so rows and totals always describe
 * the same data. Sums are numeric, rounded to 6 decimals and trimmed of
 * trailing zeros in SQL, and handed on as the text PostgreSQL prints.
 * Text sort keys use the "C" collation so the order never depends on the
 * database's locale.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/costs.h"
#include "db/db.h"
#include "lib/jsonx.h"

const char *const db_cost_dim_names[DB_COST_NDIMS] = {
    "day", "month", "service", "sku", "flavor", "location"};

/*
 * $1 from, $2 to (dates, inclusive); $3 team or NULL for all; $4..$9 group
 * by day, month, service, sku, flavor, location; $10 month_basis=invoice:
 * the month is then the invoice month a rollup counts in (its own, or for
 * a correction the open month it was posted to), and rows are selected by
 * that month between the months of from and to; else by the report day (a
 * correction's is the first day of its month: a closed month's rows never
 * change). Columns: 0 grouping (1 = a currency total), 1 team, 2..7 the
 * dimensions, 8 currency, 9 cost, 10 credits, 11 net, 12 GPU-hours,
 * 13 charge class (NULL, or "Correction").
 */
static const char sql_report[] =
    "WITH r AS (SELECT team, "
    "CASE WHEN $4::boolean THEN to_char(report_day, 'YYYY-MM-DD') END "
    "AS k_day, "
    "CASE WHEN $5::boolean THEN k_month END AS k_month, "
    "CASE WHEN $6::boolean THEN service END AS k_service, "
    "CASE WHEN $7::boolean THEN sku END AS k_sku, "
    "CASE WHEN $8::boolean THEN flavor END AS k_flavor, "
    "CASE WHEN $9::boolean THEN location END AS k_location, "
    "nullif(charge_class, '') AS k_class, currency, cost, credits, gpu_hours "
    "FROM (SELECT team, report_day, service, sku, flavor, location, "
    "charge_class, currency, cost, credits, gpu_hours, "
    "CASE WHEN $10::boolean THEN month "
    "ELSE to_char(report_day, 'YYYY-MM') END AS k_month "
    "FROM cost_rollups WHERE ($3::text IS NULL OR team = $3) "
    "AND CASE WHEN $10::boolean THEN month BETWEEN "
    "to_char($1::date, 'YYYY-MM') AND to_char($2::date, 'YYYY-MM') "
    "ELSE report_day BETWEEN $1::date AND $2::date END) c) "
    "SELECT grouping(team), team, k_day, k_month, k_service, k_sku, "
    "k_flavor, k_location, currency, "
    "trim_scale(round(sum(cost), 6)), trim_scale(round(sum(credits), 6)), "
    "trim_scale(round(sum(cost + credits), 6)), "
    "trim_scale(round(sum(gpu_hours), 6)), k_class FROM r "
    "GROUP BY GROUPING SETS ((team, k_day, k_month, k_service, k_sku, "
    "k_flavor, k_location, k_class, currency), (currency)) "
    "ORDER BY 1, team COLLATE \"C\", k_day, k_month, "
    "k_service COLLATE \"C\", k_sku COLLATE \"C\", k_flavor COLLATE \"C\", "
    "k_location COLLATE \"C\", k_class NULLS FIRST, currency COLLATE \"C\"";

/*
 * $1 team. Month-to-date is the current UTC month, in USD; the forecast
 * scales it to the whole month by the days elapsed (today included) and
 * adds the estimates of the team's jobs holding quota. Columns: 0 budget,
 * 1 policy, 2 month, 3 month-to-date, 4 committed, 5 forecast, 6 over.
 */
static const char sql_budget[] =
    "SELECT b.budget, b.policy, b.month, trim_scale(round(b.mtd, 6)), "
    "trim_scale(round(b.committed, 6)), "
    "trim_scale(round(b.mtd * b.days / b.elapsed + b.committed, 6)), "
    "coalesce(b.mtd + b.committed >= b.budget, false) "
    "FROM (SELECT (t.spec->>'monthly_budget_usd')::numeric AS budget, "
    "coalesce(t.spec->>'budget_policy', 'none') AS policy, "
    "to_char(u.ts, 'YYYY-MM') AS month, "
    "extract(day FROM u.ts) AS elapsed, "
    "extract(day FROM date_trunc('month', u.ts) + interval '1 month' "
    "- interval '1 day') AS days, "
    "(SELECT coalesce(sum(r.cost + r.credits), 0) FROM cost_rollups r "
    "WHERE r.team = t.name AND r.currency = 'USD' "
    "AND r.report_day >= date_trunc('month', u.ts)::date) AS mtd, "
    "(SELECT coalesce(sum(j.estimated_cost_usd), 0) FROM jobs j "
    "WHERE j.team = t.name "
    "AND j.state IN ('ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING')) "
    "AS committed "
    "FROM teams t, (SELECT now() AT TIME ZONE 'UTC' AS ts) u "
    "WHERE t.name = $1) b";

/*
 * $1 from, $2 to, $3 team or NULL. Usage of SPOT and FLEX_START flavors,
 * by the flavor's current provisioning model and on-demand price (USD, so
 * only USD rows get an on-demand equivalent). Columns: 0 grouping, 1 team,
 * 2 flavor, 3 model, 4 currency, 5 GPU-hours, 6 on-demand equivalent,
 * 7 paid, 8 savings.
 */
static const char sql_savings[] =
    "WITH s AS (SELECT r.team, r.flavor, "
    "f.spec->>'provisioning_model' AS model, r.currency, r.gpu_hours, "
    "r.cost + r.credits AS paid, "
    "CASE WHEN r.currency = 'USD' THEN r.gpu_hours * "
    "(f.spec->>'on_demand_price_per_gpu_hour_usd')::numeric END AS od "
    "FROM cost_rollups r JOIN flavors f ON f.name = r.flavor "
    "WHERE r.report_day BETWEEN $1::date AND $2::date "
    "AND ($3::text IS NULL OR r.team = $3) "
    "AND f.spec->>'provisioning_model' IN ('SPOT', 'FLEX_START')) "
    "SELECT grouping(team), team, flavor, model, currency, "
    "trim_scale(round(sum(gpu_hours), 6)), trim_scale(round(sum(od), 6)), "
    "trim_scale(round(sum(paid), 6)), "
    "trim_scale(round(sum(od) - sum(paid), 6)) FROM s "
    "GROUP BY GROUPING SETS ((team, flavor, model, currency), (currency)) "
    "ORDER BY 1, team COLLATE \"C\", flavor COLLATE \"C\", "
    "currency COLLATE \"C\"";

/*
 * $1 from, $2 to, $3 team or NULL. Jobs by the UTC month they were
 * admitted in, with their estimates and accrued cost (as db/jobs.c shows
 * it: price × GPUs × run time so far), beside the USD net billed for the
 * team's usage in that month. Columns: 0 grouping (1 = the overall
 * total), 1 team, 2 month, 3 jobs, 4 estimated, 5 accrued, 6 billed.
 */
static const char sql_estimates[] =
    "WITH e AS (SELECT j.team, "
    "to_char(j.admitted_at AT TIME ZONE 'UTC', 'YYYY-MM') AS month, "
    "count(*) AS jobs, sum(coalesce(j.estimated_cost_usd, 0)) AS est, "
    "sum(coalesce((f.spec->>'price_per_gpu_hour_usd')::numeric * j.gpu * "
    "extract(epoch FROM coalesce(j.finished_at, now()) - j.run_started_at) "
    "/ 3600, 0)) AS acc "
    "FROM jobs j LEFT JOIN flavors f ON f.name = j.flavor "
    "WHERE j.admitted_at >= $1::date::timestamp AT TIME ZONE 'UTC' "
    "AND j.admitted_at < ($2::date + 1)::timestamp AT TIME ZONE 'UTC' "
    "AND ($3::text IS NULL OR j.team = $3) GROUP BY 1, 2), "
    "b AS (SELECT team, to_char(report_day, 'YYYY-MM') AS month, "
    "sum(cost + credits) AS billed FROM cost_rollups "
    "WHERE report_day BETWEEN $1::date AND $2::date AND currency = 'USD' "
    "AND ($3::text IS NULL OR team = $3) GROUP BY 1, 2), "
    "m AS (SELECT coalesce(e.team, b.team) AS team, "
    "coalesce(e.month, b.month) AS month, coalesce(e.jobs, 0) AS jobs, "
    "coalesce(e.est, 0) AS est, coalesce(e.acc, 0) AS acc, "
    "coalesce(b.billed, 0) AS billed "
    "FROM e FULL JOIN b ON b.team = e.team AND b.month = e.month) "
    "SELECT grouping(team), team, month, coalesce(sum(jobs), 0), "
    "trim_scale(round(coalesce(sum(est), 0), 6)), "
    "trim_scale(round(coalesce(sum(acc), 0), 6)), "
    "trim_scale(round(coalesce(sum(billed), 0), 6)) FROM m "
    "GROUP BY GROUPING SETS ((team, month), ()) "
    "ORDER BY 1, team COLLATE \"C\", month";

void db_cost_table_free(struct db_cost_table *t)
{
  json_decref(t->rows);
  memset(t, 0, sizeof(*t));
}

/* A table being filled: which result column each of its columns shows. */
struct fill {
  struct db_cost_table *t;
  int src[DB_COST_MAX_COLS];
};

/* One column of a table: its name, the result column it shows, its kind. */
struct col_def {
  const char *name; /* static */
  int src;
  enum db_cost_kind kind;
};

static void begin(struct fill *f, struct db_cost_table *t)
{
  db_cost_table_free(t);
  t->rows = json_array();
  f->t = t;
}

static void col(struct fill *f, int src, const char *name,
                enum db_cost_kind kind)
{
  struct db_cost_table *t = f->t;

  if (t->ncols == DB_COST_MAX_COLS)
    return;
  f->src[t->ncols] = src;
  t->cols[t->ncols] = name;
  t->kind[t->ncols] = kind;
  t->ncols++;
}

/* The n columns of defs, in order. */
static void cols(struct fill *f, const struct col_def *defs, size_t n)
{
  size_t i;

  for (i = 0; i < n; i++)
    col(f, defs[i].src, defs[i].name, defs[i].kind);
}

/* Append result row `row`; false when out of memory. */
static bool add_row(struct fill *f, const PGresult *res, int row)
{
  json_t *cells = json_array();
  int i;

  if (!cells)
    return false;
  for (i = 0; i < f->t->ncols; i++) {
    int c = f->src[i];
    json_t *cell = PQgetisnull(res, row, c)
                       ? json_null()
                       : json_string(PQgetvalue(res, row, c));
    if (json_array_append_new(cells, cell) != 0) {
      json_decref(cells);
      return false;
    }
  }
  return json_array_append_new(f->t->rows, cells) == 0;
}

/*
 * Run a report's statement on the request's connection and split its
 * result into rows (grouping column 0 is "0") and totals (the rest), each
 * shown through its fill. Returns GG_OK or a recorded error.
 */
static enum gg_code fetch(struct db_conn *db, struct gg_err *err,
                          const char *sql, int n, const char *const *params,
                          struct fill *rows, struct fill *totals)
{
  enum gg_code code = GG_OK;
  PGresult *res;
  int i, nrows;

  if (!(res = db_err_exec(db, err, sql, n, params)))
    return err->code;
  nrows = PQntuples(res);
  if (!rows->t->rows || !totals->t->rows)
    code = err_fail(err, GG_INTERNAL, "Out of memory.");
  for (i = 0; i < nrows && code == GG_OK; i++) {
    struct fill *f = strcmp(PQgetvalue(res, i, 0), "0") ? totals : rows;
    if (!add_row(f, res, i))
      code = err_fail(err, GG_INTERNAL, "Out of memory.");
  }
  PQclear(res);
  return code;
}

/* The parameters shared by every report: $1 from, $2 to, $3 team. */
static void base_params(const struct db_cost_query *q, const char **params)
{
  params[0] = q->from;
  params[1] = q->to;
  params[2] = q->team; /* NULL: SQL NULL, every team */
}

/* The report's columns after team and the dimensions; totals: all but
 * the first and the last. */
static const struct col_def report_cols[] = {
    {"charge_class", 13, DB_COST_TEXT}, {"currency", 8, DB_COST_TEXT},
    {"cost", 9, DB_COST_NUMBER},        {"credits", 10, DB_COST_NUMBER},
    {"net_cost", 11, DB_COST_NUMBER},   {"usage_gpu_hours", 12, DB_COST_NUMBER},
};

enum gg_code db_costs_report(struct db_conn *db, struct gg_err *err,
                             const struct db_cost_query *q,
                             struct db_cost_table *rows,
                             struct db_cost_table *totals)
{
  const size_t n = sizeof(report_cols) / sizeof(report_cols[0]);
  const char *params[10];
  struct fill fr, ft;
  int d;

  begin(&fr, rows);
  begin(&ft, totals);
  col(&fr, 1, "team", DB_COST_TEXT);
  for (d = 0; d < DB_COST_NDIMS; d++)
    if (q->dims[d])
      col(&fr, 2 + d, db_cost_dim_names[d], DB_COST_TEXT);
  cols(&fr, report_cols, n);
  cols(&ft, report_cols + 1, n - 2);

  base_params(q, params);
  for (d = 0; d < DB_COST_NDIMS; d++)
    params[3 + d] = q->dims[d] ? "true" : "false";
  params[9] = q->invoice_month ? "true" : "false";
  return fetch(db, err, sql_report, 10, params, &fr, &ft);
}

/* The numeric as an exact decimal (lib/jsonx.h), never a double. */
static json_t *real_or_null(const PGresult *r, int row, int col)
{
  return PQgetisnull(r, row, col) ? json_null()
                                  : jsonx_decimal(PQgetvalue(r, row, col));
}

enum gg_code db_costs_budget(struct db_conn *db, struct gg_err *err,
                             const char *team, json_t **out)
{
  const char *params[1] = {team};
  PGresult *res;

  *out = NULL;
  if (!(res = db_err_exec(db, err, sql_budget, 1, params)))
    return err->code;
  if (PQntuples(res) == 0) {
    PQclear(res);
    return err_fail(err, GG_NOT_FOUND, "The team \"%s\" was not found.", team);
  }
  *out = json_pack(
      "{s:o, s:s, s:s, s:o, s:o, s:o, s:b}", "monthly_budget_usd",
      real_or_null(res, 0, 0), "budget_policy", PQgetvalue(res, 0, 1), "month",
      PQgetvalue(res, 0, 2), "month_to_date_net_usd", real_or_null(res, 0, 3),
      "committed_estimate_usd", real_or_null(res, 0, 4), "forecast_usd",
      real_or_null(res, 0, 5), "over_budget", PQgetvalue(res, 0, 6)[0] == 't');
  PQclear(res);
  if (!*out)
    return err_fail(err, GG_INTERNAL, "Out of memory.");
  return GG_OK;
}

/*
 * A report on $1 from, $2 to and $3 team whose rows show the n columns of
 * defs and whose totals show those from defs[first_total] on.
 */
static enum gg_code flat_report(struct db_conn *db, struct gg_err *err,
                                const struct db_cost_query *q, const char *sql,
                                const struct col_def *defs, size_t n,
                                size_t first_total, struct db_cost_table *rows,
                                struct db_cost_table *totals)
{
  const char *params[3];
  struct fill fr, ft;

  begin(&fr, rows);
  begin(&ft, totals);
  cols(&fr, defs, n);
  cols(&ft, defs + first_total, n - first_total);
  base_params(q, params);
  return fetch(db, err, sql, 3, params, &fr, &ft);
}

/* Totals: from currency on. */
static const struct col_def savings_cols[] = {
    {"team", 1, DB_COST_TEXT},
    {"flavor", 2, DB_COST_TEXT},
    {"provisioning_model", 3, DB_COST_TEXT},
    {"currency", 4, DB_COST_TEXT},
    {"usage_gpu_hours", 5, DB_COST_NUMBER},
    {"on_demand_equivalent", 6, DB_COST_NUMBER},
    {"paid", 7, DB_COST_NUMBER},
    {"savings", 8, DB_COST_NUMBER},
};

enum gg_code db_costs_savings(struct db_conn *db, struct gg_err *err,
                              const struct db_cost_query *q,
                              struct db_cost_table *rows,
                              struct db_cost_table *totals)
{
  return flat_report(db, err, q, sql_savings, savings_cols,
                     sizeof(savings_cols) / sizeof(savings_cols[0]), 3, rows,
                     totals);
}

/* Totals: from jobs on. */
static const struct col_def estimates_cols[] = {
    {"team", 1, DB_COST_TEXT},
    {"month", 2, DB_COST_TEXT},
    {"jobs", 3, DB_COST_INTEGER},
    {"estimated_cost_usd", 4, DB_COST_NUMBER},
    {"accrued_cost_usd", 5, DB_COST_NUMBER},
    {"billed_net_usd", 6, DB_COST_NUMBER},
};

enum gg_code db_costs_estimates(struct db_conn *db, struct gg_err *err,
                                const struct db_cost_query *q,
                                struct db_cost_table *rows,
                                struct db_cost_table *totals)
{
  return flat_report(db, err, q, sql_estimates, estimates_cols,
                     sizeof(estimates_cols) / sizeof(estimates_cols[0]), 2,
                     rows, totals);
}
