/*
 * fuzz_batch.c — Cloud Batch API responses as batch/ reads them. The input
 * is "STATUS\nRETRY-AFTER\nBODY": an HTTP status (decimal), a Retry-After
 * header value (empty: none) and a response body. The body goes through
 * batch_parse_error_at() (google.rpc.Status and OAuth error bodies, HTML
 * pages, anything) with a fixed clock, and is read as a Job, a list of
 * Jobs and an Operation the way the dispatcher reads them (name, through
 * batch_job_id_parse() as the orphan sweep reads it, status.state through
 * batch_state_parse() and batch_state_target() for each intent, jobs[],
 * nextPageToken, done/error). The parsed error must be NUL-terminated,
 * printable and consistent (retryable for 408, 429, 500, 502-504 and an
 * aborted 409; not_found only for 404); a job name that parses names the
 * same job again.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gcp/batch_job.h"
#include "tests/fuzz/fake_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW ((time_t)1800000000)

/* A job name as the orphan sweep reads it: one gpugate made parses into
 * an id and attempt that name it again. */
static void name_of(const char *name)
{
  char id[128], again[128];
  int attempt = -1, race_k = -1;

  if (!name || batch_job_id_parse(name, id, sizeof(id), &attempt, &race_k) != 0)
    return;
  if (!id[0] || attempt < 1 || race_k < 0 || !memchr(id, '\0', sizeof(id)))
    abort();
  if (race_k == 0 && batch_job_id(id, attempt, again, sizeof(again)) == 0) {
    const char *base = strrchr(name, '/');
    if (strcmp(again, base ? base + 1 : name) != 0)
      abort(); /* parse and build agree */
  }
}

static void read_state(json_t *job)
{
  static const enum batch_intent intents[] = {
      BATCH_INTENT_NONE, BATCH_INTENT_CANCEL, BATCH_INTENT_EVICT};
  const char *state = json_string_value(
      json_object_get(json_object_get(job, "status"), "state"));
  enum batch_state st = batch_state_parse(state);
  size_t i;

  name_of(json_string_value(json_object_get(job, "name")));
  for (i = 0; i < sizeof(intents) / sizeof(intents[0]); i++) {
    const char *reason = NULL;
    const char *target = batch_state_target(st, intents[i], &reason);
    if (target && !*target)
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *status_text = NULL, *retry = NULL, *body = NULL, *end;
  const uint8_t *rest, *tail;
  size_t rest_n, tail_n, i;
  struct batch_error e;
  json_error_t jerr;
  json_t *doc, *job;
  long status;

  if (size > 65536)
    return 0;
  fuzz_split(data, size, '\n', &status_text, &rest, &rest_n);
  fuzz_split(rest, rest_n, '\n', &retry, &tail, &tail_n);
  body = fuzz_strndup(tail, tail_n);
  if (!status_text || !retry || !body)
    goto out;
  status = strtol(status_text, &end, 10);
  if (status < 100 || status > 599)
    status = 500;
  memset(&e, 0x5A, sizeof(e));
  batch_parse_error_at(status, tail_n ? body : NULL, *retry ? retry : NULL, NOW,
                       &e);
  if (e.http_status != status || !memchr(e.status, '\0', sizeof(e.status)) ||
      !memchr(e.message, '\0', sizeof(e.message)))
    abort();
  for (i = 0; e.message[i]; i++)
    if ((unsigned char)e.message[i] < 0x20)
      abort(); /* messages are logged on one line */
  if (e.not_found && status != 404)
    abort();
  if ((status == 408 || status == 429 || status == 500 || status == 502 ||
       status == 503 || status == 504) != e.retryable &&
      !(status == 409 && e.retryable))
    abort();
  if (e.retry_after_ms < -1)
    abort();

  doc = json_loadb(tail_n ? (const char *)tail : "", tail_n, 0, &jerr);
  if (json_is_object(doc)) {
    read_state(doc); /* a Job */
    json_array_foreach (json_object_get(doc, "jobs"), i, job)
      read_state(job); /* a list */
    (void)json_string_value(json_object_get(doc, "nextPageToken"));
    (void)json_is_true(json_object_get(doc, "done")); /* an Operation */
    (void)json_object_get(json_object_get(doc, "error"), "code");
  }
  json_decref(doc);
out:
  free(status_text);
  free(retry);
  free(body);
  return 0;
}
