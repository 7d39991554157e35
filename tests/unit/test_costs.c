/*
 * test_costs.c — the pure helpers of handlers/costs.c as tables of cases:
 * group_by parsing, calendar dates, Accept negotiation, and the CSV and
 * JSON renderings of a report table (RFC 4180 quoting, exact numbers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "db/costs.h"
#include "handlers/costs.h"
#include "lib/jsonx.h"

Suite *costs_suite(void);

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ------------------------------------------------------------- group_by */

/* want: the dimensions set, as a string of six 0/1 digits in output
 * order (day month service sku flavor location); NULL = rejected */
static const struct {
  const char *in;
  const char *want;
} group_cases[] = {
    {NULL, "000000"},
    {"", "000000"},
    {"day", "100000"},
    {"month", "010000"},
    {"location,day", "100001"},
    {"service,sku,flavor", "001110"},
    {"day,month,service,sku,flavor,location", "111111"},
    {"sku,sku", "000100"},
    {"Day", NULL},
    {"week", NULL},
    {"day,", NULL},
    {",day", NULL},
    {"day,,sku", NULL},
    {"day sku", NULL},
    {" day", NULL},
    {"days", NULL},
    {"da", NULL},
    {"team", NULL},
    {"invoice_month", NULL},
};

START_TEST(group_by)
{
  bool dims[DB_COST_NDIMS];
  char got[DB_COST_NDIMS + 1];
  bool ok = costs_group_by(group_cases[_i].in, dims);
  int d;

  if (!group_cases[_i].want) {
    ck_assert_msg(!ok, "group_by \"%s\" accepted", group_cases[_i].in);
    return;
  }
  ck_assert_msg(ok, "group_by \"%s\" rejected", group_cases[_i].in);
  for (d = 0; d < DB_COST_NDIMS; d++)
    got[d] = dims[d] ? '1' : '0';
  got[DB_COST_NDIMS] = '\0';
  ck_assert_str_eq(got, group_cases[_i].want);
}
END_TEST

/* ----------------------------------------------------------------- dates */

static const struct {
  const char *in;
  bool ok;
  long days; /* since 1970-01-01 */
} date_cases[] = {
    {"1970-01-01", true, 0},
    {"1970-01-02", true, 1},
    {"1969-12-31", true, -1},
    {"2000-02-29", true, 11016}, /* divisible by 400: leap */
    {"2000-03-01", true, 11017},
    {"2024-02-29", true, 19782},
    {"2026-08-01", true, 20666},
    {"2026-10-31", true, 20757},
    {"9999-12-31", true, 2932896},
    {"0001-01-01", true, -719162},
    {"2023-02-29", false, 0}, /* not a leap year */
    {"1900-02-29", false, 0}, /* divisible by 100: not leap */
    {"2026-04-31", false, 0},
    {"2026-13-01", false, 0},
    {"2026-00-10", false, 0},
    {"2026-01-00", false, 0},
    {"2026-01-32", false, 0},
    {"0000-01-01", false, 0},
    {"2026-1-01", false, 0},
    {"2026-01-1", false, 0},
    {"26-01-01", false, 0},
    {"2026/01/01", false, 0},
    {"2026-01-01T00:00:00Z", false, 0},
    {"2026-01-01 ", false, 0},
    {" 2026-01-01", false, 0},
    {"2026-0a-01", false, 0},
    {"+026-01-01", false, 0},
    {"2026--1-01", false, 0},
    {"", false, 0},
    {NULL, false, 0},
};

START_TEST(date)
{
  long days = 12345;
  bool ok = costs_date(date_cases[_i].in, &days);

  ck_assert_msg(ok == date_cases[_i].ok, "costs_date(\"%s\") is %d",
                date_cases[_i].in ? date_cases[_i].in : "(null)", ok);
  if (ok)
    ck_assert_int_eq(days, date_cases[_i].days);
}
END_TEST

/* ------------------------------------------------------------ negotiation */

