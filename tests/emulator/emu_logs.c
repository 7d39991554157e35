/*
 * emu_logs.c — the Batch emulator's job output as Cloud Logging entries
 * (see emu_logs.h; the shapes and the facts behind them are in
 * tests/emulator/README.md, "Cloud Logging").
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/log.h"
#include "tests/emulator/emu_logs.h"

#define MAX_TASK_LINES 64 /* tasks that write a line each */

struct batch {
  struct batch *next;
  char *body; /* owned: a WriteLogEntriesRequest */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct batch *head, *tail;
static bool running, stopping;
static pthread_t thread;
static char url[600];
static long long last_ns; /* under mu: every entry a later instant */

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
  (void)p;
  (void)ctx;
  return size * n;
}

static void *run(void *arg)
{
  CURL *c = curl_easy_init();
  struct curl_slist *hl = NULL;

  (void)arg;
  hl = curl_slist_append(hl, "Content-Type: application/json");
  hl = curl_slist_append(hl, "Expect:");
  if (c) {
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_URL, url);
  }
  for (;;) {
    struct batch *b;
    long status = 0;
    CURLcode rc;

    pthread_mutex_lock(&mu);
    while (!head && !stopping)
      pthread_cond_wait(&cv, &mu);
    if (stopping) {
      pthread_mutex_unlock(&mu);
      break;
    }
    b = head;
    head = b->next;
    if (!head)
      tail = NULL;
    pthread_mutex_unlock(&mu);
    if (c) {
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, b->body);
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(b->body));
      rc = curl_easy_perform(c);
      if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
      if (rc != CURLE_OK || status != 200)
        log_msg(LOG_WARN, "emulator: entries:write failed: %s %ld",
                curl_easy_strerror(rc), status);
    }
    free(b->body);
    free(b);
  }
  curl_slist_free_all(hl);
  curl_easy_cleanup(c);
  return NULL;
}

int emu_logs_start(void)
{
  const char *u = getenv("EMU_LOGGING_URL");

  if (!u || !*u)
    return 0;
  snprintf(url, sizeof(url), "%s/v2/entries:write", u);
  stopping = false;
  if (pthread_create(&thread, NULL, run, NULL) != 0)
    return -1;
  running = true;
  return 0;
}

void emu_logs_stop(void)
{
  if (!running)
    return;
  pthread_mutex_lock(&mu);
  stopping = true;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&mu);
  pthread_join(thread, NULL);
  while (head) {
    struct batch *b = head;
    head = b->next;
    free(b->body);
    free(b);
  }
  tail = NULL;
  running = false;
}

/* Under mu: a later instant than any before, as RFC 3339 with nanoseconds. */
static void stamp(char *out, size_t len)
{
  struct timespec ts;
  struct tm tm;
  long long ns;
  time_t s;

  clock_gettime(CLOCK_REALTIME, &ts);
  ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
  if (ns <= last_ns)
    ns = last_ns + 1;
  last_ns = ns;
  s = (time_t)(ns / 1000000000LL);
  gmtime_r(&s, &tm);
  snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
           ns % 1000000000LL);
}

/* One entry of log (batch_task_logs / batch_agent_logs) for task (< 0:
 * none). New. */
static json_t *entry(const char *project, const char *location,
                     const char *name, const char *uid, const json_t *job,
                     const char *log, long long task, int retry,
                     const char *severity, const char *text)
{
  char log_name[300], group[700], task_id[200], when[64];
  json_t *labels = json_deep_copy(json_object_get(job, "labels"));

  if (!labels)
    labels = json_object();
  snprintf(log_name, sizeof(log_name), "projects/%s/logs/%s", project, log);
  snprintf(group, sizeof(group), "%s/taskGroups/group0", name);
  json_object_set_new(labels, "job_uid", json_string(uid));
  json_object_set_new(labels, "task_group_name", json_string(group));
  if (task >= 0) {
    snprintf(task_id, sizeof(task_id), "task/%s-group0-%lld/%d/0", uid, task,
             retry);
    json_object_set_new(labels, "task_id", json_string(task_id));
  }
  stamp(when, sizeof(when));
  return json_pack("{s:s, s:{s:s, s:{s:s, s:s, s:s}}, s:s, s:s, s:o, s:s}",
                   "logName", log_name, "resource", "type",
                   "batch.googleapis.com/Job", "labels", "resource_container",
                   project, "location", location, "job_id", uid, "timestamp",
                   when, "severity", severity, "labels", labels, "textPayload",
                   text);
}

