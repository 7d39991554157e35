/*
 * test_billing.c — the pure parts of billing-export ingestion
 * (billing/billing_ingest.c, db/billing.c) as tables of cases: NDJSON
 * line splitting under every chunking, timestamps, exact decimal sums, row
 * parsing and validation (attribution, location fallbacks, invoice month,
 * credits, GPU-hours, error messages), the canonical hash, COPY text
 * escaping, and the engine's report for input that never reaches the
 * database (rejected and blank lines only).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "db/billing.h"
#include "db/billing_numeric.h"
#include "billing/billing_ingest.h"

Suite *billing_suite(void);

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* -------------------------------------------------------- line splitting */

/* Lines seen, as "lineno:text" or "lineno:!" (too long), joined by '|'. */
struct seen {
  char out[512];
};

static int collect(void *ctx, long lineno, const char *line, size_t len,
                   bool too_long)
{
  struct seen *s = ctx;
  size_t used = strlen(s->out);

  snprintf(s->out + used, sizeof(s->out) - used, "%s%ld:%.*s", used ? "|" : "",
           lineno, too_long ? 1 : (int)len, too_long ? "!" : line);
  return 0;
}

static const struct {
  const char *in;
  size_t max;
  const char *want;
} split_cases[] = {
    {"", 16, ""},
    {"a", 16, "1:a"},
    {"a\n", 16, "1:a"},
    {"a\nbb\n\nccc", 16, "1:a|2:bb|3:|4:ccc"},
    {"\n\n", 16, "1:|2:"},
    {"a\r\nb\r\n", 16, "1:a\r|2:b\r"},
    /* max 4: a line of 5 is too long, reported once, the rest skipped */
    {"1234\n12345\nab\n123456789\nxy", 4, "1:1234|2:!|3:ab|4:!|5:xy"},
    {"123456789", 4, "1:!"},
    {"123456789\n", 4, "1:!"},
    {"12345\n\n", 4, "1:!|2:"},
};

/* Every way of cutting the input into two pieces, then into pieces of
 * every fixed size: the lines must not depend on the cuts. */
START_TEST(split)
{
  const char *in = split_cases[_i].in;
  size_t len = strlen(in), cut, size;

  for (cut = 0; cut <= len; cut++) {
    struct billing_splitter sp;
    struct seen s = {""};
    billing_splitter_init(&sp, split_cases[_i].max);
    ck_assert_int_eq(billing_splitter_feed(&sp, in, cut, collect, &s), 0);
    ck_assert_int_eq(
        billing_splitter_feed(&sp, in + cut, len - cut, collect, &s), 0);
    ck_assert_int_eq(billing_splitter_finish(&sp, collect, &s), 0);
    billing_splitter_free(&sp);
    ck_assert_msg(!strcmp(s.out, split_cases[_i].want),
                  "input %d cut at %zu: got \"%s\", want \"%s\"", _i, cut,
                  s.out, split_cases[_i].want);
  }
  for (size = 1; size <= len; size++) {
    struct billing_splitter sp;
    struct seen s = {""};
    size_t off;
    billing_splitter_init(&sp, split_cases[_i].max);
    for (off = 0; off < len; off += size)
      billing_splitter_feed(&sp, in + off, len - off < size ? len - off : size,
                            collect, &s);
    billing_splitter_finish(&sp, collect, &s);
    billing_splitter_free(&sp);
    ck_assert_msg(!strcmp(s.out, split_cases[_i].want),
                  "input %d in pieces of %zu: got \"%s\", want \"%s\"", _i,
                  size, s.out, split_cases[_i].want);
  }
}
END_TEST

static int stop_at_2(void *ctx, long lineno, const char *line, size_t len,
                     bool too_long)
{
  collect(ctx, lineno, line, len, too_long);
  return lineno == 2 ? 7 : 0;
}

START_TEST(split_stops)
{
  struct billing_splitter sp;
  struct seen s = {""};

  billing_splitter_init(&sp, 16);
  ck_assert_int_eq(billing_splitter_feed(&sp, "a\nb\nc\n", 6, stop_at_2, &s),
                   7);
  billing_splitter_free(&sp);
  ck_assert_str_eq(s.out, "1:a|2:b");
}
END_TEST

/* ------------------------------------------------------------ timestamps */

static const struct {
  const char *in;
  const char *ts; /* NULL: rejected */
  const char *day;
} ts_cases[] = {
    /* BigQuery's JSON export */
    {"2026-08-01 10:00:00 UTC", "2026-08-01 10:00:00+00", "2026-08-01"},
    {"2026-08-01 10:00:00.5 UTC", "2026-08-01 10:00:00.5+00", "2026-08-01"},
    {"2026-08-01 10:00:00.123456 UTC", "2026-08-01 10:00:00.123456+00",
     "2026-08-01"},
    /* RFC 3339 */
    {"2026-08-01T10:00:00Z", "2026-08-01 10:00:00+00", "2026-08-01"},
    {"2026-08-01t10:00:00z", "2026-08-01 10:00:00+00", "2026-08-01"},
    {"2026-08-01T10:00:00.123456789Z", "2026-08-01 10:00:00.123456+00",
     "2026-08-01"},
    {"2026-08-01T01:30:00+02:00", "2026-07-31 23:30:00+00", "2026-07-31"},
    {"2026-12-31T23:30:00-01:00", "2027-01-01 00:30:00+00", "2027-01-01"},
    {"2026-08-01 10:00:00 +0530", "2026-08-01 04:30:00+00", "2026-08-01"},
    {"2026-08-01T10:00:00+00", "2026-08-01 10:00:00+00", "2026-08-01"},
    {"2024-02-29T00:00:00Z", "2024-02-29 00:00:00+00", "2024-02-29"},
    {"2000-02-29T00:00:00Z", "2000-02-29 00:00:00+00", "2000-02-29"},
    {"1970-01-01T00:00:00+01:00", "1969-12-31 23:00:00+00", "1969-12-31"},
    {"2026-08-01T23:59:60Z", "2026-08-02 00:00:00+00", "2026-08-02"},
    {"2026-08-01 10:00:00", NULL, NULL}, /* no time zone */
    {"2026-08-01", NULL, NULL},
    {"2026-08-01T10:00Z", NULL, NULL},
    {"2026-02-29T00:00:00Z", NULL, NULL},
    {"1900-02-29T00:00:00Z", NULL, NULL},
    {"2026-13-01T00:00:00Z", NULL, NULL},
    {"2026-04-31T00:00:00Z", NULL, NULL},
    {"2026-08-01T24:00:00Z", NULL, NULL},
    {"2026-08-01T10:60:00Z", NULL, NULL},
    {"2026-08-01T10:00:00.Z", NULL, NULL},
    {"2026-08-01T10:00:00+24:00", NULL, NULL},
    {"2026-08-01T10:00:00 GMT", NULL, NULL},
    {"2026-08-01T10:00:00ZZ", NULL, NULL},
    {"0000-01-01T00:00:00Z", NULL, NULL},
    {"0001-01-01T00:30:00+01:00", NULL, NULL}, /* before year 1 in UTC */
    {"26-08-01T10:00:00Z", NULL, NULL},
    {"", NULL, NULL},
};

START_TEST(timestamp)
{
  char ts[48] = "", day[16] = "";
  int rc = billing_parse_timestamp(ts_cases[_i].in, ts, day);

  if (!ts_cases[_i].ts) {
    ck_assert_msg(rc == -1, "\"%s\" accepted as \"%s\"", ts_cases[_i].in, ts);
    return;
  }
  ck_assert_msg(rc == 0, "\"%s\" rejected", ts_cases[_i].in);
  ck_assert_str_eq(ts, ts_cases[_i].ts);
  ck_assert_str_eq(day, ts_cases[_i].day);
}
END_TEST

/* -------------------------------------------------------- exact decimals */

static const struct {
  const char *acc, *x;
  const char *want; /* NULL: fails */
} dec_cases[] = {
    {"0", "-1.5", "-1.5"},
    {"-1.5", "2e-07", "-1.4999998"},
    {"0.1", "0.2", "0.3"}, /* no binary rounding */
    {"-0.25", "-0.1", "-0.35"},
    {"1", "-1", "0"},
    {"-0", "0", "0"},
    {"12", "-12.000001", "-0.000001"},
    {"999.999", "0.001", "1000"},
    {"1e+20", "1", "100000000000000000001"},
    {"1.5E3", "+2", "1502"},
    {"0", "1234.567890123", "1234.567890123"},
    {"9e359", "9e359", NULL}, /* beyond the grid */
    {"0", "1e-400", NULL},
    {"x", "1", NULL},
    {"0", "", NULL},
    {"0", "1e", NULL},
    {"0", "1..2", NULL},
    {"0", "1-", NULL},
};

START_TEST(dec_add)
{
  char acc[BILLING_DEC_MAX];
  int rc;

  snprintf(acc, sizeof(acc), "%s", dec_cases[_i].acc);
  rc = billing_dec_add(acc, dec_cases[_i].x);
  if (!dec_cases[_i].want) {
    ck_assert_msg(rc == -1, "%s + %s accepted", dec_cases[_i].acc,
                  dec_cases[_i].x);
    return;
  }
  ck_assert_int_eq(rc, 0);
  ck_assert_str_eq(acc, dec_cases[_i].want);
}
END_TEST

/* The extremes of "%.15g" of a double fit the grid exactly. */
START_TEST(dec_extremes)
{
  char acc[BILLING_DEC_MAX] = "0", want[BILLING_DEC_MAX];

  memcpy(want, "0.", 2);
  memset(want + 2, '0', 323);
  snprintf(want + 325, sizeof(want) - 325, "494065645841247");
  ck_assert_int_eq(billing_dec_add(acc, "4.94065645841247e-324"), 0);
  ck_assert_str_eq(acc, want);

  snprintf(acc, sizeof(acc), "1.79769313486232e+308");
  ck_assert_int_eq(billing_dec_add(acc, "-1.79769313486232e+308"), 0);
  ck_assert_str_eq(acc, "0");
  snprintf(acc, sizeof(acc), "-1.79769313486232e+308");
  ck_assert_int_eq(billing_dec_add(acc, "-1.79769313486232e+308"), 0);
  ck_assert_uint_eq(strlen(acc), 1 + 309);
  ck_assert(!strncmp(acc, "-359538626972464", 16));
}
END_TEST