static const struct {
  const char *accept;
  enum costs_format want;
} accept_cases[] = {
    {NULL, COSTS_JSON},
    {"", COSTS_JSON},
    {"  ", COSTS_JSON},
    {"*/*", COSTS_JSON},
    {"application/json", COSTS_JSON},
    {"APPLICATION/JSON", COSTS_JSON},
    {"text/csv", COSTS_CSV},
    {"Text/CSV", COSTS_CSV},
    {"text/csv; charset=utf-8", COSTS_CSV},
    {"text/csv;header=present", COSTS_CSV},
    {"text/*", COSTS_CSV},
    {"application/*", COSTS_JSON},
    {"*", COSTS_JSON},
    {"text/csv, application/json", COSTS_JSON}, /* tie: JSON */
    {"application/json;q=0.5, text/csv", COSTS_CSV},
    {"application/json; q=0.9 , text/csv ;q=0.95", COSTS_CSV},
    /* the wildcard gives JSON 0.5 */
    {"text/csv;q=0.1, */*;q=0.5", COSTS_JSON},
    /* the exact range beats the wildcard */
    {"text/csv;q=0, */*", COSTS_JSON},
    {"application/json;q=0, */*", COSTS_CSV},
    {"application/json;q=0, text/*;q=0.2", COSTS_CSV},
    {"text/html", COSTS_NONE},
    {"text/html, application/xml;q=0.9", COSTS_NONE},
    {"application/json;q=0", COSTS_NONE},
    {"application/json;q=0, text/csv;q=0.000", COSTS_NONE},
    {"*/*;q=0", COSTS_NONE},
    {"application/problem+json", COSTS_NONE},
    {"text/csvx", COSTS_NONE},
    {"text/cs", COSTS_NONE},
    {"texts/csv", COSTS_NONE},
    {"application/json;q=2", COSTS_NONE},   /* malformed q: ignored */
    {"application/json;q=abc", COSTS_NONE}, /* malformed q: ignored */
    {"application/json;q=1.0, text/csv;q=1", COSTS_JSON},
    {"text/csv;q=.5, application/json;q=.4", COSTS_CSV},
    {"text/html, text/csv;q=0.8", COSTS_CSV},
    {",,text/csv,,", COSTS_CSV},
};

START_TEST(accept)
{
  enum costs_format got = costs_accept(accept_cases[_i].accept);

  ck_assert_msg(got == accept_cases[_i].want, "Accept \"%s\": got %d, want %d",
                accept_cases[_i].accept ? accept_cases[_i].accept : "(null)",
                (int)got, (int)accept_cases[_i].want);
}
END_TEST

/* ------------------------------------------------------------ rendering */

/* A table with a text, a number and an integer column; rows given as
 * JSON text. */
static void table(struct db_cost_table *t, const char *rows)
{
  memset(t, 0, sizeof(*t));
  t->ncols = 3;
  t->cols[0] = "team";
  t->kind[0] = DB_COST_TEXT;
  t->cols[1] = "cost";
  t->kind[1] = DB_COST_NUMBER;
  t->cols[2] = "jobs";
  t->kind[2] = DB_COST_INTEGER;
  t->rows = json_loads(rows, 0, NULL);
  ck_assert_ptr_nonnull(t->rows);
}

