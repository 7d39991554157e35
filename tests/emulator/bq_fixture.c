/*
 * bq_fixture.c — the BigQuery emulator's billing export (see
 * bq_fixture.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/emulator/bq_fixture.h"

static const char *const teams[4] = {"team-a", "team-b", "team-c", NULL};

/* Days since 1970-01-01 → y, m, d (H. Hinnant's civil_from_days). */
static void civil(long z, int *y, int *m, int *d)
{
  long era, doe, yoe, doy, mp;

  z += 719468;
  era = (z >= 0 ? z : z - 146096) / 146097;
  doe = z - era * 146097;
  yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = (int)(yoe + era * 400 + (*m <= 2));
}

void bq_fixture_day(const struct bq_fixture *f, int d, char out[11])
{
  int y, m, dd;

  civil(f->start + d, &y, &m, &dd);
  snprintf(out, 11, "%04u-%02u-%02u", (unsigned)y % 10000u, (unsigned)m % 100u,
           (unsigned)dd % 100u);
}

int bq_fixture_day_index(const struct bq_fixture *f, const char *day)
{
  char s[11];
  int d;

  for (d = 0; d < f->days; d++) {
    bq_fixture_day(f, d, s);
    if (!strcmp(s, day))
      return d;
  }
  return -1;
}

void bq_fixture_export_time(const struct bq_fixture *f, int d, char out[40])
{
  int y, m, dd;

  /* the day after, at 04:00, plus an hour per revision and a minute per
   * touch */
  long hours = 4 + f->revision[d];
  civil(f->start + d + 1 + hours / 24, &y, &m, &dd);
  snprintf(out, 40, "%04u-%02u-%02uT%02u:%02u:00.000000Z", (unsigned)y % 10000u,
           (unsigned)m % 100u, (unsigned)dd % 100u, (unsigned)(hours % 24),
           (unsigned)f->touched[d] % 60u);
}

static long long cost_of(const struct bq_fixture *f, int d, long i)
{
  return 1234 + ((long long)d * 131 + (long long)i * 17) % 100000 * 10 +
         (long long)f->revision[d] * 1000;
}

static long long credit_of(long long cost, long i)
{
  return i % 3 == 0 ? -(cost / 10) : 0;
}

/* micro-dollars as an exact decimal number */
static void money(long long micros, char out[40])
{
  long long a = micros < 0 ? -micros : micros;

  snprintf(out, 40, "%s%lld.%06lld", micros < 0 ? "-" : "", a / 1000000,
           a % 1000000);
}

size_t bq_fixture_row(const struct bq_fixture *f, int d, long i, char *out,
                      size_t cap)
{
  static const char *const types[3] = {"regular", "tax", "adjustment"};
  char day[11], et[40], cost[40], credit[40], labels[160], credits[160];
  long long c = cost_of(f, d, i), cr = credit_of(c, i);
  const char *team = teams[i % 4];
  int y, m, dd, n;

  bq_fixture_day(f, d, day);
  bq_fixture_export_time(f, d, et);
  civil(f->start + d, &y, &m, &dd);
  money(c, cost);
  money(cr, credit);
  if (team)
    snprintf(labels, sizeof(labels),
             "[{\"key\":\"gpugate-team\",\"value\":\"%s\"},"
             "{\"key\":\"gpugate-flavor\",\"value\":\"l4-spot\"}]",
             team);
  else
    snprintf(labels, sizeof(labels), "[]");
  if (cr != 0)
    snprintf(credits, sizeof(credits),
             "[{\"name\":\"Spot discount\",\"amount\":%s,"
             "\"type\":\"DISCOUNT\",\"id\":\"spot\"}]",
             credit);
  else
    snprintf(credits, sizeof(credits), "[]");
  n = snprintf(
      out, cap,
      "{\"billing_account_id\":\"012345-6789AB-CDEF01\","
      "\"service\":{\"id\":\"6F81-5844-456A\","
      "\"description\":\"Compute Engine\"},"
      "\"sku\":{\"id\":\"SKU-%ld\",\"description\":\"Nvidia L4 GPU %ld\"},"
      "\"usage_start_time\":\"%sT%02ld:00:00Z\","
      "\"usage_end_time\":\"%sT%02ld:59:59Z\","
      "\"project\":{\"id\":\"ml-project\"},\"labels\":%s,"
      "\"location\":{\"location\":\"us-central1\","
      "\"region\":\"us-central1\"},"
      "\"resource\":{\"name\":\"vm-%d-%ld\"},"
      "\"export_time\":\"%s\",\"cost\":%s,\"currency\":\"USD\","
      "\"currency_conversion_rate\":1,"
      "\"usage\":{\"amount\":3600,\"unit\":\"seconds\"},"
      "\"credits\":%s,\"invoice\":{\"month\":\"%04u%02u\"},"
      "\"cost_type\":\"%s\"}",
      i % 5, i % 5, day, i % 24, day, i % 24, labels, d, i, et, cost, credits,
      (unsigned)y % 10000u, (unsigned)m % 100u,
      types[i % 10 == 8   ? 1
            : i % 10 == 9 ? 2
                          : 0]);
  return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

void bq_fixture_totals(const struct bq_fixture *f, const char *team,
                       long long *cost, long long *credits)
{
  int d;
  long i;

  *cost = *credits = 0;
  for (d = 0; d < f->days; d++)
    for (i = 0; i < f->rows_per_day; i++) {
      const char *t = teams[i % 4] ? teams[i % 4] : "(unattributed)";
      long long c = cost_of(f, d, i);
      if (team && strcmp(team, t) != 0)
        continue;
      *cost += c;
      *credits += credit_of(c, i);
    }
}
