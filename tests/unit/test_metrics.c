/*
 * test_metrics.c — lib/metrics.c as a table of cases: from an empty
 * registry, a fixed sequence of calls, then blocks of exposition text that
 * must appear verbatim (whole lines, in that order) and lines that must
 * not. Covers label escaping, cumulative histogram buckets, gauge sets
 * replaced whole, bounded label sets and value formatting.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/metrics.h"

Suite *metrics_suite(void);

#define MAX_BLOCKS 4

struct metrics_case {
  const char *name;
  void (*calls)(void);
  const char *present[MAX_BLOCKS]; /* each a run of whole lines */
  const char *absent[MAX_BLOCKS];  /* substrings that must not appear */
};

static void batch_calls(void)
{
  metrics_batch_call("create", 200);
  metrics_batch_call("list", 0);
  metrics_batch_call("create", 200);
  metrics_batch_call("cancel", 429);
}

static void http_calls(void)
{
  metrics_http("/v1/teams/{team}/jobs", "POST", 201, 0.003);
  metrics_http("/v1/teams/{team}/jobs", "POST", 201, 0.2);
  metrics_http("/healthz", "GET", 200, 7);
}

static void method_calls(void)
{
  metrics_http("(none)", "BREW", 405, 0.001);
  metrics_http("(none)", "PROPFIND", 405, 0.001);
  metrics_http("(none)", NULL, 400, 0.001);
  metrics_http("/healthz", "get", 405, 0.001);
}

static void escape_calls(void)
{
  metrics_admitted("a\"b\\c\nd", "l4-spot");
  metrics_evicted("cq-x", "Pre\"empted");
}

static void counter_calls(void)
{
  metrics_admitted("cq-a", "l4-spot");
  metrics_admitted("cq-a", "l4-spot");
  metrics_admitted("cq-a", "l4-reserved");
  metrics_evicted("cq-a", "Preempted");
  metrics_billing_rows(5);
  metrics_billing_rows(-3);
  metrics_billing_rows(2);
  metrics_dispatch_backlog(10);
  metrics_dispatch_backlog(-1);
  metrics_dispatch_backlog(3);
}

static void wait_calls(void)
{
  metrics_admission_wait(-5); /* clock skew: counted as 0 */
  metrics_admission_wait(0.3);
  metrics_admission_wait(45);
  metrics_admission_wait(100000);
}

static void cycle_calls(void)
{
  metrics_admission_cycle(0.004);
  metrics_admission_cycle(0.004);
}

static void gauge_calls(void)
{
  struct metrics_gauges *g = metrics_gauges_new();

  metrics_gauge_pending(g, "cq-a", "InsufficientQuota", 3);
  metrics_gauge_pending(g, "cq-b", "InsufficientQuota", 0);
  metrics_gauge_quota(g, "cq-a", "l4-spot", "gpu", 8, 12, 4);
  metrics_gauge_quota(g, "cq-b", "l4-spot", "gpu", 0, 2, -1);
  metrics_publish_queues(g);
  /* the next cycle: cq-b was deleted */
  g = metrics_gauges_new();
  metrics_gauge_pending(g, "cq-a", "InsufficientQuota", 1);
  metrics_gauge_quota(g, "cq-a", "l4-spot", "gpu", 10, 12, 4);
  metrics_publish_queues(g);
}

static void cleared_calls(void)
{
  struct metrics_gauges *g = metrics_gauges_new();

  metrics_gauge_pending(g, "cq-a", "InsufficientQuota", 3);
  metrics_publish_queues(g);
  metrics_publish_queues(NULL); /* no longer the leader */
}

static void cost_calls(void)
{
  struct metrics_gauges *g = metrics_gauges_new();

  metrics_gauge_team_cost(g, "team-a", 12.34);
  metrics_gauge_team_cost(g, "team-b", 0);
  metrics_gauge_team_cost(g, "(unattributed)", -0.5);
  metrics_publish_team_costs(g);
  metrics_gauges_free(NULL);
  metrics_gauge_pending(NULL, "x", "y", 1); /* no set: nothing happens */
}

