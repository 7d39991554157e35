/*
 * connlimit.c — connection caps, absolute request deadlines and upload
 * slots for the HTTP listeners (see connlimit.h).
 *
 * One mutex guards the per-client counts, the list of open connections and
 * their deadlines. A connection's slot is reserved in the accept policy
 * callback and handed to the connection in the "started" notification,
 * which libmicrohttpd makes on the same thread right after; if it never
 * comes (an allocation failed in between), the thread's next accept gives
 * the slot back. The "closed" notification comes before libmicrohttpd
 * closes the socket, and removes the connection under the mutex, so the
 * sweeper never shuts down a descriptor number that was reused.
 *
 * A connection from a trusted proxy reserves a total slot only; its
 * requests take per-client slots on the forwarded address
 * (connlimit_request_take), given back when the request ends or the
 * connection closes, whichever comes first.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <netinet/in.h>

#include "server/connlimit.h"
#include "lib/metrics.h"

#define BUCKETS 4096
#define SWEEP_MS 100
#define ROLE_SLOTS 32

/* Connections (and proxied requests) from one client address. */
struct client {
  struct client *next; /* bucket chain */
  struct clientaddr addr;
  long count;
};

/* One open connection (libmicrohttpd's socket context). */
struct entry {
  struct entry *prev, *next; /* the open list */
  struct connlimit *cl;
  bool counted;           /* holds a total slot */
  struct client *client;  /* holds one of its slots; NULL: none */
  struct client *request; /* the current proxied request's; NULL: none */
  int fd;
  enum connlimit_phase phase;
  long long deadline_ms; /* 0: none */
  bool killed;
};

struct connlimit {
  struct connlimit_cfg cfg;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t sweeper;
  bool stop;
  struct client *buckets[BUCKETS];
  long total; /* connections holding a slot */
  struct entry *open;
  long uploads[ROLE_SLOTS];
};

/* A slot reserved by this thread's last accept, not yet claimed: a total
 * slot in reserved_by, with one of reserved's (NULL for a trusted proxy). */
static _Thread_local struct client *reserved;
static _Thread_local struct connlimit *reserved_by;

static long long now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

long connlimit_default_total(long nofile, long pool, long threads)
{
  long n = nofile - CONNLIMIT_FD_RESERVE - 2 * pool - 4 * threads;

  return n < 16 ? 16 : n;
}

long connlimit_total(long configured, long nofile, long pool, long threads,
                     char *err, size_t errlen)
{
  long fit = connlimit_default_total(nofile, pool, threads);

  if (configured <= 0)
    return fit;
  if (configured > fit) {
    snprintf(err, errlen,
             "GPUGATE_HTTP_MAX_CONNECTIONS: %ld connections do not fit the "
             "file-descriptor limit %ld (at most %ld with this pool and these "
             "threads; raise the limit with ulimit -n or LimitNOFILE)",
             configured, nofile, fit);
    return -1;
  }
  return configured;
}

long connlimit_raise_nofile(void)
{
  struct rlimit rl;

  if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
    return -1;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &rl);
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
      return -1;
  }
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t)(1L << 24))
    return 1L << 24;
  return (long)rl.rlim_cur;
}

/* The address that identifies a client (IPv4 or IPv6; IPv4-mapped
 * addresses as IPv4); another family counts as one client. */
static void client_key(const struct sockaddr *addr, socklen_t len,
                       struct clientaddr *out)
{
  if (clientaddr_from_sockaddr(addr, len, out) != 0)
    out->family = addr ? addr->sa_family : 0;
}

static unsigned bucket_of(const struct clientaddr *key)
{
  uint32_t h = 2166136261u ^ (uint32_t)key->family;
  int i;

  for (i = 0; i < 16; i++)
    h = (h ^ key->bytes[i]) * 16777619u;
  return h % BUCKETS;
}

/* The client's counter, or NULL. Under mu. */
static struct client *client_find(struct connlimit *cl,
                                  const struct clientaddr *key)
{
  struct client *c;

  for (c = cl->buckets[bucket_of(key)]; c; c = c->next)
    if (clientaddr_equal(&c->addr, key))
      return c;
  return NULL;
}

/*
 * One more slot of key's: its counter (new at 1 when it had none); NULL
 * when key holds the per-client cap (*refused "per_client") or memory ran
 * out (*refused "total": as good as full). Under mu.
 */
static struct client *client_take(struct connlimit *cl,
                                  const struct clientaddr *key,
                                  const char **refused)
{
  struct client *c = client_find(cl, key);

  if (c && cl->cfg.per_client > 0 && c->count >= cl->cfg.per_client) {
    *refused = "per_client";
    return NULL;
  }
  if (!c) {
    unsigned b = bucket_of(key);
    c = calloc(1, sizeof(*c));
    if (!c) {
      *refused = "total";
      return NULL;
    }
    c->addr = *key;
    c->next = cl->buckets[b];
    cl->buckets[b] = c;
  }
  c->count++;
  return c;
}

