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
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gcp/auth.h"
#include "db/budget.h"
#include "db/job_logs.h"
#include "lib/jsonx.h"
#include "lib/log.h"
#include "lib/stream.h"
#include "control/logpoll.h"
#include "control/logpoll_round.h"

#define ROUNDS_READ 20 /* published polls read at once */

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
  const struct control_config *cfg;
  char key[200]; /* the budget row: "logging.read/<project>" */
  double rate;
  long burst;
  struct batch_token_source *ts;
  struct logging_client *client;
  pthread_mutex_t client_mu;
  long calls;

  char replica[128];            /* this process, as the lease's holder */
  struct logpoll_poller poller; /* the holder's poll; the thread's */

  pthread_mutex_t reg;
  struct follower *list;
  size_t n;
  bool stop, joined; /* joined: a follower came since the thread looked */
  int wake[2];       /* a byte wakes the thread (stop, a follower) */
  pthread_t thread;

  /* the thread's own */
  size_t rotate; /* first job of the next round when there are many */
  long long seq; /* the last round handed on (-1: not yet known) */
  bool holding;  /* the lease, as last seen */
} g = {.client_mu = PTHREAD_MUTEX_INITIALIZER,
       .reg = PTHREAD_MUTEX_INITIALIZER,
       .wake = {-1, -1}};

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
    rc = logging_list(g.client, g.cfg->gcp.gcp_project, filter, page_size,
                      token, r);
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
  return g.running ? g.cfg->gcp.gcp_project : "";
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

/* Wake the thread (a follower joined, or the stop). */
static void poke(void)
{
  if (g.wake[1] >= 0)
    (void)write(g.wake[1], "x", 1);
}

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
  g.joined = true;
  pthread_mutex_unlock(&g.reg);
  poke();
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

/* ---- this replica's followers, as wants of the poller ------------------ */

/* Tell the poller (whichever replica holds the lease) which jobs this
 * replica's followers follow, each from the earliest position one of them
 * has not seen. 0, or -1 (logged). */
static int register_wants(struct db_conn *c)
{
  json_t *wants = json_array(), *w;
  struct follower *f;
  char *text = NULL, err[512];
  size_t i;
  int rc = -1;

  pthread_mutex_lock(&g.reg);
  for (f = g.list; f && wants; f = f->next) {
    bool found = false;
    json_array_foreach (wants, i, w) {
      if (!strcmp(json_string_value(json_object_get(w, "job")), f->job)) {
        if (f->pos_ns < json_integer_value(json_object_get(w, "ns")))
          json_object_set_new(w, "ns", json_integer(f->pos_ns));
        found = true;
        break;
      }
    }
    if (!found)
      json_array_append_new(
          wants, json_pack("{s:s, s:I}", "job", f->job, "ns", f->pos_ns));
  }
  pthread_mutex_unlock(&g.reg);
  text = wants ? json_dumps(wants, JSON_COMPACT) : NULL;
  if (!text)
    log_msg(LOG_WARN, "logs: out of memory");
  else if (db_log_follows_set(c, g.replica, text, err, sizeof(err)) != 0)
    log_msg(LOG_WARN, "logs: followed jobs: %s", err);
  else
    rc = 0;
  free(text);
  json_decref(wants);
  return rc;
}

/* ---- every replica: the rounds handed to its followers ----------------- */

static bool named(const json_t *arr, const char *job)
{
  size_t i;
  json_t *v;

  json_array_foreach (arr, i, v) {
    if (json_is_string(v) && !strcmp(json_string_value(v), job))
      return true;
  }
  return false;
}

/* Hand one round (row of db_log_rounds) to this replica's followers: a
 * follower of one of its jobs, at or after its since, gets the entries
 * after its position and has seen everything up to the page's last; one
 * whose job had ended ends when the round was complete. */
static void apply_round(PGresult *res, int row)
{
  int64_t since = strtoll(PQgetvalue(res, row, 1), NULL, 10);
  int64_t last_ns = strtoll(PQgetvalue(res, row, 5), NULL, 10);
  const char *last_id = PQgetvalue(res, row, 6);
  bool complete = !strcmp(PQgetvalue(res, row, 4), "t");
  json_t *jobs = json_loads(PQgetvalue(res, row, 2), 0, NULL);
  json_t *ended = json_loads(PQgetvalue(res, row, 3), 0, NULL);
  json_t *entries = json_loads(PQgetvalue(res, row, 7), 0, NULL), *e;
  struct follower *f;
  size_t i;

  if (!jobs || !ended || !entries) {
    log_msg(LOG_WARN, "logs: a published poll cannot be read");
    goto out;
  }
  pthread_mutex_lock(&g.reg);
  for (f = g.list; f; f = f->next) {
    f->in_round = f->pos_ns >= since && named(jobs, f->job);
    f->end_pending = f->in_round && named(ended, f->job);
  }
  json_array_foreach (entries, i, e) {
    const char *ts = json_string_value(json_object_get(e, "timestamp"));
    const char *id = json_string_value(json_object_get(e, "insertId"));
    int64_t ns;
    if (ts && logging_time_ns(ts, &ns) == 0)
      deliver(e, ns, id ? id : "");
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
    f->in_round = f->end_pending = false;
  }
  pthread_mutex_unlock(&g.reg);
out:
  json_decref(jobs);
  json_decref(ended);
  json_decref(entries);
}

