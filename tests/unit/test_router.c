/*
 * test_router.c — server/router.c as tables of cases: every route in
 * server/routes.def reached through its own pattern, then method + path
 * pairs with the exact outcome (route and parameters, 404, 405 with its
 * Allow list, or a path refused as malformed).
 *
 * Behaviour these cases pin down:
 *   - one trailing slash is ignored ("/v1/flavors/" is "/v1/flavors"); two
 *     are an empty segment;
 *   - an empty segment anywhere ("//"), a path not starting with '/', a
 *     segment of 256 bytes or more, or more than 8 segments is
 *     ROUTER_BAD_PATH, whether or not a route could have matched;
 *   - a parameter of 64 to 255 bytes matches with an empty value (no name
 *     is that long), so the handler answers naming the parameter;
 *   - segments and methods compare case-sensitively and are not decoded
 *     (no percent-decoding, no HEAD-for-GET);
 *   - the Allow list names the methods in routes.def order.
 */
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "server/req.h"
#include "server/router.h"

Suite *router_suite(void);

static void router_setup(void)
{
  ck_assert_int_eq(router_init(), 0);
}

/* 63 and 64 bytes: the longest name and the shortest that is not one;
 * 256 bytes: a segment the router refuses. */
#define X16 "xxxxxxxxxxxxxxxx"
#define X63 X16 X16 X16 "xxxxxxxxxxxxxxx"
#define X64 X16 X16 X16 X16
#define X256 X64 X64 X64 X64

/*
 * Build the path of route r with every {param} replaced by a sample value
 * ("v-<param>"); returns 0, or -1 when it does not fit.
 */
static int sample_path(const struct route *r, char *out, size_t outlen)
{
  size_t used = 0;
  int s, p = 0;

  snprintf(out, outlen, "/"); /* the root, when there are no segments */
  for (s = 0; s < r->n_segments; s++) {
    int w;
    if (r->segments[s])
      w = snprintf(out + used, outlen - used, "/%s", r->segments[s]);
    else
      w = snprintf(out + used, outlen - used, "/v-%s", r->param_names[p++]);
    if (w < 0 || (size_t)w >= outlen - used)
      return -1;
    used += (size_t)w;
  }
  return 0;
}

/* Every route matches its own pattern, and no earlier route shadows it. */
START_TEST(every_route)
{
  size_t n;
  const struct route *routes = router_routes(&n);
  const struct route *r = &routes[_i], *got = NULL;
  struct gg_req req;
  char path[512], allow[64], want[64];
  int p, s, params = 0;

  ck_assert_uint_gt(n, (size_t)_i);
  ck_assert_int_eq(sample_path(r, path, sizeof(path)), 0);
  req_init(&req, NULL);
  ck_assert_msg(router_match(r->method, path, &got, &req, allow,
                             sizeof(allow)) == ROUTER_FOUND,
                "route %zu %s %s: %s not found", (size_t)_i, r->method,
                r->pattern, path);
  ck_assert_msg(got == r, "route %s %s: %s matched %s %s instead", r->method,
                r->pattern, path, got->method, got->pattern);
  for (s = 0; s < r->n_segments; s++)
    params += r->segments[s] == NULL;
  ck_assert_msg(req.n_params == params, "route %s %s: %d params, want %d",
                r->method, r->pattern, req.n_params, params);
  for (p = 0; p < req.n_params; p++) {
    const char *v = req_param(&req, r->param_names[p]);
    snprintf(want, sizeof(want), "v-%s", r->param_names[p]);
    ck_assert_msg(v != NULL && !strcmp(v, want),
                  "route %s %s: param %s is \"%s\", want \"%s\"", r->method,
                  r->pattern, r->param_names[p], v ? v : "(null)", want);
  }
  /* {team} is where team_param says, and only routes with {team} have it */
  if (strstr(r->pattern, "{team}")) {
    ck_assert_msg(r->team_param >= 0 && r->team_param < req.n_params,
                  "route %s %s: team_param %d", r->method, r->pattern,
                  r->team_param);
    ck_assert_str_eq(req.param_values[r->team_param], "v-team");
  } else {
    ck_assert_msg(r->team_param == -1, "route %s %s: team_param %d", r->method,
                  r->pattern, r->team_param);
  }
  ck_assert_ptr_null(req_param(&req, "nonexistent"));
  req_cleanup(&req);
}
END_TEST