/* ------------------------------------------------------------------ rows */

#define SVC                                                                    \
  "\"service\":{\"id\":\"6F81-5844\",\"description\":\"Compute Engine\"}"
#define SKU_GPU                                                                \
  "\"sku\":{\"id\":\"A1B2\",\"description\":\"Nvidia L4 GPU running in "       \
  "Americas\"}"
#define SKU_CPU                                                                \
  "\"sku\":{\"id\":\"C3D4\",\"description\":\"N1 Predefined Instance "         \
  "Core\"}"
#define START "\"usage_start_time\":\"2026-08-01 10:00:00 UTC\""
#define MONEY "\"cost\":1.25,\"currency\":\"USD\""
#define BASE SVC "," SKU_GPU "," START "," MONEY
#define LABELS                                                                 \
  "\"labels\":[{\"key\":\"env\",\"value\":\"prod\"},{\"key\":\"gpugate-"       \
  "team\","                                                                    \
  "\"value\":\"team-a\"},{\"key\":\"gpugate-flavor\",\"value\":\"l4-spot\"}]"
#define USAGE                                                                  \
  "\"usage\":{\"amount\":7200,\"unit\":\"seconds\","                           \
  "\"amount_in_pricing_units\":2,\"pricing_unit\":\"hour\"}"

/* NULL expectations are not checked. */
struct row_case {
  const char *line;
  const char *err; /* NULL: accepted; else the message (prefix for JSON) */
  const char *team, *flavor, *service, *sku, *location, *invoice;
  const char *cost, *currency, *credits, *start, *day;
  const char *gpu;
  int gpu_div;
};

/* clang-format off */
#define REJECT(l, e) {.line = (l), .err = (e)}
/* clang-format on */
#define X10 "xxxxxxxxxx"
#define X100 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10
#define X257 X100 X100 X10 X10 X10 X10 X10 "xxxxxxx"

static const struct row_case row_cases[] = {
    /* a full row as BigQuery exports it, unknown fields included */
    {"{\"billing_account_id\":\"01A2B3\"," BASE "," LABELS "," USAGE
     ",\"usage_end_time\":\"2026-08-01 11:00:00 UTC\","
     "\"project\":{\"id\":\"p1\",\"labels\":[]},"
     "\"location\":{\"location\":\"us-central1\",\"country\":\"US\","
     "\"region\":\"us-central1\",\"zone\":\"us-central1-a\"},"
     "\"credits\":[{\"name\":\"Spot\",\"amount\":-0.25,\"type\":\"DISCOUNT\"},"
     "{\"name\":\"CUD\",\"amount\":-0.1,\"type\":\"COMMITTED_USAGE_DISCOUNT\","
     "\"id\":\"x\"}],"
     "\"invoice\":{\"month\":\"202608\"},\"cost_type\":\"regular\","
     "\"system_labels\":[],\"export_time\":\"2026-08-02 00:00:00 UTC\","
     "\"currency_conversion_rate\":1,\"future_field\":{\"a\":[1,2]}}",
     NULL, "team-a", "l4-spot", "Compute Engine",
     "Nvidia L4 GPU running in Americas", "us-central1", "2026-08", "1.25",
     "USD", "-0.35", "2026-08-01 10:00:00+00", "2026-08-01", "2", 1},
    /* attribution */
    {"{" BASE "}", NULL, "(unattributed)", "", NULL, NULL, "", "", NULL, NULL,
     "0", NULL, NULL, "0", 0},
    {"{" BASE ",\"labels\":[]}", NULL, "(unattributed)", "", NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0},
    {"{" BASE ",\"labels\":[{\"key\":\"gpugate-team\",\"value\":\"\"}]}", NULL,
     "(unattributed)", "", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, 0},
    {"{" BASE ",\"labels\":[{\"key\":\"gpugate-flavor\"}]}", NULL,
     "(unattributed)", "", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, 0},
    {"{" BASE ",\"labels\":null}", NULL, "(unattributed)", NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0},
    /* names: description, else id */
    {"{\"service\":{\"id\":\"6F81\"},\"sku\":{\"id\":\"A1\",\"description\":"
     "\"\"}," START "," MONEY "}",
     NULL, NULL, NULL, "6F81", "A1", NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     "0", 0},
    /* location fallbacks */
    {"{" BASE ",\"location\":{\"location\":\"US\",\"zone\":\"us-east1-b\"}}",
     NULL, NULL, NULL, NULL, NULL, "US", NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, 0},
    {"{" BASE ",\"location\":{\"zone\":\"europe-west4-b\"}}", NULL, NULL, NULL,
     NULL, NULL, "europe-west4", NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0},
    {"{" BASE ",\"location\":{\"region\":\"\",\"zone\":\"global\"}}", NULL,
     NULL, NULL, NULL, NULL, "global", NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     0},
    {"{" BASE ",\"location\":{\"country\":\"US\"}}", NULL, NULL, NULL, NULL,
     NULL, "", NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0},
    {"{" BASE ",\"location\":null}", NULL, NULL, NULL, NULL, NULL, "", NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, 0},
    /* invoice month */
    {"{" BASE ",\"invoice\":{\"month\":\"202612\"}}", NULL, NULL, NULL, NULL,
     NULL, NULL, "2026-12", NULL, NULL, NULL, NULL, NULL, NULL, 0},
    {"{" BASE ",\"invoice\":{\"month\":\"2026-09\"}}", NULL, NULL, NULL, NULL,
     NULL, NULL, "2026-09", NULL, NULL, NULL, NULL, NULL, NULL, 0},
    {"{" BASE ",\"invoice\":{}}", NULL, NULL, NULL, NULL, NULL, NULL, "", NULL,
     NULL, NULL, NULL, NULL, NULL, 0},
    {"{" BASE ",\"invoice\":{\"month\":\"202613\"}}",
     "invoice.month: not YYYYMM", NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, 0},
    {"{" BASE ",\"invoice\":{\"month\":202608}}", "invoice.month: not YYYYMM",
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0},
    {"{" BASE ",\"invoice\":\"202608\"}", "invoice: not an object", NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0},
    /* amounts: the text of the wire, never through a double */
    {"{" SVC "," SKU_CPU "," START
     ",\"cost\":0.30000000000000004,\"currency\":\"eur\","
     "\"credits\":[{\"amount\":-0.1},{\"amount\":-0.2},{\"amount\":2e-7}]}",
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, "0.30000000000000004", "EUR",
     "-0.2999998", NULL, NULL, "0", 0},
    {"{" SVC "," SKU_CPU "," START
     ",\"cost\":12345678.123456789,\"currency\":\"USD\"}",
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, "12345678.123456789", "USD", "0",
     NULL, NULL, NULL, 0},
    {"{" SVC "," SKU_CPU "," START ",\"cost\":-12,\"currency\":\"JPY\","
     "\"credits\":[]}",
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, "-12", "JPY", "0", NULL, NULL,
     NULL, 0},
    {"{" SVC "," SKU_CPU "," START ",\"cost\":1234.567890123,"
     "\"currency\":\"USD\",\"credits\":null}",
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, "1234.567890123", NULL, "0",
     NULL, NULL, NULL, 0},
    {"{" SVC "," SKU_CPU "," START ",\"cost\":1e-7,\"currency\":\"USD\"}", NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, "1e-7", NULL, NULL, NULL, NULL, NULL,
     0},
    /* GPU-hours */
    {"{" BASE "," USAGE "}", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, "2", 1},
    {"{" BASE ",\"usage\":{\"amount\":5400,\"unit\":\"seconds\"}}", NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "5400", 3600},
    {"{" BASE ",\"usage\":{\"amount\":5400,\"unit\":\"seconds\","
     "\"amount_in_pricing_units\":1.5,\"pricing_unit\":\"gibibyte hour\"}}",
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     "5400", 3600},
    {"{" BASE ",\"usage\":{\"amount\":3,\"unit\":\"byte-seconds\"}}", NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "0", 0},
    {"{" SVC "," SKU_CPU "," START "," MONEY "," USAGE "}", NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "0", 0},
    {"{" SVC ",\"sku\":{\"id\":\"X\",\"description\":\"Preemptible gpu "
     "A100\"}," START "," MONEY "," USAGE "}",
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     "2", 1},
    /* "GPU" in the id does not count */
    {"{" SVC ",\"sku\":{\"id\":\"GPU-1\"}," START "," MONEY "," USAGE "}", NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "0", 0},
    /* long names are fine outside the rollup key */
    {"{" BASE ",\"labels\":[{\"key\":\"note\",\"value\":\"" X257 "\"}]}", NULL,
     "(unattributed)", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, 0},
    /* other time-zone forms */
    {"{" SVC "," SKU_CPU
     ",\"usage_start_time\":\"2026-08-01T00:30:00+01:00\"," MONEY "}",
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     "2026-07-31 23:30:00+00", "2026-07-31", NULL, 0},
    /* rejections, each naming the field */
    REJECT("{" SVC "," SKU_GPU "," START ",\"currency\":\"USD\"}",
           "cost: required"),
    /* TO_JSON_STRING's NUMERIC with a fraction, or beyond ±2^53: quoted,
     * kept digit for digit */
    {"{" SVC "," SKU_GPU "," START
     ",\"cost\":\"12345678.123456789\",\"currency\":\"USD\","
     "\"credits\":[{\"amount\":\"-0.000000001\"},{\"amount\":-2}]}",
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, "12345678.123456789", "USD",
     "-2.000000001", NULL, NULL, NULL, 0},
    {"{" SVC "," SKU_GPU "," START
     ",\"cost\":\"99999999999999999999999999999.999999999\","
     "\"currency\":\"USD\"}",
     NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     "99999999999999999999999999999.999999999", "USD", "0", NULL, NULL, NULL,
     0},
    /* a string that is not a plain decimal is not an amount */
    REJECT("{" SVC "," SKU_GPU "," START
           ",\"cost\":\"1.25e3\",\"currency\":\"USD\"}",
           "cost: not a number"),
    REJECT("{" SVC "," SKU_GPU "," START
           ",\"cost\":\"NaN\",\"currency\":\"USD\"}",
           "cost: not a number"),
    REJECT("{" SVC "," SKU_GPU "," START
           ",\"cost\":\".5\",\"currency\":\"USD\"}",
           "cost: not a number"),
    REJECT("{" SVC "," SKU_GPU "," START ",\"cost\":true,\"currency\":\"USD\"}",
           "cost: not a number"),
    REJECT("{" SVC "," SKU_GPU "," START ",\"cost\":1}",
           "currency: not a 3-letter code"),
    REJECT("{" SVC "," SKU_GPU "," START ",\"cost\":1,\"currency\":\"US\"}",
           "currency: not a 3-letter code"),
    REJECT("{" SVC "," SKU_GPU "," START ",\"cost\":1,\"currency\":\"USDX\"}",
           "currency: not a 3-letter code"),
    REJECT("{" SVC "," SKU_GPU "," START ",\"cost\":1,\"currency\":\"U$D\"}",
           "currency: not a 3-letter code"),
    REJECT("{" SVC "," SKU_GPU "," MONEY "}",
           "usage_start_time: not a timestamp"),
    REJECT("{" SVC "," SKU_GPU "," MONEY ",\"usage_start_time\":\"yesterday\"}",
           "usage_start_time: not a timestamp"),
    REJECT("{" SVC "," SKU_GPU "," MONEY ",\"usage_start_time\":1754042400}",
           "usage_start_time: not a timestamp"),
    REJECT("{" SKU_GPU "," START "," MONEY "}", "service: required"),
    REJECT("{\"service\":\"Compute\"," SKU_GPU "," START "," MONEY "}",
           "service: not an object"),
    REJECT("{" SVC ",\"sku\":{}," START "," MONEY "}",
           "sku: needs an id or a description"),
    REJECT("{" SVC ",\"sku\":{\"id\":7}," START "," MONEY "}",
           "sku: needs an id or a description"),
    REJECT("{" BASE ",\"credits\":{}}", "credits: not an array"),
    REJECT("{" BASE ",\"credits\":[1]}", "credits[0]: not an object"),
    REJECT("{" BASE ",\"credits\":[{\"amount\":-1},{\"name\":\"x\"}]}",
           "credits[1].amount: not a number"),
    REJECT("{" BASE ",\"cost_type\":\"refund\"}",
           "cost_type: must be regular, tax, adjustment or rounding_error"),
    REJECT("{" BASE ",\"cost_type\":7}",
           "cost_type: must be regular, tax, adjustment or rounding_error"),
    REJECT("{" BASE ",\"billing_account_id\":12}",
           "billing_account_id: not a string"),
    REJECT("{" BASE ",\"credits\":[{\"amount\":\"-1.\"}]}",
           "credits[0].amount: not a number"),
    REJECT("{" BASE ",\"labels\":{}}", "labels: not an array"),
    REJECT("{" BASE ",\"labels\":[\"a\"]}", "labels[0]: not an object"),
    REJECT("{" BASE ",\"labels\":[{\"value\":\"x\"}]}",
           "labels[0].key: not a string"),
    REJECT("{" BASE ",\"labels\":[{\"key\":\"gpugate-team\",\"value\":3}]}",
           "labels[0].value: not a string"),
    REJECT("{" BASE ",\"location\":\"us\"}", "location: not an object"),
    REJECT("{" BASE ",\"usage\":[]}", "usage: not an object"),
    REJECT("{" BASE ",\"usage\":{\"amount\":\"1\"}}",
           "usage.amount: not a number"),
    REJECT("{" SVC ",\"sku\":{\"id\":\"" X257 "\"}," START "," MONEY "}",
           "sku: longer than 256 bytes"),
    REJECT("{" BASE ",\"labels\":[{\"key\":\"gpugate-team\",\"value\":\"" X257
           "\"}]}",
           "labels[0].value: longer than 256 bytes"),
    REJECT("{" BASE ",\"location\":{\"zone\":\"" X257 "-a\"}}",
           "location: longer than 256 bytes"),
    REJECT("{" SVC "," SKU_GPU "," START
           ",\"cost\":123456789012345678901,\"currency\":\"USD\"}",
           "not JSON: "),
    REJECT("[1,2]", "not a JSON object"),
    REJECT("\"row\"", "not JSON: "),
    REJECT("{\"cost\":1,", "not JSON: "),
    REJECT("{" BASE ",\"cost\":2}", "not JSON: "), /* duplicate key */
    REJECT("{} {}", "not JSON: "),
};

