/*
 * http_internal.h — what the request pipeline (server/http.c), the
 * request body (http_body.c) and the reply (http_reply.c) share. Not part
 * of the listener's interface (http.h); nothing else includes it.
 */
#ifndef GPUGATE_HTTP_INTERNAL_H
#define GPUGATE_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "server/req.h"

struct auth_ctx;
struct config;
struct connlimit;
struct db_pool;
struct ratelimit;

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

/* the monotonic clock in microseconds */
long long http_now_us(void);

/* The body (http_body.c). A buffered body: http_body_buffer takes a piece
 * (false when the connection must close), http_body_parse checks and
 * parses it once complete (the problem recorded on req). A streaming
 * route: http_body_stream_begin on the first call (false: refused),
 * http_body_stream_chunk per piece, http_body_stream_complete at the end
 * (false: a cut gzip stream). */
bool http_body_buffer(struct gg_req *req, const char *data, size_t n);
enum gg_code http_body_parse(struct gg_req *req);
bool http_body_stream_begin(struct gg_req *req);
void http_body_stream_chunk(struct gg_req *req, const char *data, size_t n);
bool http_body_stream_complete(struct gg_req *req);

/* The reply (http_reply.c): req's problem, reply or stream queued on conn
 * with the common headers, and its access-log line; the CORS preflight's
 * 204. */
enum MHD_Result http_send_reply(struct http_server *s, struct gg_req *req,
                                struct MHD_Connection *conn);
enum MHD_Result http_preflight(struct http_server *s, struct gg_req *req,
                               struct MHD_Connection *conn);

#endif
