/*
 * test_emu_latency.c — the Batch emulator's latency model
 * (tests/emulator/emu_latency.c): the EMU_LATENCY_MS spec parsed as a table
 * of good and bad specs (each refusal names the variable and says what is
 * wrong), draws at fixed normal quantiles (the median, the p99, the tail
 * cap), and the quantiles of many draws from a fixed uniform stream.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/emulator/emu_latency.h"

Suite *emu_latency_suite(void);

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

struct good_case {
  const char *spec;
  long median[EMU_CALL_N], p99[EMU_CALL_N]; /* by enum emu_call */
};

START_TEST(parse_good)
{
  /* other, create, get, list, cancel, delete */
  static const struct good_case cases[] = {
      {"", {0}, {0}},
      {"create:300/1500", {0, 300}, {0, 1500}},
      {"create:300/1500,get:80/400,list:150/800,cancel:250/1200,"
       "delete:250/1200",
       {0, 300, 80, 150, 250, 250},
       {0, 1500, 400, 800, 1200, 1200}},
      {"delete:7,create:5", {0, 5, 0, 0, 0, 7}, {0, 5, 0, 0, 0, 7}},
      {" create:300 , get:80/400\t", {0, 300, 80}, {0, 300, 400}},
      {"create:0", {0}, {0}},
      {"create:0/0", {0}, {0}},
      {"list:60000/60000", {0, 0, 0, 60000}, {0, 0, 0, 60000}},
      {"cancel:1/60000", {0, 0, 0, 0, 1}, {0, 0, 0, 0, 60000}},
      {"get:007/010", {0, 0, 7}, {0, 0, 10}},
  };
  size_t i;
  int k;

  for (i = 0; i < N_OF(cases); i++) {
    struct emu_latency l;
    char err[256] = "";
    memset(&l, 0xff, sizeof(l));
    ck_assert_msg(emu_latency_parse(cases[i].spec, &l, err, sizeof(err)) == 0,
                  "case %zu \"%s\": %s", i, cases[i].spec, err);
    for (k = 0; k < EMU_CALL_N; k++) {
      ck_assert_msg(l.median_ms[k] == cases[i].median[k],
                    "case %zu: %s median %ld, want %ld", i, emu_call_name(k),
                    l.median_ms[k], cases[i].median[k]);
      ck_assert_msg(l.p99_ms[k] == cases[i].p99[k],
                    "case %zu: %s p99 %ld, want %ld", i, emu_call_name(k),
                    l.p99_ms[k], cases[i].p99[k]);
    }
  }
}
END_TEST

struct bad_case {
  const char *spec, *says;
};

START_TEST(parse_bad)
{
  static const struct bad_case cases[] = {
      {"create", "\"create\" is not call:median[/p99]"},
      {"post:300", "\"post:300\" is not call:median[/p99]"},
      {"CREATE:300", "is not call:median[/p99]"},
      {"other:5", "is not call:median[/p99]"},
      {"create300", "is not call:median[/p99]"},
      {"create:", "whole milliseconds from 0 to 60000"},
      {"create:abc", "whole milliseconds"},
      {"create:-5", "whole milliseconds"},
      {"create:1.5", "whole milliseconds"},
      {"create: 300", "whole milliseconds"},
      {"create:300/", "whole milliseconds"},
      {"create:/300", "whole milliseconds"},
      {"create:300/1500/2000", "whole milliseconds"},
      {"create:60001", "whole milliseconds"},
      {"create:300/60001", "whole milliseconds"},
      {"create:9999999", "whole milliseconds"},
      {"create:300/200", "\"create:300/200\": the p99 is below the median"},
      {"create:0/5", "a spread needs a median above 0"},
      {"create:300/1500,create:100", "create is given twice"},
      {"get:1, get:1", "get is given twice"},
      {"create:300,", "empty item"},
      {",create:300", "empty item"},
      {"create:300,,get:5", "empty item"},
      {" ", "empty item"},
      {",", "empty item"},
  };
  size_t i;

  for (i = 0; i < N_OF(cases); i++) {
    struct emu_latency l, before;
    char err[256] = "";
    memset(&l, 0x5a, sizeof(l));
    before = l;
    ck_assert_msg(emu_latency_parse(cases[i].spec, &l, err, sizeof(err)) == -1,
                  "case %zu \"%s\" was accepted", i, cases[i].spec);
    ck_assert_msg(!strncmp(err, "EMU_LATENCY_MS: ", 16),
                  "case %zu: \"%s\" does not name the variable", i, err);
    ck_assert_msg(strstr(err, cases[i].says), "case %zu: \"%s\" lacks \"%s\"",
                  i, err, cases[i].says);
    ck_assert_msg(!memcmp(&l, &before, sizeof(l)),
                  "case %zu: a refused spec changed the model", i);
  }
}
END_TEST

