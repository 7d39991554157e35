/*
 * bq_fixture.c — the BigQuery emulator's billing export (see
 * bq_fixture.h).
 */
#include <stdbool.h>
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

/* The export_time of day d's own rows (not its late row). */
static void rows_export_time(const struct bq_fixture *f, int d, char out[40])
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

/* The export_time of day d's late row, or "". */
static void late_export_time(const struct bq_fixture *f, int d, char out[40])
{
  int y, m, dd;

  out[0] = '\0';
  if (!f->late[d])
    return;
  civil(f->start + f->late[d], &y, &m, &dd);
  snprintf(out, 40, "%04u-%02u-%02uT04:00:30.000000Z", (unsigned)y % 10000u,
           (unsigned)m % 100u, (unsigned)dd % 100u);
}

void bq_fixture_export_time(const struct bq_fixture *f, int d, char out[40])
{
  char late[40];

  rows_export_time(f, d, out);
  late_export_time(f, d, late);
  if (strcmp(late, out) > 0)
    memcpy(out, late, 40);
}

long bq_fixture_day_rows(const struct bq_fixture *f, int d)
{
  return f->rows_per_day + (f->late[d] ? 1 : 0);
}

int bq_fixture_partition(const struct bq_fixture *f, int p, char et[40],
                         char first[11])
{
  char e[40];
  int d, any = 0;

  et[0] = '\0';
  if (p >= 1 && p - 1 < f->days && f->rows_per_day > 0) {
    rows_export_time(f, p - 1, et);
    bq_fixture_day(f, p - 1, first);
    any = 1;
  }
  for (d = 0; d < f->days; d++) {
    if (f->late[d] != p)
      continue;
    late_export_time(f, d, e);
    if (strcmp(e, et) > 0)
      memcpy(et, e, 40);
    if (!any || d < p - 1) /* the first usage day: the earliest */
      bq_fixture_day(f, d, first);
    any = 1;
  }
  return any;
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

/* Two decimal digits at p. */
static unsigned atoi2(const char *p)
{
  return (unsigned)(p[0] - '0') * 10 + (unsigned)(p[1] - '0');
}

/* A row being written: plain appends (snprintf took most of the
 * emulator's time at a million rows), escaped or not. */
struct out {
  char *p;
  size_t len, cap;
  bool full, escaped;
  bool export_form; /* BigQuery's NDJSON export, not TO_JSON_STRING */
};

static void put(struct out *o, const char *s, size_t n)
{
  size_t i;
  char *d;

  if (o->full || o->len + 2 * n >= o->cap) {
    o->full = true;
    return;
  }
  if (!o->escaped) {
    memcpy(o->p + o->len, s, n);
    o->len += n;
    return;
  }
  d = o->p + o->len; /* not o->p[o->len++]: its stores may alias o */
  for (i = 0; i < n; i++) {
    char ch = s[i];
    if (ch == '"')
      *d++ = '\\';
    *d++ = ch;
  }
  o->len = (size_t)(d - o->p);
}

static void puts_(struct out *o, const char *s)
{
  put(o, s, strlen(s));
}

/* v ≥ 0 in decimal, at least width digits (zero-padded) */
static void putu(struct out *o, unsigned long long v, int width)
{
  char d[24];
  size_t n = 0;

  do {
    d[sizeof(d) - 1 - n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v > 0 || n < (size_t)width);
  put(o, d + sizeof(d) - n, n);
}

/* micro-dollars as TO_JSON_STRING writes a NUMERIC (ZetaSQL json_format.cc,
 * JsonFromNumericOrBool(NumericValue)): NumericValue's text, its trailing
 * fractional zeros dropped, quoted when it has a fractional part (or lies
 * outside ±2^53, which a fixture amount never does), else a bare number. */
static void money(struct out *o, long long micros)
{
  unsigned long long a =
      micros < 0 ? (unsigned long long)-micros : (unsigned long long)micros;
  unsigned long long frac = a % 1000000;
  int width = 6;
  bool quote = frac && !o->export_form; /* the export: a FLOAT64 number */

  if (quote)
    put(o, "\"", 1);
  if (micros < 0)
    put(o, "-", 1);
  putu(o, a / 1000000, 1);
  if (frac) {
    while (frac % 10 == 0) {
      frac /= 10;
      width--;
    }
    put(o, ".", 1);
    putu(o, frac, width);
  }
  if (quote)
    put(o, "\"", 1);
}

void bq_fixture_daytext(const struct bq_fixture *f, int d,
                        struct bq_fixture_daytext *t)
{
  int y, m, dd;

  bq_fixture_day(f, d, t->day);
  rows_export_time(f, d, t->et);
  late_export_time(f, d, t->late_et);
  /* TO_JSON_STRING's TIMESTAMP: the shortest scale that holds it
   * (JsonFromTimestamp, NarrowTimestampScaleIfPossible): whole seconds */
  snprintf(t->et_json, sizeof(t->et_json), "%.19sZ", t->et);
  civil(f->start + d, &y, &m, &dd);
  snprintf(t->month, sizeof(t->month), "%04u%02u", (unsigned)y % 10000u,
           (unsigned)m % 100u);
}

/* A TIMESTAMP of day at hh:mm:ss: TO_JSON_STRING's RFC 3339 at its
 * shortest scale ("2026-08-01T04:00:00Z"), or the NDJSON export's
 * "2026-08-01 04:00:00 UTC". */
static void stamp(struct out *o, const char *day, unsigned hh, unsigned mm,
                  unsigned ss)
{
  put(o, "\"", 1);
  puts_(o, day);
  put(o, o->export_form ? " " : "T", 1);
  putu(o, hh, 2);
  put(o, ":", 1);
  putu(o, mm, 2);
  put(o, ":", 1);
  putu(o, ss, 2);
  puts_(o, o->export_form ? " UTC\"" : "Z\"");
}

/* ",\"name\":null" for TO_JSON_STRING (a NULL field is written); nothing
 * for the export (it leaves NULL fields out). */
static void null_field(struct out *o, const char *name)
{
  if (o->export_form)
    return;
  put(o, ",\"", 2);
  puts_(o, name);
  puts_(o, "\":null");
}

/* Row i of day d in either form (see bq_fixture.h). FLOAT64s are written
 * as RoundTripDoubleToString does (the fixture's are whole: "1", "3600"),
 * the same in both forms. */
static size_t row(const struct bq_fixture *f,
                  const struct bq_fixture_daytext *t, int d, long i,
                  bool escaped, bool export_form, char *out, size_t cap)
{
  static const char *const types[3] = {"regular", "tax", "adjustment"};
  const char *day = t->day;
  long long c = cost_of(f, d, i), cr = credit_of(c, i);
  const char *team = teams[i % 4];
  struct out o = {out, 0, cap, false, escaped, export_form};
  unsigned h = (unsigned)(i % 24);
  const char *et = i >= f->rows_per_day && *t->late_et ? t->late_et : t->et;
  char et_day[11];

  /* the columns of the standard usage cost export, in its schema's order */
  puts_(&o, "{\"billing_account_id\":\"" BQ_FIX_ACCOUNT "\","
            "\"service\":{\"id\":\"6F81-5844-456A\","
            "\"description\":\"Compute Engine\"},"
            "\"sku\":{\"id\":\"SKU-");
  putu(&o, (unsigned long long)(i % 5), 1);
  puts_(&o, "\",\"description\":\"Nvidia L4 GPU ");
  putu(&o, (unsigned long long)(i % 5), 1);
  puts_(&o, "\"},\"usage_start_time\":");
  stamp(&o, day, h, 0, 0);
  puts_(&o, ",\"usage_end_time\":");
  stamp(&o, day, h, 59, 59);
  puts_(&o, ",\"project\":{\"id\":\"ml-project\","
            "\"number\":\"123456789012\",\"name\":\"ml-project\","
            "\"labels\":[]");
  null_field(&o, "ancestry_numbers");
  puts_(&o, ",\"ancestors\":[]},\"labels\":");
  if (team) {
    puts_(&o, "[{\"key\":\"gpugate-team\",\"value\":\"");
    puts_(&o, team);
    puts_(&o, "\"},{\"key\":\"gpugate-flavor\",\"value\":\"l4-spot\"}]");
  } else {
    puts_(&o, "[]");
  }
  puts_(&o, ",\"system_labels\":[],"
            "\"location\":{\"location\":\"us-central1\",\"country\":\"US\","
            "\"region\":\"us-central1\"");
  null_field(&o, "zone");
  puts_(&o, "},\"resource\":{\"name\":\"vm-");
  putu(&o, (unsigned long long)d, 1);
  put(&o, "-", 1);
  putu(&o, (unsigned long long)i, 1);
  put(&o, "\"", 1);
  null_field(&o, "global_name");
  puts_(&o, "},\"tags\":[],\"transaction_type\":\"GOOGLE\"");
  null_field(&o, "seller_name");
  puts_(&o, ",\"export_time\":");
  /* et is "YYYY-MM-DDTHH:MM:SS.000000Z" (the day after, or the late
   * row's partition day): its day, then its time */
  memcpy(et_day, et, 10);
  et_day[10] = '\0';
  stamp(&o, et_day, atoi2(et + 11), atoi2(et + 14), atoi2(et + 17));
  puts_(&o, ",\"cost\":");
  money(&o, c);
  puts_(&o, ",\"currency\":\"USD\",\"currency_conversion_rate\":1,"
            "\"usage\":{\"amount\":3600,\"unit\":\"seconds\","
            "\"amount_in_pricing_units\":1,\"pricing_unit\":\"hour\"},"
            "\"credits\":");
  if (cr != 0) {
    puts_(&o, "[{\"name\":\"Spot discount\",\"amount\":");
    money(&o, cr);
    null_field(&o, "full_name");
    puts_(&o, ",\"id\":\"spot\",\"type\":\"DISCOUNT\"}]");
  } else {
    puts_(&o, "[]");
  }
  puts_(&o, ",\"invoice\":{\"month\":\"");
  puts_(&o, t->month);
  puts_(&o, "\",\"publisher_type\":\"GOOGLE\"},\"cost_type\":\"");
  puts_(&o, types[i % 10 == 8 ? 1 : i % 10 == 9 ? 2 : 0]);
  put(&o, "\"", 1);
  null_field(&o, "adjustment_info");
  /* price's NUMERICs: TO_JSON_STRING quotes 0.5 (a fraction); the export
   * writes a NUMERIC as a string too */
  puts_(&o, ",\"price\":{\"effective_price\":\"0.5\",\"tier_start_amount\":0,"
            "\"unit\":\"hour\",\"pricing_unit_quantity\":1}");
  null_field(&o, "cost_at_list");
  put(&o, "}", 1);
  return o.full ? 0 : o.len;
}

size_t bq_fixture_row(const struct bq_fixture *f,
                      const struct bq_fixture_daytext *t, int d, long i,
                      bool escaped, char *out, size_t cap)
{
  return row(f, t, d, i, escaped, false, out, cap);
}

size_t bq_fixture_cell(const struct bq_fixture *f,
                       const struct bq_fixture_daytext *t, int d, long i,
                       char *out, size_t cap)
{
  static const char head[] = "{\"f\":[{\"v\":\"", tail[] = "\"}]}";
  const size_t hn = sizeof(head) - 1, tn = sizeof(tail) - 1;
  size_t n;

  if (cap < hn + tn)
    return 0;
  memcpy(out, head, hn);
  n = row(f, t, d, i, true, false, out + hn, cap - hn - tn);
  if (n == 0)
    return 0;
  memcpy(out + hn + n, tail, tn);
  return hn + n + tn;
}

size_t bq_fixture_row_export(const struct bq_fixture *f,
                             const struct bq_fixture_daytext *t, int d, long i,
                             char *out, size_t cap)
{
  return row(f, t, d, i, false, true, out, cap);
}

void bq_fixture_day_sums(const struct bq_fixture *f, int d, long rows,
                         long long *cost, long long *credits)
{
  long i;

  *cost = *credits = 0;
  for (i = 0; i < rows; i++) {
    long long c = cost_of(f, d, i);
    *cost += c;
    *credits += credit_of(c, i);
  }
}

void bq_fixture_totals(const struct bq_fixture *f, const char *team,
                       long long *cost, long long *credits)
{
  int d;
  long i;

  *cost = *credits = 0;
  for (d = 0; d < f->days; d++)
    for (i = 0; i < bq_fixture_day_rows(f, d); i++) {
      const char *t = teams[i % 4] ? teams[i % 4] : "(unattributed)";
      long long c = cost_of(f, d, i);
      if (team && strcmp(team, t) != 0)
        continue;
      *cost += c;
      *credits += credit_of(c, i);
    }
}
