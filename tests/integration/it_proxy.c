/*
 * it_proxy.c — gpugate behind a load balancer (issue 22): clients behind
 * a trusted proxy (GPUGATE_HTTP_TRUSTED_PROXIES) are told apart by the
 * last untrusted hop of X-Forwarded-For, and an IPv6 listener, against
 * the real binary on loopback. Raw sockets choose the source address and
 * the headers exactly.
 *
 *   proxied_connection_cap
 *                 127.0.0.1 is the proxy. It holds more connections than
 *                 the per-client cap; each client behind it gets the cap
 *                 on its requests in flight (the next one 429, the others'
 *                 pass) and its slots back when they end; a direct peer is
 *                 still capped as it connects.
 *   proxied_rates_and_log
 *                 two clients behind the proxy have separate request
 *                 rates; a hop the client prepends is not its address;
 *                 127.0.0.2, not trusted, is its own client whatever
 *                 X-Forwarded-For it sends; the access log names each.
 *   ipv6_listener GPUGATE_LISTEN=[::1]:0 serves, logs the client ::1 and
 *                 applies the per-client cap as connections are accepted;
 *                 [::] takes IPv4 clients too; an IPv6 proxy's Forwarded
 *                 header names the client (and its X-Forwarded-For is not
 *                 read then); a bare IPv6 listen address
 *                 or a bad trusted network stops start-up naming the
 *                 variable.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *proxy_suite(void);

static struct h_server srv;
static char db_url[512];

/* A blocking TCP connection from the address from (IPv4 or IPv6 literal)
 * to the same family's loopback at port; -1 on failure. */
