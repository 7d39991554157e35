/*
 * billing_flush.c — storing a batch of billing rows (db/billing.h; how, in
 * db/billing.c's opening comment): the statement that finds the new rows
 * and adds their sums to cost_rollups (where each key is reported decided
 * from the closed months read under a SHARE lock on month_closes), the
 * new rows' order (billing_rows' primary key's) for their binary COPY
 * (db/billing_copy.c), retries on conflicts, and a connection of its own
 * for a loading thread.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/billing.h"
#include "db/billing_batch.h"
#include "db/db.h"
#include "db/months.h"
#include "lib/log.h"

#define FLUSH_TRIES 5 /* attempts of a batch that conflicts with others */

/* Type OIDs of the array elements (pg_type.h; stable across releases). */
#define OID_BYTEA 17
#define OID_INT4 23
#define OID_TEXT 25
#define OID_DATE 1082
#define OID_NUMERIC 1700

#define OID_INT8 20
#define N_ARRAYS 22    /* the statement's array parameters, and one scalar */
#define N_SUMMED 20    /* sql_summed's */
#define N_ROW_ARRAYS 7 /* the arrays of the rows, before the keys' */

/* ---- the statement ---------------------------------------------------- */

/*
 * The statement before the COPY, in two forms (and a third, sql_summed,
 * below). Both take the batch as
 * arrays: $1 hashes, $2 rollup key (1-based, into $8..$21), $3 cost, $4
 * credits, $5 GPU amount, $6 its divisor, $7 pricing quantity; $8..$18
 * the distinct rollup keys, $19..$21 where each is reported (month,
 * charge class, report day: see db_month_attribute); $22 the batch's
 * latest usage_start. Both add
 * the sums of the rows they take for new to cost_rollups, in key order,
 * raise billing_freshness, and return (ordinal, known, GPU-hours) for the
 * rows known already and, for the new ones, those whose GPU-hours
 * PostgreSQL divided.
 *
 * sql_probe looks every hash up in billing_rows first (an index probe per
 * row, on the primary key: its day, its key's, and its hash); sql_assume
 * takes every row for new, for batches expected to be new (their COPY then
 * fails on a known one, and the batch is tried again with sql_probe).
 *
 * A batch expected to be new is first summed here instead (sum_rows, with
 * PostgreSQL's numeric arithmetic in C: db/billing_numeric.h), and
 * sql_summed below is given the keys and their sums only, no row; the
 * rows' GPU-hours go straight into the COPY. sql_assume is for a batch
 * whose amounts do not fit the C arithmetic.
 */
#define ROLLUP_COLUMNS                                                         \
  " INSERT INTO cost_rollups AS r (team, day, invoice_month, service, sku,"    \
  "  flavor, location, currency, cost_type, billing_account, pricing_unit,"    \
  "  month, charge_class, report_day, cost, credits, gpu_hours,"               \
  "  pricing_quantity, rows)"

#define ROLLUP_UPSERT                                                          \
  " ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13"                        \
  " ON CONFLICT (team, day, invoice_month, service, sku, flavor, location,"    \
  "  currency, cost_type, billing_account, pricing_unit, charge_class, month)" \
  "  DO UPDATE SET cost = r.cost + excluded.cost,"                             \
  "  credits = r.credits + excluded.credits,"                                  \
  "  gpu_hours = r.gpu_hours + excluded.gpu_hours,"                            \
  "  pricing_quantity = r.pricing_quantity + excluded.pricing_quantity,"       \
  "  rows = r.rows + excluded.rows"

#define FRESH_UPSERT                                                           \
  " ON CONFLICT (id) DO UPDATE"                                                \
  "  SET latest_usage_start = excluded.latest_usage_start"                     \
  "  WHERE f.latest_usage_start < excluded.latest_usage_start"

