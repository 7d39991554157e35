/*
 * emu_control.c — handlers of the /emulator/ endpoints: thin wrappers that
 * expose the record, job, fault, config and token modules to tests as JSON.
 */
#include <stdio.h>

#include "tests/emulator/emu_config.h"
#include "tests/emulator/emu_control.h"
#include "tests/emulator/emu_fault.h"
#include "tests/emulator/emu_jobs.h"
#include "tests/emulator/emu_push.h"
#include "tests/emulator/emu_record.h"
#include "tests/emulator/emu_token.h"
#include "tests/emulator/emu_util.h"

void emu_control_healthz(struct emu_req *r)
{
  json_t *body = json_pack(
      "{s:s, s:I, s:I, s:I, s:o}", "status", "ok", "jobs",
      (json_int_t)emu_jobs_count(), "requests", (json_int_t)emu_record_count(),
      "tokens", (json_int_t)emu_token_count(), "pushes", emu_push_stats());
  json_t *calls = emu_http_in_flight(); /* inFlight, maxInFlight */

  json_object_update(body, calls);
  json_decref(calls);
  emu_reply_json(r, 200, body);
}

void emu_control_requests(struct emu_req *r)
{
  const char *since_s = emu_req_query(r, "since");
  long long since = 0;

  if (since_s && (!emu_parse_long(since_s, &since) || since < 0)) {
    emu_reply_error(r, 400, "INVALID_ARGUMENT", NULL,
                    "since must be a non-negative integer.");
    return;
  }
  emu_reply_json(r, 200, emu_record_list(since));
}

void emu_control_requests_clear(struct emu_req *r)
{
  emu_record_clear();
  emu_http_reset_in_flight();
  emu_reply_json(r, 200, json_object());
}

void emu_control_jobs(struct emu_req *r)
{
  emu_reply_json(r, 200, emu_jobs_dump());
}

void emu_control_disappear(struct emu_req *r)
{
  size_t n = emu_jobs_disappear(r->params[0]);

  if (!n) {
    emu_reply_error(r, 404, "NOT_FOUND", NULL, "No job with id \"%s\".",
                    r->params[0]);
    return;
  }
  emu_reply_json(r, 200, json_pack("{s:I}", "removed", (json_int_t)n));
}

void emu_control_faults_get(struct emu_req *r)
{
  emu_reply_json(r, 200, emu_fault_to_json());
}

void emu_control_faults_set(struct emu_req *r)
{
  char err[256];
  json_t *empty = json_object();
  int rc = emu_fault_configure(r->json ? r->json : empty, err, sizeof(err));

  json_decref(empty);
  if (rc != 0) {
    emu_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "%s", err);
    return;
  }
  emu_reply_json(r, 200, emu_fault_to_json());
}

void emu_control_faults_clear(struct emu_req *r)
{
  char err[256];
  json_t *empty = json_object();

  emu_fault_configure(empty, err, sizeof(err));
  json_decref(empty);
  emu_reply_json(r, 200, emu_fault_to_json());
}

void emu_control_config_get(struct emu_req *r)
{
  emu_reply_json(r, 200, emu_config_to_json());
}

void emu_control_config_set(struct emu_req *r)
{
  char err[256];

  if (emu_config_apply_json(r->json, err, sizeof(err)) != 0) {
    emu_reply_error(r, 400, "INVALID_ARGUMENT", NULL, "%s", err);
    return;
  }
  emu_jobs_kick();
  emu_reply_json(r, 200, emu_config_to_json());
}

void emu_control_tokens_revoke(struct emu_req *r)
{
  emu_reply_json(
      r, 200,
      json_pack("{s:I}", "revoked", (json_int_t)emu_token_revoke_all()));
}
