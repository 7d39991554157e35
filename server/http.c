/*
 * http.c — libmicrohttpd glue and the central request pipeline.
 *
 * Everything a route's table columns promise runs here, before the handler:
 * routing (404/405), CORS, authentication, roles and team scoping
 * (server/authn.c), body limit (413), content type (415) and JSON parsing
 * (duplicate keys rejected). Afterwards the reply — or the problem
 * document — is sent with X-Request-Id, and one access-log line is
 * written.
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
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "db/db.h"
#include "server/authn.h"
#include "server/connlimit.h"
#include "server/etag.h"
#include "server/http.h"
#include "server/httpclient.h"
#include "lib/log.h"
#include "server/metrics.h"
#include "server/problem.h"
#include "server/ratelimit.h"
#include "server/router.h"

struct http_server {
  struct MHD_Daemon *daemon;
  const struct config *cfg;
  const struct auth_ctx *auth;
  struct db_pool *pool;
  struct ratelimit *limiter;        /* per team (or role) */
  struct ratelimit *client_limiter; /* per client address */
  struct connlimit *limits;
  unsigned short port;
  bool metrics_only;           /* the GPUGATE_METRICS_LISTEN listener */
  struct http_server *metrics; /* owned: that listener, or NULL */
};

static long long now_us(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

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

static const char *allowed_origin(const struct http_server *s,
                                  struct gg_req *req)
{
  const char *origin = req_header(req, "Origin");
  int i;

  if (!origin)
    return NULL;
  for (i = 0; i < s->cfg->n_cors_origins; i++)
    if (!strcmp(s->cfg->cors_origins[i], "*") ||
        !strcmp(s->cfg->cors_origins[i], origin))
      return origin;
  return NULL;
}

/* Content-Type must be application/json, optionally with charset=utf-8. */
static int json_content_type(const char *ct)
{
  const char *p;

  if (!ct || strncasecmp(ct, "application/json", 16) != 0)
    return 0;
  p = ct + 16;
  while (*p == ' ')
    p++;
  if (*p == '\0')
    return 1;
  if (*p != ';')
    return 0;
  p++;
  while (*p == ' ')
    p++;
  return strcasecmp(p, "charset=utf-8") == 0;
}

static enum gg_code parse_body(struct gg_req *req)
{
  json_error_t jerr;

  if (req->body_too_large)
    return problem_fail(req, GG_PAYLOAD_TOO_LARGE,
                        "The request body exceeds %zu bytes.",
                        req->route->body_max);
  if (req->route->body_max == 0)
    return GG_OK;
  if (req->body_len == 0) {
    problem_field(req, "body", "a JSON object is required");
    return problem_fail(req, GG_BAD_REQUEST, "The request body is empty.");
  }
  if (!json_content_type(req_header(req, "Content-Type")))
    return problem_fail(req, GG_UNSUPPORTED_MEDIA,
                        "The request body must be application/json.");
  req->json =
      json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
  if (!req->json) {
    problem_field(req, "body", "line %d, column %d: %s", jerr.line, jerr.column,
                  jerr.text);
    return problem_fail(req, GG_BAD_REQUEST,
                        "The request body is not valid JSON.");
  }
  if (!json_is_object(req->json)) {
    problem_field(req, "body", "must be a JSON object");
    return problem_fail(req, GG_BAD_REQUEST,
                        "The request body must be a JSON object.");
  }
  return GG_OK;
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
  return authn_request(s->auth, s->limiter, req, now_us()) == GG_OK;
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
  if (parse_body(req) != GG_OK)
    return;
  run_handler(req);
}

/*
 * A streaming route (routes' chunk handler set): admitted on the request's
 * first call, before its body arrives, then fed the body chunk by chunk —
 * inflated on the way when Content-Encoding is gzip — so that a body of
 * any size is processed in bounded memory.
 */
static bool stream_begin(struct gg_req *req)
{
  const char *enc = req_header(req, "Content-Encoding");
  z_stream *z;

  req->streaming = true;
  if (!enc || !strcasecmp(enc, "identity"))
    return true;
  if (strcasecmp(enc, "gzip") != 0) {
    problem_fail(req, GG_UNSUPPORTED_MEDIA,
                 "Content-Encoding \"%s\" is not supported; use gzip.", enc);
    return false;
  }
  z = calloc(1, sizeof(*z));
  if (!z || inflateInit2(z, 16 + MAX_WBITS) != Z_OK) {
    free(z);
    problem_fail(req, GG_INTERNAL, "The body cannot be decompressed.");
    return false;
  }
  req->inflate = z;
  return true;
}

static void stream_chunk(struct gg_req *req, const char *data, size_t n)
{
  z_stream *z = req->inflate;
  char out[64 * 1024];

  if (req->err.code != GG_OK)
    return; /* refused already: the rest is read and dropped */
  if (!z) {
    req->route->chunk(req, data, n);
    return;
  }
  z->next_in = (Bytef *)(uintptr_t)data;
  z->avail_in = (uInt)n;
  /* until this piece is used up and inflate has nothing more to give */
  while ((z->avail_in > 0 || z->avail_out == 0) && req->err.code == GG_OK) {
    int rc;
    z->next_out = (Bytef *)out;
    z->avail_out = sizeof(out);
    rc = inflate(z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      problem_field(req, "body", "is not valid gzip");
      problem_fail(req, GG_BAD_REQUEST, "The gzip body is corrupt.");
      return;
    }
    if (sizeof(out) - z->avail_out > 0)
      req->route->chunk(req, out, sizeof(out) - z->avail_out);
    if (rc == Z_STREAM_END)
      inflateReset(z); /* concatenated gzip members: read the next one */
    else if (rc == Z_BUF_ERROR)
      break; /* needs more input */
  }
}

/* At the end of the body a gzip stream must be complete (its trailer, with
 * CRC and length, read): a cut upload is not a smaller file. */
static bool stream_complete(struct gg_req *req)
{
  z_stream *z = req->inflate;

  if (!z || z->total_in == 0)
    return true; /* no gzip, or the last member ended exactly */
  problem_field(req, "body", "is a truncated gzip stream");
  problem_fail(req, GG_BAD_REQUEST,
               "The gzip body ends in the middle of a member; rows before "
               "the cut may be stored, and sending the whole file again "
               "is safe.");
  return false;
}

static void add_common_headers(struct http_server *s, struct gg_req *req,
                               struct MHD_Response *resp)
{
  const char *origin = allowed_origin(s, req);
  int i;

  MHD_add_response_header(resp, "X-Request-Id", req->request_id);
  for (i = 0; i < req->n_hdrs; i++)
    MHD_add_response_header(resp, req->hdr_names[i], req->hdr_values[i]);
  if (origin) {
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", origin);
    MHD_add_response_header(resp, "Vary", "Origin");
    MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                            "ETag, Location, X-Request-Id, Retry-After");
  }
}

