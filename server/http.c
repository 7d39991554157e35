/*
 * http.c — libmicrohttpd glue and the central request pipeline.
 *
 * Everything a route's table columns promise runs here, before the handler:
 * routing (404/405), CORS, authentication, roles and team scoping
 * (server/authn.c), body limit (413), content type (415) and JSON parsing
 * (duplicate keys rejected). Afterwards the reply — or the problem
 * document — is sent with X-Request-Id, and one access-log line is
 * written. The body's reading and parsing are http_body.c's; the reply
 * and the access log, http_reply.c's.
 *
 * Routing, authentication and authorisation run on the first call for a
 * request, when its headers are in and before any of its body is read: a
 * refusal is queued at once, and libmicrohttpd then closes the connection
 * without reading the body. Connection caps and the header and body
 * deadlines are server/connlimit.c's.
 *
 * Each request's client (its peer, or behind a trusted proxy the client
 * the proxy names) and that client's limits are server/httpclient.c's;
 * the access log names it.
 *
 * Threading: a pool of libmicrohttpd worker threads (epoll); a handler
 * blocks its worker on PostgreSQL, so the database pool has as many
 * connections as there are workers. Slow clients cost no worker: a
 * connection reaches a handler only once its headers are complete.
 * With GPUGATE_METRICS_LISTEN, a second daemon (one thread) serves
 * GET /metrics only, and the main listener answers 404 there.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "db/db.h"
#include "server/authn.h"
#include "server/connlimit.h"
#include "server/http.h"
#include "server/http_internal.h"
#include "server/httpclient.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "server/problem.h"
#include "server/ratelimit.h"
#include "server/router.h"

/* A client-chosen request id is echoed only when short and plain. */
static int plain_id(const char *s)
{
  size_t n = 0;

  for (; s[n]; n++) {
    char c = s[n];
    if (n >= 63 || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                     (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                     c == '.' || c == ':'))
      return 0;
  }
  return n > 0;
}

static void set_request_id(struct gg_req *req)
{
  static const char hex[] = "0123456789abcdef";
  const char *given = req_header(req, "X-Request-Id");
  unsigned char rnd[12];
  size_t i;

  if (given && plain_id(given)) {
    snprintf(req->request_id, sizeof(req->request_id), "%s", given);
    return;
  }
  if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
    memset(rnd, 0, sizeof(rnd));
  /* 24 lowercase hex digits (a snprintf per byte was 1 % of a submission) */
  for (i = 0; i < sizeof(rnd); i++) {
    req->request_id[2 * i] = hex[rnd[i] >> 4];
    req->request_id[2 * i + 1] = hex[rnd[i] & 15];
  }
  req->request_id[2 * sizeof(rnd)] = '\0';
}

/* Route and authenticate; false (with the problem recorded) to refuse. */
static bool admit(struct http_server *s, struct gg_req *req)
{
  char allow[128];
  bool metrics;

  /* HEAD is GET without the body; libmicrohttpd drops the body itself */
  switch (router_match(strcmp(req->method, "HEAD") ? req->method : "GET",
                       req->path, &req->route, req, allow, sizeof(allow))) {
  case ROUTER_FOUND:
    break;
  case ROUTER_NO_METHOD:
    req_add_header(req, MHD_HTTP_HEADER_ALLOW, allow);
    problem_fail(req, GG_METHOD_NOT_ALLOWED,
                 "Method %s is not allowed here; allowed: %s.", req->method,
                 allow);
    return false;
  default:
    problem_fail(req, GG_NOT_FOUND, "No resource at this path.");
    return false;
  }
  /* with a metrics listener, /metrics is there and only there */
  metrics = !strcmp(req->route->name, "metrics_page");
  if (metrics != s->metrics_only && (s->metrics_only || s->metrics)) {
    problem_fail(req, GG_NOT_FOUND, "No resource at this path.");
    return false;
  }
  if (req->route->roles == PUBLIC)
    return true;
  if ((req->route->roles & TOKEN_OPTIONAL) && !req_header(req, "Authorization"))
    return true;
  return authn_request(s->auth, s->limiter, req, http_now_us()) == GG_OK;
}

/* Run the handler; leaves the outcome in req. */
static void run_handler(struct gg_req *req)
{
  enum gg_code code = req->route->handler(req);

  if (code != GG_OK && req->err.code == GG_OK)
    problem_fail(req, code, "%s.", problem_title(code));
  if (code == GG_OK && req->err.code != GG_OK)
    req->err.code = GG_OK; /* a handler that recovered from a failed step */
}

/* Check and run the handler of an admitted, buffered request. */
static void dispatch(struct gg_req *req)
{
  if (http_body_parse(req) != GG_OK)
    return;
  run_handler(req);
}