static const struct metrics_case cases[] = {
    {"batch counters, insertion order",
     batch_calls,
     {"# HELP gpugate_batch_requests_total Cloud Batch API calls by operation "
      "and HTTP status (0: no response).\n"
      "# TYPE gpugate_batch_requests_total counter\n"
      "gpugate_batch_requests_total{op=\"create\",code=\"200\"} 2\n"
      "gpugate_batch_requests_total{op=\"list\",code=\"0\"} 1\n"
      "gpugate_batch_requests_total{op=\"cancel\",code=\"429\"} 1\n"},
     {NULL}},
    {"http counter and cumulative histogram",
     http_calls,
     {"# TYPE gpugate_http_requests_total counter\n"
      "gpugate_http_requests_total{route=\"/v1/teams/{team}/jobs\",method="
      "\"POST\",code=\"201\"} 2\n"
      "gpugate_http_requests_total{route=\"/healthz\",method=\"GET\",code="
      "\"200\"} 1\n",
      "# TYPE gpugate_http_request_duration_seconds histogram\n"
      "gpugate_http_request_duration_seconds_bucket{le=\"0.001\"} 0\n"
      "gpugate_http_request_duration_seconds_bucket{le=\"0.0025\"} 0\n"
      "gpugate_http_request_duration_seconds_bucket{le=\"0.005\"} 1\n"
      "gpugate_http_request_duration_seconds_bucket{le=\"0.01\"} 1\n"
      "gpugate_http_request_duration_seconds_bucket{le=\"0.025\"} 1\n"
      "gpugate_http_request_duration_seconds_bucket{le=\"0.05\"} 1\n"
      "gpugate_http_request_duration_seconds_bucket{le=\"0.1\"} 1\n"
      "gpugate_http_request_duration_seconds_bucket{le=\"0.25\"} 2\n"
      "gpugate_http_request_duration_seconds_bucket{le=\"0.5\"} 2\n"
      "gpugate_http_request_duration_seconds_bucket{le=\"1\"} 2\n"
      "gpugate_http_request_duration_seconds_bucket{le=\"2.5\"} 2\n"
      "gpugate_http_request_duration_seconds_bucket{le=\"5\"} 2\n"
      "gpugate_http_request_duration_seconds_bucket{le=\"+Inf\"} 3\n"
      "gpugate_http_request_duration_seconds_sum 7.203\n"
      "gpugate_http_request_duration_seconds_count 3\n"},
     {NULL}},
    {"methods are a bounded set",
     method_calls,
     {"gpugate_http_requests_total{route=\"(none)\",method=\"other\",code="
      "\"405\"} 2\n"
      "gpugate_http_requests_total{route=\"(none)\",method=\"other\",code="
      "\"400\"} 1\n"
      "gpugate_http_requests_total{route=\"/healthz\",method=\"other\",code="
      "\"405\"} 1\n"},
     {"BREW", "PROPFIND", "\"get\""}},
    {"label values escaped",
     escape_calls,
     {"gpugate_admitted_jobs_total{cluster_queue=\"a\\\"b\\\\c\\nd\",flavor="
      "\"l4-spot\"} 1\n",
      "gpugate_evicted_jobs_total{cluster_queue=\"cq-x\",reason="
      "\"Pre\\\"empted\"} 1\n"},
     {NULL}},
    {"counters, billing rows and backlog",
     counter_calls,
     {"# TYPE gpugate_admitted_jobs_total counter\n"
      "gpugate_admitted_jobs_total{cluster_queue=\"cq-a\",flavor=\"l4-spot\"} "
      "2\n"
      "gpugate_admitted_jobs_total{cluster_queue=\"cq-a\",flavor="
      "\"l4-reserved\"} 1\n",
      "gpugate_evicted_jobs_total{cluster_queue=\"cq-a\",reason="
      "\"Preempted\"} 1\n",
      "# TYPE gpugate_dispatch_backlog gauge\n"
      "gpugate_dispatch_backlog 3\n",
      "# TYPE gpugate_billing_rows_ingested_total counter\n"
      "gpugate_billing_rows_ingested_total 7\n"},
     {NULL}},
    {"an empty registry",
     NULL,
     {"# TYPE gpugate_billing_rows_ingested_total counter\n"
      "gpugate_billing_rows_ingested_total 0\n",
      "# TYPE gpugate_dispatch_backlog gauge\n"
      "# HELP gpugate_billing_rows_ingested_total",
      "# TYPE gpugate_pending_jobs gauge\n"
      "# HELP gpugate_admitted_jobs_total",
      "gpugate_admission_cycle_seconds_bucket{le=\"+Inf\"} 0\n"
      "gpugate_admission_cycle_seconds_sum 0\n"
      "gpugate_admission_cycle_seconds_count 0\n"},
     {"gpugate_pending_jobs{", "gpugate_dispatch_backlog 0"}},
    {"admission wait buckets",
     wait_calls,
     {"gpugate_admission_wait_seconds_bucket{le=\"0.1\"} 1\n"
      "gpugate_admission_wait_seconds_bucket{le=\"0.5\"} 2\n"
      "gpugate_admission_wait_seconds_bucket{le=\"1\"} 2\n"
      "gpugate_admission_wait_seconds_bucket{le=\"5\"} 2\n"
      "gpugate_admission_wait_seconds_bucket{le=\"15\"} 2\n"
      "gpugate_admission_wait_seconds_bucket{le=\"30\"} 2\n"
      "gpugate_admission_wait_seconds_bucket{le=\"60\"} 3\n",
      "gpugate_admission_wait_seconds_bucket{le=\"86400\"} 3\n"
      "gpugate_admission_wait_seconds_bucket{le=\"+Inf\"} 4\n"
      "gpugate_admission_wait_seconds_sum 100045.3\n"
      "gpugate_admission_wait_seconds_count 4\n"},
     {NULL}},
    {"cycle histogram",
     cycle_calls,
     {"gpugate_admission_cycle_seconds_bucket{le=\"0.0025\"} 0\n"
      "gpugate_admission_cycle_seconds_bucket{le=\"0.005\"} 2\n",
      "gpugate_admission_cycle_seconds_sum 0.008\n"
      "gpugate_admission_cycle_seconds_count 2\n"},
     {NULL}},
    {"queue gauges replaced whole",
     gauge_calls,
     {"# TYPE gpugate_pending_jobs gauge\n"
      "gpugate_pending_jobs{cluster_queue=\"cq-a\",reason="
      "\"InsufficientQuota\"} 1\n"
      "# HELP ",
      "# TYPE gpugate_cluster_queue_usage gauge\n"
      "gpugate_cluster_queue_usage{cluster_queue=\"cq-a\",flavor=\"l4-spot\","
      "resource=\"gpu\"} 10\n"
      "# HELP ",
      "# TYPE gpugate_cluster_queue_nominal_quota gauge\n"
      "gpugate_cluster_queue_nominal_quota{cluster_queue=\"cq-a\",flavor="
      "\"l4-spot\",resource=\"gpu\"} 12\n"
      "# HELP ",
      "# TYPE gpugate_cluster_queue_borrowing_limit gauge\n"
      "gpugate_cluster_queue_borrowing_limit{cluster_queue=\"cq-a\",flavor="
      "\"l4-spot\",resource=\"gpu\"} 4\n"
      "# HELP "},
     {"cq-b"}},
    {"gauges cleared off the leader",
     cleared_calls,
     {"# TYPE gpugate_pending_jobs gauge\n# HELP "},
     {"gpugate_pending_jobs{"}},
    {"team costs, values formatted shortest",
     cost_calls,
     {"# TYPE gpugate_team_month_net_cost_usd gauge\n"
      "gpugate_team_month_net_cost_usd{team=\"team-a\"} 12.34\n"
      "gpugate_team_month_net_cost_usd{team=\"team-b\"} 0\n"
      "gpugate_team_month_net_cost_usd{team=\"(unattributed)\"} -0.5\n"},
     {NULL}},
};