#define SQL_NEW_ROWS(known, join)                                              \
  "WITH t AS ("                                                                \
  " SELECT * FROM unnest($1::bytea[], $2::int[], $3::numeric[],"               \
  "  $4::numeric[], $5::numeric[], $6::int[], $7::numeric[])"                  \
  "  WITH ORDINALITY AS t(h, k, cost, credits, amount, divisor, quantity, "    \
  "i)),"                                                                       \
  " new AS MATERIALIZED ("                                                     \
  " SELECT t.i, t.k, t.cost, t.credits, t.divisor, t.quantity,"                \
  "  " known " AS known,"                                                      \
  "  CASE t.divisor WHEN 1 THEN t.amount"                                      \
  "   WHEN 3600 THEN trim_scale(t.amount / 3600) ELSE 0 END AS gpu_hours"      \
  " FROM t" join "),"                                                          \
  " sums AS ("                                                                 \
  " SELECT k, sum(cost) AS cost, sum(credits) AS credits,"                     \
  "  sum(gpu_hours) AS gpu_hours, sum(quantity) AS quantity, count(*) AS n"    \
  " FROM new WHERE NOT known GROUP BY k),"                                     \
  " up AS (" ROLLUP_COLUMNS                                                    \
  " SELECT g.team, g.day, g.invoice_month, g.service, g.sku, g.flavor,"        \
  "  g.location, g.currency, g.cost_type, g.account, g.unit, g.month,"         \
  "  g.class, g.report_day, s.cost, s.credits, s.gpu_hours, s.quantity, s.n"   \
  " FROM sums s JOIN unnest($8::text[], $9::date[], $10::text[],"              \
  "  $11::text[], $12::text[], $13::text[], $14::text[], $15::text[],"         \
  "  $16::text[], $17::text[], $18::text[], $19::text[], $20::text[],"         \
  "  $21::date[])"                                                             \
  "  WITH ORDINALITY AS g(team, day, invoice_month, service, sku, flavor,"     \
  "  location, currency, cost_type, account, unit, month, class, report_day,"  \
  "  k)"                                                                       \
  "  ON g.k = s.k" ROLLUP_UPSERT "),"                                          \
  " fresh AS ("                                                                \
  " INSERT INTO billing_freshness AS f (latest_usage_start)"                   \
  " SELECT $22::timestamptz WHERE EXISTS (SELECT 1 FROM sums)" FRESH_UPSERT    \
  ")"                                                                          \
  " SELECT i, known,"                                                          \
  "  CASE WHEN divisor = 3600 AND NOT known THEN gpu_hours::text END"          \
  " FROM new WHERE known OR divisor = 3600"

static const char sql_probe[] =
    SQL_NEW_ROWS("b.known IS NOT NULL",
                 " LEFT JOIN LATERAL (SELECT true AS known FROM billing_rows b"
                 "  WHERE b.usage_day = ($9::date[])[t.k] AND b.row_hash = t.h"
                 "  LIMIT 1) b ON true");

static const char sql_assume[] = SQL_NEW_ROWS("false", "");

/*
 * The statement of a batch summed in C (every row taken for new, as
 * sql_assume does): $1..$14 the distinct keys and where each is reported,
 * as $8..$21 above; $15..$19 their sums (cost, credits, GPU-hours, pricing
 * quantity, rows); $20 the batch's latest usage_start. Nothing per row.
 */
static const char sql_summed[] =
    "WITH up AS (" ROLLUP_COLUMNS
    " SELECT * FROM unnest($1::text[], $2::date[], $3::text[], $4::text[],"
    "  $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],"
    "  $10::text[], $11::text[], $12::text[], $13::text[], $14::date[],"
    "  $15::numeric[], $16::numeric[], $17::numeric[], $18::numeric[],"
    "  $19::int8[])" ROLLUP_UPSERT "),"
    " fresh AS (INSERT INTO billing_freshness AS f (latest_usage_start)"
    " VALUES ($20::timestamptz)" FRESH_UPSERT ")"
    " SELECT 1";

/* ---- flushing ---------------------------------------------------------- */

void bb_log_failure(const char *what, PGconn *pg, const PGresult *res)
{
  const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY)
                        : PQerrorMessage(pg);
  json_t *f = json_pack("{s:s, s:s, s:s}", "statement", what, "sqlstate",
                        state ? state : "", "error", msg ? msg : "");

  log_json(LOG_WARN, "sql failed", f);
  json_decref(f);
}

/* The header of a one-dimensional binary array of n elements of type oid;
 * the elements follow as fields. */
