/*
 * it_metrics.c — GET /metrics on a live gpugate: the reference
 * architecture applied, jobs submitted by four teams (low priority, then
 * high priority that reclaims reserved quota), admission by the real loop.
 * The SPEC §7 families are checked against what the API says about the
 * same jobs, then the text goes through tests/metrics-check.sh (promtool
 * check metrics, the alert rules, the dashboards).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *metrics_page_suite(void);

static const char *const teams[4] = {"team-a", "team-b", "team-c", "team-d"};

static struct h_server srv;
static char db_url[512];
static char *tokens[4];
static char *scraper; /* role metrics, no team */

static void setup(void)
{
  const char *env[] = {"GPUGATE_ADMISSION_INTERVAL_MS=200", NULL};
  int i;

  h_db_apply("it_metrics", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv, db_url, env), 0);
  for (i = 0; i < 4; i++)
    tokens[i] = h_token(teams[i], "member", 3600);
  scraper = h_token(NULL, "metrics", 3600);
  ck_assert_ptr_nonnull(scraper);
}

static void teardown(void)
{
  int i;

  h_server_stop(&srv);
  for (i = 0; i < 4; i++)
    free(tokens[i]);
  free(scraper);
}

/* 2 tasks × (2 CPU, 10 GiB, 2 GPU): 4 GPUs a job. */
#define JOB_GPUS 4

/* What the API says: jobs per state over all teams, and jobs evicted at
 * least once (attempt > 1). */
struct api_counts {
  int pending, unseen, admitted, requeued;
};

static void api_counts(struct api_counts *c)
{
  char path[128];
  struct h_resp r;
  json_t *it;
  size_t i;
  int t;

  memset(c, 0, sizeof(*c));
  for (t = 0; t < 4; t++) {
    snprintf(path, sizeof(path), "/v1/teams/%s/jobs?limit=100", teams[t]);
    ck_assert_int_eq(h_request(&srv, "GET", path, tokens[t], NULL, NULL, &r),
                     0);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    json_array_foreach (json_object_get(r.json, "items"), i, it) {
      const char *st = json_string_value(json_object_get(it, "state"));
      if (!strcmp(st, "PENDING")) {
        c->pending++;
        c->unseen += json_is_null(json_object_get(it, "reason"));
      } else if (!strcmp(st, "ADMITTED")) {
        c->admitted++;
      }
      c->requeued += json_integer_value(json_object_get(it, "attempt")) > 1;
    }
    h_resp_free(&r);
  }
}

/* GET /metrics with the scraper's token; returns the body (caller
 * frees). */
static char *scrape(void)
{
  struct h_resp r;
  char type[128];
  char *text;

  ck_assert_int_eq(h_request(&srv, "GET", "/metrics", scraper, NULL, NULL, &r),
                   0);
  ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
  ck_assert_ptr_nonnull(h_header(&r, "Content-Type", type, sizeof(type)));
  ck_assert_msg(!strncmp(type, "text/plain; version=0.0.4", 25), "%s", type);
  text = r.body;
  r.body = NULL;
  h_resp_free(&r);
  return text;
}

/*
 * Sum of the samples of metric whose label set contains every
 * comma-separated matcher of match (e.g. "resource=\"gpu\""; "" for all).
 * *n gets the number of samples (may be NULL).
 */
static double sum_of(const char *text, const char *metric, const char *match,
                     int *n)
{
  size_t mlen = strlen(metric);
  const char *line = text;
  double sum = 0;
  int count = 0;

  while (*line) {
    const char *end = strchr(line, '\n'), *labels = line + mlen, *sp;
    const char *next = end ? end + 1 : line + strlen(line);
    char want[256];
    const char *m = match;
    bool ok = true;

    if (strncmp(line, metric, mlen) ||
        (line[mlen] != '{' && line[mlen] != ' ')) {
      line = next;
      continue;
    }
    sp = end ? end : line + strlen(line);
    while (sp > line && *sp != ' ')
      sp--;
    while (ok && m && *m) {
      const char *comma = strstr(m, "\",");
      size_t len = comma ? (size_t)(comma - m) + 1 : strlen(m);
      const char *hit;
      snprintf(want, sizeof(want), "%.*s", (int)len, m);
      hit = strstr(labels, want);
      ok = hit && hit < sp;
      m = comma ? comma + 2 : NULL;
    }
    if (ok) {
      sum += strtod(sp + 1, NULL);
      count++;
    }
    line = next;
  }
  if (n)
    *n = count;
  return sum;
}

