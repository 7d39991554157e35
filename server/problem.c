/*
 * problem.c — RFC 9457 problem details: the code → status → type table and
 * the builder, the edge where a struct gg_err (lib/err.h) becomes HTTP.
 * Database and curl internals never reach this text: callers log them and pass
 * a client-safe detail.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "server/problem.h"

struct problem_kind {
  unsigned status;
  const char *slug;
  const char *title;
};

#define PROBLEM_BASE "https://gpugate.dev/problems/"

static const struct problem_kind kinds[GG_CODE_COUNT] = {
    [GG_OK] = {200, "ok", "ok"},
    [GG_BAD_REQUEST] = {400, "invalid-request", "invalid request"},
    [GG_UNAUTHORIZED] = {401, "unauthorized", "authentication required"},
    [GG_FORBIDDEN] = {403, "forbidden", "not allowed"},
    [GG_NOT_FOUND] = {404, "not-found", "not found"},
    [GG_METHOD_NOT_ALLOWED] = {405, "method-not-allowed", "method not allowed"},
    [GG_NOT_ACCEPTABLE] = {406, "not-acceptable", "not acceptable"},
    [GG_CONFLICT] = {409, "conflict", "conflict"},
    [GG_PRECONDITION_FAILED] = {412, "precondition-failed",
                                "precondition failed"},
    [GG_PAYLOAD_TOO_LARGE] = {413, "payload-too-large", "payload too large"},
    [GG_UNSUPPORTED_MEDIA] = {415, "unsupported-media-type",
                              "unsupported media type"},
    [GG_UNPROCESSABLE] = {422, "unprocessable", "unprocessable content"},
    [GG_TOO_MANY_REQUESTS] = {429, "rate-limited", "too many requests"},
    [GG_INTERNAL] = {500, "internal", "internal error"},
    [GG_UNAVAILABLE] = {503, "unavailable", "service unavailable"},
};

unsigned problem_status(enum gg_code code)
{
  if (code < 0 || code >= GG_CODE_COUNT)
    return 500;
  return kinds[code].status;
}

const char *problem_title(enum gg_code code)
{
  if (code < 0 || code >= GG_CODE_COUNT)
    return kinds[GG_INTERNAL].title;
  return kinds[code].title;
}

void problem_field(struct gg_req *req, const char *field, const char *fmt, ...)
{
  char msg[256];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  err_field(&req->err, field, "%s", msg);
}

size_t problem_nfields(const struct gg_req *req)
{
  return err_nfields(&req->err);
}

enum gg_code problem_fail(struct gg_req *req, enum gg_code code,
                          const char *fmt, ...)
{
  va_list ap;
  enum gg_code rc;

  va_start(ap, fmt);
  rc = err_vfail(&req->err, code, fmt, ap);
  va_end(ap);
  return rc;
}

void problem_clear(struct gg_req *req)
{
  err_clear(&req->err);
}

json_t *problem_build(enum gg_code code, const char *detail, json_t *errors,
                      const char *instance, const char *request_id)
{
  char type[128];
  json_t *p;

  if (code <= GG_OK || code >= GG_CODE_COUNT)
    code = GG_INTERNAL;
  snprintf(type, sizeof(type), PROBLEM_BASE "%s", kinds[code].slug);
  p = json_pack("{s:s, s:s, s:i}", "type", type, "title", kinds[code].title,
                "status", (int)kinds[code].status);
  if (!p)
    return NULL;
  json_object_set_new(
      p, "detail", json_string(detail && *detail ? detail : kinds[code].title));
  if (instance)
    json_object_set_new(p, "instance", json_string(instance));
  if (request_id && *request_id)
    json_object_set_new(p, "request_id", json_string(request_id));
  json_object_set_new(p, "errors",
                      errors ? json_deep_copy(errors) : json_array());
  return p;
}

json_t *problem_from_err(const struct gg_err *err, const char *instance,
                         const char *request_id)
{
  return problem_build(err->code, err->detail, err->fields, instance,
                       request_id);
}