static void expect(const char *what, const char *got, const char *want)
{
  if (want)
    ck_assert_msg(got && !strcmp(got, want), "row %s: got \"%s\", want \"%s\"",
                  what, got ? got : "(null)", want);
}

START_TEST(parse_row)
{
  const struct row_case *c = &row_cases[_i];
  struct billing_row r;
  char err[256] = "";
  int rc = billing_parse_row(c->line, strlen(c->line), &r, err, sizeof(err));

  if (c->err) {
    ck_assert_msg(rc == -1, "case %d accepted", _i);
    ck_assert_msg(!strncmp(err, c->err, strlen(c->err)),
                  "case %d: error \"%s\", want \"%s\"", _i, err, c->err);
    return;
  }
  ck_assert_msg(rc == 0, "case %d rejected: %s", _i, err);
  expect("team", r.db.team, c->team);
  expect("flavor", r.db.flavor, c->flavor);
  expect("service", r.db.service, c->service);
  expect("sku", r.db.sku, c->sku);
  expect("location", r.db.location, c->location);
  expect("invoice_month", r.db.invoice_month, c->invoice);
  expect("cost", r.db.cost, c->cost);
  expect("currency", r.db.currency, c->currency);
  expect("credits", r.db.credits, c->credits);
  expect("usage_start", r.db.usage_start, c->start);
  expect("usage_day", r.db.usage_day, c->day);
  if (c->gpu) {
    expect("gpu_amount", r.db.gpu_amount, c->gpu);
    ck_assert_int_eq(r.db.gpu_divisor, c->gpu_div);
  }
  ck_assert_ptr_eq(r.db.row, c->line);
  ck_assert_uint_eq(r.db.row_len, strlen(c->line));
  billing_row_clear(&r);
}
END_TEST

/* ---------------------------------------------------------- canonical hash */

static const struct {
  const char *a, *b;
  bool same;
} hash_cases[] = {
    {"{" BASE "}", "{" BASE "}", true},
    /* keys reordered at every level, other spacing */
    {"{" SVC "," SKU_GPU "," START "," MONEY "}",
     "{ \"currency\" : \"USD\", \"cost\": 1.25, " START ",\n"
     "\"sku\":{\"description\":\"Nvidia L4 GPU running in Americas\","
     "\"id\":\"A1B2\"}, \"service\":{\"description\":\"Compute Engine\","
     "\"id\":\"6F81-5844\"} }",
     true},
    /* the same number written differently */
    {"{" BASE ",\"x\":1.50}", "{" BASE ",\"x\":1.5}", true},
    {"{" BASE ",\"s\":\"\\u00e9\"}", "{" BASE ",\"s\":\"\xc3\xa9\"}", true},
    /* a changed value, anywhere */
    {"{" BASE "}",
     "{" SVC "," SKU_GPU "," START ",\"cost\":1.26,\"currency\":\"USD\"}",
     false},
    {"{" BASE ",\"labels\":[{\"key\":\"a\",\"value\":\"1\"}]}",
     "{" BASE ",\"labels\":[{\"key\":\"a\",\"value\":\"2\"}]}", false},
    /* array order matters */
    {"{" BASE ",\"credits\":[{\"amount\":-1},{\"amount\":-2}]}",
     "{" BASE ",\"credits\":[{\"amount\":-2},{\"amount\":-1}]}", false},
    /* an unknown field is part of the row */
    {"{" BASE "}", "{" BASE ",\"export_time\":\"2026-08-02 00:00:00 UTC\"}",
     false},
    /* a row's key is its meaning: a number is its value, int or real */
    {"{" BASE ",\"x\":1}", "{" BASE ",\"x\":1.0}", true},
    /* the same row as TO_JSON_STRING writes it (the pull: RFC 3339, a
     * NUMERIC quoted, NULL fields present) and as BigQuery's NDJSON export
     * does (an upload: " UTC", FLOAT64 money, NULL fields left out) */
    {"{" SVC "," SKU_GPU ",\"usage_start_time\":\"2026-08-01T10:00:00Z\","
     "\"cost\":\"0.001234\",\"currency\":\"USD\",\"seller_name\":null,"
     "\"tags\":[],\"credits\":[{\"amount\":\"-0.3\",\"full_name\":null}],"
     "\"export_time\":\"2026-08-02T04:00:00.5Z\"}",
     "{" SVC "," SKU_GPU ",\"usage_start_time\":\"2026-08-01 10:00:00 UTC\","
     "\"cost\":0.001234,\"currency\":\"USD\","
     "\"credits\":[{\"amount\":-0.30000000000000004}],"
     "\"export_time\":\"2026-08-02 04:00:00.500000 UTC\"}",
     true},
    /* NUMERIC's 9 decimals: a FLOAT64 rounded as CAST(x AS NUMERIC) does */
    {"{" BASE ",\"x\":\"12345678.123456789\"}",
     "{" BASE ",\"x\":12345678.123456789}", true},
    {"{" BASE ",\"x\":\"0.000000001\"}", "{" BASE ",\"x\":\"0.000000002\"}",
     false},
    /* another instant, another row */
    {"{" BASE ",\"t\":\"2026-08-01T10:00:00Z\"}",
     "{" BASE ",\"t\":\"2026-08-01 10:00:01 UTC\"}", false},
    /* a null and an absent field are the same; a present value is not */
    {"{" BASE ",\"y\":null}", "{" BASE "}", true},
    {"{" BASE ",\"y\":\"\"}", "{" BASE "}", false},
};

START_TEST(hash)
{
  struct billing_row a, b;
  char err[256];

  ck_assert_int_eq(billing_parse_row(hash_cases[_i].a, strlen(hash_cases[_i].a),
                                     &a, err, sizeof(err)),
                   0);
  ck_assert_int_eq(billing_parse_row(hash_cases[_i].b, strlen(hash_cases[_i].b),
                                     &b, err, sizeof(err)),
                   0);
  ck_assert_msg((memcmp(a.db.hash, b.db.hash, sizeof(a.db.hash)) == 0) ==
                    hash_cases[_i].same,
                "case %d: hashes %s", _i,
                hash_cases[_i].same ? "differ" : "are equal");
  billing_row_clear(&a);
  billing_row_clear(&b);
}
END_TEST

