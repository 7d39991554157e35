/*
 * it_admstate.c — the admission leader's in-memory state against real
 * PostgreSQL: a property test.
 *
 * One gpugate (reference architecture, no Batch backend, admission every
 * 50 ms) reconciles after every cycle (GPUGATE_ADMISSION_RECONCILE_S=0):
 * each cycle compares its incrementally kept state with a full read in one
 * snapshot and counts every difference in
 * gpugate_admission_state_drift_total. A seeded random walk then mixes
 *   - submissions (random team, queue lp/hp, class default/high: high
 *     ones preempt and evict),
 *   - cancellations through the API,
 *   - finishes and Batch-side evictions (requeue, sometimes with a
 *     backoff) written straight into the jobs table, as the status sync
 *     and the notifications do: the change feed must see writers it was
 *     never told about,
 *   - two transactions committing in the opposite order of their ids
 *     (the older one, written first, commits after a cycle has read the
 *     younger one),
 *   - configuration changes (a team's budget policy, a flavor's price),
 *   - leader changes (the leader's session terminated: it re-leads and
 *     loads in full).
 * After every step: no drift counted, no quota invariant violated in the
 * database. At the end, with the load stopped, the published queue
 * positions equal the ones counted in SQL, and changes made behind the
 * feed's back (triggers off) are found by reconciliation, counted once,
 * logged with the job's id and repaired: a job changed, a job that left
 * the active states, and the same job active again.
 */
#include <check.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/harness.h"

Suite *admstate_suite(void);

#define STEPS 160
#define MAX_JOBS 400
#define LEADER_LOCK "7301002" /* control/loop.c LEADER_LOCK */
#define DRIFT_LINE "admission state drift repaired"

static const char *const teams[4] = {"team-a", "team-b", "team-c", "team-d"};

static struct h_server srv;
static char db_url[512];
static char *tokens[4], *admin;
static PGconn *pg, *pg2;

static void setup(void)
{
  static const char *const env[] = {"GPUGATE_RATE_LIMIT_RPS=0",
                                    "GPUGATE_ADMISSION_INTERVAL_MS=50",
                                    "GPUGATE_ADMISSION_RECONCILE_S=0", NULL};
  int i;

  h_db_apply("it_admstate", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv, db_url, env), 0);
  for (i = 0; i < 4; i++)
    tokens[i] = h_token(teams[i], "member", 3600);
  admin = h_token("platform", "admin", 3600);
  pg = h_db_connect(db_url);
  pg2 = h_db_connect(db_url);
  ck_assert(PQstatus(pg) == CONNECTION_OK && PQstatus(pg2) == CONNECTION_OK);
}

static void teardown(void)
{
  int i;

  h_server_stop(&srv);
  for (i = 0; i < 4; i++)
    free(tokens[i]);
  free(admin);
  PQfinish(pg);
  PQfinish(pg2);
}

static void exec_ok(PGconn *c, const char *sql, const char *param)
{
  const char *params[1] = {param};
  PGresult *res = PQexecParams(c, sql, param ? 1 : 0, NULL,
                               param ? params : NULL, NULL, NULL, 0);
  ExecStatusType st = PQresultStatus(res);

  ck_assert_msg(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql,
                PQerrorMessage(c));
  PQclear(res);
}

/* The id of a random job of ours in one of the states (NULL-ended list as
 * SQL text), or "" when none. */
static void pick(const char *states, unsigned *seed, char id[32])
{
  char sql[256];
  PGresult *res;
  int n;

  snprintf(sql, sizeof(sql),
           "SELECT id FROM jobs WHERE state IN %s ORDER BY seq", states);
  res = PQexec(pg, sql);
  ck_assert(PQresultStatus(res) == PGRES_TUPLES_OK);
  n = PQntuples(res);
  id[0] = '\0';
  if (n > 0)
    snprintf(id, 32, "%s",
             PQgetvalue(res, (int)(h_next_rand(seed) % (unsigned)n), 0));
  PQclear(res);
}

/* sql on job id ($1) behind the feed's back (triggers off: change_xid
 * stays), then wait until reconciliation has counted drift differences
 * in all, and a little longer: a repaired job is not counted again. */
static void behind_back(const char *sql, const char *id, long drift)
{
  int tries;

  exec_ok(pg, "SET session_replication_role = replica", NULL);
  exec_ok(pg, sql, id);
  exec_ok(pg, "SET session_replication_role = DEFAULT", NULL);
  for (tries = 0; tries < 50 && h_drift_total(&srv) < drift; tries++)
    h_sleep_ms(100);
  h_sleep_ms(300);
  ck_assert_int_eq(h_drift_total(&srv), drift);
  ck_assert_int_eq(h_log_count(&srv, DRIFT_LINE), drift);
}

static int team_of(const char *id)
{
  const char *params[1] = {id};
  PGresult *res = PQexecParams(pg, "SELECT team FROM jobs WHERE id = $1", 1,
                               NULL, params, NULL, NULL, 0);
  int t = 0, i;

  ck_assert(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1);
  for (i = 0; i < 4; i++)
    if (!strcmp(PQgetvalue(res, 0, 0), teams[i]))
      t = i;
  PQclear(res);
  return t;
}

