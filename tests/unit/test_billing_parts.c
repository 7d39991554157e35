/*
 * test_billing_parts.c — the pieces of the billing ingest engine, each on
 * its own, as tables of cases: the fast JSON reader's key text
 * (billing_json, the same as billing_key_text's), the field rules read through
 * both parsers' documents with the same fields and the same message either way
 * (billing_fields), zone regions, GPU divisors and invoice months
 * (billing_fields, billing_time). test_billing.c covers line splitting,
 * timestamps, exact decimals, reals and the engine.
 */
#include <stdio.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "billing/billing_ingest.h"

Suite *billing_parts_suite(void);

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* -------------------------------------------------- billing_json: key text */

static const struct {
  const char *in;
  const char *canon; /* NULL: the reader declines */
} canon_cases[] = {
    {"{}", ""}, /* no member with a meaning: nothing */
    {" {\"b\":1, \"a\" : [true,false,null]} ",
     "{\"a\":[true,false,null],\"b\":1}"},
    {"{\"k\":\"caf\\u00e9\\/\\t\\\"\"}",
     "{\"k\":\"caf\xc3\xa9/\\u0009\\u0022\"}"},
    {"{\"k\":\"\\u0001\"}", "{\"k\":\"\\u0001\"}"},
    {"{\"x\":-0}", "{\"x\":0}"},
    {"{\"x\":1.5e3}", "{\"x\":1500}"},
    {"{\"x\":0.1}", "{\"x\":0.1}"},
    {"{\"x\":1e-7}", "{\"x\":0.0000001}"},
    {"{\"x\":\"1.50\",\"t\":\"2026-08-01 10:00:00.500 UTC\"}",
     "{\"t\":\"2026-08-01T10:00:00.5Z\",\"x\":1.5}"},
    {"{\"n\":null,\"e\":[],\"o\":{\"p\":null},\"a\":[null,{},[]],\"z\":1}",
     "{\"a\":[null,null,null],\"z\":1}"},
    {"{\"b\":{\"d\":1,\"c\":2},\"a\":0}", "{\"a\":0,\"b\":{\"c\":2,\"d\":1}}"},
    {"{\"ab\":1,\"a\":2,\"abcdefghij\":3,\"abcdefghi\":4}",
     "{\"a\":2,\"ab\":1,\"abcdefghi\":4,\"abcdefghij\":3}"},
    /* declined: Jansson decides */
    {"[1]", NULL},
    {"{\"a\":1,\"a\":2}", NULL},           /* duplicate key */
    {"{\"a\":1234567890123456789}", NULL}, /* 19 digits */
    {"{\"a\":1e999}", NULL},               /* inf */
    {"{\"a\":\"\\u0000\"}", NULL},         /* NUL */
    {"{\"a\":\"\\ud800\"}", NULL},         /* lone surrogate */
    {"{\"a\":\"\xc0\xaf\"}", NULL},        /* overlong UTF-8 */
    {"{\"a\":01}", NULL},
    {"{\"a\":1,}", NULL},
    {"{\"a\":1} x", NULL},
    {"{\"a\":tru}", NULL},
};

START_TEST(json_canonical)
{
  struct billing_scratch *s = billing_scratch_new();
  const char *in = canon_cases[_i].in, *want = canon_cases[_i].canon;
  int rc;

  ck_assert_ptr_nonnull(s);
  rc = billing_json_parse(s, in, strlen(in));
  if (!want) {
    ck_assert_msg(rc != 0, "%s: accepted, want declined", in);
  } else {
    size_t n;
    const char *got;
    struct billing_keytext t = {NULL, 0, 0}; /* the reference's */
    ck_assert_msg(rc == 0, "%s: declined", in);
    got = billing_json_canonical(s, &n);
    ck_assert_msg(n == strlen(want) && !memcmp(got, want, n),
                  "%s: key text %.*s, want %s", in, (int)n, got, want);
    ck_assert_int_eq(billing_key_text_jansson(in, strlen(in), &t), 0);
    ck_assert_str_eq(t.p, want);
    billing_keytext_free(&t);
  }
  billing_scratch_free(s);
}
END_TEST

/* ------------------------------------- billing_fields: through both docs */

