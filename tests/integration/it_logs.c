/*
 * it_logs.c — GET /v1/teams/{team}/jobs/{id}/logs against the Batch
 * emulator writing its jobs' output to the Cloud Logging emulator
 * (build/logging_emulator): a two-task job whose task 0 failed its first
 * run and was run again by Batch (taskSpec.maxRetryCount 1, the Batch
 * emulator's EMU_FAIL_FIRST_ATTEMPT): both runs distinguished (retry 0
 * and 1, from the task_id label Batch writes), oldest first, task,
 * severity and since filters, paging to the end, text/plain, bad
 * parameters named, 403 across teams; follow=true streaming until the job
 * ends; and 200 followers of 50 jobs served by polls within the read
 * budget (the emulator's own count of entries:list calls).
 */
#include <check.h>
#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *logs_suite(void);

#define MAX_ENV 24
#define END_GRACE_MS "5000"  /* GPUGATE_LOGGING_END_GRACE_MS of the fixture */
#define INGEST_DELAY_MS 3000 /* the emulator's, in follow_waits_for_late */

static struct h_server logemu, emu, srv;
static char db_url[512];
static char *tok_a, *tok_b, *tok_fin;

static void start_all(const char *db, const char *reads_per_minute,
                      const char *emu_quota)
{
  char gcp[H_GCP_ENV][128], logging[128], emu_logging[128], rpm[80];
  const char *env[MAX_ENV], *emu_env[8];
  const char *log_env[] = {emu_quota, NULL};
  size_t n = 0, i;

  ck_assert_msg(h_log_emulator_start(&logemu, log_env) == 0,
                "the logging emulator did not start; see %s", logemu.log);
  snprintf(emu_logging, sizeof(emu_logging),
           "EMU_LOGGING_URL=http://127.0.0.1:%u", logemu.port);
  emu_env[0] = "EMU_RUN_MS=400";
  emu_env[1] = "EMU_START_MS=50";
  emu_env[2] = "EMU_CAPACITY=us-central1/RESERVATION_BOUND=64,"
               "us-central1/STANDARD=64,us-central1/SPOT=256";
  emu_env[3] = emu_logging;
  emu_env[4] = NULL;
  ck_assert_msg(h_emulator_start(&emu, emu_env) == 0,
                "the emulator did not start; see %s", emu.log);
  h_gcp_env(&emu, gcp);
  h_db_apply(db, H_REFERENCE, db_url, sizeof(db_url));
  for (i = 0; i < H_GCP_ENV; i++)
    env[n++] = gcp[i];
  snprintf(logging, sizeof(logging),
           "GPUGATE_LOGGING_ENDPOINT=http://127.0.0.1:%u", logemu.port);
  snprintf(rpm, sizeof(rpm), "GPUGATE_LOGGING_READS_PER_MINUTE=%s",
           reads_per_minute);
  env[n++] = logging;
  env[n++] = rpm;
  env[n++] = "GPUGATE_LOGGING_POLL_MS=100";
  env[n++] = "GPUGATE_LOGGING_END_GRACE_MS=" END_GRACE_MS;
  env[n++] = "GPUGATE_SYNC_INTERVAL_MS=200";
  env[n++] = "GPUGATE_RATE_LIMIT_RPS=100000";
  env[n++] = "GPUGATE_ADMISSION_INTERVAL_MS=200";
  env[n] = NULL;
  ck_assert_msg(h_server_start(&srv, db_url, env) == 0,
                "gpugate did not start; see %s", srv.log);
  tok_a = h_token("team-a", "member", 3600);
  tok_b = h_token("team-b", "member", 3600);
  tok_fin = h_token(NULL, "finance", 3600);
}

static void setup(void)
{
  start_all("it_logs", "60000", "LOG_EMU_READS_PER_MINUTE=100000");
}