static const struct {
  const char *rows;
  const char *csv;
} csv_cases[] = {
    {"[]", "team,cost,jobs\r\n"},
    {"[[\"team-a\", \"6120.55\", \"3\"]]",
     "team,cost,jobs\r\nteam-a,6120.55,3\r\n"},
    /* numbers exactly as PostgreSQL printed them */
    {"[[\"a\", \"123456789012.123456\", \"0\"], [\"b\", \"-0.000001\", "
     "\"12\"]]",
     "team,cost,jobs\r\na,123456789012.123456,0\r\nb,-0.000001,12\r\n"},
    {"[[\"a,b\", \"1\", \"1\"]]", "team,cost,jobs\r\n\"a,b\",1,1\r\n"},
    {"[[\"say \\\"hi\\\"\", \"1\", \"1\"]]",
     "team,cost,jobs\r\n\"say \"\"hi\"\"\",1,1\r\n"},
    {"[[\"\\\"\", \"1\", \"1\"]]", "team,cost,jobs\r\n\"\"\"\",1,1\r\n"},
    {"[[\"two\\nlines\", \"1\", \"1\"]]",
     "team,cost,jobs\r\n\"two\nlines\",1,1\r\n"},
    {"[[\"cr\\rhere\", \"1\", \"1\"]]",
     "team,cost,jobs\r\n\"cr\rhere\",1,1\r\n"},
    {"[[\" spaced \", \"1\", \"1\"]]", "team,cost,jobs\r\n spaced ,1,1\r\n"},
    {"[[\"(unattributed)\", null, \"0\"]]",
     "team,cost,jobs\r\n(unattributed),,0\r\n"},
    {"[[\"\", \"1\", \"1\"]]", "team,cost,jobs\r\n,1,1\r\n"},
    {"[[\"Compute Engine; \\\"GPU\\\", L4\", \"2.5\", \"1\"]]",
     "team,cost,jobs\r\n\"Compute Engine; \"\"GPU\"\", L4\",2.5,1\r\n"},
    {"[[\"\\u00e9t\\u00e9\", \"1\", \"1\"]]",
     "team,cost,jobs\r\n\xc3\xa9t\xc3\xa9,1,1\r\n"},
    /* formula injection (OWASP): text cells starting with = + - @ TAB CR
     * get a leading ' and quotes; numbers (negative credits) stay numbers */
    {"[[\"=HYPERLINK(\\\"http://x\\\")\", \"-357.28\", \"1\"]]",
     "team,cost,jobs\r\n\"'=HYPERLINK(\"\"http://x\"\")\",-357.28,1\r\n"},
    {"[[\"+1\", \"1\", \"1\"]]", "team,cost,jobs\r\n\"'+1\",1,1\r\n"},
    {"[[\"-2+3\", \"-1\", \"1\"]]", "team,cost,jobs\r\n\"'-2+3\",-1,1\r\n"},
    {"[[\"@SUM(A1)\", \"1\", \"1\"]]",
     "team,cost,jobs\r\n\"'@SUM(A1)\",1,1\r\n"},
    {"[[\"\\t=1\", \"1\", \"1\"]]", "team,cost,jobs\r\n\"'\t=1\",1,1\r\n"},
    {"[[\"\\r=1\", \"1\", \"1\"]]", "team,cost,jobs\r\n\"'\r=1\",1,1\r\n"},
    {"[[\"=a,b\", \"1\", \"1\"]]", "team,cost,jobs\r\n\"'=a,b\",1,1\r\n"},
    {"[[\"a=1\", \"1\", \"1\"]]", "team,cost,jobs\r\na=1,1,1\r\n"},
    {"[[\" =1\", \"1\", \"1\"]]", "team,cost,jobs\r\n =1,1,1\r\n"},
};

START_TEST(csv)
{
  struct db_cost_table t;
  size_t len = 0;
  char *out;

  table(&t, csv_cases[_i].rows);
  out = costs_csv(&t, &len);
  ck_assert_ptr_nonnull(out);
  ck_assert_str_eq(out, csv_cases[_i].csv);
  ck_assert_uint_eq(len, strlen(csv_cases[_i].csv));
  free(out);
  db_cost_table_free(&t);
}
END_TEST

