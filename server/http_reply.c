/*
 * http_reply.c — a request's reply: the problem document, the JSON or text
 * reply (304 when the client's ETag is current) or a streamed one, the
 * common headers (X-Request-Id, CORS), the CORS preflight, and the access
 * log line with its metrics. The pipeline that calls these is http.c.
 */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/etag.h"
#include "server/http_internal.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "server/problem.h"
#include "server/router.h"

long long http_now_us(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
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
               (double)(http_now_us() - req->started_us) / 1e6);
  if (!log_enabled(level))
    return;
  f = json_pack("{s:s, s:s, s:s, s:i, s:f}", "request_id", req->request_id,
                "method", req->method ? req->method : "", "route",
                req->route ? req->route->pattern : "(none)", "status",
                (int)status, "duration_ms",
                (double)(http_now_us() - req->started_us) / 1000.0);
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

enum MHD_Result http_send_reply(struct http_server *s, struct gg_req *req,
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

enum MHD_Result http_preflight(struct http_server *s, struct gg_req *req,
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
