/*
 * it_bigquery.c — the BigQuery pull of the billing export against
 * build/bigquery_emulator (92 days × 24 rows, pages of 10 rows, every job
 * answering jobComplete: false once): the first `gpugate billing-sync`
 * loads every day and the cost report's totals equal the fixture's to the
 * last decimal; a revision of day D-5 makes the next sync re-read exactly
 * that day (the emulator's request log) and the totals follow it; a 503
 * in the middle of a day's pages leaves the database as it was, and the
 * next sync completes; GET /v1/billing/status reports it all; a day of a
 * closed month read again leaves that month's reports and total as they
 * were and posts the difference as corrections in the first open month;
 * and with two replicas, each pointed at an emulator of its own, only the
 * admission leader pulls.
 */
#include <check.h>
#include <libpq-fe.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *bigquery_suite(void);

#define TABLE "billing-project.billing.gcp_billing_export_v1_0123"
#define REVISED "2026-10-26" /* D-5: the fixture's last day is 2026-10-31 */

static const char *const emu_env[] = {"BQ_EMU_DAYS=92", "BQ_EMU_ROWS=24",
                                      "BQ_EMU_PAGE_ROWS=10",
                                      "BQ_EMU_INCOMPLETE_POLLS=1", NULL};

/* 4 days × 24 rows in pages of 10: the small export of most tests. */
static const char *const env4[] = {"BQ_EMU_DAYS=4", "BQ_EMU_ROWS=24",
                                   "BQ_EMU_PAGE_ROWS=10", NULL};

/* A database named name, an emulator of 4 days × 24 rows and a server that
 * does not pull (billing-sync does). */
static void start4(const char *name, char *db_url, size_t len,
                   struct h_server *emu, struct h_server *srv)
{
  static const char *const srv_env[] = {"GPUGATE_BILLING_SYNC_INTERVAL_S=0",
                                        NULL};

  ck_assert_int_eq(h_db_create(name, db_url, len), 0);
  ck_assert_int_eq(h_bq_emulator_start(emu, env4), 0);
  ck_assert_int_eq(h_server_start(srv, db_url, srv_env), 0);
}

/* gpugate billing-sync against db_url and the emulator, re-reading the
 * default 10 days (reread NULL) or reread; its exit status, its output in
 * out. */
static int billing_sync_reread(const char *db_url, const struct h_server *emu,
                               const char *reread, char *out, size_t outlen)
{
  char db[600], endpoint[128];
  const char *env[] = {db,
                       "GPUGATE_JWT_HS256_SECRET_FILE=" H_SECRET_FILE,
                       "GPUGATE_GCP_TOKEN_SOURCE=none",
                       "GPUGATE_BILLING_BIGQUERY_TABLE=" TABLE,
                       "GPUGATE_BILLING_BIGQUERY_LOCATION=US",
                       endpoint,
                       "GPUGATE_LOG_LEVEL=error",
                       reread,
                       NULL};
  const char *argv[] = {"build/gpugate", "billing-sync", NULL};

  snprintf(db, sizeof(db), "GPUGATE_DATABASE_URL=%s", db_url);
  snprintf(endpoint, sizeof(endpoint),
           "GPUGATE_BIGQUERY_ENDPOINT=http://127.0.0.1:%u", emu->port);
  return h_run(argv, env, 300000, NULL, out, outlen);
}

static int billing_sync(const char *db_url, const struct h_server *emu,
                        char *out, size_t outlen)
{
  return billing_sync_reread(db_url, emu, NULL, out, outlen);
}

/* POST an emulator control endpoint. */
static void emu_post(const struct h_server *emu, const char *path,
                     const char *body)
{
  json_t *r = h_call(emu, "POST", path, NULL, body, 200);
  json_decref(r);
}

/* The emulator's request log, emptied after. */
static json_t *take_log(const struct h_server *emu)
{
  json_t *log = h_emu_get(emu, "/emulator/requests");
  struct h_resp r;

  ck_assert_int_eq(
      h_request(emu, "DELETE", "/emulator/requests", NULL, NULL, NULL, &r), 0);
  h_resp_free(&r);
  return log;
}

/* Entries of log with call and shape (and day, when not NULL). */
static int count(json_t *log, const char *call, const char *shape,
                 const char *day)
{
  json_t *e;
  size_t i;
  int n = 0;

  json_array_foreach (log, i, e) {
    if (!strcmp(json_string_value(json_object_get(e, "call")), call) &&
        !strcmp(json_string_value(json_object_get(e, "shape")), shape) &&
        (!day || !strcmp(json_string_value(json_object_get(e, "day")), day)))
      n++;
  }
  return n;
}

/* The report's USD totals as PostgreSQL's exact text: "cost credits net". */
static void report_totals(const struct h_server *s, const char *tok, char *out,
                          size_t len)
{
  struct h_resp r;
  const char *t;

  ck_assert_int_eq(h_request(s, "GET",
                             "/v1/costs?from=2026-08-01&to=2026-10-31", tok,
                             NULL, NULL, &r),
                   0);
  ck_assert_int_eq(r.status, 200);
  /* the raw text: the numbers exactly as the server wrote them */
  t = strstr(r.body, "\"totals\":[{\"currency\":\"USD\",");
  ck_assert_ptr_nonnull(t);
  snprintf(out, len, "%.*s", (int)strcspn(t, "}"), t);
  h_resp_free(&r);
}

/* The fixture's totals in the report's form. */
static void fixture_totals(const struct h_server *emu, char *out, size_t len)
{
  json_t *t = h_emu_get(emu, "/emulator/totals");
  const char *cost = json_string_value(json_object_get(t, "cost"));
  const char *credits = json_string_value(json_object_get(t, "credits"));
  const char *net = json_string_value(json_object_get(t, "net"));
  char c[3][48];
  const char *v[3] = {cost, credits, net};
  int i;

  /* the report trims trailing zeros (trim_scale) */
  for (i = 0; i < 3; i++) {
    size_t n;
    snprintf(c[i], sizeof(c[i]), "%s", v[i]);
    n = strlen(c[i]);
    while (n > 0 && c[i][n - 1] == '0')
      c[i][--n] = '\0';
    if (n > 0 && c[i][n - 1] == '.')
      c[i][--n] = '\0';
  }
  snprintf(out, len,
           "\"totals\":[{\"currency\":\"USD\",\"cost\":%s,\"credits\":%s,"
           "\"net_cost\":%s",
           c[0], c[1], c[2]);
  json_decref(t);
}

/* The fixture's rows as NDJSON, in form ("dump": as the rows query
 * returns them, TO_JSON_STRING; "dump-export": as BigQuery's own NDJSON
 * export writes them), posted to /v1/billing/export-rows: all duplicates
 * of the pulled rows, whose key is their meaning (instants, exact
 * decimals, nulls dropped), whichever form they arrive in. */
static void upload_dump_is_duplicate(const struct h_server *srv,
                                     const char *fin, const char *form)
{
  static const char *const dump_env[] = {"BQ_EMU_DAYS=92", "BQ_EMU_ROWS=24",
                                         NULL};
  const char *argv[] = {"build/bigquery_emulator", form, NULL};
  const char *hdr[] = {"Content-Type: application/x-ndjson", NULL};
  size_t cap = (size_t)4 << 20;
  char *nd = malloc(cap);
  struct h_resp r;

  ck_assert_ptr_nonnull(nd);
  ck_assert_int_eq(h_run(argv, dump_env, 300000, NULL, nd, cap), 0);
  ck_assert_int_eq(h_request_raw(srv, "POST", "/v1/billing/export-rows", fin,
                                 nd, strlen(nd), hdr, &r),
                   0);
  ck_assert_msg(r.status == 200, "upload: %ld %s", r.status, r.body);
  ck_assert_msg(json_integer_value(json_object_get(r.json, "inserted")) == 0 &&
                    json_integer_value(json_object_get(r.json, "duplicates")) ==
                        92 * 24,
                "%s: %s", form, r.body);
  h_resp_free(&r);
  free(nd);
}

static void same_keys_as_upload(const struct h_server *srv, const char *fin)
{
  upload_dump_is_duplicate(srv, fin, "dump");
  upload_dump_is_duplicate(srv, fin, "dump-export");
}

