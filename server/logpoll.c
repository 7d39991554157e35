/*
 * logpoll.c — reads of Cloud Logging within the deployment's budget, and
 * the poller that serves every follower (see logpoll.h).
 *
 * Locking: reg (the follower list) before a follower's mu; the client's
 * own mutex is never held with either. A follower is freed only by
 * logpoll_unfollow, after it is off the list, so the poller (which walks
 * the list under reg) never sees a freed one; and a follower's connection
 * is resumed only while it is suspended, so never after it closed.
 */
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batch/auth.h"
#include "db/budget.h"
#include "db/job_logs.h"
#include "server/log.h"
#include "server/logpoll.h"
#include "server/req.h"

#define POLL_JOBS_MAX 200 /* jobs in one filter (≈ 40 characters each) */
#define POLL_PAGE 1000

struct follower {
  struct follower *next; /* on the list, under reg */
  char job[64];
  int task, min_sev;
  bool text;
  void *conn;
  int64_t pos_ns; /* the last entry handed on (or looked at) */
  char pos_id[128];
  bool in_round, end_pending; /* under reg, the poller's */

  pthread_mutex_t mu; /* the rest */
  char *out;
  size_t len, off;
  bool ended, dropped, suspended;
};

static struct {
  bool running;
  const struct config *cfg;
  char key[200]; /* the budget row: "logging.read/<project>" */
  double rate;
  long burst;
  struct batch_token_source *ts;
  struct logging_client *client;
  pthread_mutex_t client_mu;
  long calls;

  pthread_mutex_t reg;
  pthread_cond_t cond;
  struct follower *list;
  size_t n;
  bool stop;
  pthread_t thread;
  size_t rotate; /* first job of the next round when there are many */
} g = {.client_mu = PTHREAD_MUTEX_INITIALIZER,
       .reg = PTHREAD_MUTEX_INITIALIZER,
       .cond = PTHREAD_COND_INITIALIZER};

/* ---- the budget and one call -------------------------------------------- */

/* One token of the deployment's read budget: 1 taken, 0 spent (*wait_ms),
 * -1 the database failed. */
static int take_read(struct db_conn *c, long *wait_ms, char *err, size_t errlen)
{
  int granted = 0;

  if (db_budget_lease(c, g.key, 1, g.rate, g.burst, &granted, wait_ms, err,
                      errlen) != 0)
    return -1;
  if (granted == 0 && *wait_ms <= 0)
    *wait_ms = 1000;
  return granted > 0 ? 1 : 0;
}

/* entries:list under the client's mutex. */
static int call(const char *filter, int page_size, const char *token,
                struct logging_result *r)
{
  int rc;

  pthread_mutex_lock(&g.client_mu);
  if (g.client) {
    rc =
        logging_list(g.client, g.cfg->gcp_project, filter, page_size, token, r);
    g.calls++;
  } else { /* stopped meanwhile */
    memset(r, 0, sizeof(*r));
    snprintf(r->err, sizeof(r->err), "the log reader has stopped");
    rc = -1;
  }
  pthread_mutex_unlock(&g.client_mu);
  return rc;
}

enum logpoll_rc logpoll_read(struct db_conn *c, const struct logging_query *q,
                             int page_size, const char *page_token,
                             json_t **doc, long *retry_s, char *err,
                             size_t errlen)
{
  char *filter = NULL;
  struct logging_result r;
  long wait_ms = 0;
  enum logpoll_rc rc;
  int took;

  *doc = NULL;
  *retry_s = 0;
  if (!g.running) {
    snprintf(err, errlen, "the log reader is not running");
    return LOGPOLL_OFF;
  }
  filter = malloc(LOGGING_FILTER_MAX + 1);
  if (!filter || logging_filter(q, filter, LOGGING_FILTER_MAX + 1) != 0) {
    free(filter);
    snprintf(err, errlen, "the filter cannot be written");
    return LOGPOLL_FAILED;
  }
  took = take_read(c, &wait_ms, err, errlen);
  if (took <= 0) {
    free(filter);
    *retry_s = (wait_ms + 999) / 1000;
    return took == 0 ? LOGPOLL_SPENT : LOGPOLL_FAILED;
  }
  if (call(filter, page_size, page_token, &r) == 0) {
    *doc = r.doc;
    rc = LOGPOLL_OK;
  } else if (r.status == 429) {
    *retry_s = r.retry_after[0] ? strtol(r.retry_after, NULL, 10) : 60;
    rc = LOGPOLL_SPENT;
  } else {
    rc = r.status == 400 ? LOGPOLL_REFUSED : LOGPOLL_FAILED;
  }
  if (rc != LOGPOLL_OK)
    snprintf(err, errlen, "%s", r.err);
  free(filter);
  return rc;
}