/* True when block occurs in text starting at the beginning of a line. */
static bool has_block(const char *text, const char *block)
{
  const char *p = text;

  while ((p = strstr(p, block)) != NULL) {
    if (p == text || p[-1] == '\n')
      return true;
    p++;
  }
  return false;
}

START_TEST(render_table)
{
  const struct metrics_case *c = &cases[_i];
  char *text;
  int k;

  metrics_reset();
  if (c->calls)
    c->calls();
  text = metrics_render();
  ck_assert_ptr_nonnull(text);
  for (k = 0; k < MAX_BLOCKS && c->present[k]; k++)
    ck_assert_msg(has_block(text, c->present[k]),
                  "%s: missing block\n%s\n--- in ---\n%s", c->name,
                  c->present[k], text);
  for (k = 0; k < MAX_BLOCKS && c->absent[k]; k++)
    ck_assert_msg(!strstr(text, c->absent[k]), "%s: unexpected \"%s\"", c->name,
                  c->absent[k]);
  free(text);
  metrics_reset();
}
END_TEST

/* Every line is a comment (HELP / TYPE of a family seen once) or a sample
 * "name{labels} value" / "name value"; each family's samples follow its
 * TYPE line. */
START_TEST(well_formed)
{
  char *text, *line, *next;
  char family[128] = "";
  int types = 0;

  metrics_reset();
  http_calls();
  counter_calls();
  gauge_calls();
  cost_calls();
  text = metrics_render();
  ck_assert_ptr_nonnull(text);
  ck_assert(text[strlen(text) - 1] == '\n');
  for (line = text; *line; line = next) {
    char *nl = strchr(line, '\n');
    ck_assert_ptr_nonnull(nl);
    *nl = '\0';
    next = nl + 1;
    if (!strncmp(line, "# HELP ", 7))
      continue;
    if (!strncmp(line, "# TYPE ", 7)) {
      char *sp = strchr(line + 7, ' ');
      ck_assert_ptr_nonnull(sp);
      snprintf(family, sizeof(family), "%.*s", (int)(sp - (line + 7)),
               line + 7);
      ck_assert_msg(!strcmp(sp + 1, "counter") || !strcmp(sp + 1, "gauge") ||
                        !strcmp(sp + 1, "histogram"),
                    "%s", line);
      types++;
      continue;
    }
    ck_assert_msg(line[0] != '#', "%s", line);
    ck_assert_msg(!strncmp(line, family, strlen(family)),
                  "sample %s outside family %s", line, family);
    {
      char *sp = strrchr(line, ' ');
      char *end;
      ck_assert_ptr_nonnull(sp);
      if (strcmp(sp + 1, "+Inf") && strcmp(sp + 1, "-Inf") &&
          strcmp(sp + 1, "NaN")) {
        (void)strtod(sp + 1, &end);
        ck_assert_msg(*end == '\0', "value of %s", line);
      }
    }
  }
  ck_assert_int_ge(types, 14);
  free(text);
  metrics_reset();
}
END_TEST

