/*
 * it_roles.c — who may do what, on the reference architecture: a member of
 * team-a, a finance user and an administrator against every administrator
 * route. Members read only their own team, and another team's objects
 * answer 404 exactly like objects that do not exist.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/harness.h"

Suite *roles_suite(void);

static struct h_server srv;
static char db_url[512];
static char *member, *member_b, *member_nobody, *finance, *admin;

static void setup(void)
{
  static const char *const env[] = {"GPUGATE_RATE_LIMIT_RPS=100000", NULL};
  const char *args[] = {"apply", "deploy/examples/reference-architecture.json",
                        NULL};
  char out[4096];

  ck_assert_int_eq(h_db_create("it_roles", db_url, sizeof(db_url)), 0);
  ck_assert_int_eq(h_server_start(&srv, db_url, env), 0);
  ck_assert_msg(h_gpugate(db_url, args, out, sizeof(out)) == 0, "%s", out);
  member = h_token("team-a", "member", 3600);
  member_b = h_token("team-b", "member", 3600);
  member_nobody = h_token("team-z", "member", 3600);
  /* an administrator and a finance analyst belong to no team: the whole
   * matrix runs with tokens that carry no team claim */
  finance = h_token(NULL, "finance", 3600);
  admin = h_token(NULL, "admin", 3600);
  ck_assert(member && member_b && member_nobody && finance && admin);
}

static void teardown(void)
{
  h_server_stop(&srv);
  free(member);
  free(member_b);
  free(member_nobody);
  free(finance);
  free(admin);
}

/* Valid bodies, so that a refusal can only come from the role check. */
#define FLAVOR                                                                 \
  "{\"provisioning_model\": \"SPOT\", \"machine_type\": \"g2-standard-24\", "  \
  "\"accelerator_type\": \"nvidia-l4\", \"gpus_per_vm\": 2, "                  \
  "\"locations\": [\"us-central1\"], \"price_per_gpu_hour_usd\": 0.25}"
#define CQ                                                                     \
  "{\"flavors\": [{\"name\": \"l4-spot\", \"resources\": "                     \
  "{\"gpu\": {\"nominal\": 1}}}]}"
#define PCLASS "{\"value\": 5, \"preemption_policy\": \"Never\"}"
#define TEAM "{\"display_name\": \"Team X\", \"budget_policy\": \"none\"}"
#define QUEUE "{\"cluster_queue\": \"cq-team-a-lp\"}"

struct rcase {
  const char *method, *path, *body;
  long status;
};

/* Every administrator write, and the admin-only reads. */
static const struct rcase admin_only[] = {
    {"PUT", "/v1/flavors/l4-spot", FLAVOR, 403},
    {"PUT", "/v1/flavors/new-flavor", FLAVOR, 403},
    {"DELETE", "/v1/flavors/l4-spot", NULL, 403},
    {"PUT", "/v1/cohorts/team-a-b", "{}", 403},
    {"PUT", "/v1/cohorts/new-cohort", "{}", 403},
    {"DELETE", "/v1/cohorts/team-a-b", NULL, 403},
    {"PUT", "/v1/cluster-queues/cq-team-a-lp", CQ, 403},
    {"PUT", "/v1/cluster-queues/new-cq", CQ, 403},
    {"DELETE", "/v1/cluster-queues/cq-team-a-lp", NULL, 403},
    {"PUT", "/v1/priority-classes/high", PCLASS, 403},
    {"PUT", "/v1/priority-classes/new-class", PCLASS, 403},
    {"DELETE", "/v1/priority-classes/high", NULL, 403},
    {"PUT", "/v1/teams/team-a", TEAM, 403},
    {"PUT", "/v1/teams/new-team", TEAM, 403},
    {"PUT", "/v1/teams/team-a/queues/lp", QUEUE, 403},
    {"PUT", "/v1/teams/team-a/queues/new-queue", QUEUE, 403},
    {"DELETE", "/v1/teams/team-a/queues/lp", NULL, 403},
    {"GET", "/v1/cohorts", NULL, 403},
    {"GET", "/v1/cohorts/team-a-b", NULL, 403},
    {"GET", "/v1/cluster-queues", NULL, 403},
    {"GET", "/v1/cluster-queues/cq-team-a-lp", NULL, 403},
};

