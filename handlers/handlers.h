/*
 * handlers.h — prototypes of every route handler, generated from the route
 * table so the two cannot disagree. A handler reads validated input from the
 * request context and returns GG_OK after req_reply(), or an error code
 * after problem_fail().
 */
#ifndef GPUGATE_HANDLERS_H
#define GPUGATE_HANDLERS_H

#include "server/req.h"

#define ROUTE(method, pattern, handler, roles, body)                           \
  enum gg_code handler(struct gg_req *req);
#include "server/routes.def"
#undef ROUTE

#define STREAM(handler, chunk)                                                 \
  void chunk(struct gg_req *req, const char *data, size_t n);
#include "server/streams.def"
#undef STREAM

#endif
