/*
 * billing_sync.c — the SQL of the BigQuery pull: per-day figures of what
 * is stored, a day replaced in one transaction, the sync's outcome and the
 * freshness report. See billing_sync.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/billing_sync.h"
#include "db/billing_sync_internal.h"
#include "db/db.h"
#include "db/months.h"
#include "lib/jsonx.h"

enum gg_code db_billing_sync_read(struct db_conn *c, const char *sql,
                                  const char *from, size_t size,
                                  db_billing_sync_fill fill, void **out,
                                  size_t *n)
{
  const char *params[1] = {from && *from ? from : NULL};
  enum gg_code code;
  PGresult *res = db_exec(c, sql, 1, params, &code); /* owned */
  char *v;
  int i, rows;

  *out = NULL;
  *n = 0;
  if (!res)
    return code;
  rows = PQntuples(res);
  v = calloc((size_t)rows + 1, size);
  if (!v) {
    PQclear(res);
    return GG_INTERNAL;
  }
  for (i = 0; i < rows; i++)
    fill(v + (size_t)i * size, res, i);
  *out = v;
  *n = (size_t)rows;
  PQclear(res);
  return GG_OK;
}

static void day_figures_fill(void *elem, const PGresult *res, int row)
{
  struct billing_day_figures *f = elem;

  snprintf(f->day, sizeof(f->day), "%s", PQgetvalue(res, row, 0));
  snprintf(f->export_time, sizeof(f->export_time), "%s",
           PQgetvalue(res, row, 1));
  f->rows = strtol(PQgetvalue(res, row, 2), NULL, 10);
}

enum gg_code db_billing_sync_days(struct db_conn *c, const char *from,
                                  struct billing_day_figures **out, size_t *n)
{
  void *v;
  enum gg_code code = db_billing_sync_read(
      c,
      /* a day loaded before reconciliation (no sums recorded) is read
       * again once: its export_time is taken as unknown */
      "SELECT to_char(day, 'YYYY-MM-DD'), "
      "CASE WHEN cost IS NULL THEN '' ELSE export_time END, rows "
      "FROM billing_sync_days WHERE $1::date IS NULL OR day >= $1::date "
      "ORDER BY day",
      from, sizeof(**out), day_figures_fill, &v, n);

  *out = v;
  return code;
}

enum gg_code db_billing_sync_window(struct db_conn *c, long reread,
                                    char day[11])
{
  char n[24];
  const char *params[1] = {n};
  enum gg_code code;
  PGresult *res;

  snprintf(n, sizeof(n), "%ld", reread);
  res = db_exec(c,
                "SELECT coalesce(to_char(max(day) - $1::int, 'YYYY-MM-DD'), "
                "'') FROM billing_sync_days",
                1, params, &code);

  day[0] = '\0';
  if (!res)
    return code;
  snprintf(day, 11, "%s", PQgetvalue(res, 0, 0));
  PQclear(res);
  return GG_OK;
}

/* The closed months, under a SHARE lock on month_closes that a month close
 * waits for until commit (as the upload's flush takes it), ascending, as a
 * text[] literal into lit (each "YYYY-MM" quoted) and into closed[]. */
static enum gg_code closed_months(struct db_conn *c,
                                  char (**closed)[DB_MONTH_LEN], size_t *n,
                                  char **lit)
{
  enum gg_code code;
  PGresult *res;
  size_t i, rows, cap;
  char *p;

  PQclear(db_exec(c, "LOCK TABLE month_closes IN SHARE MODE", 0, NULL, &code));
  if (code != GG_OK)
    return code;
  res =
      db_exec(c, "SELECT month FROM month_closes ORDER BY month COLLATE \"C\"",
              0, NULL, &code);
  if (!res)
    return code;
  rows = (size_t)PQntuples(res);
  *closed = calloc(rows + 1, sizeof(**closed));
  cap = rows * (DB_MONTH_LEN + 3) + 3;
  *lit = malloc(cap);
  if (!*closed || !*lit) {
    PQclear(res);
    return GG_INTERNAL;
  }
  p = *lit;
  *p++ = '{';
  for (i = 0; i < rows; i++) {
    snprintf((*closed)[i], DB_MONTH_LEN, "%s", PQgetvalue(res, (int)i, 0));
    p += snprintf(p, cap - (size_t)(p - *lit), "%s\"%s\"", i ? "," : "",
                  (*closed)[i]);
  }
  snprintf(p, cap - (size_t)(p - *lit), "}");
  *n = rows;
  PQclear(res);
  return GG_OK;
}