/* Routes and the index of their {team} parameter, stated by hand. */
static const struct {
  const char *method, *pattern;
  int team_param;
  int n_params;
} team_cases[] = {
    {"GET", "/healthz", -1, 0},
    {"GET", "/v1/flavors", -1, 0},
    {"GET", "/v1/flavors/{name}", -1, 1},
    {"PUT", "/v1/cohorts/{name}", -1, 1},
    {"GET", "/v1/teams", -1, 0},
    {"GET", "/v1/teams/{team}", 0, 1},
    {"PUT", "/v1/teams/{team}", 0, 1},
    {"GET", "/v1/teams/{team}/queues", 0, 1},
    {"GET", "/v1/teams/{team}/queues/{queue}", 0, 2},
    {"DELETE", "/v1/teams/{team}/queues/{queue}", 0, 2},
};

START_TEST(team_param)
{
  size_t n, i;
  const struct route *routes = router_routes(&n);
  const struct route *r = NULL;
  int params = 0, s;

  for (i = 0; i < n; i++)
    if (!strcmp(routes[i].method, team_cases[_i].method) &&
        !strcmp(routes[i].pattern, team_cases[_i].pattern))
      r = &routes[i];
  ck_assert_msg(r != NULL, "case %d: no route %s %s", _i, team_cases[_i].method,
                team_cases[_i].pattern);
  for (s = 0; s < r->n_segments; s++)
    params += r->segments[s] == NULL;
  ck_assert_msg(r->team_param == team_cases[_i].team_param &&
                    params == team_cases[_i].n_params,
                "case %d (%s %s): team_param %d, %d params; want %d, %d", _i,
                r->method, r->pattern, r->team_param, params,
                team_cases[_i].team_param, team_cases[_i].n_params);
}
END_TEST

/*
 * One request: the outcome, and for ROUTER_FOUND the handler name and the
 * parameters as "name=value name=value"; for ROUTER_NO_METHOD the Allow
 * list.
 */
