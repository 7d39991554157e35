/*
 * it_console_api.c — the /v1 additions the console needs, on the reference
 * architecture: GET /v1/whoami, a team's job summary, the name search, the
 * administrators' list across teams, a member's view of the cluster queues
 * its queues point to, and ETag / If-None-Match on GET replies.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/integration/harness.h"

Suite *console_api_suite(void);

static struct h_server srv;
static char db_url[512];
static char *member, *member_b, *finance, *admin;

static void setup(void)
{
  static const char *const env[] = {"GPUGATE_RATE_LIMIT_RPS=100000", NULL};

  h_db_apply("it_console_api", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv, db_url, env), 0);
  member = h_token("team-a", "member", 3600);
  member_b = h_token("team-b", "member", 3600);
  finance = h_token("finance", "finance", 3600);
  admin = h_token("platform", "admin", 3600);
  ck_assert(member && member_b && finance && admin);
}

static void teardown(void)
{
  h_server_stop(&srv);
  free(member);
  free(member_b);
  free(finance);
  free(admin);
}

static size_t n_items(const json_t *page)
{
  return json_array_size(json_object_get(page, "items"));
}

START_TEST(whoami_reads_the_token)
{
  json_t *me = h_call(&srv, "GET", "/v1/whoami", member, NULL, 200);
  long long exp = json_integer_value(json_object_get(me, "exp"));
  long long now = (long long)time(NULL);
  struct h_resp r;

  ck_assert_str_eq(h_str(me, "team"), "team-a");
  ck_assert_str_eq(h_str(me, "role"), "member");
  ck_assert_msg(exp >= now + 3500 && exp <= now + 3700, "exp %lld", exp);
  ck_assert_int_eq((int)strlen(h_str(me, "expires_at")), 20);
  json_decref(me);
  me = h_call(&srv, "GET", "/v1/whoami", finance, NULL, 200);
  ck_assert_str_eq(h_str(me, "role"), "finance");
  json_decref(me);
  me = h_call(&srv, "GET", "/v1/whoami", admin, NULL, 200);
  ck_assert_str_eq(h_str(me, "role"), "admin");
  json_decref(me);
  ck_assert_int_eq(h_request(&srv, "GET", "/v1/whoami", NULL, NULL, NULL, &r),
                   0);
  ck_assert(h_is_problem(&r, 401, NULL));
  h_resp_free(&r);
}
END_TEST

/* The summary adds up to the team's jobs, per state and queue, and never
 * counts another team's. */
START_TEST(summary_counts_own_team)
{
  json_t *s, *totals, *row, *list;
  long long jobs = 0, gpus = 0, lp = 0;
  size_t i;
  struct h_resp r;
  const char *st;
  json_t *t;

  h_submit_typical(&srv, "team-a", member, "lp", "sum-one", "default", NULL);
  h_submit_typical(&srv, "team-a", member, "lp", "sum-two", "default", NULL);
  h_submit_typical(&srv, "team-a", member, "hp", "sum-three", "high", NULL);
  h_submit_typical(&srv, "team-b", member_b, "lp", "sum-b", "default", NULL);
  /* let admission settle (without a Batch backend admitted jobs stay
   * ADMITTED), so the summary and the lists read the same states */
  h_sleep_ms(2500);
  s = h_call(&srv, "GET", "/v1/teams/team-a/jobs/summary", member, NULL, 200);
  ck_assert_str_eq(h_str(s, "team"), "team-a");
  totals = json_object_get(s, "totals");
  ck_assert_int_eq((int)json_object_size(totals), 8);
  json_object_foreach (totals, st, t) {
    char path[96];
    jobs += json_integer_value(json_object_get(t, "jobs"));
    gpus += json_integer_value(json_object_get(t, "gpus"));
    /* each state's count is what the list of that state holds */
    snprintf(path, sizeof(path), "/v1/teams/team-a/jobs?state=%s&limit=500",
             st);
    list = h_call(&srv, "GET", path, member, NULL, 200);
    ck_assert_int_eq((int)n_items(list),
                     (int)json_integer_value(json_object_get(t, "jobs")));
    json_decref(list);
  }
  ck_assert_int_eq((int)jobs, 3);
  ck_assert_int_eq((int)gpus, 12); /* 3 × 2 tasks × 2 GPU */
  json_array_foreach (json_object_get(s, "counts"), i, row) {
    if (!strcmp(h_str(row, "queue"), "lp"))
      lp += json_integer_value(json_object_get(row, "jobs"));
    ck_assert(strcmp(h_str(row, "queue"), "dws") != 0);
  }
  ck_assert_int_eq((int)lp, 2);
  json_decref(s);

  /* another team's summary is not found for a member; an admin reads it */
  ck_assert_int_eq(h_request(&srv, "GET", "/v1/teams/team-b/jobs/summary",
                             member, NULL, NULL, &r),
                   0);
  ck_assert_msg(h_is_problem(&r, 404, NULL), "%ld %s", r.status, r.body);
  h_resp_free(&r);
  s = h_call(&srv, "GET", "/v1/teams/team-b/jobs/summary", admin, NULL, 200);
  ck_assert_int_eq(
      (int)json_integer_value(json_object_get(
          json_object_get(json_object_get(s, "totals"), "PENDING"), "jobs")) +
          (int)json_integer_value(json_object_get(
              json_object_get(json_object_get(s, "totals"), "ADMITTED"),
              "jobs")),
      1);
  json_decref(s);
}
END_TEST

