/*
 * metrics.h — process-wide counters, gauges and histograms for /metrics
 * (Prometheus text format). Label sets are bounded: routes are their
 * templates, Batch operations a fixed list, codes HTTP statuses.
 * All functions are thread-safe.
 */
#ifndef GPUGATE_METRICS_H
#define GPUGATE_METRICS_H

#include <stddef.h>

/* One HTTP request: its route template (or "(none)"), method, status and
 * duration. */
void metrics_http(const char *route, const char *method, unsigned status,
                  double seconds);

/* One Cloud Batch call (op: create, get, list, cancel, delete) and the
 * HTTP status it got (0: no response). */
void metrics_batch_call(const char *op, long http_status);

/* Outbox rows waiting to be sent (-1: unknown, ignored). */
void metrics_dispatch_backlog(long rows);

/* One admission cycle: how long it took, admissions and evictions. */
void metrics_admission_cycle(double seconds);
void metrics_admitted(const char *cluster_queue, const char *flavor);
void metrics_evicted(const char *cluster_queue, const char *reason);

/*
 * The whole exposition as a new NUL-terminated string (caller frees), or
 * NULL on allocation failure.
 */
char *metrics_render(void);

#endif
