/*
 * it_focus.c — FOCUS PricingQuantity and PricingUnit, end to end through
 * the API on a real PostgreSQL: export rows whose usage is priced in other
 * units than GPU-hours (storage in gibibyte months, requests) are uploaded
 * as NDJSON, and the FOCUS export (every team's, the team's, gzipped or not)
 * gives each Usage row the sum of its usage.amount_in_pricing_units,
 * exactly (0.1 + 0.2 is 0.3, not a double's 0.30000000000000004), in the
 * export's pricing_unit; GPU usage keeps its hours; Tax and Credit rows
 * have none (FOCUS 1.2: PricingQuantity MUST NOT be null for Usage that is
 * not a Correction, MUST be null for Tax).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tests/integration/harness.h"

Suite *focus_suite(void);

#define NDJSON "Content-Type: application/x-ndjson"
#define RANGE "from=2025-08-01&to=2025-08-31"

static struct h_server srv;
static char *member_a, *finance;

/* One export row of team-a on 2025-08-10 at hour; usage the "usage"
 * member's object, or NULL for none. */
static void row(char *out, size_t cap, int hour, const char *service,
                const char *sku, const char *cost_type, const char *cost,
                const char *usage)
{
  snprintf(out, cap,
           "{\"billing_account_id\":\"0A1B2C-3D4E5F-6A7B8C\","
           "\"service\":{\"id\":\"S-%s\",\"description\":\"%s\"},"
           "\"sku\":{\"id\":\"K-%s\",\"description\":\"%s\"},"
           "\"usage_start_time\":\"2025-08-10T%02d:00:00Z\","
           "\"usage_end_time\":\"2025-08-10T%02d:59:59Z\","
           "\"labels\":[{\"key\":\"gpugate-team\",\"value\":\"team-a\"}],"
           "\"location\":{\"region\":\"us-central1\"},"
           "\"cost\":%s,\"currency\":\"USD\"%s%s,"
           "\"invoice\":{\"month\":\"202508\"},\"cost_type\":\"%s\"}\n",
           service, service, sku, sku, hour, hour, cost,
           usage ? ",\"usage\":" : "", usage ? usage : "", cost_type);
}

static void setup(void)
{
  static const char *const env[] = {"GPUGATE_RATE_LIMIT_RPS=100000", NULL};
  char db_url[512];

  member_a = h_token("team-a", "member", 3600);
  finance = h_token("finance", "finance", 3600);
  ck_assert(member_a && finance);
  h_db_apply("it_focus", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv, db_url, env), 0);
}

static void teardown(void)
{
  h_server_stop(&srv);
  free(member_a);
  free(finance);
}

#define MAX_FIELDS 32
#define F_CAT 6
#define F_DESC 8
#define F_QTY 15
#define F_UNIT 16

/* Split one CSV line (RFC 4180) into fields; advances *p past its CRLF.
 * Returns the field count. */
static int csv_line(const char **p, char f[MAX_FIELDS][256])
{
  const char *s = *p;
  int n = 0;

  for (;;) {
    size_t k = 0;
    ck_assert_int_lt(n, MAX_FIELDS);
    if (*s == '"') {
      for (s++; !(s[0] == '"' && s[1] != '"'); s++) {
        if (*s == '"')
          s++;
        ck_assert(*s && k < 255);
        f[n][k++] = *s;
      }
      s++;
    } else {
      for (; *s && *s != ',' && *s != '\r'; s++) {
        ck_assert(k < 255);
        f[n][k++] = *s;
      }
    }
    f[n++][k] = '\0';
    if (*s == ',') {
      s++;
      continue;
    }
    ck_assert_msg(s[0] == '\r' && s[1] == '\n', "CSV: no CRLF at %.40s", s);
    *p = s + 2;
    return n;
  }
}

/* The PricingQuantity and PricingUnit of the row of category cat and
 * ChargeDescription desc in body (which must hold exactly one). */
static void expect(const char *body, const char *cat, const char *desc,
                   const char *qty, const char *unit)
{
  static char f[MAX_FIELDS][256];
  const char *p = body;
  int found = 0;

  csv_line(&p, f); /* the header */
  ck_assert_str_eq(f[F_QTY], "PricingQuantity");
  ck_assert_str_eq(f[F_UNIT], "PricingUnit");
  while (*p) {
    csv_line(&p, f);
    if (strcmp(f[F_CAT], cat) || strcmp(f[F_DESC], desc))
      continue;
    found++;
    ck_assert_msg(!strcmp(f[F_QTY], qty) && !strcmp(f[F_UNIT], unit),
                  "%s %s: PricingQuantity \"%s\" PricingUnit \"%s\", "
                  "expected \"%s\" \"%s\"",
                  cat, desc, f[F_QTY], f[F_UNIT], qty, unit);
  }
  ck_assert_msg(found == 1, "%s %s: %d rows", cat, desc, found);
}