START_TEST(name_search)
{
  json_t *page, *job;
  size_t i;
  struct h_resp r;

  h_submit_typical(&srv, "team-a", member, "lp", "alpha-one", "default", NULL);
  h_submit_typical(&srv, "team-a", member, "lp", "alpha-two", "default", NULL);
  h_submit_typical(&srv, "team-a", member, "lp", "beta-one", "default", NULL);
  h_submit_typical(&srv, "team-b", member_b, "lp", "alpha-b", "default", NULL);
  page = h_call(&srv, "GET", "/v1/teams/team-a/jobs?name=alpha", member, NULL,
                200);
  ck_assert_int_eq((int)n_items(page), 2);
  json_array_foreach (json_object_get(page, "items"), i, job) {
    ck_assert_ptr_nonnull(strstr(h_str(job, "name"), "alpha"));
    ck_assert_str_eq(h_str(job, "team"), "team-a");
  }
  json_decref(page);
  page = h_call(&srv, "GET", "/v1/teams/team-a/jobs?name=one&queue=lp", member,
                NULL, 200);
  ck_assert_int_eq((int)n_items(page), 2);
  json_decref(page);
  /* paging through a search: one job a page */
  page = h_call(&srv, "GET", "/v1/teams/team-a/jobs?name=alpha&limit=1", member,
                NULL, 200);
  ck_assert_int_eq((int)n_items(page), 1);
  ck_assert(json_is_string(json_object_get(page, "next_cursor")));
  {
    char path[256];
    json_t *next;
    snprintf(path, sizeof(path),
             "/v1/teams/team-a/jobs?name=alpha&limit=1&cursor=%s",
             h_str(page, "next_cursor"));
    next = h_call(&srv, "GET", path, member, NULL, 200);
    ck_assert_int_eq((int)n_items(next), 1);
    ck_assert_str_ne(
        h_str(json_array_get(json_object_get(next, "items"), 0), "id"),
        h_str(json_array_get(json_object_get(page, "items"), 0), "id"));
    ck_assert(json_is_null(json_object_get(next, "next_cursor")));
    json_decref(next);
  }
  json_decref(page);
  ck_assert_int_eq(h_request(&srv, "GET",
                             "/v1/teams/team-a/jobs?name=Robert%27%3B--",
                             member, NULL, NULL, &r),
                   0);
  ck_assert_msg(h_is_problem(&r, 400, "name"), "%ld %s", r.status, r.body);
  h_resp_free(&r);
}
END_TEST