static const struct {
  const char *method, *path;
  enum router_result result;
  const char *handler; /* ROUTER_FOUND */
  const char *params;  /* ROUTER_FOUND: "a=1 b=2", "" for none */
  const char *allow;   /* ROUTER_NO_METHOD */
} match_cases[] = {
    /* found, parameters by name */
    {"GET", "/healthz", ROUTER_FOUND, "health_live", "", NULL},
    {"GET", "/readyz", ROUTER_FOUND, "health_ready", "", NULL},
    {"GET", "/openapi.json", ROUTER_FOUND, "openapi_json", "", NULL},
    {"GET", "/v1/flavors", ROUTER_FOUND, "flavors_list", "", NULL},
    {"GET", "/v1/flavors/a100", ROUTER_FOUND, "flavors_get", "name=a100", NULL},
    {"PUT", "/v1/flavors/h100-spot", ROUTER_FOUND, "flavors_put",
     "name=h100-spot", NULL},
    {"DELETE", "/v1/cluster-queues/cq-1", ROUTER_FOUND, "cluster_queues_delete",
     "name=cq-1", NULL},
    {"GET", "/v1/priority-classes/high", ROUTER_FOUND, "priority_classes_get",
     "name=high", NULL},
    {"GET", "/v1/teams/ml", ROUTER_FOUND, "teams_get", "team=ml", NULL},
    {"GET", "/v1/teams/ml/queues", ROUTER_FOUND, "queues_list", "team=ml",
     NULL},
    {"PUT", "/v1/teams/ml/queues/train", ROUTER_FOUND, "queues_put",
     "team=ml queue=train", NULL},
    {"DELETE", "/v1/teams/a/queues/b", ROUTER_FOUND, "queues_delete",
     "team=a queue=b", NULL},
    /* a parameter may look like a literal segment; values are verbatim */
    {"GET", "/v1/teams/queues/queues/teams", ROUTER_FOUND, "queues_get",
     "team=queues queue=teams", NULL},
    {"GET", "/v1/flavors/A%20B", ROUTER_FOUND, "flavors_get", "name=A%20B",
     NULL},
    {"GET", "/v1/flavors/" X63, ROUTER_FOUND, "flavors_get", "name=" X63, NULL},
    /* one trailing slash is ignored */
    {"GET", "/v1/flavors/", ROUTER_FOUND, "flavors_list", "", NULL},
    {"GET", "/v1/flavors/a100/", ROUTER_FOUND, "flavors_get", "name=a100",
     NULL},
    {"GET", "/healthz/", ROUTER_FOUND, "health_live", "", NULL},
    {"GET", "/v1/teams/ml/queues/q/", ROUTER_FOUND, "queues_get",
     "team=ml queue=q", NULL},

    /* the console at the root; the summary is not taken for a job id */
    {"GET", "/", ROUTER_FOUND, "console_page", "", NULL},
    {"POST", "/", ROUTER_NO_METHOD, NULL, NULL, "GET"},
    {"GET", "/ui/app.js", ROUTER_FOUND, "console_asset", "file=app.js", NULL},
    {"GET", "/v1/teams/t/jobs/summary", ROUTER_FOUND, "jobs_summary", "team=t",
     NULL},
    {"GET", "/v1/teams/t/jobs/j-1", ROUTER_FOUND, "jobs_get", "team=t id=j-1",
     NULL},

    /* 404: unknown, prefix only, extra or missing segments */
    {"GET", "/nope", ROUTER_NO_PATH, NULL, NULL, NULL},
    {"GET", "/v1", ROUTER_NO_PATH, NULL, NULL, NULL},
    {"GET", "/v1/", ROUTER_NO_PATH, NULL, NULL, NULL},
    {"GET", "/v2/flavors", ROUTER_NO_PATH, NULL, NULL, NULL},
    {"GET", "/v1/flavor", ROUTER_NO_PATH, NULL, NULL, NULL},
    {"GET", "/v1/flavorsx", ROUTER_NO_PATH, NULL, NULL, NULL},
    {"GET", "/V1/flavors", ROUTER_NO_PATH, NULL, NULL, NULL},
    {"GET", "/v1/flavors/a100/extra", ROUTER_NO_PATH, NULL, NULL, NULL},
    {"GET", "/v1/teams/ml/queues/q/extra", ROUTER_NO_PATH, NULL, NULL, NULL},
    {"GET", "/v1/teams/ml/nope", ROUTER_NO_PATH, NULL, NULL, NULL},
    {"GET", "/healthz/x", ROUTER_NO_PATH, NULL, NULL, NULL},
    {"GET", "/healthz?verbose=1", ROUTER_NO_PATH, NULL, NULL, NULL},
    {"POST", "/nope", ROUTER_NO_PATH, NULL, NULL, NULL},
    {"GET", "/a/b/c/d/e/f/g/h", ROUTER_NO_PATH, NULL, NULL, NULL},
    {"GET", "/a/b/c/d/e/f/g/h/", ROUTER_NO_PATH, NULL, NULL, NULL},

    /* 405: the exact Allow list, in routes.def order */
    {"POST", "/v1/flavors/x", ROUTER_NO_METHOD, NULL, NULL, "GET, PUT, DELETE"},
    {"DELETE", "/v1/teams/x", ROUTER_NO_METHOD, NULL, NULL, "GET, PUT"},
    {"POST", "/v1/teams", ROUTER_NO_METHOD, NULL, NULL, "GET"},
    {"DELETE", "/v1/flavors", ROUTER_NO_METHOD, NULL, NULL, "GET"},
    {"POST", "/healthz", ROUTER_NO_METHOD, NULL, NULL, "GET"},
    {"HEAD", "/healthz", ROUTER_NO_METHOD, NULL, NULL, "GET"},
    {"get", "/healthz", ROUTER_NO_METHOD, NULL, NULL, "GET"},
    {"PATCH", "/v1/teams/ml/queues/q", ROUTER_NO_METHOD, NULL, NULL,
     "GET, PUT, DELETE"},
    {"POST", "/v1/teams/ml/queues", ROUTER_NO_METHOD, NULL, NULL, "GET"},
    {"POST", "/v1/teams/ml/", ROUTER_NO_METHOD, NULL, NULL, "GET, PUT"},

    /* malformed: empty segments, no leading '/', too long, too many */
    {"GET", "", ROUTER_BAD_PATH, NULL, NULL, NULL},
    {"GET", "healthz", ROUTER_BAD_PATH, NULL, NULL, NULL},
    {"GET", "//", ROUTER_BAD_PATH, NULL, NULL, NULL},
    {"GET", "//healthz", ROUTER_BAD_PATH, NULL, NULL, NULL},
    {"GET", "/v1//flavors", ROUTER_BAD_PATH, NULL, NULL, NULL},
    {"GET", "/v1/flavors//", ROUTER_BAD_PATH, NULL, NULL, NULL},
    {"GET", "/v1/teams//queues", ROUTER_BAD_PATH, NULL, NULL, NULL},
    {"GET", "/v1/flavors/" X64, ROUTER_FOUND, "flavors_get", "name=", NULL},
    {"GET", "/v1/flavors/" X256, ROUTER_BAD_PATH, NULL, NULL, NULL},
    {"GET", "/" X64, ROUTER_NO_PATH, NULL, NULL, NULL},
    {"POST", "/v1/teams/" X64, ROUTER_NO_METHOD, NULL, NULL, "GET, PUT"},
    {"GET", "/a/b/c/d/e/f/g/h/i", ROUTER_BAD_PATH, NULL, NULL, NULL},
    {"GET", "/v1/teams/a/queues/b/c/d/e/f", ROUTER_BAD_PATH, NULL, NULL, NULL},
};

