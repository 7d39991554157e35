/*
 * ratelimit.c — token buckets in a fixed open-addressing table.
 *
 * Keys are team names or regions, so the table stays small; when it is
 * full the oldest-touched bucket is reused rather than growing without
 * bound (a flood of made-up team names cannot exhaust memory: tokens are
 * verified before the limiter runs).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/ratelimit.h"

#define SLOTS 1024
#define PROBES 16

struct bucket {
  char key[RATELIMIT_KEY_MAX];
  double tokens;
  long long last_us;
};

struct ratelimit {
  pthread_mutex_t lock;
  double rate;  /* tokens per second */
  double burst; /* bucket size */
  struct bucket slots[SLOTS];
};

struct ratelimit *ratelimit_new(long rps, long burst)
{
  struct ratelimit *rl = calloc(1, sizeof(*rl));

  if (!rl)
    return NULL;
  pthread_mutex_init(&rl->lock, NULL);
  rl->rate = (double)rps;
  rl->burst = (double)burst;
  return rl;
}

void ratelimit_free(struct ratelimit *rl)
{
  if (!rl)
    return;
  pthread_mutex_destroy(&rl->lock);
  free(rl);
}

static unsigned hash(const char *s)
{
  unsigned h = 2166136261u; /* FNV-1a */

  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

/* The bucket's tokens at now_us: refilled since its last use, capped. */
static double tokens_at(const struct ratelimit *rl, const struct bucket *b,
                        long long now_us)
{
  double t = b->tokens + (double)(now_us - b->last_us) / 1e6 * rl->rate;

  return t > rl->burst ? rl->burst : t;
}

bool ratelimit_take(struct ratelimit *rl, const char *key, long long now_us,
                    long *retry_after_s)
{
  struct bucket *b = NULL, *oldest = NULL;
  unsigned h = hash(key);
  bool ok;
  int i;

  if (rl->rate <= 0)
    return true;
  pthread_mutex_lock(&rl->lock);
  for (i = 0; i < PROBES; i++) {
    struct bucket *s = &rl->slots[(h + (unsigned)i) % SLOTS];
    if (!strcmp(s->key, key)) {
      b = s;
      break;
    }
    if (!oldest || s->last_us < oldest->last_us)
      oldest = s;
  }
  if (!b) {
    b = oldest;
    memset(b, 0, sizeof(*b));
    snprintf(b->key, sizeof(b->key), "%s", key);
    b->tokens = rl->burst;
    b->last_us = now_us;
  }
  b->tokens = tokens_at(rl, b, now_us);
  b->last_us = now_us;
  ok = b->tokens >= 1.0;
  if (ok)
    b->tokens -= 1.0;
  else {
    /* whole seconds until one token has refilled, at least 1 */
    long secs = (long)ceil((1.0 - b->tokens) / rl->rate);
    *retry_after_s = secs < 1 ? 1 : secs;
  }
  pthread_mutex_unlock(&rl->lock);
  return ok;
}

size_t ratelimit_exhausted(struct ratelimit *rl, long long now_us,
                           char (*keys)[RATELIMIT_KEY_MAX], size_t max,
                           long long *next_us)
{
  size_t i, n = 0;

  *next_us = now_us;
  if (rl->rate <= 0)
    return 0;
  pthread_mutex_lock(&rl->lock);
  for (i = 0; i < SLOTS && n < max; i++) {
    const struct bucket *b = &rl->slots[i];
    double t;
    long long due;
    if (!b->key[0] || (t = tokens_at(rl, b, now_us)) >= 1.0)
      continue;
    due = now_us + (long long)ceil((1.0 - t) / rl->rate * 1e6);
    if (n == 0 || due < *next_us)
      *next_us = due;
    memcpy(keys[n++], b->key, sizeof(b->key));
  }
  pthread_mutex_unlock(&rl->lock);
  return n;
}
