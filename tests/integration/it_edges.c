/*
 * it_edges.c — hostile traffic at the HTTP edge (issue 11, items 1 and 2),
 * against the real binary on loopback:
 *
 *   slowloris     5,000 connections from 127.0.0.2 that send a request
 *                 line and then one header line a second, reopened as the
 *                 server closes them; meanwhile another client's /healthz
 *                 and an authenticated GET answer within 1 s each, every
 *                 time. The per-client cap refuses the flood as it is
 *                 accepted and the header deadline closes the held ones
 *                 although they keep sending.
 *   unauthenticated_bodies
 *                 200 connections post 1 MiB job bodies without a token,
 *                 pushing what the socket takes and then trickling: each
 *                 gets its 401 right after its headers, the server closes
 *                 without reading on, and its RSS stays under 64 MiB.
 *   metrics_without_credentials
 *                 with a team's month spend loaded, /metrics without a
 *                 token shows no team, no cluster queue and no money;
 *                 the same on a GPUGATE_METRICS_LISTEN listener, which is
 *                 then the only place /metrics is served.
 *   uploads       billing uploads take one of their role's slots (429 with
 *                 Retry-After when none is free) and are closed at their
 *                 deadline although they trickle.
 *   total_cap     over GPUGATE_HTTP_MAX_CONNECTIONS a connection is closed
 *                 as it is accepted, and there is room again once others
 *                 close; a cap the fd limit cannot hold stops start-up.
 *
 * Every load here is bounded in count and time and stays on loopback.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *edges_suite(void);

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

static struct h_server srv;
static char db_url[512];

/* ------------------------------------------------------------- sockets */

/* Raise this process's soft fd limit to the hard one; fails the test if
 * that is below want. */
static void need_fds(long want)
{
  struct rlimit rl;

  ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
  rl.rlim_cur = rl.rlim_max;
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
  ck_assert_msg(rl.rlim_cur == RLIM_INFINITY || (long)rl.rlim_cur >= want,
                "the fd limit (%ld) is below %ld", (long)rl.rlim_cur, want);
}

/* A non-blocking TCP connection from the loopback address from to
 * 127.0.0.1:port, under way; -1 on failure. */
static int dial(const char *from, unsigned short port)
{
  struct sockaddr_in src, dst;
  int one = 1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

  if (fd < 0)
    return -1;
  memset(&src, 0, sizeof(src));
  src.sin_family = AF_INET;
  inet_pton(AF_INET, from, &src.sin_addr);
  memset(&dst, 0, sizeof(dst));
  dst.sin_family = AF_INET;
  dst.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  (void)setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
  if (bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0 ||
      (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) != 0 &&
       errno != EINPROGRESS)) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Send what the socket takes of buf[0..len) now: bytes sent, 0 when it
 * takes nothing yet, -1 when the peer closed or reset. */
static long push(int fd, const char *buf, size_t len)
{
  ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

  if (n >= 0)
    return (long)n;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOTCONN ? 0 : -1;
}

/* Whether the peer has closed fd (end of stream or reset), reading and
 * discarding what is there. */
static bool peer_closed(int fd)
{
  char buf[4096];
  ssize_t n;

  for (;;) {
    n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0)
      continue;
    if (n == 0)
      return true;
    return errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN;
  }
}

/* The server's resident set in KiB (/proc/PID/status VmRSS), -1 if gone. */
static long rss_kib(pid_t pid)
{
  char path[64], line[256];
  long kib = -1;
  FILE *f;

  snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
  f = fopen(path, "r");
  if (!f)
    return -1;
  while (fgets(line, sizeof(line), f))
    if (!strncmp(line, "VmRSS:", 6))
      kib = strtol(line + 6, NULL, 10);
  fclose(f);
  return kib;
}

/* /metrics of s with token (NULL: none), which must answer 200; the
 * body (caller frees). */
static char *scrape(const struct h_server *s, const char *token)
{
  struct h_resp r;
  char *text;

  ck_assert_int_eq(h_request(s, "GET", "/metrics", token, NULL, NULL, &r), 0);
  ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
  text = r.body;
  r.body = NULL;
  h_resp_free(&r);
  return text;
}

