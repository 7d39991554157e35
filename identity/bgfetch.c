/*
 * bgfetch.c — a cache fill run off its caller (see bgfetch.h).
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "identity/bgfetch.h"

void bgfetch_start(pthread_mutex_t *mu, void *(*fn)(void *), void *arg)
{
  pthread_attr_t attr;
  pthread_t t;
  bool spawned = false;

  if (pthread_attr_init(&attr) == 0) {
    spawned =
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
        pthread_create(&t, &attr, fn, arg) == 0;
    pthread_attr_destroy(&attr);
  }
  if (!spawned) {
    pthread_mutex_unlock(mu);
    (void)fn(arg);
    pthread_mutex_lock(mu);
  }
}

bool bgfetch_await(pthread_mutex_t *mu, pthread_cond_t *cv, long ms,
                   bool (*in_flight)(const char *key), const char *key)
{
  struct timespec dl;

  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += ms / 1000;
  dl.tv_nsec += (ms % 1000) * 1000000L;
  if (dl.tv_nsec >= 1000000000L) {
    dl.tv_sec++;
    dl.tv_nsec -= 1000000000L;
  }
  while (in_flight(key))
    if (pthread_cond_timedwait(cv, mu, &dl) == ETIMEDOUT)
      return in_flight(key);
  return false;
}
