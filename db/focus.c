/*
 * focus.c — the cursor behind the FOCUS export (see focus.h): DECLARE in a
 * REPEATABLE READ, READ ONLY transaction on a connection opened like the
 * request's, FETCH a batch at a time.
 */
#include <stdlib.h>
#include <string.h>

#include "db/billing.h"
#include "db/db.h"
#include "db/focus.h"
#include "lib/log.h"

#define FETCH_N 500 /* rows per FETCH */
#define STR2(x) #x
#define STR(x) STR2(x)

/* $1 from, $2 to, $3 team or NULL. The order is total (the primary key
 * after the report day), so a closed range answers the same bytes. */
static const char sql_declare[] =
    "DECLARE focus NO SCROLL CURSOR FOR "
    "SELECT team, flavor, service, sku, location, currency, cost_type, "
    "billing_account, charge_class, month, to_char(day, 'YYYY-MM-DD'), "
    "trim_scale(cost)::text, trim_scale(credits)::text, "
    "trim_scale(gpu_hours)::text, trim_scale(pricing_quantity)::text, "
    "pricing_unit FROM cost_rollups "
    "WHERE report_day BETWEEN $1::date AND $2::date "
    "AND ($3::text IS NULL OR team = $3) "
    "ORDER BY report_day, team COLLATE \"C\", service COLLATE \"C\", "
    "sku COLLATE \"C\", flavor COLLATE \"C\", location COLLATE \"C\", "
    "currency COLLATE \"C\", cost_type COLLATE \"C\", "
    "billing_account COLLATE \"C\", pricing_unit COLLATE \"C\", "
    "charge_class COLLATE \"C\", day, "
    "invoice_month COLLATE \"C\", month COLLATE \"C\"";

static const char sql_team[] = "SELECT 1 FROM teams WHERE name = $1";

struct db_focus {
  struct db_conn *conn; /* owned */
  PGresult *batch;      /* owned: the rows fetched last */
  int next, n;
  bool done;
};

static void log_failure(const char *what, PGconn *pg, const PGresult *res)
{
  json_t *f = json_pack("{s:s, s:s}", "statement", what, "error",
                        res ? PQresultErrorMessage(res) : PQerrorMessage(pg));

  log_json(LOG_WARN, "focus export failed", f);
  json_decref(f);
}

struct db_focus *db_focus_open(struct db_conn *db, struct gg_err *err,
                               const char *from, const char *to,
                               const char *team)
{
  const char *params[3] = {from, to, team};
  struct db_focus *f;
  PGresult *res;

  if (!db) {
    err_fail(err, GG_UNAVAILABLE, "The database is unavailable.");
    return NULL;
  }
  if (team) {
    if (!(res = db_err_exec(db, err, sql_team, 1, &team)))
      return NULL;
    if (PQntuples(res) == 0) {
      PQclear(res);
      err_fail(err, GG_NOT_FOUND, "The team \"%s\" was not found.", team);
      return NULL;
    }
    PQclear(res);
  }
  f = calloc(1, sizeof(*f));
  if (!f) {
    err_fail(err, GG_INTERNAL, "Out of memory.");
    return NULL;
  }
  f->conn = db_billing_connect_like(db);
  if (!f->conn) {
    free(f);
    err_fail(err, GG_UNAVAILABLE,
             "No database connection could be opened for the export.");
    return NULL;
  }
  res = PQexec(f->conn->pg, "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
  if (PQresultStatus(res) == PGRES_COMMAND_OK) {
    PQclear(res);
    res =
        PQexecParams(f->conn->pg, sql_declare, 3, NULL, params, NULL, NULL, 0);
  }
  if (PQresultStatus(res) != PGRES_COMMAND_OK) {
    log_failure("declare", f->conn->pg, res);
    PQclear(res);
    db_focus_close(f);
    err_fail(err, GG_UNAVAILABLE, "The export could not be started.");
    return NULL;
  }
  PQclear(res);
  return f;
}

int db_focus_next(struct db_focus *f, struct db_focus_row *row)
{
  const PGresult *r;
  int i;

  if (f->next >= f->n) {
    if (f->done)
      return 0;
    PQclear(f->batch);
    f->batch = PQexec(f->conn->pg, "FETCH " STR(FETCH_N) " FROM focus");
    f->next = 0;
    f->n = 0;
    if (PQresultStatus(f->batch) != PGRES_TUPLES_OK) {
      log_failure("fetch", f->conn->pg, f->batch);
      return -1;
    }
    f->n = PQntuples(f->batch);
    f->done = f->n < FETCH_N;
    if (f->n == 0)
      return 0;
  }
  r = f->batch;
  i = f->next++;
  row->team = PQgetvalue(r, i, 0);
  row->flavor = PQgetvalue(r, i, 1);
  row->service = PQgetvalue(r, i, 2);
  row->sku = PQgetvalue(r, i, 3);
  row->location = PQgetvalue(r, i, 4);
  row->currency = PQgetvalue(r, i, 5);
  row->cost_type = PQgetvalue(r, i, 6);
  row->billing_account = PQgetvalue(r, i, 7);
  row->charge_class = PQgetvalue(r, i, 8);
  row->month = PQgetvalue(r, i, 9);
  row->day = PQgetvalue(r, i, 10);
  row->cost = PQgetvalue(r, i, 11);
  row->credits = PQgetvalue(r, i, 12);
  row->gpu_hours = PQgetvalue(r, i, 13);
  row->pricing_quantity = PQgetvalue(r, i, 14);
  row->pricing_unit = PQgetvalue(r, i, 15);
  return 1;
}

void db_focus_close(struct db_focus *f)
{
  if (!f)
    return;
  PQclear(f->batch);
  db_billing_disconnect(f->conn); /* ends the transaction */
  free(f);
}