/*
 * The rollups of day that are left once those of open months are gone
 * belong to closed months and stay as they are; their sums are taken back
 * where the day's rows are reported now (a correction in the first open
 * month, db_month_attribute), so that the day's new rows, reported there
 * too, leave exactly new − old in it: only those of the accounts being
 * replaced. params: $1 the day, $2 the closed months; then per invoice
 * month of the day's frozen rollups ($3) where it is reported ($4 month,
 * $5 charge class, $6 report day); $7 the accounts (sql_frozen_months:
 * $3).
 */
static const char sql_frozen_months[] =
    "SELECT DISTINCT invoice_month FROM cost_rollups "
    "WHERE day = $1::date AND month = ANY($2::text[]) "
    "AND billing_account = ANY($3::text[])";

static const char sql_take_back[] =
    "INSERT INTO cost_rollups AS r (team, day, invoice_month, service, sku,"
    " flavor, location, currency, cost_type, billing_account, pricing_unit,"
    " month, charge_class, report_day, cost, credits, gpu_hours,"
    " pricing_quantity, rows)"
    " SELECT f.team, f.day, f.invoice_month, f.service, f.sku, f.flavor,"
    "  f.location, f.currency, f.cost_type, f.billing_account, f.pricing_unit,"
    "  a.month, a.class, a.report_day, -sum(f.cost), -sum(f.credits),"
    "  -sum(f.gpu_hours), -sum(f.pricing_quantity), -sum(f.rows)"
    " FROM cost_rollups f JOIN unnest($3::text[], $4::text[], $5::text[],"
    "  $6::date[]) AS a(invoice_month, month, class, report_day)"
    "  ON a.invoice_month = f.invoice_month"
    " WHERE f.day = $1::date AND f.month = ANY($2::text[])"
    "  AND f.billing_account = ANY($7::text[])"
    " GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14"
    " ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13"
    " ON CONFLICT (team, day, invoice_month, service, sku, flavor, location,"
    "  currency, cost_type, billing_account, pricing_unit, charge_class,"
    "  month)"
    " DO UPDATE SET cost = r.cost + excluded.cost,"
    "  credits = r.credits + excluded.credits,"
    "  gpu_hours = r.gpu_hours + excluded.gpu_hours,"
    "  pricing_quantity = r.pricing_quantity + excluded.pricing_quantity,"
    "  rows = r.rows + excluded.rows";

/* Append "s" (quoted; s is a month, a day, a class: no quote in it) to the
 * text[] literal being built in buf. */
static void lit_add(char *buf, size_t cap, const char *s)
{
  size_t n = strlen(buf);

  snprintf(buf + n, cap - n, "%s\"%s\"", n > 1 ? "," : "", s);
}

static enum gg_code take_back_frozen(struct db_conn *c, const char *day,
                                     const char (*closed)[DB_MONTH_LEN],
                                     size_t n_closed, const char *closed_lit,
                                     const char *accounts)
{
  const char *params[7] = {day,  closed_lit, accounts, NULL,
                           NULL, NULL,       accounts};
  char lit[4][2048] = {"{", "{", "{", "{"};
  enum gg_code code;
  PGresult *res = db_exec(c, sql_frozen_months, 3, params, &code);
  int i, rows;

  if (!res)
    return code;
  rows = PQntuples(res);
  for (i = 0; i < rows; i++) {
    const char *inv = PQgetvalue(res, i, 0);
    char month[DB_MONTH_LEN], rday[11];
    bool correction;
    if (strlen(lit[0]) + 64 >= sizeof(lit[0]) ||
        db_month_attribute(day, inv, closed, n_closed, month, &correction) !=
            0) {
      PQclear(res);
      return GG_INTERNAL;
    }
    db_month_report_day(day, month, closed, n_closed, rday);
    lit_add(lit[0], sizeof(lit[0]), inv);
    lit_add(lit[1], sizeof(lit[1]), month);
    lit_add(lit[2], sizeof(lit[2]), correction ? "Correction" : "");
    lit_add(lit[3], sizeof(lit[3]), rday);
  }
  PQclear(res);
  if (rows == 0)
    return GG_OK;
  for (i = 0; i < 4; i++) {
    size_t n = strlen(lit[i]);
    snprintf(lit[i] + n, sizeof(lit[i]) - n, "}");
    params[2 + i] = lit[i];
  }
  PQclear(db_exec(c, sql_take_back, 7, params, &code));
  return code;
}

