/*
 * test_months.c — invoice months and the attribution of rows to them once
 * months are closed (db/months.h), as tables: a row's usage day, invoice
 * month and the closed months → the month it is reported in, and whether
 * it is a correction.
 */
#include <check.h>
#include <string.h>
#include <time.h>

#include "db/months.h"

Suite *months_suite(void);

START_TEST(month_valid_and_next_table)
{
  static const struct {
    const char *m, *next; /* next NULL: invalid or none */
  } cases[] = {
      {"2026-08", "2026-09"},
      {"2026-12", "2027-01"},
      {"0001-01", "0001-02"},
      {"9999-11", "9999-12"},
      {"9999-12", NULL},
      {"2026-13", NULL},
      {"2026-00", NULL},
      {"0000-05", NULL},
      {"2026-8", NULL},
      {"202608", NULL},
      {"2026-08-01", NULL},
      {"abcd-ef", NULL},
      {"", NULL},
      {"2026/08", NULL},
  };
  char out[DB_MONTH_LEN];
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    int rc = db_month_next(cases[i].m, out);
    if (!cases[i].next) {
      ck_assert_msg(rc == -1, "case %zu (%s): %s", i, cases[i].m, out);
      continue;
    }
    ck_assert_msg(rc == 0 && !strcmp(out, cases[i].next), "case %zu (%s)", i,
                  cases[i].m);
    ck_assert(db_month_valid(cases[i].m));
  }
  ck_assert(!db_month_valid(NULL));
}
END_TEST

START_TEST(attribution_table)
{
  static const char closed_none[][DB_MONTH_LEN] = {{0}};
  static const char closed_aug[][DB_MONTH_LEN] = {"2026-08"};
  static const char closed_run[][DB_MONTH_LEN] = {"2026-07", "2026-08",
                                                  "2026-09"};
  static const char closed_gap[][DB_MONTH_LEN] = {"2026-08", "2026-10"};
  static const char closed_dec[][DB_MONTH_LEN] = {"2026-12"};
  static const struct {
    const char *day, *invoice;
    const char (*closed)[DB_MONTH_LEN];
    size_t n;
    const char *month; /* NULL: malformed */
    bool correction;
  } cases[] = {
      /* nothing closed: the invoice month, else the usage month */
      {"2026-08-15", "2026-08", closed_none, 0, "2026-08", false},
      {"2026-08-31", "2026-09", closed_none, 0, "2026-09", false},
      {"2026-08-15", "", closed_none, 0, "2026-08", false},
      /* August closed */
      {"2026-08-15", "2026-08", closed_aug, 1, "2026-09", true},
      {"2026-08-15", "", closed_aug, 1, "2026-09", true},
      {"2026-09-02", "2026-09", closed_aug, 1, "2026-09", false},
      {"2026-07-31", "2026-07", closed_aug, 1, "2026-07", false},
      /* invoiced in open September for closed August's usage: a regular
       * row of September (a Correction is decided by the invoice month) */
      {"2026-08-31", "2026-09", closed_aug, 1, "2026-09", false},
      {"2026-07-31", "2026-08", closed_run, 3, "2026-10", true},
      /* invoiced in closed August for July's (open) usage */
      {"2026-07-31", "2026-08", closed_aug, 1, "2026-09", true},
      /* a run of closed months: the first open one after it */
      {"2026-07-04", "2026-07", closed_run, 3, "2026-10", true},
      {"2026-08-04", "", closed_run, 3, "2026-10", true},
      {"2026-10-01", "2026-10", closed_run, 3, "2026-10", false},
      {"2026-06-30", "2026-06", closed_run, 3, "2026-06", false},
      /* a gap: September is open between two closed months */
      {"2026-08-10", "2026-08", closed_gap, 2, "2026-09", true},
      {"2026-10-10", "2026-10", closed_gap, 2, "2026-11", true},
      /* across the year */
      {"2026-12-31", "2026-12", closed_dec, 1, "2027-01", true},
      /* malformed */
      {"2026-8-15", "2026-08", closed_none, 0, NULL, false},
      {"2026-08-15", "202608", closed_none, 0, NULL, false},
      {"2026-13-01", "", closed_none, 0, NULL, false},
  };
  char month[DB_MONTH_LEN];
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    bool corr = !cases[i].correction;
    int rc = db_month_attribute(cases[i].day, cases[i].invoice, cases[i].closed,
                                cases[i].n, month, &corr);
    if (!cases[i].month) {
      ck_assert_msg(rc == -1, "case %zu: accepted", i);
      continue;
    }
    ck_assert_msg(rc == 0 && !strcmp(month, cases[i].month) &&
                      corr == cases[i].correction,
                  "case %zu (%s, %s): %s %d, want %s %d", i, cases[i].day,
                  cases[i].invoice, rc == 0 ? month : "-", corr, cases[i].month,
                  cases[i].correction);
  }
}
END_TEST

/* Invoice months are US/Pacific months, daylight time included. */
START_TEST(pacific_month_table)
{
  static const struct {
    const char *utc; /* an instant, as "YYYY-MM-DD HH:MM:SS" UTC */
    const char *month;
  } cases[] = {
      /* PDT (UTC-7): September starts at 07:00 UTC */
      {"2026-09-01 06:59:59", "2026-08"},
      {"2026-09-01 07:00:00", "2026-09"},
      /* PST (UTC-8): December starts at 08:00 UTC */
      {"2026-12-01 07:59:59", "2026-11"},
      {"2026-12-01 08:00:00", "2026-12"},
      /* November 1st 2026 is a Sunday: still PDT at midnight */
      {"2026-11-01 06:59:59", "2026-10"},
      {"2026-11-01 07:00:00", "2026-11"},
      /* March starts in PST; April in PDT */
      {"2027-03-01 07:59:59", "2027-02"},
      {"2027-03-01 08:00:00", "2027-03"},
      {"2027-04-01 06:59:59", "2027-03"},
      {"2027-04-01 07:00:00", "2027-04"},
      /* the new year, in PST */
      {"2027-01-01 07:59:59", "2026-12"},
      {"2027-01-01 08:00:00", "2027-01"},
      /* UTC's month ended, Pacific's not: not closable yet */
      {"2026-08-01 03:00:00", "2026-07"},
  };
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct tm tm;
    char month[DB_MONTH_LEN];
    memset(&tm, 0, sizeof(tm));
    ck_assert_ptr_nonnull(strptime(cases[i].utc, "%Y-%m-%d %H:%M:%S", &tm));
    db_month_pacific((long long)timegm(&tm), month);
    ck_assert_msg(!strcmp(month, cases[i].month), "%s UTC: %s, want %s",
                  cases[i].utc, month, cases[i].month);
  }
}
END_TEST

Suite *months_suite(void)
{
  Suite *s = suite_create("months");
  TCase *tc = tcase_create("months");

  tcase_add_test(tc, month_valid_and_next_table);
  tcase_add_test(tc, attribution_table);
  tcase_add_test(tc, pacific_month_table);
  suite_add_tcase(s, tc);
  return s;
}