START_TEST(admin_lists_every_team)
{
  json_t *page, *job;
  size_t i;
  int a = 0, b = 0;
  struct h_resp r;

  h_submit_typical(&srv, "team-a", member, "lp", "cross-a", "default", NULL);
  h_submit_typical(&srv, "team-b", member_b, "lp", "cross-b", "default", NULL);
  page = h_call(&srv, "GET", "/v1/jobs?limit=500", admin, NULL, 200);
  json_array_foreach (json_object_get(page, "items"), i, job) {
    a += !strcmp(h_str(job, "team"), "team-a");
    b += !strcmp(h_str(job, "team"), "team-b");
  }
  ck_assert_int_eq(a, 1);
  ck_assert_int_eq(b, 1);
  json_decref(page);
  page =
      h_call(&srv, "GET", "/v1/jobs?team=team-b&name=cross", admin, NULL, 200);
  ck_assert_int_eq((int)n_items(page), 1);
  ck_assert_str_eq(
      h_str(json_array_get(json_object_get(page, "items"), 0), "name"),
      "cross-b");
  json_decref(page);
  ck_assert_int_eq(h_request(&srv, "GET", "/v1/jobs", member, NULL, NULL, &r),
                   0);
  ck_assert(h_is_problem(&r, 403, NULL));
  h_resp_free(&r);
  ck_assert_int_eq(h_request(&srv, "GET", "/v1/jobs", finance, NULL, NULL, &r),
                   0);
  ck_assert(h_is_problem(&r, 403, NULL));
  h_resp_free(&r);
  ck_assert_int_eq(
      h_request(&srv, "GET", "/v1/jobs?state=DONE", admin, NULL, NULL, &r), 0);
  ck_assert(h_is_problem(&r, 400, "state"));
  h_resp_free(&r);
}
END_TEST

/* A member sees the cluster queues its queues point to, with the same
 * numbers an administrator reads, and nothing of other teams. */
START_TEST(member_capacity_summary)
{
  json_t *page, *cq, *full;
  size_t i;
  struct h_resp r;
  char *text;

  h_submit_typical(&srv, "team-a", member, "lp", "cap-a", "default", NULL);
  h_submit_typical(&srv, "team-b", member_b, "dws", "cap-b", "default", NULL);
  h_sleep_ms(1500); /* an admission cycle */
  page =
      h_call(&srv, "GET", "/v1/teams/team-a/cluster-queues", member, NULL, 200);
  ck_assert_int_eq((int)n_items(page), 4);
  text = json_dumps(page, 0);
  ck_assert_ptr_null(strstr(text, "team-b"));
  ck_assert_ptr_null(strstr(text, "team-c"));
  ck_assert_ptr_null(strstr(text, "cap-b"));
  free(text);
  json_array_foreach (json_object_get(page, "items"), i, cq) {
    char path[128];
    json_t *mine = json_object_get(cq, "status"), *theirs;
    snprintf(path, sizeof(path), "/v1/cluster-queues/%s", h_str(cq, "name"));
    full = h_call(&srv, "GET", path, admin, NULL, 200);
    theirs = json_object_get(full, "status");
    ck_assert_msg(json_equal(json_object_get(mine, "usage"),
                             json_object_get(theirs, "usage")),
                  "%s usage differs", h_str(cq, "name"));
    ck_assert(json_equal(json_object_get(mine, "pending"),
                         json_object_get(theirs, "pending")));
    ck_assert(json_is_array(json_object_get(cq, "team_queues")));
    ck_assert(json_is_array(json_object_get(cq, "flavors")));
    json_decref(full);
  }
  json_decref(page);
  ck_assert_int_eq(h_request(&srv, "GET", "/v1/teams/team-a/cluster-queues",
                             member_b, NULL, NULL, &r),
                   0);
  ck_assert(h_is_problem(&r, 404, NULL));
  h_resp_free(&r);
}
END_TEST

