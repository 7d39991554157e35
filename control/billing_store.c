/*
 * billing_store.c — the BigQuery pull's storing thread (see
 * billing_store.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/billing.h"
#include "db/billing_sync.h"
#include "control/billing_store.h"
#include "lib/log.h"
#include "lib/metrics.h"

#define QUEUE_MAX 64 /* items queued (a day is 2 + its batches) */

enum kind { BEGIN, BATCH, COMMIT, ABORT, STOP };

struct item {
  enum kind kind;
  struct db_billing_batch *batch;  /* BATCH */
  struct billing_day_figures figs; /* BEGIN (its day), COMMIT */
  long rows;                       /* COMMIT */
};

struct billing_store {
  struct db_conn *db;
  bool progress;
  size_t of;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* an item queued, a batch freed, the queue drained */
  struct item queue[QUEUE_MAX];
  size_t head, len;
  struct db_billing_batch *batches[BILLING_STORE_BATCHES];
  struct db_billing_batch *free_[BILLING_STORE_BATCHES];
  size_t n_free;
  bool failed;
  char err[256];
  long days, rows;             /* committed */
  long unreconciled;           /* days rolled back: not reconciled */
  char unreconciled_days[128]; /* the first of them, "D1, D2" */
};

/* The thread's work on one item, without the lock; in_tx: a day's
 * transaction is open. false when the database failed (the day, if any,
 * rolled back). */
static bool handle(struct billing_store *s, struct item *it, bool *in_tx)
{
  enum gg_code code = GG_OK;
  struct billing_day_stored stored;
  bool reconciled;
  long inserted = 0;

  switch (it->kind) {
  case BEGIN:
    code = db_billing_day_begin(s->db, it->figs.day, it->figs.accounts);
    *in_tx = code == GG_OK;
    if (code != GG_OK)
      snprintf(s->err, sizeof(s->err), "the database failed replacing %s",
               it->figs.day);
    break;
  case BATCH:
    /* the day's rows were deleted: every row is new (a duplicate within
     * the day makes the flush look rows up and try again) */
    code = db_billing_flush(s->db, it->batch, true, &inserted);
    if (code == GG_OK)
      metrics_billing_rows(inserted);
    else
      snprintf(s->err, sizeof(s->err), "the database failed storing rows");
    break;
  case COMMIT:
    *in_tx = false;
    code = db_billing_day_commit(s->db, &it->figs, &reconciled, &stored);
    if (code != GG_OK) {
      snprintf(s->err, sizeof(s->err), "the database failed committing %s",
               it->figs.day);
      break;
    }
    if (!reconciled) {
      size_t n = strlen(s->unreconciled_days);
      if (n + 14 < sizeof(s->unreconciled_days))
        snprintf(s->unreconciled_days + n, sizeof(s->unreconciled_days) - n,
                 "%s%s", n ? ", " : "", it->figs.day);
      s->unreconciled++;
      log_msg(LOG_WARN,
              "billing sync: %s does not reconcile: the export has %ld rows, "
              "cost %s, credits %s; stored %ld rows, cost %s, credits %s "
              "(rolled back)",
              it->figs.day, it->figs.rows, it->figs.cost, it->figs.credits,
              stored.rows, stored.cost, stored.credits);
      if (s->progress)
        fprintf(stderr, "%s: not reconciled (rolled back)\n", it->figs.day);
      break;
    }
    s->days++;
    s->rows += it->rows;
    if (s->progress)
      fprintf(stderr, "%s: %ld rows (%ld of %zu)\n", it->figs.day, it->rows,
              s->days, s->of);
    break;
  case ABORT:
    if (*in_tx)
      db_billing_day_abort(s->db);
    *in_tx = false;
    break;
  case STOP:
    break;
  }
  if (code != GG_OK && *in_tx) {
    db_billing_day_abort(s->db);
    *in_tx = false;
  }
  return code == GG_OK;
}

