/*
 * metrics_internal.h — what the registry (lib/metrics.c), its building
 * blocks (metrics_series.c) and the leader's gauge sets
 * (metrics_gauges.c) share. Not part of the metrics interface
 * (metrics.h); nothing else includes it.
 */
#ifndef GPUGATE_METRICS_INTERNAL_H
#define GPUGATE_METRICS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/metrics_text.h"

#define LABELS_MAX 512 /* one rendered label set, escaped */

/* A label set being built: key="value",... */
struct lbuf {
  char s[LABELS_MAX];
  size_t len;
  bool overflow;
};

void family_clear(struct family *f);
/* Append name{labels} = 0; NULL when the family is full or memory is out. */
struct series *family_append(struct family *f, const char *labels);
/* The series name{labels}, added when new; NULL when it cannot be. */
struct series *family_lookup(struct family *f, const char *labels);
/* Append key="value" (value escaped) to b. */
void lb_add(struct lbuf *b, const char *key, const char *value);
void lb_init(struct lbuf *b);
void histogram_observe(struct histogram *h, double v);
void histogram_clear(struct histogram *h);

/* Guards every family and histogram of the registry. */
extern pthread_mutex_t metrics_lock;

/* The leader's published gauge families (metrics.c), swapped whole by
 * metrics_gauges.c. */
extern struct family metrics_pending_jobs, metrics_cq_usage, metrics_cq_nominal,
    metrics_cq_borrowing, metrics_fs_usage, metrics_fs_score, metrics_team_cost;

#endif
