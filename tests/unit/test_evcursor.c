/*
 * test_evcursor.c — the event stream's cursor text (what Last-Event-ID
 * accepts), its order, and the SSE frame of one event.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/evcursor.h"

Suite *evcursor_suite(void);

struct pcase {
  const char *text;
  bool ok;
  uint64_t xid;
  int64_t id;
};

START_TEST(parse_table)
{
  static const struct pcase cases[] = {
      {"7716.1042", true, 7716, 1042},
      {"0.0", true, 0, 0},
      {"18446744073709551615.1", false, 0, 0}, /* 20 digits */
      {"9999999999999999999.9223372036854775807", true, 9999999999999999999ULL,
       INT64_MAX},
      {"1.9223372036854775808", false, 0, 0}, /* past int64 */
      {"12", false, 0, 0},
      {".12", false, 0, 0},
      {"12.", false, 0, 0},
      {"1.2.3", false, 0, 0},
      {"-1.2", false, 0, 0},
      {"1.+2", false, 0, 0},
      {" 1.2", false, 0, 0},
      {"1.2 ", false, 0, 0},
      {"0x1.2", false, 0, 0},
      {"", false, 0, 0},
      {NULL, false, 0, 0},
  };
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct evcursor c = {0, 0};
    bool ok = evcursor_parse(cases[i].text, &c);
    ck_assert_msg(ok == cases[i].ok, "case %zu: %s", i,
                  cases[i].text ? cases[i].text : "(null)");
    if (ok)
      ck_assert_msg(c.xid == cases[i].xid && c.id == cases[i].id,
                    "case %zu: parsed wrong", i);
  }
}
END_TEST

START_TEST(format_round_trip_and_order)
{
  static const struct evcursor cs[] = {
      {0, 0}, {0, 5}, {1, 2}, {1, 3}, {2, 1}, {UINT64_MAX / 2, INT64_MAX}};
  size_t i, j, n = sizeof(cs) / sizeof(cs[0]);

  for (i = 0; i < n; i++) {
    char text[EVCURSOR_TEXT];
    struct evcursor back;
    evcursor_format(&cs[i], text, sizeof(text));
    ck_assert_msg(evcursor_parse(text, &back), "%s", text);
    ck_assert_int_eq(evcursor_cmp(&back, &cs[i]), 0);
    /* the table is in order: xid first, then id */
    for (j = 0; j < n; j++)
      ck_assert_int_eq(evcursor_cmp(&cs[i], &cs[j]) < 0, i < j);
  }
}
END_TEST

START_TEST(frame_shape)
{
  struct evcursor c = {42, 7};
  size_t len = 0;
  char *f = evcursor_frame(&c, "job_event", "{\"to\":\"RUNNING\"}", &len);

  ck_assert_ptr_nonnull(f);
  ck_assert_str_eq(f, "id: 42.7\nevent: job_event\ndata: "
                      "{\"to\":\"RUNNING\"}\n\n");
  ck_assert_uint_eq(len, strlen(f));
  free(f);
  /* one data line cannot carry a line break */
  ck_assert_ptr_null(evcursor_frame(&c, "job_event", "{\n}", &len));
  ck_assert_ptr_null(evcursor_frame(&c, "job_event", "{\r}", &len));
}
END_TEST

Suite *evcursor_suite(void)
{
  Suite *s = suite_create("evcursor");
  TCase *tc = tcase_create("evcursor");

  tcase_add_test(tc, parse_table);
  tcase_add_test(tc, format_round_trip_and_order);
  tcase_add_test(tc, frame_shape);
  suite_add_tcase(s, tc);
  return s;
}
