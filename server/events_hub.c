/*
 * events_hub.c — the live event stream's listener and fan-out (see
 * events_hub.h).
 *
 * Everything shared lives in one struct under one mutex: the clients, the
 * hub's head (the stream position up to which it has read and fanned
 * out), and a ring of the last frames it read (with the cursor just
 * before the oldest, its floor), from which a client that caught up to a
 * point between floor and head is brought level as it joins.
 *
 * A client's state (struct events_sub) belongs to its libmicrohttpd
 * response: created by the handler, read by the connection's worker,
 * written by this thread, freed when the response is. Its buffer is
 * bounded; past the bound the client is dropped and its buffer freed at
 * once, so memory never grows with a client that does not read.
 */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "db/events.h"
#include "server/events_hub.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "server/req.h"

#define RING_CAP 4096
#define READ_ROWS 500
#define CATCHUP_ROUNDS 20
#define KEEPALIVE ": keep-alive\n\n"
#define SOCKET_SNDBUF (64 * 1024)

struct events_sub {
  struct events_sub *prev, *next; /* in hub.subs once joined */
  char team[64];
  char job[64];        /* "" = the whole team */
  struct evcursor cur; /* the last position sent (or known empty) */
  char *buf;           /* owned: frames not yet read */
  size_t head, len, cap;
  void *conn; /* borrowed: its MHD connection */
  bool joined, suspended, ended, dropped;
  bool pending; /* frames came since it was last woken (hub reads) */
};

struct ring_ent {
  struct evcursor at;
  char team[64];
  char job[64];
  bool terminal;
  char *frame; /* owned */
  size_t len;
};

static struct {
  pthread_mutex_t mu;
  bool running, stopping;
  const struct config *cfg;
  struct events_sub *subs;
  long n_subs;
  struct evcursor head, floor;
  struct ring_ent ring[RING_CAP];
  size_t r_start, r_n;
  int wake[2];
  pthread_t thread;
} hub = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = {-1, -1}};

static long long now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Resume sub's connection if it waits. Under hub.mu. */
static void wake_sub(struct events_sub *sub)
{
  if (sub->suspended) {
    sub->suspended = false;
    MHD_resume_connection(sub->conn);
  }
}

/* Drop sub: it fell more than the bound behind. Under hub.mu (or before
 * it joined). */
static void drop(struct events_sub *sub, size_t wanted)
{
  log_msg(LOG_WARN,
          "events: a client of team \"%s\" fell behind by %zu bytes "
          "(GPUGATE_EVENTS_CLIENT_BUFFER); dropped",
          sub->team, wanted);
  sub->dropped = true;
  metrics_events_dropped();
  free(sub->buf);
  sub->buf = NULL;
  sub->head = sub->len = sub->cap = 0;
  wake_sub(sub);
}

/* Append n bytes of text (copied) to sub's buffer; drops sub when that
 * would pass the bound. Under hub.mu (or before it joined). */
static void append(struct events_sub *sub, const char *text, size_t n)
{
  size_t bound = (size_t)hub.cfg->events_client_buffer;

  if (sub->dropped || sub->ended)
    return;
  if (sub->len > 0 && sub->len + n > bound) {
    drop(sub, sub->len + n);
    return;
  }
  if (sub->head > 0 && sub->head + sub->len + n > sub->cap) {
    memmove(sub->buf, sub->buf + sub->head, sub->len);
    sub->head = 0;
  }
  if (sub->len + n > sub->cap) {
    size_t cap = sub->cap ? sub->cap : 1024;
    char *grown;
    while (cap < sub->len + n)
      cap *= 2;
    grown = realloc(sub->buf, cap);
    if (!grown) {
      drop(sub, sub->len + n);
      return;
    }
    sub->buf = grown;
    sub->cap = cap;
  }
  memcpy(sub->buf + sub->head + sub->len, text, n);
  sub->len += n;
}