START_TEST(test_sync_revise_fail)
{
  static const char *const srv_env[] = {"GPUGATE_BILLING_SYNC_INTERVAL_S=0",
                                        NULL};
  struct h_server emu, srv;
  char db_url[512], out[4096], before[512], after[512], want[512];
  char *fin = h_token(NULL, "finance", 3600);
  char *member = h_token("team-a", "member", 3600);
  json_t *log, *st;

  ck_assert_int_eq(h_db_create("it_bigquery", db_url, sizeof(db_url)), 0);
  ck_assert_int_eq(h_bq_emulator_start(&emu, emu_env), 0);
  ck_assert_int_eq(h_server_start(&srv, db_url, srv_env), 0);

  /* before any pull */
  st = h_call(&srv, "GET", "/v1/billing/status", fin, NULL, 200);
  ck_assert_str_eq(json_string_value(json_object_get(st, "last_outcome")),
                   "never");
  ck_assert(json_is_null(json_object_get(st, "data_through")));
  json_decref(st);
  json_decref(h_call(&srv, "GET", "/v1/billing/status", member, NULL, 403));

  /* 1. the first sync loads all 92 days */
  ck_assert_msg(billing_sync(db_url, &emu, out, sizeof(out)) == 0, "%s", out);
  log = take_log(&emu);
  ck_assert_int_eq(count(log, "query", "billing-partitions", NULL), 1);
  ck_assert_int_eq(count(log, "query", "billing-days", NULL), 1);
  ck_assert_int_eq(count(log, "query", "billing-rows", NULL), 92);
  {
    /* every job polled once (jobComplete false), then 3 pages of 10 rows */
    json_t *e;
    size_t i;
    int incomplete = 0, paged = 0;
    json_array_foreach (log, i, e) {
      if (!json_is_true(json_object_get(e, "complete")))
        incomplete++;
      if (*json_string_value(json_object_get(e, "page_token")))
        paged++;
    }
    ck_assert_int_eq(incomplete, 94); /* every jobs.query reply */
    ck_assert_int_ge(paged, 92 * 2);  /* rows: pages 2 and 3 of each day */
  }
  json_decref(log);
  fixture_totals(&emu, want, sizeof(want));
  report_totals(&srv, fin, before, sizeof(before));
  ck_assert_str_eq(before, want);
  same_keys_as_upload(&srv, fin);
  st = h_call(&srv, "GET", "/v1/billing/status", fin, NULL, 200);
  ck_assert_str_eq(json_string_value(json_object_get(st, "last_outcome")),
                   "ok");
  /* the last usage hour loaded (the day's last rows start at 23:00), not
   * the next midnight */
  ck_assert_str_eq(json_string_value(json_object_get(st, "data_through")),
                   "2026-10-31T23:00:00Z");
  ck_assert_uint_eq(json_array_size(json_object_get(st, "days")), 92);
  ck_assert_int_eq(json_integer_value(json_object_get(st, "rows")), 92 * 24);
  json_decref(st);

  /* 2. nothing changed: nothing is read */
  ck_assert_msg(billing_sync(db_url, &emu, out, sizeof(out)) == 0, "%s", out);
  log = take_log(&emu);
  ck_assert_int_eq(count(log, "query", "billing-rows", NULL), 0);
  json_decref(log);

  /* 3. a revision of D-5: exactly that day is re-read and replaced */
  emu_post(&emu, "/emulator/revise", "{\"day\": \"" REVISED "\"}");
  ck_assert_msg(billing_sync(db_url, &emu, out, sizeof(out)) == 0, "%s", out);
  log = take_log(&emu);
  ck_assert_int_eq(count(log, "query", "billing-rows", NULL), 1);
  ck_assert_int_eq(count(log, "query", "billing-rows", REVISED), 1);
  json_decref(log);
  fixture_totals(&emu, want, sizeof(want));
  report_totals(&srv, fin, after, sizeof(after));
  ck_assert_str_eq(after, want);
  ck_assert_str_ne(after, before);

  /* 4. a 503 on the second page of the re-read day (every retry): the
   * day is as before, the sync failed and says why */
  emu_post(&emu, "/emulator/revise", "{\"day\": \"2026-10-27\"}");
  /* results calls: the summary's poll and page 2, the day's poll, then
   * its page 2 fails six times over */
  emu_post(&emu, "/emulator/faults",
           "{\"status\": 503, \"count\": 6, \"skip\": 3, \"call\": "
           "\"results\"}");
  ck_assert_int_ne(billing_sync(db_url, &emu, out, sizeof(out)), 0);
  ck_assert_ptr_nonnull(strstr(out, "503"));
  report_totals(&srv, fin, before, sizeof(before));
  ck_assert_str_eq(before, after); /* as before the failed sync */
  st = h_call(&srv, "GET", "/v1/billing/status", fin, NULL, 200);
  ck_assert_str_eq(json_string_value(json_object_get(st, "last_outcome")),
                   "failed");
  ck_assert_ptr_nonnull(
      strstr(json_string_value(json_object_get(st, "last_error")), "503"));
  json_decref(st);
  json_decref(take_log(&emu));

  /* 5. the next sync completes: only the revised day again */
  ck_assert_msg(billing_sync(db_url, &emu, out, sizeof(out)) == 0, "%s", out);
  log = take_log(&emu);
  ck_assert_int_eq(count(log, "query", "billing-rows", NULL), 1);
  ck_assert_int_eq(count(log, "query", "billing-rows", "2026-10-27"), 1);
  json_decref(log);
  fixture_totals(&emu, want, sizeof(want));
  report_totals(&srv, fin, after, sizeof(after));
  ck_assert_str_eq(after, want);

  h_server_stop(&srv);
  h_server_stop(&emu);
  free(fin);
  free(member);
}
END_TEST

/* The day entry of a status, or NULL. */
static json_t *status_day(json_t *st, const char *day)
{
  json_t *d;
  size_t i;

  json_array_foreach (json_object_get(st, "days"), i, d) {
    if (!strcmp(json_string_value(json_object_get(d, "day")), day))
      return d;
  }
  return NULL;
}

/*
 * BigQuery's own encoding (ZetaSQL TO_JSON_STRING): every cost and credit
 * amount of the fixture has a fractional part, so each arrives quoted
 * ("cost":"0.001234"), and NULL fields are present. A pull of 4 days × 24
 * rows stores all 96 rows, every day reconciles with the source's count and
 * sums, and the report equals the fixture's exact totals.
 */
START_TEST(test_real_encoding)
{
  struct h_server emu, srv;
  char db_url[512], out[4096], got[512], want[512];
  char *fin = h_token(NULL, "finance", 3600);
  json_t *st, *d;
  size_t i;

  start4("it_bigquery_enc", db_url, sizeof(db_url), &emu, &srv);
  ck_assert_msg(billing_sync(db_url, &emu, out, sizeof(out)) == 0, "%s", out);
  st = h_call(&srv, "GET", "/v1/billing/status", fin, NULL, 200);
  ck_assert_str_eq(json_string_value(json_object_get(st, "last_outcome")),
                   "ok");
  ck_assert_int_eq(json_integer_value(json_object_get(st, "rows")), 96);
  ck_assert_int_eq(json_integer_value(json_object_get(st, "rows_read")), 96);
  ck_assert_uint_eq(json_array_size(json_object_get(st, "days")), 4);
  json_array_foreach (json_object_get(st, "days"), i, d)
    ck_assert_msg(json_is_true(json_object_get(d, "reconciled")),
                  "day %s not reconciled",
                  json_string_value(json_object_get(d, "day")));
  json_decref(st);
  fixture_totals(&emu, want, sizeof(want));
  report_totals(&srv, fin, got, sizeof(got));
  ck_assert_str_eq(got, want);
  h_server_stop(&srv);
  h_server_stop(&emu);
  free(fin);
}
END_TEST

/*
 * A day whose rows do not add up to the source's own figures (the emulator
 * loses one row of 2026-08-02 in transit): that day is rolled back, the
 * sync fails naming it, /v1/billing/status says reconciled false with the
 * source's and the stored figures as exact decimals, the gauge counts it;
 * the other days commit. Once the rows arrive whole, the next sync
 * reconciles it and the gauge is 0.
 */
START_TEST(test_unreconciled_day)
{
  struct h_server emu, srv;
  char db_url[512], endpoint[128], got[512], want[512];
  char *fin = h_token(NULL, "finance", 3600);
  char *adm = h_token(NULL, "admin", 3600);
  const char *srv_env[] = {endpoint,
                           "GPUGATE_GCP_TOKEN_SOURCE=none",
                           "GPUGATE_BILLING_BIGQUERY_TABLE=" TABLE,
                           "GPUGATE_BILLING_SYNC_INTERVAL_S=1",
                           "GPUGATE_ADMISSION_INTERVAL_MS=200",
                           NULL};
  json_t *st = NULL, *d, *src, *sto;
  struct h_resp r;
  int tries;

  ck_assert_int_eq(h_db_create("it_bigquery_unrec", db_url, sizeof(db_url)), 0);
  ck_assert_int_eq(h_bq_emulator_start(&emu, env4), 0);
  emu_post(&emu, "/emulator/config", "{\"short_day\": \"2026-08-02\"}");
  snprintf(endpoint, sizeof(endpoint),
           "GPUGATE_BIGQUERY_ENDPOINT=http://127.0.0.1:%u", emu.port);
  ck_assert_int_eq(h_server_start(&srv, db_url, srv_env), 0);
  /* the leader pulls at once (and again every second) */
  for (tries = 0; tries < 200; tries++) {
    json_decref(st);
    st = h_call(&srv, "GET", "/v1/billing/status", fin, NULL, 200);
    if (!strcmp(json_string_value(json_object_get(st, "last_outcome")),
                "failed"))
      break;
    h_sleep_ms(100);
  }
  ck_assert_str_eq(json_string_value(json_object_get(st, "last_outcome")),
                   "failed");
  ck_assert_msg(strstr(json_string_value(json_object_get(st, "last_error")),
                       "2026-08-02"),
                "%s", json_string_value(json_object_get(st, "last_error")));
  ck_assert_int_eq(json_integer_value(json_object_get(st, "rows")), 72);
  d = status_day(st, "2026-08-02");
  ck_assert_ptr_nonnull(d);
  ck_assert(json_is_false(json_object_get(d, "reconciled")));
  src = json_object_get(d, "source");
  sto = json_object_get(d, "stored");
  ck_assert_int_eq(json_integer_value(json_object_get(src, "rows")), 24);
  ck_assert_int_eq(json_integer_value(json_object_get(sto, "rows")), 23);
  ck_assert(json_is_string(json_object_get(src, "cost")));
  ck_assert(json_is_string(json_object_get(sto, "credits")));
  ck_assert_str_ne(json_string_value(json_object_get(src, "cost")),
                   json_string_value(json_object_get(sto, "cost")));
  ck_assert(json_is_true(
      json_object_get(status_day(st, "2026-08-01"), "reconciled")));
  json_decref(st);
  st = NULL;
  ck_assert_int_eq(h_request(&srv, "GET", "/metrics", adm, NULL, NULL, &r), 0);
  ck_assert_msg(strstr(r.body, "gpugate_billing_days_unreconciled 1"), "%.300s",
                r.body);
  h_resp_free(&r);

  /* the rows arrive whole: the next pull reconciles the day */
  emu_post(&emu, "/emulator/config", "{\"short_day\": null}");
  for (tries = 0; tries < 200; tries++) {
    json_decref(st);
    st = h_call(&srv, "GET", "/v1/billing/status", fin, NULL, 200);
    if (json_is_true(
            json_object_get(status_day(st, "2026-08-02"), "reconciled")))
      break;
    h_sleep_ms(100);
  }
  ck_assert_int_eq(json_integer_value(json_object_get(st, "rows")), 96);
  d = status_day(st, "2026-08-02");
  ck_assert(json_is_true(json_object_get(d, "reconciled")));
  ck_assert_ptr_null(json_object_get(d, "source"));
  json_decref(st);
  for (tries = 0; tries < 200; tries++) {
    bool zero;
    ck_assert_int_eq(h_request(&srv, "GET", "/metrics", adm, NULL, NULL, &r),
                     0);
    zero = strstr(r.body, "gpugate_billing_days_unreconciled 0") != NULL;
    h_resp_free(&r);
    if (zero)
      break;
    h_sleep_ms(100);
  }
  ck_assert_int_lt(tries, 200);
  fixture_totals(&emu, want, sizeof(want));
  report_totals(&srv, fin, got, sizeof(got));
  ck_assert_str_eq(got, want);
  h_server_stop(&srv);
  h_server_stop(&emu);
  free(fin);
  free(adm);
}
END_TEST

