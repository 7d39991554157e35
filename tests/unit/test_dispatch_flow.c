/*
 * test_dispatch_flow.c — how many Batch calls a replica keeps in flight
 * (control/dispatch_flow.c): the limit as a table of rates and latencies,
 * the moving average, and a flow's slots: each region up to its limit,
 * the limit following the latencies observed, the replica's cap over all
 * regions, and the regions reported full to the claim.
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "control/dispatch_flow.h"

Suite *dispatch_flow_suite(void);

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

struct limit_case {
  double rate, latency_s;
  int floor, cap, want;
};

START_TEST(limit_table)
{
  static const struct limit_case cases[] = {
      /* Batch's budget at a real create's latency: ceil(r × l × 1.5) */
      {98, 0.3, 4, 256, 45},   /* 44.1 */
      {98, 0.381, 4, 256, 57}, /* the mean of a 300/1500 ms lognormal */
      {100, 0.25, 4, 256, 38}, /* 37.5: the prior */
      {100, 1.0, 4, 256, 150},      {100, 1.7, 4, 256, 255},
      {100, 1.71, 4, 256, 256}, /* 256.5: the cap */
      {100, 15.0, 4, 256, 256}, /* a Batch timing out */
      {100, 0.01, 4, 256, 4},   /* 1.5: the floor */
      {100, 0.0, 4, 256, 4},        {0, 1.0, 4, 256, 4}, /* no budget */
      {-5, 1.0, 4, 256, 4},         {100, -1.0, 4, 256, 4},
      {100, NAN, 4, 256, 4},        {NAN, 1.0, 4, 256, 4},
      {100, INFINITY, 4, 256, 256}, {10, 0.2, 1, 8, 3},
      {10, 2.0, 1, 8, 8},
  };
  size_t i;

  for (i = 0; i < N_OF(cases); i++) {
    int got = dispatch_flow_limit(cases[i].rate, cases[i].latency_s,
                                  cases[i].floor, cases[i].cap);
    ck_assert_msg(got == cases[i].want,
                  "case %zu: rate %g, latency %g s: %d, want %d", i,
                  cases[i].rate, cases[i].latency_s, got, cases[i].want);
  }
}
END_TEST

struct ewma_case {
  double prev, sample, alpha, want;
};

START_TEST(ewma_table)
{
  static const struct ewma_case cases[] = {
      {-1, 0.3, 0.05, 0.3}, /* the first sample */
      {0.3, 1.3, 0.05, 0.35}, {0.3, 0.3, 0.05, 0.3},
      {1.0, 0.0, 0.5, 0.5},   {0.0, 2.0, 1.0, 2.0},
  };
  size_t i;

  for (i = 0; i < N_OF(cases); i++) {
    double got =
        dispatch_flow_ewma(cases[i].prev, cases[i].sample, cases[i].alpha);
    ck_assert_msg(fabs(got - cases[i].want) < 1e-9, "case %zu: %g, want %g", i,
                  got, cases[i].want);
  }
}
END_TEST

/* Take slots in region until refused; returns how many. */
static int fill(struct dispatch_flow *f, const char *region)
{
  int n = 0;

  while (n < 1000 && dispatch_flow_acquire(f, region))
    n++;
  return n;
}

