/*
 * emu_push.c — Pub/Sub push envelopes and the threads that POST them.
 * A push subscription delivers many messages at once; here LANES threads
 * do, each with its own FIFO. A job's messages all take the lane its name
 * hashes to, so they arrive in the order its states changed. A delivery
 * answered with anything but 2xx (or not answered) is retried a few times,
 * like a Pub/Sub push subscription would; after that it is counted as
 * failed and dropped. With EMU_PUSH_AUDIENCE set, every delivery carries
 * `Authorization: Bearer` with a fresh ID token signed by the emulator's
 * OIDC key (emu_oidc.c), as a push subscription with authentication does.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "tests/emulator/emu_config.h"
#include "tests/emulator/emu_oidc.h"
#include "tests/emulator/emu_push.h"
#include "tests/emulator/emu_util.h"

#define ATTEMPTS 4
#define RETRY_MS 250
#define MAX_QUEUE 100000
#define LANES 4

struct item {
  char *body; /* owned JSON text */
  struct item *next;
};

struct lane {
  pthread_cond_t cv;
  struct item *head, *tail;
  pthread_t thread;
};

/* mu guards everything below */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct lane lanes[LANES];
static size_t queued;
static bool stopping, started;
static long long next_id = 1, delivered, failed, attempts;

static struct lane *lane_of(const char *name)
{
  unsigned h = 5381;

  while (*name)
    h = h * 33 + (unsigned char)*name++;
  return &lanes[h % LANES];
}

void emu_push_job_state(const char *name, const char *uid, const char *state)
{
  struct emu_config c;
  char when[40], id[32], sub[300];
  struct item *it;
  struct lane *l;
  json_t *env;
  long long mid;

  emu_config_get(&c);
  if (!c.push_url[0])
    return;
  emu_rfc3339(when, sizeof(when));
  if (c.push_subscription[0])
    snprintf(sub, sizeof(sub), "%s", c.push_subscription);
  else
    snprintf(sub, sizeof(sub), "projects/%s/subscriptions/gpugate", c.project);
  pthread_mutex_lock(&mu);
  mid = next_id++;
  pthread_mutex_unlock(&mu);
  snprintf(id, sizeof(id), "%lld", mid);
  /* data is base64("{}"): Batch puts the facts in the attributes */
  env = json_pack("{s:{s:{s:s, s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:s, s:s},"
                  " s:s}",
                  "message", "attributes", "Type", "JOB_STATE_CHANGED",
                  "JobName", name, "JobUID", uid, "NewJobState", state,
                  "Origin", "batch-emulator", "data", "e30=", "messageId", id,
                  "message_id", id, "publishTime", when, "publish_time", when,
                  "subscription", sub);
  it = calloc(1, sizeof(*it));
  if (!env || !it || !(it->body = json_dumps(env, JSON_COMPACT))) {
    json_decref(env);
    free(it);
    return;
  }
  json_decref(env);
  l = lane_of(name);
  pthread_mutex_lock(&mu);
  if (queued >= MAX_QUEUE || !started) {
    pthread_mutex_unlock(&mu);
    free(it->body);
    free(it);
    return;
  }
  if (l->tail)
    l->tail->next = it;
  else
    l->head = it;
  l->tail = it;
  queued++;
  pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&mu);
}

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
  (void)p;
  (void)ud;
  return size * n;
}