static int hexval(char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/*
 * Percent-decoding of paths and query arguments, in place. "%00" is left
 * as it is: a NUL would silently cut a name short (PUT /v1/cohorts/a%00b
 * must not write cohort "a"); left encoded, it fails name validation.
 */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *s)
{
  char *r = s, *w = s;

  (void)cls;
  (void)conn;
  while (*r) {
    int hi, lo;
    if (r[0] == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0 &&
        (hi | lo) != 0) {
      *w++ = (char)(hi * 16 + lo);
      r += 3;
    } else {
      *w++ = *r++;
    }
  }
  *w = '\0';
  return (size_t)(w - s);
}

/* Whether the request announces a body (Content-Length above 0, or a
 * Transfer-Encoding). */
static bool has_body(struct MHD_Connection *conn)
{
  const char *clen = MHD_lookup_connection_value(
      conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

  return (clen && strtoull(clen, NULL, 10) > 0) ||
         MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                     MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

/*
 * A refusal decided before the body. With a body coming, the reply is
 * queued now: libmicrohttpd answers and closes the connection without
 * reading the body. Without one, it waits for the request's last call, so
 * that the connection can be kept alive.
 */
static enum MHD_Result early_reply(struct http_server *s, struct gg_req *req,
                                   struct MHD_Connection *conn)
{
  req->replied = true;
  if (!has_body(conn))
    return MHD_YES;
  return http_send_reply(s, req, conn);
}

/*
 * The first call of a request: its headers are in, none of its body has
 * been read. Route, authenticate and authorise here; then refuse an
 * announced oversized body, or take an upload slot and start the stream.
 */
static enum MHD_Result begin(struct http_server *s, struct gg_req *req,
                             struct MHD_Connection *conn)
{
  const char *clen;

  if (!connlimit_phase(conn, CONNLIMIT_BODY, s->cfg->http_body_timeout_s))
    return MHD_NO; /* the header deadline passed: close */
  if (!httpclient_admit(s->cfg, s->client_limiter, req, http_now_us()) ||
      !admit(s, req))
    return early_reply(s, req, conn);
  if (req->route->chunk) {
    unsigned role = (unsigned)req->principal.role;
    connlimit_phase(conn, CONNLIMIT_BODY, s->cfg->http_upload_timeout_s);
    if (role && !connlimit_upload_take(s->limits, role)) {
      req_add_header(req, MHD_HTTP_HEADER_RETRY_AFTER, "5");
      problem_fail(req, GG_TOO_MANY_REQUESTS,
                   "Role \"%s\" has %ld uploads in progress already "
                   "(GPUGATE_HTTP_MAX_UPLOADS_PER_ROLE); retry after 5 s.",
                   auth_role_name(req->principal.role),
                   s->cfg->http_max_uploads_per_role);
      return early_reply(s, req, conn);
    }
    req->upload_role = role;
    if (!http_body_stream_begin(req))
      return early_reply(s, req, conn);
    return MHD_YES;
  }
  clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (clen && strtoull(clen, NULL, 10) > req->route->body_max) {
    req->body_too_large = true;
    http_body_parse(req); /* records the 413 */
    return early_reply(s, req, conn);
  }
  return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
  struct http_server *s = cls;
  struct gg_req *req = *con_cls;

  (void)version;
  if (!req) {
    req = malloc(sizeof(*req));
    if (!req)
      return MHD_NO;
    req_init(req, s->pool);
    req->cfg = s->cfg;
    req->started_us = http_now_us();
    req->conn = conn;
    req->method = method;
    snprintf(req->path, sizeof(req->path), "%s", url);
    set_request_id(req);
    httpclient_identify(s->cfg, req);
    *con_cls = req;
    if (!strcmp(method, "OPTIONS"))
      return connlimit_phase(conn, CONNLIMIT_BODY, s->cfg->http_body_timeout_s)
                 ? MHD_YES
                 : MHD_NO;
    return begin(s, req, conn);
  }
  if (req->replied && *upload_data_size == 0) {
    connlimit_phase(conn, CONNLIMIT_BUSY, 0);
    return http_send_reply(s, req,
                           conn); /* the refusal of a bodiless request */
  }
  if (req->replied) {
    *upload_data_size = 0; /* not reached: a body's refusal closed it */
    return MHD_NO;
  }
  if (*upload_data_size) {
    size_t n = *upload_data_size;
    *upload_data_size = 0;
    if (connlimit_expired(conn))
      return MHD_NO; /* the body deadline passed: close */
    if (req->streaming) {
      http_body_stream_chunk(req, upload_data, n);
      return MHD_YES;
    }
    return http_body_buffer(req, upload_data, n) ? MHD_YES : MHD_NO;
  }
  connlimit_phase(conn, CONNLIMIT_BUSY, 0);
  if (!strcmp(method, "OPTIONS"))
    return http_preflight(s, req, conn);
  if (req->streaming) {
    if (req->err.code == GG_OK && http_body_stream_complete(req))
      run_handler(req);
  } else {
    dispatch(req);
  }
  /* give the connection back before the (possibly slow) send */
  if (req->db) {
    db_rollback(req->db);
    db_release(req->pool, req->db);
    req->db = NULL;
  }
  return http_send_reply(s, req, conn);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
  struct http_server *s = cls;
  struct gg_req *req = *con_cls;

  if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
    connlimit_phase(conn, CONNLIMIT_IDLE, 0); /* until the next request */
  if (!req)
    return;
  httpclient_release(req);
  if (req->upload_role)
    connlimit_upload_release(s->limits, req->upload_role);
  req_cleanup(req);
  free(req);
  *con_cls = NULL;
}

/*
 * The address of host — "localhost", an IPv4 dotted quad, or an IPv6
 * address in brackets ("[::1]") — and port into *addr, with the
 * libmicrohttpd flags it needs in *flags: IPv6, and both families on one
 * socket for "[::]". Returns 0, or -1 when host is none of these.
 */
static int listen_addr(const char *host, unsigned short port,
                       struct sockaddr_storage *addr, unsigned *flags)
{
  struct sockaddr_in *in4 = (struct sockaddr_in *)(void *)addr;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)(void *)addr;
  size_t len = strlen(host);

  memset(addr, 0, sizeof(*addr));
  *flags = 0;
  if (len > 2 && host[0] == '[' && host[len - 1] == ']') {
    char inner[CLIENTADDR_TEXT];
    if (len - 2 >= sizeof(inner))
      return -1;
    memcpy(inner, host + 1, len - 2);
    inner[len - 2] = '\0';
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    if (inet_pton(AF_INET6, inner, &in6->sin6_addr) != 1)
      return -1;
    *flags = IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr) ? MHD_USE_DUAL_STACK
                                                      : MHD_USE_IPv6;
    return 0;
  }
  in4->sin_family = AF_INET;
  in4->sin_port = htons(port);
  if (!strcmp(host, "localhost")) {
    in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return 0;
  }
  return inet_pton(AF_INET, host, &in4->sin_addr) == 1 ? 0 : -1;
}

