/*
 * fuzz_pubsub.c — Pub/Sub push bodies: the input is the body of
 * POST /v1/batch/notifications. It goes through the pure reader
 * (notifications_parse_push(), handlers/notifications_parse.h), which must
 * classify every body: a state change of one of gpugate's Batch jobs names
 * a job gpugate could have created and a state of upper-case letters and
 * '_'; anything else says why it is acknowledged and dropped. Then, with
 * the right ?token= push secret (a bearer is only ever an OIDC token),
 * parsed as the server parses bodies, it goes through the handler with no
 * database: a message that is not a job state change must be
 * acknowledged; one that is stops at the database (503). A crash, a leak,
 * undefined behaviour, a 401 or a 500 for any body is a finding.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/handlers.h"
#include "handlers/notifications_parse.h"
#include "tests/fuzz/fake_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_parse(const uint8_t *data, size_t size)
{
  struct push_msg msg;
  enum push_kind kind;
  const char *base, *p;

  memset(&msg, 0x5A, sizeof(msg));
  kind = notifications_parse_push((const char *)data, size, &msg);
  if (kind != msg.kind)
    abort();
  switch (kind) {
  case PUSH_JOB_STATE:
    if (!memchr(msg.job_name, '\0', sizeof(msg.job_name)) ||
        !memchr(msg.state, '\0', sizeof(msg.state)) || !msg.job_name[0] ||
        !msg.state[0])
      abort();
    base = strrchr(msg.job_name, '/');
    if (!notifications_is_gpugate_job(base ? base + 1 : msg.job_name))
      abort(); /* only gpugate's own jobs are acted on */
    for (p = msg.state; *p; p++)
      if (!((*p >= 'A' && *p <= 'Z') || *p == '_'))
        abort();
    break;
  case PUSH_IGNORED:
  case PUSH_FOREIGN:
  case PUSH_MALFORMED:
    if (!msg.why || !*msg.why)
      abort(); /* acknowledged with a reason */
    break;
  default:
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static char secret[] = "fuzz-push-secret";
  static struct config cfg;
  struct gg_req req;
  json_error_t jerr;
  enum gg_code code;

  if (size > 65536)
    return 0;
  check_parse(data, size);
  cfg.pubsub_push_secret = secret;
  fuzz_req_init(&req);
  req.method = "POST";
  req.cfg = &cfg;
  fuzz_req_query("token=fuzz-push-secret", 22);
  req.json =
      json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
  if (json_is_object(req.json)) {
    code = batch_notifications(&req);
    if (code == GG_INTERNAL || req.err.code == GG_INTERNAL ||
        code == GG_UNAUTHORIZED)
      abort();
  }
  req_cleanup(&req);
  return 0;
}
