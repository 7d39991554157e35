/*
 * test_billing.c — the pure parts of billing-export ingestion
 * (handlers/billing_ingest.c, db/billing.c) as tables of cases: NDJSON
 * line splitting under every chunking, timestamps, exact decimal sums, row
 * parsing and validation (attribution, location fallbacks, invoice month,
 * credits, GPU-hours, error messages), the canonical hash, COPY text
 * escaping, and the engine's report for input that never reaches the
 * database (rejected and blank lines only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "db/billing.h"
#include "handlers/billing_ingest.h"

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
    /* amounts */
    {"{" SVC "," SKU_CPU "," START
     ",\"cost\":0.30000000000000004,\"currency\":\"eur\","
     "\"credits\":[{\"amount\":-0.1},{\"amount\":-0.2},{\"amount\":2e-7}]}",
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, "0.3", "EUR", "-0.2999998", NULL,
     NULL, "0", 0},
    {"{" SVC "," SKU_CPU "," START ",\"cost\":-12,\"currency\":\"JPY\","
     "\"credits\":[]}",
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, "-12", "JPY", "0", NULL, NULL,
     NULL, 0},
    {"{" SVC "," SKU_CPU "," START ",\"cost\":1234.567890123,"
     "\"currency\":\"USD\",\"credits\":null}",
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, "1234.567890123", NULL, "0",
     NULL, NULL, NULL, 0},
    {"{" SVC "," SKU_CPU "," START ",\"cost\":1e-7,\"currency\":\"USD\"}", NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, "1e-07", NULL, NULL, NULL, NULL, NULL,
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
    REJECT("{" SVC "," SKU_GPU "," START
           ",\"cost\":\"1.25\",\"currency\":\"USD\"}",
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
    REJECT("{" BASE ",\"credits\":[{\"amount\":\"-1\"}]}",
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
    {"{" BASE ",\"x\":1}", "{" BASE ",\"x\":1.0}", false}, /* int vs real */
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

/* ---------------------------------------------------------- COPY escaping */

static const struct {
  const char *in, *want;
} copy_cases[] = {
    {"", ""},
    {"plain text", "plain text"},
    {"a\\b", "a\\\\b"},
    {"a\tb", "a\\tb"},
    {"a\nb\r\n", "a\\nb\\r\\n"},
    {"\\.", "\\\\."}, /* never COPY's end-of-data marker */
    {"{\"s\":\"q\\\"\"}", "{\"s\":\"q\\\\\"\"}"},
    {"caf\xc3\xa9 \x01", "caf\xc3\xa9 \x01"}, /* other bytes as they are */
};

START_TEST(copy_escape)
{
  const char *in = copy_cases[_i].in;
  char out[64];
  size_t n = db_copy_escape(out, in, strlen(in));

  ck_assert_uint_eq(n, strlen(copy_cases[_i].want));
  ck_assert_msg(!memcmp(out, copy_cases[_i].want, n), "case %d: \"%.*s\"", _i,
                (int)n, out);
}
END_TEST

START_TEST(batch_text)
{
  struct db_billing_batch *b = db_billing_batch_new();
  struct billing_row r;
  const char *line = "{" BASE ",\"note\":\"tab\\there\"}\t";
  char err[256];

  ck_assert_ptr_nonnull(b);
  ck_assert_int_eq(billing_parse_row(line, strlen(line), &r, err, sizeof(err)),
                   0);
  ck_assert_int_eq(db_billing_batch_add(b, &r.db), 0);
  ck_assert_int_eq(db_billing_batch_add(b, &r.db), 0);
  ck_assert_uint_eq(db_billing_batch_rows(b), 2);
  /* 15 fields: \\x + 64 hex digits, the texts, the row with its \\ and the
   * trailing tab escaped */
  ck_assert_uint_gt(db_billing_batch_bytes(b), 2 * (strlen(line) + 67));
  billing_row_clear(&r);
  db_billing_batch_free(b);
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
  tcase_add_test(tc, split_stops);
  tcase_add_loop_test(tc, timestamp, 0, N_OF(ts_cases));
  tcase_add_loop_test(tc, dec_add, 0, N_OF(dec_cases));
  tcase_add_test(tc, dec_extremes);
  tcase_add_loop_test(tc, parse_row, 0, N_OF(row_cases));
  tcase_add_loop_test(tc, hash, 0, N_OF(hash_cases));
  tcase_add_loop_test(tc, copy_escape, 0, N_OF(copy_cases));
  tcase_add_test(tc, batch_text);
  tcase_add_test(tc, engine_rejections);
  tcase_add_test(tc, engine_bad_bytes);
  tcase_add_test(tc, engine_truncates);
  tcase_add_test(tc, engine_long_line);
  suite_add_tcase(s, tc);
  return s;
}
