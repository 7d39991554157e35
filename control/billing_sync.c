/*
 * billing_sync.c — the BigQuery pull of the billing export (see
 * billing_sync.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcp/bigquery.h"
#include "db/billing.h"
#include "db/billing_sync.h"
#include "billing/billing_ingest.h"
#include "control/billing_store.h"
#include "control/billing_sync.h"
#include "control/control_config.h"
#include "lib/log.h"
#include "lib/metrics.h"

static long backoff_ms = 200;

void billing_sync_set_backoff_ms(long ms)
{
  backoff_ms = ms;
}

size_t billing_sync_plan(const struct billing_day_figures *remote, size_t nr,
                         const struct billing_day_figures *stored, size_t ns,
                         struct billing_day_plan *out)
{
  size_t i = 0, j = 0, n = 0;

  while (i < nr || j < ns) {
    int cmp = i == nr ? 1 : j == ns ? -1 : strcmp(remote[i].day, stored[j].day);
    if (cmp < 0) { /* never loaded */
      snprintf(out[n].day, sizeof(out[n].day), "%s", remote[i].day);
      out[n++].remote = (long)i;
      i++;
    } else if (cmp > 0) { /* gone from the export */
      if (stored[j].rows > 0) {
        snprintf(out[n].day, sizeof(out[n].day), "%s", stored[j].day);
        out[n++].remote = -1;
      }
      j++;
    } else {
      if (remote[i].rows != stored[j].rows ||
          strcmp(remote[i].export_time, stored[j].export_time) != 0) {
        snprintf(out[n].day, sizeof(out[n].day), "%s", remote[i].day);
        out[n++].remote = (long)i;
      }
      i++;
      j++;
    }
  }
  return n;
}

void billing_sync_scan_from(const struct billing_partition *remote, size_t nr,
                            const struct billing_partition *stored, size_t ns,
                            const char *from, char out[11])
{
  size_t i, j = 0;

  snprintf(out, 11, "%s", from);
  if (!*from)
    return; /* everything is summed */
  for (i = 0; i < nr; i++) {
    while (j < ns && strcmp(stored[j].day, remote[i].day) < 0)
      j++;
    if (j < ns && !strcmp(stored[j].day, remote[i].day) &&
        !strcmp(stored[j].export_time, remote[i].export_time))
      continue; /* unchanged since read */
    if (strcmp(remote[i].first, out) < 0)
      snprintf(out, 11, "%s", remote[i].first);
  }
}

/* ---- the queries -----------------------------------------------------------
 *
 * BigQuery is asked by what the queries say, no marker: the summary counts
 * and groups a window's rows per usage day with their exact sums; the rows
 * are TO_JSON_STRING of a day's rows. Both filter on the export's
 * partitions (_PARTITIONTIME, the day a row was exported: never before its
 * usage day), so a sync scans — and is billed for — the partitions from its
 * window on, not the table's whole history. Days, export times and sums
 * come back as strings: nothing is left to BigQuery's float rendering. The
 * rows cast cost and credit amounts to NUMERIC; TO_JSON_STRING writes such
 * a NUMERIC quoted when it has a fraction ("cost":"1.25", ZetaSQL
 * json_format.cc), which the row parser reads as the exact decimal it is.
 * The summary's sums are the same casts summed: what the stored rows must
 * add up to.
 *
 * Before them, the partitions of the window and their MAX(export_time) (as
 * Koku asks, SELECT DATE(_PARTITIONTIME), MAX(export_time) ... GROUP BY 1),
 * with the first usage day each holds: a partition whose export_time moved
 * makes the summary start at its first usage day, so a late row for an old
 * usage day is summed and its day re-read (billing_sync_scan_from). The
 * summary then reads the partitions from that day on only.
 */