/* ------------------------------------------------------- keys, pinned */

/* Rows with their key (the SHA-256 of the key text, billing_key.h), as
 * stored: rows already in the database are keyed by these values, so any
 * way of computing the key must give them unchanged. Every form a value
 * may take: the pull's TO_JSON_STRING and the upload's NDJSON export,
 * members out of order, escapes in keys and values, nulls and empty
 * arrays and objects at every level, numbers as integers, reals and
 * decimal strings (rounded to 9 decimals), timestamps with offsets and
 * fractions, and a row only Jansson reads (a 19-digit integer). */
#define PULL_ROW                                                               \
  "{\"billing_account_id\":\"012345-6789AB-CDEF01\",\"service\":{\"id\":"      \
  "\"6F81-5844-456A\",\"description\":\"Compute Engine\"},\"sku\":{\"id\":"    \
  "\"SKU-0\",\"description\":\"Nvidia L4 GPU 0\"},\"usage_start_time\":"       \
  "\"2026-08-01T00:00:00Z\",\"usage_end_time\":\"2026-08-01T00:59:59Z\","      \
  "\"project\":{\"id\":\"ml-project\",\"number\":\"123456789012\",\"name\":"   \
  "\"ml-project\",\"labels\":[],\"ancestry_numbers\":null,\"ancestors\":[]},"  \
  "\"labels\":[{\"key\":\"gpugate-team\",\"value\":\"team-a\"},{\"key\":"      \
  "\"gpugate-flavor\",\"value\":\"l4-spot\"}],\"system_labels\":[],"           \
  "\"location\":{\"location\":\"us-central1\",\"country\":\"US\",\"region\":"  \
  "\"us-central1\",\"zone\":null},\"resource\":{\"name\":\"vm-0-0\","          \
  "\"global_name\":null},\"tags\":[],\"transaction_type\":\"GOOGLE\","         \
  "\"seller_name\":null,\"export_time\":\"2026-08-02T04:00:00Z\",\"cost\":"    \
  "\"0.001234\",\"currency\":\"USD\",\"currency_conversion_rate\":1,"          \
  "\"usage\":{\"amount\":3600,\"unit\":\"seconds\",\"amount_in_pricing_"       \
  "units\":1,\"pricing_unit\":\"hour\"},\"credits\":[{\"name\":\"Spot "        \
  "discount\",\"amount\":\"-0.000123\",\"full_name\":null,\"id\":\"spot\","    \
  "\"type\":\"DISCOUNT\"}],\"invoice\":{\"month\":\"202608\","                 \
  "\"publisher_type\":\"GOOGLE\"},\"cost_type\":\"regular\","                  \
  "\"adjustment_info\":null,\"price\":{\"effective_price\":\"0.5\","           \
  "\"tier_start_amount\":0,\"unit\":\"hour\",\"pricing_unit_quantity\":1},"    \
  "\"cost_at_list\":null}"
#define UPLOAD_ROW                                                             \
  "{\"billing_account_id\":\"012345-6789AB-CDEF01\",\"service\":{\"id\":"      \
  "\"6F81-5844-456A\",\"description\":\"Compute Engine\"},\"sku\":{\"id\":"    \
  "\"SKU-0\",\"description\":\"Nvidia L4 GPU 0\"},\"usage_start_time\":"       \
  "\"2026-08-01 00:00:00 UTC\",\"usage_end_time\":\"2026-08-01 00:59:59 "      \
  "UTC\",\"project\":{\"id\":\"ml-project\",\"number\":\"123456789012\","      \
  "\"name\":\"ml-project\"},\"labels\":[{\"key\":\"gpugate-team\","            \
  "\"value\":\"team-a\"},{\"key\":\"gpugate-flavor\",\"value\":\"l4-spot\"}]," \
  "\"location\":{\"location\":\"us-central1\",\"country\":\"US\","             \
  "\"region\":\"us-central1\"},\"resource\":{\"name\":\"vm-0-0\"},"            \
  "\"transaction_type\":\"GOOGLE\",\"export_time\":\"2026-08-02 04:00:00 "     \
  "UTC\",\"cost\":0.001234,\"currency\":\"USD\",\"currency_conversion_"        \
  "rate\":1.0,\"usage\":{\"amount\":3600.0,\"unit\":\"seconds\",\"amount_in_"  \
  "pricing_units\":1.0,\"pricing_unit\":\"hour\"},\"credits\":[{\"name\":"     \
  "\"Spot discount\",\"amount\":-0.000123,\"id\":\"spot\",\"type\":"           \
  "\"DISCOUNT\"}],\"invoice\":{\"month\":\"202608\",\"publisher_type\":"       \
  "\"GOOGLE\"},\"cost_type\":\"regular\",\"price\":{\"effective_price\":0.5,"  \
  "\"tier_start_amount\":0.0,\"unit\":\"hour\",\"pricing_unit_quantity\":1."   \
  "0}}"
static const struct {
  const char *row;
  const char *key; /* hex */
} key_cases[] = {
    {PULL_ROW,
     "43259b74c1285151e9b3efa7d457493402bac8bfaf9456b71c19225cd9b9bcee"},
    {UPLOAD_ROW,
     "43259b74c1285151e9b3efa7d457493402bac8bfaf9456b71c19225cd9b9bcee"},
    {"{" BASE "}",
     "3d9bb3a6d00ecfcbd1eb05aa18c0b4105d52fbef4189df32ec348032179c3eaa"},
    {"{\"currency\":\"USD\",\"cost\":1.25," START "," SKU_GPU "," SVC "}",
     "3d9bb3a6d00ecfcbd1eb05aa18c0b4105d52fbef4189df32ec348032179c3eaa"},
    /* escapes in keys and values; control characters; non-ASCII */
    {"{" BASE ",\"k\\\"ey\":\"a\\\"b\\\\c\\/d\\n\\t\\u0001\","
     "\"\\u00e9t\\u00e9\":\"\xc3\xa9\\ud83d\\ude00\",\"plain\\u0041\":\"x\"}",
     "1e13a54fea5bbe22c3a74b8288c9212a2416e12ec2423f30065908862deeedc9"},
    /* members sharing their first eight bytes, an empty key */
    {"{" BASE ",\"abcdefgh\":1,\"abcdefgh1\":2,\"abcdefg\":3,\"\":4,"
     "\"abcdefgh0\":5}",
     "1d717e9caf5af932cb08950bb89a2ac53ed44ac878a9a5c0f99f8d6d7decfcae"},
    /* nulls and empties at every level */
    {"{" BASE ",\"a\":[null,[],{},[null],{\"x\":null},[[]]],\"b\":{\"c\":"
     "{\"d\":null,\"e\":[]}},\"f\":[],\"g\":{},\"h\":null,\"i\":[{}]}",
     "c0e98edbc356f9208c8ff2e7a762907c71260fc5c8c97a4e9bd0aa1c8a0f1cde"},
    /* numbers: integers, reals, exponents, -0, beyond NUMERIC */
    {"{" BASE ",\"n\":[0,-0,7,-12,123456789012345678,1.5,-0.0,1e-7,2.5E3,"
     "1.0000000005,0.1,1e30,-1.7976931348623157e308,5e-324]}",
     "117201b8a9e6875a8368d71d7be35cdc5f87c3f28bfa27b5c6f5e8a2bc938cfd"},
    /* decimal strings: rounding, leading zeros, long fractions */
    {"{" BASE ",\"d\":[\"1.25\",\"-0.0\",\"007\",\"0.0000000005\","
     "\"-0.0000000005\",\"12345678.123456789\",\"9.9999999995\","
     "\"1.\",\".5\",\"1e5\",\"+1\",\"--1\",\"1.2.3\"]}",
     "6510d51f78cf138a9182635d4f85fb288767e9334583e7fc55baf41a427e3535"},
    /* timestamps: offsets, fractions, 'T', 'Z', not quite */
    {"{" BASE ",\"t\":[\"2026-08-01T10:00:00Z\",\"2026-08-01 10:00:00 UTC\","
     "\"2026-08-01T12:00:00+02:00\",\"2026-08-01 10:00:00.500000 UTC\","
     "\"2026-08-01T10:00:00.123456789Z\",\"2026-08-01T10:00:00.100Z\","
     "\"2026-08-01T24:00:00Z\",\"2026-08-01x10:00:00Z\",\"2026-08-01\","
     "\"2026-13-01T10:00:00Z\",\"2026-08-01 10:00:00 UTC and more\"]}",
     "99a124547b3b8b2e67c2eb75ec694cbdc4b621b1052349a69c984c85b1ba273a"},
    /* booleans, nested objects out of order */
    {"{" BASE ",\"z\":{\"b\":true,\"a\":false,\"c\":{\"y\":1,\"x\":[true]}}}",
     "6f05c00dc687bb1c1ffac31d7ed232276ed8926067bcfb3d714157cc6a4dade8"},
    /* a 19-digit integer: Jansson reads the row */
    {"{" SVC "," SKU_GPU "," START ",\"cost\":2,\"currency\":\"USD\","
     "\"big\":1234567890123456789}",
     "fab6036ffb79f6a5d976b915563a9b74b0afede935158a23db9ab70425ce0247"},
};

