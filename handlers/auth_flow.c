/*
 * auth_flow.c — the console's single sign-on, server-side (a backend for
 * the frontend, SPEC §9): GET /auth/login sends the browser to the
 * provider (authorization code with PKCE S256, state and nonce kept in
 * PostgreSQL with the hash of the flow cookie it sets, so that only the
 * browser that started a sign-in can finish it: RFC 9700 §4.7.1),
 * GET /auth/callback exchanges the code, verifies the ID
 * token and opens a session whose id only the browser's HttpOnly cookie
 * holds, POST /auth/logout ends it on every replica. No token ever
 * reaches the page.
 */
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "identity/code_exchange.h"
#include "identity/discovery.h"
#include "gcp/http.h"
#include "db/sessions.h"
#include "handlers/handlers.h"
#include "lib/b64url.h"
#include "identity/idp.h"
#include "lib/log.h"
#include "server/problem.h"
#include "server/ratelimit.h"
#include "server/session.h"

#define FLOW_COOKIE "__Host-gpugate_flow"
#define FLOW_CLEAR                                                             \
  FLOW_COOKIE "=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax"
#define RANDOM_BYTES 32
/* sign-in requests (/auth/login, /auth/callback) per client address: a
 * person needs two per sign-in; a script filling auth_flows is slowed */
#define SIGNIN_RPS 2
#define SIGNIN_BURST 30
#define TOKEN_CHARS 44 /* 32 bytes as unpadded base64url, and its NUL */

/* 32 random bytes as base64url into out[TOKEN_CHARS]; false on failure. */
static bool random_token(char out[TOKEN_CHARS])
{
  unsigned char b[RANDOM_BYTES];

  return getrandom(b, sizeof(b), 0) == (ssize_t)sizeof(b) &&
         b64url_encode(b, sizeof(b), out, TOKEN_CHARS) > 0;
}

static enum gg_code not_configured(struct gg_req *req)
{
  return problem_fail(req, GG_NOT_FOUND,
                      "Console sign-in is not configured "
                      "(GPUGATE_OIDC_CLIENT_ID).");
}

static struct ratelimit *signin_limit; /* per client address */
static pthread_once_t signin_once = PTHREAD_ONCE_INIT;

static void signin_init(void)
{
  signin_limit = ratelimit_new(SIGNIN_RPS, SIGNIN_BURST);
}

/* Whether this client may make one more sign-in request now; otherwise a
 * 429 with Retry-After is recorded on req. */