static int array_start(struct buf *p, uint32_t oid, size_t n)
{
  unsigned char *h;

  if (bb_reserve(p, 20) != 0)
    return -1;
  h = (unsigned char *)p->p + p->len;
  bb_put_be32(h, 1);       /* dimensions */
  bb_put_be32(h + 4, 0);   /* no nulls */
  bb_put_be32(h + 8, oid); /* element type */
  bb_put_be32(h + 12, (uint32_t)n);
  bb_put_be32(h + 16, 1); /* lower bound */
  p->len += 20;
  return 0;
}

/* The i-th field (0-based) of key k, as (bytes, length). */
static const char *key_field(const struct db_billing_batch *b, int k, int i,
                             size_t *len)
{
  const unsigned char *q = (const unsigned char *)b->keys.p + b->key_off[k];
  uint32_t n;

  for (;;) {
    n = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 |
        q[3];
    if (i-- == 0)
      break;
    q += 4 + n;
  }
  *len = n;
  return (const char *)q + 4;
}

/* The i-th amount (0 cost, 1 credits, 2 gpu_amount, 3 pricing quantity)
 * of row r. */
static const char *amount(const struct db_billing_batch *b,
                          const struct brow *r, int i)
{
  const char *a = b->text.p + r->amounts;

  while (i-- > 0)
    a += strlen(a) + 1;
  return a;
}

/* Where key k is reported, from its day and invoice month and the closed
 * months read by the flush: month, charge class and report day (text). */
static int key_report(const struct db_billing_batch *b, int k,
                      char month[DB_MONTH_LEN], const char **charge_class,
                      char report_day[16])
{
  char day[16], invoice[16];
  size_t dlen, ilen;
  const char *d = key_field(b, k, 1, &dlen), *inv = key_field(b, k, 2, &ilen);
  bool correction;

  if (dlen >= sizeof(day) || ilen >= sizeof(invoice))
    return -1;
  snprintf(day, sizeof(day), "%.*s", (int)dlen, d);
  snprintf(invoice, sizeof(invoice), "%.*s", (int)ilen, inv);
  if (db_month_attribute(day, invoice, (const char(*)[DB_MONTH_LEN])b->closed,
                         b->n_closed, month, &correction) != 0)
    return -1;
  *charge_class = correction ? "Correction" : "";
  db_month_report_day(day, month, (const char(*)[DB_MONTH_LEN])b->closed,
                      b->n_closed, report_day);
  return 0;
}

/* Array f of the distinct keys: field f of each (f < N_KEY_FIELDS), or
 * where each is reported (N_KEY_FIELDS + 0: month, 1: charge class, 2:
 * report day). */
static int key_array(struct db_billing_batch *b, int f)
{
  struct buf *p = &b->params;
  bool date = f == 1 || f == N_KEY_FIELDS + 2;
  int k;

  if (array_start(p, date ? OID_DATE : OID_TEXT, (size_t)b->n_keys) != 0)
    return -1;
  for (k = 0; k < b->n_keys; k++) {
    char month[DB_MONTH_LEN], rday[16], day[16];
    unsigned char raw[4];
    const char *v, *cls;
    size_t vlen;
    int32_t days;
    int rc;
    if (f >= N_KEY_FIELDS) { /* where the key is reported */
      if (key_report(b, k, month, &cls, rday) != 0)
        return -1;
      v = f == N_KEY_FIELDS ? month : f == N_KEY_FIELDS + 1 ? cls : rday;
      vlen = strlen(v);
    } else {
      v = key_field(b, k, f, &vlen);
    }
    if (date) { /* a day: text in the key, a date here */
      snprintf(day, sizeof(day), "%.*s", (int)vlen, v);
      if (db_date_binary(day, &days) != 0)
        return -1;
      bb_put_be32(raw, (uint32_t)days);
      rc = bb_add_field(p, raw, 4);
    } else {
      rc = bb_add_field(p, v, vlen);
    }
    if (rc != 0)
      return -1;
  }
  return 0;
}

/* Array a of the n rows of b->uniq: 0 hashes, 1 keys (1-based), 2 cost,
 * 3 credits, 4 GPU amount, 5 its divisor, 6 pricing quantity. */
