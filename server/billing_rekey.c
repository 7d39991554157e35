/*
 * billing_rekey.c — the one-time re-key of stored billing rows (see
 * billing_rekey.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/billing_row.h"
#include "server/billing_rekey.h"
#include "server/log.h"

#define REKEY_VERSION "1"
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

int billing_rekey(PGconn *pg, char *err, size_t errlen)
{
  long long unparsed = 0, staged, rekeyed;
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
            "before (old key kept until their day is re-read): %lld; "
            "unparsable (old key kept): %lld",
            rekeyed, staged - rekeyed, unparsed);
  rc = 0;
out:
  PQclear(res);
  if (rc != 0)
    PQclear(PQexec(pg, "ROLLBACK"));
  return rc;
}
