/*
 * metrics_text.h — the Prometheus text exposition (format 0.0.4) of the
 * registry's families and histograms, and the process_* metrics read from
 * /proc; the registry itself is metrics.c (its building blocks,
 * metrics_series.c).
 */
#ifndef GPUGATE_METRICS_TEXT_H
#define GPUGATE_METRICS_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#define MAX_BUCKETS 16

struct series {
  char *labels; /* owned; rendered label set, e.g. op="create",code="200" */
  double value;
};

struct family {
  const char *name; /* static */
  const char *type; /* "counter" or "gauge" */
  const char *help;
  bool zero_when_empty; /* unlabelled: render "name 0" before any sample */
  struct series *v;     /* owned */
  int n, cap;
};

struct histogram {
  const char *name;
  const char *help;
  const double *bounds; /* upper bounds, ascending; +Inf is implicit */
  int nb;
  unsigned long long in[MAX_BUCKETS]; /* per bucket, not cumulative */
  unsigned long long count;
  double sum;
};

/* A growing text buffer; failed once an allocation failed. */
struct out {
  char *buf;
  size_t len, cap;
  bool failed;
};

void metrics_put(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void metrics_text_family(struct out *o, const struct family *f);
void metrics_text_histogram(struct out *o, const struct histogram *h);
void metrics_text_process(struct out *o);

#endif