static int row_array(struct db_billing_batch *b, size_t n, int a)
{
  static const uint32_t oid[N_ROW_ARRAYS] = {
      OID_BYTEA,   OID_INT4, OID_NUMERIC, OID_NUMERIC,
      OID_NUMERIC, OID_INT4, OID_NUMERIC};
  struct buf *p = &b->params;
  unsigned char raw[4];
  size_t i;

  if (array_start(p, oid[a], n) != 0)
    return -1;
  for (i = 0; i < n; i++) {
    const struct brow *r = &b->rows[b->uniq[i]];
    int rc;
    if (a == 0) {
      rc = bb_add_field(p, r->hash, DB_BILLING_HASH_LEN);
    } else if (a == 1 || a == 5) {
      bb_put_be32(raw, (uint32_t)(a == 1 ? r->key + 1 : r->divisor));
      rc = bb_add_field(p, raw, 4);
    } else {
      rc = bb_add_numeric(p, amount(b, r, a == 6 ? 3 : a - 2));
    }
    if (rc != 0)
      return -1;
  }
  return 0;
}

/* Array a of the keys' sums (b->sums): 0 cost, 1 credits, 2 GPU-hours,
 * 3 pricing quantity, 4 rows. */
static int sum_array(struct db_billing_batch *b, int a)
{
  struct buf *p = &b->params;
  int k;

  if (array_start(p, a == 4 ? OID_INT8 : OID_NUMERIC, (size_t)b->n_keys) != 0)
    return -1;
  for (k = 0; k < b->n_keys; k++) {
    const struct bsum *s = &b->sums[k];
    char text[BNUM_TEXT_MAX];
    unsigned char raw[8];
    int rc;
    if (a == 4) {
      bb_put_be64(raw, (uint64_t)s->rows);
      rc = bb_add_field(p, raw, 8);
    } else {
      const struct bnum *sums[4] = {&s->cost, &s->credits, &s->gpu_hours,
                                    &s->pricing_quantity};
      bnum_text(sums[a], text);
      rc = bb_add_numeric(p, text);
    }
    if (rc != 0)
      return -1;
  }
  return 0;
}

/*
 * The statement's parameters into b->params, their offsets in off[] and
 * lengths in len[]; returns their number, or -1. sql_probe and sql_assume
 * take N_ARRAYS: the 7 arrays of the n rows of b->uniq, the 14 of the keys
 * and the latest usage_start; sql_summed (summed) N_SUMMED: the 14 arrays
 * of the keys, the 5 of their sums and the latest usage_start.
 */
static int build_params(struct db_billing_batch *b, size_t n, bool summed,
                        size_t off[N_ARRAYS], int len[N_ARRAYS])
{
  int n_arrays = summed ? N_SUMMED - 1 : N_ARRAYS - 1, a, rc;
  struct buf *p = &b->params;

  p->len = 0;
  for (a = 0; a < n_arrays; a++) {
    off[a] = p->len;
    if (summed)
      rc = a < N_KEY_FIELDS + 3 ? key_array(b, a)
                                : sum_array(b, a - N_KEY_FIELDS - 3);
    else
      rc = a < N_ROW_ARRAYS ? row_array(b, n, a)
                            : key_array(b, a - N_ROW_ARRAYS);
    if (rc != 0 || p->len - off[a] > 0x7FFFFFFF)
      return -1;
    len[a] = (int)(p->len - off[a]);
  }
  off[a] = p->len; /* the latest usage_start: timestamptz, binary */
  if (bb_reserve(p, 8) != 0)
    return -1;
  bb_put_be64((unsigned char *)p->p + p->len, (uint64_t)b->latest_us);
  p->len += 8;
  len[a] = 8;
  return a + 1;
}

/*
 * The sums of each key over the n rows of b->uniq, all taken for new, into
 * b->sums, and the GPU-hours of the rows that have them divided (seconds)
 * into b->gpu (each row's gpu_row its offset): what sql_assume has
 * PostgreSQL compute, computed here the way it would (db/billing_numeric.h).
 * 0, or -1 when an amount or a sum does not fit there (PostgreSQL then
 * does it) or out of memory.
 */