static const char sql_parts[] =
    "SELECT CAST(DATE(_PARTITIONTIME) AS STRING) AS partition_day,"
    " FORMAT_TIMESTAMP('%Y-%m-%dT%H:%M:%E6SZ', MAX(export_time), 'UTC')"
    " AS export_time,"
    " CAST(MIN(DATE(usage_start_time)) AS STRING) AS first_usage_day"
    " FROM `%TABLE%`"
    " WHERE DATE(_PARTITIONTIME) >= @from_day"
    " GROUP BY partition_day ORDER BY partition_day";

static const char sql_days[] =
    "SELECT CAST(DATE(usage_start_time) AS STRING) AS day,"
    " COUNT(*) AS row_count,"
    " FORMAT_TIMESTAMP('%Y-%m-%dT%H:%M:%E6SZ', MAX(export_time), 'UTC')"
    " AS export_time,"
    " CAST(SUM(CAST(cost AS NUMERIC)) AS STRING) AS cost,"
    " CAST(IFNULL(SUM((SELECT SUM(CAST(c.amount AS NUMERIC))"
    " FROM UNNEST(credits) AS c)), 0) AS STRING) AS credits,"
    " STRING_AGG(DISTINCT IFNULL(billing_account_id, ''), ',') AS accounts"
    " FROM `%TABLE%`"
    " WHERE DATE(_PARTITIONTIME) >= @from_day"
    " AND DATE(usage_start_time) >= @from_day"
    " GROUP BY day ORDER BY day";

static const char sql_rows[] =
    "SELECT TO_JSON_STRING(t) AS row FROM ("
    "SELECT * REPLACE (CAST(cost AS NUMERIC) AS cost,"
    " ARRAY(SELECT AS STRUCT c.* REPLACE (CAST(c.amount AS NUMERIC) AS amount)"
    " FROM UNNEST(credits) AS c) AS credits)"
    " FROM `%TABLE%`"
    " WHERE DATE(_PARTITIONTIME) >= @day"
    " AND DATE(usage_start_time) = @day) AS t";

/* sql with %TABLE% replaced by table, into a new string. */
static char *with_table(const char *sql, const char *table)
{
  const char *at = strstr(sql, "%TABLE%");
  size_t n = strlen(sql) + strlen(table) + 1;
  char *s = malloc(n);

  if (!s || !at) {
    free(s);
    return NULL;
  }
  snprintf(s, n, "%.*s%s%s", (int)(at - sql), sql, table, at + 7);
  return s;
}

/* ---- the per-day summary --------------------------------------------------
 */

struct days {
  struct billing_day_figures *v;
  size_t n, cap;
};

static int on_day(void *ctx, const char *const *cells, size_t n, char *err,
                  size_t errlen)
{
  struct days *d = ctx;
  const char *day = n > 0 ? cells[0] : NULL, *rows = n > 1 ? cells[1] : NULL,
             *et = n > 2 ? cells[2] : NULL, *cost = n > 3 ? cells[3] : NULL,
             *credits = n > 4 ? cells[4] : NULL,
             *accounts = n > 5 && cells[5] ? cells[5] : "";
  struct billing_day_figures *f;
  char *end;

  if (!day || !rows || !et || strlen(day) != 10 ||
      strlen(et) >= BILLING_EXPORT_TIME_MAX) {
    snprintf(err, errlen, "billing-days: a malformed row");
    return -1;
  }
  /* the sums are what a day is reconciled with: exact decimals or
   * nothing */
  if (!cost || !credits || !billing_decimal_string(cost) ||
      !billing_decimal_string(credits) || strlen(cost) >= BILLING_SUM_MAX ||
      strlen(credits) >= BILLING_SUM_MAX ||
      strlen(accounts) >= BILLING_ACCOUNTS_MAX) {
    snprintf(err, errlen, "billing-days: %s: malformed sums or accounts", day);
    return -1;
  }
  if (d->n == d->cap) {
    size_t cap = d->cap ? 2 * d->cap : 128;
    struct billing_day_figures *g = realloc(d->v, cap * sizeof(*g));
    if (!g) {
      snprintf(err, errlen, "billing-days: out of memory");
      return -1;
    }
    d->v = g;
    d->cap = cap;
  }
  f = &d->v[d->n];
  memset(f, 0, sizeof(*f));
  memcpy(f->day, day, 11);
  snprintf(f->export_time, sizeof(f->export_time), "%s", et);
  snprintf(f->cost, sizeof(f->cost), "%s", cost);
  snprintf(f->credits, sizeof(f->credits), "%s", credits);
  snprintf(f->accounts, sizeof(f->accounts), "%s", accounts);
  f->rows = strtol(rows, &end, 10);
  if (*end || f->rows < 0) {
    snprintf(err, errlen, "billing-days: row_count \"%.40s\"", rows);
    return -1;
  }
  if (d->n > 0 && strcmp(d->v[d->n - 1].day, f->day) >= 0) {
    snprintf(err, errlen, "billing-days: days out of order");
    return -1;
  }
  d->n++;
  return 0;
}

