/*
 * billing_ingest.c — the billing-export ingest engine (see
 * billing_ingest.h): NDJSON lines in (billing_lines.c), each parsed and
 * checked (billing_row.c), valid rows stored in batches by db/billing.c,
 * a report of what was inserted, already known or rejected.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db/billing.h"
#include "billing/billing_ingest.h"
#include "lib/metrics.h"

/* ---- the engine ------------------------------------------------------------
 *
 * Parsing runs on the caller's thread; storing runs on a thread of the
 * engine's own (the flusher), on a connection of its own opened like the
 * borrowed one when the first batch is full: while PostgreSQL stores one
 * batch, the next one is parsed. There are two batches: the one being
 * filled and the one being stored; a full batch waits until the flusher is
 * idle, so memory stays bounded. Each batch is still one transaction.
 *
 * The borrowed connection stays free for its owner between calls (the
 * HTTP server rolls it back and releases it before it frees the engine of
 * an aborted request); it only stores batches itself when no second
 * connection can be opened, or when the whole input fits one batch
 * (stored by billing_ingest_finish, no thread needed).
 */

struct billing_ingest {
  struct db_conn *db;  /* borrowed */
  struct db_conn *own; /* owned: the flusher's */
  struct billing_splitter sp;
  struct billing_scratch *scratch;          /* owned */
  struct db_billing_batch *filling, *other; /* owned */
  json_t *rejected;                         /* owned: [{line, error}] */
  long n_rejected, parsed;
  bool failed, tried_thread;
  struct timespec started;

  /* shared with the flusher, under mu */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  bool thread_on, stop, busy;
  struct db_billing_batch *pending; /* handed over, being stored */
  long inserted, duplicates;
  bool db_failed, expect_new;
};

struct billing_ingest *billing_ingest_new(struct db_conn *db)
{
  struct billing_ingest *bi = calloc(1, sizeof(*bi));

  if (!bi)
    return NULL;
  bi->db = db;
  bi->expect_new = true;
  billing_splitter_init(&bi->sp, BILLING_LINE_MAX);
  pthread_mutex_init(&bi->mu, NULL);
  pthread_cond_init(&bi->cv, NULL);
  bi->scratch = billing_scratch_new();
  bi->filling = db_billing_batch_new();
  bi->other = db_billing_batch_new();
  bi->rejected = json_array();
  clock_gettime(CLOCK_MONOTONIC, &bi->started);
  if (!bi->scratch || !bi->filling || !bi->other || !bi->rejected) {
    billing_ingest_free(bi);
    return NULL;
  }
  return bi;
}

/* Count a stored batch (under mu). */
static void stored(struct billing_ingest *bi, enum gg_code code, size_t rows,
                   long inserted)
{
  if (code != GG_OK) {
    bi->db_failed = true;
    return;
  }
  bi->inserted += inserted;
  bi->duplicates += (long)rows - inserted;
  /* a batch without a known row: the next one is likely new too */
  bi->expect_new = inserted == (long)rows;
}

static void *flusher(void *arg)
{
  struct billing_ingest *bi = arg;

  pthread_mutex_lock(&bi->mu);
  for (;;) {
    struct db_billing_batch *b;
    enum gg_code code;
    size_t rows;
    long inserted;
    bool expect_new;
    while (!bi->pending && !bi->stop)
      pthread_cond_wait(&bi->cv, &bi->mu);
    if (!bi->pending)
      break;
    b = bi->pending;
    expect_new = bi->expect_new;
    bi->busy = true;
    pthread_mutex_unlock(&bi->mu);
    rows = db_billing_batch_rows(b);
    code = db_billing_flush(bi->own, b, expect_new, &inserted);
    if (code == GG_OK)
      metrics_billing_rows(inserted);
    pthread_mutex_lock(&bi->mu);
    stored(bi, code, rows, inserted);
    bi->busy = false;
    bi->pending = NULL;
    pthread_cond_broadcast(&bi->cv);
  }
  pthread_mutex_unlock(&bi->mu);
  return NULL;
}

/* Stop and join the flusher; with abandon, a batch handed over but not
 * yet begun is dropped. */
static void stop_flusher(struct billing_ingest *bi, bool abandon)
{
  if (!bi->thread_on)
    return;
  pthread_mutex_lock(&bi->mu);
  bi->stop = true;
  if (abandon && !bi->busy)
    bi->pending = NULL; /* handed over but not begun: dropped */
  pthread_cond_broadcast(&bi->cv);
  pthread_mutex_unlock(&bi->mu);
  pthread_join(bi->thread, NULL);
  bi->thread_on = false;
}

void billing_ingest_free(struct billing_ingest *bi)
{
  if (!bi)
    return;
  stop_flusher(bi, true);
  db_billing_disconnect(bi->own);
  billing_splitter_free(&bi->sp);
  billing_scratch_free(bi->scratch);
  db_billing_batch_free(bi->filling);
  db_billing_batch_free(bi->other);
  json_decref(bi->rejected);
  pthread_cond_destroy(&bi->cv);
  pthread_mutex_destroy(&bi->mu);
  free(bi);
}

/* Record a bad line. The message may quote the line (Jansson's "near
 * '...'"), so bytes that are not printable ASCII become '?', keeping the
 * report valid UTF-8 whatever the input. */
