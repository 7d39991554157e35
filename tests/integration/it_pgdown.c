/*
 * it_pgdown.c — PostgreSQL goes away and comes back under a running
 * gpugate. Uses a private cluster (this suite stops it), so it does not
 * need the run's shared one. While the database is down every request that
 * needs it must answer 503 problem+json quickly — no hang, no crash — and
 * liveness stays 200; once the same cluster is back on the same port,
 * gpugate recovers by itself and the data is still there.
 */
#include <check.h>
#include <ftw.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *pgdown_suite(void);

#define DB_NAME "it_pgdown"
#define OUTAGE_MAX_MS 5000 /* each request while PostgreSQL is down */
#define RECOVERY_MAX_MS 20000

static struct h_server srv;
static char dir[64]; /* our temp dir: pg/ inside it, "passed" marker */
static char pgdir[128];
static char pg_uri[256]; /* the cluster's postgres database */
static char db_url[512];
static char *admin;

/* CREATE DATABASE in the private cluster; writes its URI into db_url. */
static void create_database(void)
{
  PGconn *pg = PQconnectdb(pg_uri);
  PGresult *res;
  const char *slash;

  ck_assert_msg(PQstatus(pg) == CONNECTION_OK, "connect %s: %s", pg_uri,
                PQerrorMessage(pg));
  res = PQexec(pg, "CREATE DATABASE " DB_NAME);
  ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "%s",
                PQresultErrorMessage(res));
  PQclear(res);
  PQfinish(pg);
  slash = strrchr(pg_uri, '/');
  ck_assert_ptr_nonnull(slash);
  snprintf(db_url, sizeof(db_url), "%.*s/" DB_NAME, (int)(slash - pg_uri),
           pg_uri);
}