#define N_ADMIN_ONLY (sizeof(admin_only) / sizeof(admin_only[0]))

static void expect(const char *who, const char *token, const char *method,
                   const char *path, const char *body, long status)
{
  struct h_resp r;

  ck_assert_int_eq(h_request(&srv, method, path, token, body, NULL, &r), 0);
  if (status >= 400)
    ck_assert_msg(h_is_problem(&r, status, NULL), "%s %s %s: %ld, want %ld: %s",
                  who, method, path, r.status, status, r.body);
  else
    ck_assert_msg(r.status == status, "%s %s %s: %ld, want %ld: %s", who,
                  method, path, r.status, status, r.body);
  h_resp_free(&r);
}

/* The reference objects the refused writes aimed at are all unchanged. */
static void reference_intact(void)
{
  static const char *const paths[] = {"/v1/flavors/l4-spot",
                                      "/v1/cohorts/team-a-b",
                                      "/v1/cluster-queues/cq-team-a-lp",
                                      "/v1/priority-classes/high",
                                      "/v1/teams/team-a",
                                      "/v1/teams/team-a/queues/lp",
                                      NULL};
  static const char *const absent[] = {"/v1/flavors/new-flavor",
                                       "/v1/cohorts/new-cohort",
                                       "/v1/cluster-queues/new-cq",
                                       "/v1/priority-classes/new-class",
                                       "/v1/teams/new-team",
                                       "/v1/teams/team-a/queues/new-queue",
                                       NULL};
  struct h_resp r;
  char etag[32];
  int i;

  for (i = 0; paths[i]; i++) {
    h_request(&srv, "GET", paths[i], admin, NULL, NULL, &r);
    ck_assert_msg(r.status == 200, "%s: %ld", paths[i], r.status);
    /* version 1: never written since `gpugate apply` created it */
    ck_assert_str_eq(h_header(&r, "ETag", etag, sizeof(etag)), "\"1\"");
    h_resp_free(&r);
  }
  for (i = 0; absent[i]; i++) {
    h_request(&srv, "GET", absent[i], admin, NULL, NULL, &r);
    ck_assert_msg(r.status == 404, "%s: %ld", absent[i], r.status);
    h_resp_free(&r);
  }
}

START_TEST(member_cannot_administer)
{
  const struct rcase *c = &admin_only[_i];

  expect("member", member, c->method, c->path, c->body, c->status);
}
END_TEST

START_TEST(finance_cannot_administer)
{
  const struct rcase *c = &admin_only[_i];

  expect("finance", finance, c->method, c->path, c->body, c->status);
}
END_TEST

START_TEST(refused_writes_changed_nothing)
{
  reference_intact();
}
END_TEST

START_TEST(member_reads)
{
  static const char *const ok[] = {"/v1/flavors",
                                   "/v1/flavors/l4-spot",
                                   "/v1/priority-classes",
                                   "/v1/priority-classes/high",
                                   "/v1/teams",
                                   "/v1/teams/team-a",
                                   "/v1/teams/team-a/queues",
                                   "/v1/teams/team-a/queues/lp",
                                   NULL};
  int i;

  for (i = 0; ok[i]; i++)
    expect("member", member, "GET", ok[i], NULL, 200);
}
END_TEST

/*
 * Another team's objects are 404, the same answer as for a team that does
 * not exist: a member cannot tell them apart.
 */