static void reject(struct billing_ingest *bi, long lineno, const char *error)
{
  char clean[256], *p;

  bi->n_rejected++;
  if (json_array_size(bi->rejected) >= BILLING_REJECTED_MAX)
    return;
  snprintf(clean, sizeof(clean), "%s", error);
  for (p = clean; *p; p++)
    if (*p < 0x20 || *p >= 0x7f)
      *p = '?';
  json_array_append_new(
      bi->rejected,
      json_pack("{s:I, s:s}", "line", (json_int_t)lineno, "error", clean));
}

/* Store the filling batch on the borrowed connection, now. */
static int flush_here(struct billing_ingest *bi)
{
  size_t rows = db_billing_batch_rows(bi->filling);
  enum gg_code code;
  long inserted;

  code = db_billing_flush(bi->db, bi->filling, bi->expect_new, &inserted);
  if (code == GG_OK)
    metrics_billing_rows(inserted);
  pthread_mutex_lock(&bi->mu);
  stored(bi, code, rows, inserted);
  pthread_mutex_unlock(&bi->mu);
  if (code != GG_OK)
    bi->failed = true;
  return code == GG_OK ? 0 : -1;
}

/* Wait until the flusher is idle; -1 when a batch failed. */
static int wait_idle(struct billing_ingest *bi)
{
  bool failed;

  pthread_mutex_lock(&bi->mu);
  while (bi->pending)
    pthread_cond_wait(&bi->cv, &bi->mu);
  failed = bi->db_failed;
  pthread_mutex_unlock(&bi->mu);
  if (failed)
    bi->failed = true;
  return failed ? -1 : 0;
}

/* The filling batch is complete: hand it to the flusher (started at the
 * first one) and go on with the other, or store it here when there is no
 * flusher. last: the end of input. */
static int flush(struct billing_ingest *bi, bool last)
{
  struct db_billing_batch *b = bi->filling;

  if (db_billing_batch_rows(b) == 0)
    return 0;
  if (!bi->tried_thread && !last) {
    bi->tried_thread = true;
    bi->own = db_billing_connect_like(bi->db);
    if (bi->own && pthread_create(&bi->thread, NULL, flusher, bi) == 0) {
      bi->thread_on = true;
    } else {
      db_billing_disconnect(bi->own);
      bi->own = NULL;
    }
  }
  if (!bi->thread_on)
    return flush_here(bi);
  if (wait_idle(bi) != 0)
    return -1;
  pthread_mutex_lock(&bi->mu);
  bi->filling = bi->other;
  bi->other = b;
  bi->pending = b;
  pthread_cond_broadcast(&bi->cv);
  pthread_mutex_unlock(&bi->mu);
  return 0;
}

static bool blank(const char *s, size_t n)
{
  size_t i;

  for (i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
      return false;
  return true;
}

/* billing_line_fn: one line of input. */
static int on_line(void *ctx, long lineno, const char *line, size_t len,
                   bool too_long)
{
  struct billing_ingest *bi = ctx;
  struct billing_row row;
  const char *canon;
  size_t canon_len;
  char err[256];
  int rc;

  if (too_long) {
    reject(bi, lineno, "line longer than 1 MiB");
    return 0;
  }
  if (lineno == 1 && len >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3)) {
    line += 3; /* a UTF-8 byte order mark */
    len -= 3;
  }
  if (blank(line, len))
    return 0;
  if (billing_parse_row_unhashed(bi->scratch, line, len, &row, &canon,
                                 &canon_len, err, sizeof(err)) != 0) {
    reject(bi, lineno, err);
    return 0;
  }
  rc = db_billing_batch_add_canonical(bi->filling, &row.db, canon, canon_len);
  billing_row_clear(&row);
  if (rc != 0) {
    bi->failed = true;
    return -1;
  }
  bi->parsed++;
  if (db_billing_batch_rows(bi->filling) >= BILLING_BATCH_ROWS ||
      db_billing_batch_bytes(bi->filling) >= BILLING_BATCH_BYTES)
    return flush(bi, false);
  return 0;
}

int billing_ingest_feed(struct billing_ingest *bi, const char *data, size_t n)
{
  if (bi->failed)
    return -1;
  if (billing_splitter_feed(&bi->sp, data, n, on_line, bi) != 0)
    bi->failed = true;
  return bi->failed ? -1 : 0;
}

json_t *billing_ingest_finish(struct billing_ingest *bi)
{
  json_t *report;

  if (bi->failed)
    return NULL;
  if (billing_splitter_finish(&bi->sp, on_line, bi) != 0 ||
      flush(bi, true) != 0 || (bi->thread_on && wait_idle(bi) != 0)) {
    bi->failed = true;
    return NULL;
  }
  stop_flusher(bi, false);
  report = json_pack("{s:I, s:I, s:O, s:I, s:b}", "inserted",
                     (json_int_t)bi->inserted, "duplicates",
                     (json_int_t)bi->duplicates, "rejected", bi->rejected,
                     "rejected_count", (json_int_t)bi->n_rejected, "truncated",
                     bi->n_rejected > (long)json_array_size(bi->rejected));
  return report;
}

void billing_ingest_progress(const struct billing_ingest *bi, long *rows,
                             double *seconds)
{
  struct timespec now;

  clock_gettime(CLOCK_MONOTONIC, &now);
  *rows = bi->parsed;
  *seconds = (double)(now.tv_sec - bi->started.tv_sec) +
             (double)(now.tv_nsec - bi->started.tv_nsec) / 1e9;
}

long billing_ingest_committed(const struct billing_ingest *bi)
{
  pthread_mutex_t *mu = (pthread_mutex_t *)&bi->mu;
  long n;

  pthread_mutex_lock(mu);
  n = bi->inserted + bi->duplicates;
  pthread_mutex_unlock(mu);
  return n;
}