START_TEST(families_match_the_api)
{
  struct api_counts c;
  char *text = NULL, path[400], log[400];
  int i, t, tries, n;
  double pending = -1, gpu_use = -1, admitted_total, evicted_total;

  /* four low-priority jobs per team (some borrow the reservation), then
   * four high-priority ones that reclaim it */
  for (i = 0; i < 4; i++)
    for (t = 0; t < 4; t++)
      h_submit_typical(&srv, teams[t], tokens[t], "lp", "lp", "default", NULL);
  for (tries = 0; tries < 100; tries++) {
    api_counts(&c);
    if (c.admitted == 16)
      break;
    h_sleep_ms(100);
  }
  ck_assert_int_eq(c.admitted, 16);
  for (i = 0; i < 4; i++)
    for (t = 0; t < 4; t++)
      h_submit_typical(&srv, teams[t], tokens[t], "hp", "hp", "high", NULL);

  /* settled: every pending job seen by a cycle, and the leader's gauges
   * agree with the API (cycles run every 200 ms) */
  for (tries = 0; tries < 150; tries++) {
    api_counts(&c);
    free(text);
    text = scrape();
    pending = sum_of(text, "gpugate_pending_jobs", "", NULL);
    gpu_use =
        sum_of(text, "gpugate_cluster_queue_usage", "resource=\"gpu\"", NULL);
    if (c.unseen == 0 && c.pending > 0 && pending == c.pending &&
        gpu_use == (double)(JOB_GPUS * c.admitted))
      break;
    h_sleep_ms(200);
  }
  ck_assert_msg(pending == c.pending, "pending: metrics %g, API %d", pending,
                c.pending);
  ck_assert_msg(gpu_use == (double)(JOB_GPUS * c.admitted),
                "GPU usage: metrics %g, API %d admitted jobs", gpu_use,
                c.admitted);
  ck_assert_int_eq(c.unseen, 0);
  ck_assert_int_gt(c.requeued, 0); /* the reservation was reclaimed */

  /* pending: every cluster queue × reason, the waiting hp jobs among them */
  ck_assert_double_ge(h_sample(text,
                               "gpugate_pending_jobs{cluster_queue=\"cq-"
                               "team-a-hp\",reason=\"InsufficientQuota\"}"),
                      1);
  ck_assert_double_eq(h_sample(text, "gpugate_pending_jobs{cluster_queue=\"cq-"
                                     "team-d-compact\",reason=\"Backoff\"}"),
                      0);

  /* admissions: 16 + the hp ones + victims admitted again; each has a
   * wait observation; evictions name their queue and reason */
  admitted_total = sum_of(text, "gpugate_admitted_jobs_total", "", NULL);
  ck_assert_double_ge(admitted_total, (double)(c.admitted + c.requeued));
  ck_assert_double_eq(h_sample(text, "gpugate_admission_wait_seconds_count"),
                      admitted_total);
  ck_assert_double_ge(sum_of(text, "gpugate_admitted_jobs_total",
                             "flavor=\"l4-reserved\"", NULL),
                      1);
  evicted_total = sum_of(text, "gpugate_evicted_jobs_total", "", &n);
  ck_assert_double_ge(evicted_total, (double)c.requeued);
  ck_assert_double_eq(
      evicted_total,
      sum_of(text, "gpugate_evicted_jobs_total", "reason=\"Reclaimed\"", NULL) +
          sum_of(text, "gpugate_evicted_jobs_total", "reason=\"Preempted\"",
                 NULL));
  ck_assert_double_ge(h_sample(text, "gpugate_admission_cycle_seconds_count"),
                      1);

  /* quotas as configured; usage within nominal + borrowing limit */
  ck_assert_double_eq(
      h_sample(text, "gpugate_cluster_queue_nominal_quota{cluster_queue=\"cq-"
                     "team-a-lp\",flavor=\"l4-spot\",resource=\"gpu\"}"),
      12);
  ck_assert_double_eq(
      h_sample(text, "gpugate_cluster_queue_borrowing_limit{cluster_queue=\"cq-"
                     "team-a-lp\",flavor=\"l4-reserved\",resource=\"gpu\"}"),
      4);
  ck_assert_double_eq(
      h_sample(text,
               "gpugate_cluster_queue_nominal_quota{cluster_queue=\"cq-"
               "team-a-hp\",flavor=\"l4-reserved\",resource=\"memory_mib\"}"),
      20480);
  {
    const char *p = text;
    int checked = 0;
    while ((p = strstr(p, "\ngpugate_cluster_queue_usage{")) != NULL) {
      char labels[256], series[320];
      const char *open = strchr(p, '{'), *close = strchr(p, '}');
      double use, nominal, borrow;
      snprintf(labels, sizeof(labels), "%.*s", (int)(close - open + 1), open);
      use = strtod(close + 2, NULL);
      snprintf(series, sizeof(series), "gpugate_cluster_queue_nominal_quota%s",
               labels);
      nominal = h_sample(text, series);
      snprintf(series, sizeof(series),
               "gpugate_cluster_queue_borrowing_limit%s", labels);
      borrow = h_sample(text, series);
      ck_assert_msg(nominal >= 0, "no nominal quota for %s", labels);
      ck_assert_msg(borrow < 0 || use <= nominal + borrow,
                    "%s: usage %g > nominal %g + borrowing %g", labels, use,
                    nominal, borrow);
      checked++;
      p++;
    }
    ck_assert_int_ge(checked, 3 * 10);
  }

  /* HTTP: route templates, never raw paths */
  ck_assert_double_eq(
      h_sample(text, "gpugate_http_requests_total{route=\"/v1/teams/{team}/"
                     "jobs\",method=\"POST\",code=\"201\"}"),
      32);
  ck_assert_double_ge(
      h_sample(text, "gpugate_http_requests_total{route=\"/v1/teams/{team}/"
                     "jobs\",method=\"GET\",code=\"200\"}"),
      4);
  ck_assert_ptr_null(strstr(text, "route=\"/v1/teams/team-a"));
  ck_assert_double_ge(
      h_sample(text, "gpugate_http_request_duration_seconds_count"), 36);

  /* the rest of §7 and the process basics */
  ck_assert_double_eq(h_sample(text, "gpugate_billing_rows_ingested_total"), 0);
  sum_of(text, "gpugate_team_month_net_cost_usd", "", &n);
  if (n > 0) /* cost_rollups exists (migration 0004): every team, no spend */
    ck_assert_double_eq(
        h_sample(text, "gpugate_team_month_net_cost_usd{team=\"team-a\"}"), 0);
  ck_assert_double_gt(h_sample(text, "process_resident_memory_bytes"), 1e6);
  ck_assert_double_gt(h_sample(text, "process_start_time_seconds"), 1.6e9);

  /* promtool, the rules and the dashboards */
  snprintf(path, sizeof(path), "%s/metrics.txt", srv.dir);
  snprintf(log, sizeof(log), "%s/metrics-check.log", srv.dir);
  {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    fclose(f);
  }
  {
    const char *argv[] = {"/bin/bash", "tests/metrics-check.sh", path, NULL};
    char *out = calloc(1, 65536);
    int rc;
    ck_assert_ptr_nonnull(out);
    rc = h_run(argv, NULL, -1, log, out, 65536);
    ck_assert_msg(rc == 0, "tests/metrics-check.sh exited %d:\n%s", rc, out);
    free(out);
  }
  free(text);
}
END_TEST

