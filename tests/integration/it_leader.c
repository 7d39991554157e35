/*
 * it_leader.c — two replicas on one database: exactly one runs admission
 * (the advisory-lock leader); when it is killed with SIGKILL the other
 * takes over within seconds. Throughout, a watcher reads the jobs table
 * with its own connection and checks Kueue's quota invariants (SPEC §2):
 * per cluster queue, flavor and resource, usage ≤ nominal + borrowing
 * limit; per cohort, usage ≤ the sum of nominal quota; a job holds quota
 * in exactly one flavor, and never while PENDING.
 */
#include <check.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/integration/harness.h"

Suite *leader_suite(void);

#define LEADER_LINE "this replica is the leader"
#define CYCLE_LINE "admission cycle"

static const char *const teams[4] = {"team-a", "team-b", "team-c", "team-d"};

static struct h_server srv[2];
static char db_url[512];
static char *tokens[4];

static void setup(void)
{
  static const char *const env[] = {"GPUGATE_RATE_LIMIT_RPS=100000",
                                    "GPUGATE_ADMISSION_INTERVAL_MS=200", NULL};
  int i;

  h_db_apply("it_leader", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv[0], db_url, env), 0);
  ck_assert_int_eq(h_server_start(&srv[1], db_url, env), 0);
  for (i = 0; i < 4; i++) {
    tokens[i] = h_token(teams[i], "member", 3600);
    ck_assert_ptr_nonnull(tokens[i]);
  }
}

static void teardown(void)
{
  int i;

  /* a replica killed in a forked test is reaped here */
  h_server_stop(&srv[0]);
  h_server_stop(&srv[1]);
  for (i = 0; i < 4; i++)
    free(tokens[i]);
}

/* ---- the invariants, from the database ------------------------------- */

static void assert_invariants(PGconn *pg, const char *when)
{
  char first[512] = "";
  int n = h_db_violations(pg, NULL, first, sizeof(first));

  ck_assert_msg(n == 0, "%s: %d violations, e.g. %s", when, n, first);
}

/* The watcher: checks the invariants every few milliseconds. */
struct watcher {
  pthread_t thread;
  atomic_bool stop;
  int checks, bad;
  char first[512];
};

static void *watch(void *arg)
{
  struct watcher *w = arg;
  PGconn *pg = h_db_connect(db_url);

  if (PQstatus(pg) != CONNECTION_OK) {
    snprintf(w->first, sizeof(w->first), "watcher: %s", PQerrorMessage(pg));
    w->bad = -1;
    PQfinish(pg);
    return NULL;
  }
  while (!atomic_load(&w->stop)) {
    char first[512];
    int n = h_db_violations(pg, NULL, first, sizeof(first));
    if (n != 0) {
      if (!w->bad)
        snprintf(w->first, sizeof(w->first), "%s", first);
      w->bad++;
    }
    w->checks++;
    h_sleep_ms(10);
  }
  PQfinish(pg);
  return NULL;
}

/* ---- jobs ---------------------------------------------------------------- */

/* Poll sql (a count) until it reaches want or ms pass; the last value. */
static long long wait_count(PGconn *pg, const char *sql, long long want,
                            long ms)
{
  long long deadline = h_now_ms() + ms, v;

  while ((v = h_db_int(pg, sql)) != want && h_now_ms() < deadline)
    h_sleep_ms(50);
  return v;
}

/* A typical job (tasks × (2 CPU, 10 GiB, 2 GPU); 2 tasks in the
 * reference scenario) through server s. */
