/*
 * budget.c — per-process leases on the deployment's Batch mutation budget
 * (see budget.h).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db/budget.h"
#include "control/budget.h"
#include "lib/log.h"

#define MAX_REGIONS 64

struct slot {
  char region[BUDGET_REGION_MAX];
  int tokens;               /* leased, unspent */
  long long valid_until_us; /* the leased tokens lapse then */
  long long empty_until_us; /* the shared bucket is empty until then */
};

struct budget {
  pthread_mutex_t mu;
  double rate;
  long burst;
  int lease; /* tokens asked per lease */
  struct slot slots[MAX_REGIONS];
  size_t n;
};

static long long now_us(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

struct budget *budget_new(double rate, long burst)
{
  struct budget *b = calloc(1, sizeof(*b));

  if (!b)
    return NULL;
  pthread_mutex_init(&b->mu, NULL);
  b->rate = rate;
  b->burst = burst;
  /* what the deployment earns in a lease's lifetime, at least one */
  b->lease = (int)ceil(rate * BUDGET_VALID_MS / 1000.0);
  if (b->lease < 1)
    b->lease = 1;
  if (b->lease > burst)
    b->lease = (int)burst;
  return b;
}

void budget_free(struct budget *b)
{
  if (!b)
    return;
  pthread_mutex_destroy(&b->mu);
  free(b);
}

/* Caller holds mu. NULL when the table is full or the name too long. */
static struct slot *slot_of(struct budget *b, const char *region)
{
  size_t i;

  for (i = 0; i < b->n; i++)
    if (!strcmp(b->slots[i].region, region))
      return &b->slots[i];
  if (b->n == MAX_REGIONS || strlen(region) >= BUDGET_REGION_MAX)
    return NULL;
  memset(&b->slots[b->n], 0, sizeof(b->slots[b->n]));
  snprintf(b->slots[b->n].region, BUDGET_REGION_MAX, "%s", region);
  return &b->slots[b->n++];
}

/*
 * Caller holds mu, s has no spendable token or fewer than want, and the
 * bucket is not known to be spent. Lease want - (tokens held) tokens into
 * s; 0, or -1 (database failure: *wait_ms set). A lease that falls short
 * means the shared bucket is spent: once its tokens are, the region waits
 * until the shortfall has refilled rather than asking again for each
 * token as it drips in (a lease is one round trip whatever it holds, and
 * meanwhile the claims go to the regions that have tokens).
 */
static int lease(struct budget *b, struct db_conn *c, struct slot *s,
                 long long now, int want, long *wait_ms)
{
  int have = s->tokens > 0 && now < s->valid_until_us ? s->tokens : 0;
  int granted = 0;
  char err[256];

  /* one lease at a time per process: the others wait a few ms for it
   * rather than each asking the database */
  if (db_budget_lease(c, s->region, want - have, b->rate, b->burst, &granted,
                      wait_ms, err, sizeof(err)) != 0) {
    log_msg(LOG_WARN, "budget: %s: %s", s->region, err);
    *wait_ms = 200;
    return -1;
  }
  now = now_us();
  /* tokens still held keep their earlier end: none outlives its lease */
  if (!have)
    s->valid_until_us = now + BUDGET_VALID_MS * 1000LL;
  s->tokens = have + granted;
  s->empty_until_us =
      granted < want - have
          ? now + (long long)(1e6 * (want - have - granted) / b->rate)
          : 0;
  if (granted == 0 && s->empty_until_us < now + *wait_ms * 1000LL)
    s->empty_until_us = now + *wait_ms * 1000LL;
  return 0;
}

bool budget_take(struct budget *b, struct db_conn *c, const char *region,
                 long *wait_ms)
{
  long long now = now_us();
  struct slot *s;
  bool ok = false;

  *wait_ms = 0;
  pthread_mutex_lock(&b->mu);
  s = slot_of(b, region);
  if (!s) {
    *wait_ms = 1000;
    goto out;
  }
  if (!(s->tokens > 0 && now < s->valid_until_us)) {
    if (now < s->empty_until_us) {
      *wait_ms = (long)((s->empty_until_us - now + 999) / 1000);
      goto out;
    }
    if (lease(b, c, s, now, b->lease, wait_ms) != 0)
      goto out;
  }
  if (s->tokens > 0) {
    s->tokens--;
    ok = true;
  } else {
    *wait_ms = (long)((s->empty_until_us - now_us() + 999) / 1000);
  }
out:
  pthread_mutex_unlock(&b->mu);
  return ok;
}

void budget_prefetch(struct budget *b, struct db_conn *c, const char *region,
                     int want)
{
  long long now = now_us();
  struct slot *s;
  long wait_ms;

  if (want > b->lease)
    want = b->lease;
  pthread_mutex_lock(&b->mu);
  s = slot_of(b, region);
  if (s && want > 0 && now >= s->empty_until_us &&
      !(s->tokens >= want && now < s->valid_until_us))
    lease(b, c, s, now, want, &wait_ms);
  pthread_mutex_unlock(&b->mu);
}

size_t budget_exhausted(struct budget *b, char (*regions)[BUDGET_REGION_MAX],
                        size_t max, long *next_ms)
{
  long long now = now_us(), next = 0;
  size_t i, n = 0;

  pthread_mutex_lock(&b->mu);
  for (i = 0; i < b->n && n < max; i++) {
    const struct slot *s = &b->slots[i];
    if (now >= s->empty_until_us || (s->tokens > 0 && now < s->valid_until_us))
      continue;
    snprintf(regions[n++], BUDGET_REGION_MAX, "%s", s->region);
    if (!next || s->empty_until_us < next)
      next = s->empty_until_us;
  }
  pthread_mutex_unlock(&b->mu);
  *next_ms = next ? (long)((next - now + 999) / 1000) : 0;
  return n;
}