static void teardown(void)
{
  h_server_stop(&srv);
  h_server_stop(&emu);
  h_server_stop(&logemu);
  free(tok_a);
  free(tok_b);
  free(tok_fin);
  tok_a = tok_b = tok_fin = NULL;
}

/* Submit a job of tasks tasks, each retried by Batch up to retries times,
 * to team-a's lp queue with the emulator's env; id gets its id. */
static void submit_retried(int tasks, int retries, const char *env, char id[32])
{
  char body[768];
  json_t *j;

  snprintf(body, sizeof(body),
           "{\"name\": \"logs\", \"queue\": \"lp\", \"task_count\": %d, "
           "\"max_retry_count\": %d, "
           "\"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\", "
           "\"commands\": [\"python\", \"train.py\"], \"env\": %s, "
           "\"cpu_milli\": 1000, \"memory_mib\": 5120, \"gpu\": 1}}",
           tasks, retries, env);
  j = h_call(&srv, "POST", "/v1/teams/team-a/jobs", tok_a, body, 201);
  snprintf(id, 32, "%s", h_str(j, "id") ? h_str(j, "id") : "");
  json_decref(j);
  ck_assert_msg(id[0], "no job id");
}

static void submit(int tasks, const char *env, char id[32])
{
  submit_retried(tasks, 0, env, id);
}

static void wait_state(const char *id, const char *want)
{
  long long end = h_now_ms() + 60000;
  char path[160];

  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%.31s", id);
  for (;;) {
    json_t *j = h_call(&srv, "GET", path, tok_a, NULL, 200);
    bool done = h_str(j, "state") && !strcmp(h_str(j, "state"), want);
    ck_assert_msg(done || h_now_ms() < end, "job %s is %s, not %s", id,
                  h_str(j, "state"), want);
    json_decref(j);
    if (done)
      return;
    h_sleep_ms(50);
  }
}

/* Entries the Logging emulator holds for gpugate job id. */
static size_t stored_for(const char *id)
{
  json_t *all = h_emu_get(&logemu, "/emulator/entries"), *e;
  size_t i, n = 0;

  json_array_foreach (json_object_get(all, "entries"), i, e) {
    const char *j = h_str(json_object_get(e, "labels"), "gpugate-job");
    n += j && !strcmp(j, id);
  }
  json_decref(all);
  return n;
}

static void wait_stored(const char *id, size_t want)
{
  long long end = h_now_ms() + 30000;

  while (stored_for(id) < want)
    ck_assert_msg(h_now_ms() < end, "job %s: %zu entries stored, not %zu", id,
                  stored_for(id), want);
}

static json_t *logs(const char *id, const char *query, const char *token,
                    long want)
{
  char path[1024];

  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s/logs%s%s", id,
           *query ? "?" : "", query);
  return h_call(&srv, "GET", path, token, NULL, want);
}

static const char *text_of(const json_t *entries, size_t i)
{
  return h_str(json_array_get(entries, i), "text");
}