/* Give back one of c's slots; forget c at 0. Under mu. */
static void client_put(struct connlimit *cl, struct client *c)
{
  struct client **pp;

  if (--c->count > 0)
    return;
  for (pp = &cl->buckets[bucket_of(&c->addr)]; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  free(c);
}

/* Give back a connection's slots: the total one and its client's. */
static void slot_put(struct connlimit *cl, struct client *c)
{
  cl->total--;
  if (c)
    client_put(cl, c);
}

/* A slot this thread reserved for an accept that never started. */
static void drop_stale_reservation(void)
{
  struct connlimit *cl = reserved_by;

  if (!cl)
    return;
  pthread_mutex_lock(&cl->mu);
  slot_put(cl, reserved);
  pthread_mutex_unlock(&cl->mu);
  reserved = NULL;
  reserved_by = NULL;
}

enum MHD_Result connlimit_accept(void *cls, const struct sockaddr *addr,
                                 socklen_t addrlen)
{
  struct connlimit *cl = cls;
  struct clientaddr key;
  const char *refused = NULL;
  struct client *c = NULL;

  client_key(addr, addrlen, &key);
  drop_stale_reservation();
  pthread_mutex_lock(&cl->mu);
  if (cl->total >= cl->cfg.max_connections)
    refused = "total";
  else if (!clientaddr_in_nets(&key, cl->cfg.trusted, cl->cfg.n_trusted))
    c = client_take(cl, &key, &refused);
  /* else a trusted proxy: its requests count per client instead */
  if (!refused) {
    cl->total++;
    reserved = c;
    reserved_by = cl;
  }
  pthread_mutex_unlock(&cl->mu);
  if (refused) {
    metrics_conn_refused(refused);
    return MHD_NO;
  }
  return MHD_YES;
}

void connlimit_notify(void *cls, struct MHD_Connection *conn,
                      void **socket_context,
                      enum MHD_ConnectionNotificationCode code)
{
  struct connlimit *cl = cls;
  struct entry *e;
  long open_now;

  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *fd =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    e = calloc(1, sizeof(*e));
    *socket_context = e;
    pthread_mutex_lock(&cl->mu);
    if (!e) {
      if (reserved_by == cl)
        slot_put(cl, reserved);
      reserved = NULL;
      reserved_by = NULL;
      pthread_mutex_unlock(&cl->mu);
      return;
    }
    e->cl = cl;
    e->counted = reserved_by == cl;
    e->client = e->counted ? reserved : NULL;
    reserved = NULL;
    reserved_by = NULL;
    e->fd = fd ? fd->connect_fd : -1;
    e->phase = CONNLIMIT_HEADERS;
    e->deadline_ms = now_ms() + cl->cfg.header_timeout_s * 1000LL;
    e->next = cl->open;
    if (cl->open)
      cl->open->prev = e;
    cl->open = e;
    open_now = cl->total;
    pthread_mutex_unlock(&cl->mu);
    metrics_conn_open(open_now);
    return;
  }
  e = *socket_context;
  if (code != MHD_CONNECTION_NOTIFY_CLOSED || !e)
    return;
  pthread_mutex_lock(&cl->mu);
  if (e->prev)
    e->prev->next = e->next;
  else
    cl->open = e->next;
  if (e->next)
    e->next->prev = e->prev;
  if (e->counted)
    slot_put(cl, e->client);
  if (e->request)
    client_put(cl, e->request);
  open_now = cl->total;
  pthread_mutex_unlock(&cl->mu);
  free(e);
  *socket_context = NULL;
  metrics_conn_open(open_now);
}

static struct entry *entry_of(struct MHD_Connection *conn)
{
  const union MHD_ConnectionInfo *i =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

  return i ? i->socket_context : NULL;
}

void *connlimit_request_line(void *cls, const char *uri,
                             struct MHD_Connection *conn)
{
  struct entry *e = entry_of(conn);

  (void)cls;
  (void)uri;
  if (!e)
    return NULL;
  pthread_mutex_lock(&e->cl->mu);
  /* the first request keeps the deadline counted from the connection */
  if (e->phase == CONNLIMIT_IDLE && !e->killed) {
    e->phase = CONNLIMIT_HEADERS;
    e->deadline_ms = now_ms() + e->cl->cfg.header_timeout_s * 1000LL;
  }
  pthread_mutex_unlock(&e->cl->mu);
  return NULL;
}

bool connlimit_phase(struct MHD_Connection *conn, enum connlimit_phase phase,
                     long timeout_s)
{
  struct entry *e = entry_of(conn);
  bool ok;
  long long now = now_ms();

  if (!e)
    return true;
  pthread_mutex_lock(&e->cl->mu);
  ok = !e->killed && (e->deadline_ms == 0 || now < e->deadline_ms);
  e->phase = phase;
  if (phase == CONNLIMIT_IDLE)
    timeout_s = e->cl->cfg.idle_timeout_s;
  e->deadline_ms = timeout_s > 0 ? now + timeout_s * 1000LL : 0;
  pthread_mutex_unlock(&e->cl->mu);
  return ok;
}