static void submit_n(const struct h_server *s, int team, const char *queue,
                     const char *name, const char *klass, int tasks,
                     char id[32])
{
  char path[96], body[512];
  struct h_resp r;

  snprintf(path, sizeof(path), "/v1/teams/%s/jobs", teams[team]);
  snprintf(body, sizeof(body),
           "{\"name\": \"%s\", \"queue\": \"%s\", \"priority_class\": \"%s\", "
           "\"task_count\": %d, \"task\": {\"image\": "
           "\"us-docker.pkg.dev/p/r/trainer:1.2\", \"cpu_milli\": 2000, "
           "\"memory_mib\": 10240, \"gpu\": 2}}",
           name, queue, klass, tasks);
  ck_assert_int_eq(h_request(s, "POST", path, tokens[team], body, NULL, &r), 0);
  ck_assert_msg(r.status == 201, "%s via :%u: %ld %s", name, s->port, r.status,
                r.body);
  snprintf(id, 32, "%s", json_string_value(json_object_get(r.json, "id")));
  h_resp_free(&r);
}

static void submit(const struct h_server *s, int team, const char *queue,
                   const char *name, const char *klass, char id[32])
{
  submit_n(s, team, queue, name, klass, 2, id);
}

static const char *state_via(const struct h_server *s, int team, const char *id,
                             char *buf, size_t len)
{
  char path[160];
  struct h_resp r;

  snprintf(path, sizeof(path), "/v1/teams/%s/jobs/%.31s", teams[team], id);
  ck_assert_int_eq(h_request(s, "GET", path, tokens[team], NULL, NULL, &r), 0);
  ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
  snprintf(buf, len, "%s", json_string_value(json_object_get(r.json, "state")));
  h_resp_free(&r);
  return buf;
}