/* The accounts a replacement of day deletes, as a text[] literal (new):
 * the export's ("a,b") and those the pull stored for the day before. */
static char *day_accounts(struct db_conn *c, const char *day,
                          const char *accounts, enum gg_code *code)
{
  const char *params[2] = {day, accounts};
  PGresult *res = db_exec(
      c,
      "SELECT ARRAY(SELECT DISTINCT a FROM unnest(string_to_array($2, ',') || "
      "coalesce((SELECT accounts FROM billing_sync_days "
      "WHERE day = $1::date), '{}')) AS a ORDER BY 1)::text",
      2, params, code);
  char *lit;

  if (!res)
    return NULL;
  lit = strdup(PQgetvalue(res, 0, 0));
  PQclear(res);
  if (!lit)
    *code = GG_INTERNAL;
  return lit;
}

enum gg_code db_billing_day_begin(struct db_conn *c, const char *day,
                                  const char *accounts)
{
  char(*closed)[DB_MONTH_LEN] = NULL;
  char *lit = NULL, *accts = NULL;
  const char *params[3] = {day, NULL, NULL};
  size_t n = 0;
  enum gg_code code = db_begin(c);

  if (code != GG_OK)
    return code;
  /* the day, exclusive of uploads (their batches take it shared) until
   * commit: nothing is added to the day between its delete and its
   * reconciliation */
  PQclear(db_exec(c, "SELECT pg_advisory_xact_lock(1735418215, 2)", 0, NULL,
                  &code));
  if (code == GG_OK)
    code = closed_months(c, &closed, &n, &lit);
  if (code == GG_OK)
    accts = day_accounts(c, day, accounts, &code);
  params[1] = lit;
  params[2] = accts;
  if (code == GG_OK)
    PQclear(db_exec(c,
                    "DELETE FROM cost_rollups WHERE day = $1::date "
                    "AND month <> ALL($2::text[]) "
                    "AND billing_account = ANY($3::text[])",
                    3, params, &code));
  if (code == GG_OK)
    code = take_back_frozen(c, day, (const char(*)[DB_MONTH_LEN])closed, n, lit,
                            accts);
  params[1] = accts;
  if (code == GG_OK)
    PQclear(db_exec(c,
                    "DELETE FROM billing_rows WHERE usage_day = $1::date "
                    "AND coalesce(row::jsonb->>'billing_account_id', '') "
                    "= ANY($2::text[])",
                    2, params, &code));
  free(closed);
  free(lit);
  free(accts);
  if (code != GG_OK)
    db_rollback(c);
  return code;
}

/* What the replacement left stored of f's day for its accounts (the
 * rollups, which reports read), and whether it equals f's figures. */