/* A libmicrohttpd daemon for s on addr (with the address's flags) with
 * threads workers; its own connection limit stays above the shared cap,
 * which connlimit enforces. */
static struct MHD_Daemon *start_daemon(struct http_server *s,
                                       struct sockaddr_storage *addr,
                                       unsigned flags, unsigned threads,
                                       long total)
{
  unsigned long mhd_limit = (unsigned long)total * (threads + 1u) + 16u;

  if (mhd_limit > 0x7fffffffUL)
    mhd_limit = 0x7fffffffUL;
  return MHD_start_daemon(
      /* suspend and resume: an event stream waiting for its next event
       * holds no worker (server/events_hub.c) */
      MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
          MHD_USE_ERROR_LOG | flags,
      0, connlimit_accept, s->limits, on_request, s, MHD_OPTION_SOCK_ADDR,
      (struct sockaddr *)addr, MHD_OPTION_THREAD_POOL_SIZE, threads,
      /* a second longer than connlimit's idle deadline, which comes first:
       * this one is for clients that do not read their reply */
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->cfg->http_timeout_s + 1u,
      /* libmicrohttpd's default: the pool holds a request's line and
       * headers (a 20 KiB header still fits) and is zeroed whole between
       * the requests of a connection, which at 64 KiB was a tenth of
       * gpugate's CPU per GET of a job (perf, 2026-11-27) */
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)mhd_limit,
      MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
      MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
      MHD_OPTION_NOTIFY_CONNECTION, connlimit_notify, s->limits,
      MHD_OPTION_URI_LOG_CALLBACK, connlimit_request_line, s->limits,
      MHD_OPTION_UNESCAPE_CALLBACK, unescape, s, MHD_OPTION_END);
}

/* The port a daemon is bound to, or dflt. */
static unsigned short bound_port(struct MHD_Daemon *d, unsigned short dflt)
{
  const union MHD_DaemonInfo *info =
      MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);

  return info ? info->port : dflt;
}

struct http_server *http_start(const struct config *cfg,
                               const struct auth_ctx *auth,
                               struct db_pool *pool, char *err, size_t errlen)
{
  struct http_server *s = calloc(1, sizeof(*s));
  struct sockaddr_storage addr;
  unsigned flags;
  struct connlimit_cfg lc;
  long total, nofile = connlimit_raise_nofile();