/* ----------------------------------------------------------- slowloris */

#define SLOW_CONNS 5000
#define SLOW_OPENS_MAX 40000 /* connections opened in all, reopens included */
#define SLOW_SECONDS 10
#define SLOW_HEADER_TIMEOUT_S 3

struct attacker {
  unsigned short port;
  volatile int stop;
  int fd[SLOW_CONNS];
  long long opened_ms[SLOW_CONNS];
  int lines[SLOW_CONNS];
  /* results */
  long opens, refused_or_closed, max_open;
  long long longest_ms; /* the longest a connection lived */
};

static void *attack(void *arg)
{
  struct attacker *a = arg;
  static const char first[] = "GET /healthz HTTP/1.1\r\nHost: gpugate\r\n";
  int i;

  for (i = 0; i < SLOW_CONNS; i++)
    a->fd[i] = -1;
  while (!a->stop) {
    long long now = h_now_ms(), round_end;
    long open = 0;
    for (i = 0; i < SLOW_CONNS && !a->stop; i++) {
      if (a->fd[i] < 0) {
        if (a->opens >= SLOW_OPENS_MAX)
          continue;
        a->fd[i] = dial("127.0.0.2", a->port);
        if (a->fd[i] < 0)
          continue;
        a->opens++;
        a->opened_ms[i] = h_now_ms();
        a->lines[i] = 0;
        continue;
      }
      if (peer_closed(a->fd[i])) {
        long long life = now - a->opened_ms[i];
        if (life > a->longest_ms)
          a->longest_ms = life;
        a->refused_or_closed++;
        close(a->fd[i]);
        a->fd[i] = -1;
        continue;
      }
      open++;
      {
        char line[64];
        long rc;
        if (a->lines[i] == 0)
          rc = push(a->fd[i], first, sizeof(first) - 1);
        else
          rc = push(a->fd[i], line,
                    (size_t)snprintf(line, sizeof(line), "X-Slow-%d: %d\r\n",
                                     a->lines[i], i));
        if (rc > 0)
          a->lines[i]++;
      }
    }
    if (open > a->max_open)
      a->max_open = open;
    /* one line a second on every connection */
    round_end = now + 1000;
    while (!a->stop && h_now_ms() < round_end)
      h_sleep_ms(20);
  }
  for (i = 0; i < SLOW_CONNS; i++)
    if (a->fd[i] >= 0) {
      long long life = h_now_ms() - a->opened_ms[i];
      if (life > a->longest_ms)
        a->longest_ms = life;
      close(a->fd[i]);
    }
  return NULL;
}