/* ---- the partitions -------------------------------------------------------
 */

struct parts {
  struct billing_partition *v;
  size_t n, cap;
};

static int on_part(void *ctx, const char *const *cells, size_t n, char *err,
                   size_t errlen)
{
  struct parts *p = ctx;
  const char *day = n > 0 ? cells[0] : NULL, *et = n > 1 ? cells[1] : NULL,
             *first = n > 2 ? cells[2] : NULL;
  struct billing_partition *f;

  if (!day || !et || !first || strlen(day) != 10 || strlen(first) != 10 ||
      strlen(et) >= BILLING_EXPORT_TIME_MAX) {
    snprintf(err, errlen, "billing-partitions: a malformed row");
    return -1;
  }
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 128;
    struct billing_partition *g = realloc(p->v, cap * sizeof(*g));
    if (!g) {
      snprintf(err, errlen, "billing-partitions: out of memory");
      return -1;
    }
    p->v = g;
    p->cap = cap;
  }
  f = &p->v[p->n];
  memcpy(f->day, day, 11);
  memcpy(f->first, first, 11);
  snprintf(f->export_time, sizeof(f->export_time), "%s", et);
  if (p->n > 0 && strcmp(p->v[p->n - 1].day, f->day) >= 0) {
    snprintf(err, errlen, "billing-partitions: out of order");
    return -1;
  }
  p->n++;
  return 0;
}

/* ---- one day's rows -------------------------------------------------------
 */

/* A day being read: its rows are parsed into batch, which goes to the
 * storing thread (control/billing_store.h) when full, while that thread
 * stores the batches before it, of this day or of the days before. */
struct day_load {
  struct billing_store *store;
  const atomic_bool *cancel; /* NULL: none */
  struct billing_scratch *scratch;
  struct db_billing_batch *batch; /* being filled, or NULL */
  long rows, rejected;
};

static int on_row(void *ctx, const char *const *cells, size_t n, char *err,
                  size_t errlen)
{
  struct day_load *l = ctx;
  const char *text = n > 0 ? cells[0] : NULL;
  struct billing_row row;
  const char *canon;
  size_t canon_len;
  char why[256];

  if (!text) {
    snprintf(err, errlen, "billing-rows: a row without its JSON");
    return -1;
  }
  if (l->cancel && atomic_load(l->cancel)) {
    snprintf(err, errlen, "stopped: the server is shutting down");
    return -1;
  }
  if (billing_parse_row_unhashed(l->scratch, text, strlen(text), &row, &canon,
                                 &canon_len, why, sizeof(why)) != 0) {
    if (l->rejected++ == 0)
      log_msg(LOG_WARN, "billing sync: a row rejected: %s", why);
    return 0;
  }
  if (!l->batch && !(l->batch = billing_store_batch(l->store))) {
    billing_row_clear(&row);
    snprintf(err, errlen, "the database failed storing rows");
    return -1;
  }
  if (db_billing_batch_add_canonical(l->batch, &row.db, canon, canon_len) !=
      0) {
    billing_row_clear(&row);
    if (l->rejected++ == 0)
      log_msg(LOG_WARN, "billing sync: a row rejected: malformed field");
    return 0;
  }
  billing_row_clear(&row);
  l->rows++;
  if (db_billing_batch_rows(l->batch) >= BILLING_BATCH_ROWS ||
      db_billing_batch_bytes(l->batch) >= BILLING_BATCH_BYTES) {
    struct db_billing_batch *full = l->batch;
    l->batch = NULL;
    if (billing_store_put(l->store, full) != 0) {
      snprintf(err, errlen, "the database failed storing rows");
      return -1;
    }
  }
  return 0;
}