START_TEST(token_optional_and_get_only)
{
  struct h_resp r;
  char allow[64];
  char *admin = h_token(NULL, "admin", 600);

  ck_assert_int_eq(h_request(&srv, "POST", "/metrics", NULL, "{}", NULL, &r),
                   0);
  ck_assert(h_is_problem(&r, 405, NULL));
  ck_assert_ptr_nonnull(h_header(&r, "Allow", allow, sizeof(allow)));
  ck_assert_str_eq(allow, "GET");
  h_resp_free(&r);

  /* no token: the page, without what belongs to teams */
  ck_assert_int_eq(h_request(&srv, "GET", "/metrics", NULL, NULL, NULL, &r), 0);
  ck_assert_int_eq(r.status, 200);
  ck_assert_ptr_nonnull(
      strstr(r.body, "# TYPE gpugate_http_requests_total counter\n"));
  ck_assert_ptr_null(strstr(r.body, "gpugate_pending_jobs"));
  ck_assert_ptr_null(strstr(r.body, "gpugate_team_month_net_cost_usd"));
  ck_assert_ptr_null(strstr(r.body, "cluster_queue="));
  h_resp_free(&r);

  /* a token that is sent is checked: a bad one is refused, and a member
   * token may not read the page */
  ck_assert_int_eq(
      h_request(&srv, "GET", "/metrics", "not-a-token", NULL, NULL, &r), 0);
  ck_assert(h_is_problem(&r, 401, NULL));
  h_resp_free(&r);
  ck_assert_int_eq(
      h_request(&srv, "GET", "/metrics", tokens[0], NULL, NULL, &r), 0);
  ck_assert(h_is_problem(&r, 403, NULL));
  h_resp_free(&r);

  /* admin (with no team claim) and the metrics role see everything */
  ck_assert_ptr_nonnull(admin);
  ck_assert_int_eq(h_request(&srv, "GET", "/metrics", admin, NULL, NULL, &r),
                   0);
  ck_assert_int_eq(r.status, 200);
  ck_assert_ptr_nonnull(strstr(r.body, "# TYPE gpugate_pending_jobs gauge\n"));
  h_resp_free(&r);
  ck_assert_int_eq(h_request(&srv, "GET", "/metrics", scraper, NULL, NULL, &r),
                   0);
  ck_assert_int_eq(r.status, 200);
  ck_assert_ptr_nonnull(strstr(r.body, "# TYPE gpugate_pending_jobs gauge\n"));
  h_resp_free(&r);

  /* the metrics role reads nothing else */
  ck_assert_int_eq(
      h_request(&srv, "GET", "/v1/flavors", scraper, NULL, NULL, &r), 0);
  ck_assert(h_is_problem(&r, 403, NULL));
  h_resp_free(&r);
  free(admin);
}
END_TEST

Suite *metrics_page_suite(void)
{
  Suite *s = suite_create("metrics_page");
  TCase *tc = tcase_create("metrics_page");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, families_match_the_api);
  tcase_add_test(tc, token_optional_and_get_only);
  suite_add_tcase(s, tc);
  return s;
}