static void log_access(struct gg_req *req, unsigned status)
{
  json_t *f;
  int level = status >= 500 ? LOG_ERROR : LOG_INFO;

  metrics_http(req->route ? req->route->pattern : "(none)",
               req->method ? req->method : "", status,
               (double)(now_us() - req->started_us) / 1e6);
  if (!log_enabled(level))
    return;
  f = json_pack("{s:s, s:s, s:s, s:i, s:f}", "request_id", req->request_id,
                "method", req->method ? req->method : "", "route",
                req->route ? req->route->pattern : "(none)", "status",
                (int)status, "duration_ms",
                (double)(now_us() - req->started_us) / 1000.0);
  if (f && req->team_for_log[0])
    json_object_set_new(f, "team", json_string(req->team_for_log));
  if (f && req->client_text[0])
    json_object_set_new(f, "client", json_string(req->client_text));
  if (f && req->peer_text[0])
    json_object_set_new(f, "peer", json_string(req->peer_text));
  log_json(level, "request", f);
  json_decref(f);
}

/* The state of a streamed reply, owned by its MHD response. */
struct streamed {
  req_stream_read read;
  void *cls;
  void (*cls_free)(void *cls);
};

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
  struct streamed *st = cls;
  long n;

  (void)pos;
  n = st->read(st->cls, buf, max);
  if (n > 0)
    return (ssize_t)n;
  if (n == REQ_STREAM_WAIT)
    return 0; /* suspended: called again once resumed */
  return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM
                : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void stream_free(void *cls)
{
  struct streamed *st = cls;

  if (st->cls_free)
    st->cls_free(st->cls);
  free(st);
}

/* A response streaming req's reply_read, which it takes over; NULL when
 * out of memory (req keeps it then). */
static struct MHD_Response *stream_response(struct gg_req *req)
{
  struct streamed *st = malloc(sizeof(*st));
  struct MHD_Response *resp;

  if (!st)
    return NULL;
  st->read = req->reply_read;
  st->cls = req->reply_read_cls;
  st->cls_free = req->reply_read_free;
  resp = MHD_create_response_from_callback(
      MHD_SIZE_UNKNOWN,
      req->reply_read_block ? req->reply_read_block : (size_t)64 * 1024,
      stream_reader, st, stream_free);
  if (!resp) {
    free(st);
    return NULL;
  }
  req->reply_read_cls = NULL;
  req->reply_read = NULL;
  return resp;
}

