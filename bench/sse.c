/*
 * sse.c — build/bench_sse: N clients of one gpugate event stream
 * (GET /v1/teams/{team}/events) on one epoll thread, for bench/sse.sh.
 *
 *   bench_sse PORT TEAM TOKEN N SECONDS [PATHS]
 *
 * PATHS (a file of request paths, one a line): client i asks for line
 * i mod their number instead of the team's event stream (bench/sse.sh's
 * log followers: …/logs?follow=true, whose NDJSON it only reads).
 *
 * Opens N connections (HTTP/1.0, so that each body is the raw stream),
 * reads for SECONDS or until SIGTERM, and parses every event. An event whose
 * data holds "t=<microseconds since the epoch>" (the bench's marker, written by
 * the inserting transaction just before its commit) counts towards the commit →
 * client latency, measured on the same host's realtime clock. Prints one JSON
 * object: connected, closed, events, comments, and the latency's p50, p99 and
 * max in ms.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF 65536

struct client {
  int fd;
  char buf[BUF];
  size_t len;
  int header_done;
  int open;
};

static volatile sig_atomic_t stop;
static double *lat;
static size_t n_lat, cap_lat;
static long events, comments;

static long long now_us(int clock)
{
  struct timespec ts;

  clock_gettime(clock, &ts);
  return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static void record(double ms)
{
  if (n_lat == cap_lat) {
    size_t cap = cap_lat ? cap_lat * 2 : 65536;
    double *grown = realloc(lat, cap * sizeof(*lat));
    if (!grown)
      return;
    lat = grown;
    cap_lat = cap;
  }
  lat[n_lat++] = ms;
}

/* One event block (NUL-terminated, without its blank line). */
static void block(const char *b, long long recv_us)
{
  const char *t;

  if (b[0] == ':') {
    comments++;
    return;
  }
  events++;
  t = strstr(b, "t=");
  if (t) {
    long long sent = strtoll(t + 2, NULL, 10);
    if (sent > 0)
      record((double)(recv_us - sent) / 1000.0);
  }
}

/* Consume complete blocks of c; keep the rest. */
static void parse(struct client *c)
{
  long long recv_us = now_us(CLOCK_REALTIME);
  size_t start = 0;
  char *end;

  c->buf[c->len] = '\0';
  if (!c->header_done) {
    end = strstr(c->buf, "\r\n\r\n");
    if (!end)
      return;
    if (strncmp(c->buf + 9, "200", 3) != 0) {
      fprintf(stderr, "bench_sse: %.40s\n", c->buf);
      c->open = 0;
      return;
    }
    c->header_done = 1;
    start = (size_t)(end + 4 - c->buf);
  }
  while ((end = strstr(c->buf + start, "\n\n"))) {
    *end = '\0';
    block(c->buf + start, recv_us);
    start = (size_t)(end + 2 - c->buf);
  }
  memmove(c->buf, c->buf + start, c->len - start);
  c->len -= start;
}

static void on_term(int sig)
{
  (void)sig;
  stop = 1;
}

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;

  return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
  struct sockaddr_in a = {.sin_family = AF_INET};
  struct epoll_event evs[256];
  struct client *cs;
  struct rlimit rl;
  char req[4096], paths[256][200];
  long n, i, connected = 0, closed = 0, n_paths = 0;
  long long until;
  int ep;

  if (argc != 6 && argc != 7) {
    fprintf(stderr, "usage: bench_sse PORT TEAM TOKEN N SECONDS [PATHS]\n");
    return 2;
  }
  if (argc == 7) {
    FILE *f = fopen(argv[6], "r");
    while (f && n_paths < 256 && fgets(paths[n_paths], sizeof(paths[0]), f)) {
      paths[n_paths][strcspn(paths[n_paths], "\n")] = '\0';
      if (paths[n_paths][0])
        n_paths++;
    }
    if (f)
      fclose(f);
    if (n_paths == 0) {
      fprintf(stderr, "bench_sse: no paths in %s\n", argv[6]);
      return 2;
    }
  }
  n = strtol(argv[4], NULL, 10);
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 64) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  cs = calloc((size_t)n, sizeof(*cs));
  ep = epoll_create1(0);
  if (!cs || ep < 0)
    return 1;
  a.sin_port = htons((unsigned short)strtol(argv[1], NULL, 10));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (i = 0; i < n; i++) {
    struct epoll_event e = {.events = EPOLLIN};
    if (n_paths)
      snprintf(req, sizeof(req),
               "GET %s HTTP/1.0\r\nHost: localhost\r\n"
               "Authorization: Bearer %s\r\n\r\n",
               paths[i % n_paths], argv[3]);
    else
      snprintf(req, sizeof(req),
               "GET /v1/teams/%s/events HTTP/1.0\r\nHost: localhost\r\n"
               "Authorization: Bearer %s\r\nAccept: text/event-stream\r\n"
               "\r\n",
               argv[2], argv[3]);
    cs[i].fd = socket(AF_INET, SOCK_STREAM, 0);
    if (cs[i].fd < 0 ||
        connect(cs[i].fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        write(cs[i].fd, req, strlen(req)) != (ssize_t)strlen(req)) {
      fprintf(stderr, "bench_sse: client %ld: %s\n", i, strerror(errno));
      return 1;
    }
    cs[i].open = 1;
    e.data.ptr = &cs[i];
    epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &e);
  }
  until = now_us(CLOCK_MONOTONIC) + strtoll(argv[5], NULL, 10) * 1000000LL;
  signal(SIGTERM, on_term);
  while (!stop && now_us(CLOCK_MONOTONIC) < until) {
    int k, got = epoll_wait(ep, evs, 256, 100);
    for (k = 0; k < got; k++) {
      struct client *c = evs[k].data.ptr;
      ssize_t r = read(c->fd, c->buf + c->len, BUF - 1 - c->len);
      if (r <= 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
        c->open = 0;
        continue;
      }
      c->len += (size_t)r;
      parse(c);
    }
  }
  for (i = 0; i < n; i++) {
    connected += cs[i].header_done;
    closed += !cs[i].open;
    close(cs[i].fd);
  }
  qsort(lat, n_lat, sizeof(*lat), cmp);
  printf("{\"connected\": %ld, \"closed\": %ld, \"events\": %ld, "
         "\"comments\": %ld, \"latency_samples\": %zu, \"p50_ms\": %.1f, "
         "\"p99_ms\": %.1f, \"max_ms\": %.1f}\n",
         connected, closed, events, comments, n_lat,
         n_lat ? lat[n_lat / 2] : 0.0,
         n_lat ? lat[(size_t)((double)n_lat * 0.99)] : 0.0,
         n_lat ? lat[n_lat - 1] : 0.0);
  free(lat);
  free(cs);
  return 0;
}
