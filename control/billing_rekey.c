/*
 * billing_rekey.c — the one-time re-key of stored billing rows (see
 * billing_rekey.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/months.h"
#include "billing/billing_row.h"
#include "control/billing_rekey.h"
#include "lib/log.h"

#define REKEY_VERSION "2"  /* 1 left the doubles counted; 2 takes them back */
#define REKEY_FETCH "2000" /* rows read and re-keyed at a time */

/* A growing text array literal "{a,b,...}" of plain (unquoted) items. */
struct lit {
  char *p;
  size_t len, cap;
};

static int lit_add(struct lit *l, const char *s, size_t n)
{
  if (l->len + n + 3 > l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 65536;
    char *g;
    while (cap < l->len + n + 3)
      cap *= 2;
    if (!(g = realloc(l->p, cap)))
      return -1;
    l->p = g;
    l->cap = cap;
  }
  l->p[l->len] = l->len ? ',' : '{';
  l->len++;
  memcpy(l->p + l->len, s, n);
  l->len += n;
  l->p[l->len] = '}';
  l->p[l->len + 1] = '\0';
  return 0;
}

static void lit_reset(struct lit *l)
{
  l->len = 0;
  if (l->p)
    memcpy(l->p, "{}", 3);
}

/* Run sql (no parameters); 0, or -1 with PostgreSQL's message in err. */
static int run(PGconn *pg, const char *sql, char *err, size_t errlen)
{
  PGresult *res = PQexec(pg, sql); /* owned */
  ExecStatusType st = PQresultStatus(res);
  int rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? 0 : -1;

  if (rc)
    snprintf(err, errlen, "billing re-key: %s", PQerrorMessage(pg));
  PQclear(res);
  return rc;
}

/* The new keys of the rows in res (borrowed) whose key changed, as
 * days/old/new literals; *unparsed counts the rows the parser refuses. */
static int new_keys(struct billing_scratch *s, const PGresult *res,
                    struct lit *days, struct lit *olds, struct lit *news,
                    long long *unparsed)
{
  static const char hex[] = "0123456789abcdef";
  int i, n = PQntuples(res);

  for (i = 0; i < n; i++) {
    struct billing_row r;
    char msg[256], h[2 * DB_BILLING_HASH_LEN + 1];
    const char *row = PQgetvalue(res, i, 2);
    size_t k;

    memset(&r, 0, sizeof(r));
    if (billing_parse_row_with(s, row, (size_t)PQgetlength(res, i, 2), &r, msg,
                               sizeof(msg)) != 0) {
      (*unparsed)++;
      continue;
    }
    for (k = 0; k < DB_BILLING_HASH_LEN; k++) {
      h[2 * k] = hex[r.db.hash[k] >> 4];
      h[2 * k + 1] = hex[r.db.hash[k] & 15];
    }
    h[sizeof(h) - 1] = '\0';
    billing_row_clear(&r);
    if (!strcmp(h, PQgetvalue(res, i, 1)))
      continue; /* its key already */
    if (lit_add(days, PQgetvalue(res, i, 0), (size_t)PQgetlength(res, i, 0)) ||
        lit_add(olds, PQgetvalue(res, i, 1), (size_t)PQgetlength(res, i, 1)) ||
        lit_add(news, h, strlen(h)))
      return -1;
  }
  return 0;
}

/* Read every row through a cursor, and stage the changed keys in
 * billing_rekeyed. */
static int stage(PGconn *pg, long long *unparsed, char *err, size_t errlen)
{
  struct billing_scratch *s = billing_scratch_new(); /* owned */
  struct lit days = {NULL, 0, 0}, olds = {NULL, 0, 0}, news = {NULL, 0, 0};
  PGresult *res = NULL; /* owned */
  int rc = -1;

  if (!s) {
    snprintf(err, errlen, "billing re-key: out of memory");
    return -1;
  }
  if (run(pg,
          "DECLARE billing_rekey_rows NO SCROLL CURSOR FOR"
          " SELECT usage_day::text, encode(row_hash, 'hex'), row"
          " FROM billing_rows",
          err, errlen))
    goto out;
  for (;;) {
    const char *params[3];
    PGresult *ins; /* owned */
    bool ok;

    res = PQexec(pg, "FETCH " REKEY_FETCH " FROM billing_rekey_rows");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
      snprintf(err, errlen, "billing re-key: %s", PQerrorMessage(pg));
      goto out;
    }
    if (PQntuples(res) == 0)
      break;
    lit_reset(&days);
    lit_reset(&olds);
    lit_reset(&news);
    if (new_keys(s, res, &days, &olds, &news, unparsed) != 0) {
      snprintf(err, errlen, "billing re-key: out of memory");
      goto out;
    }
    PQclear(res);
    res = NULL;
    if (!days.len)
      continue;
    params[0] = days.p;
    params[1] = olds.p;
    params[2] = news.p;
    ins = PQexecParams(pg,
                       "INSERT INTO billing_rekeyed (usage_day, old, new)"
                       " SELECT d, decode(o, 'hex'), decode(n, 'hex')"
                       " FROM unnest($1::date[], $2::text[], $3::text[])"
                       " AS u(d, o, n)",
                       3, NULL, params, NULL, NULL, 0);
    ok = PQresultStatus(ins) == PGRES_COMMAND_OK;
    PQclear(ins);
    if (!ok) {
      snprintf(err, errlen, "billing re-key: %s", PQerrorMessage(pg));
      goto out;
    }
  }
  rc = run(pg, "CLOSE billing_rekey_rows", err, errlen);