START_TEST(slots_follow_latency)
{
  struct dispatch_flow *f = dispatch_flow_new(100);
  char full[4][DISPATCH_FLOW_REGION_MAX];
  int i;

  ck_assert_ptr_nonnull(f);
  /* no region seen: a claim takes a new region's least */
  ck_assert_int_eq(dispatch_flow_room(f), DISPATCH_FLOW_MIN);
  /* before any answer: the prior's latency, 100 × 0.25 × 1.5 */
  ck_assert_int_eq(dispatch_flow_region_limit(f, "us-east4"), 38);
  ck_assert_int_eq(dispatch_flow_room(f), 38);
  ck_assert_int_eq(fill(f, "us-east4"), 38);
  ck_assert_uint_eq(dispatch_flow_full(f, full, 4), 1);
  ck_assert_str_eq(full[0], "us-east4");
  ck_assert_int_eq(dispatch_flow_room(f), DISPATCH_FLOW_MIN);
  /* another region is not held up */
  ck_assert(dispatch_flow_acquire(f, "europe-west4"));
  ck_assert_int_eq(dispatch_flow_room(f), 37);
  dispatch_flow_release(f, "europe-west4");
  ck_assert_int_eq(dispatch_flow_room(f), 38);
  /* creates answered in 1 s: the limit rises to 150, the slowest method
   * sets it */
  dispatch_flow_observe(f, "us-east4", DISPATCH_GET, 80);
  dispatch_flow_observe(f, "us-east4", DISPATCH_CREATE, 1000);
  ck_assert_int_eq(dispatch_flow_region_limit(f, "us-east4"), 150);
  ck_assert_uint_eq(dispatch_flow_full(f, full, 4), 0);
  ck_assert_int_eq(fill(f, "us-east4"), 150 - 38);
  /* faster answers bring it down by the moving average: 1 → 0.95 s */
  dispatch_flow_observe(f, "us-east4", DISPATCH_CREATE, 0);
  ck_assert_int_eq(dispatch_flow_region_limit(f, "us-east4"), 143);
  ck_assert(!dispatch_flow_acquire(f, "us-east4"));
  for (i = 0; i < 150 - 142; i++)
    dispatch_flow_release(f, "us-east4");
  ck_assert(dispatch_flow_acquire(f, "us-east4"));
  /* bad samples are ignored */
  dispatch_flow_observe(f, "us-east4", DISPATCH_METHODS, 100000);
  dispatch_flow_observe(f, "us-east4", DISPATCH_CREATE, -1);
  ck_assert_int_eq(dispatch_flow_region_limit(f, "us-east4"), 143);
  dispatch_flow_free(f);
}
END_TEST

START_TEST(replica_cap)
{
  struct dispatch_flow *f = dispatch_flow_new(1000);
  const char *regions[] = {"a", "b", "c"};
  int got[3], i, total = 0;

  ck_assert_ptr_nonnull(f);
  for (i = 0; i < 3; i++)
    dispatch_flow_observe(f, regions[i], DISPATCH_CREATE, 500);
  /* 1000 × 0.5 × 1.5 = 750 a region: the replica's cap binds */
  ck_assert_int_eq(dispatch_flow_room(f), DISPATCH_FLOW_CAP);
  for (i = 0; i < 3; i++) {
    got[i] = fill(f, regions[i]);
    total += got[i];
  }
  /* each region's own limit is the cap, and all share it */
  ck_assert_int_eq(got[0], DISPATCH_FLOW_CAP);
  ck_assert_int_eq(got[1], 0);
  ck_assert_int_eq(total, DISPATCH_FLOW_CAP);
  ck_assert_int_eq(dispatch_flow_room(f), 0);
  dispatch_flow_release(f, "a");
  dispatch_flow_release(f, "b"); /* holds none: no effect */
  ck_assert_int_eq(dispatch_flow_room(f), 1);
  ck_assert(dispatch_flow_acquire(f, "c"));
  ck_assert_int_eq(dispatch_flow_room(f), 0);
  dispatch_flow_free(f);
}
END_TEST

START_TEST(region_names)
{
  struct dispatch_flow *f = dispatch_flow_new(100);
  char name[DISPATCH_FLOW_REGION_MAX + 8];

  ck_assert_ptr_nonnull(f);
  memset(name, 'x', sizeof(name) - 1);
  name[sizeof(name) - 1] = '\0';
  ck_assert(!dispatch_flow_acquire(f, name)); /* too long: no slot */
  ck_assert_int_eq(dispatch_flow_room(f), DISPATCH_FLOW_MIN); /* none seen */
  dispatch_flow_free(f);
  dispatch_flow_free(NULL);
}
END_TEST

Suite *dispatch_flow_suite(void)
{
  Suite *s = suite_create("dispatch_flow");
  TCase *tc = tcase_create("flow");

  tcase_add_test(tc, limit_table);
  tcase_add_test(tc, ewma_table);
  tcase_add_test(tc, slots_follow_latency);
  tcase_add_test(tc, replica_cap);
  tcase_add_test(tc, region_names);
  suite_add_tcase(s, tc);
  return s;
}
