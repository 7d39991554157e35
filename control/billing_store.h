/*
 * billing_store.h — the storing side of the BigQuery pull
 * (control/billing_sync.h): a thread of its own replaces days on the
 * pull's connection, one transaction each (db_billing_day_begin, a
 * db_billing_flush per batch, db_billing_day_commit), while the caller
 * fetches and parses the rows of the same day or of the next ones. The
 * caller queues a day's beginning, its batches and its end (commit, or
 * abort), in that order; the thread takes them in the same order.
 *
 * Memory is bounded: BILLING_STORE_BATCHES batches in all, filled by the
 * caller, queued, or being stored; the caller waits for an empty one.
 * Once the thread fails (the database), every later call says so, and the
 * day it was storing is rolled back: days committed before stay.
 */
#ifndef GPUGATE_SERVER_BILLING_STORE_H
#define GPUGATE_SERVER_BILLING_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "db/billing_sync.h"

#define BILLING_STORE_BATCHES 3 /* one filled, one queued, one storing */

struct db_conn;
struct db_billing_batch;
struct billing_store;

/* Start the thread on db (the caller's connection, outside a transaction;
 * the thread's until billing_store_finish). progress: a line per day
 * committed on stderr, "of" days in all. NULL when out of memory. */
struct billing_store *billing_store_start(struct db_conn *db, bool progress,
                                          size_t of);

/* An empty batch to fill (waiting for one), or NULL once the thread has
 * failed. */
struct db_billing_batch *billing_store_batch(struct billing_store *s);

/* Queue: the beginning of f's day (its accounts: those whose rows it
 * replaces); a filled batch of it (given back to the store, empty or not);
 * its end, committed with the export's figures f (when what was stored
 * reconciles with them: else rolled back and counted) and rows the count
 * of rows queued for it; or its end, rolled back. Each returns 0, or -1
 * once the thread has failed (the batch is taken back all the same). */
int billing_store_begin(struct billing_store *s,
                        const struct billing_day_figures *f);
int billing_store_put(struct billing_store *s, struct db_billing_batch *b);
int billing_store_commit(struct billing_store *s,
                         const struct billing_day_figures *f, long rows);
void billing_store_abort(struct billing_store *s);

/* Wait until the queue is done, stop the thread and free s: the days
 * committed and their rows, the days that did not reconcile and the first
 * of them ("D1, D2" into which). Returns 0, or -1 with err filled when the
 * thread failed. */
int billing_store_finish(struct billing_store *s, long *days, long *rows,
                         long *unreconciled, char *which, size_t whichlen,
                         char *err, size_t errlen);

#endif