static long long fixture_net(const struct h_server *emu);
static long long month_amount(const struct h_server *s, const char *tok,
                              const char *month, const char *amount);

/* gpugate billing-sync on a thread of its own (two at once). */
struct sync_run {
  const char *db_url;
  const struct h_server *emu;
  int rc;
  char out[4096];
  pthread_t thread;
};

static void *sync_thread(void *arg)
{
  struct sync_run *r = arg;

  r->rc = billing_sync(r->db_url, r->emu, r->out, sizeof(r->out));
  return NULL;
}

/* Whether Σ cost of every rollup equals Σ cost of every billing row (a
 * rollup is the sum of its rows), "t" or "f", then both, into out. */
static void rollups_vs_rows(const char *db_url, char *out, size_t len)
{
  PGconn *pg = PQconnectdb(db_url);
  PGresult *res = PQexec(
      pg, "SELECT (r = b)::text || ' ' || r::text || ' ' || b::text FROM"
          " (SELECT (SELECT coalesce(sum(cost), 0) FROM cost_rollups) AS r,"
          " (SELECT coalesce(sum(cost), 0) FROM billing_rows) AS b) s");

  ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
  snprintf(out, len, "%s", PQgetvalue(res, 0, 0));
  PQclear(res);
  PQfinish(pg);
}

/*
 * Two pulls at once (the leader's and `gpugate billing-sync`, or an old
 * and a new leader) after every day was revised, pages slow enough that
 * both are inside the same day together: both succeed, each day is
 * replaced once, and the rollups equal the rows and the fixture's totals
 * (before: one pull's sums were added onto the other's).
 */
START_TEST(test_two_pulls_at_once)
{
  static const char *const days[4] = {"2026-08-01", "2026-08-02", "2026-08-03",
                                      "2026-08-04"};
  struct h_server emu, srv;
  struct sync_run run[2];
  char db_url[512], out[4096], got[512], want[512], sums[256];
  char *fin = h_token(NULL, "finance", 3600);
  int i, round;

  start4("it_bigquery_two", db_url, sizeof(db_url), &emu, &srv);
  ck_assert_msg(billing_sync(db_url, &emu, out, sizeof(out)) == 0, "%s", out);
  emu_post(&emu, "/emulator/config", "{\"page_delay_ms\": 60}");
  for (round = 0; round < 2; round++) {
    char body[64];
    for (i = 0; i < 4; i++) {
      snprintf(body, sizeof(body), "{\"day\": \"%s\"}", days[i]);
      emu_post(&emu, "/emulator/revise", body);
    }
    for (i = 0; i < 2; i++) {
      memset(&run[i], 0, sizeof(run[i]));
      run[i].db_url = db_url;
      run[i].emu = &emu;
      ck_assert_int_eq(
          pthread_create(&run[i].thread, NULL, sync_thread, &run[i]), 0);
    }
    for (i = 0; i < 2; i++) {
      pthread_join(run[i].thread, NULL);
      ck_assert_msg(run[i].rc == 0, "pull %d: %s", i, run[i].out);
    }
    rollups_vs_rows(db_url, sums, sizeof(sums));
    ck_assert_msg(sums[0] == 't', "rollups vs rows: %s", sums);
    fixture_totals(&emu, want, sizeof(want));
    report_totals(&srv, fin, got, sizeof(got));
    ck_assert_str_eq(got, want);
  }
  h_server_stop(&srv);
  h_server_stop(&emu);
  free(fin);
}
END_TEST

/* POST rows as NDJSON to /v1/billing/export-rows; the report. */
static json_t *upload(const struct h_server *srv, const char *tok,
                      const char *nd)
{
  const char *hdr[] = {"Content-Type: application/x-ndjson", NULL};
  struct h_resp r;
  json_t *rep;

  ck_assert_int_eq(h_request_raw(srv, "POST", "/v1/billing/export-rows", tok,
                                 nd, strlen(nd), hdr, &r),
                   0);
  ck_assert_msg(r.status == 200, "upload: %ld %s", r.status, r.body);
  rep = json_incref(r.json);
  h_resp_free(&r);
  return rep;
}

/* A row of another billing account (uploaded, not in the export) on
 * 2026-08-02, cost 100 for team-z. */
#define OTHER_ROW                                                              \
  "{\"billing_account_id\":\"OTHER-ACCOUNT-0001\","                            \
  "\"service\":{\"id\":\"S\",\"description\":\"Compute Engine\"},"             \
  "\"sku\":{\"id\":\"K\",\"description\":\"Nvidia L4 GPU\"},"                  \
  "\"usage_start_time\":\"2026-08-02 05:00:00 UTC\","                          \
  "\"labels\":[{\"key\":\"gpugate-team\",\"value\":\"team-z\"}],"              \
  "\"cost\":100,\"currency\":\"USD\",\"invoice\":{\"month\":\"202608\"},"      \
  "\"credits\":[]}\n"

/*
 * A re-read replaces the rows of the pulled billing account only: a row
 * of another account uploaded for the same day stays, counted once, and
 * when the month is closed its frozen amount is never posted back as a
 * correction (before: the re-read deleted it, and took it back as a
 * negative correction).
 */
START_TEST(test_reread_keeps_other_accounts)
{
  static const char reread[] = "GPUGATE_BILLING_REREAD_DAYS=100";
  struct h_server emu, srv;
  char db_url[512], out[4096];
  char *fin = h_token(NULL, "finance", 3600);
  long long net, other;
  json_t *rep;

  start4("it_bigquery_acct", db_url, sizeof(db_url), &emu, &srv);
  ck_assert_msg(billing_sync_reread(db_url, &emu, reread, out, sizeof(out)) ==
                    0,
                "%s", out);
  rep = upload(&srv, fin, OTHER_ROW);
  ck_assert_int_eq(json_integer_value(json_object_get(rep, "inserted")), 1);
  json_decref(rep);
  other = 100 * 1000000LL;

  /* an open month: the day re-read, the other account's row still there */
  emu_post(&emu, "/emulator/revise", "{\"day\": \"2026-08-02\"}");
  ck_assert_msg(billing_sync_reread(db_url, &emu, reread, out, sizeof(out)) ==
                    0,
                "%s", out);
  net = fixture_net(&emu);
  ck_assert_int_eq(month_amount(&srv, fin, "2026-08", "total"), net + other);
  rep = upload(&srv, fin, OTHER_ROW); /* still stored: a duplicate */
  ck_assert_int_eq(json_integer_value(json_object_get(rep, "duplicates")), 1);
  json_decref(rep);

  /* a closed month: the re-read's corrections are the export's change
   * only */
  json_decref(
      h_call(&srv, "POST", "/v1/costs/months/2026-08/close", fin, NULL, 200));
  emu_post(&emu, "/emulator/revise", "{\"day\": \"2026-08-02\"}");
  ck_assert_msg(billing_sync_reread(db_url, &emu, reread, out, sizeof(out)) ==
                    0,
                "%s", out);
  ck_assert_int_eq(month_amount(&srv, fin, "2026-08", "total"), net + other);
  ck_assert_int_eq(month_amount(&srv, fin, "2026-09", "corrections"),
                   fixture_net(&emu) - net);
  h_server_stop(&srv);
  h_server_stop(&emu);
  free(fin);
}
END_TEST