/* Each family keeps at most METRICS_MAX_SERIES label sets. */
/* The page without a token: nothing of a team (spend, cluster queues),
 * the rest as in the full page; connection counters render. */
START_TEST(public_view)
{
  char *full, *pub;
  static const char *const hidden[] = {"gpugate_team_month_net_cost_usd",
                                       "gpugate_pending_jobs",
                                       "gpugate_admitted_jobs_total",
                                       "gpugate_evicted_jobs_total",
                                       "gpugate_cluster_queue_usage",
                                       "gpugate_cluster_queue_nominal_quota",
                                       "gpugate_cluster_queue_borrowing_limit",
                                       "team-a",
                                       "cq-a",
                                       "12.34"};
  size_t i;

  metrics_reset();
  http_calls();
  counter_calls();
  gauge_calls();
  cost_calls();
  metrics_conn_refused("per_client");
  metrics_conn_refused("per_client");
  metrics_conn_refused("total");
  metrics_conn_timed_out("headers");
  metrics_conn_open(7);
  full = metrics_render();
  pub = metrics_render_public();
  ck_assert_ptr_nonnull(full);
  ck_assert_ptr_nonnull(pub);
  for (i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++) {
    ck_assert_msg(strstr(full, hidden[i]) != NULL, "full lacks %s", hidden[i]);
    ck_assert_msg(strstr(pub, hidden[i]) == NULL, "public shows %s", hidden[i]);
  }
  ck_assert(has_block(pub, "gpugate_billing_rows_ingested_total 7\n"));
  ck_assert(has_block(pub, "gpugate_http_connections_refused_total{reason="
                           "\"per_client\"} 2\n"
                           "gpugate_http_connections_refused_total{reason="
                           "\"total\"} 1\n"));
  ck_assert(has_block(pub, "gpugate_http_connections_timed_out_total{phase="
                           "\"headers\"} 1\n"));
  ck_assert(has_block(pub, "gpugate_http_open_connections 7\n"));
  free(full);
  free(pub);
  metrics_reset();
}
END_TEST