static long long int_of(const json_t *entries, size_t i, const char *k)
{
  json_t *v = json_object_get(json_array_get(entries, i), k);

  return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* 1 agent entry, 2 tasks' hello, task 0's error, task 1's end; then task
 * 0's second run: its hello and its end */
#define ALL_ENTRIES 7

/* The problem of a GET of the logs with query must be 400 naming field. */
static void refused(const char *id, const char *query, const char *field)
{
  char path[512];
  struct h_resp r;

  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s/logs?%s", id, query);
  ck_assert_int_eq(h_request(&srv, "GET", path, tok_a, NULL, NULL, &r), 0);
  ck_assert_msg(h_is_problem(&r, 400, field), "%s: %ld %s", query, r.status,
                r.body);
  h_resp_free(&r);
}

START_TEST(two_attempts_filters_and_pages)
{
  char id[32], q[600], want[128], path[256];
  json_t *all, *page, *entries, *e;
  const char *next;
  size_t i, k;
  struct h_resp r;
  const char *plain[] = {"Accept: text/plain", NULL};

  submit_retried(2, 1,
                 "{\"EMU_RUN_MS\": \"300\", \"EMU_FAIL_FIRST_ATTEMPT\": "
                 "\"true\"}",
                 id);
  wait_state(id, "SUCCEEDED");
  wait_stored(id, ALL_ENTRIES);

  all = logs(id, "", tok_a, 200);
  entries = json_object_get(all, "entries");
  ck_assert_uint_eq(json_array_size(entries), ALL_ENTRIES);
  ck_assert(json_is_null(json_object_get(all, "next_page_token")));
  for (i = 1; i < ALL_ENTRIES; i++) /* oldest first */
    ck_assert_msg(strcmp(h_str(json_array_get(entries, i - 1), "time"),
                         h_str(json_array_get(entries, i), "time")) <= 0,
                  "entry %zu out of order", i);
  /* all of Batch job a1: the agent's entry (no task, no retry), each
   * task's first line (retry 0), task 0's error and task 1's end (retry
   * 0), then task 0's second run (retry 1) */
  for (i = 0; i < ALL_ENTRIES; i++)
    ck_assert_int_eq(int_of(entries, i, "attempt"), 1);
  ck_assert_int_eq(int_of(entries, 0, "task"), -1);
  ck_assert_int_eq(int_of(entries, 0, "retry"), -1);
  for (k = 0; k < 2; k++) {
    snprintf(want, sizeof(want), "hello from task %zu of gpugate-%s-a1", k, id);
    ck_assert_str_eq(text_of(entries, 1 + k), want);
    ck_assert_int_eq(int_of(entries, 1 + k, "task"), (long long)k);
    ck_assert_int_eq(int_of(entries, 1 + k, "retry"), 0);
    ck_assert_str_eq(h_str(json_array_get(entries, 1 + k), "severity"), "INFO");
  }
  snprintf(want, sizeof(want), "task 0 of gpugate-%s-a1 failed: exit code 1",
           id);
  ck_assert_str_eq(text_of(entries, 3), want);
  ck_assert_str_eq(h_str(json_array_get(entries, 3), "severity"), "ERROR");
  ck_assert_int_eq(int_of(entries, 3, "task"), 0);
  ck_assert_int_eq(int_of(entries, 3, "retry"), 0);
  snprintf(want, sizeof(want), "task 1 of gpugate-%s-a1 done", id);
  ck_assert_str_eq(text_of(entries, 4), want);
  ck_assert_int_eq(int_of(entries, 4, "retry"), 0);
  snprintf(want, sizeof(want), "hello from task 0 of gpugate-%s-a1", id);
  ck_assert_str_eq(text_of(entries, 5), want);
  ck_assert_int_eq(int_of(entries, 5, "task"), 0);
  ck_assert_int_eq(int_of(entries, 5, "retry"), 1);
  snprintf(want, sizeof(want), "task 0 of gpugate-%s-a1 done", id);
  ck_assert_str_eq(text_of(entries, 6), want);
  ck_assert_int_eq(int_of(entries, 6, "task"), 0);
  ck_assert_int_eq(int_of(entries, 6, "retry"), 1);

  /* task 0 only: its two runs */
  page = logs(id, "task=0", tok_a, 200);
  e = json_object_get(page, "entries");
  ck_assert_uint_eq(json_array_size(e), 4);
  ck_assert_int_eq(int_of(e, 0, "retry"), 0);
  ck_assert_int_eq(int_of(e, 1, "retry"), 0);
  ck_assert_int_eq(int_of(e, 2, "retry"), 1);
  ck_assert_int_eq(int_of(e, 3, "retry"), 1);
  json_decref(page);

  /* task 1 only: its one run */
  page = logs(id, "task=1", tok_a, 200);
  e = json_object_get(page, "entries");
  ck_assert_uint_eq(json_array_size(e), 2);
  ck_assert_int_eq(int_of(e, 0, "task"), 1);
  ck_assert_int_eq(int_of(e, 1, "retry"), 0);
  json_decref(page);

  /* at or above WARNING: the error alone */
  page = logs(id, "severity=WARNING", tok_a, 200);
  e = json_object_get(page, "entries");
  ck_assert_uint_eq(json_array_size(e), 1);
  ck_assert_str_eq(text_of(e, 0), text_of(entries, 3));
  json_decref(page);

  /* since the error's time: the error, task 1's end, task 0's second run */
  snprintf(q, sizeof(q), "since=%s", h_str(json_array_get(entries, 3), "time"));
  page = logs(id, q, tok_a, 200);
  e = json_object_get(page, "entries");
  ck_assert_uint_eq(json_array_size(e), 4);
  ck_assert_str_eq(text_of(e, 0), text_of(entries, 3));
  json_decref(page);

  /* pages of 4: the whole list, in order, then no token */
  next = NULL;
  k = 0;
  page = NULL;
  for (i = 0; i < 10; i++) {
    json_t *p2;
    if (next)
      snprintf(q, sizeof(q), "page_token=%s", next);
    else
      snprintf(q, sizeof(q), "page_size=4");
    p2 = logs(id, q, tok_a, 200);
    json_decref(page);
    page = p2;
    json_array_foreach (json_object_get(page, "entries"), k, e) {
      ck_assert_str_eq(h_str(e, "text"), text_of(entries, i * 4 + k));
    }
    next = h_str(page, "next_page_token");
    if (!next)
      break;
    ck_assert_uint_eq(json_array_size(json_object_get(page, "entries")), 4);
  }
  ck_assert_uint_eq(i, 1); /* 4 + 3 */
  ck_assert_uint_eq(json_array_size(json_object_get(page, "entries")), 3);
  json_decref(page);

  /* text/plain: the lines */
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s/logs", id);
  ck_assert_int_eq(h_request(&srv, "GET", path, tok_a, NULL, plain, &r), 0);
  ck_assert_int_eq(r.status, 200);
  {
    char expect[2048] = "";
    size_t n = 0;
    for (i = 0; i < ALL_ENTRIES; i++)
      n += (size_t)snprintf(expect + n, sizeof(expect) - n, "%s\n",
                            text_of(entries, i));
    ck_assert_str_eq(r.body, expect);
  }
  h_resp_free(&r);

  /* finance reads any team's; another team's member is refused as for
   * every team route (404: another team's objects do not exist, it_roles);
   * a role that may not read logs is refused 403; no such job */
  json_decref(logs(id, "", tok_fin, 200));
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s/logs", id);
  ck_assert_int_eq(h_request(&srv, "GET", path, tok_b, NULL, NULL, &r), 0);
  ck_assert_msg(r.status == 404, "%ld %s", r.status, r.body);
  h_resp_free(&r);
  {
    char *metrics = h_token(NULL, "metrics", 3600);
    json_decref(logs(id, "", metrics, 403));
    free(metrics);
  }
  json_decref(logs("nosuchjob", "", tok_a, 404));

  /* bad parameters: a problem naming the field */
  refused(id, "since=yesterday", "since");
  refused(id, "task=-1", "task");
  refused(id, "task=x", "task");
  refused(id, "severity=LOUD", "severity");
  refused(id, "page_size=0", "page_size");
  refused(id, "page_token=bm90LW91cnM", "page_token");
  refused(id, "follow=maybe", "follow");
  json_decref(all);
}
END_TEST

/* A follower's whole stream: GET …/logs?follow=true until it ends. */
START_TEST(follow_ends_with_the_job)
{
  char id[32], path[256], want[512];
  struct h_resp r;
  json_t *j;
  const char *plain[] = {"Accept: text/plain", NULL};

  submit(2, "{\"EMU_RUN_MS\": \"1500\"}", id);
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s/logs?follow=true", id);
  ck_assert_int_eq(h_request(&srv, "GET", path, tok_a, NULL, plain, &r), 0);
  ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
  /* the stream ended: the job had ended, and every line it wrote came */
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%.31s", id);
  j = h_call(&srv, "GET", path, tok_a, NULL, 200);
  ck_assert_str_eq(h_str(j, "state"), "SUCCEEDED");
  json_decref(j);
  snprintf(want, sizeof(want),
           "Job gpugate-%s-a1 started 2 task(s).\n"
           "hello from task 0 of gpugate-%s-a1\n"
           "hello from task 1 of gpugate-%s-a1\n",
           id, id, id);
  ck_assert_msg(!strncmp(r.body, want, strlen(want)), "%s", r.body);
  snprintf(want, sizeof(want),
           "task 0 of gpugate-%s-a1 done\ntask 1 of gpugate-%s-a1 done\n", id,
           id);
  ck_assert_msg(strlen(r.body) >= strlen(want) &&
                    !strcmp(r.body + strlen(r.body) - strlen(want), want),
                "%s", r.body);
  h_resp_free(&r);

  /* following an ended job: its whole log (here task 1's, as NDJSON),
   * then the end */
  snprintf(path, sizeof(path),
           "/v1/teams/team-a/jobs/%s/logs?follow=true&task=1", id);
  ck_assert_int_eq(h_request(&srv, "GET", path, tok_a, NULL, NULL, &r), 0);
  ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
  {
    char line1[512], line2[512];
    const char *nl = strchr(r.body, '\n');
    ck_assert_ptr_nonnull(nl);
    snprintf(line1, sizeof(line1), "%.*s", (int)(nl - r.body), r.body);
    snprintf(line2, sizeof(line2), "%s", nl + 1);
    ck_assert_msg(
        strstr(line1, "\"task\":1,\"attempt\":1,\"retry\":0,\"text\":\"hello "
                      "from task 1 of gpugate-") != NULL,
        "%s", r.body);
    ck_assert_msg(
        strstr(line2, "\"task\":1,\"attempt\":1,\"retry\":0,\"text\":\"task 1 "
                      "of gpugate-") != NULL &&
            strstr(line2, "done\"}\n") != NULL &&
            strchr(line2, '\n')[1] == '\0',
        "%s", r.body);
  }
  ck_assert_ptr_nonnull(h_header(&r, "Content-Type", want, sizeof(want)));
  ck_assert_str_eq(want, "application/x-ndjson");
  h_resp_free(&r);
}
END_TEST

/* Logging lists an entry seconds after it was written (the emulator's
 * ingestion delay, under the fixture's grace): a follow still ends with
 * the job's last lines, written as it ended, not before they are listed. */
START_TEST(follow_waits_for_late_lines)
{
  char id[32], path[256], want[256], cfg[64];
  struct h_resp r;
  const char *plain[] = {"Accept: text/plain", NULL};
  int rc;

  submit(1, "{\"EMU_RUN_MS\": \"300\"}", id);
  snprintf(cfg, sizeof(cfg), "{\"ingest_delay_ms\": %d}", INGEST_DELAY_MS);
  json_decref(h_call(&logemu, "POST", "/emulator/config", NULL, cfg, 200));
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s/logs?follow=true", id);
  rc = h_request(&srv, "GET", path, tok_a, NULL, plain, &r);
  json_decref(h_call(&logemu, "POST", "/emulator/config", NULL,
                     "{\"ingest_delay_ms\": 0}", 200));
  ck_assert_int_eq(rc, 0);
  ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
  snprintf(want, sizeof(want), "task 0 of gpugate-%s-a1 done\n", id);
  ck_assert_msg(strlen(r.body) >= strlen(want) &&
                    !strcmp(r.body + strlen(r.body) - strlen(want), want),
                "the follow ended before the job's last line was listed: "
                "\"%s\"",
                r.body);
  h_resp_free(&r);
}
END_TEST

/* Check the lines of ndjson against logging_v2_messages' kind
 * (tests/emulator/log_shapes.py). */
static void shapes(const char *kind, const char *ndjson)
{
  char path[256], out[4096];
  const char *argv[] = {"/usr/bin/python3", "tests/emulator/log_shapes.py",
                        kind, path, NULL};
  const char *env[] = {"PYTHONPATH=/usr/lib/google-cloud-sdk/lib/third_party:"
                       "/usr/lib/google-cloud-sdk/lib",
                       NULL};
  int rc;

  h_write_temp("shapes", ndjson, path, sizeof(path));
  rc = h_run(argv, env, 300000, NULL, out, sizeof(out));
  unlink(path);
  ck_assert_msg(rc == 0, "%s: %s", kind, out);
  ck_assert_msg(strstr(out, "ok ") != NULL, "%s: %s", kind, out);
}

/* Append doc (stolen) to text as one line. */
static void add_line(char **text, size_t *len, json_t *doc)
{
  char *line = json_dumps(doc, JSON_COMPACT);
  size_t n = strlen(line);

  *text = realloc(*text, *len + n + 2);
  memcpy(*text + *len, line, n);
  *len += n;
  (*text)[(*len)++] = '\n';
  (*text)[*len] = '\0';
  free(line);
  json_decref(doc);
}

/* What gpugate asked Logging, what the emulator answered, and every entry
 * the Batch emulator (and the test) wrote: Google's shapes, by the Cloud
 * SDK's generated messages. Runs after the tests above filled the
 * emulators. */
START_TEST(shapes_are_googles)
{
  json_t *calls = h_emu_get(&logemu, "/emulator/calls"), *c, *all, *e;
  char *reqs = NULL, *resps = NULL, *ents = NULL;
  size_t rl = 0, sl = 0, el = 0, i;

  ck_assert_uint_gt(json_array_size(json_object_get(calls, "calls")), 0);
  json_array_foreach (json_object_get(calls, "calls"), i, c) {
    json_t *body = json_loads(h_str(c, "body"), 0, NULL), *small;
    ck_assert_ptr_nonnull(body);
    /* the same request answered again, and in pages of 2 */
    add_line(&resps, &sl,
             h_call(&logemu, "POST", "/v2/entries:list", NULL, h_str(c, "body"),
                    200));
    small = json_deep_copy(body);
    json_object_set_new(small, "pageSize", json_integer(2));
    {
      char *text = json_dumps(small, JSON_COMPACT);
      add_line(&resps, &sl,
               h_call(&logemu, "POST", "/v2/entries:list", NULL, text, 200));
      free(text);
    }
    json_decref(small);
    add_line(&reqs, &rl, body);
  }
  all = h_emu_get(&logemu, "/emulator/entries");
  ck_assert_uint_gt(json_array_size(json_object_get(all, "entries")), 0);
  json_array_foreach (json_object_get(all, "entries"), i, e) {
    add_line(&ents, &el, json_incref(e));
  }
  shapes("ListLogEntriesRequest", reqs);
  shapes("ListLogEntriesResponse", resps);
  shapes("LogEntry", ents);
  free(reqs);
  free(resps);
  free(ents);
  json_decref(all);
  json_decref(calls);
}
END_TEST

/* Logging's own quota spent (the emulator allows no read): a page read is
 * answered 429 with a Retry-After, never 5xx. */
START_TEST(logging_quota_answered_429)
{
  char id[32], path[128], retry[16];
  struct h_resp r;

  submit(1, "{\"EMU_RUN_MS\": \"100\"}", id);
  json_decref(h_call(&logemu, "POST", "/emulator/config", NULL,
                     "{\"reads_per_minute\": 0}", 200));
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s/logs", id);
  ck_assert_int_eq(h_request(&srv, "GET", path, tok_a, NULL, NULL, &r), 0);
  json_decref(h_call(&logemu, "POST", "/emulator/config", NULL,
                     "{\"reads_per_minute\": 100000}", 200));
  ck_assert_msg(h_is_problem(&r, 429, NULL), "%ld %s", r.status, r.body);
  ck_assert_ptr_nonnull(h_header(&r, "Retry-After", retry, sizeof(retry)));
  ck_assert_int_gt(strtol(retry, NULL, 10), 0);
  h_resp_free(&r);
}
END_TEST

/* ======================================================================
 * 200 followers of 50 jobs within the read budget: page reads past it are
 * answered 429; then the followers' polls (every 100 ms wanted) stay
 * within what the emptied bucket refills, one call naming every job
 * ==================================================================== */

#define JOBS 50
#define PER_JOB 4
#define FOLLOWERS (JOBS * PER_JOB)
#define BUDGET_RPM 30 /* GPUGATE_LOGGING_READS_PER_MINUTE of this fixture */
#define BUDGET_BURST (BUDGET_RPM / 6)

static void setup_budget(void)
{
  start_all("it_logs_budget", "30", "LOG_EMU_READS_PER_MINUTE=60");
}

struct follower {
  CURL *c;
  struct h_buf out; /* what the stream sent */
  int job;
};

/* Whether follower f has been sent job id's first line. */
static bool got_hello(const struct follower *f, const char *id)
{
  char want[96];

  snprintf(want, sizeof(want), "hello from task 0 of gpugate-%s-a1", id);
  return f->out.data && strstr(f->out.data, want);
}

START_TEST(followers_within_budget)
{
  static struct follower fl[FOLLOWERS];
  static char ids[JOBS][32];
  char url[256], auth[4200];
  struct curl_slist *hl = NULL;
  CURLM *m = curl_multi_init();
  json_t *calls, *c;
  long long start, end, drained = 0;
  bool started[JOBS];
  size_t i, n_calls = 0, n_started = 0, k;
  int j, running = 1;
  long allowed;

  for (j = 0; j < JOBS; j++)
    submit(1, "{\"EMU_RUN_MS\": \"600000\"}", ids[j]);
  wait_state(ids[0], "RUNNING");
  for (j = 0; j < JOBS; j++) {
    char path[128];
    json_t *job;
    snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s", ids[j]);
    job = h_call(&srv, "GET", path, tok_a, NULL, 200);
    started[j] = h_str(job, "state") && !strcmp(h_str(job, "state"), "RUNNING");
    n_started += started[j];
    json_decref(job);
  }
  /* page reads spend the budget: one answered 429 with Retry-After once
   * the burst and what refilled meanwhile are spent */
  {
    long long t0 = h_now_ms();
    long ok = 0, may;
    char path[128];
    struct h_resp r;
    snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s/logs", ids[0]);
    for (;;) {
      drained = h_now_ms();
      ck_assert_int_eq(h_request(&srv, "GET", path, tok_a, NULL, NULL, &r), 0);
      if (r.status != 200)
        break;
      ok++;
      h_resp_free(&r);
      may = BUDGET_BURST + (long)((h_now_ms() - t0) * BUDGET_RPM / 60000) + 1;
      ck_assert_msg(ok <= may, "%ld page reads within a budget of %ld", ok,
                    may);
    }
    ck_assert_msg(h_is_problem(&r, 429, NULL), "%ld %s", r.status, r.body);
    ck_assert(h_header(&r, "Retry-After", url, sizeof(url)) != NULL);
    ck_assert(ok >= 1);
    h_resp_free(&r);
  }
  snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok_a);
  hl = curl_slist_append(hl, auth);
  json_decref(h_call(&logemu, "DELETE", "/emulator/calls", NULL, NULL, 200));
  start = h_now_ms();
  end = start + 90000;
  for (i = 0; i < FOLLOWERS; i++) {
    fl[i].job = (int)(i % JOBS);
    fl[i].c = curl_easy_init();
    snprintf(url, sizeof(url),
             "http://127.0.0.1:%u/v1/teams/team-a/jobs/%s/logs?follow=true",
             srv.port, ids[fl[i].job]);
    curl_easy_setopt(fl[i].c, CURLOPT_URL, url);
    curl_easy_setopt(fl[i].c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(fl[i].c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(fl[i].c, CURLOPT_WRITEFUNCTION, h_curl_write);
    curl_easy_setopt(fl[i].c, CURLOPT_WRITEDATA, &fl[i].out);
    curl_multi_add_handle(m, fl[i].c);
  }
  /* until every follower of a job running when the streams opened has its
   * first line: each poll serves them all */
  for (;;) {
    bool all = true;
    curl_multi_perform(m, &running);
    curl_multi_poll(m, NULL, 0, 100, NULL);
    for (i = 0; i < FOLLOWERS && all; i++)
      all = !started[fl[i].job] || got_hello(&fl[i], ids[fl[i].job]);
    if (all) { /* and polls kept asking a while (each wants 10 a second) */
      calls = h_emu_get(&logemu, "/emulator/calls");
      all = json_array_size(json_object_get(calls, "calls")) >= 4;
      json_decref(calls);
    }
    if (all)
      break;
    ck_assert_msg(h_now_ms() < end, "a follower of a running job has not "
                                    "been sent its first line");
    ck_assert_msg(running == FOLLOWERS, "a follow stream ended: %d left",
                  running);
  }
  calls = h_emu_get(&logemu, "/emulator/calls");
  end = h_now_ms(); /* after: every call counted was made before */
  json_array_foreach (json_object_get(calls, "calls"), i, c) {
    n_calls++;
    ck_assert_int_eq(json_integer_value(json_object_get(c, "status")), 200);
  }
  /* the last, made with every stream open, asked for every followed job */
  c = json_array_get(json_object_get(calls, "calls"), n_calls - 1);
  for (j = 0; j < JOBS; j++)
    ck_assert_msg(h_str(c, "body") && strstr(h_str(c, "body"), ids[j]),
                  "the last call lacks job %s", ids[j]);
  /* the bucket held less than a token when the 429 was answered: since
   * then at most what refilled (plus the fraction it held) */
  allowed = (long)((end - drained) * BUDGET_RPM / 60000) + 1;
  fprintf(stderr,
          "logs: %d followers of %d jobs (%zu running) for %.1f s: %zu "
          "entries:list calls (budget %ld: %d a minute from an empty bucket)\n",
          FOLLOWERS, JOBS, n_started, (double)(end - start) / 1000.0, n_calls,
          allowed, BUDGET_RPM);
  ck_assert_msg((long)n_calls <= allowed, "%zu calls, budget %ld", n_calls,
                allowed);
  json_decref(calls);
  for (k = 0; k < FOLLOWERS; k++) {
    curl_multi_remove_handle(m, fl[k].c);
    curl_easy_cleanup(fl[k].c);
    free(fl[k].out.data);
  }
  curl_multi_cleanup(m);
  curl_slist_free_all(hl);
}
END_TEST

Suite *logs_suite(void)
{
  Suite *s = suite_create("logs");
  TCase *tc = tcase_create("read");

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, two_attempts_filters_and_pages);
  tcase_add_test(tc, follow_ends_with_the_job);
  tcase_add_test(tc, follow_waits_for_late_lines);
  tcase_add_test(tc, shapes_are_googles);
  tcase_add_test(tc, logging_quota_answered_429);
  suite_add_tcase(s, tc);
  tc = tcase_create("budget");
  tcase_add_unchecked_fixture(tc, setup_budget, teardown);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, followers_within_budget);
  suite_add_tcase(s, tc);
  return s;
}