START_TEST(etag_not_modified)
{
  static const char *const paths[] = {
      "/v1/teams/team-a/jobs", "/v1/teams/team-a/jobs/summary",
      "/v1/teams/team-a/cluster-queues", "/v1/teams/team-a/queues", NULL};
  struct h_resp r, again;
  char etag[64], hdr[96], etag2[64];
  const char *hdrs[2] = {hdr, NULL};
  int i;

  h_submit_typical(&srv, "team-a", member, "lp", "etag-one", "default", NULL);
  h_sleep_ms(1500); /* let admission settle the job */
  for (i = 0; paths[i]; i++) {
    ck_assert_int_eq(h_request(&srv, "GET", paths[i], member, NULL, NULL, &r),
                     0);
    ck_assert_int_eq((int)r.status, 200);
    ck_assert_msg(h_header(&r, "ETag", etag, sizeof(etag)), "%s: no ETag",
                  paths[i]);
    ck_assert_msg(!strncmp(etag, "W/\"", 3), "%s", etag);
    snprintf(hdr, sizeof(hdr), "If-None-Match: %s", etag);
    ck_assert_int_eq(
        h_request(&srv, "GET", paths[i], member, NULL, hdrs, &again), 0);
    ck_assert_msg(again.status == 304, "%s: %ld", paths[i], again.status);
    ck_assert_int_eq((int)again.body_len, 0);
    ck_assert_str_eq(h_header(&again, "ETag", etag2, sizeof(etag2)), etag);
    h_resp_free(&again);
    h_resp_free(&r);
  }
  /* a change is a new tag: the list with a new job is sent again */
  ck_assert_int_eq(h_request(&srv, "GET", paths[0], member, NULL, NULL, &r), 0);
  h_header(&r, "ETag", etag, sizeof(etag));
  h_resp_free(&r);
  h_submit_typical(&srv, "team-a", member, "lp", "etag-two", "default", NULL);
  snprintf(hdr, sizeof(hdr), "If-None-Match: %s", etag);
  ck_assert_int_eq(h_request(&srv, "GET", paths[0], member, NULL, hdrs, &r), 0);
  ck_assert_int_eq((int)r.status, 200);
  ck_assert_str_ne(h_header(&r, "ETag", etag2, sizeof(etag2)), etag);
  h_resp_free(&r);
  /* administrator objects keep their version ETag */
  ck_assert_int_eq(h_request(&srv, "GET", "/v1/teams/team-a/queues/lp", admin,
                             NULL, NULL, &r),
                   0);
  ck_assert_str_eq(h_header(&r, "ETag", etag2, sizeof(etag2)), "\"1\"");
  h_resp_free(&r);
}
END_TEST

/* A job read by id is written with its stored spec spliced in as text
 * (db/jobs.c render_text()): it must be the job the list shows, member
 * for member and in the same order, and carry an ETag like any GET. */
START_TEST(job_by_id_as_listed)
{
  struct h_resp r, again;
  char id[32], path[96], etag[64], hdr[96];
  const char *hdrs[2] = {hdr, NULL};
  json_t *list, *listed, *got;
  char *a, *b;

  h_submit_typical(&srv, "team-a", member, "lp", "by-id", "default", id);
  h_sleep_ms(1500); /* admitted: the admission and cost members are set */
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s", id);
  ck_assert_int_eq(h_request(&srv, "GET", path, member, NULL, NULL, &r), 0);
  ck_assert_int_eq((int)r.status, 200);
  got = json_loadb(r.body, r.body_len, 0, NULL);
  ck_assert_ptr_nonnull(got);
  list =
      h_call(&srv, "GET", "/v1/teams/team-a/jobs?limit=1", member, NULL, 200);
  listed = json_array_get(json_object_get(list, "items"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(listed, "id")), id);
  a = json_dumps(listed, JSON_COMPACT | JSON_PRESERVE_ORDER);
  b = json_dumps(got, JSON_COMPACT | JSON_PRESERVE_ORDER);
  ck_assert_str_eq(b, a);
  ck_assert_ptr_nonnull(json_object_get(json_object_get(got, "spec"), "task"));
  free(a);
  free(b);
  json_decref(got);
  json_decref(list);
  ck_assert_msg(h_header(&r, "ETag", etag, sizeof(etag)), "no ETag");
  snprintf(hdr, sizeof(hdr), "If-None-Match: %s", etag);
  ck_assert_int_eq(h_request(&srv, "GET", path, member, NULL, hdrs, &again), 0);
  ck_assert_int_eq((int)again.status, 304);
  ck_assert_int_eq((int)again.body_len, 0);
  h_resp_free(&again);
  h_resp_free(&r);
}
END_TEST

Suite *console_api_suite(void)
{
  Suite *s = suite_create("console_api");
  TCase *tc = tcase_create("console_api");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, whoami_reads_the_token);
  tcase_add_test(tc, summary_counts_own_team);
  tcase_add_test(tc, name_search);
  tcase_add_test(tc, admin_lists_every_team);
  tcase_add_test(tc, member_capacity_summary);
  tcase_add_test(tc, etag_not_modified);
  tcase_add_test(tc, job_by_id_as_listed);
  suite_add_tcase(s, tc);
  return s;
}
