/*
 * it_fs_leader.c — fair share over time is exact across a change of
 * leader and a failed admission cycle (issue 34, defect 6): the usage a
 * leader writes equals the closed form of every admitted interval,
 * computed here from the jobs' own admitted_at and finished_at as
 * PostgreSQL holds them and the usage's own as_of. No figure depends on
 * how fast the machine is: the intervals are whatever they turned out to
 * be, and the closed form is evaluated at the very instants the leader
 * used.
 *
 * Cluster queue cq-l (half-life 600 s, no minimum charge) and cq-m (the
 * same with a 3 s minimum); team-a's queues la (cq-l) and ma (cq-m),
 * team-b's lb (cq-l).
 *
 *   new leader   leader A writes its usage while team-b's j3 runs (that
 *                write counts j3 accruing), then admits j1 to la and j2 to
 *                ma; all three end; A stops, its writes put back to those
 *                (A stopped before saving the rest). Leader B's usage has
 *                j1's and j2's intervals whole and j3's up to its end (the
 *                old leader charged none of it after the write); leader
 *                C, after B, charges nothing twice.
 *   failed cycle while team-b's job runs, every cycle that writes usage
 *                fails (a trigger refuses the write) for a while; once
 *                writes go through again and the job has ended, lb's
 *                usage is the closed form (the old leader lost the
 *                accrual between its last write and the cycle after the
 *                failures).
 */
#include <check.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/fs_fixture.h"
#include "tests/integration/harness.h"

Suite *fs_leader_suite(void);

#define HALF_LIFE_S 600.0
#define WAIT_MS 60000L /* any wait for a condition, on a loaded host */

static struct h_server emu, srv;
static char db_url[512];
static char *admin, *tok_a, *tok_b;
static char gcp[H_GCP_ENV][128];
static const char *env[FS_FIXTURE_ENV];
static PGconn *pg;

static void start_server(void)
{
  ck_assert_msg(h_server_start(&srv, db_url, env) == 0,
                "gpugate did not start; see %s", srv.log);
}

static void put(const char *path, const char *body, long want)
{
  json_decref(h_call(&srv, "PUT", path, admin, body, want));
}

static void setup(void)
{
  fs_fixture_start(&emu, &srv, "it_fs_leader", db_url, sizeof(db_url), gcp, env,
                   NULL);
  pg = h_db_connect(db_url);
  ck_assert_int_eq(PQstatus(pg), CONNECTION_OK);
  admin = h_token("platform", "admin", 3600);
  tok_a = h_token("team-a", "member", 3600);
  tok_b = h_token("team-b", "member", 3600);
  fs_fixture_flavor(&srv, admin);
  put("/v1/cluster-queues/cq-l",
      "{\"flavors\": [{\"name\": \"spot\", \"resources\": {\"gpu\": "
      "{\"nominal\": 8}, \"cpu_milli\": {\"nominal\": 64000}, "
      "\"memory_mib\": {\"nominal\": 262144}}}], \"usage_fair_sharing\": "
      "{\"half_life_s\": 600, \"min_charge_s\": 0}}",
      201);
  put("/v1/cluster-queues/cq-m",
      "{\"flavors\": [{\"name\": \"spot\", \"resources\": {\"gpu\": "
      "{\"nominal\": 8}, \"cpu_milli\": {\"nominal\": 64000}, "
      "\"memory_mib\": {\"nominal\": 262144}}}], \"usage_fair_sharing\": "
      "{\"half_life_s\": 600, \"min_charge_s\": 3}}",
      201);
  put("/v1/teams/team-a", "{\"budget_policy\": \"none\"}", 201);
  put("/v1/teams/team-b", "{\"budget_policy\": \"none\"}", 201);
  put("/v1/teams/team-a/queues/la", "{\"cluster_queue\": \"cq-l\"}", 201);
  put("/v1/teams/team-a/queues/ma", "{\"cluster_queue\": \"cq-m\"}", 201);
  put("/v1/teams/team-b/queues/lb", "{\"cluster_queue\": \"cq-l\"}", 201);
}

