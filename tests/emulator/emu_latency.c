/*
 * emu_latency.c — the EMU_LATENCY_MS spec and the lognormal draw (see
 * emu_latency.h).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tests/emulator/emu_latency.h"

/* the standard normal's 99th percentile */
#define Z99 2.3263478740408408

static const char *const names[EMU_CALL_N] = {"other", "create", "get",
                                              "list",  "cancel", "delete"};

const char *emu_call_name(enum emu_call k)
{
  return k >= 0 && k < EMU_CALL_N ? names[k] : "other";
}

/* A whole number of ms in [0, EMU_LATENCY_MAX_MS] from s[0..n). */
static bool parse_ms(const char *s, size_t n, long *out)
{
  long v = 0;
  size_t i;

  if (n == 0 || n > 6)
    return false;
  for (i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    v = v * 10 + (s[i] - '0');
  }
  if (v > EMU_LATENCY_MAX_MS)
    return false;
  *out = v;
  return true;
}

/* One "call:median[/p99]" item of n bytes at s. */
static int parse_item(const char *s, size_t n, struct emu_latency *l,
                      bool *seen, char *err, size_t errlen)
{
  const char *colon = memchr(s, ':', n), *slash;
  long median, p99;
  int k;

  for (k = EMU_CALL_CREATE; colon && k < EMU_CALL_N; k++)
    if (strlen(names[k]) == (size_t)(colon - s) &&
        !strncmp(s, names[k], (size_t)(colon - s)))
      break;
  if (!colon || k == EMU_CALL_N) {
    snprintf(err, errlen,
             "EMU_LATENCY_MS: \"%.*s\" is not call:median[/p99] with call "
             "one of create, get, list, cancel, delete",
             (int)n, s);
    return -1;
  }
  if (seen[k]) {
    snprintf(err, errlen, "EMU_LATENCY_MS: %s is given twice", names[k]);
    return -1;
  }
  colon++;
  slash = memchr(colon, '/', n - (size_t)(colon - s));
  if (!parse_ms(colon, (size_t)((slash ? slash : s + n) - colon), &median) ||
      (slash && !parse_ms(slash + 1, n - (size_t)(slash + 1 - s), &p99))) {
    snprintf(err, errlen,
             "EMU_LATENCY_MS: \"%.*s\": median and p99 must be whole "
             "milliseconds from 0 to %ld",
             (int)n, s, EMU_LATENCY_MAX_MS);
    return -1;
  }
  if (!slash)
    p99 = median;
  if (p99 < median) {
    snprintf(err, errlen,
             "EMU_LATENCY_MS: \"%.*s\": the p99 is below the median", (int)n,
             s);
    return -1;
  }
  if (median == 0 && p99 > 0) {
    snprintf(err, errlen,
             "EMU_LATENCY_MS: \"%.*s\": a spread needs a median above 0",
             (int)n, s);
    return -1;
  }
  seen[k] = true;
  l->median_ms[k] = median;
  l->p99_ms[k] = p99;
  return 0;
}

int emu_latency_parse(const char *spec, struct emu_latency *out, char *err,
                      size_t errlen)
{
  struct emu_latency l;
  bool seen[EMU_CALL_N] = {false};
  const char *p = spec ? spec : "";

  memset(&l, 0, sizeof(l));
  while (*p) {
    size_t n = strcspn(p, ",");
    const char *item = p;
    size_t len = n;

    while (len && (*item == ' ' || *item == '\t')) {
      item++;
      len--;
    }
    while (len && (item[len - 1] == ' ' || item[len - 1] == '\t'))
      len--;
    if (len == 0) {
      snprintf(err, errlen, "EMU_LATENCY_MS: empty item in \"%s\"", spec);
      return -1;
    }
    if (parse_item(item, len, &l, seen, err, errlen) != 0)
      return -1;
    p += n;
    if (*p == ',' && !*++p) {
      snprintf(err, errlen, "EMU_LATENCY_MS: empty item in \"%s\"", spec);
      return -1;
    }
  }
  *out = l;
  return 0;
}

long emu_latency_draw(const struct emu_latency *l, enum emu_call k, double u1,
                      double u2)
{
  double median, p99, z, v;

  if (k <= EMU_CALL_OTHER || k >= EMU_CALL_N || l->median_ms[k] <= 0)
    return 0;
  median = (double)l->median_ms[k];
  p99 = (double)l->p99_ms[k];
  if (p99 <= median)
    return l->median_ms[k];
  if (!(u1 > 0))
    u1 = 1e-300;
  z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
  v = median * exp(log(p99 / median) / Z99 * z);
  if (v > EMU_LATENCY_TAIL_CAP * p99)
    v = EMU_LATENCY_TAIL_CAP * p99;
  return lround(v);
}
