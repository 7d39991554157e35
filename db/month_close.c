/*
 * month_close.c — the SQL of closed invoice months (see month_close.h).
 *
 * A close and the loads (db/billing.c) meet on month_closes: a load holds
 * it in SHARE mode for its transaction while it decides which rows are
 * corrections; the close's insert needs ROW EXCLUSIVE, so it waits for
 * the loads under way and holds new ones back until it commits.
 */
#include <string.h>

#include "db/db.h"
#include "db/month_close.h"
#include "lib/jsonx.h"

#define TS_FMT "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'"

/* $1 month, $2 closed_by. One row when closed now, none when it was. */
static const char sql_close[] =
    "INSERT INTO month_closes (month, closed_by, data_through) "
    "SELECT $1, $2, (SELECT date_trunc('hour', latest_usage_start) "
    "FROM billing_freshness) "
    "ON CONFLICT (month) DO NOTHING RETURNING month";

/*
 * $1 one month or NULL for all. Per month and currency: columns 0 month,
 * 1 closed, 2 closed_at, 3 closed_by, 4 the month again, 5 currency (NULL:
 * no costs), 6 regular, 7 tax, 8 adjustment, 9 rounding_error, 10 total,
 * 11 corrections.
 */
#define NET(cond)                                                              \
  "trim_scale(round(coalesce(sum(cost + credits) FILTER (WHERE " cond          \
  "), 0), 6))"
static const char sql_list[] =
    "WITH t AS (SELECT month, currency, " NET("cost_type = 'regular'") ", " NET("cost_type = 'tax'") ", " NET("cost_type = 'adjustment'") ", " NET(
        "cost_type = 'rounding_error'") ", " NET("true") ", " NET("charge_"
                                                                  "class = "
                                                                  "'Correction"
                                                                  "'") " "
                                                                       "FROM "
                                                                       "cost_"
                                                                       "rollups"
                                                                       " WHERE "
                                                                       "$1::"
                                                                       "text "
                                                                       "IS "
                                                                       "NULL "
                                                                       "OR "
                                                                       "month "
                                                                       "= $1 "
                                                                       "GROUP "
                                                                       "BY "
                                                                       "month, "
                                                                       "currenc"
                                                                       "y), "
                                                                       "ms AS "
                                                                       "(SELECT"
                                                                       " month "
                                                                       "FROM t "
                                                                       "UNION "
                                                                       "SELECT "
                                                                       "month "
                                                                       "FROM "
                                                                       "month_"
                                                                       "closes "
                                                                       "WHERE "
                                                                       "$1::"
                                                                       "text "
                                                                       "IS "
                                                                       "NULL "
                                                                       "OR "
                                                                       "month "
                                                                       "= $1) "
                                                                       "SELECT "
                                                                       "ms."
                                                                       "month, "
                                                                       "c."
                                                                       "month "
                                                                       "IS NOT "
                                                                       "NULL, "
                                                                       "to_"
                                                                       "char(c."
                                                                       "closed_"
                                                                       "at AT "
                                                                       "TIME "
                                                                       "ZONE "
                                                                       "'UTC',"
                                                                       " " TS_FMT
                                                                       "), "
                                                                       "c."
                                                                       "closed_"
                                                                       "by, "
                                                                       "t.* "
                                                                       "FROM "
                                                                       "ms "
                                                                       "LEFT "
                                                                       "JOIN "
                                                                       "month_"
                                                                       "closes "
                                                                       "c ON "
                                                                       "c."
                                                                       "month "
                                                                       "= "
                                                                       "ms."
                                                                       "month "
                                                                       "LEFT "
                                                                       "JOIN t "
                                                                       "ON "
                                                                       "t."
                                                                       "month "
                                                                       "= "
                                                                       "ms."
                                                                       "month "
                                                                       "ORDER "
                                                                       "BY "
                                                                       "ms."
                                                                       "month, "
                                                                       "t."
                                                                       "currenc"
                                                                       "y "
                                                                       "COLLATE"
                                                                       " \"C\"";

/*
 * $1 from, $2 to. Columns: 0 month, 1 closed, 2 data_through (same on
 * every row). Dates as timestamps without time zone throughout, so that
 * the session's TimeZone plays no part.
 */
static const char sql_fresh[] =
    "WITH e AS (SELECT ($2::date + interval '23 hours') AS last_hour), "
    "d AS (SELECT CASE WHEN l.month IS NOT NULL "
    "THEN l.data_through AT TIME ZONE 'UTC' "
    "ELSE (SELECT date_trunc('hour', latest_usage_start AT TIME ZONE 'UTC') "
    "FROM billing_freshness) END AS t "
    "FROM (SELECT 1) x LEFT JOIN month_closes l "
    "ON l.month = to_char($2::date, 'YYYY-MM')) "
    "SELECT to_char(m, 'YYYY-MM'), c.month IS NOT NULL, "
    "(SELECT to_char(least(d.t, e.last_hour), " TS_FMT ") FROM d, e) "
    "FROM generate_series(date_trunc('month', $1::date::timestamp), "
    "date_trunc('month', $2::date::timestamp), interval '1 month') m "
    "LEFT JOIN month_closes c ON c.month = to_char(m, 'YYYY-MM') "
    "ORDER BY 1";

