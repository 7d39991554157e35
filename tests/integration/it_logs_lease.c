/*
 * it_logs_lease.c — one Cloud Logging poller per project for the whole
 * deployment (migration 0035, control/logpoll.c): two replicas with a
 * follower each, of different jobs; the Logging emulator's own record of
 * entries:list calls shows every call naming both jobs (one poller serves
 * both replicas' followers); kill -9 of the replica holding the lease and
 * the other takes over: a line written afterwards reaches its follower,
 * and the lease names it. Every wait ends as soon as its condition holds,
 * within a generous bound.
 */
#include <check.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/harness.h"

Suite *logs_lease_suite(void);

#define WAIT_MS 90000
#define MAX_ENV 24

static struct h_server logemu, emu, one, two;
static char db_url[512];
static char *tok;

static void setup(void)
{
  char gcp[H_GCP_ENV][128], logging[128], emu_logging[128];
  const char *env[MAX_ENV], *emu_env[6];
  const char *log_env[] = {"LOG_EMU_READS_PER_MINUTE=100000", NULL};
  size_t n = 0, i;

  signal(SIGPIPE, SIG_IGN);
  ck_assert_msg(h_log_emulator_start(&logemu, log_env) == 0,
                "the logging emulator did not start; see %s", logemu.log);
  snprintf(emu_logging, sizeof(emu_logging),
           "EMU_LOGGING_URL=http://127.0.0.1:%u", logemu.port);
  emu_env[0] = "EMU_START_MS=50";
  emu_env[1] = "EMU_CAPACITY=us-central1/RESERVATION_BOUND=64,"
               "us-central1/STANDARD=64,us-central1/SPOT=256";
  emu_env[2] = emu_logging;
  emu_env[3] = NULL;
  ck_assert_msg(h_emulator_start(&emu, emu_env) == 0,
                "the emulator did not start; see %s", emu.log);
  h_gcp_env(&emu, gcp);
  h_db_apply("it_logs_lease", H_REFERENCE, db_url, sizeof(db_url));
  for (i = 0; i < H_GCP_ENV; i++)
    env[n++] = gcp[i];
  snprintf(logging, sizeof(logging),
           "GPUGATE_LOGGING_ENDPOINT=http://127.0.0.1:%u", logemu.port);
  env[n++] = logging;
  env[n++] = "GPUGATE_LOGGING_READS_PER_MINUTE=60000";
  env[n++] = "GPUGATE_LOGGING_POLL_MS=200";
  env[n++] = "GPUGATE_SYNC_INTERVAL_MS=200";
  env[n++] = "GPUGATE_RATE_LIMIT_RPS=100000";
  env[n++] = "GPUGATE_ADMISSION_INTERVAL_MS=200";
  env[n] = NULL;
  ck_assert_msg(h_server_start(&one, db_url, env) == 0,
                "gpugate did not start; see %s", one.log);
  ck_assert_msg(h_server_start(&two, db_url, env) == 0,
                "gpugate did not start; see %s", two.log);
  tok = h_token("team-a", "member", 3600);
}

static void teardown(void)
{
  h_server_stop(&one);
  h_server_stop(&two);
  h_server_stop(&emu);
  h_server_stop(&logemu);
  free(tok);
  tok = NULL;
}

static void submit_running(char id[32])
{
  const char *body =
      "{\"name\": \"lease\", \"queue\": \"lp\", \"task_count\": 1, "
      "\"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\", "
      "\"commands\": [\"python\", \"train.py\"], "
      "\"env\": {\"EMU_RUN_MS\": \"600000\"}, "
      "\"cpu_milli\": 1000, \"memory_mib\": 5120, \"gpu\": 1}}";
  long long end = h_now_ms() + WAIT_MS;
  char path[160];
  json_t *j = h_call(&one, "POST", "/v1/teams/team-a/jobs", tok, body, 201);

  snprintf(id, 32, "%s", h_str(j, "id") ? h_str(j, "id") : "");
  json_decref(j);
  ck_assert_msg(id[0], "no job id");
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%.31s", id);
  for (;;) {
    bool running;
    j = h_call(&one, "GET", path, tok, NULL, 200);
    running = h_str(j, "state") && !strcmp(h_str(j, "state"), "RUNNING");
    json_decref(j);
    if (running)
      return;
    ck_assert_msg(h_now_ms() < end, "job %s is not RUNNING", id);
    h_sleep_ms(50);
  }
}