START_TEST(key_pinned)
{
  static const char hex[] = "0123456789abcdef";
  struct billing_scratch *s = billing_scratch_new();
  const char *row = key_cases[_i].row;
  char got[2 * DB_BILLING_HASH_LEN + 1], err[256] = "";
  struct billing_row r;
  int k, pass;

  ck_assert_ptr_nonnull(s);
  /* once by itself, once after every other row through one scratch (the
   * pull's way: buffers reused from row to row) */
  for (pass = 0; pass < 2; pass++) {
    int j;
    if (pass == 1)
      for (j = 0; j < N_OF(key_cases); j++) {
        ck_assert_int_eq(billing_parse_row_with(s, key_cases[j].row,
                                                strlen(key_cases[j].row), &r,
                                                err, sizeof(err)),
                         0);
        billing_row_clear(&r);
      }
    ck_assert_msg(
        (pass
             ? billing_parse_row_with(s, row, strlen(row), &r, err, sizeof(err))
             : billing_parse_row(row, strlen(row), &r, err, sizeof(err))) == 0,
        "case %d rejected: %s", _i, err);
    for (k = 0; k < DB_BILLING_HASH_LEN; k++) {
      got[2 * k] = hex[r.db.hash[k] >> 4];
      got[2 * k + 1] = hex[r.db.hash[k] & 15];
    }
    got[2 * DB_BILLING_HASH_LEN] = '\0';
    billing_row_clear(&r);
    ck_assert_msg(!strcmp(got, key_cases[_i].key),
                  "case %d (pass %d): key %s, pinned %s", _i, pass, got,
                  key_cases[_i].key);
  }
  billing_scratch_free(s);
}
END_TEST

/* ------------------------------------------------- binary forms for COPY */

/* numeric_send of the numeric each text makes, as PostgreSQL 15 writes it
 * (SELECT encode(numeric_send('...'::numeric), 'hex')) */
static const struct {
  const char *text, *hex; /* hex NULL: not a number */
} numeric_cases[] = {
    {"0", "0000000000000000"},
    {"-0", "0000000000000000"},
    {"0.000", "0000000000000003"},
    {"1", "00010000000000000001"},
    {"-1", "00010000400000000001"},
    {"12", "0001000000000000000c"},
    {"1.25", "0002000000000002000109c4"},
    {"-1.25", "0002000040000002000109c4"},
    {"0.3", "0001ffff000000010bb8"},
    {"1e-07", "0001fffe00000007000a"},
    {"2e-7", "0001fffe000000070014"},
    {"1.5E3", "000100000000000005dc"},
    {"1234.567890123", "000400000000000904d2162e23340bb8"},
    {"-0.0000002", "0001fffe400000070014"},
    {"100000000000000000", "0001000400000000000a"},
    {"1.23456789012345e+20", "0005000500000000000109291a85007b1194"},
    {"4.94065645841247e-324", "0005ffaf00000152000424be160d20dc125c"},
    {"-1.79769313486232e+308", "0005004d4000000000011f28246112fe0c80"},
    {"10000", "00010001000000000001"},
    {"0.0001", "0001ffff000000040001"},
    {"99999.99990", "00030001000000050009270f270f"},
    {"123456789.000000001", "0006000200000009000109291a850000000003e8"},
    {"7200", "00010000000000001c20"},
    {"0.000277777777777778", "0005ffff0000001200021e611e611e611e78"},
    {"", NULL},
    {"-", NULL},
    {"1e", NULL},
    {"1.2.3", NULL},
    {"12a", NULL},
    {"nan", NULL},
};

START_TEST(numeric_binary)
{
  unsigned char out[256];
  char hex[520];
  int n = db_numeric_binary(numeric_cases[_i].text, out, sizeof(out)), i;

  if (!numeric_cases[_i].hex) {
    ck_assert_msg(n == -1, "\"%s\" accepted", numeric_cases[_i].text);
    return;
  }
  ck_assert_int_gt(n, 0);
  for (i = 0; i < n; i++)
    snprintf(hex + 2 * i, 3, "%02x", out[i]);
  ck_assert_msg(!strcmp(hex, numeric_cases[_i].hex), "\"%s\": %s, want %s",
                numeric_cases[_i].text, hex, numeric_cases[_i].hex);
  ck_assert_int_eq(db_numeric_binary(numeric_cases[_i].text, out, 4), -1);
}
END_TEST

/* ------------------------------------------- numeric arithmetic in C */

/* Text, PostgreSQL 15's text of text::numeric and of
 * trim_scale(text::numeric / 3600) (psql, for each line); NULL: refused
 * (not a number, or more digits than the C arithmetic holds: PostgreSQL
 * then does it). */
static const struct {
  const char *text, *numeric, *per_3600;
} bnum_cases[] = {
    {"-0", "0", "0"},
    {"1.50", "1.50", "0.00041666666666666667"},
    {"1.5E+3", "1500", "0.41666666666666666667"},
    {"1e+21", "1000000000000000000000", "277777777777777778"},
    {"-3599.5", "-3599.5", "-0.99986111111111111111"},
    {"3599.999999999", "3599.999999999", "0.99999999999972222222"},
    {"1800", "1800", "0.5"},
    {"3600", "3600", "1"},
    {"7200.000", "7200.000", "2"},
    {"0.0000005", "0.0000005", "0.0000000001388888888888888889"},
    {"12345678", "12345678", "3429.355"},
    {"0.00036", "0.00036", "0.0000001"},
    {"3601", "3601", "1.0002777777777778"},
    {"1e-07", "0.0000001", "0.0000000000277777777777777778"},
    {"3600.0001", "3600.0001", "1.00000002777777777778"},
    {"5e-17", "0.00000000000000005", "0.000000000000000000013888888888888889"},
    {"36", "36", "0.01"},
    {"455824009", "455824009", "126617.780277777778"},
    {"-0.05960116996623266", "-0.05960116996623266",
     "-0.000016555880546175738889"},
    {"7074924.717491316", "7074924.717491316", "1965.25686596981"},
    {"47709585", "47709585", "13252.6625"},
    {"2.249061789", "2.249061789", "0.00062473938583333333"},
    {"6537e0", "6537", "1.8158333333333333"},
    {"6022791.889620082", "6022791.889620082", "1672.9977471166894444"},
    {"20000", "20000", "5.5555555555555556"},
    {"60000000", "60000000", "16666.666666666667"},
    {"70000000", "70000000", "19444.444444444444"},
    {"3192e-6", "0.003192", "0.000000886666666666666667"},
    {"2636247363398", "2636247363398", "732290934.27722222"},
    {"-0.6061376818430533", "-0.6061376818430533", "-0.00016837157828973703"},
    {"50", "50", "0.01388888888888888889"},
    {"5561611", "5561611", "1544.8919444444444444"},
    /* exactly half way at the result's scale: rounded away from zero */
    {"3600.00000000000000001800", "3600.00000000000000001800",
     "1.00000000000000000001"},
    {"-3600.00000000000000001800", "-3600.00000000000000001800",
     "-1.00000000000000000001"},
    {"1e-20", "0.00000000000000000001",
     "0.0000000000000000000000027777777777777778"},
    {"", NULL, NULL},
    {"-", NULL, NULL},
    {"1e", NULL, NULL},
    {"1.2.3", NULL, NULL},
    {"12a", NULL, NULL},
    {"nan", NULL, NULL},
    {"1234567890123456789012345678901234567", NULL, NULL},
    {"1e-70", NULL, NULL},
};

START_TEST(bnum_div)
{
  struct bnum x, q;
  char text[BNUM_TEXT_MAX];

  if (!bnum_cases[_i].numeric) {
    ck_assert_msg(bnum_parse(bnum_cases[_i].text, &x) == -1, "\"%s\" accepted",
                  bnum_cases[_i].text);
    return;
  }
  ck_assert_int_eq(bnum_parse(bnum_cases[_i].text, &x), 0);
  bnum_text(&x, text);
  ck_assert_str_eq(text, bnum_cases[_i].numeric);
  ck_assert_int_eq(bnum_div3600(&x, &q), 0);
  bnum_text(&q, text);
  ck_assert_str_eq(text, bnum_cases[_i].per_3600);
}
END_TEST

/* a + b as PostgreSQL 15 writes (a::numeric + b::numeric)::text; NULL:
 * more digits than the C arithmetic holds */
static const struct {
  const char *a, *b, *sum;
} bnum_add_cases[] = {
    {"1.50", "2.5", "4.00"},
    {"-0.1", "0.10", "0.00"},
    {"1e-07", "3", "3.0000001"},
    {"0.000000001", "-0.000000001", "0.000000000"},
    {"17.2084", "-0.585072", "16.623328"},
    {"1.5E+3", "0.25", "1500.25"},
    {"999999999999999999999999999999999999", "1", NULL},
    {"1392e11", "9.576896053087891e-08", NULL},
};

START_TEST(bnum_sum)
{
  struct bnum a, b;
  char text[BNUM_TEXT_MAX];

  ck_assert_int_eq(bnum_parse(bnum_add_cases[_i].a, &a), 0);
  ck_assert_int_eq(bnum_parse(bnum_add_cases[_i].b, &b), 0);
  if (!bnum_add_cases[_i].sum) {
    struct bnum was = a;
    ck_assert_int_eq(bnum_add(&a, &b), -1);
    ck_assert(a.m == was.m && a.scale == was.scale); /* unchanged */
    return;
  }
  ck_assert_int_eq(bnum_add(&a, &b), 0);
  bnum_text(&a, text);
  ck_assert_str_eq(text, bnum_add_cases[_i].sum);
}
END_TEST

/* microseconds and days from 2000-01-01, as PostgreSQL computes them */
static const struct {
  const char *text;
  long long us; /* or days; ok 0: rejected */
  int ok;
} ts_binary_cases[] =
    {
        {"2026-08-01 10:00:00+00", 838893600000000LL, 1},
        {"2026-08-01 10:00:00.5+00", 838893600500000LL, 1},
        {"2026-08-01 10:00:00.123456+00", 838893600123456LL, 1},
        {"1969-12-31 23:00:00+00", -946688400000000LL, 1},
        {"2000-01-01 00:00:00+00", 0, 1},
        {"0001-01-01 00:00:00+00", -63082281600000000LL, 1},
        {"9999-12-31 23:59:59.999999+00", 252455615999999999LL, 1},
        {"2024-02-29 12:00:00+00", 762523200000000LL, 1},
        {"2026-08-01 10:00:00", 0, 0},
        {"2026-08-01T10:00:00+00", 0, 0},
        {"2026-08-01 10:00:00.+00", 0, 0},
},
  date_binary_cases[] = {
      {"2026-08-01", 9709, 1},    {"1969-12-31", -10958, 1},
      {"2000-01-01", 0, 1},       {"0001-01-01", -730119, 1},
      {"9999-12-31", 2921939, 1}, {"2024-02-29", 8825, 1},
      {"2026-8-01", 0, 0},        {"2026-08-01 ", 0, 0},
};