static json_t *text_or_null(const PGresult *r, int row, int col)
{
  return PQgetisnull(r, row, col) ? json_null()
                                  : json_string(PQgetvalue(r, row, col));
}

/* The months of sql_list's result as JSON; NULL when out of memory. */
static json_t *months_json(const PGresult *res)
{
  static const char *const amounts[] = {
      "regular", "tax", "adjustment", "rounding_error", "total", "corrections"};
  json_t *out = json_array(), *cur = NULL;
  int i, a, rows = PQntuples(res);

  for (i = 0; out && i < rows; i++) {
    const char *month = PQgetvalue(res, i, 0);
    json_t *tot;
    if (!cur ||
        strcmp(json_string_value(json_object_get(cur, "month")), month) != 0) {
      bool closed = PQgetvalue(res, i, 1)[0] == 't';
      cur = json_pack("{s:s, s:s, s:o, s:o, s:[]}", "month", month, "state",
                      closed ? "closed" : "open", "closed_at",
                      text_or_null(res, i, 2), "closed_by",
                      text_or_null(res, i, 3), "totals");
      if (json_array_append_new(out, cur) != 0)
        goto oom;
    }
    if (PQgetisnull(res, i, 5))
      continue; /* closed, without costs */
    tot = json_pack("{s:s}", "currency", PQgetvalue(res, i, 5));
    for (a = 0; tot && a < 6; a++)
      if (json_object_set_new(tot, amounts[a],
                              jsonx_decimal(PQgetvalue(res, i, 6 + a))) != 0)
        goto oom_tot;
    if (json_array_append_new(json_object_get(cur, "totals"), tot) != 0)
      goto oom;
    continue;
  oom_tot:
    json_decref(tot);
    goto oom;
  }
  return out;
oom:
  json_decref(out);
  return NULL;
}

enum gg_code db_months_list(struct db_conn *db, struct gg_err *err,
                            const char *month, json_t **out)
{
  const char *params[1] = {month};
  PGresult *res;

  *out = NULL;
  if (!(res = db_err_exec(db, err, sql_list, 1, params)))
    return err->code;
  *out = months_json(res);
  PQclear(res);
  if (!*out)
    return err_fail(err, GG_INTERNAL, "Out of memory.");
  return GG_OK;
}

enum gg_code db_month_close(struct db_conn *db, struct gg_err *err,
                            const char *month, const char *closed_by,
                            json_t **out)
{
  const char *params[2] = {month, closed_by};
  PGresult *res;
  json_t *list = NULL;
  int rows;

  *out = NULL;
  if (!(res = db_err_exec(db, err, sql_close, 2, params)))
    return err->code;
  rows = PQntuples(res);
  PQclear(res);
  if (rows == 0)
    return err_fail(err, GG_CONFLICT,
                    "The month \"%s\" is closed already; rows that "
                    "arrive for it are posted as corrections to the "
                    "first open month.",
                    month);
  if (db_months_list(db, err, month, &list) != GG_OK)
    return err->code;
  *out = json_incref(json_array_get(list, 0));
  json_decref(list);
  if (!*out)
    return err_fail(err, GG_INTERNAL, "The closed month vanished.");
  return GG_OK;
}

enum gg_code db_costs_freshness(struct db_conn *db, struct gg_err *err,
                                const char *from, const char *to,
                                json_t **data_through, json_t **months)
{
  const char *params[2] = {from, to};
  PGresult *res;
  int i, rows;

  *data_through = NULL;
  *months = NULL;
  if (!(res = db_err_exec(db, err, sql_fresh, 2, params)))
    return err->code;
  rows = PQntuples(res);
  *months = json_array();
  *data_through = rows > 0 ? text_or_null(res, 0, 2) : json_null();
  for (i = 0; *months && i < rows; i++)
    if (json_array_append_new(
            *months, json_pack("{s:s, s:b}", "month", PQgetvalue(res, i, 0),
                               "closed", PQgetvalue(res, i, 1)[0] == 't')) !=
        0) {
      json_decref(*months);
      *months = NULL;
    }
  PQclear(res);
  if (!*months || !*data_through) {
    json_decref(*months);
    json_decref(*data_through);
    *months = *data_through = NULL;
    return err_fail(err, GG_INTERNAL, "Out of memory.");
  }
  return GG_OK;
}
