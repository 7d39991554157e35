/*
 * dispatch_worker.c — a dispatch thread's connection, Batch client, multi
 * handle and wait (see dispatch_worker.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control/dispatch_worker.h"

long long dispatch_now_us(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

int dispatch_connect(struct dispatch_worker *w, const char *listen)
{
  char err[256];

  if (w->conn.pg && PQstatus(w->conn.pg) == CONNECTION_OK)
    return 0;
  PQfinish(w->conn.pg);
  w->conn.pg = db_connect(w->d->cfg->direct_database_url, err, sizeof(err));
  w->conn.n_prepared = 0;
  w->listening = false;
  if (!w->conn.pg)
    return -1;
  if (listen) {
    PGresult *res = PQexec(w->conn.pg, listen);
    w->listening = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
  }
  return 0;
}

void dispatch_wait(struct dispatch_worker *w, long ms)
{
  int fds[3];
  bool ready[3] = {false, false, false};
  unsigned n = 0;
  int pg = -1, poke = -1;
  PGnotify *note;
  char drain[16];

  /* once stopping, only the calls still under way matter (and the wake
   * byte, left unread, would end every wait at once) */
  if (!atomic_load(&w->d->stop)) {
    fds[n++] = w->d->wake[0];
    if (w->pokeable && w->d->poke[0] >= 0) {
      poke = (int)n;
      fds[n++] = w->d->poke[0];
    }
    if (w->conn.pg && w->listening) {
      pg = (int)n;
      fds[n++] = PQsocket(w->conn.pg);
    }
  }
  if (ms > 600000)
    ms = 600000;
  if (batch_multi_poll(w->multi, fds, ready, n, (int)(ms > 0 ? ms : 0)) != 0)
    return;
  if (n && ready[0] && read(w->d->wake[0], drain, 1) < 0) {
    /* the stop flag is what matters */
  }
  if (poke >= 0 && ready[poke] && read(w->d->poke[0], drain, 1) < 0) {
    /* another dispatcher took it */
  }
  if (pg >= 0 && ready[pg] && PQconsumeInput(w->conn.pg))
    while ((note = PQnotifies(w->conn.pg)) != NULL)
      PQfreemem(note);
}

int dispatch_worker_start(struct dispatch_shared *d, struct dispatch_worker *w,
                          void *(*fn)(void *), char *err, size_t errlen)
{
  char host[64] = "";

  w->d = d;
  w->rng = (unsigned)dispatch_now_us() ^ (unsigned)(uintptr_t)w;
  if (gethostname(host, sizeof(host) - 1) != 0)
    snprintf(host, sizeof(host), "gpugate");
  snprintf(w->claimer, sizeof(w->claimer), "%.63s/%ld/%p/%lld", host,
           (long)getpid(), (void *)w, dispatch_now_us());
  w->batch = batch_client_new_shared(&d->cfg->gcp, d->tokens, err, errlen);
  if (!w->batch)
    return -1;
  w->multi = batch_multi_new(w->batch);
  if (!w->multi) {
    snprintf(err, errlen, "out of memory");
    batch_client_free(w->batch);
    w->batch = NULL;
    return -1;
  }
  if (pthread_create(&w->thread, NULL, fn, w) != 0) {
    snprintf(err, errlen, "cannot start a thread");
    batch_multi_free(w->multi);
    batch_client_free(w->batch);
    w->multi = NULL;
    w->batch = NULL;
    return -1;
  }
  w->started = true;
  return 0;
}

void dispatch_worker_stop(struct dispatch_worker *w)
{
  if (!w->started)
    return;
  pthread_join(w->thread, NULL);
  batch_multi_free(w->multi); /* before the client it borrows */
  batch_client_free(w->batch);
  PQfinish(w->conn.pg);
  w->conn.pg = NULL;
  w->multi = NULL;
  w->batch = NULL;
  w->started = false;
}
