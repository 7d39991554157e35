/*
 * fuzz_pubsub.c — Pub/Sub push bodies: the input is the body of
 * POST /v1/batch/notifications. It goes through the pure reader
 * (notifications_parse_push(), handlers/notifications_parse.h) and, with
 * the right ?token= push secret (a bearer is only ever an OIDC token),
 * parsed as the server parses bodies, through the handler with no
 * database. A message that is not a job state change must be acknowledged;
 * one that is stops at the database (503). A crash, a leak, undefined
 * behaviour or a 500 for any body is a finding.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/handlers.h"
#include "handlers/notifications_parse.h"
#include "tests/fuzz/fake_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static char secret[] = "fuzz-push-secret";
  static struct config cfg;
  struct gg_req req;
  struct push_msg msg;
  json_error_t jerr;
  enum gg_code code;

  if (size > 65536)
    return 0;
  if (notifications_parse_push((const char *)data, size, &msg) ==
          PUSH_JOB_STATE &&
      (!msg.job_name[0] || !msg.state[0]))
    abort();
  cfg.pubsub_push_secret = secret;
  fuzz_req_init(&req);
  req.method = "POST";
  req.cfg = &cfg;
  fuzz_req_query("token=fuzz-push-secret", 22);
  req.json =
      json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
  if (json_is_object(req.json)) {
    code = batch_notifications(&req);
    if (code == GG_INTERNAL || req.code == GG_INTERNAL ||
        code == GG_UNAUTHORIZED)
      abort();
  }
  req_cleanup(&req);
  return 0;
}
