/*
 * months.c — invoice months: GET /v1/costs/months (each month with its
 * state and totals) and POST /v1/costs/months/{month}/close (finance
 * freezes a month; later rows for it are posted as corrections).
 *
 * Only a month that has ended can be closed: the current invoice month —
 * a US/Pacific month, as Cloud Billing's are (db_month_pacific) — and any
 * later one is still accruing, so closing it would make every row of the
 * rest of the month a correction. That is refused with 422.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "db/month_close.h"
#include "db/months.h"
#include "handlers/handlers.h"
#include "lib/jsonx.h"
#include "server/problem.h"

/* Reply with body (stolen), its decimals written exactly. */
static enum gg_code reply(struct gg_req *req, json_t *body)
{
  size_t len = 0;
  char *text = body ? jsonx_dumps(body, GG_JSON_DUMP, &len) : NULL;

  json_decref(body);
  if (!text)
    return problem_fail(req, GG_INTERNAL, "Out of memory.");
  req_reply_json_text(req, 200, text, len);
  return GG_OK;
}

enum gg_code costs_months_list(struct gg_req *req)
{
  json_t *months = NULL;

  if (db_months_list(req_db(req), &req->err, NULL, &months) != GG_OK)
    return req->err.code;
  return reply(req, json_pack("{s:o}", "months", months));
}

enum gg_code costs_month_close(struct gg_req *req)
{
  const char *month = req_param(req, "month");
  const char *actor = req_actor(req); /* verified email, else subject */
  const char *by = actor ? actor : "(finance token)";
  char now_month[32];
  time_t now = time(NULL);
  json_t *out = NULL;

  if (!db_month_valid(month)) {
    problem_field(req, "month", "must be a month YYYY-MM");
    return problem_fail(req, GG_BAD_REQUEST,
                        "The month in the path is "
                        "invalid; see errors.");
  }
  /* invoice months are US/Pacific: this one is still accruing there */
  db_month_pacific((long long)now, now_month);
  if (strcmp(month, now_month) >= 0) {
    problem_field(req, "month",
                  "must have ended: months before %s can be closed", now_month);
    return problem_fail(req, GG_UNPROCESSABLE,
                        "The month \"%s\" has not ended yet.", month);
  }
  if (db_month_close(req_db(req), &req->err, month, by, &out) != GG_OK)
    return req->err.code;
  return reply(req, out);
}