START_TEST(slowloris)
{
  static struct attacker a; /* large: not on the stack */
  const char *env[] = {"GPUGATE_HTTP_HEADER_TIMEOUT_S=3", NULL};
  char *member, *scraper, *text;
  pthread_t t;
  long long start, worst_health = 0, worst_get = 0;
  int probes = 0;
  double refused, timed_out;

  need_fds(SLOW_CONNS + 256);
  h_db_apply("it_edges_slow", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv, db_url, env), 0);
  member = h_token("team-a", "member", 600);
  scraper = h_token(NULL, "metrics", 600);
  memset(&a, 0, sizeof(a));
  a.port = srv.port;
  ck_assert_int_eq(pthread_create(&t, NULL, attack, &a), 0);

  /* from another address, throughout: each answer within 1 s */
  h_sleep_ms(300); /* the flood is under way */
  start = h_now_ms();
  while (h_now_ms() - start < SLOW_SECONDS * 1000) {
    struct h_resp r;
    long long t0 = h_now_ms(), dt;
    ck_assert_int_eq(h_request(&srv, "GET", "/healthz", NULL, NULL, NULL, &r),
                     0);
    dt = h_now_ms() - t0;
    ck_assert_msg(r.status == 200, "/healthz answered %ld", r.status);
    h_resp_free(&r);
    if (dt > worst_health)
      worst_health = dt;
    t0 = h_now_ms();
    ck_assert_int_eq(h_request(&srv, "GET", "/v1/teams/team-a/queues", member,
                               NULL, NULL, &r),
                     0);
    dt = h_now_ms() - t0;
    ck_assert_msg(r.status == 200, "GET queues answered %ld", r.status);
    h_resp_free(&r);
    if (dt > worst_get)
      worst_get = dt;
    probes++;
    h_sleep_ms(100);
  }
  a.stop = 1;
  pthread_join(t, NULL);
  fprintf(stderr,
          "slowloris: %d kept open by the client, %ld connections opened in "
          "all, %ld closed by the server, at most %ld open at once, longest "
          "lived %lld ms; %d probes, slowest /healthz %lld ms, slowest GET "
          "%lld ms\n",
          SLOW_CONNS, a.opens, a.refused_or_closed, a.max_open, a.longest_ms,
          probes, worst_health, worst_get);
  ck_assert_msg(worst_health < 1000, "/healthz took %lld ms", worst_health);
  ck_assert_msg(worst_get < 1000, "GET took %lld ms", worst_get);
  ck_assert_int_ge(probes, 20);
  ck_assert_int_ge(a.opens, SLOW_CONNS);
  /* the held ones sent a line a second and still went at the deadline
   * (plus the client's one-second look) */
  ck_assert_msg(a.longest_ms < (SLOW_HEADER_TIMEOUT_S + 2) * 1000,
                "a trickling connection lived %lld ms", a.longest_ms);

  text = scrape(&srv, scraper);
  refused = h_sample(
      text, "gpugate_http_connections_refused_total{reason=\"per_client\"}");
  timed_out = h_sample(
      text, "gpugate_http_connections_timed_out_total{phase=\"headers\"}");
  ck_assert_msg(refused >= SLOW_CONNS - 256, "refused %g", refused);
  ck_assert_msg(timed_out >= 256, "timed out %g", timed_out);
  free(text);
  free(member);
  free(scraper);
  h_server_stop(&srv);
}
END_TEST

/* ---------------------------------------------- unauthenticated bodies */

#define BODY_CONNS 200
#define BODY_LEN (1024 * 1024)

struct poster {
  int fd;
  long sent;      /* body bytes sent */
  long at_answer; /* body bytes sent when the answer came; -1 none yet */
  char head[512]; /* the start of the answer */
  size_t head_len;
  bool closed; /* the server closed after answering */
};