static const char *result_name(enum router_result r)
{
  switch (r) {
  case ROUTER_FOUND:
    return "FOUND";
  case ROUTER_NO_PATH:
    return "NO_PATH";
  case ROUTER_NO_METHOD:
    return "NO_METHOD";
  case ROUTER_BAD_PATH:
    return "BAD_PATH";
  }
  return "?";
}

START_TEST(match)
{
  const char *method = match_cases[_i].method, *path = match_cases[_i].path;
  const struct route *got = NULL;
  struct gg_req req;
  char allow[64], params[256];
  enum router_result res;
  size_t used = 0;
  int p;

  req_init(&req, NULL);
  memcpy(allow, "untouched", sizeof("untouched"));
  res = router_match(method, path, &got, &req, allow, sizeof(allow));
  ck_assert_msg(res == match_cases[_i].result, "%s %s: %s, want %s", method,
                path, result_name(res), result_name(match_cases[_i].result));
  params[0] = '\0';
  for (p = 0; p < req.n_params; p++) {
    int w = snprintf(params + used, sizeof(params) - used, "%s%s=%s",
                     p ? " " : "", req.param_names[p], req.param_values[p]);
    ck_assert(w > 0 && (size_t)w < sizeof(params) - used);
    used += (size_t)w;
    /* req_param finds each by name */
    ck_assert_str_eq(req_param(&req, req.param_names[p]), req.param_values[p]);
  }
  switch (res) {
  case ROUTER_FOUND:
    ck_assert_msg(!strcmp(got->name, match_cases[_i].handler), "%s %s: %s",
                  method, path, got->name);
    ck_assert_msg(!strcmp(params, match_cases[_i].params),
                  "%s %s: params \"%s\", want \"%s\"", method, path, params,
                  match_cases[_i].params);
    ck_assert_ptr_eq(req.route, NULL); /* only *out is set */
    break;
  case ROUTER_NO_METHOD:
    ck_assert_msg(!strcmp(allow, match_cases[_i].allow),
                  "%s %s: Allow \"%s\", want \"%s\"", method, path, allow,
                  match_cases[_i].allow);
    ck_assert_ptr_null(got);
    ck_assert_int_eq(req.n_params, 0);
    break;
  case ROUTER_NO_PATH:
    ck_assert_msg(allow[0] == '\0', "%s %s: Allow \"%s\"", method, path, allow);
    ck_assert_ptr_null(got);
    ck_assert_int_eq(req.n_params, 0);
    break;
  case ROUTER_BAD_PATH:
    ck_assert_ptr_null(got);
    ck_assert_int_eq(req.n_params, 0);
    break;
  }
  req_cleanup(&req);
}
END_TEST

