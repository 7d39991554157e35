/*
 * billing_time.c — the dates and times of billing rows (see billing_time.h):
 * usage timestamps normalised to UTC and invoice months.
 */
#include <stdbool.h>
#include <string.h>

#include "db/billing.h"
#include "lib/rfc3339.h"
#include "billing/billing_time.h"

static bool leap(long y)
{
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* v (>= 0) as exactly n decimal digits, zero-padded. */
static void put_digits(char *out, long v, int n)
{
  while (n-- > 0) {
    out[n] = (char)('0' + v % 10);
    v /= 10;
  }
}

/* The zone of a timestamp as seconds east of UTC; -1 on error (an offset
 * is never exactly -1 s). */
static long zone_offset(const char *p)
{
  long h, m = 0, sign;

  if (!strcmp(p, "Z") || !strcmp(p, "z") || !strcmp(p, "UTC"))
    return 0;
  if (*p != '+' && *p != '-')
    return -1;
  sign = *p++ == '-' ? -1 : 1;
  if ((h = rfc3339_digits(&p, 2)) < 0)
    return -1;
  if (*p) {
    rfc3339_take(&p, ':');
    if ((m = rfc3339_digits(&p, 2)) < 0 || *p)
      return -1;
  }
  if (h > 23 || m > 59)
    return -1;
  return sign * (h * 3600 + m * 60);
}

int billing_parse_timestamp(const char *s, char *ts, char *day)
{
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const char *p = s, *frac = NULL;
  int64_t y, mo, d, h, mi, sec, off, t, days;
  int nfrac = 0;
  size_t n;

  if ((y = rfc3339_digits(&p, 4)) < 0 || !rfc3339_take(&p, '-') ||
      (mo = rfc3339_digits(&p, 2)) < 0 || !rfc3339_take(&p, '-') ||
      (d = rfc3339_digits(&p, 2)) < 0)
    return -1;
  if (!rfc3339_take(&p, 'T') && !rfc3339_take(&p, 't') &&
      !rfc3339_take(&p, ' '))
    return -1;
  if ((h = rfc3339_digits(&p, 2)) < 0 || !rfc3339_take(&p, ':') ||
      (mi = rfc3339_digits(&p, 2)) < 0 || !rfc3339_take(&p, ':') ||
      (sec = rfc3339_digits(&p, 2)) < 0)
    return -1;
  if (rfc3339_take(&p, '.')) {
    frac = p;
    while (*p >= '0' && *p <= '9')
      p++;
    nfrac = (int)(p - frac);
    if (nfrac == 0 || nfrac > 12)
      return -1;
  }
  rfc3339_take(&p, ' ');
  if ((off = zone_offset(p)) == -1)
    return -1;
  if (y < 1 || mo < 1 || mo > 12 || d < 1 ||
      d > mdays[mo - 1] + (mo == 2 && leap(y)) || h > 23 || mi > 59 || sec > 60)
    return -1;

  /* to UTC; a leap second (:60) rolls into the next minute, as in
   * PostgreSQL */
  t = rfc3339_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
      off;
  days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
  t -= days * 86400;
  rfc3339_civil_from_days(days, &y, &mo, &d);
  if (y < 1 || y > 9999)
    return -1;
  put_digits(day, y, 4);
  day[4] = '-';
  put_digits(day + 5, mo, 2);
  day[7] = '-';
  put_digits(day + 8, d, 2);
  day[10] = '\0';
  memcpy(ts, day, 10);
  ts[10] = ' ';
  put_digits(ts + 11, t / 3600, 2);
  ts[13] = ':';
  put_digits(ts + 14, t / 60 % 60, 2);
  ts[16] = ':';
  put_digits(ts + 17, t % 60, 2);
  n = 19;
  if (frac) {
    nfrac = nfrac > 6 ? 6 : nfrac; /* PostgreSQL keeps microseconds */
    ts[n++] = '.';
    memcpy(ts + n, frac, (size_t)nfrac);
    n += (size_t)nfrac;
  }
  memcpy(ts + n, "+00", 4);
  return 0;
}

int billing_invoice_month(const char *m, char out[8])
{
  const char *p = m;
  long y = rfc3339_digits(&p, 4), mo;

  rfc3339_take(&p, '-');
  mo = rfc3339_digits(&p, 2);
  if (y < 1 || mo < 1 || mo > 12 || *p)
    return -1;
  put_digits(out, y, 4);
  out[4] = '-';
  put_digits(out + 5, mo, 2);
  out[7] = '\0';
  return 0;
}