out:
  PQclear(res);
  free(days.p);
  free(olds.p);
  free(news.p);
  billing_scratch_free(s);
  return rc;
}

/*
 * The rows stored twice under the old keys (their meaning's key is another
 * stored row's now) are deleted, and their sums taken back out of the
 * rollups where such a row is reported now (db_month_attribute): in its
 * own open month, the rollup that counted it; for a closed month, whose
 * reports keep their bytes, as a correction in the first open month.
 * Counts the rows in *doubles. 0, or -1 with a message in err.
 */
static const char sql_doubles[] =
    "WITH d AS (DELETE FROM billing_rows b USING billing_rekeyed k"
    "  WHERE b.usage_day = k.usage_day AND b.row_hash = k.old"
    "  AND EXISTS (SELECT 1 FROM billing_rows x"
    "   WHERE x.usage_day = k.usage_day AND x.row_hash = k.new)"
    "  RETURNING b.*)"
    " SELECT team, usage_day::text, invoice_month, service, sku, flavor,"
    "  location, currency,"
    "  coalesce(nullif(row::jsonb->>'cost_type', ''), 'regular'),"
    "  coalesce(row::jsonb->>'billing_account_id', ''), pricing_unit,"
    "  sum(cost)::text, sum(credits)::text, sum(gpu_hours)::text,"
    "  sum(pricing_quantity)::text, count(*)::text"
    " FROM d GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 ORDER BY 1, 2";

static const char sql_take_back[] =
    "INSERT INTO cost_rollups AS r (team, day, invoice_month, service, sku,"
    " flavor, location, currency, cost_type, billing_account, pricing_unit,"
    " month, charge_class, report_day, cost, credits, gpu_hours,"
    " pricing_quantity, rows)"
    " VALUES ($1, $2::date, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,"
    "  $14::date, -$15::numeric, -$16::numeric, -$17::numeric,"
    "  -$18::numeric, -$19::bigint)"
    " ON CONFLICT (team, day, invoice_month, service, sku, flavor, location,"
    "  currency, cost_type, billing_account, pricing_unit, charge_class,"
    "  month)"
    " DO UPDATE SET cost = r.cost + excluded.cost,"
    "  credits = r.credits + excluded.credits,"
    "  gpu_hours = r.gpu_hours + excluded.gpu_hours,"
    "  pricing_quantity = r.pricing_quantity + excluded.pricing_quantity,"
    "  rows = r.rows + excluded.rows";

static int take_back_doubles(PGconn *pg, long long *doubles, char *err,
                             size_t errlen)
{
  char(*closed)[DB_MONTH_LEN] = NULL; /* owned */
  PGresult *res;                      /* owned */
  int i, n, n_closed = 0, rc = -1;

  *doubles = 0;
  /* a month close waits (as for any load), and none is under way */
  res = PQexec(pg, "LOCK TABLE month_closes IN SHARE MODE;"
                   " SELECT month FROM month_closes ORDER BY month");
  if (PQresultStatus(res) != PGRES_TUPLES_OK)
    goto failed;
  n_closed = PQntuples(res);
  closed = calloc((size_t)n_closed + 1, sizeof(*closed));
  if (!closed) {
    snprintf(err, errlen, "billing re-key: out of memory");
    goto out;
  }
  for (i = 0; i < n_closed; i++)
    snprintf(closed[i], DB_MONTH_LEN, "%s", PQgetvalue(res, i, 0));
  PQclear(res);
  res = PQexec(pg, sql_doubles);
  if (PQresultStatus(res) != PGRES_TUPLES_OK)
    goto failed;
  n = PQntuples(res);
  for (i = 0; i < n; i++) {
    const char *p[19];
    char month[DB_MONTH_LEN], rday[11];
    bool correction;
    PGresult *up; /* owned */
    int f;
    for (f = 0; f < 11; f++)
      p[f] = PQgetvalue(res, i, f);
    if (db_month_attribute(p[1], p[2], (const char(*)[DB_MONTH_LEN])closed,
                           (size_t)n_closed, month, &correction) != 0) {
      snprintf(err, errlen, "billing re-key: a row of %s has no month", p[1]);
      goto out;
    }
    db_month_report_day(p[1], month, (const char(*)[DB_MONTH_LEN])closed,
                        (size_t)n_closed, rday);
    p[11] = month;
    p[12] = correction ? "Correction" : "";
    p[13] = rday;
    for (f = 14; f < 19; f++)
      p[f] = PQgetvalue(res, i, f - 3);
    *doubles += strtoll(p[18], NULL, 10);
    up = PQexecParams(pg, sql_take_back, 19, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(up) != PGRES_COMMAND_OK) {
      PQclear(up);
      goto failed;
    }
    PQclear(up);
  }
  rc = 0;
  goto out;
failed:
  snprintf(err, errlen, "billing re-key: %s", PQerrorMessage(pg));
out:
  PQclear(res);
  free(closed);
  return rc;
}