static void *run(void *arg)
{
  struct billing_store *s = arg;
  bool in_tx = false, failed, ok = true;

  pthread_mutex_lock(&s->mu);
  for (;;) {
    struct item it;
    while (s->len == 0)
      pthread_cond_wait(&s->cv, &s->mu);
    it = s->queue[s->head];
    s->head = (s->head + 1) % QUEUE_MAX;
    s->len--;
    failed = s->failed;
    pthread_mutex_unlock(&s->mu);
    if (!failed && it.kind != STOP) {
      ok = handle(s, &it, &in_tx);
    } else if (it.kind == ABORT && in_tx) {
      db_billing_day_abort(s->db);
      in_tx = false;
    }
    if (it.batch)
      db_billing_batch_clear(it.batch); /* a flush empties it; a skip too */
    pthread_mutex_lock(&s->mu);
    if (it.batch)
      s->free_[s->n_free++] = it.batch;
    if (!ok)
      s->failed = true;
    pthread_cond_broadcast(&s->cv);
    if (it.kind == STOP)
      break;
  }
  pthread_mutex_unlock(&s->mu);
  if (in_tx) /* stopped inside a day: never committed */
    db_billing_day_abort(s->db);
  return NULL;
}

static void store_free(struct billing_store *s)
{
  size_t i;

  for (i = 0; i < BILLING_STORE_BATCHES; i++)
    db_billing_batch_free(s->batches[i]);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}

struct billing_store *billing_store_start(struct db_conn *db, bool progress,
                                          size_t of)
{
  struct billing_store *s = calloc(1, sizeof(*s));
  size_t i;

  if (!s)
    return NULL;
  s->db = db;
  s->progress = progress;
  s->of = of;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  for (i = 0; i < BILLING_STORE_BATCHES; i++) {
    s->batches[i] = db_billing_batch_new();
    if (!s->batches[i]) {
      store_free(s);
      return NULL;
    }
    s->free_[s->n_free++] = s->batches[i];
  }
  if (pthread_create(&s->thread, NULL, run, s) != 0) {
    store_free(s);
    return NULL;
  }
  return s;
}

/* Queue it (waiting for room); 0, or -1 once the thread has failed. */
static int enqueue(struct billing_store *s, const struct item *it)
{
  int rc;

  pthread_mutex_lock(&s->mu);
  while (s->len == QUEUE_MAX)
    pthread_cond_wait(&s->cv, &s->mu);
  s->queue[(s->head + s->len) % QUEUE_MAX] = *it;
  s->len++;
  rc = s->failed ? -1 : 0;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

struct db_billing_batch *billing_store_batch(struct billing_store *s)
{
  struct db_billing_batch *b = NULL;

  pthread_mutex_lock(&s->mu);
  while (s->n_free == 0 && !s->failed)
    pthread_cond_wait(&s->cv, &s->mu);
  if (!s->failed)
    b = s->free_[--s->n_free];
  pthread_mutex_unlock(&s->mu);
  return b;
}

int billing_store_begin(struct billing_store *s,
                        const struct billing_day_figures *f)
{
  struct item it;

  memset(&it, 0, sizeof(it));
  it.kind = BEGIN;
  it.figs = *f;
  return enqueue(s, &it);
}

int billing_store_put(struct billing_store *s, struct db_billing_batch *b)
{
  struct item it;

  memset(&it, 0, sizeof(it));
  it.kind = BATCH;
  it.batch = b;
  return enqueue(s, &it);
}

int billing_store_commit(struct billing_store *s,
                         const struct billing_day_figures *f, long rows)
{
  struct item it;

  memset(&it, 0, sizeof(it));
  it.kind = COMMIT;
  it.figs = *f;
  it.rows = rows;
  return enqueue(s, &it);
}

void billing_store_abort(struct billing_store *s)
{
  struct item it;

  memset(&it, 0, sizeof(it));
  it.kind = ABORT;
  enqueue(s, &it);
}

int billing_store_finish(struct billing_store *s, long *days, long *rows,
                         long *unreconciled, char *which, size_t whichlen,
                         char *err, size_t errlen)
{
  struct item it;
  int rc;

  memset(&it, 0, sizeof(it));
  it.kind = STOP;
  enqueue(s, &it);
  pthread_join(s->thread, NULL);
  *days = s->days;
  *rows = s->rows;
  *unreconciled = s->unreconciled;
  snprintf(which, whichlen, "%s", s->unreconciled_days);
  rc = s->failed ? -1 : 0;
  if (s->failed)
    snprintf(err, errlen, "%s", s->err);
  store_free(s);
  return rc;
}
