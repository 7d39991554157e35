/*
 * main.c — runs every integration suite listed in suites.def (Check)
 * against the real binary and the PostgreSQL cluster tests/run.sh started.
 * GPUGATE_TEST_SUITE=name runs one suite.
 */
#include <check.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#define SUITE(name) Suite *name##_suite(void);
#include "tests/integration/suites.def"
#undef SUITE

int main(void)
{
  SRunner *sr = srunner_create(NULL);
  const char *only = getenv("GPUGATE_TEST_SUITE");
  int failed;

  curl_global_init(CURL_GLOBAL_DEFAULT);
#define SUITE(name)                                                            \
  if (!only || !strcmp(only, #name))                                           \
    srunner_add_suite(sr, name##_suite());
#include "tests/integration/suites.def"
#undef SUITE
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  curl_global_cleanup();
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