int billing_rekey(PGconn *pg, char *err, size_t errlen)
{
  long long unparsed = 0, staged, rekeyed, doubles;
  PGresult *res = NULL; /* owned */
  char n[3][24];
  const char *params[3] = {n[0], n[1], n[2]};
  int rc = -1;

  if (run(pg, "BEGIN", err, errlen))
    return -1;
  /* under the day lock, taken exclusively: no upload adds a row meanwhile
   * (theirs take it shared), nor does another re-key run */
  if (run(pg, "SELECT pg_advisory_xact_lock(1735418215, 2)", err, errlen))
    goto out;
  res =
      PQexec(pg, "SELECT 1 FROM billing_rekey WHERE version = " REKEY_VERSION);
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    snprintf(err, errlen, "billing re-key: %s", PQerrorMessage(pg));
    goto out;
  }
  if (PQntuples(res) > 0) { /* done before */
    rc = run(pg, "COMMIT", err, errlen);
    goto out;
  }
  PQclear(res);
  res = NULL;
  if (run(pg,
          "CREATE TEMP TABLE billing_rekeyed (usage_day date NOT NULL,"
          " old bytea NOT NULL, new bytea NOT NULL) ON COMMIT DROP",
          err, errlen) ||
      stage(pg, &unparsed, err, errlen))
    goto out;
  /* one row of a meaning takes its key; the others (stored twice under
   * the old keys) keep theirs */
  res = PQexec(pg,
               "WITH k AS (SELECT DISTINCT ON (usage_day, new) usage_day, old,"
               "  new FROM billing_rekeyed ORDER BY usage_day, new, old),"
               " up AS (UPDATE billing_rows b SET row_hash = k.new FROM k"
               "  WHERE b.usage_day = k.usage_day AND b.row_hash = k.old"
               "  AND NOT EXISTS (SELECT 1 FROM billing_rows x"
               "   WHERE x.usage_day = k.usage_day AND x.row_hash = k.new)"
               "  RETURNING 1)"
               " SELECT (SELECT count(*) FROM billing_rekeyed),"
               "  (SELECT count(*) FROM up)");
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    snprintf(err, errlen, "billing re-key: %s", PQerrorMessage(pg));
    goto out;
  }
  staged = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
  rekeyed = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
  PQclear(res);
  res = NULL;
  if (take_back_doubles(pg, &doubles, err, errlen) != 0)
    goto out;
  snprintf(n[0], sizeof(n[0]), "%lld", rekeyed);
  snprintf(n[1], sizeof(n[1]), "%lld", staged - rekeyed);
  snprintf(n[2], sizeof(n[2]), "%lld", unparsed);
  res = PQexecParams(pg,
                     "INSERT INTO billing_rekey (version, rekeyed, left_old,"
                     " unparsed) VALUES (" REKEY_VERSION
                     ", $1::bigint, $2::bigint, $3::bigint)",
                     3, NULL, params, NULL, NULL, 0);
  if (PQresultStatus(res) != PGRES_COMMAND_OK) {
    snprintf(err, errlen, "billing re-key: %s", PQerrorMessage(pg));
    goto out;
  }
  if (run(pg, "COMMIT", err, errlen))
    goto out;
  if (staged > 0 || unparsed > 0)
    log_msg(staged > rekeyed || unparsed ? LOG_WARN : LOG_INFO,
            "billing rows re-keyed by their meaning: %lld; stored twice "
            "before: %lld, of which %lld removed and taken back out of the "
            "reports; unparsable (old key kept): %lld",
            rekeyed, staged - rekeyed, doubles, unparsed);
  rc = 0;
out:
  PQclear(res);
  if (rc != 0)
    PQclear(PQexec(pg, "ROLLBACK"));
  return rc;
}
