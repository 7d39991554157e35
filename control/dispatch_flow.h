/*
 * dispatch_flow.h — how many Cloud Batch calls one replica keeps in flight
 * per region. Batch answers a create in a few hundred milliseconds, so a
 * region's mutation budget of r calls a second needs about r × latency
 * calls under way at once (Little's law); fewer leave budget unspent, many
 * more only queue at Batch. Each region's limit follows the latencies its
 * calls are observed to take:
 *
 *   limit = clamp(ceil(rate × latency × DISPATCH_FLOW_MARGIN),
 *                 DISPATCH_FLOW_MIN, DISPATCH_FLOW_CAP)
 *
 * with latency the slowest of the region's per-method moving averages
 * (DISPATCH_FLOW_PRIOR_S before any call ended), and at most
 * DISPATCH_FLOW_CAP calls in flight for all regions together. The margin
 * covers the spread of latencies around their mean.
 *
 * A call holds its region's slot from before it is sent until its outbox
 * row's outcome is recorded, follow-up calls included (a refused cancel's
 * read and delete). Thread-safe: one per process, shared by the dispatcher
 * threads and the status sync.
 */
#ifndef GPUGATE_DISPATCH_FLOW_H
#define GPUGATE_DISPATCH_FLOW_H

#include <stdbool.h>
#include <stddef.h>

#define DISPATCH_FLOW_MIN 4
#define DISPATCH_FLOW_CAP 256 /* per replica, all regions together */
#define DISPATCH_FLOW_MARGIN 1.5
#define DISPATCH_FLOW_PRIOR_S 0.25  /* assumed latency before any answer */
#define DISPATCH_FLOW_ALPHA 0.05    /* weight of a new latency sample */
#define DISPATCH_FLOW_REGION_MAX 64 /* bytes of a region name, NUL included */

/* The kinds of call whose latencies are followed. */
enum dispatch_method {
  DISPATCH_CREATE = 0,
  DISPATCH_GET,
  DISPATCH_LIST,
  DISPATCH_CANCEL,
  DISPATCH_DELETE,
  DISPATCH_METHODS
};

/*
 * The in-flight limit for rate calls a second at latency_s seconds each:
 * ceil(rate × latency_s × DISPATCH_FLOW_MARGIN) clamped to [floor, cap].
 * A rate or latency that is not positive gives floor. Pure.
 */
int dispatch_flow_limit(double rate, double latency_s, int floor, int cap);

/*
 * A moving average: prev moved alpha of the way to sample; sample alone
 * when prev < 0 (no sample yet). Pure.
 */
double dispatch_flow_ewma(double prev, double sample, double alpha);

struct dispatch_flow;

/* A flow for regions spending rate mutations a second each (the budget's
 * rate). NULL when out of memory. */
struct dispatch_flow *dispatch_flow_new(double rate);
void dispatch_flow_free(struct dispatch_flow *f);

/*
 * Count one call in region if the region is under its limit and the
 * replica under DISPATCH_FLOW_CAP. Returns false (nothing counted) when it
 * is not, or the region table is full.
 */
bool dispatch_flow_acquire(struct dispatch_flow *f, const char *region);

/* Give back a slot dispatch_flow_acquire() took. */
void dispatch_flow_release(struct dispatch_flow *f, const char *region);

/* One call of method in region took elapsed_ms (to its answer). */
void dispatch_flow_observe(struct dispatch_flow *f, const char *region,
                           enum dispatch_method method, long elapsed_ms);

/*
 * The regions at their limit now: up to max names into regions. Returns
 * the count.
 */
size_t dispatch_flow_full(struct dispatch_flow *f,
                          char (*regions)[DISPATCH_FLOW_REGION_MAX],
                          size_t max);

/*
 * How many calls of one region the replica may start now: the most free
 * slots of any region (DISPATCH_FLOW_MIN for a region not seen yet),
 * within what DISPATCH_FLOW_CAP leaves. A claim takes no more rows, so
 * rows of a single region never come back for want of a slot. >= 0.
 */
int dispatch_flow_room(struct dispatch_flow *f);

/* region's limit now (the prior's for a region not seen yet). */
int dispatch_flow_region_limit(struct dispatch_flow *f, const char *region);

#endif