/* A large table: the buffer grows past its first allocation. */
START_TEST(csv_large)
{
  struct db_cost_table t;
  size_t len = 0, i;
  char *out, line[64];

  table(&t, "[]");
  for (i = 0; i < 5000; i++) {
    snprintf(line, sizeof(line), "%zu.5", i);
    json_array_append_new(t.rows, json_pack("[s, s, s]", "team-a", line, "1"));
  }
  out = costs_csv(&t, &len);
  ck_assert_ptr_nonnull(out);
  ck_assert_uint_eq(len, strlen(out));
  ck_assert_ptr_nonnull(strstr(out, "\r\nteam-a,4999.5,1\r\n"));
  free(out);
  db_cost_table_free(&t);
}
END_TEST

START_TEST(json_rows)
{
  struct db_cost_table t;
  json_t *rows;
  char *text;

  table(&t, "[[\"team-a\", \"5763.27\", \"3\"], [\"team-b\", \"1490\", "
            "\"0\"], [\"c\", null, \"2\"], [\"d\", \"-357.28\", \"1\"]]");
  rows = costs_json_rows(&t);
  ck_assert_ptr_nonnull(rows);
  text = jsonx_dumps(
      rows, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15), NULL);
  ck_assert_str_eq(text, "[{\"team\":\"team-a\",\"cost\":5763.27,\"jobs\":3},"
                         "{\"team\":\"team-b\",\"cost\":1490,\"jobs\":0},"
                         "{\"team\":\"c\",\"cost\":null,\"jobs\":2},"
                         "{\"team\":\"d\",\"cost\":-357.28,\"jobs\":1}]");
  free(text);
  json_decref(rows);
  db_cost_table_free(&t);
}
END_TEST

/* ------------------------------------------------------- exact numbers */

#define D50 "12345678901234567890123456789012345678901234567890"

static const struct {
  const char *text; /* as PostgreSQL printed a numeric */
  const char *json; /* what the report writes */
} exact_cases[] = {
    {"0", "0"},
    {"-357.28", "-357.28"},
    {"0.000001", "0.000001"},
    {"1490", "1490"},
    /* more digits than a double holds */
    {"12345678901234567.123456", "12345678901234567.123456"},
    /* past DBL_MAX: a double would be inf (and the reply a 500) */
    {"2" D50 D50 D50 D50 D50 D50 "00000000.5",
     "2" D50 D50 D50 D50 D50 D50 "00000000.5"},
    {"-2" D50 D50 D50 D50 D50 D50 "00000000",
     "-2" D50 D50 D50 D50 D50 D50 "00000000"},
    /* numeric's specials are no JSON numbers: null */
    {"NaN", "null"},
    {"Infinity", "null"},
    {"-Infinity", "null"},
    {"", "null"},
    {"01", "null"},
    {"1.", "null"},
    {".5", "null"},
    {"1e5", "1e5"},
    {"1e", "null"},
    {"1 ", "null"},
};

START_TEST(exact_number)
{
  json_t *o = json_pack("{s:o, s:s}", "n", jsonx_decimal(exact_cases[_i].text),
                        "s", "\"=x\"");
  char want[1200], *got;
  size_t len = 0;

  snprintf(want, sizeof(want), "{\"n\":%s,\"s\":\"\\\"=x\\\"\"}",
           exact_cases[_i].json);
  got = jsonx_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER, &len);
  ck_assert_ptr_nonnull(got);
  ck_assert_str_eq(got, want);
  ck_assert_uint_eq(len, strlen(want));
  free(got);
  json_decref(o);
}
END_TEST

Suite *costs_suite(void)
{
  Suite *s = suite_create("costs");
  TCase *tc = tcase_create("costs");

  tcase_add_loop_test(tc, group_by, 0, N_OF(group_cases));
  tcase_add_loop_test(tc, date, 0, N_OF(date_cases));
  tcase_add_loop_test(tc, accept, 0, N_OF(accept_cases));
  tcase_add_loop_test(tc, csv, 0, N_OF(csv_cases));
  tcase_add_test(tc, csv_large);
  tcase_add_test(tc, json_rows);
  tcase_add_loop_test(tc, exact_number, 0, N_OF(exact_cases));
  suite_add_tcase(s, tc);
  return s;
}