START_TEST(timestamptz_binary)
{
  int64_t us = 0;
  int rc = db_timestamptz_binary(ts_binary_cases[_i].text, &us);

  ck_assert_int_eq(rc, ts_binary_cases[_i].ok ? 0 : -1);
  if (ts_binary_cases[_i].ok)
    ck_assert_int_eq(us, ts_binary_cases[_i].us);
}
END_TEST

START_TEST(date_binary)
{
  int32_t days = 0;
  int rc = db_date_binary(date_binary_cases[_i].text, &days);

  ck_assert_int_eq(rc, date_binary_cases[_i].ok ? 0 : -1);
  if (date_binary_cases[_i].ok)
    ck_assert_int_eq(days, date_binary_cases[_i].us);
}
END_TEST

START_TEST(batch_rows)
{
  struct db_billing_batch *b = db_billing_batch_new();
  struct billing_row r;
  const char *line = "{" BASE ",\"note\":\"tab\\there\"}\t";
  size_t one;
  char err[256];

  ck_assert_ptr_nonnull(b);
  ck_assert_int_eq(billing_parse_row(line, strlen(line), &r, err, sizeof(err)),
                   0);
  ck_assert_int_eq(db_billing_batch_add(b, &r.db), 0);
  one = db_billing_batch_bytes(b);
  /* the row, its hash and its other fields */
  ck_assert_uint_gt(one, strlen(line) + 32 + 40);
  ck_assert_int_eq(db_billing_batch_add(b, &r.db), 0);
  ck_assert_uint_eq(db_billing_batch_rows(b), 2);
  ck_assert_uint_gt(db_billing_batch_bytes(b), one + strlen(line) + 32);
  /* a field PostgreSQL would refuse is refused here, and leaves no trace */
  r.db.cost = "1,5";
  ck_assert_int_eq(db_billing_batch_add(b, &r.db), -1);
  r.db.cost = "1.5";
  r.db.usage_start = "yesterday";
  ck_assert_int_eq(db_billing_batch_add(b, &r.db), -1);
  ck_assert_uint_eq(db_billing_batch_rows(b), 2);
  billing_row_clear(&r);
  db_billing_batch_free(b);
}
END_TEST

/* ------------------------------------------ the fast path against Jansson */

static uint64_t rng = 88172645463325252u;

static unsigned rnd(unsigned n)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return n ? (unsigned)(rng % n) : 0;
}

struct sbuf {
  char p[16384];
  size_t len;
};

static void put(struct sbuf *b, const char *s)
{
  size_t n = strlen(s);

  if (b->len + n < sizeof(b->p)) {
    memcpy(b->p + b->len, s, n);
    b->len += n;
  }
}

static void ws(struct sbuf *b)
{
  static const char *const spaces[] = {"",  "",   "",      "",
                                       " ", "\t", "\r\n ", "  "};

  put(b, spaces[rnd(8)]);
}

/* A JSON string, now and then one Jansson rejects. */
static void gen_string(struct sbuf *b, bool valid_only)
{
  static const char *const pieces[] = {"a",
                                       "team-a",
                                       "Compute Engine",
                                       "Nvidia L4 GPU",
                                       "gpu",
                                       "x y",
                                       "/",
                                       "\\\"",
                                       "\\\\",
                                       "\\/",
                                       "\\b",
                                       "\\f",
                                       "\\n",
                                       "\\r",
                                       "\\t",
                                       "\\u00e9",
                                       "\\u20AC",
                                       "\\ud83d\\ude00",
                                       "\\u0001",
                                       "\\u001f",
                                       "\xc3\xa9",
                                       "\xe2\x82\xac",
                                       "\xf0\x9f\x98\x80",
                                       "\x7f",
                                       "\xe2\x80\xa8",
                                       "-",
                                       "1"};
  static const char *const bad[] = {"\x01",     "\\x",          "\\ud800",
                                    "\\udc00x", "\\u0000",      "\xff",
                                    "\xc0\x80", "\xed\xa0\x80", "\\u12"};
  unsigned n = rnd(5), i;

  put(b, "\"");
  for (i = 0; i < n; i++)
    put(b, pieces[rnd(sizeof(pieces) / sizeof(pieces[0]))]);
  if (!valid_only && rnd(200) == 0)
    put(b, bad[rnd(sizeof(bad) / sizeof(bad[0]))]);
  put(b, "\"");
}

static void gen_number(struct sbuf *b, bool valid_only)
{
  static const char *const forms[] = {"0",
                                      "-0",
                                      "1",
                                      "-1",
                                      "12",
                                      "1.25",
                                      "1.50",
                                      "0.1",
                                      "0.3",
                                      "1e-7",
                                      "1E+2",
                                      "2.5e-5",
                                      "-0.0",
                                      "1e22",
                                      "1e23",
                                      "5e-324",
                                      "1.7976931348623157e308",
                                      "0.30000000000000004",
                                      "123456789012345678",
                                      "-123456789012345678",
                                      "1234567890123456789",
                                      "12345678901234567890",
                                      "9007199254740993",
                                      "0.1e1",
                                      "100.0",
                                      "9.999999999999999e22",
                                      "-2.2250738585072014e-308",
                                      "1e-400",
                                      "0.000001",
                                      "7200"};
  static const char *const bad[] = {"01", "-",     "1.",  ".5",  "1e",
                                    "+1", "1e400", "--1", "0x10"};
  char text[64];
  double v;
  uint64_t bits;

  if (!valid_only && rnd(300) == 0) {
    put(b, bad[rnd(sizeof(bad) / sizeof(bad[0]))]);
    return;
  }
  switch (rnd(4)) {
  case 0:
    put(b, forms[rnd(sizeof(forms) / sizeof(forms[0]))]);
    return;
  case 1:
    snprintf(text, sizeof(text), "%.*g", 1 + (int)rnd(17),
             ((double)rnd(2000000) - 1000000) / (double)(1u << rnd(30)));
    break;
  case 2:
    snprintf(text, sizeof(text), "%.*f", (int)rnd(9),
             ((double)rnd(100000000) - 50000000) / 1000.0);
    break;
  default:
    do {
      bits = (uint64_t)rnd(0xFFFFFFFFu) << 32 | rnd(0xFFFFFFFFu);
      memcpy(&v, &bits, sizeof(v));
    } while (v != v || v - v != 0); /* NaN, infinite */
    snprintf(text, sizeof(text), "%.17g", v);
  }
  put(b, text);
  if (!strchr(text, '.') && !strchr(text, 'e'))
    put(b, ".0");
}

static void gen_value(struct sbuf *b, int depth, bool valid_only);

static void gen_object(struct sbuf *b, int depth, bool valid_only)
{
  static const char *const keys[] = {"a", "b",  "id",      "ID",  "é",    "a b",
                                     "",  "aa", "\\u0061", "key", "value"};
  unsigned n = rnd(4), i;

  put(b, "{");
  for (i = 0; i < n; i++) {
    char key[32];
    if (i)
      put(b, ",");
    ws(b);
    /* duplicate keys now and then ("a" and "\u0061" too) */
    snprintf(key, sizeof(key), "\"%s\"",
             valid_only ? keys[i % 4]
                        : keys[rnd(sizeof(keys) / sizeof(keys[0]))]);
    put(b, key);
    ws(b);
    put(b, ":");
    gen_value(b, depth + 1, valid_only);
  }
  put(b, "}");
}

static void gen_value(struct sbuf *b, int depth, bool valid_only)
{
  unsigned i, n;

  ws(b);
  switch (depth > 3 ? rnd(4) : rnd(7)) {
  case 0:
    gen_string(b, valid_only);
    break;
  case 1:
    gen_number(b, valid_only);
    break;
  case 2:
    put(b, rnd(3) == 0 ? "null" : rnd(2) ? "true" : "false");
    break;
  case 3:
    gen_number(b, valid_only);
    break;
  case 4:
  case 5:
    gen_object(b, depth, valid_only);
    break;
  default:
    n = rnd(4);
    put(b, "[");
    for (i = 0; i < n; i++) {
      if (i)
        put(b, ",");
      gen_value(b, depth + 1, valid_only);
    }
    put(b, "]");
  }
  ws(b);
}

/* One member of a row: the fields the checks read, mostly well-formed. */
static void gen_member(struct sbuf *b, unsigned which)
{
  static const char *const times[] = {"\"2026-08-01 10:00:00 UTC\"",
                                      "\"2026-08-01T23:30:00-02:00\"",
                                      "\"2026-08-31 23:59:59.123456789 UTC\"",
                                      "\"2024-02-29T12:00:00Z\"",
                                      "\"yesterday\"",
                                      "1754042400"};
  static const char *const label_keys[] = {"gpugate-team", "gpugate-flavor",
                                           "env", "gpugate-team"};
  static const char *const units[] = {"\"seconds\"", "\"hour\"",
                                      "\"gibibyte hour\"", "\"byte-seconds\"",
                                      "null"};
  unsigned i, n;

  switch (which) {
  case 0:
    put(b, "\"cost\":");
    if (rnd(50) == 0)
      put(b, rnd(2) ? "\"1.25\"" : "null");
    else
      gen_number(b, true);
    break;
  case 1:
    put(b, "\"currency\":");
    put(b, rnd(40) ? (rnd(2) ? "\"USD\"" : "\"eur\"") : "\"US\"");
    break;
  case 2:
    put(b, "\"usage_start_time\":");
    put(b, times[rnd(30) ? rnd(4) : 4 + rnd(2)]);
    break;
  case 3:
  case 4:
    put(b, which == 3 ? "\"service\":{" : "\"sku\":{");
    if (rnd(20))
      put(b, "\"id\":\"S-1\",");
    put(b, "\"description\":");
    if (rnd(3))
      put(b, rnd(2) ? "\"Nvidia L4 GPU running\"" : "\"N1 Core\"");
    else
      gen_string(b, true);
    put(b, "}");
    break;
  case 5:
    put(b, "\"labels\":[");
    n = rnd(4);
    for (i = 0; i < n; i++) {
      put(b, i ? ",{\"key\":\"" : "{\"key\":\"");
      put(b, label_keys[rnd(4)]);
      put(b, "\",\"value\":");
      if (rnd(10) == 0)
        put(b, rnd(2) ? "null" : "\"\"");
      else
        gen_string(b, true);
      put(b, "}");
    }
    put(b, "]");
    break;
  case 6:
    put(b, "\"credits\":[");
    n = rnd(4);
    for (i = 0; i < n; i++) {
      put(b,
          i ? ",{\"name\":\"c\",\"amount\":" : "{\"name\":\"c\",\"amount\":");
      gen_number(b, true);
      put(b, ",\"type\":\"X\"}");
    }
    put(b, "]");
    break;
  case 7:
    put(b, "\"location\":");
    put(b, (const char *[]){"{\"location\":\"us\",\"region\":\"us-central1\","
                            "\"zone\":\"us-central1-a\"}",
                            "{\"zone\":\"europe-west4-b\"}",
                            "{\"region\":\"\",\"zone\":\"global\"}", "null",
                            "{\"country\":\"US\"}"}[rnd(5)]);
    break;
  case 8:
    put(b, "\"invoice\":{\"month\":");
    put(b, (const char *[]){"\"202608\"", "\"2026-09\"", "null", "\"202613\"",
                            "202608"}[rnd(30) ? rnd(3) : 3 + rnd(2)]);
    put(b, "}");
    break;
  default:
    put(b, "\"usage\":{\"amount\":");
    gen_number(b, true);
    put(b, ",\"unit\":");
    put(b, units[rnd(5)]);
    put(b, ",\"amount_in_pricing_units\":");
    gen_number(b, true);
    put(b, ",\"pricing_unit\":");
    put(b, units[rnd(5)]);
    put(b, "}");
  }
}