/* Hand on the rounds published since the last one read. 0, or -1. */
static int read_rounds(struct db_conn *c)
{
  char err[512];
  int rows, i;

  do {
    PGresult *res = db_log_rounds(c, g.cfg->gcp.gcp_project, g.seq, ROUNDS_READ,
                                  err, sizeof(err));
    if (!res) {
      log_msg(LOG_WARN, "logs: reading the polls: %s", err);
      return -1;
    }
    rows = PQntuples(res);
    for (i = 0; i < rows; i++) {
      apply_round(res, i);
      g.seq = strtoll(PQgetvalue(res, i, 0), NULL, 10);
    }
    PQclear(res);
  } while (rows == ROUNDS_READ);
  return 0;
}

/* End the thread's session (a new one starts with no statement
 * prepared). */
static void close_session(struct db_conn *c)
{
  PQfinish(c->pg);
  memset(c, 0, sizeof(*c));
}

/* The thread's session into c (its prepared statements start empty):
 * LISTEN gpugate_logs, and the read position at the last round published
 * when it is the first session. 0, or -1 (logged, c->pg NULL). */
static int open_session(struct db_conn *c)
{
  char err[512];
  PGresult *res;

  memset(c, 0, sizeof(*c));
  c->pg = db_connect(g.cfg->direct_database_url, err, sizeof(err));
  if (!c->pg) {
    log_msg(LOG_WARN, "logs: database: %s", err);
    return -1;
  }
  res = PQexec(c->pg, "LISTEN gpugate_logs");
  if (PQresultStatus(res) != PGRES_COMMAND_OK) {
    log_msg(LOG_WARN, "logs: LISTEN: %s", PQerrorMessage(c->pg));
    goto fail;
  }
  if (g.seq < 0 &&
      db_log_rounds_top(c, g.cfg->gcp.gcp_project, &g.seq, err, sizeof(err))) {
    log_msg(LOG_WARN, "logs: the last poll: %s", err);
    goto fail;
  }
  PQclear(res);
  return 0;
fail:
  PQclear(res);
  close_session(c);
  return -1;
}

static long long now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * Every GPUGATE_LOGGING_POLL_MS (and at once when a follower joins): the
 * replica's followed jobs registered, the lease taken or renewed; while
 * held, the holder's polls (each when the last said). On each NOTIFY of a
 * round (and on the same timer, for one missed): the rounds handed on.
 */
static void *run(void *arg)
{
  struct db_conn conn;
  long long next_tick = 0, next_round = 0;
  bool registered = false, holder = false;

  (void)arg;
  memset(&conn, 0, sizeof(conn));
  for (;;) {
    struct pollfd fds[2];
    long long now, until;
    bool stop, any, joined, notified = false;
    char drain[64], err[512];
    PGnotify *note;

    pthread_mutex_lock(&g.reg);
    stop = g.stop;
    any = g.n > 0;
    joined = g.joined;
    g.joined = false;
    pthread_mutex_unlock(&g.reg);
    if (stop)
      break;
    if (!conn.pg && open_session(&conn) != 0)
      next_tick = now_ms() + 1000; /* retry within a second */
    now = now_ms();
    if (conn.pg && (joined || now >= next_tick)) {
      next_tick = now + g.cfg->logging_poll_ms;
      if ((any || registered) && register_wants(&conn) == 0)
        registered = any;
      if (db_log_lease(&conn, g.cfg->gcp.gcp_project, g.replica,
                       g.poller.ttl_ms, &holder, err, sizeof(err)) != 0) {
        log_msg(LOG_WARN, "logs: the poller's lease: %s", err);
        holder = false;
      }
      if (holder && !g.holding)
        log_msg(LOG_INFO, "logs: this replica polls Cloud Logging for %s",
                g.cfg->gcp.gcp_project);
      g.holding = holder;
    }
    if (conn.pg && holder && now_ms() >= next_round)
      next_round = now_ms() + logpoll_round(&conn, &g.poller);
    if (conn.pg && (any || joined) && read_rounds(&conn) != 0) {
      close_session(&conn);
      continue;
    }
    now = now_ms();
    until = next_tick;
    if (holder && next_round < until)
      until = next_round;
    fds[0].fd = g.wake[0];
    fds[0].events = POLLIN;
    fds[1].fd = conn.pg ? PQsocket(conn.pg) : -1;
    fds[1].events = POLLIN;
    if (poll(fds, 2, until > now ? (int)(until - now) : 0) < 0 &&
        errno != EINTR)
      break;
    if (fds[0].revents & POLLIN)
      while (read(g.wake[0], drain, sizeof(drain)) > 0) {
      }
    if (conn.pg && (fds[1].revents & (POLLIN | POLLERR | POLLHUP))) {
      if (!PQconsumeInput(conn.pg)) {
        log_msg(LOG_WARN, "logs: session lost: %s", PQerrorMessage(conn.pg));
        close_session(&conn);
        holder = false;
        continue;
      }
      while ((note = PQnotifies(conn.pg))) {
        PQfreemem(note);
        notified = true;
      }
    }
    pthread_mutex_lock(&g.reg);
    any = g.n > 0;
    pthread_mutex_unlock(&g.reg);
    if (conn.pg && notified && any && read_rounds(&conn) != 0) {
      close_session(&conn);
    }
  }
  if (conn.pg) { /* a clean stop: the next replica need not wait */
    char err[512];
    if (holder)
      (void)db_log_unlease(&conn, g.cfg->gcp.gcp_project, g.replica, err,
                           sizeof(err));
    (void)db_log_follows_set(&conn, g.replica, "[]", err, sizeof(err));
  }
  PQfinish(conn.pg);
  return NULL;
}

