/*
 * dispatch_worker.h — what the threads of control/dispatch.c (dispatchers)
 * and control/dispatch_sync.c (the status sync) share: the deployment-wide
 * mutation budget, the in-flight limits, the process's access token, the
 * stop flag; and each thread's own database connection, Batch client and
 * multi handle, with the wait that watches all of them at once.
 */
#ifndef GPUGATE_DISPATCH_WORKER_H
#define GPUGATE_DISPATCH_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "gcp/auth.h"
#include "gcp/batch_client.h"
#include "db/db.h"
#include "control/budget.h"
#include "control/control_config.h"
#include "control/dispatch_flow.h"

/* Owned by dispatch_start(); every worker borrows it. */
struct dispatch_shared {
  const struct control_config *cfg;
  atomic_bool stop;
  int wake[2]; /* a byte per worker wakes it */
  int poke[2]; /* a byte wakes a dispatcher: new creates (dispatch_poke) */
  struct budget *mutations;          /* per region, the deployment's */
  struct dispatch_flow *flow;        /* calls in flight per region */
  struct batch_token_source *tokens; /* shared by every worker's client */
};

struct dispatch_worker {
  struct dispatch_shared *d;
  pthread_t thread;
  bool started;
  struct db_conn conn;
  struct batch_client *batch;
  struct batch_multi *multi; /* the worker's calls in flight */
  bool listening;
  bool pokeable;    /* a dispatcher: its waits end on a poke too */
  unsigned rng;     /* retry jitter (batch_backoff_ms) */
  char claimer[96]; /* this worker's name on the leases it takes */
};

/* Microseconds on CLOCK_MONOTONIC. */
long long dispatch_now_us(void);

/*
 * (Re)connect w's database connection when it is not open, then LISTEN
 * on listen (a statement, or NULL). Returns 0, or -1 when the database
 * cannot be reached.
 */
int dispatch_connect(struct dispatch_worker *w, const char *listen);

/*
 * Move w's calls along and wait up to ms for one of them to end, a
 * NOTIFY on w's connection (drained here) or a stop. Returns at once when
 * an ended call is waiting to be taken (batch_multi_next()).
 */
void dispatch_wait(struct dispatch_worker *w, long ms);

/* Start fn(w) in a thread with w's own Batch client and multi handle. */
int dispatch_worker_start(struct dispatch_shared *d, struct dispatch_worker *w,
                          void *(*fn)(void *), char *err, size_t errlen);

/* Join w's thread (after the stop flag was set) and free what it owns. */
void dispatch_worker_stop(struct dispatch_worker *w);

/* The status sync's thread body (control/dispatch_sync.c). */
void *dispatch_sync_run(void *arg);

#endif