static bool signin_allowed(struct gg_req *req)
{
  struct timespec ts;
  long retry = 1;
  char v[24];

  pthread_once(&signin_once, signin_init);
  clock_gettime(CLOCK_MONOTONIC, &ts);
  if (!req->client_text[0] || !signin_limit ||
      ratelimit_take(signin_limit, req->client_text,
                     (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000,
                     &retry))
    return true;
  snprintf(v, sizeof(v), "%ld", retry);
  req_add_header(req, "Retry-After", v);
  problem_fail(req, GG_TOO_MANY_REQUESTS,
               "Too many sign-in requests from this address; retry after %ld "
               "s.",
               retry);
  return false;
}

/* The provider's metadata, or a 503 recorded on req (with Retry-After
 * while the first fetch of it is still under way). */
static bool metadata(struct gg_req *req, struct discovery_doc *doc)
{
  char err[256] = "";

  if (discovery_get(req->cfg->identity.oidc.issuers[0], time(NULL), doc, err,
                    sizeof(err)) == 0) {
    if (doc->authorization_endpoint[0] && doc->token_endpoint[0])
      return true;
    snprintf(err, sizeof(err),
             "the discovery document has no authorization_endpoint or "
             "token_endpoint");
  }
  log_msg(LOG_WARN, "sign-in: %s", err);
  if (!strcmp(err, DISCOVERY_ERR_FETCHING)) {
    req_add_header(req, "Retry-After", "2");
    problem_fail(req, GG_UNAVAILABLE,
                 "The identity provider's metadata is still being fetched; "
                 "retry in a few seconds.");
    return false;
  }
  problem_fail(req, GG_UNAVAILABLE,
               "The identity provider cannot be reached; try again shortly.");
  return false;
}

/* The callback reached without the flow cookie of a sign-in started in
 * this browser: a page a person can read, and nothing opened. */
static enum gg_code not_this_browser(struct gg_req *req)
{
  static const char page[] =
      "<!doctype html><meta charset=utf-8><title>Sign-in refused</title>"
      "<h1>Sign-in refused</h1><p>This sign-in was not started in this "
      "browser (or it was started more than ten minutes ago), so it cannot "
      "be finished here: someone may have sent you a link to sign you in as "
      "them. <a href=\"/auth/login\">Sign in yourself</a>.</p>\n";

  req_add_header(req, "Set-Cookie", FLOW_CLEAR);
  req_add_header(req, "Cache-Control", "no-store");
  return req_reply_text(req, 400, "text/html; charset=utf-8", page,
                        sizeof(page) - 1);
}

enum gg_code auth_login(struct gg_req *req)
{
  const struct config_oidc *o = &req->cfg->identity.oidc;
  /* prompt=none: the console's silent return when a session without a
   * refresh token ended with its ID token (the provider answers at once,
   * with a code or with login_required) */
  const char *prompt = req_query(req, "prompt");
  char state[TOKEN_CHARS], nonce[TOKEN_CHARS], verifier[TOKEN_CHARS];
  char flow[TOKEN_CHARS], flow_hash[SESSION_HASH_HEX], cookie[160];
  char challenge[TOKEN_CHARS], url[2048], redirect[300];
  unsigned char digest[SHA256_DIGEST_LENGTH];
  struct discovery_doc doc;
  enum gg_code code;

  if (!o->client_id[0])
    return not_configured(req);
  if (!signin_allowed(req))
    return req->err.code;
  if (prompt && strcmp(prompt, "none") != 0) {
    problem_field(req, "prompt", "may only be \"none\"");
    return problem_fail(req, GG_BAD_REQUEST, "Unknown sign-in prompt.");
  }
  if (!metadata(req, &doc))
    return req->err.code;
  if (!random_token(state) || !random_token(nonce) || !random_token(verifier) ||
      !random_token(flow))
    return problem_fail(req, GG_INTERNAL, "No randomness for the sign-in.");
  SHA256((const unsigned char *)verifier, strlen(verifier), digest);
  b64url_encode(digest, sizeof(digest), challenge, sizeof(challenge));
  session_hash(flow, flow_hash);
  code = db_flow_put(req_db(req), &req->err, state, nonce, verifier, flow_hash);
  if (code == GG_UNAVAILABLE && req->err.code == GG_OK) {
    req_add_header(req, "Retry-After", "60");
    return problem_fail(req, GG_UNAVAILABLE,
                        "Too many sign-ins are in flight; try again in a "
                        "minute.");
  }
  if (code != GG_OK)
    return code;
  snprintf(redirect, sizeof(redirect), "%s/auth/callback", o->public_url);
  snprintf(url, sizeof(url),
           "%s%sresponse_type=code&client_id=", doc.authorization_endpoint,
           strchr(doc.authorization_endpoint, '?') ? "&" : "?");
  if (batch_http_escape(url, sizeof(url), o->client_id) ||
      strlen(url) + 32 >= sizeof(url))
    return problem_fail(req, GG_INTERNAL, "The sign-in URL does not fit.");
  strncat(url, "&redirect_uri=", sizeof(url) - strlen(url) - 1);
  if (batch_http_escape(url, sizeof(url), redirect))
    return problem_fail(req, GG_INTERNAL, "The sign-in URL does not fit.");
  snprintf(url + strlen(url), sizeof(url) - strlen(url),
           "&scope=openid%%20email%%20profile%s&state=%s&nonce=%s"
           "&code_challenge=%s&code_challenge_method=S256%s",
           doc.groups_scope ? "%20groups" : "", state, nonce, challenge,
           prompt ? "&prompt=none" : "");
  /* Lax: the provider's redirect back is a top-level cross-site GET */
  snprintf(cookie, sizeof(cookie),
           FLOW_COOKIE "=%s; Path=/; Max-Age=%d; HttpOnly; Secure; "
                       "SameSite=Lax",
           flow, DB_FLOW_TTL_S);
  req_add_header(req, "Set-Cookie", cookie);
  req_add_header(req, "Location", url);
  req_add_header(req, "Cache-Control", "no-store");
  req_reply(req, 302, NULL);
  return GG_OK;
}

/* Whether error is a provider's answer to prompt=none that needs the
 * person (OIDC Core §3.1.2.6). */
static bool silent_refused(const char *error)
{
  static const char *const needs[] = {"login_required", "interaction_required",
                                      "consent_required",
                                      "account_selection_required"};
  size_t i;

  for (i = 0; i < sizeof(needs) / sizeof(needs[0]); i++)
    if (!strcmp(error, needs[i]))
      return true;
  return false;
}

enum gg_code auth_callback(struct gg_req *req)
{
  const struct config_oidc *o = &req->cfg->identity.oidc;
  const char *state = req_query(req, "state"), *code = req_query(req, "code");
  const char *error = req_query(req, "error"), *why = NULL;
  const char *flow = req_cookie(req, FLOW_COOKIE);
  char flow_hash[SESSION_HASH_HEX], nonce[TOKEN_CHARS + 8],
      verifier[TOKEN_CHARS + 8], redirect[300];
  char err[256], sid[TOKEN_CHARS], hash[SESSION_HASH_HEX], cookie[256];
  struct db_session s = {0};
  struct auth_principal p;
  struct discovery_doc doc;
  struct code_exchange x;
  struct idp *idp = NULL;
  json_t *groups = NULL;
  char *id_token = NULL;
  enum gg_code rc;
  long ttl;

  if (!o->client_id[0])
    return not_configured(req);
  if (!signin_allowed(req))
    return req->err.code;
  if (error && silent_refused(error)) {
    /* a prompt=none return the provider could not answer without the
     * person: to the console's sign-in page */
    req_add_header(req, "Set-Cookie",
                   FLOW_COOKIE "=; Path=/; Max-Age=0; HttpOnly; Secure; "
                               "SameSite=Lax");
    req_add_header(req, "Location", "/#/signin");
    req_add_header(req, "Cache-Control", "no-store");
    req_reply(req, 302, NULL);
    return GG_OK;
  }
  if (error) {
    problem_field(req, "error", "the provider answered \"%.64s\"", error);
    return problem_fail(req, GG_UNAUTHORIZED,
                        "The identity provider did not sign you in.");
  }
  if (!state || !code || strlen(state) >= TOKEN_CHARS + 8 ||
      strlen(code) > 2048) {
    problem_field(req,
                  !state || strlen(state) >= TOKEN_CHARS + 8 ? "state" : "code",
                  "is required as the provider gives it");
    return problem_fail(req, GG_BAD_REQUEST,
                        "The callback lacks the provider's answer.");
  }
  if (!flow || !flow[0])
    return not_this_browser(req);
  session_hash(flow, flow_hash);
  req_add_header(req, "Set-Cookie", FLOW_CLEAR); /* used, whatever comes */
  rc = db_flow_take(req_db(req), &req->err, state, flow_hash, nonce,
                    sizeof(nonce), verifier, sizeof(verifier));
  if (rc == GG_NOT_FOUND) {
    problem_field(req, "state",
                  "is unknown, used, older than %d s or of another browser",
                  DB_FLOW_TTL_S);
    return problem_fail(req, GG_BAD_REQUEST,
                        "This sign-in was not started here or has expired; "
                        "sign in again.");
  }
  if (rc != GG_OK)
    return rc;
  if (!metadata(req, &doc))
    return req->err.code;
  snprintf(redirect, sizeof(redirect), "%s/auth/callback", o->public_url);
  x = (struct code_exchange){doc.token_endpoint, o->client_id,
                             o->client_secret,   code,
                             verifier,           redirect};
  id_token = code_exchange_id_token(&x, s.refresh_token,
                                    sizeof(s.refresh_token), err, sizeof(err));
  if (!id_token) {
    log_msg(LOG_WARN, "sign-in: %s", err);
    rc = problem_fail(req, GG_UNAUTHORIZED,
                      "The identity provider did not complete the sign-in.");
    goto out;
  }
  idp = idp_new(o, req->cfg->identity.jwt_leeway_s);
  if (!idp || idp_verify_id_token(idp, id_token, nonce, false, time(NULL), &p,
                                  &groups, s.sid, sizeof(s.sid), &why) != 0) {
    rc = problem_fail(req, GG_UNAUTHORIZED,
                      "The identity provider's ID token is invalid: %s.",
                      why ? why : "out of memory");
    goto out;
  }
  if (!random_token(sid)) {
    rc = problem_fail(req, GG_INTERNAL, "No randomness for the session.");
    goto out;
  }
  session_hash(sid, hash);
  /* the refresh token is stored only sealed; without a secret to seal it
   * with, it is not kept (the session then ends with its ID token) */
  if (s.refresh_token[0] &&
      session_seal_refresh(req->cfg, hash, s.refresh_token, s.refresh_sealed,
                           sizeof(s.refresh_sealed)) != 0) {
    log_msg(LOG_WARN,
            "sign-in: the provider's refresh token cannot be sealed "
            "(no GPUGATE_JWT_HS256_SECRET_FILE nor client secret): not "
            "kept");
    s.refresh_token[0] = '\0';
  }
  snprintf(s.issuer, sizeof(s.issuer), "%s", p.issuer);
  snprintf(s.subject, sizeof(s.subject), "%s", p.subject);
  snprintf(s.email, sizeof(s.email), "%s", p.email);
  snprintf(s.nonce, sizeof(s.nonce), "%s", nonce);
  s.groups = groups;
  /* re-validated with the refresh token every GPUGATE_SESSION_REFRESH_S
   * (server/session.c); without one, the session lasts no longer than the
   * ID token that opened it */
  ttl = o->session_ttl_s;
  if (!s.refresh_token[0] && p.exp - (long long)time(NULL) < ttl)
    ttl = (long)(p.exp - (long long)time(NULL));
  if (ttl < 1)
    ttl = 1;
  if ((rc = db_session_put(req_db(req), &req->err, hash, &s, ttl)) != GG_OK)
    goto out;
  snprintf(cookie, sizeof(cookie),
           SESSION_COOKIE "=%s; Path=/; Max-Age=%ld; HttpOnly; Secure; "
                          "SameSite=Strict",
           sid, ttl);
  req_add_header(req, "Set-Cookie", cookie);
  req_add_header(req, "Location", "/");
  req_add_header(req, "Cache-Control", "no-store");
  log_msg(LOG_INFO, "sign-in: session opened for %s",
          p.email[0] ? p.email : p.subject);
  req_reply(req, 302, NULL);
  rc = GG_OK;
out:
  explicit_bzero(s.refresh_token, sizeof(s.refresh_token));
  idp_free(idp);
  json_decref(groups);
  free(id_token);
  return rc;
}

enum gg_code auth_logout(struct gg_req *req)
{
  const char *sid = req_cookie(req, SESSION_COOKIE);
  char hash[SESSION_HASH_HEX];
  enum gg_code rc;

  if (!session_csrf_ok(req))
    return problem_fail(req, GG_FORBIDDEN,
                        "Signing out needs the header X-GPUGate-CSRF: 1.");
  if (sid) {
    session_hash(sid, hash);
    if ((rc = db_session_delete(req_db(req), &req->err, hash)) != GG_OK)
      return rc;
    session_forget();
  }
  req_add_header(req, "Set-Cookie",
                 SESSION_COOKIE "=; Path=/; Max-Age=0; HttpOnly; Secure; "
                                "SameSite=Strict");
  req_reply(req, 204, NULL);
  return GG_OK;
}