int logpoll_start(const struct control_config *cfg, char *err, size_t errlen)
{
  long rpm = cfg->logging_reads_per_minute;
  char host[64] = "";
  unsigned char rnd[6] = {0};
  FILE *ur;
  int i;

  g.cfg = cfg;
  snprintf(g.key, sizeof(g.key), "logging.read/%s", cfg->gcp.gcp_project);
  /* any 60 s window: at most burst + rate × 60 = rpm/6 + rpm calls… kept
   * under Logging's 60 a minute by the default 50 (8 + 50) */
  g.rate = (double)rpm / 60.0;
  g.burst = rpm / 6 > 1 ? rpm / 6 : 1;
  /* the lease outlives three polls (at least 3 s): a holder killed is
   * replaced within that */
  g.poller.ttl_ms =
      cfg->logging_poll_ms * 3 > 3000 ? cfg->logging_poll_ms * 3 : 3000;
  (void)gethostname(host, sizeof(host) - 1);
  if ((ur = fopen("/dev/urandom", "rb"))) {
    if (fread(rnd, 1, sizeof(rnd), ur) != sizeof(rnd))
      memset(rnd, 0, sizeof(rnd));
    fclose(ur);
  }
  snprintf(g.replica, sizeof(g.replica), "%.64s/%ld/%02x%02x%02x%02x%02x%02x",
           host, (long)getpid(), rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
           rnd[5]);
  g.seq = -1;
  g.poller.cfg = cfg;
  g.poller.rotate = 0;
  g.poller.take = take_read;
  g.poller.call = call;
  g.ts = batch_token_new_scoped(&cfg->gcp, LOGGING_READ_SCOPE, err, errlen);
  if (!g.ts)
    return -1;
  g.client = logging_client_new(cfg->logging_endpoint, g.ts);
  if (!g.client || pipe(g.wake) != 0) {
    logging_client_free(g.client);
    batch_token_free(g.ts);
    g.client = NULL;
    g.ts = NULL;
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (i = 0; i < 2; i++)
    (void)fcntl(g.wake[i], F_SETFL, O_NONBLOCK);
  g.stop = false;
  if (pthread_create(&g.thread, NULL, run, NULL) != 0) {
    logging_client_free(g.client);
    batch_token_free(g.ts);
    g.client = NULL;
    g.ts = NULL;
    close(g.wake[0]);
    close(g.wake[1]);
    g.wake[0] = g.wake[1] = -1;
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
  poke();
  for (f = g.list; f; f = f->next) {
    pthread_mutex_lock(&f->mu);
    f->ended = true;
    wake(f);
    pthread_mutex_unlock(&f->mu);
  }
  pthread_mutex_unlock(&g.reg);
  pthread_join(g.thread, NULL);
  g.running = false;
  close(g.wake[0]);
  close(g.wake[1]);
  g.wake[0] = g.wake[1] = -1;
  /* a page read under way holds the client: wait for it */
  pthread_mutex_lock(&g.client_mu);
  logging_client_free(g.client);
  batch_token_free(g.ts);
  g.client = NULL;
  g.ts = NULL;
  pthread_mutex_unlock(&g.client_mu);
}
