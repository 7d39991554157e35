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
#include <openssl/evp.h>
#include <stdarg.h>
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

int billing_dec_add(char *acc, const char *x)
{
  struct dec a, b;

  if (dec_parse(acc, &a) != 0 || dec_parse(x, &b) != 0 ||
      dec_add_to(&a, &b) != 0)
    return -1;
  dec_format(&a, acc);
  return 0;
}

/* ---- timestamps ---------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static long days_from_civil(long y, long m, long d)
{
  long era, yoe, doy, doe;

  y -= m <= 2;
  era = (y >= 0 ? y : y - 399) / 400;
  yoe = y - era * 400;
  doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

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
  t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
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
  const char *s, *dash;
  size_t n;

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
  if (!s)
    return 0;
  dash = strrchr(s, '-');
  n = dash && dash != s ? (size_t)(dash - s) : strlen(s);
  if (n >= sizeof(r->location))
    return fail(err, errlen, "location: longer than %d bytes",
                BILLING_NAME_MAX);
  memcpy(r->location, s, n);
  r->location[n] = '\0';
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
  const char *pricing_unit, *unit;

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
  if (!desc || !strcasestr(desc, "GPU"))
    return 0;
  pricing_unit = json_string_value(json_object_get(usage, "pricing_unit"));
  unit = json_string_value(json_object_get(usage, "unit"));
  if (pricing_unit && !strcmp(pricing_unit, "hour") &&
      json_is_number(in_pricing)) {
    number_text(in_pricing, r->gpu_amount, sizeof(r->gpu_amount));
    r->db.gpu_divisor = 1;
  } else if (unit && !strcmp(unit, "seconds") && json_is_number(amount)) {
    number_text(amount, r->gpu_amount, sizeof(r->gpu_amount));
    r->db.gpu_divisor = 3600;
  }
  return 0;
}

/* invoice.month "YYYYMM" (or "YYYY-MM") → "YYYY-MM"; "" when absent. */
static int parse_invoice(const json_t *row, struct billing_row *r, char *err,
                         size_t errlen)
{
  const json_t *inv = json_object_get(row, "invoice"), *month;
  const char *m, *p;
  long y, mo;

  r->invoice_month[0] = '\0';
  if (absent(row, "invoice"))
    return 0;
  if (!json_is_object(inv))
    return fail(err, errlen, "invoice: not an object");
  month = json_object_get(inv, "month");
  if (!month || json_is_null(month))
    return 0;
  m = json_string_value(month);
  p = m ? m : "";
  y = take_digits(&p, 4);
  take(&p, '-');
  mo = take_digits(&p, 2);
  if (y < 1 || mo < 1 || mo > 12 || *p)
    return fail(err, errlen, "invoice.month: not YYYYMM");
  put_digits(r->invoice_month, y, 4);
  r->invoice_month[4] = '-';
  put_digits(r->invoice_month + 5, mo, 2);
  r->invoice_month[7] = '\0';
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

int billing_parse_row(const char *line, size_t len, struct billing_row *out,
                      char *err, size_t errlen)
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

void billing_row_clear(struct billing_row *r)
{
  json_decref(r->doc);
  r->doc = NULL;
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

/* ---- the engine ---------------------------------------------------------- */

struct billing_ingest {
  struct db_conn *db; /* borrowed */
  struct billing_splitter sp;
  struct db_billing_batch *batch; /* owned */
  json_t *rejected;               /* owned: [{line, error}] */
  long n_rejected, parsed, inserted, duplicates;
  bool failed;
  struct timespec started;
};

struct billing_ingest *billing_ingest_new(struct db_conn *db)
{
  struct billing_ingest *bi = calloc(1, sizeof(*bi));

  if (!bi)
    return NULL;
  bi->db = db;
  billing_splitter_init(&bi->sp, BILLING_LINE_MAX);
  bi->batch = db_billing_batch_new();
  bi->rejected = json_array();
  clock_gettime(CLOCK_MONOTONIC, &bi->started);
  if (!bi->batch || !bi->rejected) {
    billing_ingest_free(bi);
    return NULL;
  }
  return bi;
}

void billing_ingest_free(struct billing_ingest *bi)
{
  if (!bi)
    return;
  billing_splitter_free(&bi->sp);
  db_billing_batch_free(bi->batch);
  json_decref(bi->rejected);
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

static int flush(struct billing_ingest *bi)
{
  size_t rows = db_billing_batch_rows(bi->batch);
  long inserted;

  if (rows == 0)
    return 0;
  if (db_billing_flush(bi->db, bi->batch, &inserted) != GG_OK) {
    bi->failed = true;
    return -1;
  }
  bi->inserted += inserted;
  bi->duplicates += (long)rows - inserted;
  metrics_billing_rows(inserted);
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
  if (billing_parse_row(line, len, &row, err, sizeof(err)) != 0) {
    reject(bi, lineno, err);
    return 0;
  }
  rc = db_billing_batch_add(bi->batch, &row.db);
  billing_row_clear(&row);
  if (rc != 0) {
    bi->failed = true;
    return -1;
  }
  bi->parsed++;
  if (db_billing_batch_rows(bi->batch) >= BILLING_BATCH_ROWS ||
      db_billing_batch_bytes(bi->batch) >= BILLING_BATCH_BYTES)
    return flush(bi);
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
  if (billing_splitter_finish(&bi->sp, on_line, bi) != 0 || flush(bi) != 0) {
    bi->failed = true;
    return NULL;
  }
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
  return bi->inserted + bi->duplicates;
}