/* Queue the replacement of day p with the export's rows, res (its query,
 * started): its rows are read here, stored, reconciled and committed (or
 * rolled back) by the storing thread. */
static int replace_day(struct bq_result *res, struct day_load *l,
                       const struct billing_day_figures *remote,
                       const struct billing_day_plan *p, char *err,
                       size_t errlen)
{
  const struct billing_day_figures *f;
  int rc = 0;

  if (p->remote < 0) { /* refused before: never replaced by nothing */
    snprintf(err, errlen, "%s: not in the export", p->day);
    return -1;
  }
  f = &remote[p->remote];
  if (billing_store_begin(l->store, f) != 0) {
    bq_result_free(res);
    snprintf(err, errlen, "the database failed");
    return -1;
  }
  l->rows = 0;
  rc = bq_result_rows(res, on_row, l, err, errlen);
  if (l->batch) {
    if (rc == 0 && billing_store_put(l->store, l->batch) != 0) {
      snprintf(err, errlen, "the database failed storing rows");
      rc = -1;
    } else if (rc != 0) {
      db_billing_batch_clear(l->batch);
      billing_store_put(l->store, l->batch); /* given back, skipped */
    }
    l->batch = NULL;
  }
  if (rc != 0) {
    billing_store_abort(l->store);
    return -1;
  }
  if (billing_store_commit(l->store, f, l->rows) != 0) {
    snprintf(err, errlen, "the database failed");
    return -1;
  }
  return 0;
}

/* ---- the next day's query, started while this day's rows are read ---------
 */

struct starter {
  struct bq_client *bq;
  const char *sql;
  struct bq_result *res;
  pthread_t thread;
  int rc;
  bool running;
  char day[11];
  char err[256];
};

static void *start_thread(void *arg)
{
  struct starter *st = arg;
  json_t *params = json_array();

  json_array_append_new(params, bq_param("day", "DATE", st->day));
  st->rc = bq_query_start(st->bq, st->sql, params, &st->res, st->err,
                          sizeof(st->err));
  return NULL;
}

/* Start day's query on st's client (on a thread when one can be made). */
static void start(struct starter *st, const char *day)
{
  snprintf(st->day, sizeof(st->day), "%s", day);
  st->res = NULL;
  st->running = pthread_create(&st->thread, NULL, start_thread, st) == 0;
  if (!st->running)
    start_thread(st);
}

/* The started query of st (NULL with err filled when it failed). */
static struct bq_result *started(struct starter *st, char *err, size_t errlen)
{
  struct bq_result *res;

  if (st->running)
    pthread_join(st->thread, NULL);
  st->running = false;
  res = st->res;
  st->res = NULL;
  if (st->rc != 0)
    snprintf(err, errlen, "%s", st->err);
  return st->rc == 0 ? res : NULL;
}

/*
 * A days answer that lacks stored days (a swapped view, a wrong location,
 * an empty table) is refused, never taken as those days gone: nothing is
 * deleted, and the sync fails naming them. 0, or -1 with err.
 */
static int refuse_gone(const struct billing_day_plan *plan, size_t np,
                       char *err, size_t errlen)
{
  size_t i, gone = 0;
  const char *first = NULL;

  for (i = 0; i < np; i++)
    if (plan[i].remote < 0 && gone++ == 0)
      first = plan[i].day;
  if (!gone)
    return 0;
  snprintf(err, errlen,
           "the export's answer lacks %zu stored days (from %s): refused, "
           "nothing deleted (a swapped view or a wrong location?)",
           gone, first);
  return -1;
}

