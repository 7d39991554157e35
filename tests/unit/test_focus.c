/*
 * test_focus.c — the FOCUS 1.2 mapping (handlers/focus_csv.h) as tables:
 * cost types → ChargeCategory, services → ServiceCategory, whole rows of
 * rollups (a charge row, and a Credit row of its own when there are
 * credits; corrections; quoting), RFC 4180 fields, the next day, and
 * which Accept-Encoding values ask for gzip.
 */
#include <check.h>
#include <string.h>

#include "handlers/focus_csv.h"

Suite *focus_suite(void);

START_TEST(charge_category_table)
{
  static const struct {
    const char *cost_type, *category;
  } cases[] = {
      {"regular", "Usage"},
      {"tax", "Tax"},
      {"adjustment", "Adjustment"},
      {"rounding_error", "Adjustment"},
      {"Regular", NULL},
      {"credit", NULL},
      {"", NULL},
  };
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *c = focus_charge_category(cases[i].cost_type);
    ck_assert_msg(cases[i].category ? c && !strcmp(c, cases[i].category) : !c,
                  "case %zu (%s): %s", i, cases[i].cost_type, c ? c : "NULL");
  }
}
END_TEST

START_TEST(service_category_table)
{
  static const struct {
    const char *service, *category;
  } cases[] = {
      {"Compute Engine", "Compute"},
      {"Batch", "Compute"},
      {"Kubernetes Engine", "Compute"},
      {"Vertex AI", "AI and Machine Learning"},
      {"Cloud Storage", "Storage"},
      {"Networking", "Networking"},
      {"BigQuery", "Analytics"},
      {"Cloud Logging", "Management and Governance"},
      {"compute engine", "Compute"},
      {"Support", "Other"},
      {"", "Other"},
  };
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    ck_assert_str_eq(focus_service_category(cases[i].service),
                     cases[i].category);
}
END_TEST

START_TEST(csv_field_table)
{
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"plain", "plain"},
      {"", ""},
      {"a,b", "\"a,b\""},
      {"say \"hi\"", "\"say \"\"hi\"\"\""},
      {"two\r\nlines", "\"two\r\nlines\""},
      {"lf\nonly", "\"lf\nonly\""},
      {"\"", "\"\"\"\""},
      {"=SUM(A1)", "=SUM(A1)"}, /* FOCUS is for programs: kept as given */
      {"-1.25", "-1.25"},
  };
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct csv_buf b = {NULL, 0, 0, false};
    csv_field(&b, cases[i].in, false);
    ck_assert_msg(!b.failed && !strcmp(b.data ? b.data : "", cases[i].out),
                  "case %zu: %s", i, b.data ? b.data : "");
    csv_buf_free(&b);
  }
}
END_TEST

START_TEST(next_day_table)
{
  static const struct {
    const char *day, *next; /* NULL: malformed */
  } cases[] = {
      {"2026-08-01", "2026-08-02"}, {"2026-08-09", "2026-08-10"},
      {"2026-08-31", "2026-09-01"}, {"2026-12-31", "2027-01-01"},
      {"2028-02-28", "2028-02-29"}, {"2026-02-28", "2026-03-01"},
      {"2000-02-29", "2000-03-01"}, {"2026-02-29", NULL},
      {"2026-04-31", NULL},         {"2026-08-00", NULL},
      {"2026-8-01", NULL},          {"", NULL},
  };
  char out[11];
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    int rc = focus_next_day(cases[i].day, out);
    if (!cases[i].next)
      ck_assert_msg(rc == -1, "case %zu accepted", i);
    else
      ck_assert_msg(rc == 0 && !strcmp(out, cases[i].next), "case %zu", i);
  }
}
END_TEST

#define HEAD                                                                   \
  "BilledCost,BillingAccountId,BillingAccountName,BillingCurrency,"            \
  "BillingPeriodStart,BillingPeriodEnd,ChargeCategory,ChargeClass,"            \
  "ChargeDescription,ChargePeriodStart,ChargePeriodEnd,ContractedCost,"        \
  "EffectiveCost,InvoiceIssuerName,ListCost,PricingQuantity,PricingUnit,"      \
  "ProviderName,PublisherName,ServiceCategory,ServiceName,ResourceId,Tags,"    \
  "x_Team,x_Flavor\r\n"

START_TEST(header)
{
  struct csv_buf b = {NULL, 0, 0, false};

  focus_csv_header(&b);
  ck_assert_str_eq(b.data, HEAD);
  csv_buf_free(&b);
}
END_TEST

