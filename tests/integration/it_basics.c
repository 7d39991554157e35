/*
 * it_basics.c — the pipeline every route shares: health, readiness,
 * 404/405, body limits, content types, JSON parsing, request ids, CORS,
 * the OpenAPI document, and `gpugate apply` of the reference architecture.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/harness.h"

Suite *basics_suite(void);

static struct h_server srv;
static char db_url[512];
static char *admin;

static void setup(void)
{
  const char *env[] = {"GPUGATE_CORS_ORIGINS=https://ui.example.com", NULL};

  ck_assert_int_eq(h_db_create("it_basics", db_url, sizeof(db_url)), 0);
  ck_assert_int_eq(h_server_start(&srv, db_url, env), 0);
  admin = h_token("platform", "admin", 3600);
  ck_assert_ptr_nonnull(admin);
}

static void teardown(void)
{
  h_server_stop(&srv);
  free(admin);
}

START_TEST(healthz_and_readyz)
{
  struct h_resp r;
  char id[80];

  ck_assert_int_eq(h_request(&srv, "GET", "/healthz", NULL, NULL, NULL, &r), 0);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "ok");
  ck_assert_ptr_nonnull(h_header(&r, "X-Request-Id", id, sizeof(id)));
  h_resp_free(&r);

  ck_assert_int_eq(h_request(&srv, "GET", "/readyz", NULL, NULL, NULL, &r), 0);
  ck_assert_int_eq(r.status, 200);
  ck_assert_int_eq(json_integer_value(json_object_get(
                       json_object_get(r.json, "migrations"), "applied")),
                   json_integer_value(json_object_get(
                       json_object_get(r.json, "migrations"), "expected")));
  h_resp_free(&r);
}
END_TEST

START_TEST(unknown_path_is_404_problem)
{
  struct h_resp r;

  h_request(&srv, "GET", "/v1/nothing-here", admin, NULL, NULL, &r);
  ck_assert(h_is_problem(&r, 404, NULL));
  h_resp_free(&r);
  h_request(&srv, "GET", "/v1/flavors/a/b/c/d/e/f/g/h/i", admin, NULL, NULL,
            &r);
  ck_assert(h_is_problem(&r, 404, NULL));
  h_resp_free(&r);
}
END_TEST

START_TEST(wrong_method_is_405_with_allow)
{
  struct h_resp r;
  char allow[128];

  h_request(&srv, "POST", "/v1/flavors/x", admin, "{}", NULL, &r);
  ck_assert(h_is_problem(&r, 405, NULL));
  ck_assert_ptr_nonnull(h_header(&r, "Allow", allow, sizeof(allow)));
  ck_assert_str_eq(allow, "GET, PUT, DELETE");
  h_resp_free(&r);
}
END_TEST

/* PUT a 70 KiB JSON object (over the 64 KiB limit) with headers: 413. */
static void assert_big_body_is_413(const char *const *headers)
{
  struct h_resp r;
  size_t n = 70 * 1024;
  char *big = malloc(n + 1);

  ck_assert_ptr_nonnull(big);
  memset(big, ' ', n);
  big[0] = '{';
  big[n - 1] = '}';
  big[n] = '\0';
  h_request(&srv, "PUT", "/v1/cohorts/big", admin, big, headers, &r);
  ck_assert(h_is_problem(&r, 413, NULL));
  h_resp_free(&r);
  free(big);
}

START_TEST(body_over_limit_is_413)
{
  assert_big_body_is_413(NULL);
}
END_TEST

START_TEST(chunked_body_over_limit_is_413)
{
  const char *hdrs[] = {"Transfer-Encoding: chunked", NULL};

  assert_big_body_is_413(hdrs);
}
END_TEST

START_TEST(wrong_content_type_is_415)
{
  struct h_resp r;
  const char *hdrs[] = {"Content-Type: text/plain", NULL};

  h_request(&srv, "PUT", "/v1/cohorts/c1", admin, "{}", hdrs, &r);
  ck_assert(h_is_problem(&r, 415, NULL));
  h_resp_free(&r);
}
END_TEST

START_TEST(bad_json_is_400_naming_body)
{
  static const char *const bodies[] = {
      "{",
      "[1,2]",
      "\"text\"",
      "{\"description\": \"a\", \"description\": "
      "\"b\"}",
      "{} trailing",
      ""};
  size_t i;

  for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
    struct h_resp r;
    h_request(&srv, "PUT", "/v1/cohorts/c1", admin, bodies[i], NULL, &r);
    ck_assert_msg(h_is_problem(&r, 400, "body"), "body %zu: %ld %s", i,
                  r.status, r.body);
    h_resp_free(&r);
  }
}
END_TEST