/* Two rows of an old upload, written as Jansson's sorted compact dump, so
 * that SHA-256 of the line is the key gpugate gave a row before keys were
 * a row's meaning (0004: "SHA-256 of the canonical JSON"). */
#define OLD_ROWS                                                               \
  "{\"billing_account_id\":\"OLD-ACCOUNT-0001\",\"cost\":1.25,"                \
  "\"credits\":[],\"currency\":\"USD\",\"invoice\":{\"month\":\"202608\"},"    \
  "\"labels\":[{\"key\":\"gpugate-team\",\"value\":\"team-o\"}],"              \
  "\"service\":{\"description\":\"Compute Engine\",\"id\":\"S\"},"             \
  "\"sku\":{\"description\":\"Nvidia L4 GPU\",\"id\":\"K\"},"                  \
  "\"usage_start_time\":\"2026-08-03 05:00:00 UTC\"}\n"                        \
  "{\"billing_account_id\":\"OLD-ACCOUNT-0001\",\"cost\":2.5,"                 \
  "\"credits\":[],\"currency\":\"USD\",\"invoice\":{\"month\":\"202608\"},"    \
  "\"labels\":[{\"key\":\"gpugate-team\",\"value\":\"team-o\"}],"              \
  "\"service\":{\"description\":\"Compute Engine\",\"id\":\"S\"},"             \
  "\"sku\":{\"description\":\"Nvidia L4 GPU\",\"id\":\"K\"},"                  \
  "\"usage_start_time\":\"2026-08-03 06:00:00 UTC\"}\n"

/*
 * Rows stored before keys were a row's meaning keep no old key after the
 * upgrade: `gpugate migrate` re-keys them once (with the same C key as an
 * upload), so the same file uploaded again is all duplicates and the
 * totals stay (before: the rows were counted a second time).
 */
START_TEST(test_old_keys_rekeyed)
{
  struct h_server srv;
  char db_url[512], out[4096];
  const char *migrate[] = {"migrate", NULL};
  char *fin = h_token(NULL, "finance", 3600);
  long long total, old_keys, recorded;
  json_t *rep;
  PGconn *pg;
  PGresult *res;

  ck_assert_int_eq(h_db_create("it_bigquery_rekey", db_url, sizeof(db_url)), 0);
  ck_assert_int_eq(h_server_start(&srv, db_url, NULL), 0);
  rep = upload(&srv, fin, OLD_ROWS);
  ck_assert_int_eq(json_integer_value(json_object_get(rep, "inserted")), 2);
  json_decref(rep);
  total = month_amount(&srv, fin, "2026-08", "total");
  h_server_stop(&srv);

  /* as a database from before the upgrade holds them: the old keys, and
   * no re-key recorded */
  pg = PQconnectdb(db_url);
  ck_assert_int_eq(PQstatus(pg), CONNECTION_OK);
  res = PQexec(pg, "UPDATE billing_rows"
                   " SET row_hash = sha256(convert_to(row, 'UTF8'));"
                   "DO $$ BEGIN IF to_regclass('billing_rekey') IS NOT NULL"
                   " THEN DELETE FROM billing_rekey; END IF; END $$");
  ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "%s",
                PQerrorMessage(pg));
  PQclear(res);

  ck_assert_msg(h_gpugate(db_url, migrate, out, sizeof(out)) == 0, "%s", out);
  old_keys = h_db_int(pg, "SELECT count(*) FROM billing_rows"
                          " WHERE row_hash = sha256(convert_to(row, 'UTF8'))");
  recorded =
      h_db_int(pg, "SELECT rekeyed FROM billing_rekey WHERE version = 2");
  PQfinish(pg);

  ck_assert_int_eq(h_server_start(&srv, db_url, NULL), 0);
  rep = upload(&srv, fin, OLD_ROWS);
  ck_assert_msg(
      json_integer_value(json_object_get(rep, "inserted")) == 0 &&
          json_integer_value(json_object_get(rep, "duplicates")) == 2,
      "re-upload after the upgrade: inserted %lld, duplicates %lld",
      (long long)json_integer_value(json_object_get(rep, "inserted")),
      (long long)json_integer_value(json_object_get(rep, "duplicates")));
  json_decref(rep);
  ck_assert_int_eq(month_amount(&srv, fin, "2026-08", "total"), total);
  ck_assert_int_eq(old_keys, 0); /* none left with its old key */
  ck_assert_int_eq(recorded, 2); /* and the re-key recorded: run once */
  h_server_stop(&srv);
  free(fin);
}
END_TEST

/* OLD_ROWS' first row in another form of the same meaning (an RFC 3339
 * instant, the cost with a trailing zero), as a pull stored it. */
#define OLD_ROW_OTHER_FORM                                                     \
  "{\"billing_account_id\":\"OLD-ACCOUNT-0001\",\"cost\":1.250,"               \
  "\"credits\":[],\"currency\":\"USD\",\"invoice\":{\"month\":\"202608\"},"    \
  "\"labels\":[{\"key\":\"gpugate-team\",\"value\":\"team-o\"}],"              \
  "\"service\":{\"description\":\"Compute Engine\",\"id\":\"S\"},"             \
  "\"sku\":{\"description\":\"Nvidia L4 GPU\",\"id\":\"K\"},"                  \
  "\"usage_start_time\":\"2026-08-03T05:00:00Z\"}\n"

/*
 * A row stored twice before the upgrade (one meaning in two forms, each
 * under the key of its text) is counted once after it: the re-key keeps
 * one and takes the other's amounts back out of the rollups (before: the
 * double stayed, kept under its old key, and every report counted it
 * twice, until a pull re-read its day, which an uploaded day never is).
 */
START_TEST(test_old_doubles_counted_once)
{
  struct h_server srv;
  char db_url[512], out[4096];
  const char *migrate[] = {"migrate", NULL};
  char *fin = h_token(NULL, "finance", 3600);
  long long once, twice, after, left_old, rows;
  json_t *rep;
  PGconn *pg;
  PGresult *res;

  ck_assert_int_eq(h_db_create("it_bigquery_doubles", db_url, sizeof(db_url)),
                   0);
  ck_assert_int_eq(h_server_start(&srv, db_url, NULL), 0);
  rep = upload(&srv, fin, OLD_ROWS);
  ck_assert_int_eq(json_integer_value(json_object_get(rep, "inserted")), 2);
  json_decref(rep);
  once = month_amount(&srv, fin, "2026-08", "total");
  /* as before the upgrade: keys of the text, so the other form is new */
  pg = PQconnectdb(db_url);
  ck_assert_int_eq(PQstatus(pg), CONNECTION_OK);
  res = PQexec(pg, "UPDATE billing_rows"
                   " SET row_hash = sha256(convert_to(row, 'UTF8'))");
  ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "%s",
                PQerrorMessage(pg));
  PQclear(res);
  rep = upload(&srv, fin, OLD_ROW_OTHER_FORM);
  ck_assert_int_eq(json_integer_value(json_object_get(rep, "inserted")), 1);
  json_decref(rep);
  twice = month_amount(&srv, fin, "2026-08", "total");
  ck_assert_int_eq(twice - once, 1250000); /* the double, as stored then */
  h_server_stop(&srv);
  res = PQexec(pg, "UPDATE billing_rows"
                   " SET row_hash = sha256(convert_to(row, 'UTF8'));"
                   "DELETE FROM billing_rekey");
  ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "%s",
                PQerrorMessage(pg));
  PQclear(res);

  ck_assert_msg(h_gpugate(db_url, migrate, out, sizeof(out)) == 0, "%s", out);
  left_old =
      h_db_int(pg, "SELECT left_old FROM billing_rekey WHERE version = 2");
  rows = h_db_int(pg, "SELECT count(*) FROM billing_rows");
  PQfinish(pg);
  ck_assert_int_eq(h_server_start(&srv, db_url, NULL), 0);
  after = month_amount(&srv, fin, "2026-08", "total");
  ck_assert_msg(after == once,
                "August after the re-key: %lld, the rows once: %lld (twice: "
                "%lld)",
                after, once, twice);
  ck_assert_int_eq(left_old, 1); /* the double, found */
  ck_assert_int_eq(rows, 2);     /* and gone */
  rep = upload(&srv, fin, OLD_ROW_OTHER_FORM);
  ck_assert_int_eq(json_integer_value(json_object_get(rep, "duplicates")), 1);
  json_decref(rep);
  h_server_stop(&srv);
  free(fin);
}
END_TEST

/*
 * A days answer without the stored days (a swapped view, a wrong
 * location) deletes nothing: the sync is refused and says so, the rows
 * and the report stay (before: every stored day was taken as gone and
 * emptied).
 */