/* Hand frame (of an event at `at`, of team and job) to sub if it is
 * one of its events and new to it. Under hub.mu (or before it joined). */
static void deliver(struct events_sub *sub, const struct evcursor *at,
                    const char *team, const char *job, bool terminal,
                    const char *frame, size_t len)
{
  if (sub->dropped || sub->ended || evcursor_cmp(at, &sub->cur) <= 0 ||
      strcmp(team, sub->team) != 0 ||
      (sub->job[0] && strcmp(job, sub->job) != 0))
    return;
  append(sub, frame, len);
  sub->cur = *at;
  if (sub->job[0] && terminal)
    sub->ended = true; /* a followed job's last event */
  sub->pending = true; /* woken once per read (wake_pending), not per frame */
}

/* Resume every client that was handed frames since the last call: one
 * resume per client and read of the stream, however many rows it held. */
static void wake_pending(void)
{
  struct events_sub *s;

  pthread_mutex_lock(&hub.mu);
  for (s = hub.subs; s; s = s->next)
    if (s->pending) {
      s->pending = false;
      wake_sub(s);
    }
  pthread_mutex_unlock(&hub.mu);
}

/* The SSE frame of ev (new, compact JSON as the API writes it), or NULL. */
static char *frame_of(const struct db_event *ev, size_t *len)
{
  json_t *j = json_loads(ev->data, 0, NULL);
  char *text = j ? json_dumps(j, GG_JSON_DUMP) : NULL, *frame;

  json_decref(j);
  if (!text)
    return NULL;
  frame = evcursor_frame(&ev->at, ev->position ? "position" : "job_event", text,
                         len);
  free(text);
  return frame;
}

/* ---- the listener thread --------------------------------------------- */

static void ring_clear(void)
{
  while (hub.r_n > 0) {
    free(hub.ring[hub.r_start].frame);
    hub.r_start = (hub.r_start + 1) % RING_CAP;
    hub.r_n--;
  }
  hub.r_start = 0;
  hub.floor = hub.head;
}

/* db_event_fn of the hub's reads: keep and fan out one row. */
static void hub_row(void *cls, const struct db_event *ev)
{
  struct ring_ent *e;
  struct events_sub *s;
  size_t len = 0;
  char *frame = frame_of(ev, &len);

  (void)cls;
  pthread_mutex_lock(&hub.mu);
  if (hub.r_n == RING_CAP) {
    e = &hub.ring[hub.r_start];
    hub.floor = e->at;
    free(e->frame);
    hub.r_start = (hub.r_start + 1) % RING_CAP;
    hub.r_n--;
  }
  if (frame) {
    e = &hub.ring[(hub.r_start + hub.r_n) % RING_CAP];
    e->at = ev->at;
    snprintf(e->team, sizeof(e->team), "%s", ev->team);
    snprintf(e->job, sizeof(e->job), "%s", ev->job_id);
    e->terminal = ev->terminal;
    e->frame = frame;
    e->len = len;
    hub.r_n++;
    for (s = hub.subs; s; s = s->next)
      deliver(s, &e->at, e->team, e->job, e->terminal, e->frame, e->len);
  } else {
    log_msg(LOG_ERROR, "events: event %lld could not be rendered",
            (long long)ev->at.id);
  }
  hub.head = ev->at;
  pthread_mutex_unlock(&hub.mu);
}

/* Read and fan out what committed since the head. 0, or -1 when the
 * session failed (logged). */