struct draw_case {
  enum emu_call k;
  double z; /* the standard normal quantile drawn */
  long want, slack;
};

START_TEST(draw_quantiles)
{
  struct emu_latency l;
  char err[128];
  /* z = 0 → the median; z = ±2.3263 → the p99 and its mirror
   * median² / p99; a far tail is capped at EMU_LATENCY_TAIL_CAP × p99 */
  static const struct draw_case cases[] = {
      {EMU_CALL_CREATE, 0.0, 300, 0},
      {EMU_CALL_CREATE, 2.3263478740408408, 1500, 1},
      {EMU_CALL_CREATE, -2.3263478740408408, 60, 1},
      {EMU_CALL_CREATE, 1.0, 600, 2}, /* 300 × 5^(1/2.3263) = 599.6 */
      {EMU_CALL_CREATE, 7.0, 4500, 0},
      {EMU_CALL_GET, 2.3263478740408408, 400, 1},
      {EMU_CALL_LIST, 3.0, 200, 0}, /* no spread: the median */
      {EMU_CALL_CANCEL, 1.0, 0, 0}, /* not in the spec: no delay */
      {EMU_CALL_DELETE, 0.0, 0, 0}, /* 0 */
      {EMU_CALL_OTHER, 2.0, 0, 0},  /* never delayed */
  };
  size_t i;

  ck_assert_int_eq(emu_latency_parse("create:300/1500,get:80/400,list:200,"
                                     "delete:0",
                                     &l, err, sizeof(err)),
                   0);
  for (i = 0; i < N_OF(cases); i++) {
    /* Box–Muller with u2 = 0 (cos 1) or 0.5 (cos -1): z = ±sqrt(-2 ln u1) */
    double z = fabs(cases[i].z);
    double u1 = exp(-z * z / 2), u2 = cases[i].z < 0 ? 0.5 : 0.0;
    long got = emu_latency_draw(&l, cases[i].k, u1, u2);
    ck_assert_msg(labs(got - cases[i].want) <= cases[i].slack,
                  "case %zu: %s at z %.3f drew %ld ms, want %ld", i,
                  emu_call_name(cases[i].k), cases[i].z, got, cases[i].want);
  }
  /* u1 = 0 is the far tail, not a crash */
  ck_assert_int_eq(emu_latency_draw(&l, EMU_CALL_CREATE, 0.0, 0.0), 4500);
}
END_TEST

static int cmp_long(const void *a, const void *b)
{
  long x = *(const long *)a, y = *(const long *)b;

  return (x > y) - (x < y);
}

START_TEST(draw_distribution)
{
  enum { N = 20000 };
  static long v[N];
  struct emu_latency l;
  unsigned long long s = 12345;
  char err[128];
  double u[2];
  size_t i;
  int j;

  ck_assert_int_eq(emu_latency_parse("create:300/1500", &l, err, sizeof(err)),
                   0);
  for (i = 0; i < N; i++) {
    for (j = 0; j < 2; j++) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      u[j] = (double)(s >> 11) / 9007199254740992.0;
    }
    v[i] = emu_latency_draw(&l, EMU_CALL_CREATE, 1.0 - u[0], u[1]);
    ck_assert_int_ge(v[i], 0);
    ck_assert_int_le(v[i], EMU_LATENCY_TAIL_CAP * 1500);
  }
  qsort(v, N, sizeof(v[0]), cmp_long);
  ck_assert_msg(labs(v[N / 2] - 300) <= 15, "median %ld, want 300 ± 5 %%",
                v[N / 2]);
  ck_assert_msg(labs(v[N * 99 / 100] - 1500) <= 150,
                "p99 %ld, want 1500 ± 10 %%", v[N * 99 / 100]);
}
END_TEST

Suite *emu_latency_suite(void)
{
  Suite *s = suite_create("emu_latency");
  TCase *tc = tcase_create("model");

  tcase_add_test(tc, parse_good);
  tcase_add_test(tc, parse_bad);
  tcase_add_test(tc, draw_quantiles);
  tcase_add_test(tc, draw_distribution);
  suite_add_tcase(s, tc);
  return s;
}