START_TEST(one_leader_and_failover)
{
  PGconn *pg = h_db_connect(db_url);
  struct watcher w;
  char id[32], compact[32], state[16];
  int leader = -1, other, i, t, k, n0 = 0, n1 = 0;
  long long t0;

  ck_assert_msg(PQstatus(pg) == CONNECTION_OK, "%s", PQerrorMessage(pg));
  memset(&w, 0, sizeof(w));
  atomic_init(&w.stop, false);
  ck_assert_int_eq(pthread_create(&w.thread, NULL, watch, &w), 0);

  /* exactly one replica leads, within ~3 s */
  for (t0 = h_now_ms(); h_now_ms() - t0 < 3000; h_sleep_ms(50)) {
    n0 = h_log_count(&srv[0], LEADER_LINE);
    n1 = h_log_count(&srv[1], LEADER_LINE);
    if (n0 + n1 > 0)
      break;
  }
  ck_assert_msg(n0 + n1 > 0, "no leader after 3 s; see %s and %s", srv[0].log,
                srv[1].log);
  h_sleep_ms(1500); /* the follower retries every second: still one */
  n0 = h_log_count(&srv[0], LEADER_LINE);
  n1 = h_log_count(&srv[1], LEADER_LINE);
  ck_assert_msg((n0 == 1 && n1 == 0) || (n0 == 0 && n1 == 1),
                "leader lines: %d and %d", n0, n1);
  leader = n0 ? 0 : 1;
  other = 1 - leader;

  /* four low-priority jobs per team, through both replicas */
  for (i = 0, k = 0; i < 4; i++)
    for (t = 0; t < 4; t++, k++) {
      char name[16];
      snprintf(name, sizeof(name), "lp-%d", i);
      submit(&srv[k % 2], t, "lp", name, "default", id);
    }
  ck_assert_int_eq(
      wait_count(pg,
                 "SELECT count(*) FROM jobs WHERE name LIKE 'lp-%' AND state "
                 "= 'ADMITTED'",
                 16, 10000),
      16);
  assert_invariants(pg, "after the low-priority jobs");
  ck_assert_int_gt(h_log_count(&srv[leader], CYCLE_LINE), 0);
  ck_assert_msg(h_log_count(&srv[other], CYCLE_LINE) == 0,
                "the follower ran admission cycles; see %s", srv[other].log);

  /* high-priority jobs reclaim the reservation from borrowing low-priority
   * ones, before and after the leader dies: each team's first goes to
   * on-demand, its second preempts. Teams a and c get their second before
   * the kill, b and d after it, from the new leader. */
  for (t = 0; t < 4; t++)
    submit(&srv[t % 2], t, "hp", "hp-0", "high", id);
  submit(&srv[0], 0, "hp", "hp-1", "high", id);
  submit(&srv[1], 2, "hp", "hp-1", "high", id);
  ck_assert_int_eq(h_log_count(&srv[other], LEADER_LINE), 0);
  ck_assert_int_eq(h_server_kill(&srv[leader], SIGKILL), 0);
  assert_invariants(pg, "right after the kill");

  /* the survivor takes over: a new job is admitted (the lease is 2 s;
   * the bound leaves room for a loaded host) */
  t0 = h_now_ms();
  submit_n(&srv[other], 0, "compact", "after-kill", "compact", 1, compact);
  submit(&srv[other], 1, "hp", "hp-1", "high", id);
  submit(&srv[other], 3, "hp", "hp-1", "high", id);
  while (strcmp(state_via(&srv[other], 0, compact, state, sizeof(state)),
                "ADMITTED") &&
         h_now_ms() - t0 < 30000)
    h_sleep_ms(50);
  ck_assert_msg(!strcmp(state, "ADMITTED"),
                "job after the kill still %s after 30 s; see %s", state,
                srv[other].log);
  ck_assert_int_eq(h_log_count(&srv[other], LEADER_LINE), 1);

  for (i = 2; i < 4; i++)
    for (t = 0; t < 4; t++) {
      char name[16];
      snprintf(name, sizeof(name), "hp-%d", i);
      submit(&srv[other], t, "hp", name, "high", id);
    }

  /* it settles where the reference scenario does: per cohort the
   * reservation and on-demand quota hold four high-priority jobs, spot
   * three low-priority jobs per team; the four evicted ones wait again */
  ck_assert_int_eq(
      wait_count(pg,
                 "SELECT count(*) FROM jobs WHERE name LIKE 'hp-%' AND state "
                 "= 'ADMITTED'",
                 8, 15000),
      8);
  ck_assert_int_eq(
      wait_count(pg,
                 "SELECT count(*) FROM jobs WHERE name LIKE 'lp-%' AND state "
                 "= 'ADMITTED'",
                 12, 5000),
      12);
  ck_assert_int_eq(
      wait_count(pg,
                 "SELECT count(*) FROM jobs WHERE state = 'EVICTING' OR "
                 "(state = 'PENDING' AND reason IS NULL)",
                 0, 5000),
      0);
  ck_assert_int_eq(h_db_int(pg, "SELECT count(*) FROM jobs WHERE name LIKE "
                                "'hp-%' AND state = 'PENDING'"),
                   8);
  ck_assert_int_eq(h_db_int(pg,
                            "SELECT count(*) FROM jobs WHERE name LIKE "
                            "'lp-%' AND state = 'PENDING' AND attempt >= 2"),
                   4);
  ck_assert_int_ge(h_db_int(pg, "SELECT count(*) FROM job_events WHERE "
                                "to_state = 'EVICTING'"),
                   4);
  ck_assert_int_eq(h_db_int(pg, "SELECT count(*) FROM jobs WHERE state = "
                                "'ADMITTED' AND name = 'after-kill'"),
                   1);
  assert_invariants(pg, "settled after the failover");
  ck_assert_int_gt(h_log_count(&srv[other], CYCLE_LINE), 0);

  /* the watcher saw no violation at any time */
  atomic_store(&w.stop, true);
  pthread_join(w.thread, NULL);
  ck_assert_msg(w.bad == 0, "invariants violated %d times, first: %s", w.bad,
                w.first);
  ck_assert_int_gt(w.checks, 20);
  PQfinish(pg);
}
END_TEST

Suite *leader_suite(void)
{
  Suite *s = suite_create("leader");
  TCase *tc = tcase_create("failover");

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, one_leader_and_failover);
  suite_add_tcase(s, tc);
  return s;
}