/* The plan's next day after i (or from 0: i = -1) with rows to read, or
 * np. */
static size_t next_read(const struct billing_day_plan *plan, size_t np, long i)
{
  size_t j = (size_t)(i + 1);

  while (j < np && plan[j].remote < 0)
    j++;
  return j;
}

static int sync_days(const struct control_config *cfg, struct bq_client *bq[2],
                     struct db_conn *db, bool progress,
                     const atomic_bool *cancel, struct billing_sync_report *rep,
                     char *err, size_t errlen)
{
  char from[11] = "", scan[11] = "";
  char *q_parts = with_table(sql_parts, cfg->billing_bq_table);
  char *q_days = with_table(sql_days, cfg->billing_bq_table);
  struct parts parts = {NULL, 0, 0};
  struct billing_partition *read_parts = NULL;
  size_t nrp = 0;
  char *q_rows = with_table(sql_rows, cfg->billing_bq_table);
  struct days remote = {NULL, 0, 0};
  struct billing_day_figures *stored = NULL;
  struct billing_day_plan *plan = NULL;
  struct day_load l;
  struct starter st[2];
  char store_err[256], which[128];
  size_t ns = 0, np, i, j;
  int k;
  json_t *params;
  int rc = -1;

  memset(&l, 0, sizeof(l));
  l.cancel = cancel;
  l.scratch = billing_scratch_new();
  if (!q_parts || !q_days || !q_rows || !l.scratch) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  if (db_billing_sync_window(db, cfg->billing_reread_days, from) != GG_OK) {
    snprintf(err, errlen, "the database failed");
    goto out;
  }
  /* the window's partitions: those whose export_time moved take the
   * summary back to their first usage day */
  params = json_array();
  json_array_append_new(
      params, bq_param("from_day", "DATE", *from ? from : "1970-01-01"));
  if (bq_query(bq[0], q_parts, params, on_part, &parts, err, errlen) != 0)
    goto out;
  if (db_billing_sync_partitions(db, from, &read_parts, &nrp) != GG_OK) {
    snprintf(err, errlen, "the database failed");
    goto out;
  }
  billing_sync_scan_from(parts.v, parts.n, read_parts, nrp, from, scan);
  params = json_array();
  json_array_append_new(
      params, bq_param("from_day", "DATE", *scan ? scan : "1970-01-01"));
  if (bq_query(bq[0], q_days, params, on_day, &remote, err, errlen) != 0)
    goto out;
  if (db_billing_sync_days(db, scan, &stored, &ns) != GG_OK) {
    snprintf(err, errlen, "the database failed");
    goto out;
  }
  plan = calloc(remote.n + ns + 1, sizeof(*plan));
  if (!plan) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  np = billing_sync_plan(remote.v, remote.n, stored, ns, plan);
  rep->days_remote = (long)remote.n;
  if (refuse_gone(plan, np, err, errlen) != 0)
    goto out;
  if (progress)
    fprintf(stderr, "%zu days in the export since %s, %zu to read\n", remote.n,
            *scan ? scan : "the start", np);
  l.store = billing_store_start(db, progress, np);
  if (!l.store) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  /* day i's query runs on client k, and the next day's is started on the
   * other while day i's rows are read (a client serves one query at a
   * time) */
  for (k = 0; k < 2; k++) {
    memset(&st[k], 0, sizeof(st[k]));
    st[k].bq = bq[k];
    st[k].sql = q_rows;
  }
  k = 0;
  if ((j = next_read(plan, np, -1)) < np)
    start(&st[k], plan[j].day);
  rc = 0;
  for (i = 0; i < np && rc == 0; i++) {
    struct bq_result *res = NULL;
    if (plan[i].remote >= 0) {
      if (!(res = started(&st[k], err, errlen))) {
        rc = -1;
        break;
      }
      k = 1 - k;
      if ((j = next_read(plan, np, (long)i)) < np)
        start(&st[k], plan[j].day);
    }
    rc = replace_day(res, &l, remote.v, &plan[i], err, errlen);
  }
  for (k = 0; k < 2; k++) { /* a query started and not read */
    char ignored[256];
    bq_result_free(started(&st[k], ignored, sizeof(ignored)));
  }
  /* the store's failure first: the reader's is then only its echo */
  if (billing_store_finish(l.store, &rep->days_read, &rep->rows_read,
                           &rep->days_unreconciled, which, sizeof(which),
                           store_err, sizeof(store_err)) != 0) {
    snprintf(err, errlen, "%s", store_err);
    rc = -1;
  } else if (rc == 0 && rep->days_unreconciled > 0) {
    snprintf(err, errlen,
             "%ld days do not reconcile with the export (rolled back): %s",
             rep->days_unreconciled, which);
    rc = -1;
  }
  /* the partitions are read once every day they hold committed: a sync
   * that failed sums them again */
  if (rc == 0 &&
      db_billing_sync_partitions_save(db, parts.v, parts.n) != GG_OK) {
    snprintf(err, errlen, "the database failed recording the partitions");
    rc = -1;
  }
out:
  rep->rows_rejected = l.rejected;
  free(parts.v);
  free(read_parts);
  free(q_parts);
  billing_scratch_free(l.scratch);
  free(plan);
  free(stored);
  free(remote.v);
  free(q_days);
  free(q_rows);
  return rc;
}

