/*
 * dispatch_flow.c — per-region in-flight limits from observed latencies
 * (see dispatch_flow.h).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/dispatch_flow.h"

#define MAX_REGIONS 64

struct region {
  char name[DISPATCH_FLOW_REGION_MAX];
  int in_flight;
  double latency_s[DISPATCH_METHODS]; /* moving averages; < 0: none yet */
};

struct dispatch_flow {
  pthread_mutex_t mu;
  double rate;
  int total; /* in flight, all regions */
  struct region regions[MAX_REGIONS];
  size_t n;
};

int dispatch_flow_limit(double rate, double latency_s, int floor, int cap)
{
  double want;

  if (!(rate > 0) || !(latency_s > 0))
    return floor;
  want = ceil(rate * latency_s * DISPATCH_FLOW_MARGIN);
  if (want < floor)
    return floor;
  if (want > cap)
    return cap;
  return (int)want;
}

double dispatch_flow_ewma(double prev, double sample, double alpha)
{
  if (prev < 0)
    return sample;
  return prev + alpha * (sample - prev);
}

struct dispatch_flow *dispatch_flow_new(double rate)
{
  struct dispatch_flow *f = calloc(1, sizeof(*f));

  if (!f)
    return NULL;
  pthread_mutex_init(&f->mu, NULL);
  f->rate = rate;
  return f;
}

void dispatch_flow_free(struct dispatch_flow *f)
{
  if (!f)
    return;
  pthread_mutex_destroy(&f->mu);
  free(f);
}

/* Caller holds mu. NULL when the table is full or the name too long. */
static struct region *region_of(struct dispatch_flow *f, const char *name)
{
  struct region *r;
  size_t i;
  int m;

  for (i = 0; i < f->n; i++)
    if (!strcmp(f->regions[i].name, name))
      return &f->regions[i];
  if (f->n == MAX_REGIONS || strlen(name) >= DISPATCH_FLOW_REGION_MAX)
    return NULL;
  r = &f->regions[f->n++];
  memset(r, 0, sizeof(*r));
  snprintf(r->name, sizeof(r->name), "%s", name);
  for (m = 0; m < DISPATCH_METHODS; m++)
    r->latency_s[m] = -1;
  return r;
}

/* Caller holds mu. */
static int limit_of(const struct dispatch_flow *f, const struct region *r)
{
  double latency = -1;
  int m;

  for (m = 0; r && m < DISPATCH_METHODS; m++)
    if (r->latency_s[m] > latency)
      latency = r->latency_s[m];
  if (latency < 0)
    latency = DISPATCH_FLOW_PRIOR_S;
  return dispatch_flow_limit(f->rate, latency, DISPATCH_FLOW_MIN,
                             DISPATCH_FLOW_CAP);
}

bool dispatch_flow_acquire(struct dispatch_flow *f, const char *region)
{
  struct region *r;
  bool ok = false;

  pthread_mutex_lock(&f->mu);
  r = region_of(f, region);
  if (r && f->total < DISPATCH_FLOW_CAP && r->in_flight < limit_of(f, r)) {
    r->in_flight++;
    f->total++;
    ok = true;
  }
  pthread_mutex_unlock(&f->mu);
  return ok;
}

void dispatch_flow_release(struct dispatch_flow *f, const char *region)
{
  struct region *r;

  pthread_mutex_lock(&f->mu);
  r = region_of(f, region);
  if (r && r->in_flight > 0) {
    r->in_flight--;
    f->total--;
  }
  pthread_mutex_unlock(&f->mu);
}

void dispatch_flow_observe(struct dispatch_flow *f, const char *region,
                           enum dispatch_method method, long elapsed_ms)
{
  struct region *r;

  if (method < 0 || method >= DISPATCH_METHODS || elapsed_ms < 0)
    return;
  pthread_mutex_lock(&f->mu);
  r = region_of(f, region);
  if (r)
    r->latency_s[method] = dispatch_flow_ewma(
        r->latency_s[method], (double)elapsed_ms / 1000.0, DISPATCH_FLOW_ALPHA);
  pthread_mutex_unlock(&f->mu);
}

size_t dispatch_flow_full(struct dispatch_flow *f,
                          char (*regions)[DISPATCH_FLOW_REGION_MAX], size_t max)
{
  size_t i, n = 0;

  pthread_mutex_lock(&f->mu);
  for (i = 0; i < f->n && n < max; i++)
    if (f->regions[i].in_flight >= limit_of(f, &f->regions[i]))
      snprintf(regions[n++], DISPATCH_FLOW_REGION_MAX, "%s",
               f->regions[i].name);
  pthread_mutex_unlock(&f->mu);
  return n;
}

int dispatch_flow_room(struct dispatch_flow *f)
{
  int room, best = DISPATCH_FLOW_MIN; /* a region not seen yet */
  size_t i;

  pthread_mutex_lock(&f->mu);
  for (i = 0; i < f->n; i++) {
    int free_slots = limit_of(f, &f->regions[i]) - f->regions[i].in_flight;
    if (free_slots > best)
      best = free_slots;
  }
  room = DISPATCH_FLOW_CAP - f->total;
  pthread_mutex_unlock(&f->mu);
  if (room > best)
    room = best;
  return room > 0 ? room : 0;
}

int dispatch_flow_region_limit(struct dispatch_flow *f, const char *region)
{
  int limit;

  pthread_mutex_lock(&f->mu);
  limit = limit_of(f, region_of(f, region));
  pthread_mutex_unlock(&f->mu);
  return limit;
}