static const char sql_finish[] =
    "UPDATE jobs SET state = 'SUCCEEDED', reason = NULL, finished_at = now(), "
    "updated_at = now() WHERE id = $1 AND state IN ('ADMITTED', 'QUEUED', "
    "'RUNNING')";

static const char sql_requeue[] =
    "UPDATE jobs SET state = 'PENDING', reason = 'Backoff', "
    "attempt = attempt + 1, flavor = NULL, location = NULL, borrowed = NULL, "
    "admitted_at = NULL, estimated_cost_usd = NULL, "
    "backoff_until = now() + interval '300 milliseconds', updated_at = now() "
    "WHERE id = $1 AND state IN ('ADMITTED', 'QUEUED', 'RUNNING')";

static const char sql_cancel_pending[] =
    "UPDATE jobs SET state = 'CANCELLED', reason = 'CancelledByUser', "
    "finished_at = now(), updated_at = now() WHERE id = $1 "
    "AND state = 'PENDING'";

/* One random step; its name goes to what. */
static void step(int i, unsigned *seed, const char **what)
{
  char id[32], path[200], body[400], name[32];
  unsigned k = h_next_rand(seed) % 100;
  int t = (int)(h_next_rand(seed) % 4);

  if (k < 40) {
    bool high = h_next_rand(seed) % 4 == 0;
    *what = "submit";
    snprintf(name, sizeof(name), "p-%d", i);
    h_submit_typical(&srv, teams[t], tokens[t], high ? "hp" : "lp", name,
                     high ? "high" : "default", NULL);
  } else if (k < 52) {
    *what = "cancel";
    pick("('PENDING', 'ADMITTED')", seed, id);
    if (id[0]) {
      t = team_of(id);
      snprintf(path, sizeof(path), "/v1/teams/%s/jobs/%s/cancel", teams[t], id);
      json_decref(h_call(&srv, "POST", path, tokens[t], NULL, 200));
    }
  } else if (k < 66) {
    *what = "finish";
    pick("('ADMITTED', 'QUEUED', 'RUNNING')", seed, id);
    if (id[0])
      exec_ok(pg, sql_finish, id);
  } else if (k < 76) {
    *what = "evict";
    pick("('ADMITTED', 'QUEUED', 'RUNNING')", seed, id);
    if (id[0])
      exec_ok(pg, sql_requeue, id);
  } else if (k < 84) {
    char older[32], younger[32];
    *what = "commits out of order";
    pick("('PENDING')", seed, older);
    pick("('ADMITTED', 'QUEUED', 'RUNNING')", seed, younger);
    if (!older[0] || !younger[0])
      return;
    exec_ok(pg, "BEGIN", NULL);
    exec_ok(pg, sql_cancel_pending, older); /* takes the older xid */
    exec_ok(pg2, "BEGIN", NULL);
    exec_ok(pg2, sql_finish, younger);
    exec_ok(pg2, "COMMIT", NULL);
    h_sleep_ms(150); /* cycles read the younger one meanwhile */
    exec_ok(pg, "COMMIT", NULL);
  } else if (k < 90) {
    bool hold = h_next_rand(seed) % 2 == 0;
    *what = "team budget";
    snprintf(path, sizeof(path), "/v1/teams/%s", teams[t]);
    snprintf(body, sizeof(body),
             "{\"display_name\": \"T\", \"cost_center\": \"c\", "
             "\"monthly_budget_usd\": %d, \"budget_policy\": \"%s\"}",
             hold ? 5 : 20000, hold ? "hold" : "warn");
    json_decref(h_call(&srv, "PUT", path, admin, body, 200));
  } else if (k < 95) {
    *what = "flavor price";
    snprintf(body, sizeof(body),
             "{\"provisioning_model\": \"SPOT\", \"machine_type\": "
             "\"g2-standard-24\", \"accelerator_type\": \"nvidia-l4\", "
             "\"gpus_per_vm\": 2, \"locations\": [\"us-central1\"], "
             "\"price_per_gpu_hour_usd\": 0.%02u, "
             "\"on_demand_price_per_gpu_hour_usd\": 0.71}",
             20 + h_next_rand(seed) % 20);
    json_decref(h_call(&srv, "PUT", "/v1/flavors/l4-spot", admin, body, 200));
  } else {
    *what = "leader change";
    exec_ok(pg,
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE "
            "locktype = 'advisory' AND objid = " LEADER_LOCK " AND granted "
            "AND database = (SELECT oid FROM pg_database WHERE "
            "datname = current_database())",
            NULL);
  }
}

/* Pending jobs whose published position differs from the one counted
 * here (or that have none): 0 once the leader has caught up. */