void billing_sync_publish(struct db_conn *db)
{
  double at;
  long rows, unreconciled;
  long long bytes;

  if (db_billing_last_success(db, &at, &rows, &unreconciled, &bytes) == GG_OK)
    metrics_billing_sync(at, rows, unreconciled, bytes);
}

int billing_sync_run(const struct control_config *cfg, struct db_conn *db,
                     struct batch_token_source *ts, bool progress,
                     const atomic_bool *cancel, struct billing_sync_report *rep,
                     char *err, size_t errlen)
{
  struct bq_client *bq[2];
  int rc, k;

  memset(rep, 0, sizeof(*rep));
  if (!*cfg->billing_bq_table) {
    snprintf(err, errlen, "GPUGATE_BILLING_BIGQUERY_TABLE is not set");
    return -1;
  }
  for (k = 0; k < 2; k++) { /* two: a day's query starts on the other */
    bq[k] = bq_client_new(cfg->bigquery_endpoint, cfg->billing_bq_project,
                          cfg->billing_bq_location, ts);
    if (bq[k]) {
      bq_client_set_backoff_ms(bq[k], backoff_ms);
      bq_client_set_max_bytes_billed(bq[k], cfg->billing_max_bytes_billed);
    }
  }
  if (!bq[0] || !bq[1]) {
    bq_client_free(bq[0]);
    bq_client_free(bq[1]);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  /* one pull at a time per deployment (the leader's, billing-sync's, an
   * old leader's): the next waits for this one, then finds its days read */
  if (db_billing_pull_lock(db) != GG_OK) {
    bq_client_free(bq[0]);
    bq_client_free(bq[1]);
    snprintf(err, errlen, "the database failed taking the pull lock");
    return -1;
  }
  rc = sync_days(cfg, bq, db, progress, cancel, rep, err, errlen);
  db_billing_pull_unlock(db);
  rep->calls = bq_client_calls(bq[0]) + bq_client_calls(bq[1]);
  rep->bytes = bq_client_bytes(bq[0]) + bq_client_bytes(bq[1]);
  bq_client_free(bq[0]);
  bq_client_free(bq[1]);
  if (rc != 0)
    log_msg(LOG_WARN, "billing sync failed: %s", err);
  if (db_billing_sync_record(db, rc == 0, rc == 0 ? "" : err, rep->days_read,
                             rep->rows_read, rep->bytes) != GG_OK &&
      rc == 0) {
    snprintf(err, errlen, "the database failed recording the sync");
    rc = -1;
  }
  billing_sync_publish(db);
  return rc;
}