static enum gg_code stored_figures(struct db_conn *c,
                                   const struct billing_day_figures *f,
                                   bool *equal, struct billing_day_stored *st)
{
  char rows[24];
  const char *params[5] = {f->day, f->accounts, rows, f->cost, f->credits};
  enum gg_code code;
  PGresult *res;

  snprintf(rows, sizeof(rows), "%ld", f->rows);
  res = db_exec(
      c,
      "SELECT count_rows, trim_scale(cost)::text, trim_scale(credits)::text,"
      " count_rows = $3::bigint AND cost = $4::numeric"
      " AND credits = $5::numeric FROM ("
      " SELECT coalesce(sum(rows), 0) AS count_rows,"
      "  coalesce(sum(cost), 0) AS cost, coalesce(sum(credits), 0) AS credits"
      " FROM cost_rollups WHERE day = $1::date"
      "  AND billing_account = ANY(string_to_array($2, ','))) s",
      5, params, &code);
  if (!res)
    return code;
  st->rows = strtol(PQgetvalue(res, 0, 0), NULL, 10);
  snprintf(st->cost, sizeof(st->cost), "%s", PQgetvalue(res, 0, 1));
  snprintf(st->credits, sizeof(st->credits), "%s", PQgetvalue(res, 0, 2));
  *equal = *PQgetvalue(res, 0, 3) == 't';
  PQclear(res);
  return GG_OK;
}

/* Record (outside the rolled-back replacement) that f's day did not
 * reconcile, and with what. */
static enum gg_code record_unreconciled(struct db_conn *c,
                                        const struct billing_day_figures *f,
                                        const struct billing_day_stored *st)
{
  char rows[24], srows[24];
  const char *params[8] = {f->day,     f->export_time, rows,     f->cost,
                           f->credits, srows,          st->cost, st->credits};
  enum gg_code code;

  snprintf(rows, sizeof(rows), "%ld", f->rows);
  snprintf(srows, sizeof(srows), "%ld", st->rows);
  PQclear(db_exec(
      c,
      "INSERT INTO billing_unreconciled (day, export_time, source_rows,"
      " source_cost, source_credits, stored_rows, stored_cost, stored_credits)"
      " VALUES ($1::date, $2, $3::bigint, $4::numeric, $5::numeric,"
      " $6::bigint, $7::numeric, $8::numeric) ON CONFLICT (day) DO UPDATE SET"
      " export_time = excluded.export_time,"
      " source_rows = excluded.source_rows,"
      " source_cost = excluded.source_cost,"
      " source_credits = excluded.source_credits,"
      " stored_rows = excluded.stored_rows,"
      " stored_cost = excluded.stored_cost,"
      " stored_credits = excluded.stored_credits, seen_at = now()",
      8, params, &code));
  return code;
}

enum gg_code db_billing_day_commit(struct db_conn *c,
                                   const struct billing_day_figures *f,
                                   bool *reconciled,
                                   struct billing_day_stored *stored)
{
  char rows[24];
  const char *params[6] = {f->day,  f->export_time, rows,
                           f->cost, f->credits,     f->accounts};
  enum gg_code code;
  bool equal = false;

  *reconciled = false;
  memset(stored, 0, sizeof(*stored));
  snprintf(rows, sizeof(rows), "%ld", f->rows);
  /* a closed month's day read again unchanged: its corrections cancel out */
  PQclear(db_exec(c,
                  "DELETE FROM cost_rollups WHERE day = $1::date "
                  "AND charge_class = 'Correction' AND cost = 0 "
                  "AND credits = 0 AND gpu_hours = 0 AND rows = 0 "
                  "AND pricing_quantity = 0 "
                  "AND month NOT IN (SELECT month FROM month_closes)",
                  1, params, &code));
  /* committed only when it reconciles with the export, to the last digit
   * (a day gone from the export has no figures to hold it to: it is never
   * replaced, billing_sync_run refuses) */
  if (code == GG_OK)
    code = stored_figures(c, f, &equal, stored);
  if (code == GG_OK && !equal) {
    db_rollback(c);
    return record_unreconciled(c, f, stored);
  }
  if (code == GG_OK)
    PQclear(db_exec(c, "DELETE FROM billing_unreconciled WHERE day = $1::date",
                    1, params, &code));
  if (code == GG_OK)
    PQclear(db_exec(
        c,
        "INSERT INTO billing_sync_days (day, export_time, rows, cost, credits,"
        " accounts) VALUES ($1::date, $2, $3::bigint, $4::numeric,"
        " $5::numeric, string_to_array($6, ',')) ON CONFLICT (day) DO "
        "UPDATE SET export_time = excluded.export_time, rows = excluded.rows,"
        " cost = excluded.cost, credits = excluded.credits,"
        " accounts = excluded.accounts, loaded_at = now()",
        6, params, &code));
  if (code == GG_OK)
    code = db_commit(c);
  if (code != GG_OK)
    db_rollback(c);
  else
    *reconciled = true;
  return code;
}

