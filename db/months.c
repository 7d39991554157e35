/*
 * months.c — invoice-month text and the attribution of late rows to the
 * first open month (see months.h). No I/O.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db/months.h"
#include "lib/rfc3339.h"

static bool digits(const char *s, int n)
{
  int i;

  for (i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return true;
}

bool db_month_valid(const char *s)
{
  return s && strlen(s) == 7 && digits(s, 4) && s[4] == '-' &&
         digits(s + 5, 2) && strncmp(s, "0000", 4) != 0 &&
         strncmp(s + 5, "01", 2) >= 0 && strncmp(s + 5, "12", 2) <= 0;
}

int db_month_next(const char *m, char out[DB_MONTH_LEN])
{
  int y, mo;

  if (!db_month_valid(m))
    return -1;
  y = (int)strtol(m, NULL, 10);
  mo = (int)strtol(m + 5, NULL, 10) + 1;
  if (mo > 12) {
    mo = 1;
    y++;
  }
  if (y > 9999)
    return -1;
  out[0] = (char)('0' + y / 1000);
  out[1] = (char)('0' + y / 100 % 10);
  out[2] = (char)('0' + y / 10 % 10);
  out[3] = (char)('0' + y % 10);
  out[4] = '-';
  out[5] = (char)('0' + mo / 10);
  out[6] = (char)('0' + mo % 10);
  out[7] = '\0';
  return 0;
}

static int cmp_month(const void *a, const void *b)
{
  return strcmp(a, b);
}

static bool closed_in(const char *m, const char (*closed)[DB_MONTH_LEN],
                      size_t n)
{
  return n > 0 && bsearch(m, closed, n, DB_MONTH_LEN, cmp_month) != NULL;
}

int db_month_attribute(const char *usage_day, const char *invoice_month,
                       const char (*closed)[DB_MONTH_LEN], size_t n,
                       char month[DB_MONTH_LEN], bool *correction)
{
  char usage[DB_MONTH_LEN], own[DB_MONTH_LEN];

  *correction = false;
  if (!usage_day || strlen(usage_day) != 10 || usage_day[7] != '-')
    return -1;
  memcpy(usage, usage_day, 7);
  usage[7] = '\0';
  if (!db_month_valid(usage) || !invoice_month)
    return -1;
  if (*invoice_month && !db_month_valid(invoice_month))
    return -1;
  /* a Correction changes an invoice already issued: it is decided by the
   * row's invoice month (else its usage month), never by its usage month
   * alone (FOCUS ChargeClass) */
  memcpy(own, *invoice_month ? invoice_month : usage, DB_MONTH_LEN);
  memcpy(month, own, DB_MONTH_LEN);
  if (!closed_in(own, closed, n))
    return 0;
  *correction = true;
  while (closed_in(month, closed, n))
    if (db_month_next(month, month) != 0)
      return -1;
  return 0;
}

void db_month_report_day(const char *usage_day, const char *month,
                         const char (*closed)[DB_MONTH_LEN], size_t n,
                         char out[11])
{
  char usage[DB_MONTH_LEN];

  memcpy(usage, usage_day, 7);
  usage[7] = '\0';
  if (strcmp(usage, month) != 0 && closed_in(usage, closed, n))
    snprintf(out, 11, "%.7s-01", month);
  else
    snprintf(out, 11, "%.10s", usage_day);
}

/* Days since 1970-01-01 of y-m-d, and its weekday (0 = Sunday). */
static long civil_days(long y, long m, long d, int *weekday)
{
  long days = rfc3339_days_from_civil(y, m, d);

  *weekday = (int)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
  return days;
}

void db_month_pacific(long long now, char out[DB_MONTH_LEN])
{
  time_t t = (time_t)now;
  struct tm tm;
  long y, start, end;
  int wd;

  gmtime_r(&t, &tm);
  y = tm.tm_year + 1900L;
  /* DST: from the second Sunday of March, 02:00 PST (10:00 UTC), to the
   * first Sunday of November, 02:00 PDT (09:00 UTC) */
  start = civil_days(y, 3, 1, &wd);
  start += (7 - wd) % 7 + 7;
  end = civil_days(y, 11, 1, &wd);
  end += (7 - wd) % 7;
  t = (time_t)(now - (now >= start * 86400LL + 10LL * 3600 &&
                              now < end * 86400LL + 9LL * 3600
                          ? 7LL * 3600
                          : 8LL * 3600));
  gmtime_r(&t, &tm);
  snprintf(out, DB_MONTH_LEN, "%04u-%02u",
           (unsigned)(tm.tm_year + 1900) % 10000u,
           (unsigned)(tm.tm_mon + 1) % 100u);
}