/*
 * The Allow buffer is bounded: always NUL-terminated, a prefix of the full
 * list, and not written at all when its length is 0 (the server probes
 * routes that way before a body is read).
 */
static const struct {
  const char *method, *path;
  size_t allowlen;
  const char *allow;
} allow_cases[] = {
    {"POST", "/v1/flavors/x", 17, "GET, PUT, DELETE"},
    {"POST", "/v1/flavors/x", 16, "GET, PUT, DELET"},
    {"POST", "/v1/flavors/x", 9, "GET, PUT"},
    {"POST", "/v1/flavors/x", 8, "GET, PU"},
    {"POST", "/v1/flavors/x", 4, "GET"},
    {"POST", "/v1/flavors/x", 2, "G"},
    {"POST", "/v1/flavors/x", 1, ""},
    {"POST", "/v1/flavors/x", 0, "sentinel"},
    {"DELETE", "/v1/teams/x", 0, "sentinel"},
};

START_TEST(allow_bounds)
{
  const struct route *got = NULL;
  struct gg_req req;
  char allow[32];

  req_init(&req, NULL);
  memcpy(allow, "sentinel", sizeof("sentinel"));
  ck_assert_int_eq(router_match(allow_cases[_i].method, allow_cases[_i].path,
                                &got, &req, allow, allow_cases[_i].allowlen),
                   ROUTER_NO_METHOD);
  ck_assert_msg(!strcmp(allow, allow_cases[_i].allow),
                "%s %s with allowlen %zu: \"%s\", want \"%s\"",
                allow_cases[_i].method, allow_cases[_i].path,
                allow_cases[_i].allowlen, allow, allow_cases[_i].allow);
  req_cleanup(&req);
}
END_TEST

/* router_init() again recompiles the same table: matching is unchanged. */
START_TEST(init_twice)
{
  const struct route *got = NULL;
  struct gg_req req;
  char allow[64];

  ck_assert_int_eq(router_init(), 0);
  req_init(&req, NULL);
  ck_assert_int_eq(router_match("GET", "/v1/teams/t/queues/q", &got, &req,
                                allow, sizeof(allow)),
                   ROUTER_FOUND);
  ck_assert_str_eq(got->name, "queues_get");
  ck_assert_str_eq(req_param(&req, "team"), "t");
  ck_assert_str_eq(req_param(&req, "queue"), "q");
  req_cleanup(&req);
}
END_TEST

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The router suite: the table, matching, Allow lists, malformed paths. */
Suite *router_suite(void)
{
  Suite *s = suite_create("router");
  TCase *tc;
  size_t n;

  router_routes(&n);
  tc = tcase_create("router");
  tcase_add_unchecked_fixture(tc, router_setup, NULL);
  tcase_add_loop_test(tc, every_route, 0, (int)n);
  tcase_add_loop_test(tc, team_param, 0, N_OF(team_cases));
  tcase_add_loop_test(tc, match, 0, N_OF(match_cases));
  tcase_add_loop_test(tc, allow_bounds, 0, N_OF(allow_cases));
  tcase_add_test(tc, init_twice);
  suite_add_tcase(s, tc);
  return s;
}