static void teardown(void)
{
  h_server_stop(&srv);
  h_server_stop(&emu);
  PQfinish(pg);
  pg = NULL;
  free(admin);
  free(tok_a);
  free(tok_b);
  admin = tok_a = tok_b = NULL;
}

static void exec_ok(const char *sql)
{
  PGresult *res = PQexec(pg, sql);

  ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK ||
                    PQresultStatus(res) == PGRES_TUPLES_OK,
                "%s: %s", sql, PQerrorMessage(pg));
  PQclear(res);
}

/* Submit a job of gpu GPUs to team's queue that runs run_ms in Batch. */
static void submit(const char *team, const char *queue, int gpu, long run_ms,
                   char id[32])
{
  char body[1024], path[128];
  json_t *j;

  snprintf(body, sizeof(body),
           "{\"name\": \"fs\", \"queue\": \"%s\", \"task_count\": 1, "
           "\"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1\", "
           "\"commands\": [\"python\", \"train.py\"], "
           "\"env\": {\"EMU_RUN_MS\": \"%ld\"}, \"cpu_milli\": 1000, "
           "\"memory_mib\": 1024, \"gpu\": %d}}",
           queue, run_ms, gpu);
  snprintf(path, sizeof(path), "/v1/teams/%s/jobs", team);
  j = h_call(&srv, "POST", path, !strcmp(team, "team-a") ? tok_a : tok_b, body,
             201);
  snprintf(id, 32, "%s", h_str(j, "id") ? h_str(j, "id") : "");
  json_decref(j);
  ck_assert_msg(id[0], "no job id");
}

/* Wait until sql (one integer) is non-zero. */
static void wait_for(const char *what, const char *sql)
{
  long long end = h_now_ms() + WAIT_MS;

  while (!h_db_int(pg, sql)) {
    ck_assert_msg(h_now_ms() < end, "%s: not after %ld ms", what, WAIT_MS);
    h_sleep_ms(50);
  }
}

static void wait_state(const char *id, const char *state)
{
  char sql[256], what[96];

  snprintf(sql, sizeof(sql),
           "SELECT count(*) FROM jobs WHERE id = '%.31s' AND state = '%s'", id,
           state);
  snprintf(what, sizeof(what), "job %.31s %s", id, state);
  wait_for(what, sql);
}

/* µs of a timestamp expression, as the leader reads its times. */
static long long us_of(const char *expr, const char *from)
{
  char sql[512];

  snprintf(sql, sizeof(sql),
           "SELECT (extract(epoch FROM %s) * 1000000)::bigint FROM %s", expr,
           from);
  return h_db_int(pg, sql);
}

/* A stored GPU usage and its as_of (µs). */
static double stored_gpu(const char *team, const char *queue, long long *as_of)
{
  char sql[256];
  PGresult *res;
  double u;

  snprintf(sql, sizeof(sql),
           "SELECT usage, (extract(epoch FROM as_of) * 1000000)::bigint FROM "
           "fair_share_usage WHERE team = '%s' AND queue = '%s' AND resource "
           "= 'gpu'",
           team, queue);
  res = PQexec(pg, sql);
  ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
  ck_assert_msg(PQntuples(res) == 1, "%s/%s: no stored usage", team, queue);
  u = strtod(PQgetvalue(res, 0, 0), NULL);
  *as_of = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
  PQclear(res);
  return u;
}

/*
 * The closed form of one admitted interval [adm, end) of gpu GPUs valued at
 * t (µs), half-life HALF_LIFE_S, minimum m s: the minimum charged at
 * admission, decayed since, and the accrual after the minimum's end.
 */
static double interval(long long adm, long long end, long long t, double gpu,
                       double m)
{
  double h = HALF_LIFE_S, a = (double)adm / 1e6, e = (double)end / 1e6,
         now = (double)t / 1e6;
  double u = gpu * m * exp2(-(now - a) / h);

  if (e > a + m)
    u += gpu * h / M_LN2 * (exp2(-(now - e) / h) - exp2(-(now - a - m) / h));
  return u;
}

