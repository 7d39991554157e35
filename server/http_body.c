/*
 * http_body.c — a request's body: buffered up to its route's limit and
 * parsed as a JSON object (413, 415 and 400 naming the field), or, for a
 * streaming route, fed to the route chunk by chunk and inflated on the way
 * when it is gzip. The pipeline that calls these is http.c.
 */
#include <microhttpd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "server/http_internal.h"
#include "server/problem.h"
#include "server/router.h"

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

enum gg_code http_body_parse(struct gg_req *req)
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

/*
 * A streaming route (routes' chunk handler set): admitted on the request's
 * first call, before its body arrives, then fed the body chunk by chunk —
 * inflated on the way when Content-Encoding is gzip — so that a body of
 * any size is processed in bounded memory.
 */
bool http_body_stream_begin(struct gg_req *req)
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

void http_body_stream_chunk(struct gg_req *req, const char *data, size_t n)
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
bool http_body_stream_complete(struct gg_req *req)
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

/* A piece of a buffered body; false when the connection must close. */
bool http_body_buffer(struct gg_req *req, const char *data, size_t n)
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