static int sum_rows(struct db_billing_batch *b, size_t n)
{
  size_t i;

  if (b->cap_sums < b->n_keys) {
    struct bsum *g = realloc(b->sums, (size_t)b->n_keys * sizeof(*g));
    if (!g)
      return -1;
    b->sums = g;
    b->cap_sums = b->n_keys;
  }
  memset(b->sums, 0, (size_t)b->n_keys * sizeof(*b->sums));
  b->gpu.len = 0;
  for (i = 0; i < n; i++) {
    struct brow *r = &b->rows[b->uniq[i]];
    struct bsum *s = &b->sums[r->key];
    struct bnum cost, credits, quantity, gpu = {0, 0};
    char text[BNUM_TEXT_MAX];
    size_t tl;
    if (bnum_parse(amount(b, r, 0), &cost) != 0 ||
        bnum_parse(amount(b, r, 1), &credits) != 0 ||
        bnum_parse(amount(b, r, 3), &quantity) != 0 ||
        (r->divisor != 0 && bnum_parse(amount(b, r, 2), &gpu) != 0) ||
        (r->divisor == 3600 && bnum_div3600(&gpu, &gpu) != 0) ||
        bnum_add(&s->cost, &cost) != 0 ||
        bnum_add(&s->credits, &credits) != 0 ||
        bnum_add(&s->gpu_hours, &gpu) != 0 ||
        bnum_add(&s->pricing_quantity, &quantity) != 0)
      return -1;
    s->rows++;
    r->gpu_row = -1;
    if (r->divisor != 3600)
      continue;
    bnum_text(&gpu, text);
    tl = strlen(text) + 1;
    if (bb_reserve(&b->gpu, tl) != 0 || b->gpu.len > 0x7FFFFFFF)
      return -1;
    r->gpu_row = (int)b->gpu.len;
    memcpy(b->gpu.p + b->gpu.len, text, tl);
    b->gpu.len += tl;
  }
  return 0;
}

/*
 * Inside the flush's transaction: wait for a month close under way (and
 * keep one from starting until commit: SHARE conflicts with the close's
 * insert) and for a pulled day's replacement, then read the closed months
 * into b->closed, ascending.
 */
static enum gg_code read_closed(struct db_conn *c, struct db_billing_batch *b)
{
  PGresult *res = PQexec(c->pg,
                         /* a pulled day being replaced holds this lock
                          * exclusively (db_billing_day_begin): a batch
                          * waits for it, never lands between its delete
                          * and its reconciliation; the pull's own batches
                          * hold it already */
                         "SELECT pg_advisory_xact_lock_shared(1735418215, 2);"
                         " LOCK TABLE month_closes IN SHARE MODE; "
                         "SELECT month FROM month_closes "
                         "ORDER BY month COLLATE \"C\"");
  enum gg_code code = GG_OK;
  int i, rows;

  b->n_closed = 0;
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    code = db_code_of(res, c->pg);
    if (code != GG_CONFLICT)
      bb_log_failure("closed months", c->pg, res);
    PQclear(res);
    return code;
  }
  rows = PQntuples(res);
  if ((size_t)rows > b->cap_closed) {
    char(*grown)[DB_MONTH_LEN] =
        realloc(b->closed, (size_t)rows * sizeof(*grown));
    if (!grown) {
      PQclear(res);
      return GG_INTERNAL;
    }
    b->closed = grown;
    b->cap_closed = (size_t)rows;
  }
  for (i = 0; i < rows; i++)
    snprintf(b->closed[i], DB_MONTH_LEN, "%s", PQgetvalue(res, i, 0));
  b->n_closed = (size_t)rows;
  PQclear(res);
  return GG_OK;
}

/*
 * A flush is a transaction of its own, or, when the caller has one open (a
 * day of the BigQuery pull replaced as a whole), a savepoint in it: a
 * conflict then retries the batch without losing the caller's work.
 */
static enum gg_code simple(struct db_conn *c, const char *sql)
{
  enum gg_code code;

  PQclear(db_exec(c, sql, 0, NULL, &code));
  return code;
}

static enum gg_code tx_begin(struct db_conn *c, bool nested)
{
  return nested ? simple(c, "SAVEPOINT billing_flush") : db_begin(c);
}

static enum gg_code tx_end(struct db_conn *c, bool nested, bool ok)
{
  if (!nested) {
    if (ok)
      return db_commit(c);
    db_rollback(c);
    return GG_OK;
  }
  if (ok)
    return simple(c, "RELEASE SAVEPOINT billing_flush");
  if (PQtransactionStatus(c->pg) != PQTRANS_IDLE)
    PQclear(PQexec(c->pg, "ROLLBACK TO SAVEPOINT billing_flush"));
  return GG_OK;
}