START_TEST(unauthenticated_bodies)
{
  static struct poster p[BODY_CONNS];
  static char body[BODY_LEN];
  char head[512];
  int i, n_head, answered = 0, closed = 0;
  long long start;
  long rss, rss_max = 0, rss_start, most_sent = 0;

  need_fds(BODY_CONNS + 256);
  h_db_apply("it_edges_bodies", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv, db_url, NULL), 0);
  rss_start = rss_kib(srv.pid);
  memset(body, ' ', sizeof(body));
  body[0] = '{';
  n_head = snprintf(head, sizeof(head),
                    "POST /v1/teams/team-a/jobs HTTP/1.1\r\nHost: gpugate\r\n"
                    "Content-Type: application/json\r\n"
                    "Content-Length: %d\r\n\r\n",
                    BODY_LEN);
  for (i = 0; i < BODY_CONNS; i++) {
    memset(&p[i], 0, sizeof(p[i]));
    p[i].at_answer = -1;
    p[i].fd = dial("127.0.0.3", srv.port);
    ck_assert_int_ge(p[i].fd, 0);
  }
  /* the headers; then as much of the body as the sockets take, but never
   * its last byte: a server that waits for the whole body never answers */
  start = h_now_ms();
  while (h_now_ms() - start < 5000 && closed < BODY_CONNS) {
    for (i = 0; i < BODY_CONNS; i++) {
      struct poster *q = &p[i];
      ssize_t n;
      if (q->closed)
        continue;
      if (q->sent == 0 && q->head_len == 0 && q->at_answer < 0) {
        struct pollfd pf = {q->fd, POLLOUT, 0};
        if (poll(&pf, 1, 0) != 1 || !(pf.revents & POLLOUT))
          continue;
        ck_assert_int_eq(push(q->fd, head, (size_t)n_head), n_head);
        q->sent = 1; /* headers out; body bytes counted from 1 */
      }
      if (q->at_answer < 0 && q->sent < BODY_LEN) { /* sent counts from 1 */
        size_t want = (size_t)(BODY_LEN - q->sent);
        long rc = push(q->fd, body, want > 65536 ? 65536 : want);
        if (rc > 0)
          q->sent += rc;
      }
      /* read the answer, then wait for the close */
      n = recv(q->fd, q->head + q->head_len, sizeof(q->head) - 1 - q->head_len,
               MSG_DONTWAIT);
      if (n > 0) {
        q->head_len += (size_t)n;
        q->head[q->head_len] = '\0';
        if (q->at_answer < 0) {
          q->at_answer = q->sent - 1;
          answered++;
        }
      } else if ((n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) &&
                 q->at_answer >= 0) {
        q->closed = true;
        closed++;
      }
    }
    rss = rss_kib(srv.pid);
    if (rss > rss_max)
      rss_max = rss;
    h_sleep_ms(10);
  }
  for (i = 0; i < BODY_CONNS; i++) {
    ck_assert_msg(p[i].at_answer >= 0, "connection %d: no answer", i);
    ck_assert_msg(!strncmp(p[i].head, "HTTP/1.1 401 ", 13),
                  "connection %d: %.40s", i, p[i].head);
    ck_assert_msg(strstr(p[i].head, "WWW-Authenticate: Bearer") != NULL,
                  "connection %d: %s", i, p[i].head);
    if (p[i].at_answer > most_sent)
      most_sent = p[i].at_answer;
    close(p[i].fd);
  }
  fprintf(stderr,
          "unauthenticated bodies: %d answered 401, %d closed by the server; "
          "at most %ld body bytes sent before an answer; server RSS %ld KiB "
          "at start, %ld KiB at most\n",
          answered, closed, most_sent, rss_start, rss_max);
  /* answered 401 although no body was complete, and closed: the rest is
   * never read */
  ck_assert_int_eq(closed, BODY_CONNS);

  /* a refused request without a body keeps its connection: two on one */
  {
    static const char two[] = "GET /v1/flavors HTTP/1.1\r\nHost: g\r\n\r\n"
                              "GET /v1/flavors HTTP/1.1\r\nHost: g\r\n\r\n";
    char got[8192];
    size_t len = 0;
    int fd = dial("127.0.0.3", srv.port);
    const char *second;
    struct pollfd pf;
    ck_assert_int_ge(fd, 0);
    pf.fd = fd;
    pf.events = POLLOUT;
    ck_assert_int_eq(poll(&pf, 1, 2000), 1);
    ck_assert_int_eq(push(fd, two, sizeof(two) - 1), (long)sizeof(two) - 1);
    start = h_now_ms();
    second = NULL;
    while (h_now_ms() - start < 3000 && len < sizeof(got) - 1) {
      ssize_t n = recv(fd, got + len, sizeof(got) - 1 - len, MSG_DONTWAIT);
      if (n == 0)
        break;
      if (n > 0)
        len += (size_t)n;
      got[len] = '\0';
      second = strstr(got, "HTTP/1.1 401 ");
      if (second && strstr(second + 1, "HTTP/1.1 401 "))
        break;
      h_sleep_ms(10);
    }
    close(fd);
    second = strstr(got, "HTTP/1.1 401 ");
    ck_assert_msg(second && strstr(second + 1, "HTTP/1.1 401 "),
                  "two 401s on one connection, got: %s", got);
  }
  ck_assert_int_lt(most_sent, BODY_LEN);
  ck_assert_int_lt(rss_max, 64 * 1024);
  h_server_stop(&srv);
}
END_TEST

/* ----------------------------------------------- metrics without a token */

/* A free TCP port on 127.0.0.1 (bound and released: the server takes it
 * right after). */
static unsigned short free_port(void)
{
  struct sockaddr_in a;
  socklen_t len = sizeof(a);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  unsigned short port;

  ck_assert_int_ge(fd, 0);
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  port = ntohs(a.sin_port);
  close(fd);
  return port;
}