bool connlimit_request_take(struct MHD_Connection *conn,
                            const struct clientaddr *client)
{
  struct entry *e = entry_of(conn);
  const char *refused = NULL;

  if (!e)
    return true;
  pthread_mutex_lock(&e->cl->mu);
  if (e->request) /* a request that ended without its completion call */
    client_put(e->cl, e->request);
  e->request = client_take(e->cl, client, &refused);
  pthread_mutex_unlock(&e->cl->mu);
  if (refused && !strcmp(refused, "per_client")) {
    metrics_conn_refused("per_client_proxied");
    return false;
  }
  return true; /* out of memory: not counted rather than refused */
}

void connlimit_request_release(struct MHD_Connection *conn)
{
  struct entry *e = entry_of(conn);

  if (!e)
    return;
  pthread_mutex_lock(&e->cl->mu);
  if (e->request)
    client_put(e->cl, e->request);
  e->request = NULL;
  pthread_mutex_unlock(&e->cl->mu);
}

static const char *phase_name(enum connlimit_phase p);

bool connlimit_expired(struct MHD_Connection *conn)
{
  struct entry *e = entry_of(conn);
  bool gone, now_gone = false;
  enum connlimit_phase phase;

  if (!e)
    return false;
  pthread_mutex_lock(&e->cl->mu);
  gone = e->killed;
  if (!gone && e->deadline_ms && now_ms() >= e->deadline_ms) {
    e->killed = gone = now_gone = true; /* the caller closes it */
  }
  phase = e->phase;
  pthread_mutex_unlock(&e->cl->mu);
  if (now_gone)
    metrics_conn_timed_out(phase_name(phase));
  return gone;
}

static const char *phase_name(enum connlimit_phase p)
{
  switch (p) {
  case CONNLIMIT_HEADERS:
    return "headers";
  case CONNLIMIT_BODY:
    return "body";
  case CONNLIMIT_IDLE:
    return "idle";
  case CONNLIMIT_BUSY:
  default:
    return "busy";
  }
}

/* Close every connection past its deadline. Under mu. */
static void sweep(struct connlimit *cl)
{
  long long now = now_ms();
  struct entry *e;

  for (e = cl->open; e; e = e->next) {
    if (e->killed || !e->deadline_ms || now < e->deadline_ms || e->fd < 0)
      continue;
    /* the worker sees the end of the stream and closes the connection;
     * the descriptor stays open (and ours) until the "closed" notice */
    (void)shutdown(e->fd, SHUT_RDWR);
    e->killed = true;
    metrics_conn_timed_out(phase_name(e->phase));
  }
}

static void *sweeper_main(void *arg)
{
  struct connlimit *cl = arg;
  struct timespec ts;

  pthread_mutex_lock(&cl->mu);
  while (!cl->stop) {
    sweep(cl);
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += SWEEP_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&cl->cv, &cl->mu, &ts);
  }
  pthread_mutex_unlock(&cl->mu);
  return NULL;
}

struct connlimit *connlimit_new(const struct connlimit_cfg *cfg)
{
  struct connlimit *cl = calloc(1, sizeof(*cl));

  if (!cl)
    return NULL;
  cl->cfg = *cfg;
  if (pthread_mutex_init(&cl->mu, NULL) != 0) {
    free(cl);
    return NULL;
  }
  if (pthread_cond_init(&cl->cv, NULL) != 0) {
    pthread_mutex_destroy(&cl->mu);
    free(cl);
    return NULL;
  }
  if (pthread_create(&cl->sweeper, NULL, sweeper_main, cl) != 0) {
    pthread_cond_destroy(&cl->cv);
    pthread_mutex_destroy(&cl->mu);
    free(cl);
    return NULL;
  }
  return cl;
}

void connlimit_free(struct connlimit *cl)
{
  int b;

  if (!cl)
    return;
  pthread_mutex_lock(&cl->mu);
  cl->stop = true;
  pthread_cond_signal(&cl->cv);
  pthread_mutex_unlock(&cl->mu);
  pthread_join(cl->sweeper, NULL);
  for (b = 0; b < BUCKETS; b++)
    while (cl->buckets[b]) {
      struct client *c = cl->buckets[b];
      cl->buckets[b] = c->next;
      free(c);
    }
  pthread_cond_destroy(&cl->cv);
  pthread_mutex_destroy(&cl->mu);
  free(cl);
}

static int role_index(unsigned role_bit)
{
  int i;

  for (i = 0; i < ROLE_SLOTS; i++)
    if (role_bit == (1u << i))
      return i;
  return -1;
}

bool connlimit_upload_take(struct connlimit *cl, unsigned role_bit)
{
  int i = role_index(role_bit);
  bool ok = false;

  if (i < 0)
    return false;
  pthread_mutex_lock(&cl->mu);
  if (cl->uploads[i] < cl->cfg.max_uploads_per_role) {
    cl->uploads[i]++;
    ok = true;
  }
  pthread_mutex_unlock(&cl->mu);
  return ok;
}

void connlimit_upload_release(struct connlimit *cl, unsigned role_bit)
{
  int i = role_index(role_bit);

  if (i < 0)
    return;
  pthread_mutex_lock(&cl->mu);
  if (cl->uploads[i] > 0)
    cl->uploads[i]--;
  pthread_mutex_unlock(&cl->mu);
}
