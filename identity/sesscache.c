/*
 * sesscache.c — verified console sessions per replica, emptied when the
 * sessions' stamp moves (see sesscache.h). The entries are a tokencache
 * (keyed by the SHA-256 of the session id); this file adds the stamp: the
 * one read under way, when the last good one began, and the lock that
 * keeps a put with an old stamp from landing after the flush of a new one.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "identity/sesscache.h"

/* no read yet, far enough from any clock reading not to overflow */
#define NEVER (LLONG_MIN / 2)

struct sesscache {
  struct tokencache *entries; /* owned */
  /* puts hold it shared, a moved stamp's flush exclusively */
  pthread_rwlock_t lock;
  long long stamp; /* under lock: the last read's; -1 before any */
  /* the one stamp read under way */
  pthread_mutex_t checking;
  unsigned long forgets_at_begin; /* under checking */
  atomic_ulong forgets;           /* sesscache_forget calls */
  atomic_llong checked_ms;        /* when the last good read began */
};

struct sesscache *sesscache_new(size_t capacity)
{
  struct sesscache *c = calloc(1, sizeof(*c));

  if (!c)
    return NULL;
  c->entries = tokencache_new(capacity);
  if (!c->entries) {
    free(c);
    return NULL;
  }
  pthread_rwlock_init(&c->lock, NULL);
  pthread_mutex_init(&c->checking, NULL);
  c->stamp = -1;
  atomic_init(&c->forgets, 0);
  atomic_init(&c->checked_ms, NEVER);
  return c;
}

void sesscache_free(struct sesscache *c)
{
  if (!c)
    return;
  tokencache_free(c->entries);
  pthread_rwlock_destroy(&c->lock);
  pthread_mutex_destroy(&c->checking);
  free(c);
}

int sesscache_key(const struct sesscache *c, const char *sid,
                  unsigned char key[TOKENCACHE_KEY_LEN])
{
  return tokencache_key(c->entries, sid, strlen(sid), key);
}

/* Whether a read begun at checked_ms still vouches for the cache at
 * now_ms. */
static bool fresh(long long checked_ms, long long now_ms)
{
  return now_ms >= checked_ms && now_ms - checked_ms < SESSCACHE_CHECK_MS;
}

bool sesscache_check_begin(struct sesscache *c, long long now_ms)
{
  if (fresh(atomic_load(&c->checked_ms), now_ms))
    return false;
  if (pthread_mutex_trylock(&c->checking) != 0)
    return false;
  c->forgets_at_begin = atomic_load(&c->forgets);
  return true;
}

bool sesscache_check_end(struct sesscache *c, long long started_ms, bool ok,
                         long long stamp)
{
  bool moved = false;

  if (ok) {
    pthread_rwlock_wrlock(&c->lock);
    if (stamp != c->stamp) {
      moved = c->stamp != -1;
      tokencache_flush(c->entries);
      c->stamp = stamp;
    }
    pthread_rwlock_unlock(&c->lock);
    /* a forget during the read: the read may predate the end it asks
     * for, so it vouches for nothing */
    if (atomic_load(&c->forgets) == c->forgets_at_begin &&
        started_ms > atomic_load(&c->checked_ms))
      atomic_store(&c->checked_ms, started_ms);
  }
  pthread_mutex_unlock(&c->checking);
  return moved;
}

bool sesscache_get(struct sesscache *c,
                   const unsigned char key[TOKENCACHE_KEY_LEN], time_t now,
                   long long now_ms, struct auth_principal *out)
{
  if (!fresh(atomic_load(&c->checked_ms), now_ms))
    return false;
  return tokencache_get(c->entries, key, now, out);
}

void sesscache_put(struct sesscache *c,
                   const unsigned char key[TOKENCACHE_KEY_LEN], long long stamp,
                   time_t now, long long until, const struct auth_principal *p)
{
  if (until <= (long long)now)
    return;
  pthread_rwlock_rdlock(&c->lock);
  if (stamp == c->stamp && stamp >= 0)
    tokencache_put(c->entries, key, now, until, p);
  pthread_rwlock_unlock(&c->lock);
}

void sesscache_forget(struct sesscache *c)
{
  atomic_fetch_add(&c->forgets, 1);
  atomic_store(&c->checked_ms, NEVER);
}