#define SVC "\"service\":{\"id\":\"S1\",\"description\":\"Compute Engine\"}"
#define SKU "\"sku\":{\"id\":\"K1\",\"description\":\"Nvidia L4 GPU\"}"
#define START "\"usage_start_time\":\"2026-08-01 10:00:00 UTC\""
#define COST "\"cost\":1.5,\"currency\":\"usd\""
#define OK_ROW SVC "," SKU "," START "," COST

static const struct {
  const char *row;
  const char *err; /* NULL: accepted */
  const char *team, *location, *credits, *gpu_amount;
  int divisor;
} field_cases[] = {
    {"{" OK_ROW "}", NULL, BILLING_UNATTRIBUTED, "", "0", "0", 0},
    {"{" OK_ROW ",\"labels\":[{\"key\":\"gpugate-team\",\"value\":\"a\"},"
     "{\"key\":\"x\",\"value\":null}]}",
     NULL, "a", "", "0", "0", 0},
    {"{" OK_ROW ",\"labels\":[{\"key\":\"gpugate-team\",\"value\":\"\"}]}",
     NULL, BILLING_UNATTRIBUTED, "", "0", "0", 0},
    {"{" OK_ROW ",\"location\":{\"zone\":\"europe-west4-b\"}}", NULL,
     BILLING_UNATTRIBUTED, "europe-west4", "0", "0", 0},
    {"{" OK_ROW ",\"location\":{\"location\":\"us\",\"zone\":\"us-east1-b\"}}",
     NULL, BILLING_UNATTRIBUTED, "us", "0", "0", 0},
    {"{" OK_ROW ",\"credits\":[{\"amount\":-0.5},{\"amount\":-1}]}", NULL,
     BILLING_UNATTRIBUTED, "", "-1.5", "0", 0},
    {"{" OK_ROW ",\"usage\":{\"amount\":7200,\"unit\":\"seconds\"}}", NULL,
     BILLING_UNATTRIBUTED, "", "0", "7200", 3600},
    {"{" OK_ROW ",\"usage\":{\"amount_in_pricing_units\":2.5,"
     "\"pricing_unit\":\"hour\",\"amount\":9000,\"unit\":\"seconds\"}}",
     NULL, BILLING_UNATTRIBUTED, "", "0", "2.5", 1},
    /* every rule's message */
    {"{" SVC "," SKU "," START ",\"currency\":\"USD\"}", "cost: required", NULL,
     NULL, NULL, NULL, 0},
    {"{" SVC "," SKU "," START ",\"cost\":\"1x\",\"currency\":\"USD\"}",
     "cost: not a number", NULL, NULL, NULL, NULL, 0},
    {"{" SVC "," SKU "," START ",\"cost\":1,\"currency\":\"US\"}",
     "currency: not a 3-letter code", NULL, NULL, NULL, NULL, 0},
    {"{" SVC "," SKU ",\"usage_start_time\":\"2026-08-01\"," COST "}",
     "usage_start_time: not a timestamp", NULL, NULL, NULL, NULL, 0},
    {"{" SKU "," START "," COST "}", "service: required", NULL, NULL, NULL,
     NULL, 0},
    {"{\"service\":[]," SKU "," START "," COST "}", "service: not an object",
     NULL, NULL, NULL, NULL, 0},
    {"{" SVC ",\"sku\":{\"id\":\"\"}," START "," COST "}",
     "sku: needs an id or a description", NULL, NULL, NULL, NULL, 0},
    {"{" OK_ROW ",\"credits\":{}}", "credits: not an array", NULL, NULL, NULL,
     NULL, 0},
    {"{" OK_ROW ",\"credits\":[{\"amount\":1},2]}", "credits[1]: not an object",
     NULL, NULL, NULL, NULL, 0},
    {"{" OK_ROW ",\"credits\":[{\"amount\":\"+1\"}]}",
     "credits[0].amount: not a number", NULL, NULL, NULL, NULL, 0},
    {"{" OK_ROW ",\"labels\":{}}", "labels: not an array", NULL, NULL, NULL,
     NULL, 0},
    {"{" OK_ROW ",\"labels\":[1]}", "labels[0]: not an object", NULL, NULL,
     NULL, NULL, 0},
    {"{" OK_ROW ",\"labels\":[{\"value\":\"a\"}]}",
     "labels[0].key: not a string", NULL, NULL, NULL, NULL, 0},
    {"{" OK_ROW ",\"labels\":[{\"key\":\"a\",\"value\":1}]}",
     "labels[0].value: not a string", NULL, NULL, NULL, NULL, 0},
    {"{" OK_ROW ",\"location\":\"us\"}", "location: not an object", NULL, NULL,
     NULL, NULL, 0},
    {"{" OK_ROW ",\"invoice\":{\"month\":\"2026\"}}",
     "invoice.month: not YYYYMM", NULL, NULL, NULL, NULL, 0},
    {"{" OK_ROW ",\"usage\":[]}", "usage: not an object", NULL, NULL, NULL,
     NULL, 0},
    {"{" OK_ROW ",\"usage\":{\"amount\":true}}", "usage.amount: not a number",
     NULL, NULL, NULL, NULL, 0},
    {"{" OK_ROW ",\"usage\":{\"amount_in_pricing_units\":\"1\"}}",
     "usage.amount_in_pricing_units: not a number", NULL, NULL, NULL, NULL, 0},
    {"{" OK_ROW ",\"usage\":{\"amount_in_pricing_units\":1,"
     "\"pricing_unit\":2}}",
     "usage.pricing_unit: not a string", NULL, NULL, NULL, NULL, 0},
};

