/*
 * metrics.c — a small Prometheus registry: labelled counters and gauges
 * in bounded tables, and fixed-bucket histograms, behind one mutex.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/metrics.h"

#define MAX_SERIES 512
#define NBUCKETS 12

static const double buckets[NBUCKETS] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

struct series {
  const char *metric; /* static name */
  char labels[192];   /* rendered label set, e.g. op="create",code="200" */
  double value;
};

struct histogram {
  const char *metric;
  unsigned long long counts[NBUCKETS];
  unsigned long long count;
  double sum;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct series series[MAX_SERIES];
static int n_series;
static struct histogram http_seconds = {
    "gpugate_http_request_duration_seconds", {0}, 0, 0};
static struct histogram cycle_seconds = {
    "gpugate_admission_cycle_seconds", {0}, 0, 0};

/* Label values are names, routes and numbers; escape anyway. */
static void label(char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void label(char *out, size_t len, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(out, len, fmt, ap);
  va_end(ap);
  for (; *out; out++)
    if (*out == '\\' || *out == '\n')
      *out = '_';
}

/* Add (or, with set, assign) v to metric{labels}. Caller holds lock. */
static void bump(const char *metric, const char *labels, double v, int set)
{
  int i;

  for (i = 0; i < n_series; i++)
    if (series[i].metric == metric && !strcmp(series[i].labels, labels))
      break;
  if (i == n_series) {
    if (n_series == MAX_SERIES)
      return; /* bounded: new series beyond the table are dropped */
    series[i].metric = metric;
    snprintf(series[i].labels, sizeof(series[i].labels), "%s", labels);
    series[i].value = 0;
    n_series++;
  }
  series[i].value = set ? v : series[i].value + v;
}

static void observe(struct histogram *h, double v)
{
  int b;

  for (b = 0; b < NBUCKETS; b++)
    if (v <= buckets[b])
      h->counts[b]++;
  h->count++;
  h->sum += v;
}

static const char m_http[] = "gpugate_http_requests_total";
static const char m_batch[] = "gpugate_batch_requests_total";
static const char m_backlog[] = "gpugate_dispatch_backlog";
static const char m_admitted[] = "gpugate_admitted_jobs_total";
static const char m_evicted[] = "gpugate_evicted_jobs_total";

void metrics_http(const char *route, const char *method, unsigned status,
                  double seconds)
{
  char l[192];

  label(l, sizeof(l), "route=\"%s\",method=\"%s\",code=\"%u\"", route, method,
        status);
  pthread_mutex_lock(&lock);
  bump(m_http, l, 1, 0);
  observe(&http_seconds, seconds);
  pthread_mutex_unlock(&lock);
}

void metrics_batch_call(const char *op, long http_status)
{
  char l[192];

  label(l, sizeof(l), "op=\"%s\",code=\"%ld\"", op, http_status);
  pthread_mutex_lock(&lock);
  bump(m_batch, l, 1, 0);
  pthread_mutex_unlock(&lock);
}

void metrics_dispatch_backlog(long rows)
{
  if (rows < 0)
    return;
  pthread_mutex_lock(&lock);
  bump(m_backlog, "", (double)rows, 1);
  pthread_mutex_unlock(&lock);
}

void metrics_admission_cycle(double seconds)
{
  pthread_mutex_lock(&lock);
  observe(&cycle_seconds, seconds);
  pthread_mutex_unlock(&lock);
}

void metrics_admitted(const char *cluster_queue, const char *flavor)
{
  char l[192];

  label(l, sizeof(l), "cluster_queue=\"%s\",flavor=\"%s\"", cluster_queue,
        flavor);
  pthread_mutex_lock(&lock);
  bump(m_admitted, l, 1, 0);
  pthread_mutex_unlock(&lock);
}

void metrics_evicted(const char *cluster_queue, const char *reason)
{
  char l[192];

  label(l, sizeof(l), "cluster_queue=\"%s\",reason=\"%s\"", cluster_queue,
        reason);
  pthread_mutex_lock(&lock);
  bump(m_evicted, l, 1, 0);
  pthread_mutex_unlock(&lock);
}

struct out {
  char *buf;
  size_t len, cap;
  int failed;
};

static void put(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
  va_list ap;
  int n;

  if (o->failed)
    return;
  for (;;) {
    va_start(ap, fmt);
    n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      o->failed = 1;
      return;
    }
    if ((size_t)n < o->cap - o->len) {
      o->len += (size_t)n;
      return;
    }
    {
      size_t cap = (o->cap + (size_t)n + 1) * 2;
      char *b = realloc(o->buf, cap);
      if (!b) {
        o->failed = 1;
        return;
      }
      o->buf = b;
      o->cap = cap;
    }
  }
}

static void family(struct out *o, const char *metric, const char *type,
                   const char *help)
{
  int i;

  put(o, "# HELP %s %s\n# TYPE %s %s\n", metric, help, metric, type);
  for (i = 0; i < n_series; i++)
    if (series[i].metric == metric)
      put(o, series[i].labels[0] ? "%s{%s} %.17g\n" : "%s%s %.17g\n", metric,
          series[i].labels, series[i].value);
}

static void histogram(struct out *o, const struct histogram *h,
                      const char *help)
{
  int b;

  put(o, "# HELP %s %s\n# TYPE %s histogram\n", h->metric, help, h->metric);
  for (b = 0; b < NBUCKETS; b++)
    put(o, "%s_bucket{le=\"%g\"} %llu\n", h->metric, buckets[b], h->counts[b]);
  put(o, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.17g\n%s_count %llu\n",
      h->metric, h->count, h->metric, h->sum, h->metric, h->count);
}

char *metrics_render(void)
{
  struct out o = {NULL, 0, 0, 0};

  o.buf = malloc(4096);
  if (!o.buf)
    return NULL;
  o.cap = 4096;
  o.buf[0] = '\0';
  pthread_mutex_lock(&lock);
  family(&o, m_http, "counter",
         "HTTP requests by route template, method "
         "and status.");
  histogram(&o, &http_seconds, "HTTP request duration.");
  family(&o, m_batch, "counter",
         "Cloud Batch API calls by operation and "
         "HTTP status (0: no response).");
  family(&o, m_backlog, "gauge", "Batch operations waiting in the outbox.");
  family(&o, m_admitted, "counter", "Jobs admitted by this replica.");
  family(&o, m_evicted, "counter", "Jobs evicted by this replica.");
  histogram(&o, &cycle_seconds, "Admission cycle duration.");
  pthread_mutex_unlock(&lock);
  if (o.failed) {
    free(o.buf);
    return NULL;
  }
  return o.buf;
}