/* Nothing of a team in text: no team label, no cluster queue, no spend. */
static void no_team_data(const char *text, const char *where)
{
  ck_assert_msg(!strstr(text, "team"), "%s shows a team", where);
  ck_assert_msg(!strstr(text, "cluster_queue"), "%s shows a queue", where);
  ck_assert_msg(!strstr(text, "net_cost"), "%s shows spend", where);
  ck_assert_msg(!strstr(text, "4321.5"), "%s shows the amount", where);
}

START_TEST(metrics_without_credentials)
{
  char listen[64], path[128], out[4096], *admin, *text;
  const char *env[2] = {listen, NULL};
  const char *args[] = {"ingest-billing", path, NULL};
  struct h_server msrv;
  struct h_resp r;
  time_t now = time(NULL);
  struct tm tm;
  FILE *f;
  int tries;
  unsigned short mport = free_port();

  /* this month's spend for team-a, loaded before the server starts so
   * that the leader's first refresh reports it */
  h_db_apply("it_edges_metrics", H_REFERENCE, db_url, sizeof(db_url));
  gmtime_r(&now, &tm);
  snprintf(path, sizeof(path), "/tmp/gpugate-edges-billing-%d.ndjson",
           (int)getpid());
  f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f,
          "{\"service\":{\"id\":\"6F81-5844\",\"description\":\"Compute "
          "Engine\"},\"sku\":{\"id\":\"A1B2\",\"description\":\"Nvidia L4 "
          "GPU\"},\"usage_start_time\":\"%04d-%02d-01 00:00:00 UTC\","
          "\"cost\":4321.5,\"currency\":\"USD\",\"labels\":[{\"key\":"
          "\"gpugate-team\",\"value\":\"team-a\"}]}\n",
          tm.tm_year + 1900, tm.tm_mon + 1);
  fclose(f);
  ck_assert_msg(h_gpugate(db_url, args, out, sizeof(out)) == 0, "%s", out);
  unlink(path);

  snprintf(listen, sizeof(listen), "GPUGATE_METRICS_LISTEN=127.0.0.1:%u",
           (unsigned)mport);
  ck_assert_int_eq(h_server_start(&srv, db_url, env), 0);
  msrv = srv;
  msrv.port = mport;
  admin = h_token(NULL, "admin", 600);

  /* the spend is there for a token that may see it */
  for (tries = 0; tries < 100; tries++) {
    text = scrape(&msrv, admin);
    if (h_sample(text, "gpugate_team_month_net_cost_usd{team=\"team-a\"}") ==
        4321.5)
      break;
    free(text);
    text = NULL;
    h_sleep_ms(100);
  }
  ck_assert_msg(text != NULL, "the leader never reported team-a's spend");
  ck_assert_ptr_nonnull(strstr(text, "cluster_queue=\"cq-team-a-lp\""));
  free(text);

  /* not without a token */
  text = scrape(&msrv, NULL);
  ck_assert_ptr_nonnull(strstr(text, "gpugate_http_requests_total"));
  no_team_data(text, "the metrics listener");
  free(text);

  /* and /metrics is on the metrics listener only; the API is not there */
  ck_assert_int_eq(h_request(&srv, "GET", "/metrics", admin, NULL, NULL, &r),
                   0);
  ck_assert(h_is_problem(&r, 404, NULL));
  h_resp_free(&r);
  ck_assert_int_eq(
      h_request(&msrv, "GET", "/v1/flavors", admin, NULL, NULL, &r), 0);
  ck_assert(h_is_problem(&r, 404, NULL));
  h_resp_free(&r);
  h_server_stop(&srv);

  /* without the metrics listener: the same page on the API's port */
  ck_assert_int_eq(h_server_start(&srv, db_url, NULL), 0);
  for (tries = 0; tries < 100; tries++) {
    text = scrape(&srv, admin);
    if (h_sample(text, "gpugate_team_month_net_cost_usd{team=\"team-a\"}") ==
        4321.5)
      break;
    free(text);
    text = NULL;
    h_sleep_ms(100);
  }
  ck_assert_ptr_nonnull(text);
  free(text);
  text = scrape(&srv, NULL);
  no_team_data(text, "/metrics");
  free(text);
  free(admin);
  h_server_stop(&srv);
}
END_TEST

/* ------------------------------------------------------------- uploads */

