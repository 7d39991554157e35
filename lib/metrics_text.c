/*
 * metrics_text.c — the Prometheus text exposition, format 0.0.4: label
 * values arrive escaped (metrics.c), sample values are the shortest of
 * %.15g / %.17g that reads back exactly, with +Inf, -Inf and NaN spelled as
 * the format wants; and the process_* metrics from Linux /proc.
 */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/metrics_text.h"

void metrics_put(struct out *o, const char *fmt, ...)
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
      o->failed = true;
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
        o->failed = true;
        return;
      }
      o->buf = b;
      o->cap = cap;
    }
  }
}

/* A sample value as the format spells it. */
static const char *value_text(char *buf, size_t len, double v)
{
  if (isnan(v))
    return "NaN";
  if (isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  snprintf(buf, len, "%.15g", v);
  if (strtod(buf, NULL) != v)
    snprintf(buf, len, "%.17g", v);
  return buf;
}

static void header(struct out *o, const char *name, const char *type,
                   const char *help)
{
  metrics_put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metrics_text_family(struct out *o, const struct family *f)
{
  char v[40];
  int i;

  header(o, f->name, f->type, f->help);
  if (f->n == 0 && f->zero_when_empty)
    metrics_put(o, "%s 0\n", f->name);
  for (i = 0; i < f->n; i++)
    metrics_put(o, f->v[i].labels[0] ? "%s{%s} %s\n" : "%s%s %s\n", f->name,
                f->v[i].labels, value_text(v, sizeof(v), f->v[i].value));
}

void metrics_text_histogram(struct out *o, const struct histogram *h)
{
  char v[40];
  unsigned long long cum = 0;
  int b;

  header(o, h->name, "histogram", h->help);
  for (b = 0; b < h->nb; b++) {
    cum += h->in[b];
    metrics_put(o, "%s_bucket{le=\"%s\"} %llu\n", h->name,
                value_text(v, sizeof(v), h->bounds[b]), cum);
  }
  metrics_put(o, "%s_bucket{le=\"+Inf\"} %llu\n", h->name, h->count);
  metrics_put(o, "%s_sum %s\n", h->name, value_text(v, sizeof(v), h->sum));
  metrics_put(o, "%s_count %llu\n", h->name, h->count);
}

/* ---- process metrics (Linux /proc)
 * ------------------------------------------- */

static double start_time = -1;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;

/* Fields of /proc/self/stat after the command name: [0] is field 3
 * (state), so utime (14) is [11], stime [12], starttime (22) [19]. */
static int self_stat(unsigned long long fields[20])
{
  char buf[1024], *p;
  FILE *f = fopen("/proc/self/stat", "r");
  size_t n;
  int i;

  if (!f)
    return -1;
  n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  p = strrchr(buf, ')');
  if (!p)
    return -1;
  p += 2; /* ") " */
  for (i = 0; i < 20; i++) {
    char *end;
    while (*p == ' ')
      p++;
    if (i == 0) { /* the state letter */
      fields[i] = 0;
      p++;
      continue;
    }
    fields[i] = strtoull(p, &end, 10);
    if (end == p)
      return -1;
    p = end;
  }
  return 0;
}

static void find_start_time(void)
{
  unsigned long long st[20];
  char line[256];
  long ticks = sysconf(_SC_CLK_TCK);
  FILE *f;

  if (ticks <= 0 || self_stat(st) != 0)
    return;
  f = fopen("/proc/stat", "r");
  if (!f)
    return;
  while (fgets(line, sizeof(line), f))
    if (!strncmp(line, "btime ", 6)) {
      start_time =
          (double)strtoull(line + 6, NULL, 10) + (double)st[19] / (double)ticks;
      break;
    }
  fclose(f);
}

void metrics_text_process(struct out *o)
{
  unsigned long long st[20], vm = 0, rss = 0;
  long page = sysconf(_SC_PAGESIZE), ticks = sysconf(_SC_CLK_TCK);
  char v[40];
  FILE *f;
  DIR *d;

  pthread_once(&start_once, find_start_time);
  if (ticks > 0 && self_stat(st) == 0) {
    header(o, "process_cpu_seconds_total", "counter",
           "Total user and system CPU time spent in seconds.");
    metrics_put(
        o, "process_cpu_seconds_total %s\n",
        value_text(v, sizeof(v), (double)(st[11] + st[12]) / (double)ticks));
  }
  f = fopen("/proc/self/statm", "r");
  if (f) {
    char line[128], *end;
    if (fgets(line, sizeof(line), f) && page > 0) {
      vm = strtoull(line, &end, 10);
      rss = strtoull(end, NULL, 10);
      header(o, "process_virtual_memory_bytes", "gauge",
             "Virtual memory size in bytes.");
      metrics_put(o, "process_virtual_memory_bytes %llu\n",
                  vm * (unsigned long long)page);
      header(o, "process_resident_memory_bytes", "gauge",
             "Resident memory size in bytes.");
      metrics_put(o, "process_resident_memory_bytes %llu\n",
                  rss * (unsigned long long)page);
    }
    fclose(f);
  }
  d = opendir("/proc/self/fd");
  if (d) {
    long fds = -1; /* not counting the directory's own descriptor */
    while (readdir(d))
      fds++;
    closedir(d);
    fds -= 2; /* . and .. */
    header(o, "process_open_fds", "gauge", "Number of open file descriptors.");
    metrics_put(o, "process_open_fds %ld\n", fds > 0 ? fds : 0);
  }
  if (start_time >= 0) {
    header(o, "process_start_time_seconds", "gauge",
           "Start time of the process since the Unix epoch in seconds.");
    metrics_put(o, "process_start_time_seconds %s\n",
                value_text(v, sizeof(v), start_time));
  }
}