/* Job id's admitted_at and finished_at (µs). */
static void times_of(const char *id, long long *adm, long long *fin)
{
  char from[96];

  snprintf(from, sizeof(from), "jobs WHERE id = '%.31s'", id);
  *adm = us_of("admitted_at", from);
  *fin = us_of("finished_at", from);
}

/* Print a usage against its closed form; whether they agree (within the
 * float text's precision and a µs of the times). */
static bool close_to(const char *what, double got, double want)
{
  bool ok = fabs(got - want) <= 1e-6 * fabs(want) + 1e-4;

  fprintf(stderr, "fs_leader %s: usage %.9g GPU-s, closed form %.9g%s\n", what,
          got, want, ok ? "" : "  <-- differs");
  return ok;
}

static void check_close(const char *what, double got, double want)
{
  ck_assert_msg(close_to(what, got, want),
                "%s: usage %.9g GPU-s, closed form %.9g (off by %.6g)", what,
                got, want, got - want);
}

/* Start a leader and wait until it has written every team queue's usage
 * (2 of team-a's, 1 of team-b's, 3 resources each). */
static void restart_leader(const char *what)
{
  char sql[512];
  long long start_us = us_of("now()", "(SELECT 1) x");

  start_server();
  snprintf(sql, sizeof(sql),
           "SELECT (count(*) = 9)::int FROM fair_share_usage WHERE as_of > "
           "to_timestamp(%lld / 1000000.0)",
           start_us);
  wait_for(what, sql);
}

START_TEST(new_leader_charges_ended)
{
  char j1[32], j2[32], j3[32], sql[512];
  long long t0, t1, adm1, fin1, adm2, fin2, adm3, fin3, t3;
  double u0l, u0m, ul, um, ub;
  int round, bad = 0;

  /* team-b's j3 runs while leader A writes its usage: that write counts
   * it accruing; the write is kept, and A hears of j3's end only after */
  submit("team-b", "lb", 2, 4000, j3);
  wait_state(j3, "RUNNING");
  snprintf(sql, sizeof(sql),
           "SELECT count(*) FROM fair_share_usage u, jobs j WHERE j.id = "
           "'%.31s' AND u.team = 'team-b' AND u.as_of > j.admitted_at",
           j3);
  wait_for("team-b's usage written with j3 running", sql);
  exec_ok("CREATE TABLE fs_saved_b AS SELECT * FROM fair_share_usage "
          "WHERE team = 'team-b'");
  /* team-a's usage as A wrote it before j1 and j2 */
  wait_for("team-a's usage written",
           "SELECT (count(*) = 6)::int FROM fair_share_usage "
           "WHERE team = 'team-a'");
  exec_ok("CREATE TABLE fs_saved AS SELECT * FROM fair_share_usage "
          "WHERE team = 'team-a'");
  u0l = stored_gpu("team-a", "la", &t0);
  u0m = stored_gpu("team-a", "ma", &t1);
  submit("team-a", "la", 2, 1500, j1);
  submit("team-a", "ma", 1, 500, j2);
  wait_state(j1, "SUCCEEDED");
  wait_state(j2, "SUCCEEDED");
  wait_state(j3, "SUCCEEDED");
  /* A stops; its writes since fs_saved and fs_saved_b are undone: it
   * stopped before saving them */
  h_server_stop(&srv);
  exec_ok("BEGIN");
  exec_ok("DELETE FROM fair_share_usage");
  exec_ok("INSERT INTO fair_share_usage SELECT * FROM fs_saved");
  exec_ok("INSERT INTO fair_share_usage SELECT * FROM fs_saved_b");
  exec_ok("COMMIT");
  times_of(j1, &adm1, &fin1);
  times_of(j2, &adm2, &fin2);
  times_of(j3, &adm3, &fin3);
  /* leader B charges what A did not write; then leader C, after B
   * stopped having written all of it, charges nothing twice */
  for (round = 0; round < 2; round++) {
    const char *who = round ? "C" : "B";
    char what[160];
    if (round)
      h_server_stop(&srv);
    snprintf(what, sizeof(what), "leader %s wrote every usage", who);
    restart_leader(what);
    /* each usage read before its closed form is evaluated at its as_of */
    ul = stored_gpu("team-a", "la", &t1);
    snprintf(what, sizeof(what),
             "leader %s: la (j1 admitted after the last write, ended)", who);
    bad += !close_to(what, ul,
                     u0l * exp2(-(double)(t1 - t0) / 1e6 / HALF_LIFE_S) +
                         interval(adm1, fin1, t1, 2, 0));
    um = stored_gpu("team-a", "ma", &t1);
    snprintf(what, sizeof(what),
             "leader %s: ma (j2 the same, inside its 3 s minimum)", who);
    bad += !close_to(what, um,
                     u0m * exp2(-(double)(t1 - t0) / 1e6 / HALF_LIFE_S) +
                         interval(adm2, fin2, t1, 1, 3));
    /* team-b had nothing before j3: its usage is j3's interval whole */
    ub = stored_gpu("team-b", "lb", &t3);
    snprintf(what, sizeof(what),
             "leader %s: lb (j3 counted by the last write, ended untold)", who);
    bad += !close_to(what, ub, interval(adm3, fin3, t3, 2, 0));
    ck_assert_msg(!bad, "leader %s: %d usages differ from their closed form",
                  who, bad);
  }
}
END_TEST

