/*
 * test_jsonw.c — jsonw writes strings, integers and reals byte for byte as
 * Jansson's json_dumps() with GG_JSON_DUMP writes the same values: tables
 * of cases (each compared with Jansson's text and with the text expected),
 * and a sweep of reals of every magnitude compared with Jansson.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "lib/jsonw.h"
#include "server/req.h"

Suite *jsonw_suite(void);

/* what Jansson writes for v (a new reference, consumed) */
static char *jansson_text(json_t *v)
{
  char *t = json_dumps(v, GG_JSON_DUMP | JSON_ENCODE_ANY);

  json_decref(v);
  return t;
}

static char *jsonw_text(void (*put)(struct jsonw *, const void *),
                        const void *arg)
{
  struct jsonw w = JSONW_INIT;

  put(&w, arg);
  return jsonw_finish(&w, NULL);
}

static void put_string(struct jsonw *w, const void *s)
{
  jsonw_string(w, s);
}
static void put_real(struct jsonw *w, const void *v)
{
  jsonw_real(w, *(const double *)v);
}
static void put_int(struct jsonw *w, const void *v)
{
  jsonw_int(w, *(const long long *)v);
}

/* mine must be Jansson's text (and want, when given); frees both */
static void same(const char *what, char *mine, char *theirs, const char *want)
{
  ck_assert_msg(mine && theirs && strcmp(mine, theirs) == 0,
                "%s: %s vs Jansson %s", what, mine ? mine : "-",
                theirs ? theirs : "-");
  ck_assert_msg(!want || strcmp(mine, want) == 0, "%s: %s, not %s", what, mine,
                want);
  free(mine);
  free(theirs);
}

struct scase {
  const char *in, *out;
};

START_TEST(strings_table)
{
  static const struct scase cases[] = {
      {"", "\"\""},
      {"plain", "\"plain\""},
      {"finetune-gemma-2b", "\"finetune-gemma-2b\""},
      {"a\"b", "\"a\\\"b\""},
      {"back\\slash", "\"back\\\\slash\""},
      {"\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\""},
      {"\x01\x1f x", "\"\\u0001\\u001F x\""},
      {"\x7f", "\"\x7f\""},
      {"a/b", "\"a/b\""},
      {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", /* é € 😀 as they are */
       "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
      {"\"\"\\\\", "\"\\\"\\\"\\\\\\\\\""},
      {"end\n", "\"end\\n\""},
      {"\x1b[0m", "\"\\u001B[0m\""},
      {"2026-11-27T07:00:00Z", "\"2026-11-27T07:00:00Z\""},
  };
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    same(cases[i].out, jsonw_text(put_string, cases[i].in),
         jansson_text(json_string(cases[i].in)), cases[i].out);
  /* NULL is null */
  {
    char *mine = jsonw_text(put_string, NULL);
    ck_assert_str_eq(mine, "null");
    free(mine);
  }
}
END_TEST

/* every byte below 0x80, alone and between plain text */
START_TEST(strings_every_ascii_byte)
{
  int c;

  for (c = 1; c < 0x80; c++) {
    char in[8] = {'a', (char)c, 'b', (char)c, '\0'};
    same(in, jsonw_text(put_string, in), jansson_text(json_string(in)), NULL);
  }
}
END_TEST

struct rcase {
  double in;
  const char *out;
};

START_TEST(reals_table)
{
  static const struct rcase cases[] = {
      {0, "0.0"},
      {-0.0, "-0.0"},
      {1, "1.0"},
      {-3, "-3.0"},
      {0.5, "0.5"},
      {12.3456, "12.3456"},
      {0.0001, "0.0001"},
      {0.00001, "1e-5"},
      {1.5e-7, "1.5e-7"},
      {123456789012345.0, "123456789012345.0"},
      {1e15, "1e15"},
      {1.25e20, "1.25e20"},
      {1e100, "1e100"},
      {2.5e-300, "2.5e-300"},
      {0.1 + 0.2, "0.3"},
      {1.0 / 3, "0.333333333333333"},
      {-98765.4321, "-98765.4321"},
      {1.7976931348623157e308, "1.79769313486232e308"},
  };
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    same(cases[i].out, jsonw_text(put_real, &cases[i].in),
         jansson_text(json_real(cases[i].in)), cases[i].out);
}
END_TEST

/* reals of every magnitude and sign, and money rounded to 4 places */
START_TEST(reals_sweep)
{
  struct rng r = {0x9e3779b97f4a7c15ULL};
  int i;

  for (i = 0; i < 20000; i++) {
    double v;
    char what[40];
    if (i % 2) {
      v = ldexp((double)(next_u64(&r) >> 11) / 9007199254740992.0,
                (int)(next_u64(&r) % 2000) - 1000);
    } else {
      v = (double)(long long)(next_u64(&r) % 100000000000ULL) / 10000.0;
    }
    if (i % 3 == 0)
      v = -v;
    snprintf(what, sizeof(what), "%.17g", v);
    same(what, jsonw_text(put_real, &v), jansson_text(json_real(v)), NULL);
  }
}
END_TEST

START_TEST(integers_and_failures)
{
  static const long long ints[] = {0,
                                   1,
                                   -1,
                                   42,
                                   9007199254740993LL,
                                   -9223372036854775807LL - 1,
                                   9223372036854775807LL};
  struct jsonw w = JSONW_INIT;
  double inf = HUGE_VAL;
  size_t i, len = 0;
  char *t;

  for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
    same("integer", jsonw_text(put_int, &ints[i]),
         jansson_text(json_integer(ints[i])), NULL);
  /* members in the order written, the length returned */
  jsonw_lit(&w, "{\"a\":");
  jsonw_int(&w, 1);
  jsonw_lit(&w, ",\"b\":");
  jsonw_string(&w, "x\"y");
  jsonw_lit(&w, "}");
  t = jsonw_finish(&w, &len);
  ck_assert_str_eq(t, "{\"a\":1,\"b\":\"x\\\"y\"}");
  ck_assert_uint_eq(len, strlen(t));
  free(t);
  /* a real Jansson cannot hold fails the whole text */
  jsonw_lit(&w, "{\"a\":");
  jsonw_real(&w, inf);
  jsonw_lit(&w, "}");
  ck_assert_ptr_null(jsonw_finish(&w, &len));
  /* nothing written is no text */
  ck_assert_ptr_null(jsonw_finish(&w, &len));
}
END_TEST

Suite *jsonw_suite(void)
{
  Suite *s = suite_create("jsonw");
  TCase *tc = tcase_create("jsonw");

  tcase_add_test(tc, strings_table);
  tcase_add_test(tc, strings_every_ascii_byte);
  tcase_add_test(tc, reals_table);
  tcase_add_test(tc, reals_sweep);
  tcase_add_test(tc, integers_and_failures);
  suite_add_tcase(s, tc);
  return s;
}