/* FOCUS PricingQuantity and PricingUnit of any usage, as written. */
static const struct {
  const char *row, *quantity, *unit;
} pricing_cases[] = {
    {"{" OK_ROW "}", "0", ""},
    {"{" OK_ROW ",\"usage\":{\"amount\":268435456000,\"unit\":"
     "\"byte-seconds\",\"amount_in_pricing_units\":0.1,\"pricing_unit\":"
     "\"gibibyte month\"}}",
     "0.1", "gibibyte month"},
    {"{" OK_ROW ",\"usage\":{\"amount_in_pricing_units\":12345678.123456789,"
     "\"pricing_unit\":\"count\"}}",
     "12345678.123456789", "count"},
    {"{" OK_ROW ",\"usage\":{\"amount_in_pricing_units\":null,"
     "\"pricing_unit\":null}}",
     "0", ""},
};

START_TEST(pricing_fields)
{
  const char *row = pricing_cases[_i].row;
  struct billing_scratch *s = billing_scratch_new();
  struct billing_doc fast;
  struct db_billing_row fdb;
  struct billing_field_text ft;
  char err[256];

  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(billing_json_parse(s, row, strlen(row)), 0);
  billing_json_doc(s, &fast);
  memset(&fdb, 0, sizeof(fdb));
  ck_assert_msg(billing_fields_read(&fast, &fdb, &ft, err, sizeof(err)) == 0,
                "%s: %s", row, err);
  ck_assert_str_eq(fdb.pricing_quantity, pricing_cases[_i].quantity);
  ck_assert_str_eq(fdb.pricing_unit, pricing_cases[_i].unit);
  billing_scratch_free(s);
}
END_TEST

/* Read the row's fields through doc; the result and message in err. */
static int read_fields(struct billing_doc *d, struct db_billing_row *db,
                       struct billing_field_text *t, char *err, size_t n)
{
  memset(db, 0, sizeof(*db));
  err[0] = '\0';
  return billing_fields_read(d, db, t, err, n);
}

START_TEST(fields_both_docs)
{
  const char *row = field_cases[_i].row;
  struct billing_scratch *s = billing_scratch_new();
  struct billing_row j;
  struct billing_doc fast;
  struct db_billing_row fdb;
  struct billing_field_text ft;
  char ferr[256], jerr[256] = "";
  int frc, jrc;

  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(billing_json_parse(s, row, strlen(row)), 0);
  billing_json_doc(s, &fast);
  frc = read_fields(&fast, &fdb, &ft, ferr, sizeof(ferr));
  jrc = billing_parse_row_jansson(row, strlen(row), &j, jerr, sizeof(jerr));
  ck_assert_int_eq(frc, jrc);
  if (field_cases[_i].err) {
    ck_assert_int_ne(frc, 0);
    ck_assert_str_eq(ferr, field_cases[_i].err);
    ck_assert_str_eq(jerr, field_cases[_i].err);
  } else {
    ck_assert_msg(frc == 0, "%s: %s", row, ferr);
    ck_assert_str_eq(fdb.team, field_cases[_i].team);
    ck_assert_str_eq(fdb.location, field_cases[_i].location);
    ck_assert_str_eq(fdb.credits, field_cases[_i].credits);
    ck_assert_str_eq(fdb.gpu_amount, field_cases[_i].gpu_amount);
    ck_assert_int_eq(fdb.gpu_divisor, field_cases[_i].divisor);
    ck_assert_str_eq(fdb.currency, "USD");
    ck_assert_str_eq(fdb.cost, "1.5");
    ck_assert_str_eq(j.db.team, fdb.team);
    ck_assert_str_eq(j.db.location, fdb.location);
    ck_assert_str_eq(j.db.credits, fdb.credits);
    ck_assert_str_eq(j.db.gpu_amount, fdb.gpu_amount);
    ck_assert_int_eq(j.db.gpu_divisor, fdb.gpu_divisor);
    billing_row_clear(&j);
  }
  billing_scratch_free(s);
}
END_TEST