START_TEST(member_cannot_see_other_teams)
{
  static const char *const hidden[][2] = {
      {"/v1/teams/team-b", "/v1/teams/no-such-team"},
      {"/v1/teams/team-b/queues", "/v1/teams/no-such-team/queues"},
      {"/v1/teams/team-b/queues/lp", "/v1/teams/no-such-team/queues/lp"},
      {"/v1/teams/team-c/queues/hp", "/v1/teams/no-such-team/queues/hp"},
  };
  struct h_resp r, n;
  size_t i;

  for (i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++) {
    h_request(&srv, "GET", hidden[i][0], member, NULL, NULL, &r);
    h_request(&srv, "GET", hidden[i][1], member, NULL, NULL, &n);
    ck_assert_msg(h_is_problem(&r, 404, NULL), "%s: %ld %s", hidden[i][0],
                  r.status, r.body);
    ck_assert_msg(h_is_problem(&n, 404, NULL), "%s: %ld %s", hidden[i][1],
                  n.status, n.body);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "type")),
                     json_string_value(json_object_get(n.json, "type")));
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "title")),
                     json_string_value(json_object_get(n.json, "title")));
    ck_assert_ptr_null(json_object_get(r.json, "display_name"));
    h_resp_free(&r);
    h_resp_free(&n);
  }
  /* and the other way round */
  expect("member of team-b", member_b, "GET", "/v1/teams/team-a", NULL, 404);
  expect("member of team-b", member_b, "GET", "/v1/teams/team-b", NULL, 200);
}
END_TEST