static int read_new(PGconn *pg)
{
  struct evcursor after, top;
  uint64_t horizon;
  char err[256];
  int n;

  if (db_events_horizon(pg, &horizon, err, sizeof(err)) != 0)
    goto fail;
  top.xid = horizon;
  top.id = 0;
  pthread_mutex_lock(&hub.mu);
  after = hub.head;
  if (hub.n_subs == 0) {
    /* nobody to send to: skip ahead; a client catches up on its own */
    if (evcursor_cmp(&top, &hub.head) > 0)
      hub.head = top;
    ring_clear();
    pthread_mutex_unlock(&hub.mu);
    return 0;
  }
  pthread_mutex_unlock(&hub.mu);
  do {
    n = db_events_read(pg, NULL, NULL, &after, horizon, READ_ROWS, hub_row,
                       NULL, err, sizeof(err));
    wake_pending();
    if (n < 0)
      goto fail;
    pthread_mutex_lock(&hub.mu);
    after = hub.head;
    pthread_mutex_unlock(&hub.mu);
  } while (n == READ_ROWS);
  pthread_mutex_lock(&hub.mu);
  if (evcursor_cmp(&top, &hub.head) > 0)
    hub.head = top; /* everything below the horizon is read */
  pthread_mutex_unlock(&hub.mu);
  return 0;
fail:
  log_msg(LOG_WARN, "events: reading the stream: %s", err);
  return -1;
}

static void keepalive_all(void)
{
  struct events_sub *s;

  pthread_mutex_lock(&hub.mu);
  for (s = hub.subs; s; s = s->next) {
    append(s, KEEPALIVE, sizeof(KEEPALIVE) - 1);
    wake_sub(s);
  }
  pthread_mutex_unlock(&hub.mu);
}

static PGconn *listen_session(void)
{
  char err[256];
  PGconn *pg = db_connect(hub.cfg->direct_database_url, err, sizeof(err));
  PGresult *res;

  if (!pg) {
    log_msg(LOG_WARN, "events: cannot connect: %s", err);
    return NULL;
  }
  res = PQexec(pg, "LISTEN gpugate_events; LISTEN gpugate_admission");
  if (PQresultStatus(res) != PGRES_COMMAND_OK) {
    log_msg(LOG_WARN, "events: LISTEN: %s", PQerrorMessage(pg));
    PQclear(res);
    PQfinish(pg);
    return NULL;
  }
  PQclear(res);
  return pg;
}

static void *run(void *arg)
{
  PGconn *pg = NULL;
  long long next_beat = now_ms() + hub.cfg->events_heartbeat_ms;
  long long next_read = 0;
  bool stop = false;

  (void)arg;
  while (!stop) {
    struct pollfd fds[2];
    long long now = now_ms(), until;
    PGnotify *note;
    bool notified = false;
    char drain[64];

    if (!pg)
      pg = listen_session();
    until = next_beat < next_read ? next_beat : next_read;
    if (!pg && until > now + 1000)
      until = now + 1000; /* retry the session within a second */
    fds[0].fd = hub.wake[0];
    fds[0].events = POLLIN;
    fds[1].fd = pg ? PQsocket(pg) : -1;
    fds[1].events = POLLIN;
    if (poll(fds, 2, until > now ? (int)(until - now) : 0) < 0 &&
        errno != EINTR)
      break;
    if (fds[0].revents & POLLIN)
      while (read(hub.wake[0], drain, sizeof(drain)) > 0) {
      }
    pthread_mutex_lock(&hub.mu);
    stop = hub.stopping;
    pthread_mutex_unlock(&hub.mu);
    if (stop)
      break;
    if (pg && (fds[1].revents & (POLLIN | POLLERR | POLLHUP))) {
      if (!PQconsumeInput(pg)) {
        log_msg(LOG_WARN, "events: session lost: %s", PQerrorMessage(pg));
        PQfinish(pg);
        pg = NULL;
        continue;
      }
      while ((note = PQnotifies(pg))) {
        PQfreemem(note);
        notified = true;
      }
    }
    now = now_ms();
    if (pg && (notified || now >= next_read)) {
      next_read = now + hub.cfg->events_poll_ms;
      if (read_new(pg) != 0) {
        PQfinish(pg);
        pg = NULL;
      }
    }
    if (now >= next_beat) {
      next_beat = now + hub.cfg->events_heartbeat_ms;
      keepalive_all();
    }
  }
  PQfinish(pg);
  return NULL;
}

