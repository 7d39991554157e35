/*
 * billing_ingest.c — the billing-export ingest engine (see
 * billing_ingest.h): NDJSON lines in, validated rows stored in batches by
 * db/billing.c, a report of what was inserted, already known or rejected.
 *
 * A row's key is the SHA-256 of its canonical JSON (Jansson's dump with
 * sorted keys, compact), so the same row, however its keys are ordered or
 * spaced, is stored once.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <openssl/evp.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db/billing.h"
#include "handlers/billing_ingest.h"
#include "server/metrics.h"

/* ---- exact decimals -------------------------------------------------------
 *
 * A fixed grid of decimal digits from 10^-DEC_FRAC to 10^(DEC_INT-1): "%.15g"
 * of a double reaches down to 10^-338 (4.94065645841247e-324) and up to
 * 10^308, and a row's credits add up to far less than 10^50 times that.
 */
#define DEC_FRAC 340
#define DEC_INT 360
#define DEC_N (DEC_FRAC + DEC_INT)

struct dec {
  bool neg;
  unsigned char d[DEC_N]; /* d[i] is the digit of 10^(i - DEC_FRAC) */
};

static int dec_parse(const char *s, struct dec *out)
{
  const char *p = s, *mant, *mend, *q;
  size_t nint = 0, nfrac = 0;
  bool point = false;
  long exp = 0, power;

  memset(out, 0, sizeof(*out));
  if (*p == '-' || *p == '+')
    out->neg = *p++ == '-';
  for (mant = p; *p; p++) {
    if (*p >= '0' && *p <= '9')
      point ? nfrac++ : nint++;
    else if (*p == '.' && !point)
      point = true;
    else
      break;
  }
  mend = p;
  if (nint + nfrac == 0)
    return -1;
  if (*p == 'e' || *p == 'E') {
    char *end;
    errno = 0;
    exp = strtol(p + 1, &end, 10);
    if (end == p + 1 || *end || errno || exp > 100000 || exp < -100000)
      return -1;
  } else if (*p) {
    return -1;
  }
  power = (long)nint - 1 + exp;
  for (q = mant; q < mend; q++) {
    long idx = power + DEC_FRAC;
    if (*q == '.')
      continue;
    power--;
    if (*q == '0')
      continue;
    if (idx < 0 || idx >= DEC_N)
      return -1;
    out->d[idx] = (unsigned char)(*q - '0');
  }
  return 0;
}

static int dec_cmp_mag(const struct dec *a, const struct dec *b)
{
  int i;

  for (i = DEC_N - 1; i >= 0; i--)
    if (a->d[i] != b->d[i])
      return a->d[i] > b->d[i] ? 1 : -1;
  return 0;
}

/* out = |x| - |y|, with |x| >= |y|; out may be x or y. */
static void dec_sub_mag(struct dec *out, const struct dec *x,
                        const struct dec *y)
{
  int i, borrow = 0;

  for (i = 0; i < DEC_N; i++) {
    int v = x->d[i] - y->d[i] - borrow;
    borrow = v < 0;
    out->d[i] = (unsigned char)(v < 0 ? v + 10 : v);
  }
}

/* a += b. Returns 0, or -1 on overflow. */
static int dec_add_to(struct dec *a, const struct dec *b)
{
  int i, carry = 0;
  bool zero = true;

  if (a->neg == b->neg) {
    for (i = 0; i < DEC_N; i++) {
      int v = a->d[i] + b->d[i] + carry;
      carry = v >= 10;
      a->d[i] = (unsigned char)(carry ? v - 10 : v);
    }
    if (carry)
      return -1;
  } else if (dec_cmp_mag(a, b) >= 0) {
    dec_sub_mag(a, a, b);
  } else {
    dec_sub_mag(a, b, a);
    a->neg = b->neg;
  }
  for (i = 0; i < DEC_N && zero; i++)
    zero = a->d[i] == 0;
  if (zero)
    a->neg = false;
  return 0;
}

/* Plain decimal text ("-12.05", "0"); out holds BILLING_DEC_MAX bytes. */
static void dec_format(const struct dec *a, char *out)
{
  int hi = -1, lo = -1, i;
  size_t o = 0;

  for (i = DEC_N - 1; i >= 0 && hi < 0; i--)
    if (a->d[i])
      hi = i;
  for (i = 0; i < DEC_N && lo < 0; i++)
    if (a->d[i])
      lo = i;
  if (hi < 0) {
    out[0] = '0';
    out[1] = '\0';
    return;
  }
  if (a->neg)
    out[o++] = '-';
  if (hi < DEC_FRAC)
    out[o++] = '0';
  for (i = hi; i >= DEC_FRAC; i--)
    out[o++] = (char)('0' + a->d[i]);
  if (lo < DEC_FRAC) {
    out[o++] = '.';
    for (i = DEC_FRAC - 1; i >= lo; i--)
      out[o++] = (char)('0' + a->d[i]);
  }
  out[o] = '\0';
}

/*
 * The common case without the grid: both operands of at most 18
 * significant digits and small exponents, so that their sum is exact in 64
 * bits. Anything else (including every malformed input) is left to the
 * grid, whose results these are digit for digit.
 */
#define SMALL_DIGITS 18
#define SMALL_EXP 40

static const uint64_t pow10_u64[] = {1u,
                                     10u,
                                     100u,
                                     1000u,
                                     10000u,
                                     100000u,
                                     1000000u,
                                     10000000u,
                                     100000000u,
                                     1000000000u,
                                     10000000000u,
                                     100000000000u,
                                     1000000000000u,
                                     10000000000000u,
                                     100000000000000u,
                                     1000000000000000u,
                                     10000000000000000u,
                                     100000000000000000u,
                                     1000000000000000000u};

struct small_dec {
  bool neg;
  uint64_t mant; /* value = ±mant × 10^exp, mant < 10^18 */
  int exp;
};

static bool small_parse(const char *p, struct small_dec *out)
{
  int digits = 0, frac = 0, e = 0, edigits = 0;
  bool point = false, any = false, eneg = false;

  out->neg = false;
  out->mant = 0;
  if (*p == '-' || *p == '+')
    out->neg = *p++ == '-';
  for (;; p++) {
    if (*p >= '0' && *p <= '9') {
      any = true;
      frac += point;
      if (out->mant == 0 && *p == '0')
        continue;
      if (++digits > SMALL_DIGITS)
        return false;
      out->mant = out->mant * 10 + (uint64_t)(*p - '0');
    } else if (*p == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!any)
    return false;
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '-' || *p == '+')
      eneg = *p++ == '-';
    for (; *p >= '0' && *p <= '9'; p++) {
      if (++edigits > 3)
        return false;
      e = e * 10 + (*p - '0');
    }
    if (edigits == 0)
      return false;
  }
  if (*p)
    return false;
  out->exp = (eneg ? -e : e) - frac;
  return out->exp >= -SMALL_EXP && out->exp <= SMALL_EXP;
}

/* m × 10^k into *out unless it reaches 10^18. */
static bool small_scale(uint64_t m, int k, uint64_t *out)
{
  if (k > SMALL_DIGITS || m > pow10_u64[SMALL_DIGITS] / pow10_u64[k])
    return false;
  *out = m * pow10_u64[k];
  return *out < pow10_u64[SMALL_DIGITS];
}

/* ±mag × 10^exp as dec_format writes it. */
static void small_format(bool neg, uint64_t mag, int exp, char *out)
{
  char digits[24];
  int n = 0, k, i;
  size_t o = 0;

  if (mag == 0) {
    memcpy(out, "0", 2);
    return;
  }
  while (exp < 0 && mag % 10 == 0) {
    mag /= 10;
    exp++;
  }
  for (; mag; mag /= 10)
    digits[n++] = (char)('0' + mag % 10); /* least significant first */
  if (neg)
    out[o++] = '-';
  if (exp >= 0) {
    for (i = n - 1; i >= 0; i--)
      out[o++] = digits[i];
    for (i = 0; i < exp; i++)
      out[o++] = '0';
  } else {
    k = -exp; /* fraction digits */
    if (n > k) {
      for (i = n - 1; i >= k; i--)
        out[o++] = digits[i];
    } else {
      out[o++] = '0';
    }
    out[o++] = '.';
    for (i = k - 1; i >= 0; i--)
      out[o++] = i < n ? digits[i] : '0';
  }
  out[o] = '\0';
}

static bool small_add(char *acc, const char *x)
{
  struct small_dec a, b;
  uint64_t ma, mb;
  int exp;

  if (!small_parse(acc, &a) || !small_parse(x, &b))
    return false;
  exp = a.exp < b.exp ? a.exp : b.exp;
  if (!small_scale(a.mant, a.exp - exp, &ma) ||
      !small_scale(b.mant, b.exp - exp, &mb))
    return false;
  if (a.neg == b.neg)
    small_format(a.neg, ma + mb, exp, acc);
  else if (ma >= mb)
    small_format(a.neg, ma - mb, exp, acc);
  else
    small_format(b.neg, mb - ma, exp, acc);
  return true;
}

int billing_dec_add(char *acc, const char *x)
{
  struct dec a, b;

  if (small_add(acc, x))
    return 0;
  if (dec_parse(acc, &a) != 0 || dec_parse(x, &b) != 0 ||
      dec_add_to(&a, &b) != 0)
    return -1;
  dec_format(&a, acc);
  return 0;
}

/* The grid alone, for tests: what billing_dec_add must agree with. */
int billing_dec_add_grid(char *acc, const char *x)
{
  struct dec a, b;

  if (dec_parse(acc, &a) != 0 || dec_parse(x, &b) != 0 ||
      dec_add_to(&a, &b) != 0)
    return -1;
  dec_format(&a, acc);
  return 0;
}

/* ---- timestamps ---------------------------------------------------------- */