START_TEST(bounded_series)
{
  char route[64], *text, *p;
  int i, n = 0;

  metrics_reset();
  for (i = 0; i < METRICS_MAX_SERIES + 50; i++) {
    snprintf(route, sizeof(route), "/r/%d", i);
    metrics_http(route, "GET", 200, 0.001);
  }
  metrics_http("/r/0", "GET", 200, 0.001); /* an existing one still counts */
  text = metrics_render();
  ck_assert_ptr_nonnull(text);
  for (p = text; (p = strstr(p, "\ngpugate_http_requests_total{")); p++)
    n++;
  ck_assert_int_eq(n, METRICS_MAX_SERIES);
  ck_assert(has_block(text, "gpugate_http_requests_total{route=\"/r/0\","
                            "method=\"GET\",code=\"200\"} 2\n"));
  ck_assert(!strstr(text, "\"/r/4096\""));
  /* the histogram saw every request */
  ck_assert(
      has_block(text, "gpugate_http_request_duration_seconds_count 4147\n"));
  free(text);
  metrics_reset();
}
END_TEST

/* A label value too long for a label set is dropped, never truncated. */
START_TEST(oversized_labels_dropped)
{
  char big[700], *text;

  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  metrics_reset();
  metrics_admitted(big, "f");
  metrics_admitted("cq", "f");
  text = metrics_render();
  ck_assert_ptr_nonnull(text);
  ck_assert(!strstr(text, "xxxxxxxx"));
  ck_assert(has_block(
      text,
      "gpugate_admitted_jobs_total{cluster_queue=\"cq\",flavor=\"f\"} 1\n"));
  free(text);
  metrics_reset();
}
END_TEST

START_TEST(process_metrics)
{
  char *text = metrics_render();

  ck_assert_ptr_nonnull(text);
  ck_assert(strstr(text, "\n# TYPE process_resident_memory_bytes gauge\n"
                         "process_resident_memory_bytes "));
  ck_assert(strstr(text, "\n# TYPE process_start_time_seconds gauge\n"
                         "process_start_time_seconds "));
  ck_assert(strstr(text, "\n# TYPE process_cpu_seconds_total counter\n"));
  free(text);
}
END_TEST

Suite *metrics_suite(void)
{
  Suite *s = suite_create("metrics");
  TCase *tc = tcase_create("render");

  tcase_add_loop_test(tc, render_table, 0,
                      (int)(sizeof(cases) / sizeof(cases[0])));
  tcase_add_test(tc, well_formed);
  tcase_add_test(tc, public_view);
  tcase_add_test(tc, bounded_series);
  tcase_add_test(tc, oversized_labels_dropped);
  tcase_add_test(tc, process_metrics);
  suite_add_tcase(s, tc);
  return s;
}