const char *logpoll_project(void)
{
  return g.running ? g.cfg->gcp_project : "";
}

const char *logpoll_deployment(void)
{
  return g.running ? g.cfg->deployment : "";
}

long logpoll_calls(void)
{
  long n;

  pthread_mutex_lock(&g.client_mu);
  n = g.calls;
  pthread_mutex_unlock(&g.client_mu);
  return n;
}

size_t logpoll_followers(void)
{
  size_t n;

  pthread_mutex_lock(&g.reg);
  n = g.n;
  pthread_mutex_unlock(&g.reg);
  return n;
}

/* ---- followers ----------------------------------------------------------- */

void *logpoll_follow(const struct logpoll_follow *w)
{
  struct follower *f;

  if (!g.running || strlen(w->job) >= sizeof(f->job))
    return NULL;
  f = calloc(1, sizeof(*f));
  if (!f)
    return NULL;
  snprintf(f->job, sizeof(f->job), "%s", w->job);
  f->task = w->task;
  f->min_sev = w->min_severity;
  f->text = w->text;
  f->conn = w->conn;
  if (w->since && *w->since && logging_time_ns(w->since, &f->pos_ns) == 0)
    f->pos_ns -= 1; /* entries at since itself are wanted */
  pthread_mutex_init(&f->mu, NULL);
  pthread_mutex_lock(&g.reg);
  if (g.stop) { /* logpoll_stop has ended the others: none may join now */
    pthread_mutex_unlock(&g.reg);
    pthread_mutex_destroy(&f->mu);
    free(f);
    return NULL;
  }
  f->next = g.list;
  g.list = f;
  g.n++;
  pthread_mutex_unlock(&g.reg);
  return f;
}

void logpoll_unfollow(void *follower)
{
  struct follower *f = follower, **p;

  if (!f)
    return;
  pthread_mutex_lock(&g.reg);
  for (p = &g.list; *p; p = &(*p)->next)
    if (*p == f) {
      *p = f->next;
      g.n--;
      break;
    }
  pthread_mutex_unlock(&g.reg);
  pthread_mutex_destroy(&f->mu);
  free(f->out);
  free(f);
}

long logpoll_stream_read(void *follower, char *buf, size_t max)
{
  struct follower *f = follower;
  long n;

  pthread_mutex_lock(&f->mu);
  if (f->dropped) {
    pthread_mutex_unlock(&f->mu);
    return -1;
  }
  if (f->off < f->len) {
    size_t k = f->len - f->off < max ? f->len - f->off : max;
    memcpy(buf, f->out + f->off, k);
    f->off += k;
    if (f->off == f->len)
      f->off = f->len = 0;
    pthread_mutex_unlock(&f->mu);
    return (long)k;
  }
  if (f->ended) {
    pthread_mutex_unlock(&f->mu);
    return 0;
  }
  /* nothing yet: off the event loop until the poller has something */
  f->suspended = true;
  MHD_suspend_connection(f->conn);
  n = REQ_STREAM_WAIT;
  pthread_mutex_unlock(&f->mu);
  return n;
}

/* Caller holds f->mu: back on the event loop when it was waiting. */
static void wake(struct follower *f)
{
  if (f->suspended) {
    f->suspended = false;
    MHD_resume_connection(f->conn);
  }
}

/* Caller holds reg. Append s (n bytes) to f's unsent text, or drop f when
 * that passes LOGPOLL_FOLLOWER_MAX. */
static void append(struct follower *f, const char *s, size_t n)
{
  pthread_mutex_lock(&f->mu);
  if (!f->dropped) {
    char *g2 =
        f->len + n <= LOGPOLL_FOLLOWER_MAX ? realloc(f->out, f->len + n) : NULL;
    if (!g2) {
      f->dropped = true;
      log_msg(LOG_WARN,
              "logs: a follower of job %s fell behind and was "
              "dropped",
              f->job);
    } else {
      f->out = g2;
      memcpy(f->out + f->len, s, n);
      f->len += n;
    }
    wake(f);
  }
  pthread_mutex_unlock(&f->mu);
}

/* The text a follower is sent for an entry's view (borrowed): a line of
 * text, or the object as one NDJSON line. New; NULL when out of memory. */
static char *render(const struct follower *f, const json_t *view, size_t *n)
{
  char *s, *line;

  if (f->text) {
    const char *t = json_string_value(json_object_get(view, "text"));
    size_t k = strlen(t ? t : "");
    s = malloc(k + 2);
    if (!s)
      return NULL;
    memcpy(s, t ? t : "", k);
    s[k] = '\n';
    s[k + 1] = '\0';
    *n = k + 1;
    return s;
  }
  s = json_dumps(view, GG_JSON_DUMP);
  if (!s)
    return NULL;
  *n = strlen(s);
  line = realloc(s, *n + 2);
  if (!line) {
    free(s);
    return NULL;
  }
  line[(*n)++] = '\n';
  line[*n] = '\0';
  return line;
}

