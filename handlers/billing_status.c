/*
 * billing_status.c — GET /v1/billing/status (finance, admin): how fresh
 * the billing data is. The last BigQuery pull, its outcome and error,
 * data_through (the end of the latest usage day loaded) and, per day
 * (the latest 400), its rows and export_time (db/billing_sync.h).
 */
#include "db/billing_sync.h"
#include "db/db.h"
#include "handlers/handlers.h"
#include "server/problem.h"

#define STATUS_DAYS 400

enum gg_code billing_status(struct gg_req *req)
{
  struct db_conn *c = req_db(req);
  json_t *out;
  enum gg_code code;

  if (!c)
    return problem_fail(req, GG_UNAVAILABLE, "The database is unavailable.");
  code = db_billing_status(c, STATUS_DAYS, &out);
  if (code != GG_OK)
    return db_fail(&req->err, code);
  req_reply(req, 200, out);
  return GG_OK;
}