static const char sql_wrong_positions[] =
    "WITH p AS (SELECT id, row_number() OVER (PARTITION BY team, queue "
    "ORDER BY priority DESC, created_at, seq) q, row_number() OVER "
    "(PARTITION BY cluster_queue ORDER BY priority DESC, created_at, seq) c, "
    "coalesce(sum(gpu) OVER (PARTITION BY cluster_queue ORDER BY "
    "priority DESC, created_at, seq ROWS BETWEEN UNBOUNDED PRECEDING AND "
    "1 PRECEDING), 0) g FROM jobs WHERE state = 'PENDING') "
    "SELECT count(*) FROM p LEFT JOIN job_positions jp ON jp.job_id = p.id "
    "WHERE jp.job_id IS NULL OR jp.position_in_queue <> p.q "
    "OR jp.position_in_cluster_queue <> p.c OR jp.ahead_gpus <> p.g";

START_TEST(incremental_equals_full)
{
  unsigned seed = 0x1d0a5eedu;
  char first[512], id[32], path[200];
  const char *what = "";
  long long n;
  int i, tries, bad;
  long drift;

  h_sleep_ms(300);
  ck_assert_int_eq(h_drift_total(&srv), 0);
  for (i = 0; i < STEPS; i++) {
    step(i, &seed, &what);
    h_sleep_ms(60 + (long)(h_next_rand(&seed) % 60));
    drift = h_drift_total(&srv);
    ck_assert_msg(drift == 0, "step %d (%s): drift %ld", i, what, drift);
    bad = h_db_violations(pg, NULL, first, sizeof(first));
    ck_assert_msg(bad == 0, "step %d (%s): %d violations, e.g. %s", i, what,
                  bad, first);
  }
  ck_assert_int_gt(h_db_int(pg,
                            "SELECT count(*) FROM job_events WHERE reason = "
                            "'QuotaReserved'"),
                   10);

  /* settled: positions as counted here, "ahead" as aggregates */
  for (tries = 0, n = -1; tries < 100 && n != 0; tries++) {
    h_sleep_ms(100);
    n = h_db_int(pg, sql_wrong_positions);
  }
  ck_assert_msg(n == 0, "%lld pending jobs with a wrong position", n);
  /* and none kept for jobs that left the queue (pruned at reconciliation) */
  ck_assert_int_eq(h_db_int(pg,
                            "SELECT count(*) FROM job_positions p JOIN jobs j "
                            "ON j.id = p.job_id WHERE j.state <> 'PENDING'"),
                   0);
  ck_assert_int_gt(
      h_db_int(pg, "SELECT count(*) FROM jobs WHERE state = 'PENDING'"), 0);
  {
    PGresult *res = PQexec(
        pg, "SELECT j.id, j.team, p.position_in_cluster_queue, p.ahead_gpus "
            "FROM jobs j JOIN job_positions p ON p.job_id = j.id "
            "WHERE j.state = 'PENDING' ORDER BY p.position_in_cluster_queue "
            "DESC LIMIT 1");
    json_t *j, *ahead;
    int t;
    ck_assert(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1);
    snprintf(id, sizeof(id), "%s", PQgetvalue(res, 0, 0));
    t = team_of(id);
    snprintf(path, sizeof(path), "/v1/teams/%s/jobs/%s", teams[t], id);
    j = h_call(&srv, "GET", path, tokens[t], NULL, 200);
    ahead = json_object_get(j, "ahead");
    ck_assert_int_eq(json_integer_value(json_object_get(ahead, "jobs")),
                     strtoll(PQgetvalue(res, 0, 2), NULL, 10) - 1);
    ck_assert_int_eq(json_integer_value(json_object_get(ahead, "gpus")),
                     strtoll(PQgetvalue(res, 0, 3), NULL, 10));
    ck_assert_uint_eq(json_object_size(ahead), 2); /* aggregates only */
    json_decref(j);
    PQclear(res);
  }
  ck_assert_int_eq(h_drift_total(&srv), 0);
  ck_assert_int_eq(h_log_count(&srv, DRIFT_LINE), 0);

  /* behind the feed's back: reconciliation finds it, once, and repairs */
  pick("('PENDING')", &seed, id);
  ck_assert(id[0]);
  behind_back("UPDATE jobs SET priority = priority + 1 WHERE id = $1", id, 1);
  {
    char *log = h_slurp(srv.log, NULL), *line, *end;
    ck_assert_ptr_nonnull(log);
    line = strstr(log, DRIFT_LINE);
    ck_assert_ptr_nonnull(line);
    end = strchr(line, '\n');
    if (end)
      *end = '\0';
    ck_assert_msg(strstr(line, id), "the drift line names no job: %s", line);
    free(log);
  }

  /* a job that left the active states behind the feed's back: memory
   * drops it (counted once: later reconciliations find nothing) */
  behind_back("UPDATE jobs SET state = 'SUCCEEDED', finished_at = now() "
              "WHERE id = $1",
              id, 2);
  /* and back, active again without the feed knowing: memory takes it */
  behind_back("UPDATE jobs SET state = 'PENDING', finished_at = NULL "
              "WHERE id = $1",
              id, 3);
}
END_TEST

Suite *admstate_suite(void)
{
  Suite *s = suite_create("admstate");
  TCase *tc = tcase_create("property");

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, incremental_equals_full);
  suite_add_tcase(s, tc);
  return s;
}
