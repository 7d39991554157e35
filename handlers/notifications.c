/*
 * notifications.c — POST /v1/batch/notifications: Pub/Sub push messages of
 * Batch job state changes, so a job's state moves without waiting for the
 * next sync.
 *
 * The route is public in the route table and authenticates here, in one of
 * two ways:
 * - Google's OIDC push authentication (production): `Authorization: Bearer`
 *   holds a Google-signed ID token, verified against Google's JWKS
 *   (GPUGATE_PUBSUB_JWKS_URL) with aud GPUGATE_PUBSUB_AUDIENCE and email
 *   GPUGATE_PUBSUB_SERVICE_ACCOUNT (identity/oidc.c, identity/jwks.c);
 * - the shared secret GPUGATE_PUBSUB_PUSH_SECRET_FILE as `?token=` in the
 *   push endpoint's URL (local use only: proxies and load balancers log
 *   URLs).
 * A bearer token is only ever checked as an OIDC token.
 *
 * Pub/Sub redelivers anything not answered 2xx, so only a transient failure
 * (the database) is 503. Messages that are not job state changes of
 * gpugate's Batch jobs, and malformed ones, are acknowledged (204) and
 * counted in gpugate_pubsub_pushes_total{outcome}.
 */
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "identity/jwks.h"
#include "db/batch.h"
#include "handlers/handlers.h"
#include "handlers/notifications_parse.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "identity/oidc.h"
#include "server/problem.h"

/* Constant-time comparison of the presented secret. */
static bool secret_ok(const char *want, const char *given)
{
  size_t n;

  if (!want || !given)
    return false;
  n = strlen(want);
  if (strlen(given) != n || n == 0)
    return false;
  return CRYPTO_memcmp(want, given, n) == 0;
}

/* Google's keys, whichever of its two spellings the token's iss uses. */
static json_t *google_key(const char *iss, const char *kid, void *ud,
                          enum jwks_alg *alg, char *err, size_t errlen)
{
  const struct config *cfg = ud;

  (void)iss;
  return jwks_key(cfg->pubsub_jwks_url, kid, JWKS_COOLDOWN_S, time(NULL), alg,
                  err, errlen);
}

/* Whether the push is authenticated; the reason for the log otherwise. */
static bool authenticated(struct gg_req *req, const char **why)
{
  const struct config *cfg = req->cfg;
  const char *auth = req_header(req, "Authorization");
  struct oidc_policy want = {
      .issuers = {"https://accounts.google.com", "accounts.google.com"},
      .n_issuers = 2,
      .n_audiences = 1,
      .algs = JWKS_ALG_RS256,
      .max_lifetime_s = 7200, /* Google's push tokens live one hour */
  };

  if (!cfg) {
    *why = "not configured";
    return false;
  }
  if (auth) {
    if (strncmp(auth, "Bearer ", 7) != 0) {
      *why = "not a bearer token";
      return false;
    }
    if (!cfg->pubsub_audience[0]) {
      *why = "OIDC push authentication is not configured";
      return false;
    }
    want.audiences[0] = cfg->pubsub_audience;
    want.email = cfg->pubsub_service_account;
    want.leeway_s = cfg->identity.jwt_leeway_s;
    return oidc_verify(auth + 7, &want, time(NULL), google_key, (void *)cfg,
                       NULL, why) == 0;
  }
  if (secret_ok(cfg->pubsub_push_secret, req_query(req, "token")))
    return true;
  *why = "no OIDC token and no valid ?token= secret";
  return false;
}

static enum gg_code ack(struct gg_req *req, const char *outcome)
{
  metrics_pubsub_push(outcome);
  req_reply(req, 204, NULL);
  return GG_OK;
}

enum gg_code batch_notifications(struct gg_req *req)
{
  struct push_msg msg;
  struct db_conn *db;
  const char *why = NULL;
  char err[256];

  if (!authenticated(req, &why)) {
    metrics_pubsub_push("unauthorized");
    log_msg(LOG_INFO, "push refused: %s", why ? why : "unauthenticated");
    req_add_header(req, "WWW-Authenticate", "Bearer error=\"invalid_token\"");
    return problem_fail(req, GG_UNAUTHORIZED,
                        "The push is not authenticated: a Google-signed OIDC "
                        "token for this audience and service account, or "
                        "the endpoint's ?token= secret, is required.");
  }
  switch (notifications_parse_envelope(req->json, &msg)) {
  case PUSH_JOB_STATE:
    break;
  case PUSH_IGNORED:
    return ack(req, "ignored");
  case PUSH_FOREIGN:
    return ack(req, "foreign");
  case PUSH_MALFORMED:
    log_msg(LOG_INFO, "push acknowledged and dropped: %s", msg.why);
    return ack(req, "malformed");
  }
  db = req_db(req);
  if (!db) {
    metrics_pubsub_push("failed");
    return problem_fail(req, GG_UNAVAILABLE, "The database is not reachable.");
  }
  if (db_batch_observe(db, msg.job_name, msg.state, err, sizeof(err)) < 0) {
    metrics_pubsub_push("failed");
    log_msg(LOG_WARN, "notification for %s not applied: %s", msg.job_name, err);
    return problem_fail(req, GG_UNAVAILABLE,
                        "The state change could not be recorded; Pub/Sub "
                        "will redeliver it.");
  }
  return ack(req, "applied");
}
