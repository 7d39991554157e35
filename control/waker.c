/*
 * waker.c — coalesced admission wake-ups after submissions (see waker.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "db/db.h"
#include "db/jobs.h"
#include "lib/log.h"
#include "control/waker.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static bool running, stopping, poked;
static pthread_t thread;
static const struct control_config *config;

static void sleep_ms(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void *run(void *arg)
{
  PGconn *pg = NULL;
  char err[256];
  bool stop = false;

  (void)arg;
  while (!stop) {
    pthread_mutex_lock(&lock);
    while (!poked && !stopping)
      pthread_cond_wait(&cond, &lock);
    stop = stopping;
    poked = false;
    pthread_mutex_unlock(&lock);
    if (!pg)
      pg = db_connect(config->direct_database_url, err, sizeof(err));
    if (pg && db_wake_admission(pg, err, sizeof(err)) != 0) {
      log_msg(LOG_WARN, "admission wake-up: %s", err);
      PQfinish(pg);
      pg = NULL;
    }
    /* the submissions of the next few ms share one wake-up */
    if (!stop)
      sleep_ms(WAKER_MIN_GAP_MS);
  }
  PQfinish(pg);
  return NULL;
}

int waker_start(const struct control_config *cfg)
{
  config = cfg;
  stopping = false;
  poked = false;
  if (pthread_create(&thread, NULL, run, NULL) != 0)
    return -1;
  pthread_mutex_lock(&lock);
  running = true;
  pthread_mutex_unlock(&lock);
  return 0;
}

void waker_poke(void)
{
  pthread_mutex_lock(&lock);
  if (running && !poked) {
    poked = true;
    pthread_cond_signal(&cond);
  }
  pthread_mutex_unlock(&lock);
}

void waker_stop(void)
{
  bool was;

  pthread_mutex_lock(&lock);
  was = running;
  running = false;
  stopping = true;
  pthread_cond_signal(&cond);
  pthread_mutex_unlock(&lock);
  if (was)
    pthread_join(thread, NULL);
}
