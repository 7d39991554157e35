/*
 * rfc3339.c — RFC 3339 date-times, parsed and written by hand (no
 * strptime/timegm: neither is in C11, and timegm depends on TZ handling
 * we do not want).
 */
#include "lib/rfc3339.h"

#include <stdio.h>
#include <string.h>

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil). */
int64_t rfc3339_days_from_civil(int64_t y, int64_t m, int64_t d)
{
  int64_t era, yoe, doy, doe;

  y -= m <= 2;
  era = (y >= 0 ? y : y - 399) / 400;
  yoe = y - era * 400;
  doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void rfc3339_civil_from_days(int64_t z, int64_t *y, int64_t *m, int64_t *d)
{
  int64_t era, doe, yoe, doy, mp;

  z += 719468;
  era = (z >= 0 ? z : z - 146096) / 146097;
  doe = z - era * 146097;
  yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yoe + era * 400 + (*m <= 2);
}

int64_t rfc3339_digits(const char **p, int n)
{
  int64_t v = 0;
  int i;

  for (i = 0; i < n; i++) {
    char c = (*p)[i];
    if (c < '0' || c > '9')
      return -1;
    v = v * 10 + (c - '0');
  }
  *p += n;
  return v;
}

int rfc3339_take(const char **p, char c)
{
  if (**p != c)
    return 0;
  (*p)++;
  return 1;
}

static int leap(int64_t y)
{
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* s into whole seconds *out and the microseconds of its fraction *us
 * (truncated); *frac whether any digit of the fraction is not 0. */
static int parse(const char *s, int64_t *out, int64_t *us, int *frac)
{
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const char *p = s;
  int64_t y, mo, d, h, mi, sec, off = 0, t;

  *us = 0;
  *frac = 0;

  if (!s || (y = rfc3339_digits(&p, 4)) < 0 || !rfc3339_take(&p, '-') ||
      (mo = rfc3339_digits(&p, 2)) < 0 || !rfc3339_take(&p, '-') ||
      (d = rfc3339_digits(&p, 2)) < 0)
    return -1;
  if (!rfc3339_take(&p, 'T') && !rfc3339_take(&p, 't'))
    return -1;
  if ((h = rfc3339_digits(&p, 2)) < 0 || !rfc3339_take(&p, ':') ||
      (mi = rfc3339_digits(&p, 2)) < 0 || !rfc3339_take(&p, ':') ||
      (sec = rfc3339_digits(&p, 2)) < 0)
    return -1;
  if (rfc3339_take(&p, '.')) {
    const char *f = p;
    while (*p >= '0' && *p <= '9') {
      *frac = *frac || *p != '0';
      if (p - f < 6)
        *us = *us * 10 + (*p - '0');
      p++;
    }
    for (int64_t n = p - f; n < 6; n++)
      *us *= 10;
    if (p == f || p - f > 9)
      return -1;
  }
  if (rfc3339_take(&p, 'Z') || rfc3339_take(&p, 'z')) {
    off = 0;
  } else if (*p == '+' || *p == '-') {
    int64_t sign = *p++ == '-' ? -1 : 1, oh, om;
    if ((oh = rfc3339_digits(&p, 2)) < 0 || !rfc3339_take(&p, ':') ||
        (om = rfc3339_digits(&p, 2)) < 0 || oh > 23 || om > 59)
      return -1;
    off = sign * (oh * 3600 + om * 60);
  } else {
    return -1;
  }
  if (*p)
    return -1;
  if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 ||
      d > mdays[mo - 1] + (mo == 2 && leap(y)) || h > 23 || mi > 59 || sec > 60)
    return -1;
  /* a leap second (:60) rolls into the next minute, as in PostgreSQL */
  t = rfc3339_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
      off;
  if (t < 0 || t >= rfc3339_days_from_civil(10000, 1, 1) * 86400)
    return -1;
  *out = t;
  return 0;
}

int rfc3339_parse(const char *s, int round_up, int64_t *out)
{
  int64_t t, us;
  int frac;

  if (parse(s, &t, &us, &frac))
    return -1;
  if (frac && round_up && ++t >= rfc3339_days_from_civil(10000, 1, 1) * 86400)
    return -1;
  *out = t;
  return 0;
}

int rfc3339_parse_us(const char *s, int64_t *out_us)
{
  int64_t t, us;
  int frac;

  if (parse(s, &t, &us, &frac))
    return -1;
  *out_us = t * 1000000 + us;
  return 0;
}

void rfc3339_format(int64_t t, char out[RFC3339_LEN])
{
  int64_t days = t / 86400, rem = t % 86400, y, m, d;

  if (t < 0) {
    days = 0;
    rem = 0;
  }
  rfc3339_civil_from_days(days, &y, &m, &d);
  snprintf(out, RFC3339_LEN, "%04d-%02d-%02dT%02d:%02d:%02dZ", (int)y, (int)m,
           (int)d, (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60));
}