static bool deliver(CURL *c, struct curl_slist *hl,
                    const struct emu_config *cfg, const char *body)
{
  struct curl_slist *auth = NULL;
  long status = 0;
  CURLcode rc;

  if (cfg->push_audience[0]) {
    char *tok = emu_oidc_token(cfg->push_audience, cfg->push_service_account);
    size_t n = tok ? strlen(tok) + 32 : 0;
    char *h = tok ? malloc(n) : NULL;
    struct curl_slist *i;
    if (h) {
      snprintf(h, n, "Authorization: Bearer %s", tok);
      for (i = hl; i; i = i->next)
        auth = curl_slist_append(auth, i->data);
      auth = curl_slist_append(auth, h);
    }
    free(h);
    free(tok);
  }
  curl_easy_setopt(c, CURLOPT_URL, cfg->push_url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, auth ? auth : hl);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  rc = curl_easy_perform(c);
  if (rc == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  curl_slist_free_all(auth);
  pthread_mutex_lock(&mu);
  attempts++;
  pthread_mutex_unlock(&mu);
  if (rc != CURLE_OK)
    log_msg(LOG_WARN, "emulator: push failed: %s", curl_easy_strerror(rc));
  else if (status < 200 || status > 299)
    log_msg(LOG_WARN, "emulator: push answered %ld", status);
  return rc == CURLE_OK && status >= 200 && status <= 299;
}

static void *run(void *arg)
{
  struct lane *l = arg;
  CURL *c = curl_easy_init();
  struct curl_slist *hl = NULL;

  hl = curl_slist_append(hl, "Content-Type: application/json");
  hl = curl_slist_append(hl, "Expect:");
  if (c) {
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "batch-emulator-push");
  }
  for (;;) {
    struct item *it;
    struct emu_config cfg;
    bool ok = false;
    int i;

    pthread_mutex_lock(&mu);
    while (!l->head && !stopping)
      pthread_cond_wait(&l->cv, &mu);
    if (stopping) {
      pthread_mutex_unlock(&mu);
      break;
    }
    it = l->head;
    l->head = it->next;
    if (!l->head)
      l->tail = NULL;
    queued--;
    pthread_mutex_unlock(&mu);

    for (i = 0; c && i < ATTEMPTS && !ok; i++) {
      bool stop;
      pthread_mutex_lock(&mu);
      stop = stopping;
      pthread_mutex_unlock(&mu);
      emu_config_get(&cfg);
      if (stop || !cfg.push_url[0])
        break;
      if (i)
        emu_sleep_ms(RETRY_MS);
      ok = deliver(c, hl, &cfg, it->body);
    }
    pthread_mutex_lock(&mu);
    if (ok)
      delivered++;
    else
      failed++;
    pthread_mutex_unlock(&mu);
    free(it->body);
    free(it);
  }
  curl_slist_free_all(hl);
  curl_easy_cleanup(c);
  return NULL;
}

int emu_push_start(void)
{
  int i, n = 0;

  pthread_mutex_lock(&mu);
  stopping = false;
  for (i = 0; i < LANES; i++) {
    pthread_cond_init(&lanes[i].cv, NULL);
    if (pthread_create(&lanes[i].thread, NULL, run, &lanes[i]) != 0)
      break;
    n++;
  }
  started = n == LANES;
  pthread_mutex_unlock(&mu);
  if (!started) {
    pthread_mutex_lock(&mu);
    stopping = true;
    for (i = 0; i < n; i++)
      pthread_cond_signal(&lanes[i].cv);
    pthread_mutex_unlock(&mu);
    for (i = 0; i < n; i++)
      pthread_join(lanes[i].thread, NULL);
  }
  return started ? 0 : -1;
}

void emu_push_stop(void)
{
  struct item *it;
  int i;

  pthread_mutex_lock(&mu);
  if (!started) {
    pthread_mutex_unlock(&mu);
    return;
  }
  stopping = true;
  started = false;
  for (i = 0; i < LANES; i++)
    pthread_cond_broadcast(&lanes[i].cv);
  pthread_mutex_unlock(&mu);
  for (i = 0; i < LANES; i++) {
    pthread_join(lanes[i].thread, NULL);
    while ((it = lanes[i].head)) {
      lanes[i].head = it->next;
      free(it->body);
      free(it);
    }
    lanes[i].tail = NULL;
    pthread_cond_destroy(&lanes[i].cv);
  }
  queued = 0;
}

json_t *emu_push_stats(void)
{
  json_t *o;

  pthread_mutex_lock(&mu);
  o = json_pack("{s:I, s:I, s:I, s:I}", "queued", (json_int_t)queued,
                "delivered", (json_int_t)delivered, "failed",
                (json_int_t)failed, "attempts", (json_int_t)attempts);
  pthread_mutex_unlock(&mu);
  return o;
}