enum gg_code db_billing_pull_lock(struct db_conn *c)
{
  enum gg_code code;

  PQclear(db_exec(c, "SELECT pg_advisory_lock(1735418215, 1)", 0, NULL, &code));
  return code;
}

void db_billing_pull_unlock(struct db_conn *c)
{
  enum gg_code code;

  PQclear(
      db_exec(c, "SELECT pg_advisory_unlock(1735418215, 1)", 0, NULL, &code));
}

void db_billing_day_abort(struct db_conn *c)
{
  db_rollback(c);
}

enum gg_code db_billing_sync_record(struct db_conn *c, bool ok,
                                    const char *error, long days, long rows,
                                    long long bytes)
{
  char d[24], r[24], b[24];
  const char *params[5] = {ok ? "ok" : "failed", error, d, r, b};
  enum gg_code code;

  snprintf(d, sizeof(d), "%ld", days);
  snprintf(r, sizeof(r), "%ld", rows);
  snprintf(b, sizeof(b), "%lld", bytes);
  PQclear(db_exec(
      c,
      "UPDATE billing_sync_state SET last_sync_at = now(), last_outcome = $1, "
      "last_error = $2, days_read = $3::int, rows_read = $4::bigint, "
      "bytes_processed = $5::bigint, "
      "last_success_at = CASE WHEN $1 = 'ok' THEN now() "
      "ELSE last_success_at END WHERE id = 1",
      5, params, &code));
  return code;
}

static json_t *text_or_null(const PGresult *res, int row, int col)
{
  return PQgetisnull(res, row, col) ? json_null()
                                    : json_string(PQgetvalue(res, row, col));
}

/* {"rows", "cost", "credits"} of columns col.. of res (rows, then the
 * exact sums as text), a new reference. */
static json_t *figures_json(const PGresult *res, int row, int col)
{
  return json_pack("{s:I, s:s, s:s}", "rows",
                   (json_int_t)strtoll(PQgetvalue(res, row, col), NULL, 10),
                   "cost", PQgetvalue(res, row, col + 1), "credits",
                   PQgetvalue(res, row, col + 2));
}

/* The per-day entries of the status, newest first, a new reference. */
static json_t *status_days(const PGresult *days)
{
  json_t *arr = json_array();
  int i;

  for (i = 0; arr && i < PQntuples(days); i++) {
    bool reconciled = PQgetisnull(days, i, 4);
    json_t *d =
        json_pack("{s:s, s:I, s:o, s:o, s:b}", "day", PQgetvalue(days, i, 0),
                  "rows", (json_int_t)strtoll(PQgetvalue(days, i, 1), NULL, 10),
                  "export_time", text_or_null(days, i, 2), "loaded_at",
                  text_or_null(days, i, 3), "reconciled", reconciled);
    if (d && !reconciled) {
      json_object_set_new(d, "source", figures_json(days, i, 4));
      json_object_set_new(d, "stored", figures_json(days, i, 7));
    }
    json_array_append_new(arr, d);
  }
  return arr;
}

enum gg_code db_billing_status(struct db_conn *c, int limit, json_t **out)
{
  char lim[16];
  const char *params[1] = {lim};
  enum gg_code code;
  PGresult *st, *days;
  json_t *o, *arr;