static void setup(void)
{
  static const char *const env[] = {"GPUGATE_RATE_LIMIT_RPS=100000", NULL};
  char tmpl[] = "/tmp/gpugate-pgdown-XXXXXX";

  ck_assert_ptr_nonnull(mkdtemp(tmpl));
  /* tests/pg.sh runs the server as postgres, which must enter the dir */
  ck_assert_int_eq(chmod(tmpl, 0755), 0);
  snprintf(dir, sizeof(dir), "%s", tmpl);
  snprintf(pgdir, sizeof(pgdir), "%s/pg", dir);
  ck_assert_msg(h_pg_start(pgdir, pg_uri, sizeof(pg_uri)) == 0,
                "cannot start PostgreSQL in %s", pgdir);
  create_database();
  ck_assert_int_eq(h_server_start(&srv, db_url, env), 0);
  admin = h_token("platform", "admin", 3600);
  ck_assert_ptr_nonnull(admin);
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void teardown(void)
{
  char marker[128];

  h_server_stop(&srv);
  h_pg_stop(pgdir);
  free(admin);
  /* keep the cluster's log and gpugate's for a failed run */
  snprintf(marker, sizeof(marker), "%s/passed", dir);
  if (access(marker, F_OK) == 0)
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  else
    fprintf(stderr, "it_pgdown: logs kept in %s and %s\n", dir, srv.log);
}

/* One request; asserts it answered within max_ms. Returns the status. */
static long timed(const char *method, const char *path, const char *token,
                  const char *body, long max_ms, struct h_resp *r)
{
  long long t0 = h_now_ms(), took;

  ck_assert_msg(h_request(&srv, method, path, token, body, NULL, r) == 0,
                "%s %s: no answer (gpugate hung or died)", method, path);
  took = h_now_ms() - t0;
  ck_assert_msg(took <= max_ms, "%s %s took %lld ms", method, path, took);
  return r->status;
}

static void expect_503(const char *method, const char *path, const char *body)
{
  struct h_resp r;
  char v[32];

  timed(method, path, strncmp(path, "/v1/", 4) == 0 ? admin : NULL, body,
        OUTAGE_MAX_MS, &r);
  ck_assert_msg(h_is_problem(&r, 503, NULL), "%s %s: %ld %s", method, path,
                r.status, r.body);
  ck_assert_msg(h_header(&r, "Retry-After", v, sizeof(v)) != NULL,
                "%s %s: 503 without Retry-After", method, path);
  /* database internals stay in the log */
  ck_assert_ptr_null(strstr(r.body, "127.0.0.1"));
  ck_assert_ptr_null(strstr(r.body, "connection"));
  h_resp_free(&r);
}

static void expect_live(void)
{
  struct h_resp r;

  timed("GET", "/healthz", NULL, NULL, OUTAGE_MAX_MS, &r);
  ck_assert_int_eq(r.status, 200);
  h_resp_free(&r);
}

/*
 * Start the cluster again in the same directory (so on the same port) and
 * poll until gpugate, never restarted, serves from it again; meanwhile
 * only 503 problems. Then every request succeeds and nothing was lost.
 */
static void restart_and_recover(void)
{
  char uri2[256];
  struct h_resp r;
  long long t0;
  long status = 0;
  int i;

  ck_assert_int_eq(h_pg_start(pgdir, uri2, sizeof(uri2)), 0);
  ck_assert_str_eq(uri2, pg_uri);
  t0 = h_now_ms();
  while (h_now_ms() - t0 < RECOVERY_MAX_MS) {
    status = timed("GET", "/v1/flavors", admin, NULL, OUTAGE_MAX_MS, &r);
    if (status != 200)
      ck_assert_msg(h_is_problem(&r, 503, NULL), "while recovering: %ld %s",
                    status, r.body);
    h_resp_free(&r);
    if (status == 200)
      break;
    h_sleep_ms(200);
  }
  ck_assert_msg(status == 200, "no recovery within %d ms", RECOVERY_MAX_MS);
  for (i = 0; i < 8; i++) {
    h_request(&srv, "GET", "/v1/flavors/pd-spot", admin, NULL, NULL, &r);
    ck_assert_msg(r.status == 200, "after recovery: %ld %s", r.status, r.body);
    ck_assert_str_eq(
        json_string_value(json_object_get(r.json, "provisioning_model")),
        "SPOT");
    h_resp_free(&r);
  }
}

#define FLAVOR                                                                 \
  "{\"provisioning_model\": \"SPOT\", \"machine_type\": \"g2-standard-24\", "  \
  "\"accelerator_type\": \"nvidia-l4\", \"gpus_per_vm\": 2, "                  \
  "\"locations\": [\"us-central1\"], \"price_per_gpu_hour_usd\": 0.22}"

START_TEST(database_outage_and_recovery)
{
  struct h_resp r;
  char marker[128];
  int i;
  FILE *f;

  /* before: the database works */
  h_request(&srv, "PUT", "/v1/flavors/pd-spot", admin, FLAVOR, NULL, &r);
  ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
  h_resp_free(&r);
  h_request(&srv, "GET", "/v1/flavors", admin, NULL, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_uint_eq(json_array_size(json_object_get(r.json, "items")), 1);
  h_resp_free(&r);

  ck_assert_int_eq(h_pg_stop(pgdir), 0);

  /* down: more requests than pooled connections, so that every pooled
   * connection meets the dead server and every later one fails to connect */
  for (i = 0; i < 12; i++) {
    expect_503("GET", "/v1/flavors", NULL);
    expect_503("GET", "/v1/flavors/pd-spot", NULL);
    expect_503("GET", "/readyz", NULL);
    expect_live();
  }
  expect_503("PUT", "/v1/flavors/pd-other", FLAVOR);
  expect_503("DELETE", "/v1/flavors/pd-spot", NULL);
  expect_live();

  /* back: same directory, same port, gpugate not restarted */
  restart_and_recover();

  /* a quick restart nobody saw: pooled connections are all stale */
  ck_assert_int_eq(h_pg_stop(pgdir), 0);
  restart_and_recover();

  h_request(&srv, "GET", "/readyz", NULL, NULL, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  h_resp_free(&r);
  h_request(&srv, "PUT", "/v1/flavors/pd-other", admin, FLAVOR, NULL, &r);
  ck_assert_int_eq(r.status, 201);
  h_resp_free(&r);

  snprintf(marker, sizeof(marker), "%s/passed", dir);
  f = fopen(marker, "w");
  if (f)
    fclose(f);
}
END_TEST

Suite *pgdown_suite(void)
{
  Suite *s = suite_create("pgdown");
  TCase *tc = tcase_create("outage");

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, database_outage_and_recovery);
  suite_add_tcase(s, tc);
  return s;
}
