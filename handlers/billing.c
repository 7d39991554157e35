/*
 * billing.c — POST /v1/billing/export-rows: NDJSON rows of the Cloud
 * Billing export, streamed (server/streams.def) into the ingest engine
 * (billing_ingest.h) as they arrive, so that a body of any size is loaded
 * in bounded memory. The reply counts inserted, duplicate and rejected
 * rows and lists the rejected lines.
 *
 * Each batch of rows is committed on its own. When the database fails
 * mid-way the earlier batches stay stored; since loading is idempotent,
 * the client sends the whole file again.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "billing/billing_ingest.h"
#include "handlers/handlers.h"
#include "server/problem.h"

/* Media types an NDJSON body may be announced as. */
static const char *const media_types[] = {
    "application/x-ndjson", "application/jsonl", "application/json",
    "text/plain", NULL};

static bool ndjson_media_type(const char *ct)
{
  size_t n, i;

  if (!ct)
    return false;
  while (*ct == ' ' || *ct == '\t')
    ct++;
  n = strcspn(ct, ";");
  while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
    n--;
  for (i = 0; media_types[i]; i++)
    if (strlen(media_types[i]) == n && !strncasecmp(ct, media_types[i], n))
      return true;
  return false;
}

static void free_stream(void *stream)
{
  billing_ingest_free(stream);
}

/*
 * The request's engine, created on the first piece of body (or at the end
 * for an empty one) after the media type is checked. NULL with the
 * problem recorded. Borrowed from req, which owns it via req->stream.
 */
static struct billing_ingest *engine(struct gg_req *req)
{
  const char *ct = req_header(req, "Content-Type");
  struct db_conn *db;

  if (req->stream)
    return req->stream;
  if (!ndjson_media_type(ct)) {
    problem_fail(req, GG_UNSUPPORTED_MEDIA,
                 "Content-Type \"%s\" is not accepted; send NDJSON as "
                 "application/x-ndjson, application/jsonl, application/json "
                 "or text/plain.",
                 ct ? ct : "");
    return NULL;
  }
  db = req_db(req);
  if (!db) {
    problem_fail(req, GG_UNAVAILABLE, "The database is unavailable.");
    return NULL;
  }
  req->stream = billing_ingest_new(db);
  if (!req->stream) {
    problem_fail(req, GG_INTERNAL, "Out of memory.");
    return NULL;
  }
  req->stream_free = free_stream;
  return req->stream;
}

static enum gg_code db_failed(struct gg_req *req,
                              const struct billing_ingest *bi)
{
  return problem_fail(
      req, GG_UNAVAILABLE,
      "The database failed after %ld rows were stored; they stay stored. "
      "Loading is idempotent, so sending the whole file again is safe.",
      billing_ingest_committed(bi));
}

void billing_ingest_chunk(struct gg_req *req, const char *data, size_t n)
{
  struct billing_ingest *bi = engine(req);

  if (bi && billing_ingest_feed(bi, data, n) != 0)
    db_failed(req, bi);
}

enum gg_code billing_ingest(struct gg_req *req)
{
  struct billing_ingest *bi = engine(req);
  json_t *report;

  if (!bi)
    return req->err.code;
  report = billing_ingest_finish(bi);
  if (!report)
    return db_failed(req, bi);
  req_reply(req, 200, report);
  return GG_OK;
}