/* How a flush attempt finds the new rows and their sums. */
enum way {
  PROBE,  /* sql_probe: looking each row up */
  ASSUME, /* sql_assume: every row new, summed by PostgreSQL */
  SUMMED  /* sql_summed: every row new, summed here (sum_rows) */
};

/* One attempt at storing the n rows of b->uniq. */
static enum gg_code flush_once(struct db_conn *c, struct db_billing_batch *b,
                               size_t n, enum way way, long *inserted)
{
  static const char *const sql[3] = {sql_probe, sql_assume, sql_summed};
  bool nested = PQtransactionStatus(c->pg) == PQTRANS_INTRANS;
  const char *values[N_ARRAYS];
  size_t off[N_ARRAYS], i;
  int len[N_ARRAYS], formats[N_ARRAYS], a, rows, n_params;
  long fresh = (long)n;
  enum gg_code code;
  PGresult *res = NULL;

  *inserted = 0;
  code = tx_begin(c, nested);
  if (code != GG_OK)
    return code;
  code = read_closed(c, b);
  if (code != GG_OK)
    goto out;
  n_params = build_params(b, n, way == SUMMED, off, len);
  if (n_params < 0) {
    code = GG_INTERNAL;
    goto out;
  }
  for (a = 0; a < n_params; a++) {
    values[a] = b->params.p + off[a];
    formats[a] = 1;
  }
  res = PQexecParams(c->pg, sql[way], n_params, NULL, values, len, formats, 0);
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    code = db_code_of(res, c->pg);
    if (code != GG_CONFLICT)
      bb_log_failure("merge", c->pg, res);
    goto out;
  }
  for (i = 0; i < n; i++) {
    b->rows[b->uniq[i]].fresh = true;
    if (way != SUMMED) /* summed: sum_rows set them */
      b->rows[b->uniq[i]].gpu_row = -1;
  }
  rows = way == SUMMED ? 0 : PQntuples(res);
  for (a = 0; a < rows; a++) {
    long k = strtol(PQgetvalue(res, a, 0), NULL, 10);
    struct brow *r;
    if (k < 1 || (size_t)k > n) {
      code = GG_INTERNAL;
      goto out;
    }
    r = &b->rows[b->uniq[k - 1]];
    if (*PQgetvalue(res, a, 1) == 't') {
      r->fresh = false;
      fresh--;
    } else {
      r->gpu_row = a;
    }
  }
  if (fresh > 0) {
    code = bb_copy_rows(c, b, n, way == SUMMED ? NULL : res);
    if (code != GG_OK)
      goto out;
  }
  code = tx_end(c, nested, true);
  if (code == GG_OK)
    *inserted = fresh;
out:
  PQclear(res);
  if (code != GG_OK)
    tx_end(c, nested, false);
  return code;
}

/* b->uniq: the rows of b, in order, without the later copies of a hash.
 * Returns their number, or -1 when out of memory. */
static long unique_rows(struct db_billing_batch *b)
{
  size_t slots = 16, i, n = 0;

  while (slots < 2 * b->n)
    slots *= 2;
  if (b->cap_uniq < b->n) {
    int *g = realloc(b->uniq, b->n * sizeof(*g));
    if (!g)
      return -1;
    b->uniq = g;
    b->cap_uniq = b->n;
  }
  if (b->cap_seen < slots) {
    int *g = realloc(b->seen, slots * sizeof(*g));
    if (!g)
      return -1;
    b->seen = g;
    b->cap_seen = slots;
  }
  memset(b->seen, 0, slots * sizeof(*b->seen));
  for (i = 0; i < b->n; i++) {
    const unsigned char *h = b->rows[i].hash;
    uint64_t v;
    size_t at;
    memcpy(&v, h, sizeof(v)); /* a hash is uniformly distributed */
    at = (size_t)v & (slots - 1);
    while (b->seen[at] &&
           memcmp(b->rows[b->seen[at] - 1].hash, h, DB_BILLING_HASH_LEN) != 0)
      at = (at + 1) & (slots - 1);
    if (b->seen[at])
      continue; /* a duplicate within the batch */
    b->seen[at] = (int)i + 1;
    b->uniq[n++] = (int)i;
  }
  return (long)n;
}

