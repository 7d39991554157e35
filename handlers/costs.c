/*
 * costs.c — the cost reports: /v1/costs (per team, optionally grouped by
 * day, month, service, sku, flavor and location), /v1/teams/{team}/costs
 * (one team, with its budget status), /v1/costs/savings (spot and Flex
 * Start against on-demand) and /v1/costs/estimates (job estimates against
 * the bill).
 *
 * Every report answers JSON or, for `Accept: text/csv` or `?format=csv`,
 * CSV with the columns of the JSON rows. The numbers come from the
 * database as exact decimal text: CSV repeats that text, and JSON writes
 * it as a bare number through lib/jsonx.h, never through a double (a
 * sum past 1.8e308 or with more than 15 digits stays exact). Text cells of
 * the CSV are neutralised against formula injection (OWASP).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "db/costs.h"
#include "db/month_close.h"
#include "handlers/costs.h"
#include "handlers/csv.h"
#include "handlers/handlers.h"
#include "handlers/validate.h"
#include "lib/jsonx.h"
#include "server/problem.h"

/* Longest report: three years and a leap day, from first to last day. */
#define MAX_SPAN_DAYS 1096

#define CSV_TYPE "text/csv; charset=utf-8"

/* ---- pure helpers ------------------------------------------------------ */

bool costs_group_by(const char *s, bool dims[DB_COST_NDIMS])
{
  int d;

  for (d = 0; d < DB_COST_NDIMS; d++)
    dims[d] = false;
  if (!s || !*s)
    return true;
  for (;;) {
    size_t n = strcspn(s, ",");
    bool known = false;
    for (d = 0; d < DB_COST_NDIMS; d++)
      if (strlen(db_cost_dim_names[d]) == n &&
          !strncmp(db_cost_dim_names[d], s, n)) {
        dims[d] = true;
        known = true;
      }
    if (!known)
      return false;
    if (!s[n])
      return true;
    s += n + 1;
  }
}

static bool digits(const char *s, int n, int *out)
{
  int i;

  *out = 0;
  for (i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    *out = *out * 10 + (s[i] - '0');
  }
  return true;
}