/* Queue the entries of list (stolen) for the writer. */
static void queue(json_t *list)
{
  json_t *doc = json_pack("{s:o}", "entries", list);
  struct batch *b = calloc(1, sizeof(*b));

  pthread_mutex_lock(&mu);
  if (b && doc && (b->body = json_dumps(doc, JSON_COMPACT))) {
    if (tail)
      tail->next = b;
    else
      head = b;
    tail = b;
    pthread_cond_signal(&cv);
  } else {
    free(b);
  }
  pthread_mutex_unlock(&mu);
  json_decref(doc);
}

void emu_logs_task_retried(const char *name, const char *uid, const json_t *job,
                           long long task_count)
{
  char project[128], location[128], id[128], text[512];
  json_t *list;
  long long i, n = task_count < 1 ? 1 : task_count;

  if (!running ||
      sscanf(name, "projects/%127[^/]/locations/%127[^/]/jobs/%127s", project,
             location, id) != 3)
    return;
  if (n > MAX_TASK_LINES)
    n = MAX_TASK_LINES;
  list = json_array();
  pthread_mutex_lock(&mu);
  snprintf(text, sizeof(text), "task 0 of %s failed: exit code 1", id);
  json_array_append_new(list, entry(project, location, name, uid, job,
                                    "batch_task_logs", 0, 0, "ERROR", text));
  for (i = 1; i < n; i++) {
    snprintf(text, sizeof(text), "task %lld of %s done", i, id);
    json_array_append_new(list, entry(project, location, name, uid, job,
                                      "batch_task_logs", i, 0, "INFO", text));
  }
  snprintf(text, sizeof(text), "hello from task 0 of %s", id);
  json_array_append_new(list, entry(project, location, name, uid, job,
                                    "batch_task_logs", 0, 1, "INFO", text));
  pthread_mutex_unlock(&mu);
  queue(list);
}

void emu_logs_job_state(const char *name, const char *uid, const json_t *job,
                        const char *state, long long task_count, int retry)
{
  char project[128], location[128], id[128], text[512];
  json_t *list;
  long long i, n = task_count < 1 ? 1 : task_count;
  bool run = !strcmp(state, "RUNNING"), ok = !strcmp(state, "SUCCEEDED"),
       failed = !strcmp(state, "FAILED");

  if (!running || !(run || ok || failed) ||
      sscanf(name, "projects/%127[^/]/locations/%127[^/]/jobs/%127s", project,
             location, id) != 3)
    return;
  if (n > MAX_TASK_LINES)
    n = MAX_TASK_LINES;
  list = json_array();
  pthread_mutex_lock(&mu);
  if (run) {
    snprintf(text, sizeof(text), "Job %s started %lld task(s).", id, n);
    json_array_append_new(list, entry(project, location, name, uid, job,
                                      "batch_agent_logs", -1, 0, "INFO", text));
  }
  for (i = 0; i < n; i++) {
    if ((failed || retry > 0) && i > 0)
      break; /* one task failed; or only task 0 ran again */
    if (run)
      snprintf(text, sizeof(text), "hello from task %lld of %s", i, id);
    else if (ok)
      snprintf(text, sizeof(text), "task %lld of %s done", i, id);
    else
      snprintf(text, sizeof(text), "task %lld of %s failed: exit code 1", i,
               id);
    json_array_append_new(list, entry(project, location, name, uid, job,
                                      "batch_task_logs", i, retry,
                                      failed ? "ERROR" : "INFO", text));
  }
  pthread_mutex_unlock(&mu);
  queue(list);
}