struct follower {
  CURL *c;
  struct h_buf out; /* what the stream sent */
};

static void follow(CURLM *m, struct follower *f, const struct h_server *s,
                   const char *id, struct curl_slist *hl)
{
  char url[256];

  f->c = curl_easy_init();
  snprintf(url, sizeof(url),
           "http://127.0.0.1:%u/v1/teams/team-a/jobs/%s/logs?follow=true",
           s->port, id);
  curl_easy_setopt(f->c, CURLOPT_URL, url);
  curl_easy_setopt(f->c, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(f->c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(f->c, CURLOPT_WRITEFUNCTION, h_curl_write);
  curl_easy_setopt(f->c, CURLOPT_WRITEDATA, &f->out);
  curl_multi_add_handle(m, f->c);
}

/* Let the streams run for about ms. */
static void pump(CURLM *m, long ms)
{
  long long end = h_now_ms() + ms;
  int running;

  do {
    curl_multi_perform(m, &running);
    curl_multi_poll(m, NULL, 0, 50, NULL);
  } while (h_now_ms() < end);
}

/* The entries:list calls made since the emulator's record was cleared,
 * and how many of them name a and b: *first_both gets the index of the
 * first naming both (-1: none), *later_one how many after it do not. */
static size_t calls(const char *a, const char *b, long *first_both,
                    size_t *later_one)
{
  json_t *all = h_emu_get(&logemu, "/emulator/calls"), *c;
  size_t i, n = 0;

  *first_both = -1;
  *later_one = 0;
  json_array_foreach (json_object_get(all, "calls"), i, c) {
    const char *body = h_str(c, "body");
    bool both = body && strstr(body, a) && strstr(body, b);
    n++;
    if (both && *first_both < 0)
      *first_both = (long)i;
    else if (!both && *first_both >= 0)
      (*later_one)++;
  }
  json_decref(all);
  return n;
}

/* The pid in the lease's holder ("host/pid/random"), 0 when none. */
static long holder_pid(PGconn *pg)
{
  PGresult *res = PQexec(pg, "SELECT split_part(holder, '/', 2) FROM "
                             "log_poll_leases WHERE expires_at > now()");
  long pid = 0;

  if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
    pid = strtol(PQgetvalue(res, 0, 0), NULL, 10);
  PQclear(res);
  return pid;
}

/* A line of job id's task 0, written into the Logging emulator as Batch
 * writes one (the labels Batch copies from the job, and its own). */
static void write_line(const char *id, const char *text)
{
  char body[2048];

  snprintf(body, sizeof(body),
           "{\"logName\": \"projects/test-project/logs/batch_task_logs\", "
           "\"entries\": [{\"severity\": \"INFO\", \"textPayload\": \"%s\", "
           "\"labels\": {\"gpugate-job\": \"%s\", \"gpugate-team\": "
           "\"team-a\", \"gpugate-deployment\": \"default\", \"job_uid\": "
           "\"uid-lease\", \"task_group_name\": \"projects/test-project/"
           "locations/us-central1/jobs/gpugate-%s-a1/taskGroups/group0\", "
           "\"task_id\": \"task/uid-lease-group0-0/0/0\"}}]}",
           text, id, id);
  json_decref(h_call(&logemu, "POST", "/v2/entries:write", NULL, body, 200));
}

START_TEST(one_poller_then_takeover_after_kill9)
{
  char a[32], b[32], auth[4200];
  struct follower fa = {0}, fb = {0}, *survivor;
  struct h_server *holder, *other;
  struct curl_slist *hl = NULL;
  CURLM *m = curl_multi_init();
  PGconn *pg = h_db_connect(db_url);
  long long end;
  long first_both = -1, pid;
  size_t n, later_one = 0, at_both;

  ck_assert(PQstatus(pg) == CONNECTION_OK);
  submit_running(a);
  submit_running(b);
  snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok);
  hl = curl_slist_append(hl, auth);
  json_decref(h_call(&logemu, "DELETE", "/emulator/calls", NULL, NULL, 200));
  follow(m, &fa, &one, a, hl); /* job a followed on replica one */
  follow(m, &fb, &two, b, hl); /* job b on replica two */

  /* one poller: a call names both replicas' jobs */
  end = h_now_ms() + WAIT_MS;
  while (calls(a, b, &first_both, &later_one), first_both < 0) {
    ck_assert_msg(h_now_ms() < end,
                  "no entries:list call named both followed jobs: each "
                  "replica polls for its own followers");
    pump(m, 100);
  }
  /* and every later one does too (five more at least) */
  at_both = (size_t)first_both;
  end = h_now_ms() + WAIT_MS;
  while ((n = calls(a, b, &first_both, &later_one)) < at_both + 6) {
    ck_assert_msg(h_now_ms() < end, "the poller stopped asking");
    pump(m, 100);
  }
  fprintf(stderr,
          "logs lease: %zu entries:list calls, the first naming both jobs "
          "#%ld, %zu after it naming one\n",
          n, first_both, later_one);
  ck_assert_uint_eq(later_one, 0);
  ck_assert_msg(fa.out.data && strstr(fa.out.data, "hello from task 0") &&
                    fb.out.data && strstr(fb.out.data, "hello from task 0"),
                "followers: one \"%s\", two \"%s\"",
                fa.out.data ? fa.out.data : "", fb.out.data ? fb.out.data : "");

  /* neither replica's poller thread failed a statement on its session
   * (a session's prepared statements are its own) */
  ck_assert_int_eq(h_log_count(&one, "prepared statement"), 0);
  ck_assert_int_eq(h_log_count(&two, "prepared statement"), 0);

  /* kill -9 the holder: the other replica takes the lease over */
  pid = holder_pid(pg);
  ck_assert_msg(pid == (long)one.pid || pid == (long)two.pid,
                "the lease holder %ld is neither replica", pid);
  holder = pid == (long)one.pid ? &one : &two;
  other = holder == &one ? &two : &one;
  survivor = holder == &one ? &fb : &fa;
  ck_assert_int_eq(h_server_kill(holder, SIGKILL), 0);
  write_line(holder == &one ? b : a, "written after the kill");
  end = h_now_ms() + WAIT_MS;
  while (!survivor->out.data ||
         !strstr(survivor->out.data, "written after the kill")) {
    ck_assert_msg(h_now_ms() < end,
                  "the surviving replica's follower did not get the line "
                  "written after its poller was killed");
    pump(m, 100);
  }
  ck_assert_int_eq(holder_pid(pg), (long)other->pid);

  curl_multi_remove_handle(m, fa.c);
  curl_multi_remove_handle(m, fb.c);
  curl_easy_cleanup(fa.c);
  curl_easy_cleanup(fb.c);
  free(fa.out.data);
  free(fb.out.data);
  curl_multi_cleanup(m);
  curl_slist_free_all(hl);
  PQfinish(pg);
}
END_TEST

Suite *logs_lease_suite(void)
{
  Suite *s = suite_create("logs_lease");
  TCase *tc = tcase_create("lease");

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, one_poller_then_takeover_after_kill9);
  suite_add_tcase(s, tc);
  return s;
}