/* The FOCUS body at path (gzip: asked compressed, inflated here); owned. */
static char *focus(const char *path, const char *token, bool gzip)
{
  const char *gz[] = {"Accept-Encoding: gzip", NULL};
  struct h_resp r;
  char *body;

  ck_assert_int_eq(
      h_request(&srv, "GET", path, token, NULL, gzip ? gz : NULL, &r), 0);
  ck_assert_msg(r.status == 200, "GET %s: %ld %.300s", path, r.status, r.body);
  if (!gzip) {
    body = malloc(r.body_len + 1);
    memcpy(body, r.body, r.body_len);
    body[r.body_len] = '\0';
  } else {
    z_stream z;
    size_t cap = 1 << 20;
    body = calloc(1, cap);
    memset(&z, 0, sizeof(z));
    ck_assert_int_eq(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
    z.next_in = (Bytef *)r.body;
    z.avail_in = (uInt)r.body_len;
    z.next_out = (Bytef *)body;
    z.avail_out = (uInt)(cap - 1);
    ck_assert_int_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
    inflateEnd(&z);
  }
  h_resp_free(&r);
  return body;
}

START_TEST(pricing_quantity_of_every_usage_row)
{
  static const char storage[] = "Standard Storage US Multi-region";
  const char *hdr[] = {NDJSON, NULL};
  const char *paths[2] = {"/v1/costs/focus?" RANGE,
                          "/v1/teams/team-a/costs/focus?" RANGE};
  char body[16384];
  size_t n = 0;
  struct h_resp r;
  int i;

#define ADD(...)                                                               \
  (row(body + n, sizeof(body) - n, __VA_ARGS__), n = strlen(body))
  /* storage: 0.1 + 0.2 gibibyte months in one rollup */
  ADD(1, "Cloud Storage", storage, "regular", "0.01",
      "{\"amount\":268435456000,\"unit\":\"byte-seconds\","
      "\"amount_in_pricing_units\":0.1,\"pricing_unit\":\"gibibyte month\"}");
  ADD(2, "Cloud Storage", storage, "regular", "0.02",
      "{\"amount\":536870912000,\"unit\":\"byte-seconds\","
      "\"amount_in_pricing_units\":0.2,\"pricing_unit\":\"gibibyte month\"}");
  /* requests, with a credit */
  ADD(3, "Cloud Storage", "Class A Operations", "regular", "0.5",
      "{\"amount\":100000,\"unit\":\"requests\","
      "\"amount_in_pricing_units\":10,\"pricing_unit\":\"count\"}");
  /* GPU usage: its hours, as before */
  ADD(4, "Compute Engine", "Nvidia L4 GPU running in Americas", "regular",
      "0.7",
      "{\"amount\":7200,\"unit\":\"seconds\","
      "\"amount_in_pricing_units\":2,\"pricing_unit\":\"hour\"}");
  /* tax: no quantity */
  ADD(5, "Compute Engine", "Tax", "tax", "0.07", NULL);
#undef ADD
  ck_assert_int_eq(h_request(&srv, "POST", "/v1/billing/export-rows", finance,
                             body, hdr, &r),
                   0);
  ck_assert_msg(r.status == 200 && json_integer_value(json_object_get(
                                       r.json, "inserted")) == 5,
                "upload: %ld %s", r.status, r.body);
  h_resp_free(&r);

  for (i = 0; i < 4; i++) {
    char *csv = focus(paths[i / 2], i / 2 ? member_a : finance, i % 2);
    expect(csv, "Usage", storage, "0.3", "gibibyte month");
    expect(csv, "Usage", "Class A Operations", "10", "count");
    expect(csv, "Usage", "Nvidia L4 GPU running in Americas", "2", "Hours");
    expect(csv, "Tax", "Tax", "", "");
    free(csv);
  }
}
END_TEST

Suite *focus_suite(void)
{
  Suite *s = suite_create("focus");
  TCase *tc = tcase_create("pricing");

  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, pricing_quantity_of_every_usage_row);
  suite_add_tcase(s, tc);
  return s;
}