static enum MHD_Result send_reply(struct http_server *s, struct gg_req *req,
                                  struct MHD_Connection *conn)
{
  struct MHD_Response *resp;
  char *text = NULL;
  size_t len = 0;
  unsigned status;
  const char *ctype = NULL;
  enum MHD_Result ret;

  if (req->err.code == GG_OK && req->reply_read) {
    status = req->status ? req->status : 200;
    resp = stream_response(req);
    if (!resp)
      return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            req->reply_content_type);
    goto send;
  }
  if (req->err.code != GG_OK) {
    json_t *p = problem_from_err(&req->err, req->path, req->request_id);
    status = problem_status(req->err.code);
    text = p ? json_dumps(p, GG_JSON_DUMP) : NULL;
    json_decref(p);
    len = text ? strlen(text) : 0;
    ctype = "application/problem+json";
  } else {
    bool json = req->reply_text ? req->reply_text_json : req->reply != NULL;
    status = req->status ? req->status : 200;
    if (req->reply_text) {
      text = req->reply_text;
      req->reply_text = NULL;
      len = req->reply_text_len;
      ctype = req->reply_content_type;
    } else if (req->reply) {
      text = json_dumps(req->reply, GG_JSON_DUMP);
      len = text ? strlen(text) : 0;
      ctype = "application/json";
    }
    if (json && status == 200 && etag_not_modified(req, text, len)) {
      free(text); /* 304: the client's copy is current */
      text = NULL;
      len = 0;
      ctype = NULL;
      status = 304;
    }
  }
  resp = MHD_create_response_from_buffer(len, text ? text : (void *)"",
                                         text ? MHD_RESPMEM_MUST_FREE
                                              : MHD_RESPMEM_PERSISTENT);
  if (!resp) {
    free(text);
    return MHD_NO;
  }
  if (ctype)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
send:
  add_common_headers(s, req, resp);
  if (req->err.code == GG_UNAUTHORIZED)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                            "Bearer error=\"invalid_token\"");
  if (req->err.code == GG_UNAVAILABLE)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
  ret = MHD_queue_response(conn, status, resp);
  MHD_destroy_response(resp);
  log_access(req, status);
  return ret;
}

static enum MHD_Result preflight(struct http_server *s, struct gg_req *req,
                                 struct MHD_Connection *conn)
{
  const char *origin = allowed_origin(s, req);
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  enum MHD_Result ret;

  if (!resp)
    return MHD_NO;
  MHD_add_response_header(resp, "X-Request-Id", req->request_id);
  if (origin) {
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", origin);
    MHD_add_response_header(resp, "Vary", "Origin");
    MHD_add_response_header(resp, "Access-Control-Allow-Methods",
                            "GET, PUT, POST, DELETE, OPTIONS");
    MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                            "Authorization, Content-Type, If-Match, "
                            "Idempotency-Key, X-Request-Id, Accept");
    MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
  }
  ret = MHD_queue_response(conn, MHD_HTTP_NO_CONTENT, resp);
  MHD_destroy_response(resp);
  log_access(req, MHD_HTTP_NO_CONTENT);
  return ret;
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
  return send_reply(s, req, conn);
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
  if (!httpclient_admit(s->cfg, s->client_limiter, req, now_us()) ||
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
    if (!stream_begin(req))
      return early_reply(s, req, conn);
    return MHD_YES;
  }
  clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (clen && strtoull(clen, NULL, 10) > req->route->body_max) {
    req->body_too_large = true;
    parse_body(req); /* records the 413 */
    return early_reply(s, req, conn);
  }
  return MHD_YES;
}

/* A piece of a buffered body; false when the connection must close. */
static bool buffer_body(struct gg_req *req, const char *data, size_t n)
{
  size_t limit = req->route ? req->route->body_max : 0;
  char *grown;

  if (req->body_too_large)
    return true;
  if (req->body_len + n > limit) {
    req->body_too_large = true;
    free(req->body);
    req->body = NULL;
    req->body_len = 0;
    return true;
  }
  grown = realloc(req->body, req->body_len + n + 1);
  if (!grown)
    return false;
  req->body = grown;
  memcpy(req->body + req->body_len, data, n);
  req->body_len += n;
  req->body[req->body_len] = '\0';
  return true;
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
    req->started_us = now_us();
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
    return send_reply(s, req, conn); /* the refusal of a bodiless request */
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
      stream_chunk(req, upload_data, n);
      return MHD_YES;
    }
    return buffer_body(req, upload_data, n) ? MHD_YES : MHD_NO;
  }
  connlimit_phase(conn, CONNLIMIT_BUSY, 0);
  if (!strcmp(method, "OPTIONS"))
    return preflight(s, req, conn);
  if (req->streaming) {
    if (req->err.code == GG_OK && stream_complete(req))
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
  return send_reply(s, req, conn);
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
