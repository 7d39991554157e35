/*
 * focus.c — the FOCUS 1.2 export: GET /v1/costs/focus (every team) and
 * GET /v1/teams/{team}/costs/focus (one team), text/csv, streamed.
 *
 * The handler checks the query and opens the cursor (db/focus.h), so that
 * a bad request or an unreachable database still gets a problem; the body
 * is then written as the client reads it: a batch of rollups at a time
 * through focus_csv.h, deflated on the way when Accept-Encoding asks for
 * gzip. Memory is one batch and zlib's window, whatever the range.
 *
 * Each export holds a PostgreSQL connection of its own (not one of the
 * request pool) until its body is sent, so at most MAX_EXPORTS run at once
 * in a process; one more is answered 429 with Retry-After.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "db/focus.h"
#include "handlers/costs.h"
#include "handlers/focus_csv.h"
#include "handlers/handlers.h"
#include "handlers/validate.h"
#include "server/problem.h"

#define BATCH_ROWS 500 /* rollups written per refill */
#define MAX_EXPORTS 4  /* exports streaming at once */

static atomic_int exports; /* streaming now, in this process */

struct focus_stream {
  struct db_focus *cur; /* owned */
  struct csv_buf text;  /* CSV made by the last refill */
  struct csv_buf out;   /* bytes ready to send (text, or deflated) */
  size_t sent;          /* of out */
  z_stream z;
  bool gzip, z_on, header, eof, finished;
};

static void stream_free(void *cls)
{
  struct focus_stream *st = cls;

  if (!st)
    return;
  atomic_fetch_sub(&exports, 1);
  db_focus_close(st->cur);
  csv_buf_free(&st->text);
  csv_buf_free(&st->out);
  if (st->z_on)
    deflateEnd(&st->z);
  free(st);
}

/* Deflate st->text into st->out (finishing the stream at the end). */
static int deflate_text(struct focus_stream *st)
{
  int flush = st->eof ? Z_FINISH : Z_NO_FLUSH, rc;

  st->z.next_in = (Bytef *)st->text.data;
  st->z.avail_in = (uInt)st->text.len;
  do {
    if (st->out.cap - st->out.len < 16384) {
      char *grown = realloc(st->out.data, st->out.cap * 2 + 16384);
      if (!grown)
        return -1;
      st->out.data = grown;
      st->out.cap = st->out.cap * 2 + 16384;
    }
    st->z.next_out = (Bytef *)st->out.data + st->out.len;
    st->z.avail_out = (uInt)(st->out.cap - st->out.len);
    rc = deflate(&st->z, flush);
    if (rc == Z_STREAM_ERROR)
      return -1;
    st->out.len = st->out.cap - st->z.avail_out;
  } while (st->z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  return 0;
}

/* Make the next bytes to send: the header, or a batch of rows. */
static int refill(struct focus_stream *st)
{
  struct db_focus_row row;
  int i, rc = 1;

  st->text.len = 0;
  st->out.len = 0;
  st->sent = 0;
  if (!st->header) {
    focus_csv_header(&st->text);
    st->header = true;
  } else {
    for (i = 0; i < BATCH_ROWS && (rc = db_focus_next(st->cur, &row)) == 1; i++)
      if (focus_csv_rows(&st->text, &row) != 0)
        return -1;
    if (rc < 0)
      return -1;
    st->eof = rc == 0;
  }
  if (st->text.failed)
    return -1;
  if (st->gzip)
    return deflate_text(st);
  csv_put(&st->out, st->text.data ? st->text.data : "", st->text.len);
  return st->out.failed ? -1 : 0;
}

static long stream_read(void *cls, char *buf, size_t max)
{
  struct focus_stream *st = cls;

  while (st->sent == st->out.len) {
    if (st->finished)
      return 0;
    if (refill(st) != 0)
      return -1;
    st->finished = st->eof;
  }
  {
    size_t n = st->out.len - st->sent;
    if (n > max)
      n = max;
    memcpy(buf, st->out.data + st->sent, n);
    st->sent += n;
    return (long)n;
  }
}

static enum gg_code stream_export(struct gg_req *req, const char *team)
{
  const char *from, *to;
  struct focus_stream *st;
  char disposition[128];

  costs_range(req, &from, &to);
  if (problem_nfields(req))
    return problem_fail(req, GG_BAD_REQUEST,
                        "The export's parameters are invalid; see errors.");
  if (atomic_fetch_add(&exports, 1) >= MAX_EXPORTS) {
    atomic_fetch_sub(&exports, 1);
    req_add_header(req, "Retry-After", "5");
    return problem_fail(req, GG_TOO_MANY_REQUESTS,
                        "%d FOCUS exports are being sent already; try again "
                        "when one has finished.",
                        MAX_EXPORTS);
  }
  st = calloc(1, sizeof(*st));
  if (!st) {
    atomic_fetch_sub(&exports, 1);
    return problem_fail(req, GG_INTERNAL, "Out of memory.");
  }
  st->gzip = focus_wants_gzip(req_header(req, "Accept-Encoding"));
  if (st->gzip) {
    if (deflateInit2(&st->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
      stream_free(st);
      return problem_fail(req, GG_INTERNAL, "Out of memory.");
    }
    st->z_on = true;
  }
  st->cur = db_focus_open(req_db(req), &req->err, from, to, team);
  if (!st->cur) {
    stream_free(st);
    return req->err.code;
  }
  snprintf(disposition, sizeof(disposition),
           "attachment; filename=\"focus-%s%s%s-%s.csv\"", team ? team : "",
           team ? "-" : "", from, to);
  req_add_header(req, "Content-Disposition", disposition);
  req_add_header(req, "Vary", "Accept-Encoding");
  if (st->gzip)
    req_add_header(req, "Content-Encoding", "gzip");
  req_reply_stream(req, 200, "text/csv; charset=utf-8", stream_read, st,
                   stream_free);
  return GG_OK;
}

enum gg_code costs_focus(struct gg_req *req)
{
  return stream_export(req, NULL);
}

enum gg_code team_costs_focus(struct gg_req *req)
{
  if (!v_path_name(req, "team"))
    return problem_fail(req, GG_NOT_FOUND, "The path names no valid team.");
  return stream_export(req, req_param(req, "team"));
}