/* The date of day z since 1970-01-01 (the inverse of db_days_from_civil). */
static void civil_from_days(long z, long *y, long *m, long *d)
{
  long era, doe, yoe, doy, mp;

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

/* Exactly n digits at *p, advancing it. Returns the value or -1. */
static long take_digits(const char **p, int n)
{
  long v = 0;
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

/* Whether *p starts with c, consuming it. */
static bool take(const char **p, char c)
{
  if (**p != c)
    return false;
  (*p)++;
  return true;
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
  if ((h = take_digits(&p, 2)) < 0)
    return -1;
  if (*p) {
    take(&p, ':');
    if ((m = take_digits(&p, 2)) < 0 || *p)
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
  long y, mo, d, h, mi, sec, off, t, days;
  int nfrac = 0;
  size_t n;

  if ((y = take_digits(&p, 4)) < 0 || !take(&p, '-') ||
      (mo = take_digits(&p, 2)) < 0 || !take(&p, '-') ||
      (d = take_digits(&p, 2)) < 0)
    return -1;
  if (!take(&p, 'T') && !take(&p, 't') && !take(&p, ' '))
    return -1;
  if ((h = take_digits(&p, 2)) < 0 || !take(&p, ':') ||
      (mi = take_digits(&p, 2)) < 0 || !take(&p, ':') ||
      (sec = take_digits(&p, 2)) < 0)
    return -1;
  if (take(&p, '.')) {
    frac = p;
    while (*p >= '0' && *p <= '9')
      p++;
    nfrac = (int)(p - frac);
    if (nfrac == 0 || nfrac > 12)
      return -1;
  }
  take(&p, ' ');
  if ((off = zone_offset(p)) == -1)
    return -1;
  if (y < 1 || mo < 1 || mo > 12 || d < 1 ||
      d > mdays[mo - 1] + (mo == 2 && leap(y)) || h > 23 || mi > 59 || sec > 60)
    return -1;

  /* to UTC; a leap second (:60) rolls into the next minute, as in
   * PostgreSQL */
  t = db_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
  days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
  t -= days * 86400;
  civil_from_days(days, &y, &mo, &d);
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

/* ---- rows ---------------------------------------------------------------- */

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

/* The value of key in o if it is a non-empty string, else NULL. Borrowed. */
/* The rules both row parsers (Jansson's and fast_json's) apply to the
 * strings they find; each returns 0, or -1 when the row must be rejected. */

/* The region of a zone ("us-central1-a" → "us-central1") into out. */
static int zone_region(const char *zone, char *out, size_t outlen)
{
  const char *dash = strrchr(zone, '-');
  size_t n = dash && dash != zone ? (size_t)(dash - zone) : strlen(zone);

  if (n >= outlen)
    return -1;
  memcpy(out, zone, n);
  out[n] = '\0';
  return 0;
}

/* invoice.month "YYYYMM" (or "YYYY-MM") → "YYYY-MM" in out. */
static int invoice_month(const char *m, char out[8])
{
  const char *p = m;
  long y = take_digits(&p, 4), mo;

  take(&p, '-');
  mo = take_digits(&p, 2);
  if (y < 1 || mo < 1 || mo > 12 || *p)
    return -1;
  put_digits(out, y, 4);
  out[4] = '-';
  put_digits(out + 5, mo, 2);
  out[7] = '\0';
  return 0;
}

/* Which usage amount gives a GPU SKU's GPU-hours: 1, amount in pricing
 * units when those are hours; 3600, amount in seconds; 0, none (not a GPU
 * SKU, or no usable amount). */
static int gpu_divisor(const char *sku_desc, const char *pricing_unit,
                       bool has_in_pricing, const char *unit, bool has_amount)
{
  if (!sku_desc || !strcasestr(sku_desc, "GPU"))
    return 0;
  if (pricing_unit && !strcmp(pricing_unit, "hour") && has_in_pricing)
    return 1;
  if (unit && !strcmp(unit, "seconds") && has_amount)
    return 3600;
  return 0;
}

static const char *nonempty(const json_t *o, const char *key)
{
  const char *s = json_string_value(json_object_get(o, key));

  return s && *s ? s : NULL;
}

/* A JSON number as decimal text (see billing_ingest.h on "%.15g"). */
static void number_text(const json_t *v, char *out, size_t len)
{
  if (json_is_integer(v))
    snprintf(out, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  else
    snprintf(out, len, "%.15g", json_real_value(v));
}

/* Whether key of o is absent or null. */
static bool absent(const json_t *o, const char *key)
{
  const json_t *v = json_object_get(o, key);

  return !v || json_is_null(v);
}

/* service / sku: an object with a description or an id. */
static int named(const json_t *row, const char *key, const char **name,
                 char *err, size_t errlen)
{
  const json_t *o = json_object_get(row, key);

  if (!o || json_is_null(o))
    return fail(err, errlen, "%s: required", key);
  if (!json_is_object(o))
    return fail(err, errlen, "%s: not an object", key);
  *name = nonempty(o, "description");
  if (!*name)
    *name = nonempty(o, "id");
  if (!*name)
    return fail(err, errlen, "%s: needs an id or a description", key);
  if (strlen(*name) > BILLING_NAME_MAX)
    return fail(err, errlen, "%s: longer than %d bytes", key, BILLING_NAME_MAX);
  return 0;
}

static int parse_labels(const json_t *row, struct billing_row *r, char *err,
                        size_t errlen)
{
  const json_t *labels = json_object_get(row, "labels"), *l, *v;
  size_t i;

  r->db.team = BILLING_UNATTRIBUTED;
  r->db.flavor = "";
  if (absent(row, "labels"))
    return 0;
  if (!json_is_array(labels))
    return fail(err, errlen, "labels: not an array");
  json_array_foreach (labels, i, l) {
    const char *key, *value;
    if (!json_is_object(l))
      return fail(err, errlen, "labels[%zu]: not an object", i);
    key = json_string_value(json_object_get(l, "key"));
    if (!key)
      return fail(err, errlen, "labels[%zu].key: not a string", i);
    v = json_object_get(l, "value");
    if (v && !json_is_null(v) && !json_is_string(v))
      return fail(err, errlen, "labels[%zu].value: not a string", i);
    value = v ? json_string_value(v) : NULL;
    if (value && strlen(value) > BILLING_NAME_MAX &&
        (!strcmp(key, "gpugate-team") || !strcmp(key, "gpugate-flavor")))
      return fail(err, errlen, "labels[%zu].value: longer than %d bytes", i,
                  BILLING_NAME_MAX);
    if (!strcmp(key, "gpugate-team"))
      r->db.team = value && *value ? value : BILLING_UNATTRIBUTED;
    else if (!strcmp(key, "gpugate-flavor"))
      r->db.flavor = value ? value : "";
  }
  return 0;
}

static int parse_credits(const json_t *row, struct billing_row *r, char *err,
                         size_t errlen)
{
  const json_t *credits = json_object_get(row, "credits"), *c, *amount;
  char text[32];
  size_t i;

  snprintf(r->credits, sizeof(r->credits), "0");
  if (absent(row, "credits"))
    return 0;
  if (!json_is_array(credits))
    return fail(err, errlen, "credits: not an array");
  json_array_foreach (credits, i, c) {
    if (!json_is_object(c))
      return fail(err, errlen, "credits[%zu]: not an object", i);
    amount = json_object_get(c, "amount");
    if (!json_is_number(amount))
      return fail(err, errlen, "credits[%zu].amount: not a number", i);
    number_text(amount, text, sizeof(text));
    if (billing_dec_add(r->credits, text) != 0)
      return fail(err, errlen, "credits: sum out of range");
  }
  return 0;
}

/* location.region, else location.location, else location.zone's region
 * ("us-central1-a" → "us-central1"), else "". */
static int parse_location(const json_t *row, struct billing_row *r, char *err,
                          size_t errlen)
{
  const json_t *loc = json_object_get(row, "location");
  const char *s;

  r->location[0] = '\0';
  r->db.location = r->location;
  if (absent(row, "location"))
    return 0;
  if (!json_is_object(loc))
    return fail(err, errlen, "location: not an object");
  if ((s = nonempty(loc, "region")) || (s = nonempty(loc, "location"))) {
    if (strlen(s) > BILLING_NAME_MAX)
      return fail(err, errlen, "location: longer than %d bytes",
                  BILLING_NAME_MAX);
    r->db.location = s;
    return 0;
  }
  s = nonempty(loc, "zone");
  if (s && zone_region(s, r->location, sizeof(r->location)) != 0)
    return fail(err, errlen, "location: longer than %d bytes",
                BILLING_NAME_MAX);
  return 0;
}

/* GPU-hours of GPU SKUs: usage in pricing units when those are hours,
 * else seconds of usage / 3600 (divided in SQL, exactly). */
static int parse_usage(const json_t *row, const json_t *sku,
                       struct billing_row *r, char *err, size_t errlen)
{
  const json_t *usage = json_object_get(row, "usage");
  const char *desc = json_string_value(json_object_get(sku, "description"));
  const json_t *in_pricing, *amount;

  snprintf(r->gpu_amount, sizeof(r->gpu_amount), "0");
  r->db.gpu_divisor = 0;
  if (absent(row, "usage"))
    return 0;
  if (!json_is_object(usage))
    return fail(err, errlen, "usage: not an object");
  in_pricing = json_object_get(usage, "amount_in_pricing_units");
  amount = json_object_get(usage, "amount");
  if (in_pricing && !json_is_null(in_pricing) && !json_is_number(in_pricing))
    return fail(err, errlen, "usage.amount_in_pricing_units: not a number");
  if (amount && !json_is_null(amount) && !json_is_number(amount))
    return fail(err, errlen, "usage.amount: not a number");
  r->db.gpu_divisor = gpu_divisor(
      desc, json_string_value(json_object_get(usage, "pricing_unit")),
      json_is_number(in_pricing),
      json_string_value(json_object_get(usage, "unit")),
      json_is_number(amount));
  if (r->db.gpu_divisor)
    number_text(r->db.gpu_divisor == 1 ? in_pricing : amount, r->gpu_amount,
                sizeof(r->gpu_amount));
  return 0;
}

/* invoice.month "YYYYMM" (or "YYYY-MM") → "YYYY-MM"; "" when absent. */
static int parse_invoice(const json_t *row, struct billing_row *r, char *err,
                         size_t errlen)
{
  const json_t *inv = json_object_get(row, "invoice"), *month;
  const char *m;

  r->invoice_month[0] = '\0';
  if (absent(row, "invoice"))
    return 0;
  if (!json_is_object(inv))
    return fail(err, errlen, "invoice: not an object");
  month = json_object_get(inv, "month");
  if (!month || json_is_null(month))
    return 0;
  m = json_string_value(month);
  if (invoice_month(m ? m : "", r->invoice_month) != 0)
    return fail(err, errlen, "invoice.month: not YYYYMM");
  return 0;
}

/* SHA-256 of the canonical dump of doc. Rows fit the stack buffer; a
 * larger one is dumped into the heap. Returns 0 or -1 (memory). */
static int canonical_hash(const json_t *doc, unsigned char *hash)
{
  const size_t flags = JSON_SORT_KEYS | JSON_COMPACT;
  char stack[8192], *text = stack;
  size_t n = json_dumpb(doc, stack, sizeof(stack), flags);
  unsigned int hn = 0;
  int ok;

  if (n == 0)
    return -1;
  if (n > sizeof(stack)) {
    text = malloc(n);
    if (!text || json_dumpb(doc, text, n, flags) != n) {
      free(text);
      return -1;
    }
  }
  ok = EVP_Digest(text, n, hash, &hn, EVP_sha256(), NULL);
  if (text != stack)
    free(text);
  return ok && hn == DB_BILLING_HASH_LEN ? 0 : -1;
}

int billing_parse_row_jansson(const char *line, size_t len,
                              struct billing_row *out, char *err, size_t errlen)
{
  json_error_t jerr;
  const json_t *v;
  const char *s;
  size_t i;

  memset(out, 0, sizeof(*out));
  out->doc = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!out->doc)
    return fail(err, errlen, "not JSON: %s (column %d)", jerr.text,
                jerr.column);
  if (!json_is_object(out->doc)) {
    fail(err, errlen, "not a JSON object");
    goto bad;
  }

  v = json_object_get(out->doc, "cost");
  if (!v || json_is_null(v)) {
    fail(err, errlen, "cost: required");
    goto bad;
  }
  if (!json_is_number(v)) {
    fail(err, errlen, "cost: not a number");
    goto bad;
  }
  number_text(v, out->cost, sizeof(out->cost));

  s = json_string_value(json_object_get(out->doc, "currency"));
  for (i = 0; s && s[i] && i < 4; i++)
    if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z')))
      break;
  if (!s || i != 3 || s[3]) {
    fail(err, errlen, "currency: not a 3-letter code");
    goto bad;
  }
  for (i = 0; i < 3; i++)
    out->currency[i] = (char)(s[i] >= 'a' ? s[i] - 'a' + 'A' : s[i]);
  out->currency[3] = '\0';

  s = json_string_value(json_object_get(out->doc, "usage_start_time"));
  if (!s || billing_parse_timestamp(s, out->usage_start, out->usage_day)) {
    fail(err, errlen, "usage_start_time: not a timestamp");
    goto bad;
  }

  if (named(out->doc, "service", &out->db.service, err, errlen) ||
      named(out->doc, "sku", &out->db.sku, err, errlen) ||
      parse_credits(out->doc, out, err, errlen) ||
      parse_labels(out->doc, out, err, errlen) ||
      parse_location(out->doc, out, err, errlen) ||
      parse_invoice(out->doc, out, err, errlen) ||
      parse_usage(out->doc, json_object_get(out->doc, "sku"), out, err, errlen))
    goto bad;

  if (canonical_hash(out->doc, out->db.hash) != 0) {
    fail(err, errlen, "out of memory");
    goto bad;
  }
  out->db.currency = out->currency;
  out->db.usage_start = out->usage_start;
  out->db.usage_day = out->usage_day;
  out->db.invoice_month = out->invoice_month;
  out->db.cost = out->cost;
  out->db.credits = out->credits;
  out->db.gpu_amount = out->gpu_amount;
  out->db.row = line;
  out->db.row_len = len;
  return 0;
bad:
  billing_row_clear(out);
  return -1;
}

/* ---- the fast path --------------------------------------------------------
 *
 * The Jansson path above allocates a value per JSON value and then dumps
 * the tree again, sorted, for the hash: most of the engine's time. The
 * fast path does the same work in one pass over the line and without
 * allocating per row: it checks the JSON, writes the canonical text (what
 * json_dumpb(JSON_SORT_KEYS | JSON_COMPACT) of Jansson 2.14 writes) as it
 * goes, sorting the members of each object when it closes, and keeps a
 * flat tree of the values (in a scratch reused from row to row) for the
 * field checks.
 *
 * It only ever accepts. Whatever it does not handle exactly as Jansson
 * does (any JSON error, a duplicate key, an integer of 19 digits or more,
 * nesting deeper than FAST_DEPTH, a real Jansson cannot dump) and every row
 * the field checks would reject go to the Jansson path, so that rejections
 * and their messages are the Jansson path's by construction. For accepted
 * rows the unit tests compare both paths, field by field and hash by hash,
 * on many generated rows.
 */
#define FAST_DEPTH 64
#define FAST_NUM_MAX 64        /* longer numbers: the Jansson path */
#define FAST_REAL_MAX 32       /* Jansson's dump holds every "%.17g" (24) */
#define SCRATCH_KEEP (1 << 20) /* bytes of buffers kept between rows */

enum fkind {
  FK_OBJ,
  FK_ARR,
  FK_STR,
  FK_INT,
  FK_REAL,
  FK_TRUE,
  FK_FALSE,
  FK_NULL
};

struct fnode {
  enum fkind kind;
  const char *key; /* members of an object: the decoded key */
  size_t keylen;
  const char *str; /* FK_STR: its text (see f_string); numbers: the text */
  size_t len;
  bool cooked; /* FK_STR: str is decoded and NUL-terminated, in strs */
  int child, last, next; /* first and last child, next sibling; -1: none */
};

struct fmember {
  const char *key;
  size_t keylen;
  uint64_t pfx;      /* the key's first 8 bytes, big-endian, zero-padded */
  size_t start, end; /* its "key":value in the canonical text */
};

/* The members of a row the field checks read. */
enum {
  T_COST,
  T_CURRENCY,
  T_START,
  T_SERVICE,
  T_SKU,
  T_CREDITS,
  T_LABELS,
  T_LOCATION,
  T_INVOICE,
  T_USAGE,
  T_N
};

struct billing_scratch {
  int top[T_N]; /* their nodes in the row, or -1 */
  struct fnode *nodes;
  size_t n_nodes, cap_nodes;
  struct fmember *mem; /* the members of the open objects */
  size_t n_mem, cap_mem;
  char *canon; /* the canonical text */
  size_t canon_len, canon_cap;
  char *tmp; /* an object's members while they are sorted */
  size_t tmp_cap;
  char *strs; /* decoded strings; sized for the row, so never moved */
  size_t strs_len, strs_cap;
  EVP_MD *sha256;
  EVP_MD_CTX *md;
};

struct billing_scratch *billing_scratch_new(void)
{
  struct billing_scratch *s = calloc(1, sizeof(*s));

  if (!s)
    return NULL;
  s->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
  s->md = EVP_MD_CTX_new();
  if (!s->sha256 || !s->md) {
    billing_scratch_free(s);
    return NULL;
  }
  return s;
}

/* Give back buffers a huge row grew. */
static void scratch_trim(struct billing_scratch *s)
{
  if (s->cap_nodes * sizeof(*s->nodes) > SCRATCH_KEEP) {
    free(s->nodes);
    s->nodes = NULL;
    s->cap_nodes = 0;
  }
  if (s->cap_mem * sizeof(*s->mem) > SCRATCH_KEEP) {
    free(s->mem);
    s->mem = NULL;
    s->cap_mem = 0;
  }
  if (s->canon_cap > SCRATCH_KEEP) {
    free(s->canon);
    s->canon = NULL;
    s->canon_cap = 0;
  }
  if (s->tmp_cap > SCRATCH_KEEP) {
    free(s->tmp);
    s->tmp = NULL;
    s->tmp_cap = 0;
  }
  if (s->strs_cap > SCRATCH_KEEP) {
    free(s->strs);
    s->strs = NULL;
    s->strs_cap = 0;
  }
}

void billing_scratch_free(struct billing_scratch *s)
{
  if (!s)
    return;
  free(s->nodes);
  free(s->mem);
  free(s->canon);
  free(s->tmp);
  free(s->strs);
  EVP_MD_CTX_free(s->md);
  EVP_MD_free(s->sha256);
  free(s);
}

/* p (of *cap elements of size bytes) grown to hold need: the new block, or
 * NULL with p untouched. */
static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
  size_t c = *cap ? *cap : 64;
  void *g;

  while (c < need)
    c *= 2;
  g = realloc(p, c * size);
  if (g)
    *cap = c;
  return g;
}

/* Room for n more bytes of canonical text. */
static int c_room(struct billing_scratch *s, size_t n)
{
  char *g;

  if (s->canon_cap - s->canon_len >= n)
    return 0;
  g = grow(s->canon, &s->canon_cap, s->canon_len + n, 1);
  if (!g)
    return -1;
  s->canon = g;
  return 0;
}

static void c_put(struct billing_scratch *s, const char *p, size_t n)
{
  memcpy(s->canon + s->canon_len, p, n);
  s->canon_len += n;
}

struct fparse {
  struct billing_scratch *s;
  const char *p, *end;
  int depth;
};

static void f_ws(struct fparse *f)
{
  while (f->p < f->end &&
         (*f->p == ' ' || *f->p == '\t' || *f->p == '\n' || *f->p == '\r'))
    f->p++;
}

static bool f_at(const struct fparse *f, char c)
{
  return f->p < f->end && *f->p == c;
}

static bool is_digit(char c)
{
  return c >= '0' && c <= '9';
}

/* A new node of kind, child of parent (-1: none), as key (NULL: none):
 * its index, or -1 when out of memory. */
static int f_node(struct fparse *f, enum fkind kind, int parent,
                  const char *key, size_t keylen)
{
  struct billing_scratch *s = f->s;
  struct fnode *n;
  int i;

  if (s->n_nodes >= (size_t)INT32_MAX)
    return -1;
  if (s->n_nodes == s->cap_nodes) {
    struct fnode *g =
        grow(s->nodes, &s->cap_nodes, s->n_nodes + 1, sizeof(*s->nodes));
    if (!g)
      return -1;
    s->nodes = g;
  }
  i = (int)s->n_nodes++;
  n = &s->nodes[i];
  n->kind = kind;
  n->key = key;
  n->keylen = keylen;
  n->str = NULL;
  n->len = 0;
  n->cooked = false;
  n->child = n->last = n->next = -1;
  if (parent >= 0) {
    struct fnode *p = &s->nodes[parent];
    if (p->last >= 0)
      s->nodes[p->last].next = i;
    else
      p->child = i;
    p->last = i;
  }
  return i;
}

/* The UTF-8 sequence at p: its length, or 0 when Jansson would not decode
 * it (overlong forms, surrogates, beyond U+10FFFF, truncated). */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
  unsigned c = p[0];
  size_t n, i;

  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4;
  else
    return 0;
  if ((size_t)(end - p) < n)
    return 0;
  for (i = 1; i < n; i++)
    if ((p[i] & 0xC0) != 0x80)
      return 0;
  if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0) ||
      (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90))
    return 0;
  return n;
}