START_TEST(failed_cycle_keeps_accrual)
{
  char j[32], other[32], sql[512];
  long long t0, t1, adm, fin;
  double u0, u;

  wait_for("team-b's usage written",
           "SELECT (count(*) = 3)::int FROM fair_share_usage "
           "WHERE team = 'team-b'");
  u0 = stored_gpu("team-b", "lb", &t0);
  submit("team-b", "lb", 2, 8000, j);
  wait_state(j, "RUNNING");
  /* every write of usage fails until the trigger goes: each cycle that
   * writes it rolls back and the leader starts again from a full read */
  exec_ok("CREATE FUNCTION fs_refuse() RETURNS trigger LANGUAGE plpgsql AS "
          "$$BEGIN RAISE EXCEPTION 'refused by the test'; END$$");
  exec_ok("CREATE TRIGGER fs_refuse BEFORE INSERT OR UPDATE ON "
          "fair_share_usage FOR EACH ROW EXECUTE FUNCTION fs_refuse()");
  {
    long long end = h_now_ms() + WAIT_MS;
    while (h_log_count(&srv, "refused by the test") < 3) {
      ck_assert_msg(h_now_ms() < end, "no cycle failed on the write");
      h_sleep_ms(50);
    }
  }
  exec_ok("DROP TRIGGER fs_refuse ON fair_share_usage");
  wait_state(j, "SUCCEEDED");
  /* a job of another queue, submitted after the end: the write that
   * follows its admission comes after the leader has read the end */
  submit("team-a", "la", 1, 100, other);
  /* the leader has heard of the end: a write after the job's last one */
  snprintf(sql, sizeof(sql),
           "SELECT count(*) FROM fair_share_usage u, jobs j WHERE j.id = "
           "'%.31s' AND u.team = 'team-b' AND u.queue = 'lb' AND u.resource "
           "= 'gpu' AND u.as_of > j.updated_at",
           j);
  wait_for("usage written after the end", sql);
  times_of(j, &adm, &fin);
  u = stored_gpu("team-b", "lb", &t1);
  check_close("lb (cycles failed while it ran)", u,
              u0 * exp2(-(double)(t1 - t0) / 1e6 / HALF_LIFE_S) +
                  interval(adm, fin, t1, 2, 0));
}
END_TEST

Suite *fs_leader_suite(void)
{
  Suite *s = suite_create("fs_leader");
  TCase *tc = tcase_create("fs_leader");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, new_leader_charges_ended);
  tcase_add_test(tc, failed_cycle_keeps_accrual);
  suite_add_tcase(s, tc);
  return s;
}
