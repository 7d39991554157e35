/*
 * billing.c — bulk loading of billing-export rows.
 *
 * A batch is kept as the text of a COPY (one line per row, fields separated
 * by tabs). Flushing it is one transaction of three statements: make sure
 * the connection's temporary staging table exists (it empties itself at
 * every commit), COPY the batch into it, and one statement that inserts the
 * staged rows into billing_rows, skipping known hashes, and adds the sums
 * of exactly the rows it inserted (RETURNING) to cost_rollups. Loading the
 * same rows again therefore changes neither table.
 *
 * Staged rows are read in hash order and rollups written in key order, so
 * that two concurrent loads of overlapping rows take their locks in the
 * same order. All session state is transaction-scoped (SET LOCAL; the
 * staging table is created if missing and emptied at commit), so this also
 * works through PgBouncer in transaction mode.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/billing.h"
#include "db/db.h"
#include "server/log.h"

#define COPY_PIECE ((size_t)1024 * 1024) /* bytes per PQputCopyData */

struct db_billing_batch {
  char *buf; /* owned: the COPY text */
  size_t len, cap;
  size_t rows;
};

/*
 * The column order here is the field order db_billing_batch_add writes.
 * work_mem is raised for the transaction so that sorting a batch of rows
 * by hash (several MiB with their JSON) stays in memory.
 */
static const char sql_stage[] =
    "SET LOCAL work_mem = '32MB';"
    " CREATE TEMPORARY TABLE IF NOT EXISTS billing_stage ("
    " row_hash bytea, team text, flavor text, service text, sku text,"
    " location text, currency text, usage_start timestamptz, usage_day date,"
    " invoice_month text, cost numeric, credits numeric, gpu_amount numeric,"
    " gpu_divisor int, row jsonb) ON COMMIT DELETE ROWS";

static const char sql_copy[] = "COPY billing_stage FROM STDIN";

static const char sql_merge[] =
    "WITH ins AS ("
    " INSERT INTO billing_rows (row_hash, team, flavor, service, sku,"
    "  location, currency, usage_start, usage_day, invoice_month, cost,"
    "  credits, gpu_hours, row)"
    " SELECT row_hash, team, flavor, service, sku, location, currency,"
    "  usage_start, usage_day, invoice_month, cost, credits,"
    "  CASE gpu_divisor WHEN 1 THEN gpu_amount"
    "   WHEN 3600 THEN trim_scale(gpu_amount / 3600) ELSE 0 END, row"
    " FROM billing_stage ORDER BY row_hash"
    " ON CONFLICT (row_hash) DO NOTHING"
    " RETURNING team, usage_day, invoice_month, service, sku, flavor,"
    "  location, currency, cost, credits, gpu_hours),"
    " sums AS ("
    " SELECT team, usage_day, invoice_month, service, sku, flavor, location,"
    "  currency, sum(cost) AS cost, sum(credits) AS credits,"
    "  sum(gpu_hours) AS gpu_hours, count(*) AS n"
    " FROM ins GROUP BY 1, 2, 3, 4, 5, 6, 7, 8),"
    " up AS ("
    " INSERT INTO cost_rollups AS r (team, day, invoice_month, service, sku,"
    "  flavor, location, currency, cost, credits, gpu_hours, rows)"
    " SELECT * FROM sums ORDER BY 1, 2, 3, 4, 5, 6, 7, 8"
    " ON CONFLICT (team, day, invoice_month, service, sku, flavor, location,"
    "  currency) DO UPDATE SET cost = r.cost + excluded.cost,"
    "  credits = r.credits + excluded.credits,"
    "  gpu_hours = r.gpu_hours + excluded.gpu_hours,"
    "  rows = r.rows + excluded.rows)"
    " SELECT coalesce(sum(n), 0) FROM sums";

struct db_billing_batch *db_billing_batch_new(void)
{
  return calloc(1, sizeof(struct db_billing_batch));
}

void db_billing_batch_free(struct db_billing_batch *b)
{
  if (!b)
    return;
  free(b->buf);
  free(b);
}

size_t db_billing_batch_rows(const struct db_billing_batch *b)
{
  return b->rows;
}

size_t db_billing_batch_bytes(const struct db_billing_batch *b)
{
  return b->len;
}

size_t db_copy_escape(char *out, const char *s, size_t n)
{
  size_t i, o = 0;

  for (i = 0; i < n; i++) {
    char ch = s[i];
    switch (ch) {
    case '\\':
      out[o++] = '\\';
      out[o++] = '\\';
      break;
    case '\t':
      out[o++] = '\\';
      out[o++] = 't';
      break;
    case '\n':
      out[o++] = '\\';
      out[o++] = 'n';
      break;
    case '\r':
      out[o++] = '\\';
      out[o++] = 'r';
      break;
    default:
      out[o++] = ch;
    }
  }
  return o;
}