/* qsort_r's order of b->uniq, billing_rows' primary key's: by usage day
 * (b->key_day of the row's key), then hash. */
static int by_day_hash(const void *x, const void *y, void *arg)
{
  const struct db_billing_batch *b = arg;
  const struct brow *r = &b->rows[*(const int *)x];
  const struct brow *s = &b->rows[*(const int *)y];
  int32_t dr = b->key_day[r->key], ds = b->key_day[s->key];

  if (dr != ds)
    return dr < ds ? -1 : 1;
  return memcmp(r->hash, s->hash, DB_BILLING_HASH_LEN);
}

/*
 * The n rows of b->uniq in billing_rows' primary key order, so that each
 * index entry goes next to the one before it (a new day's to the index's
 * right edge, where PostgreSQL skips the descent, and its leaves fill
 * before they split) instead of to a random leaf of the day. Only an
 * optimisation: the rows stay in batch order when it cannot be done.
 */
static void sort_rows(struct db_billing_batch *b, size_t n)
{
  int k;

  if (b->cap_key_day < b->n_keys) {
    int32_t *g = realloc(b->key_day, (size_t)b->n_keys * sizeof(*g));
    if (!g)
      return;
    b->key_day = g;
    b->cap_key_day = b->n_keys;
  }
  for (k = 0; k < b->n_keys; k++) {
    char day[16];
    size_t len;
    const char *d = key_field(b, k, 1, &len);
    if (len >= sizeof(day))
      return;
    snprintf(day, sizeof(day), "%.*s", (int)len, d);
    if (db_date_binary(day, &b->key_day[k]) != 0)
      return;
  }
  qsort_r(b->uniq, n, sizeof(*b->uniq), by_day_hash, b);
}

enum gg_code db_billing_flush(struct db_conn *c, struct db_billing_batch *b,
                              bool expect_new, long *inserted)
{
  enum gg_code code = GG_OK;
  enum way first;
  long n;
  int tries;

  *inserted = 0;
  if (b->n == 0)
    return GG_OK;
  if (bb_hash_pending(b) != 0) {
    bb_batch_reset(b);
    return GG_INTERNAL;
  }
  n = unique_rows(b);
  if (n < 0) {
    bb_batch_reset(b);
    return GG_INTERNAL;
  }
  sort_rows(b, (size_t)n);
  first = !expect_new ? PROBE : sum_rows(b, (size_t)n) == 0 ? SUMMED : ASSUME;
  for (tries = 0; tries < FLUSH_TRIES; tries++) {
    /* a conflict: a known row (when assumed new), another load storing the
     * same rows, a deadlock; after it, probe */
    code = flush_once(c, b, (size_t)n, tries > 0 ? PROBE : first, inserted);
    if (code != GG_CONFLICT)
      break;
  }
  if (code == GG_CONFLICT)
    bb_log_failure("flush", c->pg, NULL);
  bb_batch_reset(b);
  return code;
}

/* ---- a connection of its own ------------------------------------------- */

static void quiet_notice(void *arg, const char *message)
{
  (void)arg;
  (void)message;
}

struct db_conn *db_billing_connect_like(const struct db_conn *c)
{
  PQconninfoOption *opts, *o;
  const char *keys[64], *vals[64];
  struct db_conn *conn;
  int n = 0;

  if (!c || !c->pg || !(opts = PQconninfo(c->pg)))
    return NULL;
  for (o = opts; o->keyword && n < 63; o++)
    if (o->val && *o->val) {
      keys[n] = o->keyword;
      vals[n++] = o->val;
    }
  keys[n] = vals[n] = NULL;
  conn = calloc(1, sizeof(*conn));
  if (conn)
    conn->pg = PQconnectdbParams(keys, vals, 0);
  PQconninfoFree(opts);
  if (!conn || !conn->pg || PQstatus(conn->pg) != CONNECTION_OK) {
    if (conn && conn->pg)
      bb_log_failure("connect", conn->pg, NULL);
    db_billing_disconnect(conn);
    return NULL;
  }
  PQsetNoticeProcessor(conn->pg, quiet_notice, NULL);
  return conn;
}

void db_billing_disconnect(struct db_conn *c)
{
  if (!c)
    return;
  PQfinish(c->pg);
  free(c);
}
