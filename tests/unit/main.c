/*
 * main.c — runs every unit-test suite listed in suites.def (Check).
 * Pure functions only: no network, no database.
 */
#include <check.h>
#include <stdlib.h>

#define SUITE(name) Suite *name##_suite(void);
#include "tests/unit/suites.def"
#undef SUITE

int main(void)
{
  SRunner *sr = srunner_create(NULL);
  int failed;

#define SUITE(name) srunner_add_suite(sr, name##_suite());
#include "tests/unit/suites.def"
#undef SUITE
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
