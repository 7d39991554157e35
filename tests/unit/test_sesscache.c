/*
 * test_sesscache.c — the replica's cache of console sessions on a
 * controlled clock, as a table of steps: used only within a second of a
 * stamp read that began before it, one read at a time, emptied when the
 * stamp moves, an entry put with an older stamp never kept, an entry
 * lapsing at its own end, a failed read or this replica's own end of a
 * session leaving the cache unused until a read succeeds.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "identity/sesscache.h"

Suite *sesscache_suite(void);

enum op { BEGIN, END, PUT, GET, FORGET };

struct step {
  enum op op;
  const char *sid;  /* PUT, GET */
  long long now;    /* PUT, GET: Unix s */
  long long ms;     /* BEGIN, GET: monotonic now; END: when the read began */
  long long stamp;  /* END: read (-1: the read failed); PUT: read with it */
  long long until;  /* PUT */
  const char *team; /* PUT: the principal's; GET: expected, NULL = miss */
  bool want;        /* BEGIN: the caller reads; END: the stamp moved */
};

START_TEST(steps_table)
{
  static const struct step steps[] = {
      /* nothing read yet: unused */
      {GET, "s-a", 100, 0, 0, 0, NULL, false},
      {BEGIN, NULL, 0, 0, 0, 0, NULL, true},
      {BEGIN, NULL, 0, 0, 0, 0, NULL, false}, /* one read at a time */
      {GET, "s-a", 100, 0, 0, 0, NULL, false},
      {END, NULL, 0, 0, 5, 0, NULL, false}, /* the first: no move */
      {PUT, "s-a", 100, 0, 5, 200, "a", false},
      {GET, "s-a", 100, 999, 0, 0, "a", false},
      {GET, "s-a", 100, 1000, 0, 0, NULL, false}, /* the read is too old */
      {BEGIN, NULL, 0, 999, 0, 0, NULL, false},   /* not due yet */
      {BEGIN, NULL, 0, 1000, 0, 0, NULL, true},
      {END, NULL, 0, 1000, 5, 0, NULL, false}, /* unchanged: kept */
      {GET, "s-a", 199, 1500, 0, 0, "a", false},
      {GET, "s-a", 200, 1500, 0, 0, NULL, false}, /* its own end */
      {GET, "s-b", 100, 1500, 0, 0, NULL, false}, /* another session */
      /* read in a snapshot before the stamp the cache knows: not kept */
      {PUT, "s-b", 100, 0, 4, 200, "b", false},
      {GET, "s-b", 100, 1500, 0, 0, NULL, false},
      /* the stamp moves: emptied */
      {BEGIN, NULL, 0, 2000, 0, 0, NULL, true},
      {END, NULL, 0, 2000, 6, 0, NULL, true},
      {GET, "s-a", 150, 2100, 0, 0, NULL, false},
      {PUT, "s-a", 150, 0, 6, 200, "a", false},
      {GET, "s-a", 150, 2100, 0, 0, "a", false},
      /* a failed read: unused until one succeeds, then kept */
      {BEGIN, NULL, 0, 3000, 0, 0, NULL, true},
      {END, NULL, 0, 3000, -1, 0, NULL, false},
      {GET, "s-a", 150, 3100, 0, 0, NULL, false},
      {BEGIN, NULL, 0, 3100, 0, 0, NULL, true},
      {END, NULL, 0, 3100, 6, 0, NULL, false},
      {GET, "s-a", 150, 3200, 0, 0, "a", false},
      /* this replica ended a session: read before the next use */
      {FORGET, NULL, 0, 0, 0, 0, NULL, false},
      {GET, "s-a", 150, 3300, 0, 0, NULL, false},
      {BEGIN, NULL, 0, 3300, 0, 0, NULL, true},
      {END, NULL, 0, 3300, 7, 0, NULL, true},
      {GET, "s-a", 150, 3400, 0, 0, NULL, false},
      {PUT, "s-a", 150, 0, 7, 200, "a", false},
      /* a forget while a read is under way: that read vouches for
       * nothing (it may have read before the end) */
      {BEGIN, NULL, 0, 4400, 0, 0, NULL, true},
      {FORGET, NULL, 0, 0, 0, 0, NULL, false},
      {END, NULL, 0, 4400, 7, 0, NULL, false},
      {GET, "s-a", 150, 4500, 0, 0, NULL, false},
      {BEGIN, NULL, 0, 4500, 0, 0, NULL, true},
      {END, NULL, 0, 4500, 7, 0, NULL, false},
      {GET, "s-a", 150, 4600, 0, 0, "a", false},
      /* an entry put with the stamp before a move never outlives it */
      {BEGIN, NULL, 0, 5600, 0, 0, NULL, true},
      {END, NULL, 0, 5600, 8, 0, NULL, true},
      {PUT, "s-c", 150, 0, 7, 200, "c", false},
      {GET, "s-c", 150, 5700, 0, 0, NULL, false},
      /* a put already at its end is not kept */
      {PUT, "s-d", 200, 0, 8, 200, "d", false},
      {GET, "s-d", 199, 5700, 0, 0, NULL, false},
  };
  struct sesscache *c = sesscache_new(64);
  unsigned char key[TOKENCACHE_KEY_LEN];
  struct auth_principal p;
  size_t i;

  ck_assert_ptr_nonnull(c);
  for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
    const struct step *s = &steps[i];
    bool got;

    if (s->sid)
      ck_assert_int_eq(sesscache_key(c, s->sid, key), 0);
    switch (s->op) {
    case BEGIN:
      got = sesscache_check_begin(c, s->ms);
      ck_assert_msg(got == s->want, "step %zu: begin %d", i, got);
      break;
    case END:
      got = sesscache_check_end(c, s->ms, s->stamp >= 0, s->stamp);
      ck_assert_msg(got == s->want, "step %zu: moved %d", i, got);
      break;
    case PUT:
      memset(&p, 0, sizeof(p));
      snprintf(p.team, sizeof(p.team), "%s", s->team);
      sesscache_put(c, key, s->stamp, (time_t)s->now, s->until, &p);
      break;
    case GET:
      memset(&p, 0, sizeof(p));
      got = sesscache_get(c, key, (time_t)s->now, s->ms, &p);
      ck_assert_msg(got == (s->team != NULL), "step %zu: hit %d", i, got);
      if (got)
        ck_assert_str_eq(p.team, s->team);
      break;
    case FORGET:
      sesscache_forget(c);
      break;
    }
  }
  sesscache_free(c);
}
END_TEST

Suite *sesscache_suite(void)
{
  Suite *s = suite_create("sesscache");
  TCase *tc = tcase_create("sesscache");

  tcase_add_test(tc, steps_table);
  suite_add_tcase(s, tc);
  return s;
}
