/*
 * test_rfc3339.c — RFC 3339 date-times (a flavor's capacity window) as a
 * table: accepted forms with the instant they name, rejected forms, the
 * rounding of fractions, and formatting back.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "lib/rfc3339.h"

Suite *rfc3339_suite(void);

struct good {
  const char *in;
  int round_up;
  int64_t want;
};

static const struct good goods[] = {
    {"1970-01-01T00:00:00Z", 0, 0},
    {"2026-12-01T08:00:00Z", 0, 1796112000},
    {"2026-12-01t08:00:00z", 0, 1796112000},
    {"2026-12-01T09:30:00+01:30", 0, 1796112000},
    {"2026-12-01T03:00:00-05:00", 0, 1796112000},
    {"2026-12-01T08:00:00.000Z", 1, 1796112000}, /* a zero fraction */
    {"2026-12-01T08:00:00.25Z", 0, 1796112000},
    {"2026-12-01T08:00:00.25Z", 1, 1796112001},
    {"2028-02-29T00:00:00Z", 0, 1835395200}, /* leap day */
    {"2026-12-31T23:59:60Z", 0, 1798761600}, /* leap second rolls over */
    {"9999-12-31T23:59:59Z", 0, 253402300799},
};

static const char *const bads[] = {
    "",
    "2026-12-01",
    "2026-12-01T08:00:00",       /* no zone */
    "2026-12-01 08:00:00Z",      /* space */
    "2026-12-01T08:00Z",         /* no seconds */
    "2026-13-01T08:00:00Z",      /* month */
    "2026-02-29T08:00:00Z",      /* not a leap year */
    "2026-04-31T08:00:00Z",      /* April has 30 days */
    "2026-12-01T24:00:00Z",      /* hour */
    "2026-12-01T08:60:00Z",      /* minute */
    "2026-12-01T08:00:00+0100",  /* offset without colon */
    "2026-12-01T08:00:00+24:00", /* offset hour */
    "2026-12-01T08:00:00.Z",     /* empty fraction */
    "2026-12-01T08:00:00.1234567891Z",
    "2026-12-01T08:00:00Z ",     /* trailing space */
    "1969-12-31T23:59:59Z",      /* before the epoch */
    "1970-01-01T00:00:00+00:01", /* before the epoch by its offset */
    "+2026-12-01T08:00:00Z",
    "２026-12-01T08:00:00Z", /* not ASCII digits */
};

START_TEST(parses)
{
  const struct good *g = &goods[_i];
  int64_t t = -1;

  ck_assert_msg(rfc3339_parse(g->in, g->round_up, &t) == 0, "%s: rejected",
                g->in);
  ck_assert_msg(t == g->want, "%s: got %lld, want %lld", g->in, (long long)t,
                (long long)g->want);
}
END_TEST

START_TEST(rejects)
{
  int64_t t = 42;

  ck_assert_msg(rfc3339_parse(bads[_i], 0, &t) == -1, "\"%s\": accepted",
                bads[_i]);
  ck_assert_msg(rfc3339_parse_us(bads[_i], &t) == -1,
                "\"%s\": accepted to the microsecond", bads[_i]);
  ck_assert_int_eq(t, 42);
}
END_TEST

/* to the microsecond: Batch's event times (a longer fraction truncated) */
static const struct {
  const char *in;
  int64_t want_us;
} micros[] = {
    {"2026-12-01T08:00:00Z", 1796112000000000},
    {"2026-12-01T08:00:00.5Z", 1796112000500000},
    {"2026-12-01T08:00:00.000001Z", 1796112000000001},
    {"2026-12-01T08:00:00.123456789Z", 1796112000123456},
    {"2026-12-01T09:00:00.25+01:00", 1796112000250000},
    {"2026-12-01T08:00:00.999999999Z", 1796112000999999},
};

START_TEST(parses_us)
{
  int64_t us = -1;

  ck_assert_msg(rfc3339_parse_us(micros[_i].in, &us) == 0, "%s: rejected",
                micros[_i].in);
  ck_assert_msg(us == micros[_i].want_us, "%s: got %lld, want %lld",
                micros[_i].in, (long long)us, (long long)micros[_i].want_us);
}
END_TEST

START_TEST(formats)
{
  static const struct {
    int64_t t;
    const char *want;
  } cases[] = {{0, "1970-01-01T00:00:00Z"},
               {1796112000, "2026-12-01T08:00:00Z"},
               {1835395200, "2028-02-29T00:00:00Z"},
               {1796083200 + 86399, "2026-12-01T23:59:59Z"},
               {253402300799, "9999-12-31T23:59:59Z"}};
  char out[RFC3339_LEN];
  int64_t back;
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    rfc3339_format(cases[i].t, out);
    ck_assert_str_eq(out, cases[i].want);
    ck_assert_int_eq(rfc3339_parse(out, 0, &back), 0);
    ck_assert_int_eq(back, cases[i].t);
  }
  ck_assert_int_eq(rfc3339_parse(NULL, 0, &back), -1);
}
END_TEST

Suite *rfc3339_suite(void)
{
  Suite *s = suite_create("rfc3339");
  TCase *tc = tcase_create("core");

  tcase_add_loop_test(tc, parses, 0, (int)(sizeof(goods) / sizeof(goods[0])));
  tcase_add_loop_test(tc, rejects, 0, (int)(sizeof(bads) / sizeof(bads[0])));
  tcase_add_loop_test(tc, parses_us, 0,
                      (int)(sizeof(micros) / sizeof(micros[0])));
  tcase_add_test(tc, formats);
  suite_add_tcase(s, tc);
  return s;
}