/* Start a billing upload that announces len bytes and sends a first line;
 * returns the socket. */
static int start_upload(const char *token, long len)
{
  char head[1024];
  int fd = dial("127.0.0.1", srv.port), n;
  struct pollfd pf;

  ck_assert_int_ge(fd, 0);
  pf.fd = fd;
  pf.events = POLLOUT;
  ck_assert_int_eq(poll(&pf, 1, 2000), 1);
  n = snprintf(head, sizeof(head),
               "POST /v1/billing/export-rows HTTP/1.1\r\nHost: gpugate\r\n"
               "Authorization: Bearer %s\r\n"
               "Content-Type: application/x-ndjson\r\n"
               "Content-Length: %ld\r\n\r\n\n",
               token, len);
  ck_assert_int_eq(push(fd, head, (size_t)n), n);
  return fd;
}

/* Wait up to ms for the server to close fd; the time it took, or -1. */
static long long wait_closed(int fd, long ms)
{
  long long t0 = h_now_ms();

  while (h_now_ms() - t0 < ms) {
    if (peer_closed(fd))
      return h_now_ms() - t0;
    (void)push(fd, "\n", 1); /* a byte at a time: it does not help */
    h_sleep_ms(50);
  }
  return -1;
}

START_TEST(uploads)
{
  const char *env[] = {"GPUGATE_HTTP_MAX_UPLOADS_PER_ROLE=1",
                       "GPUGATE_HTTP_UPLOAD_TIMEOUT_S=2",
                       "GPUGATE_HTTP_BODY_TIMEOUT_S=2", NULL};
  const char *ndjson[] = {"Content-Type: application/x-ndjson", NULL};
  char *finance = h_token(NULL, "finance", 600);
  char *admin = h_token(NULL, "admin", 600);
  char *member = h_token("team-a", "member", 600), *text, retry[16];
  struct h_resp r;
  int held, job;
  long long took;

  h_db_apply("it_edges_uploads", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv, db_url, env), 0);

  /* finance's only slot is taken by a slow upload ... */
  held = start_upload(finance, 1L << 20);
  h_sleep_ms(200);
  ck_assert_int_eq(h_request(&srv, "POST", "/v1/billing/export-rows", finance,
                             "\n", ndjson, &r),
                   0);
  ck_assert(h_is_problem(&r, 429, NULL));
  ck_assert_ptr_nonnull(h_header(&r, "Retry-After", retry, sizeof(retry)));
  h_resp_free(&r);
  /* ... not admin's */
  ck_assert_int_eq(h_request(&srv, "POST", "/v1/billing/export-rows", admin,
                             "\n", ndjson, &r),
                   0);
  ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
  h_resp_free(&r);

  /* the slow one trickles and is still closed at its deadline (2 s) */
  took = wait_closed(held, 30000);
  close(held);
  ck_assert_msg(took >= 0, "the trickling upload was never closed");
  /* not before its deadline; the upper bound only says it was closed,
   * with room for a loaded host */
  ck_assert_msg(took >= 1500, "closed after %lld ms", took);
  ck_assert_int_eq(h_request(&srv, "POST", "/v1/billing/export-rows", finance,
                             "\n", ndjson, &r),
                   0);
  ck_assert_msg(r.status == 200, "slot not given back: %ld %s", r.status,
                r.body);
  h_resp_free(&r);

  /* a job body trickled by a member goes at the body deadline too */
  job = dial("127.0.0.1", srv.port);
  ck_assert_int_ge(job, 0);
  h_sleep_ms(50);
  {
    char head[1024];
    int n = snprintf(head, sizeof(head),
                     "POST /v1/teams/team-a/jobs HTTP/1.1\r\nHost: g\r\n"
                     "Authorization: Bearer %s\r\n"
                     "Content-Type: application/json\r\n"
                     "Content-Length: 1000\r\n\r\n{",
                     member);
    ck_assert_int_eq(push(job, head, (size_t)n), n);
  }
  took = wait_closed(job, 30000);
  close(job);
  ck_assert_msg(took >= 1500, "job body closed after %lld ms", took);

  text = scrape(&srv, admin);
  ck_assert_msg(
      h_sample(text,
               "gpugate_http_connections_timed_out_total{phase=\"body\"}") >= 2,
      "%s", strstr(text, "gpugate_http_connections_timed_out_total"));
  free(text);
  free(finance);
  free(admin);
  free(member);
  h_server_stop(&srv);
}
END_TEST