START_TEST(test_empty_answer_refused)
{
  struct h_server emu, srv;
  char db_url[512], out[4096], before[512], after[512];
  char *fin = h_token(NULL, "finance", 3600);
  json_t *st;

  start4("it_bigquery_empty", db_url, sizeof(db_url), &emu, &srv);
  ck_assert_msg(billing_sync(db_url, &emu, out, sizeof(out)) == 0, "%s", out);
  report_totals(&srv, fin, before, sizeof(before));
  emu_post(&emu, "/emulator/config", "{\"empty_summary\": true}");
  ck_assert_int_ne(billing_sync(db_url, &emu, out, sizeof(out)), 0);
  ck_assert_msg(strstr(out, "refused"), "%s", out);
  st = h_call(&srv, "GET", "/v1/billing/status", fin, NULL, 200);
  ck_assert_int_eq(json_integer_value(json_object_get(st, "rows")), 96);
  ck_assert_str_eq(json_string_value(json_object_get(st, "last_outcome")),
                   "failed");
  json_decref(st);
  report_totals(&srv, fin, after, sizeof(after));
  ck_assert_str_eq(after, before);
  h_server_stop(&srv);
  h_server_stop(&emu);
  free(fin);
}
END_TEST

/* Σ bytes of the jobs.query calls in the emulator's log (emptied). */
static long long logged_bytes(const struct h_server *emu)
{
  json_t *log = take_log(emu), *e;
  long long sum = 0;
  size_t i;

  json_array_foreach (log, i, e) {
    if (!strcmp(json_string_value(json_object_get(e, "call")), "query"))
      sum += json_integer_value(json_object_get(e, "bytes"));
  }
  json_decref(log);
  return sum;
}

/*
 * Bytes processed per sync are bounded by the re-read window, not the
 * table's history: a 2-year and a 2-week export cost the same per sync
 * once loaded (the emulator bills the partitions a query's _PARTITIONTIME
 * filter keeps; before, no filter: the whole table, per query), the
 * status reports them, and maximumBytesBilled is set on every query.
 */
START_TEST(test_bytes_bounded_by_window)
{
  static const char *const env_long[] = {"BQ_EMU_DAYS=730", "BQ_EMU_ROWS=4",
                                         "BQ_EMU_PAGE_ROWS=1000", NULL};
  static const char *const env_short[] = {"BQ_EMU_DAYS=14", "BQ_EMU_ROWS=4",
                                          "BQ_EMU_PAGE_ROWS=1000", NULL};
  static const char *const srv_env[] = {"GPUGATE_BILLING_SYNC_INTERVAL_S=0",
                                        NULL};
  const char *const *envs[2] = {env_long, env_short};
  const char *last[2] = {"2028-07-30", "2026-08-14"};
  long long bytes[2];
  int k;

  for (k = 0; k < 2; k++) {
    struct h_server emu, srv;
    char db_url[512], out[4096], name[32], body[64];
    char *fin = h_token(NULL, "finance", 3600);
    json_t *st;
    snprintf(name, sizeof(name), "it_bigquery_bytes%d", k);
    ck_assert_int_eq(h_db_create(name, db_url, sizeof(db_url)), 0);
    ck_assert_int_eq(h_bq_emulator_start(&emu, envs[k]), 0);
    ck_assert_int_eq(h_server_start(&srv, db_url, srv_env), 0);
    ck_assert_msg(billing_sync(db_url, &emu, out, sizeof(out)) == 0, "%s", out);
    json_decref(take_log(&emu));
    snprintf(body, sizeof(body), "{\"day\": \"%s\"}", last[k]);
    emu_post(&emu, "/emulator/revise", body);
    ck_assert_msg(billing_sync(db_url, &emu, out, sizeof(out)) == 0, "%s", out);
    bytes[k] = logged_bytes(&emu);
    st = h_call(&srv, "GET", "/v1/billing/status", fin, NULL, 200);
    ck_assert_int_eq(json_integer_value(json_object_get(st, "bytes_processed")),
                     bytes[k]);
    json_decref(st);
    h_server_stop(&srv);
    h_server_stop(&emu);
    free(fin);
  }
  ck_assert_int_gt(bytes[1], 0);
  ck_assert_msg(bytes[0] == bytes[1],
                "2 years: %lld bytes per sync, 2 weeks: %lld", bytes[0],
                bytes[1]);
}
END_TEST

/*
 * A late row for an old usage day (2026-08-06, outside the re-read
 * window) exported in a recent partition (2026-08-29, inside it) is found:
 * the pull keys on the export's partitions and their MAX(export_time), as
 * Koku does, and re-reads the usage days a moved partition holds (before:
 * the summary read the window's usage days only, and the row was never
 * loaded).
 */
START_TEST(test_late_row_found)
{
  static const char *const env30[] = {"BQ_EMU_DAYS=30", "BQ_EMU_ROWS=24",
                                      "BQ_EMU_PAGE_ROWS=1000", NULL};
  static const char *const srv_env[] = {"GPUGATE_BILLING_SYNC_INTERVAL_S=0",
                                        NULL};
  struct h_server emu, srv;
  char db_url[512], out[4096];
  char *fin = h_token(NULL, "finance", 3600);
  long long before;
  json_t *log;
  int reread;

  ck_assert_int_eq(h_db_create("it_bigquery_late", db_url, sizeof(db_url)), 0);
  ck_assert_int_eq(h_bq_emulator_start(&emu, env30), 0);
  ck_assert_int_eq(h_server_start(&srv, db_url, srv_env), 0);
  ck_assert_msg(billing_sync(db_url, &emu, out, sizeof(out)) == 0, "%s", out);
  before = month_amount(&srv, fin, "2026-08", "total");
  ck_assert_int_eq(before, fixture_net(&emu));
  json_decref(take_log(&emu));

  emu_post(&emu, "/emulator/late",
           "{\"day\": \"2026-08-06\", \"partition\": \"2026-08-29\"}");
  ck_assert_msg(billing_sync(db_url, &emu, out, sizeof(out)) == 0, "%s", out);
  log = take_log(&emu);
  reread = count(log, "query", "billing-rows", "2026-08-06");
  json_decref(log);
  ck_assert_msg(month_amount(&srv, fin, "2026-08", "total") ==
                    fixture_net(&emu),
                "late row: stored %lld, export %lld (before it: %lld); "
                "2026-08-06 re-read %d times",
                month_amount(&srv, fin, "2026-08", "total"), fixture_net(&emu),
                before, reread);
  ck_assert_int_eq(reread, 1);
  h_server_stop(&srv);
  h_server_stop(&emu);
  free(fin);
}
END_TEST

/*
 * maximumBytesBilled is sent with every query: a limit below what the
 * first (whole-table) read scans makes BigQuery refuse it before it runs,
 * and the sync fails saying so.
 */
START_TEST(test_max_bytes_billed)
{
  static const char *const env4_1k[] = {"BQ_EMU_DAYS=4", "BQ_EMU_ROWS=24",
                                        NULL};
  struct h_server emu;
  char db_url[512], out[4096];

  ck_assert_int_eq(h_db_create("it_bigquery_maxb", db_url, sizeof(db_url)), 0);
  ck_assert_int_eq(h_bq_emulator_start(&emu, env4_1k), 0);
  ck_assert_int_ne(billing_sync_reread(db_url, &emu,
                                       "GPUGATE_BILLING_MAX_BYTES_BILLED=1000",
                                       out, sizeof(out)),
                   0);
  ck_assert_msg(strstr(out, "bytes billed"), "%s", out);
  ck_assert_msg(billing_sync(db_url, &emu, out, sizeof(out)) == 0, "%s", out);
  h_server_stop(&emu);
}
END_TEST

/* Whether body conforms to the BigQuery v2 message named msg, as the Cloud
 * SDK's generated bigquery_v2_messages define it (no field they do not
 * define, every value of its type): 1 yes, 0 no (out says why), -1 the SDK
 * is not installed. */
static int conforms(const char *msg, const char *body, char *out, size_t outlen)
{
  char path[] = "/tmp/gpugate-bqmsg.XXXXXX", cmd[512];
  const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  const char *env[] = {"PYTHONPATH=/usr/lib/google-cloud-sdk/lib/third_party:"
                       "/usr/lib/google-cloud-sdk/lib",
                       NULL};
  int fd = mkstemp(path), rc;
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

  ck_assert_ptr_nonnull(f);
  fputs(body, f);
  fclose(f);
  snprintf(cmd, sizeof(cmd),
           "python3 tests/emulator/bq_messages_check.py %s < %s", msg, path);
  rc = h_run(argv, env, 300000, NULL, out, outlen);
  unlink(path);
  return rc == 0 ? 1 : rc == 2 ? -1 : 0;
}

/*
 * The emulator's request and response bodies, held to Google's own message
 * definitions (the Cloud SDK's bigquery_v2_messages.py through apitools'
 * encoding): gpugate's jobs.query request as the emulator received it
 * (QueryRequest), and the emulator's jobs.query (QueryResponse),
 * getQueryResults (GetQueryResultsResponse), jobs.insert and jobs.get
 * (Job) answers. Skipped, saying so, where the SDK is not installed.
 */