/* Four hex digits at p (end permitting) as *out; 0 or -1. */
static int hex4(const unsigned char *p, const unsigned char *end, unsigned *out)
{
  unsigned v = 0;
  int i;

  if (end - p < 4)
    return -1;
  for (i = 0; i < 4; i++) {
    unsigned c = p[i];
    if (c >= '0' && c <= '9')
      v = v * 16 + (c - '0');
    else if (c >= 'a' && c <= 'f')
      v = v * 16 + (c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v = v * 16 + (c - 'A' + 10);
    else
      return -1;
  }
  *out = v;
  return 0;
}

static size_t utf8_put(char *d, unsigned cp)
{
  if (cp < 0x80) {
    d[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    d[0] = (char)(0xC0 | (cp >> 6));
    d[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    d[0] = (char)(0xE0 | (cp >> 12));
    d[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    d[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  d[0] = (char)(0xF0 | (cp >> 18));
  d[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  d[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  d[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Write decoded string d[0..n) as Jansson's dump does (no ASCII escaping,
 * '/' as it is, other control characters as \u00XX). */
static int c_string(struct billing_scratch *s, const char *d, size_t n)
{
  static const char hex[] = "0123456789ABCDEF";
  size_t i;

  if (c_room(s, 6 * n + 2) != 0)
    return -1;
  s->canon[s->canon_len++] = '"';
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)d[i];
    const char *e = NULL;
    switch (c) {
    case '"':
      e = "\\\"";
      break;
    case '\\':
      e = "\\\\";
      break;
    case '\b':
      e = "\\b";
      break;
    case '\f':
      e = "\\f";
      break;
    case '\n':
      e = "\\n";
      break;
    case '\r':
      e = "\\r";
      break;
    case '\t':
      e = "\\t";
      break;
    default:
      break;
    }
    if (e) {
      c_put(s, e, 2);
    } else if (c < 0x20) {
      char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      c_put(s, u, 6);
    } else {
      s->canon[s->canon_len++] = (char)c;
    }
  }
  s->canon[s->canon_len++] = '"';
  return 0;
}

/* The first byte at or after p that is not plain string text: printable
 * ASCII other than '"' and '\\' (so a quote, a backslash, a control
 * character or a non-ASCII byte), or end. */
static const unsigned char *skip_plain(const unsigned char *p,
                                       const unsigned char *end)
{
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                space = _mm_set1_epi8(0x20);

  while (end - p >= 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    /* signed: bytes from 0x80 are negative, below the space too */
    int mask = _mm_movemask_epi8(_mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
        _mm_cmplt_epi8(x, space)));
    if (mask)
      return p + __builtin_ctz((unsigned)mask);
    p += 16;
  }
#endif
  while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
    p++;
  return p;
}

/*
 * The string at f->p (its opening quote), written canonically. *out and
 * *outlen are its text: in the line itself when it has no escapes (*cooked
 * false; not NUL-terminated), else decoded into strs (*cooked true;
 * NUL-terminated).
 */
static int f_string(struct fparse *f, const char **out, size_t *outlen,
                    bool *cooked)
{
  struct billing_scratch *s = f->s;
  const unsigned char *p = (const unsigned char *)f->p + 1,
                      *end = (const unsigned char *)f->end, *raw = p;
  char *d0, *d;

  for (;;) { /* as long as there is no escape */
    size_t n;
    p = skip_plain(p, end);
    if (p >= end || *p < 0x20)
      return -1;
    if (*p == '"') {
      /* as it came: nothing the dump would escape either */
      *out = (const char *)raw;
      *outlen = (size_t)(p - raw);
      *cooked = false;
      f->p = (const char *)p + 1;
      if (c_room(s, *outlen + 2) != 0)
        return -1;
      s->canon[s->canon_len++] = '"';
      c_put(s, *out, *outlen);
      s->canon[s->canon_len++] = '"';
      return 0;
    }
    if (*p == '\\')
      break;
    if ((n = utf8_len(p, end)) == 0)
      return -1;
    p += n;
  }
  /* escapes: decode into strs */
  d0 = d = s->strs + s->strs_len;
  memcpy(d, raw, (size_t)(p - raw));
  d += p - raw;
  for (;;) {
    unsigned c, cp, lo;
    size_t n;
    if (p >= end)
      return -1;
    c = *p;
    if (c == '"')
      break;
    if (c < 0x20)
      return -1;
    if (c < 0x80 && c != '\\') {
      *d++ = (char)c;
      p++;
      continue;
    }
    if (c >= 0x80) {
      if ((n = utf8_len(p, end)) == 0)
        return -1;
      memcpy(d, p, n);
      d += n;
      p += n;
      continue;
    }
    if (end - p < 2)
      return -1;
    switch (p[1]) {
    case '"':
    case '\\':
    case '/':
      *d++ = (char)p[1];
      p += 2;
      continue;
    case 'b':
      *d++ = '\b';
      p += 2;
      continue;
    case 'f':
      *d++ = '\f';
      p += 2;
      continue;
    case 'n':
      *d++ = '\n';
      p += 2;
      continue;
    case 'r':
      *d++ = '\r';
      p += 2;
      continue;
    case 't':
      *d++ = '\t';
      p += 2;
      continue;
    case 'u':
      break;
    default:
      return -1;
    }
    if (hex4(p + 2, end, &cp) != 0 || cp == 0)
      return -1;
    p += 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (end - p < 6 || p[0] != '\\' || p[1] != 'u' ||
          hex4(p + 2, end, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF)
        return -1;
      p += 6;
      cp = ((cp - 0xD800) << 10) + (lo - 0xDC00) + 0x10000;
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      return -1;
    }
    d += utf8_put(d, cp);
  }
  *d = '\0';
  *out = d0;
  *outlen = (size_t)(d - d0);
  *cooked = true;
  s->strs_len += *outlen + 1;
  f->p = (const char *)p + 1;
  return c_string(s, d0, *outlen);
}

/* ---- reals without printf ------------------------------------------------
 *
 * Each real of a row is read (strtod) and written back with 17 significant
 * digits for the canonical text, amounts with 15. glibc does both exactly
 * but slowly (multi-precision arithmetic). For most values exact 64- and
 * 128-bit integer arithmetic does the same: these functions take that
 * path and leave every other value to glibc, with the same results (the
 * unit tests compare the two on many values).
 */

__extension__ typedef unsigned __int128 u128;

static const double pow10_dbl[] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* 5^0 .. 5^27, the powers below 2^63 */
static const uint64_t pow5_u64[] = {1u,
                                    5u,
                                    25u,
                                    125u,
                                    625u,
                                    3125u,
                                    15625u,
                                    78125u,
                                    390625u,
                                    1953125u,
                                    9765625u,
                                    48828125u,
                                    244140625u,
                                    1220703125u,
                                    6103515625u,
                                    30517578125u,
                                    152587890625u,
                                    762939453125u,
                                    3814697265625u,
                                    19073486328125u,
                                    95367431640625u,
                                    476837158203125u,
                                    2384185791015625u,
                                    11920928955078125u,
                                    59604644775390625u,
                                    298023223876953125u,
                                    1490116119384765625u,
                                    7450580596923828125u};

/*
 * strtod of a JSON number's text (valid, len < FAST_NUM_MAX). Clinger's
 * fast path: a significand below 2^53 and a power of ten up to 10^22 are
 * both exact doubles, so one multiplication or division, rounded to
 * nearest, is the correctly rounded value strtod returns.
 */
static double read_real(const char *s, size_t len)
{
  char text[FAST_NUM_MAX];
  uint64_t m = 0;
  size_t i = 0;
  int nd = 0, frac = 0, e = 0;
  bool neg = false, point = false;

  if (FLT_EVAL_METHOD != 0)
    goto slow;
  if (s[0] == '-') {
    neg = true;
    i = 1;
  }
  for (; i < len; i++) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      frac += point;
      if (m == 0 && c == '0')
        continue;
      if (++nd > 19)
        goto slow;
      m = m * 10 + (uint64_t)(c - '0');
    } else if (c == '.') {
      point = true;
    } else {
      break;
    }
  }
  if (i < len) { /* the exponent */
    bool eneg = false;
    int ev = 0;
    i++;
    if (s[i] == '+' || s[i] == '-')
      eneg = s[i++] == '-';
    for (; i < len; i++) {
      if (ev > 100000)
        goto slow;
      ev = ev * 10 + (s[i] - '0');
    }
    e = eneg ? -ev : ev;
  }
  e -= frac;
  if (m == 0)
    return neg ? -0.0 : 0.0;
  if (m <= (uint64_t)1 << 53 && e >= -22 && e <= 22) {
    double v = (double)m;
    v = e >= 0 ? v * pow10_dbl[e] : v / pow10_dbl[-e];
    return neg ? -v : v;
  }
slow:
  memcpy(text, s, len);
  text[len] = '\0';
  return strtod(text, NULL);
}

static u128 pow10_u128(int k)
{
  u128 v = 1;

  while (k-- > 0)
    v *= 10;
  return v;
}

/*
 * The first p (15 or 17) significant digits of v > 0 as printf rounds them
 * (to nearest, ties to even, on the exact binary value): *d, with
 * 10^(p-1) <= *d < 10^p, and the decimal exponent *x of the first one.
 * False when v is outside what 128 bits do exactly.
 */
static bool sig_digits(double v, int p, uint64_t *d, int *x)
{
  uint64_t bits, m, lo = pow10_u64[p - 1], hi = pow10_u64[p];
  int be, e2, k, tries;
  u128 q;

  memcpy(&bits, &v, sizeof(bits));
  be = (int)((bits >> 52) & 0x7FF);
  if (be == 0 || be == 0x7FF)
    return false; /* subnormal, infinite or NaN */
  m = (bits & (((uint64_t)1 << 52) - 1)) | (uint64_t)1 << 52;
  e2 = be - 1075; /* v = m × 2^e2 */
  /* floor(log10(v)), or one less: v is in [2^E, 2^(E+1)), log10(2) is
   * about 78913 / 2^18; the loop below corrects the estimate */
  {
    int e = be - 1023;
    *x = e >= 0 ? (e * 78913) >> 18 : -((-e * 78913 + (1 << 18) - 1) >> 18);
  }
  for (tries = 0; tries < 3; tries++) {
    bool up;        /* whether the digits after the p-th round q up */
    k = p - 1 - *x; /* q = v × 10^k, truncated */
    if (k >= 0) {
      u128 num;
      int sh;
      if (k > 27)
        return false;
      num = (u128)m * pow5_u64[k]; /* < 2^116 */
      sh = e2 + k;
      if (sh >= 0) {
        if (sh > 8)
          return false;
        q = num << sh;
        up = false;
      } else {
        u128 rem, half;
        if (-sh > 120)
          return false;
        rem = num & (((u128)1 << -sh) - 1);
        half = (u128)1 << (-sh - 1);
        q = num >> -sh;
        up = rem > half || (rem == half && (q & 1));
      }
    } else {
      u128 num, den, rem;
      if (-k > 38 || e2 < 0 || e2 > 74)
        return false;
      num = (u128)m << e2;
      den = pow10_u128(-k);
      q = num / den;
      rem = num % den;
      up = 2 * rem > den || (2 * rem == den && (q & 1));
    }
    /* the estimate of the exponent was off when v × 10^k has not p digits */
    if (q >= hi) {
      (*x)++;
    } else if (q < lo) {
      (*x)--;
    } else {
      q += up;
      if (q == hi) { /* 9.99…95 rounds to 10.0…0: one exponent up */
        q = lo;
        (*x)++;
      }
      *d = (uint64_t)q;
      return true;
    }
  }
  return false;
}

/*
 * printf's "%.<p>g" of ±d × 10^(x - p + 1) (from sig_digits) into out (32
 * bytes); with jansson, as Jansson 2.14's jsonp_dtostr then rewrites it:
 * ".0" after an integer, no '+' nor leading zeros in the exponent.
 */
static size_t g_format(bool neg, uint64_t d, int x, int p, bool jansson,
                       char *out)
{
  char dig[20] = {0};
  int n = p, i;
  size_t o = 0;

  for (i = p - 1; i >= 0; i--) {
    dig[i] = (char)('0' + d % 10);
    d /= 10;
  }
  while (n > 1 && dig[n - 1] == '0')
    n--; /* trailing zeros are not written */
  if (neg)
    out[o++] = '-';
  if (x < -4 || x >= p) {
    int ax = x < 0 ? -x : x;
    out[o++] = dig[0];
    if (n > 1) {
      out[o++] = '.';
      memcpy(out + o, dig + 1, (size_t)n - 1);
      o += (size_t)n - 1;
    }
    out[o++] = 'e';
    if (x < 0)
      out[o++] = '-';
    else if (!jansson)
      out[o++] = '+';
    if (ax >= 100)
      out[o++] = (char)('0' + ax / 100);
    if (ax >= 10 || !jansson)
      out[o++] = (char)('0' + ax / 10 % 10);
    out[o++] = (char)('0' + ax % 10);
  } else if (x >= 0) {
    memcpy(out + o, dig, (size_t)x + 1);
    o += (size_t)x + 1;
    if (n > x + 1) {
      out[o++] = '.';
      memcpy(out + o, dig + x + 1, (size_t)(n - x - 1));
      o += (size_t)(n - x - 1);
    } else if (jansson) {
      out[o++] = '.';
      out[o++] = '0';
    }
  } else {
    out[o++] = '0';
    out[o++] = '.';
    for (i = 0; i < -x - 1; i++)
      out[o++] = '0';
    memcpy(out + o, dig, (size_t)n);
    o += (size_t)n;
  }
  out[o] = '\0';
  return o;
}

/*
 * A real as Jansson 2.14 dumps it (jsonp_dtostr, precision 17): "%.17g",
 * ".0" added when it looks like an integer, the exponent's '+' and leading
 * zeros removed. Its length, or 0 when Jansson's buffer could not hold it
 * (the dump then fails).
 */
static size_t real_text(double v, char *buf, size_t size)
{
  uint64_t d;
  int ret, x;
  size_t length;
  char *start, *stop;

  if (v == 0 && size >= 5)
    return (size_t)snprintf(buf, size, "%s", signbit(v) ? "-0.0" : "0.0");
  if (size >= 32 && sig_digits(fabs(v), 17, &d, &x))
    return g_format(signbit(v) != 0, d, x, 17, true, buf);
  ret = snprintf(buf, size, "%.17g", v);
  if (ret < 0 || (size_t)ret >= size)
    return 0;
  length = (size_t)ret;
  if (!strchr(buf, '.') && !strchr(buf, 'e')) {
    if (length + 3 >= size)
      return 0;
    memcpy(buf + length, ".0", 3);
    length += 2;
  }
  start = strchr(buf, 'e');
  if (start) {
    start++;
    stop = start + 1;
    if (*start == '-')
      start++;
    while (*stop == '0')
      stop++;
    if (stop != start) {
      memmove(start, stop, length - (size_t)(stop - buf) + 1);
      length -= (size_t)(stop - start);
    }
  }
  return length;
}

/* snprintf(out, 32, "%.15g", v) */
static void real15(double v, char *out)
{
  uint64_t d;
  int x;

  if (v != 0 && sig_digits(fabs(v), 15, &d, &x))
    g_format(signbit(v) != 0, d, x, 15, false, out);
  else
    snprintf(out, 32, "%.15g", v);
}

size_t billing_real_text(double v, char *buf, size_t size)
{
  return real_text(v, buf, size);
}

void billing_real15(double v, char out[32])
{
  real15(v, out);
}

double billing_read_real(const char *s, size_t len)
{
  return len < FAST_NUM_MAX ? read_real(s, len) : strtod(s, NULL);
}

/* The number at f->p, into node i, written canonically. */
static int f_number(struct fparse *f, int i)
{
  struct billing_scratch *s = f->s;
  const char *p = f->p, *start = p, *end = f->end;
  char out[FAST_REAL_MAX];
  size_t len, n;
  int digits = 0;
  bool real = false;
  double v;

  if (p < end && *p == '-')
    p++;
  if (p < end && *p == '0') {
    p++;
    digits = 1;
    if (p < end && is_digit(*p))
      return -1;
  } else if (p < end && is_digit(*p)) {
    for (; p < end && is_digit(*p); p++)
      digits++;
  } else {
    return -1;
  }
  if (p < end && *p == '.') {
    p++;
    if (p >= end || !is_digit(*p))
      return -1;
    while (p < end && is_digit(*p))
      p++;
    real = true;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-'))
      p++;
    if (p >= end || !is_digit(*p))
      return -1;
    while (p < end && is_digit(*p))
      p++;
    real = true;
  }
  len = (size_t)(p - start);
  f->p = p;
  s->nodes[i].str = start;
  s->nodes[i].len = len;
  if (!real) {
    /* within strtoll's range for sure; Jansson writes it back as "%lld" */
    if (digits > 18 || c_room(s, len) != 0)
      return -1;
    s->nodes[i].kind = FK_INT;
    if (len == 2 && start[0] == '-' && start[1] == '0')
      c_put(s, "0", 1);
    else
      c_put(s, start, len);
    return 0;
  }
  if (len >= FAST_NUM_MAX)
    return -1;
  v = read_real(start, len);
  if (isinf(v) || (n = real_text(v, out, sizeof(out))) == 0 ||
      c_room(s, n) != 0)
    return -1;
  s->nodes[i].kind = FK_REAL;
  c_put(s, out, n);
  return 0;
}

static uint64_t key_prefix(const char *key, size_t n)
{
  uint64_t v = 0;
  size_t i;

  if (n >= 8) {
    memcpy(&v, key, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
  }
  for (i = 0; i < 8; i++)
    v = v << 8 | (i < n ? (unsigned char)key[i] : 0u);
  return v;
}

/* Keys compare as Jansson's sort does: strcmp of the decoded keys (which
 * hold no NUL, so that the zero padding of the prefixes sorts first). */
static int key_cmp(const struct fmember *a, const struct fmember *b)
{
  size_t n = a->keylen < b->keylen ? a->keylen : b->keylen;
  int c;

  if (a->pfx != b->pfx)
    return a->pfx < b->pfx ? -1 : 1;
  if (n > 8 && (c = memcmp(a->key + 8, b->key + 8, n - 8)) != 0)
    return c;
  return a->keylen < b->keylen ? -1 : a->keylen > b->keylen;
}

static int member_cmp(const void *a, const void *b)
{
  return key_cmp(a, b);
}

static int f_value(struct fparse *f, int i);

/* Rewrite the n members of an object, whose text starts at open + 1, in
 * key order. -1 on a duplicate key (or memory). */
static int f_sort(struct billing_scratch *s, size_t base, size_t n, size_t open)
{
  struct fmember *m = s->mem + base;
  const struct fmember *small[64], **order = small;
  size_t i, j, t = 0, total = s->canon_len - open - 1;

  if (n <= sizeof(small) / sizeof(small[0])) {
    for (i = 0; i < n; i++) { /* insertion sort of pointers */
      const struct fmember *x = &m[i];
      for (j = i; j > 0 && key_cmp(order[j - 1], x) > 0; j--)
        order[j] = order[j - 1];
      order[j] = x;
    }
  } else {
    qsort(m, n, sizeof(*m), member_cmp);
    order = NULL;
  }
  for (i = 1; i < n; i++)
    if (key_cmp(order ? order[i - 1] : &m[i - 1], order ? order[i] : &m[i]) ==
        0)
      return -1; /* Jansson: "duplicate object key" */
  if (s->tmp_cap < total) {
    char *g = grow(s->tmp, &s->tmp_cap, total, 1);
    if (!g)
      return -1;
    s->tmp = g;
  }
  for (i = 0; i < n; i++) {
    const struct fmember *x = order ? order[i] : &m[i];
    if (i > 0)
      s->tmp[t++] = ',';
    memcpy(s->tmp + t, s->canon + x->start, x->end - x->start);
    t += x->end - x->start;
  }
  memcpy(s->canon + open + 1, s->tmp, t);
  return 0;
}

static int f_object(struct fparse *f, int i)
{
  struct billing_scratch *s = f->s;
  size_t base = s->n_mem, open = s->canon_len;
  bool sorted = true;

  if (++f->depth > FAST_DEPTH || c_room(s, 1) != 0)
    return -1;
  s->canon[s->canon_len++] = '{';
  f->p++;
  f_ws(f);
  if (f_at(f, '}')) {
    f->p++;
  } else {
    for (;;) {
      struct fmember m;
      int child;
      bool cooked;
      if (!f_at(f, '"'))
        return -1;
      if (s->n_mem > base) {
        if (c_room(s, 1) != 0)
          return -1;
        s->canon[s->canon_len++] = ',';
      }
      m.start = s->canon_len;
      if (f_string(f, &m.key, &m.keylen, &cooked) != 0)
        return -1;
      m.pfx = key_prefix(m.key, m.keylen);
      f_ws(f);
      if (!f_at(f, ':') || c_room(s, 1) != 0)
        return -1;
      f->p++;
      s->canon[s->canon_len++] = ':';
      f_ws(f);
      if ((child = f_node(f, FK_NULL, i, m.key, m.keylen)) < 0 ||
          f_value(f, child) != 0)
        return -1;
      m.end = s->canon_len;
      if (s->n_mem == s->cap_mem) {
        struct fmember *g =
            grow(s->mem, &s->cap_mem, s->n_mem + 1, sizeof(*s->mem));
        if (!g)
          return -1;
        s->mem = g;
      }
      if (s->n_mem > base && key_cmp(&s->mem[s->n_mem - 1], &m) >= 0)
        sorted = false;
      s->mem[s->n_mem++] = m;
      f_ws(f);
      if (f_at(f, ',')) {
        f->p++;
        f_ws(f);
        continue;
      }
      if (!f_at(f, '}'))
        return -1;
      f->p++;
      break;
    }
  }
  if (!sorted && f_sort(s, base, s->n_mem - base, open) != 0)
    return -1;
  s->n_mem = base;
  if (c_room(s, 1) != 0)
    return -1;
  s->canon[s->canon_len++] = '}';
  f->depth--;
  return 0;
}

static int f_array(struct fparse *f, int i)
{
  struct billing_scratch *s = f->s;

  if (++f->depth > FAST_DEPTH || c_room(s, 1) != 0)
    return -1;
  s->canon[s->canon_len++] = '[';
  f->p++;
  f_ws(f);
  if (f_at(f, ']')) {
    f->p++;
  } else {
    for (;;) {
      int child = f_node(f, FK_NULL, i, NULL, 0);
      if (child < 0 || f_value(f, child) != 0)
        return -1;
      f_ws(f);
      if (f_at(f, ',')) {
        f->p++;
        f_ws(f);
        if (c_room(s, 1) != 0)
          return -1;
        s->canon[s->canon_len++] = ',';
        continue;
      }
      if (!f_at(f, ']'))
        return -1;
      f->p++;
      break;
    }
  }
  if (c_room(s, 1) != 0)
    return -1;
  s->canon[s->canon_len++] = ']';
  f->depth--;
  return 0;
}

/* A literal word: true, false or null. */
static int f_word(struct fparse *f, int i, const char *w, enum fkind kind)
{
  size_t n = strlen(w);

  if ((size_t)(f->end - f->p) < n || memcmp(f->p, w, n) != 0 ||
      c_room(f->s, n) != 0)
    return -1;
  f->p += n;
  f->s->nodes[i].kind = kind;
  c_put(f->s, w, n);
  return 0;
}

static int f_value(struct fparse *f, int i)
{
  if (f->p >= f->end)
    return -1;
  switch (*f->p) {
  case '{':
    f->s->nodes[i].kind = FK_OBJ;
    return f_object(f, i);
  case '[':
    f->s->nodes[i].kind = FK_ARR;
    return f_array(f, i);
  case '"': {
    const char *str;
    size_t len;
    bool cooked;
    if (f_string(f, &str, &len, &cooked) != 0)
      return -1;
    f->s->nodes[i].kind = FK_STR;
    f->s->nodes[i].str = str;
    f->s->nodes[i].len = len;
    f->s->nodes[i].cooked = cooked;
    return 0;
  }
  case 't':
    return f_word(f, i, "true", FK_TRUE);
  case 'f':
    return f_word(f, i, "false", FK_FALSE);
  case 'n':
    return f_word(f, i, "null", FK_NULL);
  default:
    return f_number(f, i);
  }
}

/* Parse line as a JSON object into s (node 0 is the object) with its
 * canonical text; -1 when the Jansson path must decide. */
static int fast_json(struct billing_scratch *s, const char *line, size_t len)
{
  struct fparse f = {s, line, line + len, 0};

  s->n_nodes = s->n_mem = s->canon_len = s->strs_len = 0;
  if (s->strs_cap < len + 1) {
    char *g = grow(s->strs, &s->strs_cap, len + 1, 1);
    if (!g)
      return -1;
    s->strs = g;
  }
  f_ws(&f);
  if (!f_at(&f, '{') || f_node(&f, FK_OBJ, -1, NULL, 0) != 0 ||
      f_value(&f, 0) != 0)
    return -1;
  f_ws(&f);
  return f.p == f.end ? 0 : -1;
}

/* ---- the fast path's field checks: the Jansson path's, on the flat tree */

/* Member key of object i (json_object_get); -1 when absent or i is not an
 * object. */
static int f_get(const struct billing_scratch *s, int i, const char *key)
{
  size_t n = strlen(key);
  int c;

  if (i < 0 || s->nodes[i].kind != FK_OBJ)
    return -1;
  for (c = s->nodes[i].child; c >= 0; c = s->nodes[c].next)
    if (s->nodes[c].keylen == n &&
        (n == 0 ||
         (s->nodes[c].key[0] == key[0] && !memcmp(s->nodes[c].key, key, n))))
      return c;
  return -1;
}

static bool f_is(const struct billing_scratch *s, int i, enum fkind kind)
{
  return i >= 0 && s->nodes[i].kind == kind;
}

static bool f_is_number(const struct billing_scratch *s, int i)
{
  return f_is(s, i, FK_INT) || f_is(s, i, FK_REAL);
}

/* json_string_value: the decoded, NUL-terminated text (copied into strs
 * the first time it is asked for). */
static const char *f_str(struct billing_scratch *s, int i)
{
  struct fnode *n;

  if (!f_is(s, i, FK_STR))
    return NULL;
  n = &s->nodes[i];
  if (!n->cooked) {
    char *d = s->strs + s->strs_len;
    memcpy(d, n->str, n->len);
    d[n->len] = '\0';
    s->strs_len += n->len + 1;
    n->str = d;
    n->cooked = true;
  }
  return n->str;
}

/* Whether a member (f_get's result) is absent or null. */
static bool f_null(const struct billing_scratch *s, int v)
{
  return v < 0 || s->nodes[v].kind == FK_NULL;
}

/* The members of the row the checks read, found in one pass: s->top. */
static const struct {
  const char *key;
  size_t len;
} top_keys[T_N] = {
    [T_COST] = {"cost", 4},
    [T_CURRENCY] = {"currency", 8},
    [T_START] = {"usage_start_time", 16},
    [T_SERVICE] = {"service", 7},
    [T_SKU] = {"sku", 3},
    [T_CREDITS] = {"credits", 7},
    [T_LABELS] = {"labels", 6},
    [T_LOCATION] = {"location", 8},
    [T_INVOICE] = {"invoice", 7},
    [T_USAGE] = {"usage", 5},
};

static void f_top(struct billing_scratch *s)
{
  int c, t;

  for (t = 0; t < T_N; t++)
    s->top[t] = -1;
  for (c = s->nodes[0].child; c >= 0; c = s->nodes[c].next)
    for (t = 0; t < T_N; t++)
      if (s->nodes[c].keylen == top_keys[t].len &&
          s->nodes[c].key[0] == top_keys[t].key[0] &&
          !memcmp(s->nodes[c].key, top_keys[t].key, top_keys[t].len)) {
        s->top[t] = c;
        break;
      }
}

static const char *f_nonempty(struct billing_scratch *s, int i, const char *key)
{
  const char *v = f_str(s, f_get(s, i, key));

  return v && *v ? v : NULL;
}

/* number_text of a number node. */
static int f_number_text(struct billing_scratch *s, int i, char *out,
                         size_t len)
{
  const struct fnode *n = &s->nodes[i];

  if (n->len >= FAST_NUM_MAX || (n->kind == FK_INT && n->len >= len))
    return -1;
  if (n->kind == FK_INT) {
    if (n->len == 2 && n->str[0] == '-' && n->str[1] == '0') {
      snprintf(out, len, "0");
    } else {
      memcpy(out, n->str, n->len);
      out[n->len] = '\0';
    }
    return 0;
  }
  if (len < 32)
    return -1;
  real15(read_real(n->str, n->len), out);
  return 0;
}

static int f_named(struct billing_scratch *s, int o, const char **name)
{
  if (!f_is(s, o, FK_OBJ))
    return -1;
  *name = f_nonempty(s, o, "description");
  if (!*name)
    *name = f_nonempty(s, o, "id");
  return *name && strlen(*name) <= BILLING_NAME_MAX ? 0 : -1;
}

static int f_credits(struct billing_scratch *s, struct billing_row *r)
{
  char text[32];
  int credits = s->top[T_CREDITS], c;

  snprintf(r->credits, sizeof(r->credits), "0");
  if (f_null(s, s->top[T_CREDITS]))
    return 0;
  if (!f_is(s, credits, FK_ARR))
    return -1;
  for (c = s->nodes[credits].child; c >= 0; c = s->nodes[c].next) {
    int amount = f_get(s, c, "amount");
    if (!f_is(s, c, FK_OBJ) || !f_is_number(s, amount) ||
        f_number_text(s, amount, text, sizeof(text)) != 0 ||
        billing_dec_add(r->credits, text) != 0)
      return -1;
  }
  return 0;
}

static int f_labels(struct billing_scratch *s, struct billing_row *r)
{
  int labels = s->top[T_LABELS], l;

  r->db.team = BILLING_UNATTRIBUTED;
  r->db.flavor = "";
  if (f_null(s, s->top[T_LABELS]))
    return 0;
  if (!f_is(s, labels, FK_ARR))
    return -1;
  for (l = s->nodes[labels].child; l >= 0; l = s->nodes[l].next) {
    const char *key = f_str(s, f_get(s, l, "key")), *value;
    int v = f_get(s, l, "value");
    if (!f_is(s, l, FK_OBJ) || !key)
      return -1;
    if (v >= 0 && !f_is(s, v, FK_NULL) && !f_is(s, v, FK_STR))
      return -1;
    value = f_str(s, v);
    if (!strcmp(key, "gpugate-team")) {
      if (value && strlen(value) > BILLING_NAME_MAX)
        return -1;
      r->db.team = value && *value ? value : BILLING_UNATTRIBUTED;
    } else if (!strcmp(key, "gpugate-flavor")) {
      if (value && strlen(value) > BILLING_NAME_MAX)
        return -1;
      r->db.flavor = value ? value : "";
    }
  }
  return 0;
}

static int f_location(struct billing_scratch *s, struct billing_row *r)
{
  int loc = s->top[T_LOCATION];
  const char *v;

  r->location[0] = '\0';
  r->db.location = r->location;
  if (f_null(s, s->top[T_LOCATION]))
    return 0;
  if (!f_is(s, loc, FK_OBJ))
    return -1;
  if ((v = f_nonempty(s, loc, "region")) ||
      (v = f_nonempty(s, loc, "location"))) {
    if (strlen(v) > BILLING_NAME_MAX)
      return -1;
    r->db.location = v;
    return 0;
  }
  v = f_nonempty(s, loc, "zone");
  return v ? zone_region(v, r->location, sizeof(r->location)) : 0;
}

static int f_usage(struct billing_scratch *s, struct billing_row *r)
{
  int usage = s->top[T_USAGE], in_pricing, amount;
  const char *desc = f_str(s, f_get(s, s->top[T_SKU], "description"));

  snprintf(r->gpu_amount, sizeof(r->gpu_amount), "0");
  r->db.gpu_divisor = 0;
  if (f_null(s, s->top[T_USAGE]))
    return 0;
  if (!f_is(s, usage, FK_OBJ))
    return -1;
  in_pricing = f_get(s, usage, "amount_in_pricing_units");
  amount = f_get(s, usage, "amount");
  if ((in_pricing >= 0 && !f_is(s, in_pricing, FK_NULL) &&
       !f_is_number(s, in_pricing)) ||
      (amount >= 0 && !f_is(s, amount, FK_NULL) && !f_is_number(s, amount)))
    return -1;
  r->db.gpu_divisor =
      gpu_divisor(desc, f_str(s, f_get(s, usage, "pricing_unit")),
                  f_is_number(s, in_pricing), f_str(s, f_get(s, usage, "unit")),
                  f_is_number(s, amount));
  if (!r->db.gpu_divisor)
    return 0;
  return f_number_text(s, r->db.gpu_divisor == 1 ? in_pricing : amount,
                       r->gpu_amount, sizeof(r->gpu_amount));
}

static int f_invoice(struct billing_scratch *s, struct billing_row *r)
{
  int inv = s->top[T_INVOICE], month;
  const char *m;

  r->invoice_month[0] = '\0';
  if (f_null(s, s->top[T_INVOICE]))
    return 0;
  if (!f_is(s, inv, FK_OBJ))
    return -1;
  month = f_get(s, inv, "month");
  if (month < 0 || f_is(s, month, FK_NULL))
    return 0;
  m = f_str(s, month);
  return m ? invoice_month(m, r->invoice_month) : -1;
}

/* The fields of a row parsed by fast_json, checked as billing_parse_row_
 * jansson checks them; -1 on anything it would reject. */
static int fast_fields(struct billing_scratch *s, struct billing_row *out)
{
  int cost;
  const char *v;
  size_t i;

  f_top(s);
  cost = s->top[T_COST];
  v = f_str(s, s->top[T_CURRENCY]);
  if (!f_is_number(s, cost) ||
      f_number_text(s, cost, out->cost, sizeof(out->cost)) != 0)
    return -1;
  for (i = 0; v && v[i] && i < 4; i++)
    if (!((v[i] >= 'A' && v[i] <= 'Z') || (v[i] >= 'a' && v[i] <= 'z')))
      break;
  if (!v || i != 3 || v[3])
    return -1;
  for (i = 0; i < 3; i++)
    out->currency[i] = (char)(v[i] >= 'a' ? v[i] - 'a' + 'A' : v[i]);
  out->currency[3] = '\0';
  v = f_str(s, s->top[T_START]);
  if (!v || billing_parse_timestamp(v, out->usage_start, out->usage_day))
    return -1;
  if (f_named(s, s->top[T_SERVICE], &out->db.service) ||
      f_named(s, s->top[T_SKU], &out->db.sku) || f_credits(s, out) ||
      f_labels(s, out) || f_location(s, out) || f_invoice(s, out) ||
      f_usage(s, out))
    return -1;
  return 0;
}

static int fast_hash(struct billing_scratch *s, unsigned char *hash)
{
  unsigned int hn = 0;

  return EVP_DigestInit_ex(s->md, s->sha256, NULL) == 1 &&
                 EVP_DigestUpdate(s->md, s->canon, s->canon_len) == 1 &&
                 EVP_DigestFinal_ex(s->md, hash, &hn) == 1 &&
                 hn == DB_BILLING_HASH_LEN
             ? 0
             : -1;
}

int billing_parse_row_with(struct billing_scratch *s, const char *line,
                           size_t len, struct billing_row *out, char *err,
                           size_t errlen)
{
  scratch_trim(s); /* the previous row is done with it */
  memset(out, 0, sizeof(*out));
  if (fast_json(s, line, len) == 0 && fast_fields(s, out) == 0 &&
      fast_hash(s, out->db.hash) == 0) {
    out->db.currency = out->currency;
    out->db.usage_start = out->usage_start;
    out->db.usage_day = out->usage_day;
    out->db.invoice_month = out->invoice_month;
    out->db.cost = out->cost;
    out->db.credits = out->credits;
    out->db.gpu_amount = out->gpu_amount;
    out->db.row = line;
    out->db.row_len = len;
    return 0;
  }
  return billing_parse_row_jansson(line, len, out, err, errlen);
}

int billing_parse_row(const char *line, size_t len, struct billing_row *out,
                      char *err, size_t errlen)
{
  struct billing_scratch *s = billing_scratch_new();
  int rc;

  if (!s) {
    memset(out, 0, sizeof(*out));
    return fail(err, errlen, "out of memory");
  }
  rc = billing_parse_row_with(s, line, len, out, err, errlen);
  if (rc == 0 && !out->doc)
    out->own = s; /* the row's strings are in it */
  else
    billing_scratch_free(s);
  return rc;
}

void billing_row_clear(struct billing_row *r)
{
  json_decref(r->doc);
  r->doc = NULL;
  billing_scratch_free(r->own);
  r->own = NULL;
}

/* ---- line splitting ------------------------------------------------------ */

void billing_splitter_init(struct billing_splitter *sp, size_t max)
{
  memset(sp, 0, sizeof(*sp));
  sp->max = max;
}

void billing_splitter_free(struct billing_splitter *sp)
{
  free(sp->buf);
  sp->buf = NULL;
  sp->len = sp->cap = 0;
}

/* Append to the partial line (the caller checked it stays within max). */
static int append(struct billing_splitter *sp, const char *data, size_t n)
{
  if (sp->cap - sp->len < n) {
    size_t cap = sp->cap ? sp->cap : (size_t)64 * 1024;
    char *grown;
    while (cap - sp->len < n)
      cap *= 2;
    grown = realloc(sp->buf, cap);
    if (!grown)
      return -1;
    sp->buf = grown;
    sp->cap = cap;
  }
  memcpy(sp->buf + sp->len, data, n);
  sp->len += n;
  return 0;
}

int billing_splitter_feed(struct billing_splitter *sp, const char *data,
                          size_t n, billing_line_fn fn, void *ctx)
{
  int rc = 0;

  while (n > 0 && rc == 0) {
    const char *nl = memchr(data, '\n', n);
    size_t take_n = nl ? (size_t)(nl - data) : n;

    if (sp->skipping) {
      /* the rest of a line already reported as too long */
    } else if (sp->len + take_n > sp->max) {
      rc = fn(ctx, sp->lines + 1, NULL, 0, true);
      sp->len = 0;
      sp->skipping = true;
    } else if (nl && sp->len == 0) {
      rc = fn(ctx, sp->lines + 1, data, take_n, false); /* no copy */
    } else if (append(sp, data, take_n) != 0) {
      return -1;
    } else if (nl) {
      rc = fn(ctx, sp->lines + 1, sp->buf, sp->len, false);
      sp->len = 0;
    }
    if (nl) {
      sp->lines++;
      sp->skipping = false;
      take_n++;
    }
    data += take_n;
    n -= take_n;
  }
  return rc;
}

int billing_splitter_finish(struct billing_splitter *sp, billing_line_fn fn,
                            void *ctx)
{
  int rc = 0;

  if (sp->len > 0 && !sp->skipping)
    rc = fn(ctx, sp->lines + 1, sp->buf, sp->len, false);
  if (sp->len > 0 || sp->skipping)
    sp->lines++;
  sp->len = 0;
  sp->skipping = false;
  return rc;
}

/* ---- the engine ------------------------------------------------------------
 *
 * Parsing runs on the caller's thread; storing runs on a thread of the
 * engine's own (the flusher), on a connection of its own opened like the
 * borrowed one when the first batch is full: while PostgreSQL stores one
 * batch, the next one is parsed. There are two batches: the one being
 * filled and the one being stored; a full batch waits until the flusher is
 * idle, so memory stays bounded. Each batch is still one transaction.
 *
 * The borrowed connection stays free for its owner between calls (the
 * HTTP server rolls it back and releases it before it frees the engine of
 * an aborted request); it only stores batches itself when no second
 * connection can be opened, or when the whole input fits one batch
 * (stored by billing_ingest_finish, no thread needed).
 */

struct billing_ingest {
  struct db_conn *db;  /* borrowed */
  struct db_conn *own; /* owned: the flusher's */
  struct billing_splitter sp;
  struct billing_scratch *scratch;          /* owned */
  struct db_billing_batch *filling, *other; /* owned */
  json_t *rejected;                         /* owned: [{line, error}] */
  long n_rejected, parsed;
  bool failed, tried_thread;
  struct timespec started;

  /* shared with the flusher, under mu */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  bool thread_on, stop, busy;
  struct db_billing_batch *pending; /* handed over, being stored */
  long inserted, duplicates;
  bool db_failed, expect_new;
};

struct billing_ingest *billing_ingest_new(struct db_conn *db)
{
  struct billing_ingest *bi = calloc(1, sizeof(*bi));

  if (!bi)
    return NULL;
  bi->db = db;
  bi->expect_new = true;
  billing_splitter_init(&bi->sp, BILLING_LINE_MAX);
  pthread_mutex_init(&bi->mu, NULL);
  pthread_cond_init(&bi->cv, NULL);
  bi->scratch = billing_scratch_new();
  bi->filling = db_billing_batch_new();
  bi->other = db_billing_batch_new();
  bi->rejected = json_array();
  clock_gettime(CLOCK_MONOTONIC, &bi->started);
  if (!bi->scratch || !bi->filling || !bi->other || !bi->rejected) {
    billing_ingest_free(bi);
    return NULL;
  }
  return bi;
}

/* Count a stored batch (under mu). */
static void stored(struct billing_ingest *bi, enum gg_code code, size_t rows,
                   long inserted)
{
  if (code != GG_OK) {
    bi->db_failed = true;
    return;
  }
  bi->inserted += inserted;
  bi->duplicates += (long)rows - inserted;
  /* a batch without a known row: the next one is likely new too */
  bi->expect_new = inserted == (long)rows;
}

static void *flusher(void *arg)
{
  struct billing_ingest *bi = arg;

  pthread_mutex_lock(&bi->mu);
  for (;;) {
    struct db_billing_batch *b;
    enum gg_code code;
    size_t rows;
    long inserted;
    bool expect_new;
    while (!bi->pending && !bi->stop)
      pthread_cond_wait(&bi->cv, &bi->mu);
    if (!bi->pending)
      break;
    b = bi->pending;
    expect_new = bi->expect_new;
    bi->busy = true;
    pthread_mutex_unlock(&bi->mu);
    rows = db_billing_batch_rows(b);
    code = db_billing_flush(bi->own, b, expect_new, &inserted);
    if (code == GG_OK)
      metrics_billing_rows(inserted);
    pthread_mutex_lock(&bi->mu);
    stored(bi, code, rows, inserted);
    bi->busy = false;
    bi->pending = NULL;
    pthread_cond_broadcast(&bi->cv);
  }
  pthread_mutex_unlock(&bi->mu);
  return NULL;
}

/* Stop and join the flusher; with abandon, a batch handed over but not
 * yet begun is dropped. */
static void stop_flusher(struct billing_ingest *bi, bool abandon)
{
  if (!bi->thread_on)
    return;
  pthread_mutex_lock(&bi->mu);
  bi->stop = true;
  if (abandon && !bi->busy)
    bi->pending = NULL; /* handed over but not begun: dropped */
  pthread_cond_broadcast(&bi->cv);
  pthread_mutex_unlock(&bi->mu);
  pthread_join(bi->thread, NULL);
  bi->thread_on = false;
}

void billing_ingest_free(struct billing_ingest *bi)
{
  if (!bi)
    return;
  stop_flusher(bi, true);
  db_billing_disconnect(bi->own);
  billing_splitter_free(&bi->sp);
  billing_scratch_free(bi->scratch);
  db_billing_batch_free(bi->filling);
  db_billing_batch_free(bi->other);
  json_decref(bi->rejected);
  pthread_cond_destroy(&bi->cv);
  pthread_mutex_destroy(&bi->mu);
  free(bi);
}

/* Record a bad line. The message may quote the line (Jansson's "near
 * '...'"), so bytes that are not printable ASCII become '?', keeping the
 * report valid UTF-8 whatever the input. */
static void reject(struct billing_ingest *bi, long lineno, const char *error)
{
  char clean[256], *p;

  bi->n_rejected++;
  if (json_array_size(bi->rejected) >= BILLING_REJECTED_MAX)
    return;
  snprintf(clean, sizeof(clean), "%s", error);
  for (p = clean; *p; p++)
    if (*p < 0x20 || *p >= 0x7f)
      *p = '?';
  json_array_append_new(
      bi->rejected,
      json_pack("{s:I, s:s}", "line", (json_int_t)lineno, "error", clean));
}

/* Store the filling batch on the borrowed connection, now. */
static int flush_here(struct billing_ingest *bi)
{
  size_t rows = db_billing_batch_rows(bi->filling);
  enum gg_code code;
  long inserted;

  code = db_billing_flush(bi->db, bi->filling, bi->expect_new, &inserted);
  if (code == GG_OK)
    metrics_billing_rows(inserted);
  pthread_mutex_lock(&bi->mu);
  stored(bi, code, rows, inserted);
  pthread_mutex_unlock(&bi->mu);
  if (code != GG_OK)
    bi->failed = true;
  return code == GG_OK ? 0 : -1;
}

/* Wait until the flusher is idle; -1 when a batch failed. */
static int wait_idle(struct billing_ingest *bi)
{
  bool failed;

  pthread_mutex_lock(&bi->mu);
  while (bi->pending)
    pthread_cond_wait(&bi->cv, &bi->mu);
  failed = bi->db_failed;
  pthread_mutex_unlock(&bi->mu);
  if (failed)
    bi->failed = true;
  return failed ? -1 : 0;
}

/* The filling batch is complete: hand it to the flusher (started at the
 * first one) and go on with the other, or store it here when there is no
 * flusher. last: the end of input. */
static int flush(struct billing_ingest *bi, bool last)
{
  struct db_billing_batch *b = bi->filling;

  if (db_billing_batch_rows(b) == 0)
    return 0;
  if (!bi->tried_thread && !last) {
    bi->tried_thread = true;
    bi->own = db_billing_connect_like(bi->db);
    if (bi->own && pthread_create(&bi->thread, NULL, flusher, bi) == 0) {
      bi->thread_on = true;
    } else {
      db_billing_disconnect(bi->own);
      bi->own = NULL;
    }
  }
  if (!bi->thread_on)
    return flush_here(bi);
  if (wait_idle(bi) != 0)
    return -1;
  pthread_mutex_lock(&bi->mu);
  bi->filling = bi->other;
  bi->other = b;
  bi->pending = b;
  pthread_cond_broadcast(&bi->cv);
  pthread_mutex_unlock(&bi->mu);
  return 0;
}

static bool blank(const char *s, size_t n)
{
  size_t i;

  for (i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
      return false;
  return true;
}

/* billing_line_fn: one line of input. */
static int on_line(void *ctx, long lineno, const char *line, size_t len,
                   bool too_long)
{
  struct billing_ingest *bi = ctx;
  struct billing_row row;
  char err[256];
  int rc;

  if (too_long) {
    reject(bi, lineno, "line longer than 1 MiB");
    return 0;
  }
  if (lineno == 1 && len >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3)) {
    line += 3; /* a UTF-8 byte order mark */
    len -= 3;
  }
  if (blank(line, len))
    return 0;
  if (billing_parse_row_with(bi->scratch, line, len, &row, err, sizeof(err)) !=
      0) {
    reject(bi, lineno, err);
    return 0;
  }
  rc = db_billing_batch_add(bi->filling, &row.db);
  billing_row_clear(&row);
  if (rc != 0) {
    bi->failed = true;
    return -1;
  }
  bi->parsed++;
  if (db_billing_batch_rows(bi->filling) >= BILLING_BATCH_ROWS ||
      db_billing_batch_bytes(bi->filling) >= BILLING_BATCH_BYTES)
    return flush(bi, false);
  return 0;
}

int billing_ingest_feed(struct billing_ingest *bi, const char *data, size_t n)
{
  if (bi->failed)
    return -1;
  if (billing_splitter_feed(&bi->sp, data, n, on_line, bi) != 0)
    bi->failed = true;
  return bi->failed ? -1 : 0;
}

json_t *billing_ingest_finish(struct billing_ingest *bi)
{
  json_t *report;

  if (bi->failed)
    return NULL;
  if (billing_splitter_finish(&bi->sp, on_line, bi) != 0 ||
      flush(bi, true) != 0 || (bi->thread_on && wait_idle(bi) != 0)) {
    bi->failed = true;
    return NULL;
  }
  stop_flusher(bi, false);
  report = json_pack("{s:I, s:I, s:O, s:I, s:b}", "inserted",
                     (json_int_t)bi->inserted, "duplicates",
                     (json_int_t)bi->duplicates, "rejected", bi->rejected,
                     "rejected_count", (json_int_t)bi->n_rejected, "truncated",
                     bi->n_rejected > (long)json_array_size(bi->rejected));
  return report;
}

void billing_ingest_progress(const struct billing_ingest *bi, long *rows,
                             double *seconds)
{
  struct timespec now;

  clock_gettime(CLOCK_MONOTONIC, &now);
  *rows = bi->parsed;
  *seconds = (double)(now.tv_sec - bi->started.tv_sec) +
             (double)(now.tv_nsec - bi->started.tv_nsec) / 1e9;
}

long billing_ingest_committed(const struct billing_ingest *bi)
{
  pthread_mutex_t *mu = (pthread_mutex_t *)&bi->mu;
  long n;

  pthread_mutex_lock(mu);
  n = bi->inserted + bi->duplicates;
  pthread_mutex_unlock(mu);
  return n;
}