START_TEST(member_lists_only_own_team)
{
  struct h_resp r;
  json_t *items;

  h_request(&srv, "GET", "/v1/teams", member, NULL, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  items = json_object_get(r.json, "items");
  ck_assert_uint_eq(json_array_size(items), 1);
  ck_assert_str_eq(
      json_string_value(json_object_get(json_array_get(items, 0), "name")),
      "team-a");
  ck_assert(json_is_null(json_object_get(r.json, "next_cursor")));
  h_resp_free(&r);

  /* a member whose team has no object yet sees an empty list */
  h_request(&srv, "GET", "/v1/teams", member_nobody, NULL, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_uint_eq(json_array_size(json_object_get(r.json, "items")), 0);
  h_resp_free(&r);

  /* team-a's queue list holds team-a's queues only */
  h_request(&srv, "GET", "/v1/teams/team-a/queues", member, NULL, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_uint_eq(json_array_size(json_object_get(r.json, "items")), 4);
  h_resp_free(&r);
}
END_TEST

START_TEST(finance_reads)
{
  struct h_resp r;

  expect("finance", finance, "GET", "/v1/flavors", NULL, 200);
  expect("finance", finance, "GET", "/v1/flavors/dws", NULL, 200);
  expect("finance", finance, "GET", "/v1/priority-classes", NULL, 200);
  expect("finance", finance, "GET", "/v1/teams/team-a", NULL, 200);
  expect("finance", finance, "GET", "/v1/teams/team-d", NULL, 200);
  /* queues are for members and admins */
  expect("finance", finance, "GET", "/v1/teams/team-a/queues", NULL, 403);

  /* finance sees every team (costs are per team) */
  h_request(&srv, "GET", "/v1/teams", finance, NULL, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_uint_eq(json_array_size(json_object_get(r.json, "items")), 4);
  h_resp_free(&r);
}
END_TEST

START_TEST(admin_reads_everything)
{
  static const char *const ok[] = {"/v1/flavors",
                                   "/v1/flavors/l4-reserved",
                                   "/v1/cohorts",
                                   "/v1/cohorts/team-c-d",
                                   "/v1/cluster-queues",
                                   "/v1/cluster-queues/cq-dws",
                                   "/v1/priority-classes",
                                   "/v1/priority-classes/default",
                                   "/v1/teams",
                                   "/v1/teams/team-b",
                                   "/v1/teams/team-b/queues",
                                   "/v1/teams/team-b/queues/dws",
                                   NULL};
  int i;

  for (i = 0; ok[i]; i++)
    expect("admin", admin, "GET", ok[i], NULL, 200);
}
END_TEST

/* An administrator creates and deletes one object of every kind. */
START_TEST(admin_writes_everything)
{
  expect("admin", admin, "PUT", "/v1/flavors/roles-flavor", FLAVOR, 201);
  expect("admin", admin, "PUT", "/v1/cohorts/roles-cohort", "{}", 201);
  expect("admin", admin, "PUT", "/v1/cluster-queues/roles-cq",
         "{\"cohort\": \"roles-cohort\", \"flavors\": [{\"name\": "
         "\"roles-flavor\", \"resources\": {\"gpu\": {\"nominal\": 2}}}]}",
         201);
  expect("admin", admin, "PUT", "/v1/priority-classes/roles-class", PCLASS,
         201);
  expect("admin", admin, "PUT", "/v1/teams/roles-team", TEAM, 201);
  expect("admin", admin, "PUT", "/v1/teams/roles-team/queues/main",
         "{\"cluster_queue\": \"roles-cq\"}", 201);
  /* and updates a reference object */
  expect("admin", admin, "PUT", "/v1/teams/team-d",
         "{\"display_name\": \"Team D\", \"cost_center\": \"ml-applied\", "
         "\"monthly_budget_usd\": 9000, \"budget_policy\": \"warn\"}",
         200);

  expect("admin", admin, "DELETE", "/v1/teams/roles-team/queues/main", NULL,
         204);
  expect("admin", admin, "DELETE", "/v1/priority-classes/roles-class", NULL,
         204);
  expect("admin", admin, "DELETE", "/v1/cluster-queues/roles-cq", NULL, 204);
  expect("admin", admin, "DELETE", "/v1/cohorts/roles-cohort", NULL, 204);
  expect("admin", admin, "DELETE", "/v1/flavors/roles-flavor", NULL, 204);
  expect("admin", admin, "GET", "/v1/flavors/roles-flavor", NULL, 404);
}
END_TEST

/* Without a token every /v1 route is 401, whatever role it needs. */
START_TEST(anonymous_is_401)
{
  size_t i;

  for (i = 0; i < N_ADMIN_ONLY; i++)
    expect("anonymous", NULL, admin_only[i].method, admin_only[i].path,
           admin_only[i].body, 401);
  expect("anonymous", NULL, "GET", "/v1/teams/team-a", NULL, 401);
  expect("anonymous", NULL, "GET", "/v1/teams/team-a/queues", NULL, 401);
}
END_TEST

/* `gpugate token` mints admin, finance and metrics tokens without --team
 * (and they work); a member token still needs one. */
START_TEST(token_command_without_team)
{
  static const char *const roles[] = {"admin", "finance", "metrics"};
  static const char *const paths[] = {
      "/v1/cohorts", "/v1/costs?from=2026-08-01&to=2026-08-31", "/metrics"};
  char out[4096];
  size_t i;

  for (i = 0; i < 3; i++) {
    const char *args[] = {"token", "--role", roles[i], NULL};
    ck_assert_msg(h_gpugate(db_url, args, out, sizeof(out)) == 0, "%s: %s",
                  roles[i], out);
    out[strcspn(out, "\n")] = '\0';
    expect(roles[i], out, "GET", paths[i], NULL, 200);
  }
  {
    const char *args[] = {"token", "--role", "member", NULL};
    ck_assert_int_ne(h_gpugate(db_url, args, out, sizeof(out)), 0);
  }
}
END_TEST

Suite *roles_suite(void)
{
  Suite *s = suite_create("roles");
  TCase *tc = tcase_create("matrix");

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, member_cannot_administer, 0, (int)N_ADMIN_ONLY);
  tcase_add_loop_test(tc, finance_cannot_administer, 0, (int)N_ADMIN_ONLY);
  tcase_add_test(tc, refused_writes_changed_nothing);
  tcase_add_test(tc, member_reads);
  tcase_add_test(tc, member_cannot_see_other_teams);
  tcase_add_test(tc, member_lists_only_own_team);
  tcase_add_test(tc, finance_reads);
  tcase_add_test(tc, admin_reads_everything);
  tcase_add_test(tc, anonymous_is_401);
  tcase_add_test(tc, admin_writes_everything);
  tcase_add_test(tc, token_command_without_team);
  suite_add_tcase(s, tc);
  return s;
}