int events_hub_start(const struct config *cfg)
{
  int i;

  hub.cfg = cfg;
  hub.stopping = false;
  hub.head.xid = 0;
  hub.head.id = 0;
  hub.floor = hub.head;
  if (pipe(hub.wake) != 0)
    return -1;
  for (i = 0; i < 2; i++)
    (void)fcntl(hub.wake[i], F_SETFL, O_NONBLOCK);
  if (pthread_create(&hub.thread, NULL, run, NULL) != 0) {
    close(hub.wake[0]);
    close(hub.wake[1]);
    hub.wake[0] = hub.wake[1] = -1;
    return -1;
  }
  hub.running = true;
  return 0;
}

void events_hub_stop(void)
{
  struct events_sub *s;

  if (!hub.running)
    return;
  pthread_mutex_lock(&hub.mu);
  hub.stopping = true;
  for (s = hub.subs; s; s = s->next) {
    s->ended = true;
    wake_sub(s);
  }
  pthread_mutex_unlock(&hub.mu);
  (void)write(hub.wake[1], "x", 1);
  pthread_join(hub.thread, NULL);
  pthread_mutex_lock(&hub.mu);
  ring_clear();
  hub.running = false;
  pthread_mutex_unlock(&hub.mu);
  close(hub.wake[0]);
  close(hub.wake[1]);
  hub.wake[0] = hub.wake[1] = -1;
}

/* ---- a client's stream ------------------------------------------------ */

/* db_event_fn of a catch-up: hand one row to the (not yet joined) sub. */
static void catchup_row(void *cls, const struct db_event *ev)
{
  struct events_sub *sub = cls;
  size_t len = 0;
  char *frame;

  if (sub->ended)
    return;
  frame = frame_of(ev, &len);
  if (!frame) {
    log_msg(LOG_ERROR, "events: event %lld could not be rendered",
            (long long)ev->at.id);
    sub->cur = ev->at;
    return;
  }
  if (sub->len > 0 && sub->len + len > (size_t)hub.cfg->events_client_buffer) {
    /* more to catch up than a client may hold: send this much, end the
     * stream, and let the client resume from its last id */
    sub->ended = true;
  } else {
    deliver(sub, &ev->at, ev->team, ev->job_id, ev->terminal, frame, len);
  }
  free(frame);
}

/* Join sub when what it has read reaches what the hub has: at or past
 * the head, or within the ring (then the ring's newer frames are handed
 * to it). False when it is behind the ring: it reads on. */
static bool join(struct events_sub *sub)
{
  size_t i;

  if (evcursor_cmp(&sub->cur, &hub.head) < 0) {
    if (evcursor_cmp(&sub->cur, &hub.floor) < 0)
      return false;
    for (i = 0; i < hub.r_n; i++) {
      struct ring_ent *e = &hub.ring[(hub.r_start + i) % RING_CAP];
      deliver(sub, &e->at, e->team, e->job, e->terminal, e->frame, e->len);
    }
  }
  sub->joined = true;
  sub->next = hub.subs;
  if (hub.subs)
    hub.subs->prev = sub;
  hub.subs = sub;
  hub.n_subs++;
  metrics_events_clients(hub.n_subs);
  return true;
}

/* A stream's socket holds at most SOCKET_SNDBUF bytes in the kernel: a
 * client that does not read is then held to its buffer's bound, not to
 * the megabytes a send buffer grows to on its own. */
