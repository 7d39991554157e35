/*
 * test_ratelimit.c — token buckets with an injected clock.
 */
#include <check.h>

#include "server/ratelimit.h"

Suite *ratelimit_suite(void);

/* One step: at time t_ms, team takes a token; expect allowed or not. */
struct step {
  long long t_ms;
  const char *team;
  bool allowed;
  long retry_after; /* when refused */
};

START_TEST(buckets_table)
{
  /* rate 2/s, burst 4 */
  static const struct step steps[] = {
      {0, "a", true, 0},      {0, "a", true, 0},     {0, "a", true, 0},
      {0, "a", true, 0},      {0, "a", false, 1},    /* burst spent */
      {0, "b", true, 0},                             /* teams independent */
      {499, "a", false, 1},   {500, "a", true, 0},   /* one token per 0.5 s */
      {500, "a", false, 1},   {10000, "a", true, 0}, /* refills to the burst */
      {10000, "a", true, 0},  {10000, "a", true, 0}, {10000, "a", true, 0},
      {10000, "a", false, 1},
  };
  struct ratelimit *rl = ratelimit_new(2, 4);
  size_t i;

  for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
    long retry = 0;
    bool ok = ratelimit_take(rl, steps[i].team, steps[i].t_ms * 1000, &retry);
    ck_assert_msg(ok == steps[i].allowed, "step %zu", i);
    if (!ok)
      ck_assert_int_eq(retry, steps[i].retry_after);
  }
  ratelimit_free(rl);
}
END_TEST

START_TEST(zero_rate_disables)
{
  struct ratelimit *rl = ratelimit_new(0, 0);
  long retry = 0;
  int i;

  for (i = 0; i < 10000; i++)
    ck_assert(ratelimit_take(rl, "a", 0, &retry));
  ratelimit_free(rl);
}
END_TEST

START_TEST(slow_rate_retry_after)
{
  /* 1 request/s, burst 2: the third at once waits a whole second */
  struct ratelimit *rl = ratelimit_new(1, 2);
  long retry = 0;

  ck_assert(ratelimit_take(rl, "t", 0, &retry));
  ck_assert(ratelimit_take(rl, "t", 0, &retry));
  ck_assert(!ratelimit_take(rl, "t", 0, &retry));
  ck_assert_int_eq(retry, 1);
  ratelimit_free(rl);
}
END_TEST

START_TEST(exhausted_lists_empty_buckets)
{
  /* 2 requests/s, burst 2: "a" spent at 0 has a token again at 0.5 s,
   * "b" with one left is not listed, "c" never taken from is not known */
  struct ratelimit *rl = ratelimit_new(2, 2);
  char keys[4][RATELIMIT_KEY_MAX];
  long long next = -1;
  long retry = 0;

  ck_assert(ratelimit_take(rl, "a", 0, &retry));
  ck_assert(ratelimit_take(rl, "a", 0, &retry));
  ck_assert(ratelimit_take(rl, "b", 0, &retry));
  ck_assert_uint_eq(ratelimit_exhausted(rl, 0, keys, 4, &next), 1);
  ck_assert_str_eq(keys[0], "a");
  ck_assert_int_eq(next, 500000);
  /* half refilled: listed until the whole token is there */
  ck_assert_uint_eq(ratelimit_exhausted(rl, 250000, keys, 4, &next), 1);
  ck_assert_int_eq(next, 500000);
  ck_assert_uint_eq(ratelimit_exhausted(rl, 500000, keys, 4, &next), 0);
  ck_assert_int_eq(next, 500000);
  /* at most max listed */
  ck_assert(ratelimit_take(rl, "b", 0, &retry));
  ck_assert_uint_eq(ratelimit_exhausted(rl, 0, keys, 1, &next), 1);
  ck_assert_uint_eq(ratelimit_exhausted(rl, 0, keys, 4, &next), 2);
  ratelimit_free(rl);

  rl = ratelimit_new(0, 0);
  ck_assert(ratelimit_take(rl, "a", 0, &retry));
  ck_assert_uint_eq(ratelimit_exhausted(rl, 0, keys, 4, &next), 0);
  ratelimit_free(rl);
}
END_TEST

Suite *ratelimit_suite(void)
{
  Suite *s = suite_create("ratelimit");
  TCase *tc = tcase_create("buckets");

  tcase_add_test(tc, buckets_table);
  tcase_add_test(tc, zero_rate_disables);
  tcase_add_test(tc, slow_rate_retry_after);
  tcase_add_test(tc, exhausted_lists_empty_buckets);
  suite_add_tcase(s, tc);
  return s;
}