START_TEST(request_id_is_echoed)
{
  struct h_resp r;
  const char *hdrs[] = {"X-Request-Id: trace-abc.123", NULL};
  const char *evil[] = {"X-Request-Id: bad id with spaces", NULL};
  char id[80];

  h_request(&srv, "GET", "/healthz", NULL, NULL, hdrs, &r);
  ck_assert_str_eq(h_header(&r, "X-Request-Id", id, sizeof(id)),
                   "trace-abc.123");
  h_resp_free(&r);
  h_request(&srv, "GET", "/healthz", NULL, NULL, evil, &r);
  ck_assert_str_ne(h_header(&r, "X-Request-Id", id, sizeof(id)),
                   "bad id with spaces");
  /* one of its own instead: 24 lowercase hex digits */
  ck_assert_uint_eq(strlen(id), 24);
  ck_assert_uint_eq(strspn(id, "0123456789abcdef"), 24);
  h_resp_free(&r);
}
END_TEST

START_TEST(cors_for_configured_origins_only)
{
  struct h_resp r;
  const char *ok[] = {"Origin: https://ui.example.com",
                      "Access-Control-Request-Method: PUT", NULL};
  const char *other[] = {"Origin: https://evil.example.com", NULL};
  char v[256];

  h_request(&srv, "OPTIONS", "/v1/flavors/x", NULL, NULL, ok, &r);
  ck_assert_int_eq(r.status, 204);
  ck_assert_str_eq(h_header(&r, "Access-Control-Allow-Origin", v, sizeof(v)),
                   "https://ui.example.com");
  ck_assert_ptr_nonnull(
      h_header(&r, "Access-Control-Allow-Headers", v, sizeof(v)));
  ck_assert_ptr_nonnull(strstr(v, "Authorization"));
  h_resp_free(&r);

  h_request(&srv, "GET", "/v1/flavors", admin, NULL, ok, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_ptr_nonnull(
      h_header(&r, "Access-Control-Allow-Origin", v, sizeof(v)));
  h_resp_free(&r);

  h_request(&srv, "GET", "/v1/flavors", admin, NULL, other, &r);
  ck_assert_ptr_null(h_header(&r, "Access-Control-Allow-Origin", v, sizeof(v)));
  h_resp_free(&r);
}
END_TEST

START_TEST(openapi_is_served)
{
  struct h_resp r;
  char ct[64];

  h_request(&srv, "GET", "/openapi.json", NULL, NULL, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(json_string_value(json_object_get(r.json, "openapi")),
                   "3.1.0");
  h_resp_free(&r);
  h_request(&srv, "GET", "/openapi.yaml", NULL, NULL, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(h_header(&r, "Content-Type", ct, sizeof(ct)),
                   "application/yaml");
  ck_assert_ptr_nonnull(strstr(r.body, "openapi: 3.1.0"));
  h_resp_free(&r);
}
END_TEST

/* `gpugate apply` loads the reference architecture; twice is idempotent. */
START_TEST(apply_reference_architecture)
{
  const char *args[] = {"apply", "deploy/examples/reference-architecture.json",
                        NULL};
  char out[4096];
  struct h_resp r;
  json_t *cq;
  size_t i;
  int found_hp = 0;

  ck_assert_int_eq(h_gpugate(db_url, args, out, sizeof(out)), 0);
  ck_assert_msg(strstr(out, "0 failed") != NULL, "%s", out);
  ck_assert_int_eq(h_gpugate(db_url, args, out, sizeof(out)), 0);
  ck_assert_msg(strstr(out, "0 created") != NULL, "%s", out);

  h_request(&srv, "GET", "/v1/cluster-queues?limit=500", admin, NULL, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_uint_eq(json_array_size(json_object_get(r.json, "items")), 13);
  json_array_foreach (json_object_get(r.json, "items"), i, cq) {
    const char *name = json_string_value(json_object_get(cq, "name"));
    ck_assert_ptr_nonnull(json_object_get(cq, "status"));
    if (!strcmp(name, "cq-team-a-hp")) {
      json_t *fl = json_array_get(json_object_get(cq, "flavors"), 0);
      found_hp = 1;
      ck_assert_str_eq(json_string_value(json_object_get(fl, "name")),
                       "l4-reserved");
      ck_assert_int_eq(
          json_integer_value(json_object_get(
              json_object_get(json_object_get(fl, "resources"), "gpu"),
              "nominal")),
          4);
    }
  }
  ck_assert(found_hp);
  ck_assert(json_is_null(json_object_get(r.json, "next_cursor")));
  h_resp_free(&r);
}
END_TEST

START_TEST(apply_reports_invalid_objects)
{
  const char *args[] = {"apply", "tests/fixtures/apply-invalid.json", NULL};
  char out[4096];

  ck_assert_int_ne(h_gpugate(db_url, args, out, sizeof(out)), 0);
  ck_assert_msg(strstr(out, "provisioning_model") != NULL, "%s", out);
}
END_TEST

/* Pages follow next_cursor until null and see every object once. */
START_TEST(list_pagination)
{
  struct h_resp r;
  char path[256], cursor[128] = "";
  int i, seen = 0, pages = 0;

  for (i = 0; i < 7; i++) {
    snprintf(path, sizeof(path), "/v1/cohorts/page-%d", i);
    h_request(&srv, "PUT", path, admin, "{}", NULL, &r);
    ck_assert_int_le(r.status, 201);
    h_resp_free(&r);
  }
  do {
    json_t *next;
    snprintf(path, sizeof(path), "/v1/cohorts?limit=3%s%s",
             cursor[0] ? "&cursor=" : "", cursor);
    h_request(&srv, "GET", path, admin, NULL, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    seen += (int)json_array_size(json_object_get(r.json, "items"));
    next = json_object_get(r.json, "next_cursor");
    cursor[0] = '\0';
    if (json_is_string(next))
      snprintf(cursor, sizeof(cursor), "%s", json_string_value(next));
    h_resp_free(&r);
    pages++;
  } while (cursor[0] && pages < 20);
  ck_assert_int_ge(seen, 7);
  ck_assert_int_ge(pages, 3);

  h_request(&srv, "GET", "/v1/cohorts?limit=0", admin, NULL, NULL, &r);
  ck_assert(h_is_problem(&r, 400, "limit"));
  h_resp_free(&r);
  h_request(&srv, "GET", "/v1/cohorts?cursor=%25%25", admin, NULL, NULL, &r);
  ck_assert(h_is_problem(&r, 400, "cursor"));
  h_resp_free(&r);
}
END_TEST

/* A team over GPUGATE_RATE_LIMIT_RPS gets 429 with Retry-After; other
 * teams are not affected. */
START_TEST(rate_limit_per_team)
{
  const char *env[] = {"GPUGATE_RATE_LIMIT_RPS=1", NULL};
  struct h_server slow;
  struct h_resp r;
  char url[512], retry[16];
  char *a = h_token("team-a", "member", 600);
  char *b = h_token("team-b", "member", 600);
  int i, limited = 0;

  ck_assert_int_eq(h_db_create("it_basics_rl", url, sizeof(url)), 0);
  ck_assert_int_eq(h_server_start(&slow, url, env), 0);
  for (i = 0; i < 4; i++) {
    h_request(&slow, "GET", "/v1/flavors", a, NULL, NULL, &r);
    if (r.status == 429) {
      limited++;
      ck_assert(h_is_problem(&r, 429, NULL));
      ck_assert_ptr_nonnull(h_header(&r, "Retry-After", retry, sizeof(retry)));
      ck_assert_int_ge(strtol(retry, NULL, 10), 1);
    }
    h_resp_free(&r);
  }
  ck_assert_int_ge(limited, 1); /* burst is 2 */
  h_request(&slow, "GET", "/v1/flavors", b, NULL, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  h_resp_free(&r);
  h_server_stop(&slow);
  free(a);
  free(b);
}
END_TEST

Suite *basics_suite(void)
{
  Suite *s = suite_create("basics");
  TCase *tc = tcase_create("pipeline");

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, healthz_and_readyz);
  tcase_add_test(tc, unknown_path_is_404_problem);
  tcase_add_test(tc, wrong_method_is_405_with_allow);
  tcase_add_test(tc, body_over_limit_is_413);
  tcase_add_test(tc, chunked_body_over_limit_is_413);
  tcase_add_test(tc, wrong_content_type_is_415);
  tcase_add_test(tc, bad_json_is_400_naming_body);
  tcase_add_test(tc, request_id_is_echoed);
  tcase_add_test(tc, cors_for_configured_origins_only);
  tcase_add_test(tc, openapi_is_served);
  tcase_add_test(tc, apply_reference_architecture);
  tcase_add_test(tc, apply_reports_invalid_objects);
  tcase_add_test(tc, list_pagination);
  tcase_add_test(tc, rate_limit_per_team);
  suite_add_tcase(s, tc);
  return s;
}