  *out = NULL;
  snprintf(lim, sizeof(lim), "%d", limit);
  /* data_through: the last usage hour actually loaded by the pull (the
   * hour of its latest row, as cost reports give it), not the end of its
   * latest day */
  st = db_exec(c,
               "SELECT to_char(s.last_sync_at AT TIME ZONE 'UTC', "
               "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), s.last_outcome, "
               "to_char(s.last_success_at AT TIME ZONE 'UTC', "
               "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), s.last_error, "
               "(SELECT to_char(date_trunc('hour', max(usage_start) AT TIME "
               "ZONE 'UTC'), 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM "
               "billing_rows WHERE usage_day = (SELECT max(day) FROM "
               "billing_sync_days)), s.days_read, s.rows_read, "
               "(SELECT coalesce(sum(rows), 0) FROM billing_sync_days), "
               "s.bytes_processed, (SELECT count(*) FROM billing_unreconciled) "
               "FROM billing_sync_state s WHERE id = 1",
               0, NULL, &code);
  if (!st)
    return code;
  days = db_exec(
      c,
      "SELECT to_char(d.day, 'YYYY-MM-DD'), coalesce(s.rows, 0),"
      " coalesce(s.export_time, u.export_time),"
      " to_char(s.loaded_at AT TIME ZONE 'UTC',"
      " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
      " u.source_rows, trim_scale(u.source_cost)::text,"
      " trim_scale(u.source_credits)::text, u.stored_rows,"
      " trim_scale(u.stored_cost)::text, trim_scale(u.stored_credits)::text"
      " FROM (SELECT day FROM billing_sync_days"
      "  UNION SELECT day FROM billing_unreconciled) d"
      " LEFT JOIN billing_sync_days s ON s.day = d.day"
      " LEFT JOIN billing_unreconciled u ON u.day = d.day"
      " ORDER BY d.day DESC LIMIT $1::int",
      1, params, &code);
  if (!days || PQntuples(st) != 1) {
    PQclear(st);
    PQclear(days);
    return days ? GG_INTERNAL : code;
  }
  arr = status_days(days);
  o = json_object();
  if (o && arr) {
    json_object_set_new(o, "last_sync_at", text_or_null(st, 0, 0));
    json_object_set_new(o, "last_outcome", json_string(PQgetvalue(st, 0, 1)));
    json_object_set_new(o, "last_success_at", text_or_null(st, 0, 2));
    json_object_set_new(o, "last_error", json_string(PQgetvalue(st, 0, 3)));
    json_object_set_new(o, "data_through", text_or_null(st, 0, 4));
    json_object_set_new(
        o, "days_read",
        json_integer((json_int_t)strtoll(PQgetvalue(st, 0, 5), NULL, 10)));
    json_object_set_new(
        o, "rows_read",
        json_integer((json_int_t)strtoll(PQgetvalue(st, 0, 6), NULL, 10)));
    json_object_set_new(
        o, "rows",
        json_integer((json_int_t)strtoll(PQgetvalue(st, 0, 7), NULL, 10)));
    json_object_set_new(
        o, "bytes_processed",
        json_integer((json_int_t)strtoll(PQgetvalue(st, 0, 8), NULL, 10)));
    json_object_set_new(
        o, "days_unreconciled",
        json_integer((json_int_t)strtoll(PQgetvalue(st, 0, 9), NULL, 10)));
    json_object_set_new(o, "days", arr);
    *out = o;
  } else {
    json_decref(o);
    json_decref(arr);
  }
  PQclear(st);
  PQclear(days);
  return *out ? GG_OK : GG_INTERNAL;
}

enum gg_code db_billing_last_success(struct db_conn *c, double *at, long *rows,
                                     long *unreconciled, long long *bytes)
{
  enum gg_code code;
  PGresult *res = db_exec(
      c,
      "SELECT coalesce(extract(epoch FROM last_success_at), 0)::float8, "
      "(SELECT coalesce(sum(rows), 0) FROM billing_sync_days), "
      "(SELECT count(*) FROM billing_unreconciled), bytes_processed "
      "FROM billing_sync_state WHERE id = 1",
      0, NULL, &code);

  *at = 0;
  *rows = -1;
  *unreconciled = -1;
  *bytes = -1;
  if (!res)
    return code;
  if (PQntuples(res) == 1) {
    *at = strtod(PQgetvalue(res, 0, 0), NULL);
    *rows = strtol(PQgetvalue(res, 0, 1), NULL, 10);
    *unreconciled = strtol(PQgetvalue(res, 0, 2), NULL, 10);
    *bytes = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
  }
  PQclear(res);
  return GG_OK;
}
