/*
 * main.c — runs every integration suite listed in suites.def (Check)
 * against the real binary and the PostgreSQL cluster tests/run.sh started.
 * GPUGATE_TEST_SUITE=name runs one suite, =a,b,c those suites;
 * GPUGATE_TEST_SKIP=a,b runs every suite but those (tests/run.sh runs the
 * long, mostly waiting suites in lanes of their own beside the rest).
 */
#include <check.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#define SUITE(name) Suite *name##_suite(void);
#include "tests/integration/suites.def"
#undef SUITE

/* Is name one of the comma-separated names in list? */
static int listed(const char *list, const char *name)
{
  size_t len = strlen(name);
  const char *p = list;

  while (*p) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == len && !strncmp(p, name, len))
      return 1;
    if (!end)
      break;
    p = end + 1;
  }
  return 0;
}

static int wanted(const char *name)
{
  const char *only = getenv("GPUGATE_TEST_SUITE");
  const char *skip = getenv("GPUGATE_TEST_SKIP");

  if (only && *only && !listed(only, name))
    return 0;
  return !(skip && listed(skip, name));
}

int main(void)
{
  SRunner *sr = srunner_create(NULL);
  int failed;

  curl_global_init(CURL_GLOBAL_DEFAULT);
#define SUITE(name)                                                            \
  if (wanted(#name))                                                           \
    srunner_add_suite(sr, name##_suite());
#include "tests/integration/suites.def"
#undef SUITE
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  curl_global_cleanup();
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