START_TEST(rows_table)
{
  static const struct {
    struct db_focus_row r;
    const char *csv; /* NULL: refused */
  } cases[] = {
      /* GPU usage with credits: a Usage row and a Credit row */
      {{"team-a", "l4-spot", "Compute Engine", "Nvidia L4 GPU", "us-central1",
        "USD", "regular", "0A1B-2C3D", "", "2026-08", "2026-08-31", "100.1",
        "-10.05", "1.5", "1.5", "hour"},
       "100.1,0A1B-2C3D,,USD,2026-08-01T00:00:00Z,2026-09-01T00:00:00Z,"
       "Usage,,Nvidia L4 GPU,2026-08-31T00:00:00Z,2026-09-01T00:00:00Z,"
       "100.1,100.1,Google Cloud,100.1,1.5,Hours,Google Cloud,Google Cloud,"
       "Compute,Compute Engine,,"
       "\"{\"\"gpugate-team\"\":\"\"team-a\"\",\"\"gpugate-flavor\"\":"
       "\"\"l4-spot\"\"}\",team-a,l4-spot\r\n"
       "-10.05,0A1B-2C3D,,USD,2026-08-01T00:00:00Z,2026-09-01T00:00:00Z,"
       "Credit,,Nvidia L4 GPU,2026-08-31T00:00:00Z,2026-09-01T00:00:00Z,"
       "0,-10.05,Google Cloud,0,,,Google Cloud,Google Cloud,"
       "Compute,Compute Engine,,"
       "\"{\"\"gpugate-team\"\":\"\"team-a\"\",\"\"gpugate-flavor\"\":"
       "\"\"l4-spot\"\"}\",team-a,l4-spot\r\n"},
      /* tax, no credits, a description to quote, unattributed, no flavor */
      {{"(unattributed)", "", "Cloud Storage", "Tax, \"state\"", "", "EUR",
        "tax", "", "", "2026-12", "2026-12-31", "7.5", "0", "0", "0", ""},
       "7.5,,,EUR,2026-12-01T00:00:00Z,2027-01-01T00:00:00Z,Tax,,"
       "\"Tax, \"\"state\"\"\",2026-12-31T00:00:00Z,2027-01-01T00:00:00Z,"
       "7.5,7.5,Google Cloud,7.5,,,Google Cloud,Google Cloud,Storage,"
       "Cloud Storage,,,(unattributed),\r\n"},
      /* a correction: billed in September, charged in August */
      {{"team-b", "", "Batch", "Fee", "", "USD", "adjustment", "A",
        "Correction", "2026-09", "2026-08-15", "-2.5", "0", "0", "0", ""},
       "-2.5,A,,USD,2026-09-01T00:00:00Z,2026-10-01T00:00:00Z,Adjustment,"
       "Correction,Fee,2026-08-15T00:00:00Z,2026-08-16T00:00:00Z,-2.5,-2.5,"
       "Google Cloud,-2.5,,,Google Cloud,Google Cloud,Compute,Batch,,"
       "\"{\"\"gpugate-team\"\":\"\"team-b\"\"}\",team-b,\r\n"},
      /* usage that is not GPU usage: its quantity in its pricing unit */
      {{"team-a", "", "Cloud Storage", "Standard Storage", "us", "USD",
        "regular", "", "", "2026-08", "2026-08-02", "0.02", "0", "0", "0.3",
        "gibibyte month"},
       "0.02,,,USD,2026-08-01T00:00:00Z,2026-09-01T00:00:00Z,Usage,,"
       "Standard Storage,2026-08-02T00:00:00Z,2026-08-03T00:00:00Z,0.02,0.02,"
       "Google Cloud,0.02,0.3,gibibyte month,Google Cloud,Google Cloud,"
       "Storage,Cloud Storage,,\"{\"\"gpugate-team\"\":\"\"team-a\"\"}\","
       "team-a,\r\n"},
      /* rounding_error is an Adjustment */
      {{"team-b", "", "Support", "Rounding", "", "USD", "rounding_error", "",
        "", "2026-08", "2026-08-01", "0.01", "0", "0", "0", ""},
       "0.01,,,USD,2026-08-01T00:00:00Z,2026-09-01T00:00:00Z,Adjustment,,"
       "Rounding,2026-08-01T00:00:00Z,2026-08-02T00:00:00Z,0.01,0.01,"
       "Google Cloud,0.01,,,Google Cloud,Google Cloud,Other,Support,,"
       "\"{\"\"gpugate-team\"\":\"\"team-b\"\"}\",team-b,\r\n"},
      /* refused: an unknown cost type, a bad month or day */
      {{"t", "", "S", "K", "", "USD", "refund", "", "", "2026-08", "2026-08-01",
        "1", "0", "0", "0", ""},
       NULL},
      {{"t", "", "S", "K", "", "USD", "regular", "", "", "2026-13",
        "2026-08-01", "1", "0", "0", "0", ""},
       NULL},
      {{"t", "", "S", "K", "", "USD", "regular", "", "", "2026-08",
        "2026-08-32", "1", "0", "0", "0", ""},
       NULL},
  };
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct csv_buf b = {NULL, 0, 0, false};
    int rc = focus_csv_rows(&b, &cases[i].r);
    if (!cases[i].csv)
      ck_assert_msg(rc == -1, "case %zu accepted", i);
    else
      ck_assert_msg(rc == 0 && !strcmp(b.data ? b.data : "", cases[i].csv),
                    "case %zu:\n%s\nwant\n%s", i, b.data ? b.data : "",
                    cases[i].csv);
    csv_buf_free(&b);
  }
}
END_TEST

START_TEST(gzip_negotiation_table)
{
  static const struct {
    const char *ae;
    bool gzip;
  } cases[] = {
      {"gzip", true},
      {"gzip, deflate, br", true},
      {"deflate, gzip;q=0.5", true},
      {"GZIP", true},
      {"x-gzip", true},
      {"br", false},
      {"gzip;q=0", false},
      {"gzip; q=0.000", false},
      {"*", true},
      {"*;q=0", false},
      {"*, gzip;q=0", false},
      {"identity", false},
      {"", false},
      {NULL, false},
      {"gzipx", false},
  };
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    ck_assert_msg(focus_wants_gzip(cases[i].ae) == cases[i].gzip,
                  "case %zu: %s", i, cases[i].ae ? cases[i].ae : "(null)");
}
END_TEST

Suite *focus_suite(void)
{
  Suite *s = suite_create("focus");
  TCase *tc = tcase_create("focus");

  tcase_add_test(tc, charge_category_table);
  tcase_add_test(tc, service_category_table);
  tcase_add_test(tc, csv_field_table);
  tcase_add_test(tc, next_day_table);
  tcase_add_test(tc, header);
  tcase_add_test(tc, rows_table);
  tcase_add_test(tc, gzip_negotiation_table);
  suite_add_tcase(s, tc);
  return s;
}