START_TEST(test_messages_conform)
{
  struct h_server emu;
  char db_url[512], out[4096], why[4096], url[256];
  json_t *req, *resp;
  struct h_resp r;
  char *text;
  const char *job;
  int rc;

  ck_assert_int_eq(h_db_create("it_bigquery_msgs", db_url, sizeof(db_url)), 0);
  ck_assert_int_eq(h_bq_emulator_start(&emu, env4), 0);
  ck_assert_msg(billing_sync(db_url, &emu, out, sizeof(out)) == 0, "%s", out);
  req = h_emu_get(&emu, "/emulator/last_query");
  ck_assert_ptr_nonnull(json_object_get(req, "maximumBytesBilled"));
  text = json_dumps(req, JSON_COMPACT);
  rc = conforms("QueryRequest", text, why, sizeof(why));
  free(text);
  if (rc < 0) {
    fprintf(stderr, "bigquery: %s: skipping the message checks\n", why);
    json_decref(req);
    h_server_stop(&emu);
    return;
  }
  ck_assert_msg(rc == 1, "gpugate's request: %s", why);

  /* the emulator's answers, as raw bytes */
  text = json_dumps(req, JSON_COMPACT);
  ck_assert_int_eq(h_request(&emu, "POST",
                             "/bigquery/v2/projects/billing-project/queries",
                             NULL, text, NULL, &r),
                   0);
  free(text);
  ck_assert_int_eq(r.status, 200);
  ck_assert_msg(conforms("QueryResponse", r.body, why, sizeof(why)) == 1,
                "jobs.query: %s", why);
  resp = json_loads(r.body, 0, NULL);
  job = json_string_value(
      json_object_get(json_object_get(resp, "jobReference"), "jobId"));
  snprintf(url, sizeof(url),
           "/bigquery/v2/projects/billing-project/queries/%s?maxResults=10",
           job);
  h_resp_free(&r);
  ck_assert_int_eq(h_request(&emu, "GET", url, NULL, NULL, NULL, &r), 0);
  ck_assert_int_eq(r.status, 200);
  ck_assert_msg(conforms("GetQueryResultsResponse", r.body, why, sizeof(why)) ==
                    1,
                "getQueryResults: %s", why);
  h_resp_free(&r);
  snprintf(url, sizeof(url), "/bigquery/v2/projects/billing-project/jobs/%s",
           job);
  ck_assert_int_eq(h_request(&emu, "GET", url, NULL, NULL, NULL, &r), 0);
  ck_assert_int_eq(r.status, 200);
  ck_assert_msg(conforms("Job", r.body, why, sizeof(why)) == 1, "jobs.get: %s",
                why);
  h_resp_free(&r);
  json_decref(resp);
  json_decref(req);
  h_server_stop(&emu);
}
END_TEST

/* Every page of the rows query req (its first in jobs.query, the rest by
 * getQueryResults, maxResults 7) from emu, end to end, each from its
 * totalBytesProcessed on (its job's id before that is the emulator's
 * count of jobs) (a new string). */
static char *rows_pages(const struct h_server *emu, const char *req)
{
  size_t cap = (size_t)1 << 20, len = 0;
  char *all = malloc(cap), url[256];
  const char *token;
  json_t *doc;
  struct h_resp r;

  ck_assert_ptr_nonnull(all);
  ck_assert_int_eq(h_request(emu, "POST",
                             "/bigquery/v2/projects/billing-project/queries",
                             NULL, req, NULL, &r),
                   0);
  ck_assert_int_eq(r.status, 200);
  for (;;) {
    const char *from = strstr(r.body, "\"totalBytesProcessed\"");
    size_t n;
    ck_assert_ptr_nonnull(from);
    n = strlen(from);
    ck_assert(len + n < cap);
    memcpy(all + len, from, n + 1);
    len += n;
    doc = json_loads(r.body, 0, NULL);
    ck_assert_ptr_nonnull(doc);
    token = json_string_value(json_object_get(doc, "pageToken"));
    if (!token) {
      json_decref(doc);
      h_resp_free(&r);
      return all;
    }
    snprintf(url, sizeof(url),
             "/bigquery/v2/projects/billing-project/queries/%s"
             "?maxResults=7&pageToken=%s",
             json_string_value(json_object_get(
                 json_object_get(doc, "jobReference"), "jobId")),
             token);
    json_decref(doc);
    h_resp_free(&r);
    ck_assert_int_eq(h_request(emu, "GET", url, NULL, NULL, NULL, &r), 0);
    ck_assert_int_eq(r.status, 200);
  }
}

/*
 * The emulator with its rows rendered once (BQ_EMU_PRERENDER=1, as
 * bench/ingest.sh runs it) answers the very bytes of the one that generates
 * every page: a day's rows query page by page, before and after a revision
 * of that day (which makes the rendering stale), and a pull from it
 * reconciles every day.
 */
START_TEST(test_prerendered_same_bytes)
{
  static const char *const env_gen[] = {"BQ_EMU_DAYS=4", "BQ_EMU_ROWS=24",
                                        "BQ_EMU_PAGE_ROWS=10",
                                        "BQ_EMU_INCOMPLETE_POLLS=0", NULL};
  static const char *const env_pre[] = {
      "BQ_EMU_DAYS=4",       "BQ_EMU_ROWS=24",
      "BQ_EMU_PAGE_ROWS=10", "BQ_EMU_INCOMPLETE_POLLS=0",
      "BQ_EMU_PRERENDER=1",  NULL};
  struct h_server gen, pre;
  char db_url[512], out[4096], *req, *a, *b;
  json_t *q;
  int round;

  ck_assert_int_eq(h_db_create("it_bigquery_pre", db_url, sizeof(db_url)), 0);
  ck_assert_int_eq(h_bq_emulator_start(&pre, env_pre), 0);
  ck_assert_int_eq(h_bq_emulator_start(&gen, env_gen), 0);
  ck_assert_msg(billing_sync(db_url, &pre, out, sizeof(out)) == 0, "%s", out);
  ck_assert_msg(
      strstr(out, "\"rows_read\"") &&
          strtol(strchr(strstr(out, "\"rows_read\""), ':') + 1, NULL, 10) == 96,
      "%s", out);
  q = h_emu_get(&pre, "/emulator/last_query"); /* the last day's rows */
  ck_assert_ptr_nonnull(
      strstr(json_string_value(json_object_get(q, "query")), "TO_JSON_STRING"));
  json_object_del(q, "requestId"); /* a new job in each emulator */
  req = json_dumps(q, JSON_COMPACT);
  for (round = 0; round < 2; round++) {
    if (round == 1) { /* the day revised in both: the rendering is stale */
      json_t *p = json_array_get(json_object_get(q, "queryParameters"), 0);
      char body[64];
      snprintf(body, sizeof(body), "{\"day\": \"%s\"}",
               json_string_value(json_object_get(
                   json_object_get(p, "parameterValue"), "value")));
      emu_post(&pre, "/emulator/revise", body);
      emu_post(&gen, "/emulator/revise", body);
    }
    a = rows_pages(&gen, req);
    b = rows_pages(&pre, req);
    ck_assert_msg(strlen(a) > 1000 && !strcmp(a, b),
                  "round %d: the pages differ", round);
    free(a);
    free(b);
  }
  free(req);
  json_decref(q);
  h_server_stop(&gen);
  h_server_stop(&pre);
}
END_TEST

/* "123.456789" (at most 6 decimals) in micro-units. */
static long long micro_of(const char *s)
{
  long long whole = 0, frac = 0;
  int neg = *s == '-', digits = 0;

  s += neg;
  for (; *s >= '0' && *s <= '9'; s++)
    whole = whole * 10 + (*s - '0');
  if (*s == '.')
    for (s++; *s >= '0' && *s <= '9' && digits < 6; s++, digits++)
      frac = frac * 10 + (*s - '0');
  for (; digits < 6; digits++)
    frac *= 10;
  return (neg ? -1 : 1) * (whole * 1000000 + frac);
}

/* A report's amount (a JSON number of at most 6 decimals) in micro-units. */
static long long micro_json(json_t *v)
{
  ck_assert(json_is_number(v));
  return llround(json_number_value(v) * 1e6);
}

/* The fixture's net (cost + credits) in micro-dollars. */
static long long fixture_net(const struct h_server *emu)
{
  json_t *t = h_emu_get(emu, "/emulator/totals");
  long long net = micro_of(json_string_value(json_object_get(t, "net")));

  json_decref(t);
  return net;
}

/* The body of GET path, as bytes (a new string). */
static char *body_of(const struct h_server *s, const char *path,
                     const char *tok)
{
  struct h_resp r;
  char *b;

  ck_assert_int_eq(h_request(s, "GET", path, tok, NULL, NULL, &r), 0);
  ck_assert_int_eq(r.status, 200);
  b = strdup(r.body);
  h_resp_free(&r);
  return b;
}

/* month's USD amount (total, corrections) in /v1/costs/months. */
static long long month_amount(const struct h_server *s, const char *tok,
                              const char *month, const char *amount)
{
  json_t *list = h_call(s, "GET", "/v1/costs/months", tok, NULL, 200), *m;
  long long v = LLONG_MIN;
  size_t i;

  json_array_foreach (json_object_get(list, "months"), i, m) {
    if (!strcmp(json_string_value(json_object_get(m, "month")), month)) {
      json_t *t = json_array_get(json_object_get(m, "totals"), 0);
      ck_assert_str_eq(json_string_value(json_object_get(t, "currency")),
                       "USD");
      v = micro_json(json_object_get(t, amount));
    }
  }
  json_decref(list);
  ck_assert_msg(v != LLONG_MIN, "no month %s", month);
  return v;
}

/* Σ net_cost of the Correction rows of a report, and their number. */
static long long corrections_in(const struct h_server *s, const char *tok,
                                const char *path, int *n)
{
  json_t *rep = h_call(s, "GET", path, tok, NULL, 200), *r;
  long long sum = 0;
  size_t i;

  *n = 0;
  json_array_foreach (json_object_get(rep, "rows"), i, r) {
    const char *cls = json_string_value(json_object_get(r, "charge_class"));
    if (cls && !strcmp(cls, "Correction")) {
      sum += micro_json(json_object_get(r, "net_cost"));
      (*n)++;
    }
  }
  json_decref(rep);
  return sum;
}