bool costs_date(const char *s, long *days)
{
  static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int y, m, d, last;
  long era, yoe, doy, doe, yy;

  if (!s || strlen(s) != 10 || s[4] != '-' || s[7] != '-' ||
      !digits(s, 4, &y) || !digits(s + 5, 2, &m) || !digits(s + 8, 2, &d))
    return false;
  if (y < 1 || m < 1 || m > 12)
    return false;
  last = mdays[m - 1];
  if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
    last = 29;
  if (d < 1 || d > last)
    return false;
  /* days from civil (H. Hinnant): March-based years, 400-year eras */
  yy = m <= 2 ? y - 1 : y;
  era = yy / 400;
  yoe = yy - era * 400;
  doy = (153L * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  *days = era * 146097 + doe - 719468;
  return true;
}

/* Skip optional white space (SP / HTAB). */
static const char *ows(const char *s, const char *end)
{
  while (s < end && (*s == ' ' || *s == '\t'))
    s++;
  return s;
}

/* A qvalue ("0", "0.5", "1.000", lenient about a missing leading digit)
 * in thousandths, or -1 when malformed. */
static int qvalue(const char *s, const char *end)
{
  int q = 0, scale = 1000, ndec = 0;

  if (s < end && (*s == '0' || *s == '1'))
    q = (*s++ - '0') * 1000;
  else if (s == end || *s != '.')
    return -1;
  if (s < end && *s == '.') {
    for (s++; s < end && *s >= '0' && *s <= '9' && ndec < 3; s++, ndec++) {
      scale /= 10;
      q += (*s - '0') * scale;
    }
  }
  s = ows(s, end);
  return s == end && q <= 1000 ? q : -1;
}

/*
 * The q (thousandths) that accept gives type/sub: that of the most
 * specific matching range (exact, then type/ *, then * / *), or 0 when
 * none matches.
 */
static int accept_q(const char *accept, const char *type, const char *sub)
{
  int best_spec = 0, best_q = 0;
  const char *p = accept;

  while (*p) {
    const char *end = p + strcspn(p, ","), *semi, *slash, *r, *rend;
    size_t tl, sl;
    int spec = 0, q = 1000;

    r = ows(p, end);
    semi = memchr(r, ';', (size_t)(end - r));
    rend = semi ? semi : end;
    while (rend > r && (rend[-1] == ' ' || rend[-1] == '\t'))
      rend--;
    slash = memchr(r, '/', (size_t)(rend - r));
    tl = slash ? (size_t)(slash - r) : (size_t)(rend - r);
    sl = slash ? (size_t)(rend - slash - 1) : 0;
    if (tl == 1 && r[0] == '*' && (!slash || (sl == 1 && slash[1] == '*')))
      spec = 1;
    else if (slash && tl == strlen(type) && !strncasecmp(r, type, tl)) {
      if (sl == 1 && slash[1] == '*')
        spec = 2;
      else if (sl == strlen(sub) && !strncasecmp(slash + 1, sub, sl))
        spec = 3;
    }
    while (semi && spec) {
      const char *pe, *next = memchr(semi + 1, ';', (size_t)(end - semi - 1));
      const char *ps = ows(semi + 1, end);
      pe = next ? next : end;
      if (pe - ps >= 2 && (ps[0] == 'q' || ps[0] == 'Q')) {
        const char *eq = ows(ps + 1, pe);
        if (eq < pe && *eq == '=') {
          q = qvalue(ows(eq + 1, pe), pe);
          if (q < 0)
            spec = 0; /* malformed: ignore the range */
        }
      }
      semi = next;
    }
    if (spec > best_spec || (spec && spec == best_spec && q > best_q)) {
      best_spec = spec;
      best_q = q;
    }
    p = *end ? end + 1 : end;
  }
  return best_q;
}

enum costs_format costs_accept(const char *accept)
{
  int qj, qc;

  if (!accept || !*ows(accept, accept + strlen(accept)))
    return COSTS_JSON;
  qj = accept_q(accept, "application", "json");
  qc = accept_q(accept, "text", "csv");
  if (qj <= 0 && qc <= 0)
    return COSTS_NONE;
  return qc > qj ? COSTS_CSV : COSTS_JSON;
}

char *costs_csv(const struct db_cost_table *t, size_t *len)
{
  struct csv_buf b = {NULL, 0, 0, false};
  json_t *row;
  size_t i;
  int c;

  for (c = 0; c < t->ncols; c++) {
    if (c)
      csv_put(&b, ",", 1);
    csv_field(&b, t->cols[c], true);
  }
  csv_put(&b, "\r\n", 2);
  json_array_foreach (t->rows, i, row) {
    for (c = 0; c < t->ncols; c++) {
      const char *s = json_string_value(json_array_get(row, (size_t)c));
      if (c)
        csv_put(&b, ",", 1);
      csv_field(&b, s ? s : "", t->kind[c] == DB_COST_TEXT);
    }
    csv_put(&b, "\r\n", 2);
  }
  if (b.failed) {
    free(b.data);
    return NULL;
  }
  *len = b.len;
  return b.data;
}

json_t *costs_json_rows(const struct db_cost_table *t)
{
  json_t *out = json_array(), *row;
  size_t i;
  int c;

  if (!out)
    return NULL;
  json_array_foreach (t->rows, i, row) {
    json_t *o = json_object();
    for (c = 0; o && c < t->ncols; c++) {
      json_t *cell = json_array_get(row, (size_t)c), *v;
      const char *s = json_string_value(cell);
      if (!s)
        v = json_null();
      else if (t->kind[c] == DB_COST_NUMBER)
        v = jsonx_decimal(s);
      else if (t->kind[c] == DB_COST_INTEGER)
        v = json_integer(strtoll(s, NULL, 10));
      else
        v = json_incref(cell);
      if (json_object_set_new(o, t->cols[c], v) != 0) {
        json_decref(o);
        o = NULL;
      }
    }
    if (json_array_append_new(out, o) != 0) {
      json_decref(out);
      return NULL;
    }
  }
  return out;
}

/* ---- handlers ---------------------------------------------------------- */

static void check_date(struct gg_req *req, const char *name, const char *s,
                       long *days, bool *ok)
{
  *ok = false;
  if (!s)
    problem_field(req, name, "is required: a date YYYY-MM-DD");
  else if (!costs_date(s, days))
    problem_field(req, name, "must be a date YYYY-MM-DD");
  else
    *ok = true;
}

void costs_range(struct gg_req *req, const char **from, const char **to)
{
  long f = 0, t = 0;
  bool f_ok, t_ok;

  *from = req_query(req, "from");
  *to = req_query(req, "to");
  check_date(req, "from", *from, &f, &f_ok);
  check_date(req, "to", *to, &t, &t_ok);
  if (f_ok && t_ok && t < f)
    problem_field(req, "to", "must not be before from (\"%s\")", *from);
  else if (f_ok && t_ok && t - f > MAX_SPAN_DAYS)
    problem_field(req, "to", "must be at most %d days after from (\"%s\")",
                  MAX_SPAN_DAYS, *from);
}

/*
 * Read from, to, the format and, for the main reports (grouped), group_by
 * and month_basis. Records every bad parameter and fails the request:
 * 400, or 406 when the client accepts neither JSON nor CSV. Returns
 * whether the request may go on.
 */
static bool read_query(struct gg_req *req, bool grouped,
                       struct db_cost_query *q, enum costs_format *fmt)
{
  const char *format = req_query(req, "format");
  const char *basis = req_query(req, "month_basis");

  memset(q, 0, sizeof(*q));
  costs_range(req, &q->from, &q->to);
  if (grouped && !costs_group_by(req_query(req, "group_by"), q->dims))
    problem_field(req, "group_by",
                  "must be a comma-separated list of day, month, service, "
                  "sku, flavor and location");
  if (grouped && basis && !strcmp(basis, "invoice"))
    q->invoice_month = true;
  else if (grouped && basis && strcmp(basis, "usage") != 0)
    problem_field(req, "month_basis", "must be usage or invoice");
  if (!format)
    *fmt = costs_accept(req_header(req, "Accept"));
  else if (!strcmp(format, "csv"))
    *fmt = COSTS_CSV;
  else if (!strcmp(format, "json"))
    *fmt = COSTS_JSON;
  else
    problem_field(req, "format", "must be json or csv");
  if (problem_nfields(req)) {
    problem_fail(req, GG_BAD_REQUEST,
                 "The report's parameters are invalid; see errors.");
    return false;
  }
  if (*fmt == COSTS_NONE) {
    problem_fail(req, GG_NOT_ACCEPTABLE,
                 "Reports are available as application/json and text/csv; "
                 "the Accept header allows neither.");
    return false;
  }
  return true;
}

/* Reply with t as CSV. */
static enum gg_code reply_csv(struct gg_req *req, const struct db_cost_table *t)
{
  size_t len = 0;
  char *text = costs_csv(t, &len);
  enum gg_code code;

  if (!text)
    return problem_fail(req, GG_INTERNAL, "Out of memory.");
  code = req_reply_text(req, 200, CSV_TYPE, text, len);
  free(text);
  if (code != GG_OK)
    return problem_fail(req, code, "Out of memory.");
  return GG_OK;
}

/*
 * Reply with {"from", "to", [extra (stolen) members,] "rows", "totals"
 * [, "budget" (borrowed)]}; totals is an array, or with single_total the
 * one object of its table. Written by jsonx_dumps(): numbers exact.
 */
static enum gg_code reply_json(struct gg_req *req,
                               const struct db_cost_query *q, json_t *extra,
                               const struct db_cost_table *rows,
                               const struct db_cost_table *totals,
                               bool single_total, json_t *budget)
{
  json_t *out = json_pack("{s:s, s:s}", "from", q->from, "to", q->to);
  json_t *r = costs_json_rows(rows), *t = costs_json_rows(totals);
  json_t *through = NULL, *months = NULL;
  enum gg_code code;
  char *text;
  size_t len = 0;

  if (db_costs_freshness(req_db(req), &req->err, q->from, q->to, &through,
                         &months) != GG_OK) {
    json_decref(out);
    json_decref(r);
    json_decref(t);
    json_decref(extra);
    return req->err.code;
  }
  if (out) {
    json_object_set_new(out, "data_through", through);
    json_object_set_new(out, "months", months);
  } else {
    json_decref(through);
    json_decref(months);
  }
  if (out && extra)
    json_object_update(out, extra);
  json_decref(extra);
  if (!out || !r || !t) {
    json_decref(out);
    json_decref(r);
    json_decref(t);
    return problem_fail(req, GG_INTERNAL, "Out of memory.");
  }
  json_object_set_new(out, "rows", r);
  if (single_total) {
    json_object_set(out, "totals", json_array_get(t, 0));
    json_decref(t);
  } else {
    json_object_set_new(out, "totals", t);
  }
  if (budget)
    json_object_set(out, "budget", budget);
  text = jsonx_dumps(out, GG_JSON_DUMP, &len);
  json_decref(out);
  if (!text)
    return problem_fail(req, GG_INTERNAL, "Out of memory.");
  code = req_reply_text(req, 200, "application/json", text, len);
  free(text);
  if (code != GG_OK)
    return problem_fail(req, code, "Out of memory.");
  return GG_OK;
}

/* /v1/costs and /v1/teams/{team}/costs; team NULL for every team. */
static enum gg_code report(struct gg_req *req, const char *team)
{
  struct db_cost_table rows, totals;
  struct db_cost_query q;
  enum costs_format fmt = COSTS_JSON;
  json_t *budget = NULL, *extra = NULL, *dims;
  int d;

  memset(&rows, 0, sizeof(rows));
  memset(&totals, 0, sizeof(totals));
  req_add_header(req, "Vary", "Accept");
  if (!read_query(req, true, &q, &fmt))
    goto out;
  q.team = team;
  if (team && db_costs_budget(req_db(req), &req->err, team, &budget) != GG_OK)
    goto out;
  if (db_costs_report(req_db(req), &req->err, &q, &rows, &totals) != GG_OK)
    goto out;
  if (fmt == COSTS_CSV) {
    reply_csv(req, &rows);
    goto out;
  }
  dims = json_array();
  for (d = 0; d < DB_COST_NDIMS; d++)
    if (q.dims[d])
      json_array_append_new(dims, json_string(db_cost_dim_names[d]));
  extra = json_pack("{s:o}", "group_by", dims);
  reply_json(req, &q, extra, &rows, &totals, false, budget);
out:
  json_decref(budget);
  db_cost_table_free(&rows);
  db_cost_table_free(&totals);
  return req->err.code;
}

enum gg_code costs_report(struct gg_req *req)
{
  return report(req, NULL);
}

enum gg_code team_costs_report(struct gg_req *req)
{
  if (!v_path_name(req, "team"))
    return problem_fail(req, GG_NOT_FOUND, "The path names no valid team.");
  return report(req, req_param(req, "team"));
}

/* /v1/costs/savings and /v1/costs/estimates: from, to, no grouping. */
static enum gg_code flat_report(
    struct gg_req *req,
    enum gg_code (*query)(struct db_conn *, struct gg_err *,
                          const struct db_cost_query *, struct db_cost_table *,
                          struct db_cost_table *),
    bool single_total)
{
  struct db_cost_table rows, totals;
  struct db_cost_query q;
  enum costs_format fmt = COSTS_JSON;

  memset(&rows, 0, sizeof(rows));
  memset(&totals, 0, sizeof(totals));
  req_add_header(req, "Vary", "Accept");
  if (!read_query(req, false, &q, &fmt) ||
      query(req_db(req), &req->err, &q, &rows, &totals) != GG_OK)
    goto out;
  if (fmt == COSTS_CSV)
    reply_csv(req, &rows);
  else
    reply_json(req, &q, NULL, &rows, &totals, single_total, NULL);
out:
  db_cost_table_free(&rows);
  db_cost_table_free(&totals);
  return req->err.code;
}

enum gg_code costs_savings(struct gg_req *req)
{
  return flat_report(req, db_costs_savings, false);
}

enum gg_code costs_estimates(struct gg_req *req)
{
  return flat_report(req, db_costs_estimates, true);
}