/* ------------------------------------------------ small rules as tables */

static const struct {
  const char *zone, *region;
} zone_cases[] = {
    {"us-central1-a", "us-central1"},
    {"europe-west4-b", "europe-west4"},
    {"us", "us"},
    {"-a", "-a"}, /* a dash first: kept whole */
    {"a-", "a"},
    {"", ""},
};

START_TEST(zone_region)
{
  char out[BILLING_NAME_MAX + 1], small[3];

  ck_assert_int_eq(billing_zone_region(zone_cases[_i].zone, out, sizeof(out)),
                   0);
  ck_assert_str_eq(out, zone_cases[_i].region);
  ck_assert_int_eq(billing_zone_region("us-central1-a", small, sizeof(small)),
                   -1);
}
END_TEST

static const struct {
  const char *desc, *pricing_unit;
  bool in_pricing;
  const char *unit;
  bool amount;
  int divisor;
} divisor_cases[] = {
    {"Nvidia L4 GPU running in Americas", "hour", true, "seconds", true, 1},
    {"nvidia a100 gpu", "hour", false, "seconds", true, 3600},
    {"GPU", "gibibyte", true, "seconds", true, 3600},
    {"GPU", "hour", false, "bytes", true, 0},
    {"N1 Predefined Instance Core", "hour", true, "seconds", true, 0},
    {NULL, "hour", true, "seconds", true, 0},
    {"GPU", NULL, true, NULL, true, 0},
};

START_TEST(gpu_divisor)
{
  ck_assert_int_eq(billing_gpu_divisor(
                       divisor_cases[_i].desc, divisor_cases[_i].pricing_unit,
                       divisor_cases[_i].in_pricing, divisor_cases[_i].unit,
                       divisor_cases[_i].amount),
                   divisor_cases[_i].divisor);
}
END_TEST

static const struct {
  const char *in, *out; /* out NULL: refused */
} month_cases[] = {
    {"202608", "2026-08"}, {"2026-08", "2026-08"},
    {"000112", "0001-12"}, {"202613", NULL},
    {"202600", NULL},      {"000001", NULL},
    {"2026", NULL},        {"2026081", NULL},
    {"2026-8", NULL},      {"", NULL},
    {"abcdef", NULL},      {"2026--08", NULL},
};

START_TEST(invoice_month)
{
  char out[8];
  int rc = billing_invoice_month(month_cases[_i].in, out);

  if (month_cases[_i].out) {
    ck_assert_int_eq(rc, 0);
    ck_assert_str_eq(out, month_cases[_i].out);
  } else {
    ck_assert_int_eq(rc, -1);
  }
}
END_TEST

Suite *billing_parts_suite(void)
{
  Suite *s = suite_create("billing_parts");
  TCase *tc = tcase_create("core");

  tcase_add_loop_test(tc, json_canonical, 0, N_OF(canon_cases));
  tcase_add_loop_test(tc, fields_both_docs, 0, N_OF(field_cases));
  tcase_add_loop_test(tc, zone_region, 0, N_OF(zone_cases));
  tcase_add_loop_test(tc, gpu_divisor, 0, N_OF(divisor_cases));
  tcase_add_loop_test(tc, pricing_fields, 0, N_OF(pricing_cases));
  tcase_add_loop_test(tc, invoice_month, 0, N_OF(month_cases));
  suite_add_tcase(s, tc);
  return s;
}