/* Make room for need more bytes. Returns 0 or -1. */
static int reserve(struct db_billing_batch *b, size_t need)
{
  size_t cap;
  char *grown;

  if (b->cap - b->len >= need)
    return 0;
  cap = b->cap ? b->cap : (size_t)64 * 1024;
  while (cap - b->len < need)
    cap *= 2;
  grown = realloc(b->buf, cap);
  if (!grown)
    return -1;
  b->buf = grown;
  b->cap = cap;
  return 0;
}

/* Append one escaped field and its terminator (tab or newline). The
 * caller reserved room. */
static void field(struct db_billing_batch *b, const char *s, size_t n, char end)
{
  b->len += db_copy_escape(b->buf + b->len, s, n);
  b->buf[b->len++] = end;
}

static void text_field(struct db_billing_batch *b, const char *s)
{
  field(b, s, strlen(s), '\t');
}

int db_billing_batch_add(struct db_billing_batch *b,
                         const struct db_billing_row *r)
{
  static const char hex[] = "0123456789abcdef";
  const char *texts[] = {r->team,        r->flavor,    r->service,
                         r->sku,         r->location,  r->currency,
                         r->usage_start, r->usage_day, r->invoice_month,
                         r->cost,        r->credits,   r->gpu_amount};
  char divisor[16];
  size_t i, need = 0;

  for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
    need += 2 * strlen(texts[i]) + 1;
  need +=
      3 + 2 * DB_BILLING_HASH_LEN + 1 + sizeof(divisor) + 2 * r->row_len + 1;
  if (reserve(b, need) != 0)
    return -1;

  /* bytea in hex form; its backslash doubled for the COPY text format */
  b->buf[b->len++] = '\\';
  b->buf[b->len++] = '\\';
  b->buf[b->len++] = 'x';
  for (i = 0; i < DB_BILLING_HASH_LEN; i++) {
    b->buf[b->len++] = hex[r->hash[i] >> 4];
    b->buf[b->len++] = hex[r->hash[i] & 15];
  }
  b->buf[b->len++] = '\t';
  for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
    text_field(b, texts[i]);
  snprintf(divisor, sizeof(divisor), "%d", r->gpu_divisor);
  text_field(b, divisor);
  field(b, r->row, r->row_len, '\n');
  b->rows++;
  return 0;
}

static void log_failure(const char *what, PGconn *pg, const PGresult *res)
{
  const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY)
                        : PQerrorMessage(pg);
  json_t *f = json_pack("{s:s, s:s, s:s}", "statement", what, "sqlstate",
                        state ? state : "", "error", msg ? msg : "");

  log_json(LOG_WARN, "sql failed", f);
  json_decref(f);
}

/* Run a statement that returns no rows without preparing it (DDL and
 * COPY cannot be prepared). */
static enum gg_code simple(struct db_conn *c, const char *what, const char *sql,
                           ExecStatusType want)
{
  PGresult *res = PQexec(c->pg, sql);
  enum gg_code code = GG_OK;

  if (PQresultStatus(res) != want) {
    code = db_code_of(res, c->pg);
    log_failure(what, c->pg, res);
  }
  PQclear(res);
  return code;
}

/* Send the batch's COPY text and collect COPY's result. */
static enum gg_code copy_rows(struct db_conn *c, struct db_billing_batch *b)
{
  enum gg_code code;
  PGresult *res;
  size_t off = 0;
  int ok = 1;

  code = simple(c, "copy", sql_copy, PGRES_COPY_IN);
  if (code != GG_OK)
    return code;
  while (ok && off < b->len) {
    size_t n = b->len - off > COPY_PIECE ? COPY_PIECE : b->len - off;
    ok = PQputCopyData(c->pg, b->buf + off, (int)n) == 1;
    off += n;
  }
  if (PQputCopyEnd(c->pg, ok ? NULL : "client failed") != 1)
    ok = 0;
  /* drain every result, keeping the verdict of the first failure */
  while ((res = PQgetResult(c->pg)) != NULL) {
    if (PQresultStatus(res) != PGRES_COMMAND_OK && code == GG_OK) {
      code = db_code_of(res, c->pg);
      log_failure("copy", c->pg, res);
    }
    PQclear(res);
  }
  if (!ok && code == GG_OK) {
    code = db_code_of(NULL, c->pg);
    log_failure("copy", c->pg, NULL);
  }
  return code;
}

enum gg_code db_billing_flush(struct db_conn *c, struct db_billing_batch *b,
                              long *inserted)
{
  enum gg_code code;
  PGresult *res = NULL;

  *inserted = 0;
  if (b->rows == 0)
    return GG_OK;
  code = db_begin(c);
  if (code != GG_OK)
    goto out;
  code = simple(c, "stage", sql_stage, PGRES_COMMAND_OK);
  if (code != GG_OK)
    goto out;
  code = copy_rows(c, b);
  if (code != GG_OK)
    goto out;
  res = db_exec(c, sql_merge, 0, NULL, &code);
  if (!res)
    goto out;
  *inserted = strtol(PQgetvalue(res, 0, 0), NULL, 10);
  code = db_commit(c);
out:
  PQclear(res);
  if (code != GG_OK) {
    *inserted = 0;
    db_rollback(c);
  }
  b->len = 0;
  b->rows = 0;
  return code;
}