static bool after_pos(const struct follower *f, int64_t ns, const char *id)
{
  return ns > f->pos_ns || (ns == f->pos_ns && strcmp(id, f->pos_id) > 0);
}

/* Caller holds reg. Hand one entry to the followers of its job. */
static void deliver(const json_t *e, int64_t ns, const char *id)
{
  const char *job;
  json_t *view = logging_entry_view(e, &job);
  struct follower *f;

  for (f = g.list; view && job && f; f = f->next) {
    json_t *task = json_object_get(view, "task");
    const char *sev = json_string_value(json_object_get(view, "severity"));
    char *s;
    size_t n = 0;
    if (!f->in_round || strcmp(f->job, job) != 0 || !after_pos(f, ns, id))
      continue;
    f->pos_ns = ns;
    snprintf(f->pos_id, sizeof(f->pos_id), "%s", id);
    if ((f->task >= 0 && json_integer_value(task) != f->task) ||
        (f->task >= 0 && !json_is_integer(task)) ||
        logging_severity_rank(sev) < f->min_sev)
      continue;
    s = render(f, view, &n);
    if (s)
      append(f, s, n);
    free(s);
  }
  json_decref(view);
}

static void format_ns(int64_t ns, char *out, size_t len)
{
  time_t t = (time_t)(ns / 1000000000);
  struct tm tm;

  gmtime_r(&t, &tm);
  snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
           (long long)(ns % 1000000000));
}

/* One round of the poller: the new entries of every followed job in one
 * call. Returns how long to wait before the next (ms). */
static long round_once(struct db_conn *c)
{
  const char *jobs[POLL_JOBS_MAX];
  char names[POLL_JOBS_MAX][64], since[64] = "", err[512];
  bool live[POLL_JOBS_MAX];
  struct logging_query q;
  struct logging_result r;
  struct follower *f;
  size_t n = 0, i, skip;
  int64_t min_ns = -1;
  long wait_ms = 0, interval = g.cfg->logging_poll_ms;
  char *filter = NULL;
  int took;

  /* the followed jobs, from the rotating start when there are many */
  pthread_mutex_lock(&g.reg);
  skip = g.n > POLL_JOBS_MAX ? g.rotate % g.n : 0;
  for (f = g.list, i = 0; f; f = f->next, i++) {
    size_t k;
    f->in_round = false;
    if (i < skip)
      continue;
    for (k = 0; k < n && strcmp(names[k], f->job) != 0; k++)
      ;
    if (k == n) {
      if (n == POLL_JOBS_MAX)
        continue;
      snprintf(names[n++], sizeof(names[0]), "%s", f->job);
    }
    f->in_round = true;
    if (min_ns < 0 || f->pos_ns < min_ns)
      min_ns = f->pos_ns;
  }
  g.rotate += n;
  pthread_mutex_unlock(&g.reg);
  if (n == 0)
    return interval;
  for (i = 0; i < n; i++)
    jobs[i] = names[i];
  if (db_jobs_live(c, jobs, n, live, err, sizeof(err)) != 0) {
    log_msg(LOG_WARN, "logs: job states: %s", err);
    return interval;
  }
  /* a job seen ended now: its followers end after this round's call, when
   * it is complete (what the job wrote before it ended is then in) */
  pthread_mutex_lock(&g.reg);
  for (f = g.list; f; f = f->next)
    for (i = 0; f->in_round && i < n; i++)
      if (!strcmp(f->job, names[i]) && !live[i])
        f->end_pending = true;
  pthread_mutex_unlock(&g.reg);

  took = take_read(c, &wait_ms, err, sizeof(err));
  if (took < 0)
    log_msg(LOG_WARN, "logs: read budget: %s", err);
  if (took <= 0)
    return wait_ms > interval ? wait_ms : interval;
  if (min_ns > 0)
    format_ns(min_ns, since, sizeof(since));
  memset(&q, 0, sizeof(q));
  q.project = g.cfg->gcp_project;
  q.deployment = g.cfg->deployment;
  q.jobs = jobs;
  q.n_jobs = n;
  q.since = since;
  q.task = -1;
  filter = malloc(LOGGING_FILTER_MAX + 1);
  if (!filter || logging_filter(&q, filter, LOGGING_FILTER_MAX + 1) != 0) {
    free(filter);
    log_msg(LOG_WARN, "logs: the followers' filter cannot be written");
    return interval;
  }
  if (call(filter, POLL_PAGE, NULL, &r) != 0) {
    free(filter);
    log_msg(LOG_WARN, "logs: %s", r.err);
    return r.status == 429 ? 60000 : interval;
  }
  free(filter);
  {
    json_t *entries = json_object_get(r.doc, "entries"), *e;
    const char *next =
        json_string_value(json_object_get(r.doc, "nextPageToken"));
    bool complete = !next || !*next;
    int64_t last_ns = -1;
    const char *last_id = "";

    pthread_mutex_lock(&g.reg);
    json_array_foreach (entries, i, e) {
      const char *ts = json_string_value(json_object_get(e, "timestamp"));
      const char *id = json_string_value(json_object_get(e, "insertId"));
      int64_t ns;
      if (!ts || logging_time_ns(ts, &ns) != 0)
        continue;
      deliver(e, ns, id ? id : "");
      last_ns = ns;
      last_id = id ? id : "";
    }
    for (f = g.list; f; f = f->next) {
      if (!f->in_round)
        continue;
      /* it saw every entry of its job up to the page's last */
      if (last_ns >= 0 && after_pos(f, last_ns, last_id)) {
        f->pos_ns = last_ns;
        snprintf(f->pos_id, sizeof(f->pos_id), "%s", last_id);
      }
      if (complete && f->end_pending) {
        pthread_mutex_lock(&f->mu);
        f->ended = true;
        wake(f);
        pthread_mutex_unlock(&f->mu);
      }
    }
    pthread_mutex_unlock(&g.reg);
    json_decref(r.doc);
    return complete ? interval : 0;
  }
}