/*
 * A day of a closed month read again: August is closed, the emulator
 * revises 2026-08-15, and the next sync re-reads that day. August's reports
 * answer the same bytes and its total in /v1/costs/months is unchanged;
 * September, the first open month, carries Correction rows of exactly the
 * revision's difference (new − old rows of the day); the whole range's
 * totals still equal the fixture's. Read again without a change (the
 * export_time moved only), nothing more is posted.
 */
START_TEST(test_closed_month_reread)
{
  static const char *const srv_env[] = {"GPUGATE_BILLING_SYNC_INTERVAL_S=0",
                                        NULL};
  static const char aug[] = "/v1/costs?from=2026-08-01&to=2026-08-31";
  static const char aug_inv[] =
      "/v1/costs?from=2026-08-01&to=2026-08-31&month_basis=invoice";
  static const char sep[] = "/v1/costs?from=2026-09-01&to=2026-09-30";
  /* August is more than 10 days before the export's last day */
  static const char reread[] = "GPUGATE_BILLING_REREAD_DAYS=100";
  struct h_server emu, srv;
  char db_url[512], out[4096], want[512], got[512];
  char *fin = h_token(NULL, "finance", 3600);
  char *aug_body, *aug_inv_body, *after;
  long long aug_total, sep_total, net_before, diff;
  int n;
  json_t *log;

  ck_assert_int_eq(h_db_create("it_bigquery_closed", db_url, sizeof(db_url)),
                   0);
  ck_assert_int_eq(h_bq_emulator_start(&emu, emu_env), 0);
  ck_assert_int_eq(h_server_start(&srv, db_url, srv_env), 0);
  ck_assert_msg(billing_sync_reread(db_url, &emu, reread, out, sizeof(out)) ==
                    0,
                "%s", out);
  json_decref(take_log(&emu));

  json_decref(
      h_call(&srv, "POST", "/v1/costs/months/2026-08/close", fin, NULL, 200));
  aug_body = body_of(&srv, aug, fin);
  aug_inv_body = body_of(&srv, aug_inv, fin);
  aug_total = month_amount(&srv, fin, "2026-08", "total");
  sep_total = month_amount(&srv, fin, "2026-09", "total");
  ck_assert_int_eq(month_amount(&srv, fin, "2026-09", "corrections"), 0);
  net_before = fixture_net(&emu);

  emu_post(&emu, "/emulator/revise", "{\"day\": \"2026-08-15\"}");
  diff = fixture_net(&emu) - net_before;
  ck_assert_int_ne(diff, 0);
  ck_assert_msg(billing_sync_reread(db_url, &emu, reread, out, sizeof(out)) ==
                    0,
                "%s", out);
  log = take_log(&emu);
  ck_assert_int_eq(count(log, "query", "billing-rows", NULL), 1);
  ck_assert_int_eq(count(log, "query", "billing-rows", "2026-08-15"), 1);
  json_decref(log);

  /* August frozen: the same bytes, the same total */
  after = body_of(&srv, aug, fin);
  ck_assert_str_eq(after, aug_body);
  free(after);
  after = body_of(&srv, aug_inv, fin);
  ck_assert_str_eq(after, aug_inv_body);
  free(after);
  ck_assert_int_eq(month_amount(&srv, fin, "2026-08", "total"), aug_total);
  /* September: the difference, as corrections, to the micro-dollar */
  ck_assert_int_eq(month_amount(&srv, fin, "2026-09", "corrections"), diff);
  ck_assert_int_eq(month_amount(&srv, fin, "2026-09", "total"),
                   sep_total + diff);
  ck_assert_int_eq(corrections_in(&srv, fin, sep, &n), diff);
  ck_assert_int_gt(n, 0);
  fixture_totals(&emu, want, sizeof(want));
  report_totals(&srv, fin, got, sizeof(got));
  ck_assert_str_eq(got, want);

  /* read again, its rows unchanged (the emulator's revision 0 again moves
   * only the export_time): the corrections stay what they were */
  emu_post(&emu, "/emulator/touch", "{\"day\": \"2026-08-15\"}");
  ck_assert_msg(billing_sync_reread(db_url, &emu, reread, out, sizeof(out)) ==
                    0,
                "%s", out);
  log = take_log(&emu);
  ck_assert_int_eq(count(log, "query", "billing-rows", "2026-08-15"), 1);
  json_decref(log);
  after = body_of(&srv, aug, fin);
  ck_assert_str_eq(after, aug_body);
  free(after);
  ck_assert_int_eq(month_amount(&srv, fin, "2026-09", "corrections"), diff);
  ck_assert_int_eq(corrections_in(&srv, fin, sep, &n), diff);

  free(aug_body);
  free(aug_inv_body);
  h_server_stop(&srv);
  h_server_stop(&emu);
  free(fin);
}
END_TEST

START_TEST(test_only_the_leader_pulls)
{
  struct h_server emu[2], srv[2];
  char db_url[512], endpoint[2][128];
  char *fin = h_token(NULL, "finance", 3600);
  const char *env[2][6];
  json_t *st = NULL;
  int i, tries, pulled[2];

  ck_assert_int_eq(h_db_create("it_bigquery_leader", db_url, sizeof(db_url)),
                   0);
  for (i = 0; i < 2; i++) {
    ck_assert_int_eq(h_bq_emulator_start(&emu[i], emu_env), 0);
    snprintf(endpoint[i], sizeof(endpoint[i]),
             "GPUGATE_BIGQUERY_ENDPOINT=http://127.0.0.1:%u", emu[i].port);
    env[i][0] = endpoint[i];
    env[i][1] = "GPUGATE_GCP_TOKEN_SOURCE=none";
    env[i][2] = "GPUGATE_BILLING_BIGQUERY_TABLE=" TABLE;
    env[i][3] = "GPUGATE_BILLING_SYNC_INTERVAL_S=1";
    env[i][4] = "GPUGATE_ADMISSION_INTERVAL_MS=200";
    env[i][5] = NULL;
    ck_assert_int_eq(h_server_start(&srv[i], db_url, env[i]), 0);
  }
  /* the leader pulls at once, then every second */
  for (tries = 0; tries < 100; tries++) {
    json_decref(st);
    st = h_call(&srv[0], "GET", "/v1/billing/status", fin, NULL, 200);
    if (json_integer_value(json_object_get(st, "rows")) == 92 * 24)
      break;
    h_sleep_ms(100);
  }
  ck_assert_int_eq(json_integer_value(json_object_get(st, "rows")), 92 * 24);
  json_decref(st);
  h_sleep_ms(2500); /* time for more pulls, by either */
  for (i = 0; i < 2; i++) {
    json_t *log = h_emu_get(&emu[i], "/emulator/requests");
    pulled[i] = count(log, "query", "billing-days", NULL);
    json_decref(log);
  }
  ck_assert_msg((pulled[0] > 0) != (pulled[1] > 0),
                "both or neither replica pulled: %d and %d", pulled[0],
                pulled[1]);
  ck_assert_int_ge(pulled[0] + pulled[1], 2); /* it keeps pulling */
  for (i = 0; i < 2; i++) {
    h_server_stop(&srv[i]);
    h_server_stop(&emu[i]);
  }
  free(fin);
}
END_TEST

/* The bq CLI on PATH, into path; false when it is not installed. */
/* The program name on PATH into path. */
static bool find_tool(const char *name, char *path, size_t len)
{
  const char *env = getenv("PATH");
  char dirs[4096], *dir, *save = NULL;

  snprintf(dirs, sizeof(dirs), "%s", env ? env : "");
  for (dir = strtok_r(dirs, ":", &save); dir;
       dir = strtok_r(NULL, ":", &save)) {
    snprintf(path, len, "%s/%s", *dir ? dir : ".", name);
    if (access(path, X_OK) == 0)
      return true;
  }
  return false;
}

/*
 * The emulator's jobs.insert, jobs.get and getQueryResults, first over
 * HTTP, then driven by Google's bq CLI (`bq --api=URL query`) where it is
 * installed (skipped, saying so, where not): bq inserts the job with its
 * own job id, polls jobs.get while RUNNING, pages through getQueryResults,
 * and prints the fixture's day. bq runs with a configuration directory of
 * its own, a dummy access token (the emulator checks none) and the
 * discovery document the Cloud SDK ships.
 */