/* ------------------------------------------------------------ total cap */

START_TEST(total_cap)
{
  const char *env[] = {"GPUGATE_HTTP_MAX_CONNECTIONS=20",
                       "GPUGATE_HTTP_MAX_CONNECTIONS_PER_CLIENT=0", NULL};
  char *admin = h_token(NULL, "admin", 600), *text, out[2048], dbenv[600];
  int held[20], extra, i;
  long long t0;
  struct h_resp r;

  h_db_apply("it_edges_total", H_REFERENCE, db_url, sizeof(db_url));
  /* a cap the fd limit cannot hold stops start-up, naming the variable */
  snprintf(dbenv, sizeof(dbenv), "GPUGATE_DATABASE_URL=%s", db_url);
  {
    const char *argv[] = {"build/gpugate", "serve", NULL};
    const char *bad[] = {dbenv, "GPUGATE_JWT_HS256_SECRET_FILE=" H_SECRET_FILE,
                         "GPUGATE_LISTEN=127.0.0.1:0",
                         "GPUGATE_HTTP_MAX_CONNECTIONS=16000000", NULL};
    ck_assert_int_eq(h_run(argv, bad, 20000, NULL, out, sizeof(out)), 1);
    ck_assert_msg(strstr(out, "GPUGATE_HTTP_MAX_CONNECTIONS") != NULL, "%s",
                  out);
  }

  ck_assert_int_eq(h_server_start(&srv, db_url, env), 0);
  /* 20 idle connections (no per-client cap) fill the total cap ... */
  for (i = 0; i < 20; i++) {
    held[i] = dial("127.0.0.4", srv.port);
    ck_assert_int_ge(held[i], 0);
  }
  h_sleep_ms(300);
  for (i = 0; i < 20; i++)
    ck_assert_msg(!peer_closed(held[i]), "connection %d closed", i);
  /* ... so the next one is closed as it is accepted */
  extra = dial("127.0.0.5", srv.port);
  ck_assert_int_ge(extra, 0);
  t0 = h_now_ms();
  while (!peer_closed(extra) && h_now_ms() - t0 < 30000)
    h_sleep_ms(20);
  ck_assert_msg(peer_closed(extra), "over the cap and not closed");
  close(extra);
  for (i = 0; i < 20; i++)
    close(held[i]);
  /* room again */
  t0 = h_now_ms();
  do {
    h_sleep_ms(50);
    ck_assert_int_eq(h_request(&srv, "GET", "/metrics", admin, NULL, NULL, &r),
                     0);
    text = r.body;
    r.body = NULL;
    h_resp_free(&r);
    if (h_sample(text, "gpugate_http_open_connections") == 1)
      break;
    free(text);
    text = NULL;
  } while (h_now_ms() - t0 < 30000);
  ck_assert_ptr_nonnull(text);
  ck_assert_double_ge(
      h_sample(text,
               "gpugate_http_connections_refused_total{reason=\"total\"}"),
      1);
  ck_assert_double_eq(
      h_sample(text,
               "gpugate_http_connections_refused_total{reason=\"per_client\"}"),
      -1);
  free(text);
  free(admin);
  h_server_stop(&srv);
}
END_TEST

/* Stop the server a failed test left running. */
static void teardown(void)
{
  h_server_stop(&srv);
}

Suite *edges_suite(void)
{
  Suite *s = suite_create("edges");
  TCase *tc = tcase_create("edges");

  tcase_add_checked_fixture(tc, NULL, teardown);
  tcase_set_timeout(tc, 90);
  tcase_add_test(tc, slowloris);
  tcase_add_test(tc, unauthenticated_bodies);
  tcase_add_test(tc, metrics_without_credentials);
  tcase_add_test(tc, uploads);
  tcase_add_test(tc, total_cap);
  suite_add_tcase(s, tc);
  return s;
}