  if (!s) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  s->cfg = cfg;
  s->auth = auth;
  s->pool = pool;
  total = connlimit_total(cfg->http_max_connections, nofile, cfg->db_pool_size,
                          cfg->http_threads, err, errlen);
  if (total < 0)
    goto fail;
  log_msg(LOG_INFO,
          "http: at most %ld connections (fd limit %ld), %ld per client "
          "(0: no cap); headers within %ld s, bodies within %ld s",
          total, nofile, cfg->http_max_connections_per_client,
          cfg->http_header_timeout_s, cfg->http_body_timeout_s);
  lc.max_connections = total;
  lc.per_client = cfg->http_max_connections_per_client;
  lc.header_timeout_s = cfg->http_header_timeout_s;
  lc.idle_timeout_s = cfg->http_timeout_s;
  lc.max_uploads_per_role = cfg->http_max_uploads_per_role;
  lc.trusted = cfg->trusted_proxies;
  lc.n_trusted = cfg->n_trusted_proxies;
  if (cfg->n_trusted_proxies > 0)
    log_msg(LOG_INFO,
            "http: %d trusted proxy networks; behind them the client is the "
            "last untrusted hop of %s",
            cfg->n_trusted_proxies,
            cfg->forwarded_header == CLIENTADDR_FORWARDED ? "Forwarded"
                                                          : "X-Forwarded-For");
  s->limits = connlimit_new(&lc);
  s->limiter = ratelimit_new(cfg->rate_limit_rps, 2 * cfg->rate_limit_rps);
  s->client_limiter = ratelimit_new(cfg->rate_limit_per_client_rps,
                                    2 * cfg->rate_limit_per_client_rps);
  if (!s->limiter || !s->client_limiter || !s->limits) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  if (listen_addr(cfg->listen_host, cfg->listen_port, &addr, &flags) != 0) {
    snprintf(err, errlen,
             "GPUGATE_LISTEN: \"%s\" is not an IPv4 address or an IPv6 "
             "address in brackets ([::1]:8080)",
             cfg->listen_host);
    goto fail;
  }
  if (cfg->metrics_listen_host[0]) {
    struct sockaddr_storage maddr;
    unsigned mflags;
    if (listen_addr(cfg->metrics_listen_host, cfg->metrics_listen_port, &maddr,
                    &mflags) != 0) {
      snprintf(err, errlen,
               "GPUGATE_METRICS_LISTEN: \"%s\" is not an IPv4 address or an "
               "IPv6 address in brackets ([::1]:9090)",
               cfg->metrics_listen_host);
      goto fail;
    }
    s->metrics = calloc(1, sizeof(*s->metrics));
    if (!s->metrics) {
      snprintf(err, errlen, "out of memory");
      goto fail;
    }
    *s->metrics = *s;
    s->metrics->metrics = NULL;
    s->metrics->metrics_only = true;
    s->metrics->daemon = start_daemon(s->metrics, &maddr, mflags, 1, total);
    if (!s->metrics->daemon) {
      snprintf(err, errlen, "GPUGATE_METRICS_LISTEN: cannot listen on %s:%u",
               cfg->metrics_listen_host, cfg->metrics_listen_port);
      goto fail;
    }
    s->metrics->port = bound_port(s->metrics->daemon, cfg->metrics_listen_port);
  }
  s->daemon = start_daemon(s, &addr, flags, (unsigned)cfg->http_threads, total);
  if (!s->daemon) {
    snprintf(err, errlen, "GPUGATE_LISTEN: cannot listen on %s:%u",
             cfg->listen_host, cfg->listen_port);
    goto fail;
  }
  s->port = bound_port(s->daemon, cfg->listen_port);
  return s;
fail:
  http_stop(s);
  return NULL;
}

unsigned short http_port(const struct http_server *s)
{
  return s->port;
}

/* Stop one listener's daemon: stop accepting, let the workers finish what
 * they hold, then stop. */
static void stop_daemon(struct MHD_Daemon *d)
{
  MHD_socket fd;

  if (!d)
    return;
  fd = MHD_quiesce_daemon(d);
  if (fd != MHD_INVALID_SOCKET)
    close(fd);
  MHD_stop_daemon(d);
}

void http_stop(struct http_server *s)
{
  if (!s)
    return;
  stop_daemon(s->daemon);
  if (s->metrics) {
    stop_daemon(s->metrics->daemon);
    free(s->metrics);
  }
  connlimit_free(s->limits);
  ratelimit_free(s->limiter);
  ratelimit_free(s->client_limiter);
  free(s);
}
