/*
 * it_reference.c — the reference architecture of SPEC §2 end to end:
 * configured with `gpugate apply`, jobs submitted over HTTP, admission by
 * the real loop against real PostgreSQL.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/integration/harness.h"

Suite *reference_suite(void);

static const char *const teams[4] = {"team-a", "team-b", "team-c", "team-d"};

static struct h_server srv;
static char db_url[512];
static char *tokens[4];
static char *admin;

static void setup(void)
{
  const char *env[] = {"GPUGATE_ADMISSION_INTERVAL_MS=200", NULL};
  int i;

  h_db_apply("it_reference", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv, db_url, env), 0);
  for (i = 0; i < 4; i++)
    tokens[i] = h_token(teams[i], "member", 3600);
  admin = h_token("platform", "admin", 3600);
}

static void teardown(void)
{
  int i;

  h_server_stop(&srv);
  for (i = 0; i < 4; i++)
    free(tokens[i]);
  free(admin);
}

/* GET one job; returns a new reference. */
static json_t *job(int team, const char *id)
{
  char path[160];
  struct h_resp r;
  json_t *j;

  snprintf(path, sizeof(path), "/v1/teams/%s/jobs/%s", teams[team], id);
  h_request(&srv, "GET", path, tokens[team], NULL, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  j = json_incref(r.json);
  h_resp_free(&r);
  return j;
}

static const char *state_of(json_t *j)
{
  return json_string_value(json_object_get(j, "state"));
}

static const char *flavor_of(json_t *j)
{
  return json_string_value(
      json_object_get(json_object_get(j, "admission"), "flavor"));
}

/* Wait until no job of ids is PENDING with reason null (not yet seen by
 * a cycle) and the count of ADMITTED among them reaches want. */
static int wait_admitted(int n, const int *team, char ids[][32], int want)
{
  int tries, i, admitted = 0;

  for (tries = 0; tries < 100; tries++) {
    admitted = 0;
    for (i = 0; i < n; i++) {
      json_t *j = job(team[i], ids[i]);
      admitted += !strcmp(state_of(j), "ADMITTED");
      json_decref(j);
    }
    if (admitted >= want)
      return admitted;
    {
      struct timespec ts = {0, 100000000L};
      nanosleep(&ts, NULL);
    }
  }
  return admitted;
}

static void sleep_100ms(void)
{
  struct timespec ts = {0, 100000000L};
  nanosleep(&ts, NULL);
}

/* Positions are published by the admission leader after its cycle: poll
 * job id of team t until its position_in_queue is want (up to 5 s); the
 * last view (a new reference). */
static json_t *job_at(int t, const char *id, json_int_t want)
{
  json_t *j = NULL;
  int tries;

  for (tries = 0; tries < 50; tries++) {
    json_decref(j);
    j = job(t, id);
    if (json_integer_value(json_object_get(j, "position_in_queue")) == want)
      break;
    sleep_100ms();
  }
  return j;
}

/* GET path until its items carry positions 1, 2, ... in order (up to
 * 5 s); the last response in *r. */
static void pending_settled(const char *path, const char *token,
                            struct h_resp *r)
{
  int tries;

  for (tries = 0; tries < 50; tries++) {
    size_t i;
    json_t *j;
    bool settled = true;
    h_request(&srv, "GET", path, token, NULL, NULL, r);
    json_array_foreach (json_object_get(r->json, "items"), i, j)
      settled =
          settled &&
          json_integer_value(json_object_get(j, "position_in_queue")) ==
              (json_int_t)i + 1 &&
          json_integer_value(json_object_get(j, "position_in_cluster_queue")) ==
              (json_int_t)i + 1;
    if (settled || r->status != 200)
      return;
    h_resp_free(r);
    sleep_100ms();
  }
  h_request(&srv, "GET", path, token, NULL, NULL, r);
}

static char lp[16][32], hp[16][32];
static int lp_team[16], hp_team[16];

START_TEST(reference_scenario)
{
  int i, k, t;
  char path[200];
  struct h_resp r;

  /* four low-priority jobs per team, round-robin over the teams */
  for (i = 0, k = 0; i < 4; i++)
    for (t = 0; t < 4; t++, k++) {
      char name[16];
      snprintf(name, sizeof(name), "lp-%d", i);
      lp_team[k] = t;
      h_submit_typical(&srv, teams[t], tokens[t], "lp", name, "default", lp[k]);
    }
  ck_assert_int_eq(wait_admitted(16, lp_team, lp, 16), 16);
  for (t = 0; t < 4; t++) {
    int reserved = 0, spot = 0;
    for (k = 0; k < 16; k++) {
      json_t *j;
      if (lp_team[k] != t)
        continue;
      j = job(t, lp[k]);
      if (!strcmp(flavor_of(j), "l4-reserved")) {
        reserved++;
        ck_assert(json_is_true(
            json_object_get(json_object_get(j, "admission"), "borrowed")));
      } else {
        ck_assert_str_eq(flavor_of(j), "l4-spot");
        spot++;
      }
      json_decref(j);
    }
    ck_assert_msg(reserved == 1 && spot == 3, "%s: %d reserved %d spot",
                  teams[t], reserved, spot);
  }

  /* then four high-priority jobs per team */
  for (i = 0, k = 0; i < 4; i++)
    for (t = 0; t < 4; t++, k++) {
      char name[16];
      snprintf(name, sizeof(name), "hp-%d", i);
      hp_team[k] = t;
      h_submit_typical(&srv, teams[t], tokens[t], "hp", name, "high", hp[k]);
    }
  ck_assert_int_eq(wait_admitted(16, hp_team, hp, 8), 8);
  for (t = 0; t < 4; t++) {
    int reserved = 0, on_demand = 0, pending = 0, evicted = 0;
    for (k = 0; k < 16; k++) {
      json_t *j;
      if (hp_team[k] != t)
        continue;
      j = job(t, hp[k]);
      if (!strcmp(state_of(j), "PENDING"))
        pending++;
      else if (!strcmp(flavor_of(j), "l4-reserved"))
        reserved++;
      else if (!strcmp(flavor_of(j), "l4-on-demand"))
        on_demand++;
      json_decref(j);
    }
    ck_assert_msg(reserved == 1 && on_demand == 1 && pending == 2,
                  "%s: hp reserved %d on-demand %d pending %d", teams[t],
                  reserved, on_demand, pending);

    /* the low-priority job that borrowed the reservation was evicted and
     * waits again, attempt 2, first in its queue */
    for (k = 0; k < 16; k++) {
      json_t *j, *ev;
      if (lp_team[k] != t)
        continue;
      j = job(t, lp[k]);
      if (!strcmp(state_of(j), "PENDING")) {
        json_decref(j);
        j = job_at(t, lp[k], 1);
        evicted++;
        ck_assert_int_eq(json_integer_value(json_object_get(j, "attempt")), 2);
        ck_assert_str_eq(json_string_value(json_object_get(j, "reason")),
                         "InsufficientQuota");
        ck_assert_int_eq(
            json_integer_value(json_object_get(j, "position_in_queue")), 1);
        snprintf(path, sizeof(path), "/v1/teams/%s/jobs/%.31s/events", teams[t],
                 lp[k]);
        h_request(&srv, "GET", path, tokens[t], NULL, NULL, &r);
        ck_assert_int_eq(r.status, 200);
        {
          size_t e;
          int saw_evicting = 0, saw_requeue = 0;
          json_array_foreach (json_object_get(r.json, "items"), e, ev) {
            const char *to = json_string_value(json_object_get(ev, "to"));
            const char *why = json_string_value(json_object_get(ev, "reason"));
            if (!strcmp(to, "EVICTING") && why && !strcmp(why, "Reclaimed"))
              saw_evicting = 1;
            if (!strcmp(to, "PENDING") &&
                json_integer_value(json_object_get(ev, "attempt")) == 2)
              saw_requeue = 1;
          }
          ck_assert_msg(saw_evicting && saw_requeue, "%s", r.body);
        }
        h_resp_free(&r);
      }
      json_decref(j);
    }
    ck_assert_int_eq(evicted, 1);

    /* the two waiting high-priority jobs, in order */
    snprintf(path, sizeof(path), "/v1/teams/%s/queues/hp/pending", teams[t]);
    pending_settled(path, tokens[t], &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(r.json, "items")), 2);
    for (i = 0; i < 2; i++) {
      json_t *j = json_array_get(json_object_get(r.json, "items"), (size_t)i);
      char want[16];
      snprintf(want, sizeof(want), "hp-%d", i + 2);
      ck_assert_str_eq(json_string_value(json_object_get(j, "name")), want);
      ck_assert_int_eq(
          json_integer_value(json_object_get(j, "position_in_queue")), i + 1);
      ck_assert_int_eq(
          json_integer_value(json_object_get(j, "position_in_cluster_queue")),
          i + 1);
    }
    h_resp_free(&r);
  }

  /* cancelling an admitted high-priority job lets the next one in */
  {
    json_t *j = NULL;
    char *cancelled = NULL, next[32] = "";
    for (k = 0; k < 16; k++) {
      if (hp_team[k] != 0)
        continue;
      j = job(0, hp[k]);
      if (!cancelled && !strcmp(state_of(j), "ADMITTED"))
        cancelled = hp[k];
      else if (!next[0] && !strcmp(state_of(j), "PENDING"))
        snprintf(next, sizeof(next), "%.31s", hp[k]);
      json_decref(j);
    }
    ck_assert_ptr_nonnull(cancelled);
    snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%.31s/cancel",
             cancelled);
    h_request(&srv, "POST", path, tokens[0], NULL, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(state_of(r.json), "CANCELLED");
    h_resp_free(&r);
    /* idempotent */
    h_request(&srv, "POST", path, tokens[0], NULL, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(state_of(r.json), "CANCELLED");
    h_resp_free(&r);
    {
      int team0[1] = {0};
      char one[1][32];
      snprintf(one[0], 32, "%s", next);
      ck_assert_int_eq(wait_admitted(1, team0, one, 1), 1);
    }
  }

  /* the cluster queue's status agrees with the jobs (its counts are
   * published by the admission leader after its cycle) */
  for (k = 0; k < 50; k++) {
    h_request(&srv, "GET", "/v1/cluster-queues/cq-team-a-hp", admin, NULL, NULL,
              &r);
    ck_assert_int_eq(r.status, 200);
    if (json_integer_value(json_object_get(json_object_get(r.json, "status"),
                                           "pending")) == 1 &&
        json_integer_value(json_object_get(json_object_get(r.json, "status"),
                                           "admitted")) == 2)
      break;
    h_resp_free(&r);
    sleep_100ms();
  }
  if (k == 50)
    h_request(&srv, "GET", "/v1/cluster-queues/cq-team-a-hp", admin, NULL, NULL,
              &r);
  ck_assert_int_eq(json_integer_value(json_object_get(
                       json_object_get(r.json, "status"), "admitted")),
                   2);
  ck_assert_int_eq(json_integer_value(json_object_get(
                       json_object_get(r.json, "status"), "pending")),
                   1);
  h_resp_free(&r);
}
END_TEST

Suite *reference_suite(void)
{
  Suite *s = suite_create("reference");
  TCase *tc = tcase_create("scenario");

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, reference_scenario);
  suite_add_tcase(s, tc);
  return s;
}
