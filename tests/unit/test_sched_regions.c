/*
 * test_sched_regions.c — a cycle's lists of allowed regions
 * (db/sched_regions.c): for each job's `locations` text, the flavors of
 * its cluster queue it excludes, as db_sched_excluded() works them out
 * from the text parsed on its own; the same list object for the same
 * text; and past SCHED_REGIONS_MAX distinct texts, each parsed alone.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "db/sched_regions.h"

Suite *sched_regions_suite(void);

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Two cluster queues: cq 0 offers flavors a (us-central1, us-east4) and b
 * (europe-west4); cq 1 offers b then a. */
static void config(struct db_sched *s, struct sched_cq cqs[2],
                   char names[2][DB_NAME_LEN])
{
  memset(s, 0, sizeof(*s));
  memset(cqs, 0, 2 * sizeof(*cqs));
  snprintf(names[0], DB_NAME_LEN, "a");
  snprintf(names[1], DB_NAME_LEN, "b");
  s->flavor_names = names;
  s->flavor_specs =
      json_pack("{s:{s:[ss]}, s:{s:[s]}}", "a", "locations", "us-central1",
                "us-east4", "b", "locations", "europe-west4");
  cqs[0].n_flavors = 2;
  cqs[0].flavors[0].flavor = 0;
  cqs[0].flavors[1].flavor = 1;
  cqs[1].n_flavors = 2;
  cqs[1].flavors[0].flavor = 1;
  cqs[1].flavors[1].flavor = 0;
  s->cqs = cqs;
  s->in.n_cqs = 2;
}

START_TEST(excluded_table)
{
  static const struct {
    int cq;
    const char *text;
    uint32_t mask;
  } cases[] = {
      {0, NULL, 0},
      {0, "[]", 0},
      {0, "[\"us-east4\"]", 2}, /* b is elsewhere */
      {1, "[\"us-east4\"]", 1}, /* b is cq 1's first */
      {0, "[\"europe-west4\"]", 1},
      {1, "[\"europe-west4\"]", 2},
      {0, "[\"us-east4\"]", 2},   /* again: from the memo */
      {0, "[\"asia-east1\"]", 3}, /* nowhere */
      {0, "[\"asia-east1\", \"us-central1\"]", 2},
      {0, "not json", 0}, /* unparseable: none named */
      {1, "not json", 0},
  };
  struct db_sched s;
  struct sched_cq cqs[2];
  char names[2][DB_NAME_LEN];
  struct sched_regions m;
  size_t i;

  config(&s, cqs, names);
  ck_assert_int_eq(sched_regions_init(&m, 2), 0);
  for (i = 0; i < N_OF(cases); i++) {
    uint32_t got = 99, want;
    json_t *alone = cases[i].text ? json_loads(cases[i].text, 0, NULL) : NULL;
    json_t *arr = sched_regions_get(&m, &s, cases[i].cq, cases[i].text, &got);

    ck_assert_ptr_nonnull(arr);
    want = db_sched_excluded(&s, cases[i].cq, alone ? alone : m.empty);
    ck_assert_msg(got == cases[i].mask && got == want,
                  "case %zu (cq %d, %s): mask %u, want %u (alone %u)", i,
                  cases[i].cq, cases[i].text ? cases[i].text : "NULL", got,
                  cases[i].mask, want);
    ck_assert_uint_eq(json_array_size(arr), alone ? json_array_size(alone) : 0);
    json_decref(alone);
    json_decref(arr);
  }
  /* one list per distinct text: us-east4, europe-west4, asia-east1, the
   * pair and the unparseable one */
  ck_assert_int_eq(m.n, 5);
  sched_regions_free(&m);
  json_decref(s.flavor_specs);
}
END_TEST

START_TEST(same_text_same_list_and_overflow)
{
  struct db_sched s;
  struct sched_cq cqs[2];
  char names[2][DB_NAME_LEN];
  char texts[SCHED_REGIONS_MAX + 3][48];
  struct sched_regions m;
  json_t *first, *again, *extra;
  uint32_t mask;
  int i;

  config(&s, cqs, names);
  ck_assert_int_eq(sched_regions_init(&m, 2), 0);
  for (i = 0; i < SCHED_REGIONS_MAX + 3; i++)
    snprintf(texts[i], sizeof(texts[i]), "[\"us-east4\", \"r%d\"]", i);
  first = sched_regions_get(&m, &s, 0, texts[0], &mask);
  again = sched_regions_get(&m, &s, 1, texts[0], &mask);
  ck_assert_ptr_eq(first, again); /* parsed once, shared */
  ck_assert_uint_eq(mask, 1);
  json_decref(first);
  json_decref(again);
  for (i = 1; i < SCHED_REGIONS_MAX + 3; i++) {
    json_t *arr = sched_regions_get(&m, &s, 0, texts[i], &mask);
    ck_assert_ptr_nonnull(arr);
    ck_assert_uint_eq(mask, 2);
    ck_assert_uint_eq(json_array_size(arr), 2);
    json_decref(arr);
  }
  ck_assert_int_eq(m.n, SCHED_REGIONS_MAX);
  /* past the memo each list is its own, parsed for the job */
  first = sched_regions_get(&m, &s, 0, texts[SCHED_REGIONS_MAX + 1], &mask);
  extra = sched_regions_get(&m, &s, 0, texts[SCHED_REGIONS_MAX + 1], &mask);
  ck_assert_ptr_ne(first, extra);
  ck_assert_uint_eq(mask, 2);
  json_decref(first);
  json_decref(extra);
  sched_regions_free(&m);
  json_decref(s.flavor_specs);
}
END_TEST

Suite *sched_regions_suite(void)
{
  Suite *s = suite_create("sched_regions");
  TCase *tc = tcase_create("regions");

  tcase_add_test(tc, excluded_table);
  tcase_add_test(tc, same_text_same_list_and_overflow);
  suite_add_tcase(s, tc);
  return s;
}