START_TEST(test_bq_cli)
{
  static const char *const env1[] = {"BQ_EMU_DAYS=2", "BQ_EMU_ROWS=24",
                                     "BQ_EMU_PAGE_ROWS=10",
                                     "BQ_EMU_INCOMPLETE_POLLS=1", NULL};
  char bq[1024], real[PATH_MAX], api[64], discovery[PATH_MAX + 64];
  char dir[] = "/tmp/gpugate-bq.XXXXXX", cfg[64], tokfile[64], tokenv[96];
  char *out = malloc(1 << 16), *slash;
  struct h_server emu;
  json_t *rows, *log, *job, *res;
  const char *argv[] = {bq,
                        api,
                        discovery,
                        "--project_id=billing-project",
                        "--location=US",
                        "--headless",
                        "--format=json",
                        "query",
                        "--nouse_legacy_sql",
                        "--parameter=day::2026-08-01",
                        "SELECT TO_JSON_STRING(t) AS row FROM `" TABLE "` AS t "
                        "WHERE DATE(_PARTITIONTIME) >= CAST(@day AS DATE) "
                        "AND DATE(usage_start_time) = CAST(@day AS DATE)",
                        NULL};
  const char *env[] = {cfg,
                       tokenv,
                       "CLOUDSDK_CORE_DISABLE_PROMPTS=1",
                       "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=true",
                       "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=true",
                       NULL};
  const char *rm[] = {"/bin/rm", "-rf", dir, NULL};
  FILE *f;
  int rc;

  ck_assert_ptr_nonnull(out);
  ck_assert_int_eq(h_bq_emulator_start(&emu, env1), 0);
  /* the shapes bq relies on, over HTTP: jobs.insert with the client's job
   * id, jobs.get RUNNING then DONE, getQueryResults of the job */
  job = h_call(&emu, "POST", "/bigquery/v2/projects/billing-project/jobs", NULL,
               "{\"jobReference\": {\"jobId\": \"bqjob_r1_1\"},"
               " \"configuration\": {\"query\": {\"query\":"
               " \"SELECT TO_JSON_STRING(t) FROM t\", \"useLegacySql\":"
               " false, \"queryParameters\": [{\"name\": \"day\","
               " \"parameterType\": {\"type\": \"STRING\"},"
               " \"parameterValue\": {\"value\": \"2026-08-01\"}}]}}}",
               200);
  ck_assert_str_eq(json_string_value(json_object_get(
                       json_object_get(job, "jobReference"), "jobId")),
                   "bqjob_r1_1");
  ck_assert_str_eq(json_string_value(json_object_get(
                       json_object_get(job, "status"), "state")),
                   "RUNNING");
  json_decref(job);
  job = h_call(&emu, "GET",
               "/bigquery/v2/projects/billing-project/jobs/bqjob_r1_1", NULL,
               NULL, 200);
  ck_assert_str_eq(json_string_value(json_object_get(
                       json_object_get(job, "status"), "state")),
                   "DONE");
  json_decref(job);
  res = h_call(&emu, "GET",
               "/bigquery/v2/projects/billing-project/queries/bqjob_r1_1"
               "?maxResults=100",
               NULL, NULL, 200);
  ck_assert(json_is_true(json_object_get(res, "jobComplete")));
  ck_assert_str_eq(json_string_value(json_object_get(res, "totalRows")), "24");
  ck_assert_uint_eq(json_array_size(json_object_get(res, "rows")), 10);
  json_decref(res);
  /* legacy SQL (jobs.insert's default) is refused */
  json_decref(h_call(&emu, "POST", "/bigquery/v2/projects/billing-project/jobs",
                     NULL,
                     "{\"configuration\": {\"query\": {\"query\":"
                     " \"SELECT TO_JSON_STRING(t) FROM t\"}}}",
                     400));
  json_decref(take_log(&emu));

  if (!find_tool("bq", bq, sizeof(bq)) || !realpath(bq, real)) {
    fprintf(stderr, "bigquery: the bq CLI is not installed: skipping the "
                    "bq --api test of the emulator\n");
    h_server_stop(&emu);
    free(out);
    return;
  }
  /* <sdk>/bin/bq → <sdk>/platform/bq/discovery_next/bigquery.json */
  slash = strrchr(real, '/');
  *slash = '\0';
  slash = strrchr(real, '/');
  if (slash)
    *slash = '\0';
  snprintf(discovery, sizeof(discovery),
           "--discovery_file=%s/platform/bq/discovery_next/bigquery.json",
           real);
  snprintf(api, sizeof(api), "--api=http://127.0.0.1:%u", emu.port);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cfg, sizeof(cfg), "CLOUDSDK_CONFIG=%s", dir);
  snprintf(tokfile, sizeof(tokfile), "%s/token", dir);
  snprintf(tokenv, sizeof(tokenv), "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=%s",
           tokfile);
  f = fopen(tokfile, "w");
  ck_assert_ptr_nonnull(f);
  fputs("emulator-token\n", f);
  fclose(f);
  rc = h_run(argv, env, 300000, NULL, out, 1 << 16);
  ck_assert_msg(rc == 0, "bq: %d: %s", rc, out);
  rows = json_loads(strchr(out, '[') ? strchr(out, '[') : out, 0, NULL);
  ck_assert_msg(json_is_array(rows), "bq printed: %s", out);
  ck_assert_uint_eq(json_array_size(rows), 24);
  ck_assert_ptr_nonnull(
      strstr(json_string_value(json_object_get(json_array_get(rows, 0), "row")),
             "\"usage_start_time\":\"2026-08-01T"));
  json_decref(rows);
  log = h_emu_get(&emu, "/emulator/requests");
  ck_assert_int_eq(count(log, "insert", "billing-rows", "2026-08-01"), 1);
  ck_assert_int_ge(count(log, "job", "billing-rows", NULL), 1);
  ck_assert_int_ge(count(log, "results", "billing-rows", NULL), 3); /* pages */
  json_decref(log);
  h_server_stop(&emu);
  h_run(rm, NULL, 10000, NULL, NULL, 0);
  free(out);
}
END_TEST

/*
 * Google's Node client (@google-cloud/bigquery, deploy/tools) against the
 * emulator: tests/bq-node/query.mjs runs the rows query of one day through
 * BigQuery.query() (jobs.query, then getQueryResults pages) and as a job
 * paged by hand (jobs.insert, jobs.get, getQueryResults), and the rows it
 * decodes are the emulator's own dump of that day, in order.
 */
START_TEST(test_node_client)
{
  static const char *const env1[] = {"BQ_EMU_DAYS=2", "BQ_EMU_ROWS=24",
                                     "BQ_EMU_PAGE_ROWS=10",
                                     "BQ_EMU_INCOMPLETE_POLLS=1", NULL};
  const size_t cap = 1 << 20;
  char node[1024], endpoint[64], expect[256], *out = malloc(cap);
  const char *dump[] = {"build/bigquery_emulator", "dump", NULL};
  const char *argv[] = {node,         "tests/bq-node/query.mjs",
                        "--endpoint", endpoint,
                        "--project",  "billing-project",
                        "--table",    TABLE,
                        "--day",      "2026-08-01",
                        "--expect",   expect,
                        "--page",     "10",
                        NULL};
  /* no look for a metadata server: this is no Google machine */
  const char *env[] = {"METADATA_SERVER_DETECTION=none", NULL};
  struct h_server emu;
  json_t *log;
  int rc;

  ck_assert_ptr_nonnull(out);
  ck_assert_msg(find_tool("node", node, sizeof(node)), "node is not on PATH");
  ck_assert_msg(access("deploy/tools/node_modules/@google-cloud/bigquery/"
                       "package.json",
                       R_OK) == 0,
                "@google-cloud/bigquery is not installed: npm ci --prefix "
                "deploy/tools (deploy/install-deps.sh does it)");
  /* what was loaded: the fixture's rows, as the emulator dumps them */
  rc = h_run(dump, env1, 300000, NULL, out, cap);
  ck_assert_msg(rc == 0 && strlen(out) > 1000, "dump: %d", rc);
  h_write_temp("bq-node-rows", out, expect, sizeof(expect));
  ck_assert_int_eq(h_bq_emulator_start(&emu, env1), 0);
  snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%u", emu.port);
  rc = h_run(argv, env, 300000, NULL, out, cap);
  ck_assert_msg(rc == 0 && strstr(out, "bq-node: ok 24 rows of 2026-08-01"),
                "node client: %d: %s", rc, out);
  log = h_emu_get(&emu, "/emulator/requests");
  ck_assert_int_eq(count(log, "query", "billing-rows", "2026-08-01"), 1);
  ck_assert_int_eq(count(log, "insert", "billing-rows", "2026-08-01"), 1);
  ck_assert_int_ge(count(log, "results", "billing-rows", NULL), 4); /* pages */
  json_decref(log);
  h_server_stop(&emu);
  unlink(expect);
  free(out);
}
END_TEST

Suite *bigquery_suite(void)
{
  Suite *s = suite_create("bigquery");
  TCase *tc = tcase_create("pull");

  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, test_sync_revise_fail);
  tcase_add_test(tc, test_real_encoding);
  tcase_add_test(tc, test_unreconciled_day);
  tcase_add_test(tc, test_two_pulls_at_once);
  tcase_add_test(tc, test_reread_keeps_other_accounts);
  tcase_add_test(tc, test_empty_answer_refused);
  tcase_add_test(tc, test_max_bytes_billed);
  tcase_add_test(tc, test_messages_conform);
  tcase_add_test(tc, test_prerendered_same_bytes);
  tcase_add_test(tc, test_closed_month_reread);
  tcase_add_test(tc, test_only_the_leader_pulls);
  tcase_add_test(tc, test_bq_cli);
  tcase_add_test(tc, test_node_client);
  suite_add_tcase(s, tc);
  tc = tcase_create("upgrade");
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, test_old_keys_rekeyed);
  tcase_add_test(tc, test_old_doubles_counted_once);
  suite_add_tcase(s, tc);
  tc = tcase_create("partitions");
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, test_late_row_found);
  tcase_add_test(tc, test_bytes_bounded_by_window);
  suite_add_tcase(s, tc);
  return s;
}