static void gen_row(struct sbuf *b)
{
  unsigned order[16], n = 0, i, j;

  b->len = 0;
  for (i = 0; i < 10; i++)
    if (i < 5 || rnd(5)) /* optional fields left out now and then */
      order[n++] = i;
  for (i = 0; i < 3; i++)
    order[n++] = 10 + i;        /* other fields */
  for (i = n - 1; i > 0; i--) { /* in any order */
    unsigned t;
    j = rnd(i + 1);
    t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  ws(b);
  put(b, "{");
  for (i = 0; i < n; i++) {
    if (i)
      put(b, ",");
    ws(b);
    if (order[i] < 10) {
      gen_member(b, order[i]);
    } else {
      put(b, (const char *[]){
                 "\"extra\":", "\"project\":", "\"zz\":"}[order[i] - 10]);
      gen_value(b, 1, rnd(4) != 0);
    }
    ws(b);
  }
  put(b, "}");
  ws(b);
  if (rnd(200) == 0)
    b->len -= rnd((unsigned)b->len); /* cut short */
}

static void same_row(const struct billing_row *a, const struct billing_row *b,
                     const char *line)
{
#define SAME(f)                                                                \
  ck_assert_msg(!strcmp(a->db.f, b->db.f), #f ": \"%s\" vs \"%s\" in %s",      \
                a->db.f, b->db.f, line)
  SAME(team);
  SAME(flavor);
  SAME(service);
  SAME(sku);
  SAME(location);
  SAME(currency);
  SAME(usage_start);
  SAME(usage_day);
  SAME(invoice_month);
#undef SAME
  /* amounts: the fast path keeps a number's text, Jansson has its double
   * only ("%.17g"): the same values */
#define SAME_NUM(f)                                                            \
  ck_assert_msg(fabs(strtod(a->db.f, NULL) - strtod(b->db.f, NULL)) <=         \
                    1e-12 * fmax(1.0, fabs(strtod(a->db.f, NULL))),            \
                #f ": \"%s\" vs \"%s\" in %s", a->db.f, b->db.f, line)
  SAME_NUM(cost);
  SAME_NUM(credits);
  SAME_NUM(gpu_amount);
  SAME_NUM(pricing_quantity);
#undef SAME_NUM
  ck_assert_str_eq(a->db.pricing_unit, b->db.pricing_unit);
  ck_assert_int_eq(a->db.gpu_divisor, b->db.gpu_divisor);
  ck_assert_ptr_eq(a->db.row, b->db.row);
  ck_assert_uint_eq(a->db.row_len, b->db.row_len);
  ck_assert_msg(!memcmp(a->db.hash, b->db.hash, DB_BILLING_HASH_LEN),
                "hashes differ for %s", line);
}

/* Many generated rows, most of them valid, some with every kind of JSON
 * and field error: the fast path and Jansson agree on each (accepted or
 * not, every field, the hash, the message), and the fast path takes most. */
START_TEST(fast_vs_jansson)
{
  struct billing_scratch *s = billing_scratch_new();
  static struct sbuf b;
  int i, accepted = 0, fast = 0;

  ck_assert_ptr_nonnull(s);
  for (i = 0; i < 6000; i++) {
    struct billing_row a, j;
    char ea[256] = "", ej[256] = "";
    int ra, rj;
    gen_row(&b);
    b.p[b.len] = '\0';
    ra = billing_parse_row_with(s, b.p, b.len, &a, ea, sizeof(ea));
    rj = billing_parse_row_jansson(b.p, b.len, &j, ej, sizeof(ej));
    if (ra != 0 && rj == 0 && !strcmp(ea, BILLING_NOT_EXACT)) {
      /* only Jansson reads it, and its amounts through a double: refused
       * where the reference takes them by value */
      billing_row_clear(&j);
      continue;
    }
    ck_assert_msg(ra == rj, "row %d: %d vs %d (%s) for %s", i, ra, rj,
                  ra ? ea : ej, b.p);
    if (ra != 0) {
      ck_assert_str_eq(ea, ej);
      continue;
    }
    accepted++;
    fast += a.doc == NULL;
    same_row(&a, &j, b.p);
    billing_row_clear(&a);
    billing_row_clear(&j);
  }
  ck_assert_int_gt(accepted, 3000);
  ck_assert_int_gt(fast, accepted * 9 / 10);
  billing_scratch_free(s);
}
END_TEST

/* Rows the fast reader declines but Jansson reads: money stays exact (an
 * amount that is a real is refused, naming its field, never stored as a
 * double's "%.17g"); a row nested deeper than 64 says so. */
#define WIDE ",\"x\":1234567890123456789" /* 19 digits: Jansson's */
#define DEEP70                                                                 \
  "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["     \
  "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
static const struct {
  const char *row;
  const char *err;  /* NULL: accepted */
  const char *cost; /* accepted: the cost stored */
} exact_cases[] = {
    {"{" SVC "," SKU_CPU "," START ",\"cost\":0.1,\"currency\":\"USD\"" WIDE
     "}",
     BILLING_NOT_EXACT, NULL},
    {"{" SVC "," SKU_CPU "," START ",\"cost\":12345678.123456789,"
     "\"currency\":\"USD\"" WIDE "}",
     BILLING_NOT_EXACT, NULL},
    {"{" BASE ",\"credits\":[{\"amount\":-0.3}]" WIDE "}", BILLING_NOT_EXACT,
     NULL},
    {"{" BASE ",\"cost\":2" WIDE "}",
     "not JSON: duplicate object key "
     "near '\"cost\"' (column 211)",
     NULL},
    {"{" SVC "," SKU_CPU "," START ",\"cost\":2,\"currency\":\"USD\"" WIDE "}",
     NULL, "2"},
    {"{" SVC "," SKU_CPU "," START ",\"cost\":0.1,\"currency\":\"USD\"}", NULL,
     "0.1"},
    {"{" SVC "," SKU_CPU "," START ",\"cost\":2,\"currency\":\"USD\","
     "\"x\":" DEEP70 "}",
     "nested deeper than 64 levels", NULL},
};

START_TEST(jansson_fallback_exact)
{
  const char *row = exact_cases[_i].row;
  struct billing_row r;
  char err[512] = "";
  int rc = billing_parse_row(row, strlen(row), &r, err, sizeof(err));

  if (exact_cases[_i].err) {
    ck_assert_msg(rc != 0, "%s: accepted, cost %s", row, r.db.cost);
    ck_assert_str_eq(err, exact_cases[_i].err);
  } else {
    ck_assert_msg(rc == 0, "%s: %s", row, err);
    ck_assert_str_eq(r.db.cost, exact_cases[_i].cost);
  }
  billing_row_clear(&r);
}
END_TEST

/* A row far bigger than usual grows the scratch, which is trimmed back
 * before the next one; the row's strings stay valid until then. */
START_TEST(fast_big_row)
{
  struct billing_scratch *s = billing_scratch_new();
  size_t n = 3 * 1024 * 1024 / 8, i, len;
  char *line = malloc(n * 8 + 256), err[256];
  struct billing_row r, j;

  ck_assert_ptr_nonnull(line);
  len = (size_t)snprintf(line, 256, "{" BASE ",\"big\":[");
  for (i = 0; i < n; i++)
    len += (size_t)snprintf(line + len, 16, "%s{\"b\":1}", i ? "," : "");
  len += (size_t)snprintf(line + len, 16, "]}");
  ck_assert_int_eq(billing_parse_row_with(s, line, len, &r, err, sizeof(err)),
                   0);
  ck_assert_ptr_null(r.doc);
  ck_assert_int_eq(billing_parse_row_jansson(line, len, &j, err, sizeof(err)),
                   0);
  same_row(&r, &j, "(big)");
  billing_row_clear(&j);
  billing_row_clear(&r);
  len = strlen("{" BASE "}");
  ck_assert_int_eq(
      billing_parse_row_with(s, "{" BASE "}", len, &r, err, sizeof(err)), 0);
  ck_assert_str_eq(r.db.service, "Compute Engine");
  billing_row_clear(&r);
  billing_scratch_free(s);
  free(line);
}
END_TEST

/* The fast path's number conversions, against glibc and Jansson. */
START_TEST(reals)
{
  int i, bad = 0;

  for (i = 0; i < 60000; i++) {
    char text[64], mine[64];
    double v = 0, got;
    uint64_t bits;
    json_t *real;
    char *dump;
    size_t n;
    switch (i % 5) {
    case 0: /* any double */
      do {
        bits = (uint64_t)rnd(0xFFFFFFFFu) << 32 | rnd(0xFFFFFFFFu);
        memcpy(&v, &bits, sizeof(v));
      } while (v != v || v - v != 0);
      snprintf(text, sizeof(text), "%.17g", v);
      break;
    case 1: /* powers of ten and their neighbours */
      snprintf(text, sizeof(text), "1e%d", (int)rnd(90) - 45);
      v = strtod(text, NULL);
      for (n = rnd(7); n > 0; n--)
        v = nextafter(v, rnd(2) ? 1e300 : 0);
      snprintf(text, sizeof(text), "%.*e", (int)rnd(18), v);
      break;
    case 2: /* short decimals, as exports write them */
      snprintf(text, sizeof(text), "%.*f", (int)rnd(10),
               ((double)rnd(2000000000) - 1e9) / (double)(1u << rnd(20)));
      break;
    case 3: /* exact binary fractions: ties when printed */
      v = ldexp((double)(rnd(100000) | 1), (int)rnd(140) - 90);
      snprintf(text, sizeof(text), "%.17g", v);
      break;
    default: /* mantissa and exponent */
      snprintf(text, sizeof(text), "%u.%ue%d", rnd(100000), rnd(1000),
               (int)rnd(60) - 30);
    }
    if (!strchr(text, '.') && !strchr(text, 'e'))
      memcpy(text + strlen(text), ".5", 3);
    if (strchr(text, 'n') || strchr(text, 'i')) /* inf, nan */
      continue;
    v = strtod(text, NULL);
    if (v - v != 0)
      continue;
    got = billing_read_real(text, strlen(text));
    bad += memcmp(&got, &v, sizeof(v)) != 0;
    ck_assert_msg(!memcmp(&got, &v, sizeof(v)), "strtod(\"%s\")", text);
    n = billing_real_text(v, mine, sizeof(mine));
    real = json_real(v);
    dump = json_dumps(real, JSON_COMPACT | JSON_ENCODE_ANY);
    ck_assert_ptr_nonnull(dump);
    ck_assert_msg(n == strlen(dump) && !memcmp(mine, dump, n),
                  "%s: \"%.*s\", Jansson \"%s\"", text, (int)n, mine, dump);
    free(dump);
    json_decref(real);
  }
  ck_assert_int_eq(bad, 0);
}
END_TEST

/* billing_dec_add's 64-bit shortcut gives the grid's digits. */
START_TEST(dec_small_vs_grid)
{
  int i;

  for (i = 0; i < 20000; i++) {
    char acc[BILLING_DEC_MAX], grid[BILLING_DEC_MAX], x[64];
    int k, terms = 1 + (int)rnd(4);
    snprintf(acc, sizeof(acc), "0");
    snprintf(grid, sizeof(grid), "0");
    for (k = 0; k < terms; k++) {
      if (rnd(3) == 0)
        snprintf(x, sizeof(x), "%.15g",
                 ((double)rnd(2000000000) - 1e9) / pow(10, rnd(25)));
      else
        snprintf(x, sizeof(x), "%s%u.%0*u%s", rnd(2) ? "-" : "", rnd(100000),
                 (int)rnd(8), rnd(100000), rnd(4) ? "" : "e-3");
      ck_assert_int_eq(billing_dec_add(acc, x), billing_dec_add_grid(grid, x));
      ck_assert_str_eq(acc, grid);
    }
  }
}
END_TEST

/* --------------------------------------------------- the engine, no rows */

START_TEST(engine_rejections)
{
  static const char input[] =
      "\xEF\xBB\xBF\n"               /* 1: a byte order mark, then blank */
      "{bad\n"                       /* 2 */
      "   \r\n"                      /* 3: blank */
      "{\"cost\":\"x\"}\n"           /* 4 */
      "[]\n"                         /* 5 */
      "{\"service\":{\"id\":\"s\"}"; /* 6: unterminated, no newline */
  struct billing_ingest *bi = billing_ingest_new(NULL);
  json_t *report, *rej;
  size_t i;
  long rows;
  double secs;

  ck_assert_ptr_nonnull(bi);
  for (i = 0; i < sizeof(input) - 1; i += 3)
    ck_assert_int_eq(billing_ingest_feed(
                         bi, input + i,
                         sizeof(input) - 1 - i < 3 ? sizeof(input) - 1 - i : 3),
                     0);
  report = billing_ingest_finish(bi);
  ck_assert_ptr_nonnull(report);
  ck_assert_int_eq(json_integer_value(json_object_get(report, "inserted")), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(report, "duplicates")),
                   0);
  ck_assert_int_eq(
      json_integer_value(json_object_get(report, "rejected_count")), 4);
  ck_assert(json_is_false(json_object_get(report, "truncated")));
  rej = json_object_get(report, "rejected");
  ck_assert_uint_eq(json_array_size(rej), 4);
  ck_assert_int_eq(
      json_integer_value(json_object_get(json_array_get(rej, 0), "line")), 2);
  ck_assert_str_eq(
      json_string_value(json_object_get(json_array_get(rej, 1), "error")),
      "cost: not a number");
  ck_assert_int_eq(
      json_integer_value(json_object_get(json_array_get(rej, 1), "line")), 4);
  ck_assert_str_eq(
      json_string_value(json_object_get(json_array_get(rej, 2), "error")),
      "not a JSON object");
  ck_assert_int_eq(
      json_integer_value(json_object_get(json_array_get(rej, 3), "line")), 6);
  billing_ingest_progress(bi, &rows, &secs);
  ck_assert_int_eq(rows, 0);
  ck_assert(secs >= 0);
  json_decref(report);
  billing_ingest_free(bi);
}
END_TEST

/* Error messages quote bad input; the report stays printable ASCII. */
START_TEST(engine_bad_bytes)
{
  static const char bad[] = "{\"a\xff\xfe\":1}\n\x01\x02\n";
  struct billing_ingest *bi = billing_ingest_new(NULL);
  json_t *report;
  const char *e;
  size_t i;

  ck_assert_int_eq(billing_ingest_feed(bi, bad, sizeof(bad) - 1), 0);
  report = billing_ingest_finish(bi);
  ck_assert_int_eq(
      json_integer_value(json_object_get(report, "rejected_count")), 2);
  for (i = 0; i < 2; i++) {
    e = json_string_value(json_object_get(
        json_array_get(json_object_get(report, "rejected"), i), "error"));
    ck_assert_ptr_nonnull(e);
    ck_assert(!strncmp(e, "not JSON: ", 10));
    for (; *e; e++)
      ck_assert(*e >= 0x20 && *e < 0x7f);
  }
  json_decref(report);
  billing_ingest_free(bi);
}
END_TEST

/* More bad lines than are listed: all counted, the list capped. */
START_TEST(engine_truncates)
{
  struct billing_ingest *bi = billing_ingest_new(NULL);
  json_t *report;
  int i;

  for (i = 0; i < BILLING_REJECTED_MAX + 5; i++)
    ck_assert_int_eq(billing_ingest_feed(bi, "x\n", 2), 0);
  report = billing_ingest_finish(bi);
  ck_assert_int_eq(
      json_integer_value(json_object_get(report, "rejected_count")),
      BILLING_REJECTED_MAX + 5);
  ck_assert_uint_eq(json_array_size(json_object_get(report, "rejected")),
                    BILLING_REJECTED_MAX);
  ck_assert(json_is_true(json_object_get(report, "truncated")));
  json_decref(report);
  billing_ingest_free(bi);
}
END_TEST

/* A line over 1 MiB is rejected and the next one still parsed. */
START_TEST(engine_long_line)
{
  struct billing_ingest *bi = billing_ingest_new(NULL);
  size_t n = BILLING_LINE_MAX + 10, i;
  char *big = malloc(n);
  json_t *report, *rej;

  ck_assert_ptr_nonnull(big);
  memset(big, ' ', n);
  for (i = 0; i < n; i += 4096)
    ck_assert_int_eq(
        billing_ingest_feed(bi, big + i, n - i < 4096 ? n - i : 4096), 0);
  ck_assert_int_eq(billing_ingest_feed(bi, "\n[]\n", 4), 0);
  report = billing_ingest_finish(bi);
  rej = json_object_get(report, "rejected");
  ck_assert_uint_eq(json_array_size(rej), 2);
  ck_assert_str_eq(
      json_string_value(json_object_get(json_array_get(rej, 0), "error")),
      "line longer than 1 MiB");
  ck_assert_int_eq(
      json_integer_value(json_object_get(json_array_get(rej, 1), "line")), 2);
  json_decref(report);
  billing_ingest_free(bi);
  free(big);
}
END_TEST

Suite *billing_suite(void)
{
  Suite *s = suite_create("billing");
  TCase *tc = tcase_create("pure");

  tcase_add_loop_test(tc, split, 0, N_OF(split_cases));
  tcase_add_loop_test(tc, bnum_div, 0, N_OF(bnum_cases));
  tcase_add_loop_test(tc, bnum_sum, 0, N_OF(bnum_add_cases));
  tcase_add_test(tc, split_stops);
  tcase_add_loop_test(tc, timestamp, 0, N_OF(ts_cases));
  tcase_add_loop_test(tc, dec_add, 0, N_OF(dec_cases));
  tcase_add_test(tc, dec_extremes);
  tcase_add_loop_test(tc, parse_row, 0, N_OF(row_cases));
  tcase_add_loop_test(tc, hash, 0, N_OF(hash_cases));
  tcase_add_loop_test(tc, key_pinned, 0, N_OF(key_cases));
  tcase_add_loop_test(tc, numeric_binary, 0, N_OF(numeric_cases));
  tcase_add_loop_test(tc, timestamptz_binary, 0, N_OF(ts_binary_cases));
  tcase_add_loop_test(tc, date_binary, 0, N_OF(date_binary_cases));
  tcase_add_test(tc, batch_rows);
  tcase_add_test(tc, fast_vs_jansson);
  tcase_add_test(tc, fast_big_row);
  tcase_add_loop_test(tc, jansson_fallback_exact, 0,
                      (int)(sizeof(exact_cases) / sizeof(exact_cases[0])));
  tcase_add_test(tc, reals);
  tcase_add_test(tc, dec_small_vs_grid);
  tcase_add_test(tc, engine_rejections);
  tcase_add_test(tc, engine_bad_bytes);
  tcase_add_test(tc, engine_truncates);
  tcase_add_test(tc, engine_long_line);
  suite_add_tcase(s, tc);
  return s;
}