static void bound_kernel_buffer(void *conn)
{
  const union MHD_ConnectionInfo *i =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  int size = SOCKET_SNDBUF;

  if (i)
    (void)setsockopt(i->connect_fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

int events_hub_now(struct db_conn *db, struct evcursor *now)
{
  char err[256];

  if (db_events_horizon(db->pg, &now->xid, err, sizeof(err)) != 0) {
    log_msg(LOG_WARN, "events: %s", err);
    return -1;
  }
  now->id = 0;
  return 0;
}

enum events_open events_hub_open(struct db_conn *db, const char *team,
                                 const char *job, const struct evcursor *from,
                                 bool done, void *conn, struct events_sub **out)
{
  struct events_sub *sub = calloc(1, sizeof(*sub));
  enum events_open rc = EVENTS_OPEN_BUSY;
  char err[256];
  int round;

  *out = NULL;
  if (!hub.running) {
    free(sub);
    return EVENTS_OPEN_UNAVAILABLE;
  }
  if (!sub)
    return EVENTS_OPEN_NO_MEMORY;
  snprintf(sub->team, sizeof(sub->team), "%s", team);
  snprintf(sub->job, sizeof(sub->job), "%s", job ? job : "");
  sub->cur = *from;
  sub->conn = conn;
  sub->ended = done;
  bound_kernel_buffer(conn);
  for (round = 0; round < CATCHUP_ROUNDS && !sub->ended; round++) {
    uint64_t horizon;
    struct evcursor top;
    bool joined;
    int n;
    if (db_events_horizon(db->pg, &horizon, err, sizeof(err)) != 0)
      goto db_failed;
    /* catch up to the horizon (a client that falls behind by more than
     * its buffer ends here and resumes from where it got) */
    do {
      n = db_events_read(db->pg, team, job, &sub->cur, horizon, READ_ROWS,
                         catchup_row, sub, err, sizeof(err));
      if (n < 0)
        goto db_failed;
    } while (n == READ_ROWS && !sub->ended);
    if (sub->ended)
      break;
    top.xid = horizon;
    top.id = 0;
    if (evcursor_cmp(&top, &sub->cur) > 0)
      sub->cur = top;
    pthread_mutex_lock(&hub.mu);
    if (hub.stopping || !hub.running) {
      pthread_mutex_unlock(&hub.mu);
      rc = EVENTS_OPEN_UNAVAILABLE;
      goto failed;
    }
    joined = sub->ended || join(sub);
    pthread_mutex_unlock(&hub.mu);
    if (joined) {
      *out = sub;
      return EVENTS_OPEN_OK;
    }
  }
  if (sub->ended) {
    *out = sub;
    return EVENTS_OPEN_OK;
  }
  goto failed;
db_failed:
  log_msg(LOG_WARN, "events: catching up: %s", err);
  rc = EVENTS_OPEN_UNAVAILABLE;
failed:
  events_hub_release(sub);
  return rc;
}

long events_hub_read(void *cls, char *buf, size_t max)
{
  struct events_sub *sub = cls;
  long n;

  pthread_mutex_lock(&hub.mu);
  if (sub->len > 0) {
    size_t k = sub->len < max ? sub->len : max;
    memcpy(buf, sub->buf + sub->head, k);
    sub->head += k;
    sub->len -= k;
    if (sub->len == 0)
      sub->head = 0;
    n = (long)k;
  } else if (sub->dropped) {
    n = -1; /* close: the client reconnects with its Last-Event-ID */
  } else if (sub->ended || hub.stopping || !sub->joined) {
    n = 0;
  } else {
    sub->suspended = true;
    MHD_suspend_connection(sub->conn);
    n = REQ_STREAM_WAIT;
  }
  pthread_mutex_unlock(&hub.mu);
  return n;
}

void events_hub_release(void *cls)
{
  struct events_sub *sub = cls;

  if (!sub)
    return;
  pthread_mutex_lock(&hub.mu);
  if (sub->joined) {
    if (sub->prev)
      sub->prev->next = sub->next;
    else
      hub.subs = sub->next;
    if (sub->next)
      sub->next->prev = sub->prev;
    hub.n_subs--;
    metrics_events_clients(hub.n_subs);
  }
  pthread_mutex_unlock(&hub.mu);
  free(sub->buf);
  free(sub);
}
