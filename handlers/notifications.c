/*
 * notifications.c — POST /v1/batch/notifications: Pub/Sub push messages of
 * Batch job state changes, so a job's state moves without waiting for the
 * next sync.
 *
 * Pub/Sub push carries no gpugate JWT: the subscription's push endpoint
 * carries the shared secret (GPUGATE_PUBSUB_PUSH_SECRET_FILE) as
 * `?token=` or as `Authorization: Bearer`. Messages gpugate does not know
 * are acknowledged (204) so that Pub/Sub does not redeliver them.
 */
#include <openssl/crypto.h>
#include <string.h>

#include "db/batch.h"
#include "handlers/handlers.h"
#include "server/log.h"
#include "server/problem.h"

/* Constant-time comparison of the presented secret. */
static bool secret_ok(const char *want, const char *given)
{
  size_t n = strlen(want);

  if (!given || strlen(given) != n || n == 0)
    return false;
  return CRYPTO_memcmp(want, given, n) == 0;
}

static const char *presented(struct gg_req *req)
{
  const char *auth = req_header(req, "Authorization");

  if (auth && !strncmp(auth, "Bearer ", 7))
    return auth + 7;
  return req_query(req, "token");
}

enum gg_code batch_notifications(struct gg_req *req)
{
  const char *secret = req->cfg ? req->cfg->pubsub_push_secret : NULL;
  json_t *attrs;
  const char *name, *state, *type;
  struct db_conn *db;
  char err[256];

  if (!secret || !secret_ok(secret, presented(req)))
    return problem_fail(req, GG_UNAUTHORIZED,
                        "The push endpoint's shared secret is missing or "
                        "wrong.");
  attrs = json_object_get(json_object_get(req->json, "message"), "attributes");
  if (!json_is_object(attrs)) {
    problem_field(req, "message.attributes", "is required");
    return problem_fail(req, GG_BAD_REQUEST,
                        "The body is not a Pub/Sub push message.");
  }
  type = json_string_value(json_object_get(attrs, "Type"));
  name = json_string_value(json_object_get(attrs, "JobName"));
  state = json_string_value(json_object_get(attrs, "NewJobState"));
  if ((type && strcmp(type, "JOB_STATE_CHANGED") != 0) || !name || !state) {
    req_reply(req, 204, NULL); /* not a job state change: acknowledge */
    return GG_OK;
  }
  db = req_db(req);
  if (!db)
    return problem_fail(req, GG_UNAVAILABLE, "The database is not reachable.");
  if (db_batch_observe(db, name, state, err, sizeof(err)) < 0) {
    log_msg(LOG_WARN, "notification for %s not applied: %s", name, err);
    return problem_fail(req, GG_UNAVAILABLE,
                        "The state change could not be recorded; Pub/Sub "
                        "will redeliver it.");
  }
  req_reply(req, 204, NULL);
  return GG_OK;
}
