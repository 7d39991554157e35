/*
 * test_etag.c — If-None-Match lists against an entity tag: weak
 * comparison, lists, "*", and malformed values that must not match.
 */
#include <check.h>

#include "server/etag.h"

Suite *etag_suite(void);

struct ecase {
  const char *inm, *tag;
  bool match;
};

START_TEST(if_none_match_table)
{
  static const struct ecase cases[] = {
      {"W/\"abc\"", "W/\"abc\"", true},
      {"\"abc\"", "W/\"abc\"", true}, /* weak comparison */
      {"W/\"abc\"", "\"abc\"", true},
      {"\"x\", W/\"abc\"", "W/\"abc\"", true},
      {"  W/\"abc\"  ,\"y\"", "W/\"abc\"", true},
      {"*", "W/\"abc\"", true},
      {"W/\"abd\"", "W/\"abc\"", false},
      {"W/\"abc", "W/\"abc\"", false},
      {"abc", "W/\"abc\"", false},
      {"", "W/\"abc\"", false},
      {",,,", "W/\"abc\"", false},
      {"W/\"abc\"x", "W/\"abc\"", false},
      {NULL, "W/\"abc\"", false},
  };
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    ck_assert_msg(etag_matches(cases[i].inm, cases[i].tag) == cases[i].match,
                  "case %zu: %s", i, cases[i].inm ? cases[i].inm : "(null)");
}
END_TEST

Suite *etag_suite(void)
{
  Suite *s = suite_create("etag");
  TCase *tc = tcase_create("etag");

  tcase_add_test(tc, if_none_match_table);
  suite_add_tcase(s, tc);
  return s;
}