static void *run(void *arg)
{
  struct db_conn conn;
  char err[512];

  (void)arg;
  memset(&conn, 0, sizeof(conn));
  pthread_mutex_lock(&g.reg);
  while (!g.stop) {
    struct timespec until;
    long wait = g.cfg->logging_poll_ms;
    bool any = g.n > 0;
    pthread_mutex_unlock(&g.reg);
    if (any) {
      if (conn.pg && PQstatus(conn.pg) != CONNECTION_OK) {
        PQfinish(conn.pg);
        conn.pg = NULL;
      }
      if (!conn.pg)
        conn.pg = db_connect(g.cfg->database_url, err, sizeof(err));
      if (conn.pg)
        wait = round_once(&conn);
      else
        log_msg(LOG_WARN, "logs: database: %s", err);
    }
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += wait / 1000;
    until.tv_nsec += (wait % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&g.reg);
    if (!g.stop)
      pthread_cond_timedwait(&g.cond, &g.reg, &until);
  }
  pthread_mutex_unlock(&g.reg);
  PQfinish(conn.pg);
  return NULL;
}

int logpoll_start(const struct config *cfg, char *err, size_t errlen)
{
  long rpm = cfg->logging_reads_per_minute;

  g.cfg = cfg;
  snprintf(g.key, sizeof(g.key), "logging.read/%s", cfg->gcp_project);
  /* any 60 s window: at most burst + rate × 60 = rpm/6 + rpm calls… kept
   * under Logging's 60 a minute by the default 50 (8 + 50) */
  g.rate = (double)rpm / 60.0;
  g.burst = rpm / 6 > 1 ? rpm / 6 : 1;
  g.ts = batch_token_new_scoped(cfg, LOGGING_READ_SCOPE, err, errlen);
  if (!g.ts)
    return -1;
  g.client = logging_client_new(cfg->logging_endpoint, g.ts);
  if (!g.client) {
    batch_token_free(g.ts);
    g.ts = NULL;
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  g.stop = false;
  if (pthread_create(&g.thread, NULL, run, NULL) != 0) {
    logging_client_free(g.client);
    batch_token_free(g.ts);
    g.client = NULL;
    g.ts = NULL;
    snprintf(err, errlen, "cannot start the log poller");
    return -1;
  }
  g.running = true;
  return 0;
}

void logpoll_stop(void)
{
  struct follower *f;

  if (!g.running)
    return;
  pthread_mutex_lock(&g.reg);
  g.stop = true;
  pthread_cond_signal(&g.cond);
  for (f = g.list; f; f = f->next) {
    pthread_mutex_lock(&f->mu);
    f->ended = true;
    wake(f);
    pthread_mutex_unlock(&f->mu);
  }
  pthread_mutex_unlock(&g.reg);
  pthread_join(g.thread, NULL);
  g.running = false;
  /* a page read under way holds the client: wait for it */
  pthread_mutex_lock(&g.client_mu);
  logging_client_free(g.client);
  batch_token_free(g.ts);
  g.client = NULL;
  g.ts = NULL;
  pthread_mutex_unlock(&g.client_mu);
}