static int dial(const char *from, unsigned short port)
{
  struct sockaddr_storage src, dst;
  socklen_t len;
  int family = strchr(from, ':') ? AF_INET6 : AF_INET;
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

  if (fd < 0)
    return -1;
  memset(&src, 0, sizeof(src));
  memset(&dst, 0, sizeof(dst));
  if (family == AF_INET) {
    struct sockaddr_in *s4 = (struct sockaddr_in *)&src;
    struct sockaddr_in *d4 = (struct sockaddr_in *)&dst;
    s4->sin_family = d4->sin_family = AF_INET;
    inet_pton(AF_INET, from, &s4->sin_addr);
    inet_pton(AF_INET, "127.0.0.1", &d4->sin_addr);
    d4->sin_port = htons(port);
    len = sizeof(struct sockaddr_in);
  } else {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&src;
    struct sockaddr_in6 *d6 = (struct sockaddr_in6 *)&dst;
    s6->sin6_family = d6->sin6_family = AF_INET6;
    inet_pton(AF_INET6, from, &s6->sin6_addr);
    inet_pton(AF_INET6, "::1", &d6->sin6_addr);
    d6->sin6_port = htons(port);
    len = sizeof(struct sockaddr_in6);
  }
  if (bind(fd, (struct sockaddr *)&src, len) != 0 ||
      connect(fd, (struct sockaddr *)&dst, len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void send_all(int fd, const char *text)
{
  size_t len = strlen(text), off = 0;

  while (off < len) {
    ssize_t n = send(fd, text + off, len - off, MSG_NOSIGNAL);
    ck_assert_msg(n > 0, "send: %s", strerror(errno));
    off += (size_t)n;
  }
}

/*
 * What the server sent on fd within ms milliseconds, until it closed the
 * connection or stopped sending, into out (NUL-terminated); the status of
 * the reply (0: none yet, -1: closed without a reply).
 */
static long read_reply(int fd, long ms, char *out, size_t outlen)
{
  size_t used = 0;
  long long start = h_now_ms();
  struct pollfd p = {fd, POLLIN, 0};
  long status;

  out[0] = '\0';
  for (;;) {
    long left = ms - (long)(h_now_ms() - start);
    ssize_t n;
    if (left <= 0 || poll(&p, 1, (int)left) <= 0)
      break;
    n = recv(fd, out + used, outlen - 1 - used, 0);
    if (n <= 0) {
      if (used == 0)
        return -1;
      break;
    }
    used += (size_t)n;
    out[used] = '\0';
    if (used == outlen - 1)
      break;
  }
  if (sscanf(out, "HTTP/1.1 %ld", &status) != 1)
    return 0;
  return status;
}

/* Whether the server accepted fd and serves it: a keep-alive GET /healthz
 * on it is answered 200, read whole (its Content-Length), and the
 * connection stays open (1); or the connection was closed before any reply
 * (0: the server refused it). What proves the connection was accepted, on
 * however loaded a host, where a pause would only hope so. */
static int served(int fd)
{
  char out[4096];
  size_t used = 0;
  long long until = h_now_ms() + 30000;
  struct pollfd p = {fd, POLLIN, 0};

  send_all(fd, "GET /healthz HTTP/1.1\r\nHost: gpugate\r\n\r\n");
  out[0] = '\0';
  for (;;) {
    const char *end = strstr(out, "\r\n\r\n"), *cl;
    long status = 0, len;
    ssize_t n;
    if (end && (cl = strstr(out, "\r\nContent-Length:")) && cl < end &&
        sscanf(cl + 17, " %ld", &len) == 1 &&
        (long)(used - (size_t)(end + 4 - out)) >= len) {
      ck_assert_int_eq(sscanf(out, "HTTP/1.1 %ld", &status), 1);
      ck_assert_int_eq(status, 200);
      return 1;
    }
    ck_assert_msg(h_now_ms() < until && used < sizeof(out) - 1,
                  "no whole reply on a held connection: %s", out);
    if (poll(&p, 1, 500) <= 0)
      continue;
    n = recv(fd, out + used, sizeof(out) - 1 - used, 0);
    if (n <= 0 && used == 0)
      return 0;
    ck_assert_msg(n > 0, "a held connection closed mid-reply: %s", out);
    used += (size_t)n;
    out[used] = '\0';
  }
}

/* A connection from from that the server accepted and serves (served()),
 * held open. A refused one is dialled again for up to 30 s: the slot of a
 * connection the client closed just before is returned once the server
 * has seen that close, which a loaded host may take a while to do. */
static int dial_served(const char *from)
{
  long long until = h_now_ms() + 30000;

  for (;;) {
    int fd = dial(from, srv.port);
    ck_assert_msg(fd >= 0, "connect from %s: %s", from, strerror(errno));
    if (served(fd))
      return fd;
    close(fd);
    ck_assert_msg(h_now_ms() < until, "%s: every connection refused for 30 s",
                  from);
    h_sleep_ms(100);
  }
}

/* A request from the address from with extra header lines (each ending
 * "\r\n"; may be ""), on a connection of its own; its status. */
static long request_from(const char *from, const char *method, const char *path,
                         const char *headers, char *out, size_t outlen)
{
  char req[2048];
  int fd = dial(from, srv.port);
  long status;

  ck_assert_msg(fd >= 0, "connect from %s: %s", from, strerror(errno));
  snprintf(req, sizeof(req),
           "%s %s HTTP/1.1\r\nHost: gpugate\r\nConnection: close\r\n%s\r\n",
           method, path, headers);
  send_all(fd, req);
  status = read_reply(fd, 10000, out, outlen);
  close(fd);
  return status;
}

/* GET /healthz from from with X-Forwarded-For xff (NULL: none). */
static long healthz(const char *from, const char *xff, char *out, size_t outlen)
{
  char hdr[512] = "";

  if (xff)
    snprintf(hdr, sizeof(hdr), "X-Forwarded-For: %s\r\n", xff);
  return request_from(from, "GET", "/healthz", hdr, out, outlen);
}

/*
 * From from with X-Forwarded-For xff: a job submission whose 1,000-byte
 * body is still to come, so that the request stays in flight. The open
 * connection; its reply, if one came within 500 ms, into out.
 */
static int held_post(const char *from, const char *xff, const char *token,
                     long *status, char *out, size_t outlen)
{
  char req[2048];
  int fd = dial(from, srv.port);

  ck_assert_msg(fd >= 0, "connect from %s: %s", from, strerror(errno));
  snprintf(req, sizeof(req),
           "POST /v1/teams/team-a/jobs HTTP/1.1\r\nHost: gpugate\r\n"
           "X-Forwarded-For: %s\r\nAuthorization: Bearer %s\r\n"
           "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
           xff, token);
  send_all(fd, req);
  *status = read_reply(fd, 500, out, outlen);
  return fd;
}

#define RPS 5 /* per client: burst 10 */
#define CAP 3 /* connections (or proxied requests) per client */

static const char *const proxy_env[] = {
    "GPUGATE_HTTP_TRUSTED_PROXIES=10.0.0.0/8, 127.0.0.1",
    "GPUGATE_RATE_LIMIT_PER_CLIENT_RPS=5",
    "GPUGATE_HTTP_MAX_CONNECTIONS_PER_CLIENT=3", NULL};

START_TEST(proxied_connection_cap)
{
  char out[8192];
  char *member = h_token("team-a", "member", 600);
  char *scraper = h_token(NULL, "metrics", 600);
  int c_held[CAP], d_held[CAP], direct[CAP + 1], i;
  long status;
  long long t0;
  struct h_resp r;

  h_db_apply("it_proxy_cap", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv, db_url, proxy_env), 0);

  /* the proxy holds 2 × CAP requests in flight, CAP each for clients C
   * and D; C's next one is refused at once, and others pass */
  for (i = 0; i < CAP; i++) {
    c_held[i] =
        held_post("127.0.0.1", "203.0.113.10", member, &status, out, 256);
    ck_assert_msg(status == 0, "C's request %d answered: %s", i, out);
  }
  status = request_from("127.0.0.1", "GET", "/healthz",
                        "X-Forwarded-For: 203.0.113.10\r\n", out, sizeof(out));
  ck_assert_msg(status == 429 &&
                    strstr(out, "Client 203.0.113.10 has 3 requests in "
                                "progress already "
                                "(GPUGATE_HTTP_MAX_CONNECTIONS_PER_CLIENT)") &&
                    strstr(out, "Retry-After: 1"),
                "%ld %s", status, out);
  for (i = 0; i < CAP; i++) {
    d_held[i] =
        held_post("127.0.0.1", "203.0.113.11", member, &status, out, 256);
    ck_assert_msg(status == 0, "D's request %d answered %ld: %s", i, status,
                  out);
  }
  ck_assert_int_eq(healthz("127.0.0.1", "203.0.113.12", out, sizeof(out)), 200);
  /* the slots come back with the requests */
  for (i = 0; i < CAP; i++)
    close(c_held[i]);
  t0 = h_now_ms();
  while ((status = healthz("127.0.0.1", "203.0.113.10", out, sizeof(out))) !=
             200 &&
         h_now_ms() - t0 < 30000)
    h_sleep_ms(250);
  ck_assert_msg(status == 200, "%s", out);
  for (i = 0; i < CAP; i++)
    close(d_held[i]);

  /* a direct peer is still capped as it connects */
  for (i = 0; i < CAP; i++)
    direct[i] = dial_served("127.0.0.3"); /* the others accepted first */
  direct[CAP] = dial("127.0.0.3", srv.port);
  ck_assert_int_ge(direct[CAP], 0);
  ck_assert_int_eq(read_reply(direct[CAP], 30000, out, sizeof(out)), -1);
  for (i = 0; i <= CAP; i++)
    close(direct[i]);

  ck_assert_int_eq(h_request(&srv, "GET", "/metrics", scraper, NULL, NULL, &r),
                   0);
  ck_assert_int_eq(r.status, 200);
  ck_assert_double_ge(
      h_sample(r.body, "gpugate_http_connections_refused_total{reason=\"per_"
                       "client_proxied\"}"),
      1);
  ck_assert_double_ge(
      h_sample(r.body,
               "gpugate_http_connections_refused_total{reason=\"per_client\"}"),
      1);
  h_resp_free(&r);
  free(member);
  free(scraper);
  h_server_stop(&srv);
}
END_TEST

START_TEST(proxied_rates_and_log)
{
  char out[8192];
  int i, ok = 0, refused = 0;
  long status;
  long long t0;

  h_db_apply("it_proxy_rate", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv, db_url, proxy_env), 0);

  /* client A behind the proxy, a fake hop prepended */
  t0 = h_now_ms();
  for (i = 0; i < 3 * 2 * RPS; i++) {
    status =
        healthz("127.0.0.1", "198.51.100.1, 203.0.113.1", out, sizeof(out));
    if (status == 200)
      ok++;
    else if (status == 429 && strstr(out, "Client 203.0.113.1 is over its "
                                          "request rate"))
      refused++;
    else
      ck_abort_msg("client A: %ld %s", status, out);
  }
  /* the burst, and what refilled meanwhile */
  ck_assert_int_ge(refused, 1);
  ck_assert_int_le(ok, 2 * RPS + 1 + (int)((h_now_ms() - t0) * RPS / 1000));
  /* client B behind the same proxy has its own rate */
  ck_assert_int_eq(healthz("127.0.0.1", "203.0.113.2", out, sizeof(out)), 200);
  /* a peer that is not a trusted proxy is its own client: naming A
   * changes nothing */
  ck_assert_int_eq(healthz("127.0.0.2", "203.0.113.1", out, sizeof(out)), 200);
  /* the access log names the client, and the proxy as the peer */
  ck_assert_int_ge(
      h_log_count(&srv, "\"client\":\"203.0.113.1\",\"peer\":\"127.0.0.1\""),
      ok);
  ck_assert_int_eq(h_log_count(&srv, "\"client\":\"198.51.100.1\""), 0);
  ck_assert_int_ge(h_log_count(&srv, "\"client\":\"203.0.113.2\""), 1);
  ck_assert_int_ge(h_log_count(&srv, "\"client\":\"127.0.0.2\"}"), 1);
  h_server_stop(&srv);
}
END_TEST

START_TEST(ipv6_listener)
{
  const char *env6[] = {"GPUGATE_LISTEN=[::1]:0",
                        "GPUGATE_HTTP_MAX_CONNECTIONS_PER_CLIENT=3", NULL};
  const char *env_any[] = {"GPUGATE_LISTEN=[::]:0",
                           "GPUGATE_HTTP_TRUSTED_PROXIES=::1",
                           "GPUGATE_HTTP_FORWARDED_HEADER=Forwarded", NULL};
  char out[8192], dbenv[600];
  int held[CAP + 1], i;
  long status;
  struct h_resp r;

  h_db_apply("it_proxy_v6", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv, db_url, env6), 0);
  ck_assert_int_eq(healthz("::1", NULL, out, sizeof(out)), 200);
  ck_assert_int_ge(h_log_count(&srv, "\"client\":\"::1\"}"), 1);
  ck_assert_int_ge(h_log_count(&srv, "\"host\":\"[::1]\""), 1);
  /* the per-client cap, as connections are accepted */
  for (i = 0; i < CAP; i++)
    held[i] = dial_served("::1"); /* those accepted first */
  held[CAP] = dial("::1", srv.port);
  ck_assert_int_ge(held[CAP], 0);
  ck_assert_int_eq(read_reply(held[CAP], 30000, out, sizeof(out)), -1);
  send_all(held[0], "GET /healthz HTTP/1.1\r\nHost: gpugate\r\n"
                    "Connection: close\r\n\r\n");
  ck_assert_int_eq(read_reply(held[0], 30000, out, sizeof(out)), 200);
  for (i = 0; i <= CAP; i++)
    close(held[i]);
  h_server_stop(&srv);

  /* [::] takes IPv4 clients as well, as their IPv4 address */
  ck_assert_int_eq(h_server_start(&srv, db_url, env_any), 0);
  ck_assert_int_eq(h_request(&srv, "GET", "/healthz", NULL, NULL, NULL, &r), 0);
  ck_assert_int_eq(r.status, 200);
  h_resp_free(&r);
  ck_assert_int_ge(h_log_count(&srv, "\"client\":\"127.0.0.1\"}"), 1);
  /* an IPv6 proxy writing Forwarded: its X-Forwarded-For is not read */
  ck_assert_int_eq(request_from("::1", "GET", "/healthz",
                                "Forwarded: for=198.51.100.1, "
                                "for=\"[2001:db8::7]:4711\";proto=https\r\n",
                                out, sizeof(out)),
                   200);
  ck_assert_int_eq(healthz("::1", "203.0.113.1", out, sizeof(out)), 200);
  ck_assert_int_eq(
      h_log_count(&srv, "\"client\":\"2001:db8::7\",\"peer\":\"::1\"}"), 1);
  ck_assert_int_eq(h_log_count(&srv, "\"client\":\"::1\",\"peer\":\"::1\"}"),
                   1);
  ck_assert_int_eq(h_log_count(&srv, "203.0.113.1"), 0);
  h_server_stop(&srv);

  /* bad values stop start-up with one line naming the variable */
  snprintf(dbenv, sizeof(dbenv), "GPUGATE_DATABASE_URL=%s", db_url);
  {
    static const char *const bad[][2] = {
        {"GPUGATE_LISTEN=::1:8080", "GPUGATE_LISTEN: \"::1\" is not an IPv4 "
                                    "address or an IPv6 address in brackets"},
        {"GPUGATE_HTTP_TRUSTED_PROXIES=10.0.0.0/33",
         "GPUGATE_HTTP_TRUSTED_PROXIES: \"10.0.0.0/33\": the prefix length "
         "must be a number from 0 to 32"},
        {"GPUGATE_HTTP_FORWARDED_HEADER=X-Real-IP",
         "GPUGATE_HTTP_FORWARDED_HEADER: expected X-Forwarded-For or "
         "Forwarded"},
    };
    const char *argv[] = {"build/gpugate", "serve", NULL};
    size_t k;
    for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
      const char *e[] = {dbenv, "GPUGATE_JWT_HS256_SECRET_FILE=" H_SECRET_FILE,
                         bad[k][0], NULL};
      status = h_run(argv, e, 20000, NULL, out, sizeof(out));
      ck_assert_msg(status > 0 && strstr(out, bad[k][1]), "%s: %ld %s",
                    bad[k][0], status, out);
    }
  }
}
END_TEST

/* Stop the server a failed test left running. */
static void teardown(void)
{
  h_server_stop(&srv);
}

Suite *proxy_suite(void)
{
  Suite *s = suite_create("proxy");
  TCase *tc = tcase_create("proxy");

  tcase_add_checked_fixture(tc, NULL, teardown);
  tcase_set_timeout(tc, 90);
  tcase_add_test(tc, proxied_connection_cap);
  tcase_add_test(tc, proxied_rates_and_log);
  tcase_add_test(tc, ipv6_listener);
  suite_add_tcase(s, tc);
  return s;
}
