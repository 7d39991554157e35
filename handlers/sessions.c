/*
 * sessions.c — console sessions that follow the provider (SPEC §10):
 * administrators list and end a principal's sessions (GET and DELETE
 * /v1/sessions?issuer=&subject=), and the provider ends them itself with
 * an OpenID Connect Back-Channel Logout 1.0 logout_token (POST
 * /auth/backchannel-logout). Sessions live in PostgreSQL and every request
 * reads its own, so an ended session is refused at once on every replica.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "db/sessions.h"
#include "handlers/handlers.h"
#include "identity/idp.h"
#include "lib/log.h"
#include "server/problem.h"
#include "server/session.h"

#define LOGOUT_BODY_MAX 16384 /* a logout token and its form */

/* The issuer and subject query parameters, both required; false with the
 * problem recorded. */
static bool principal_query(struct gg_req *req, const char **issuer,
                            const char **subject)
{
  *issuer = req_query(req, "issuer");
  *subject = req_query(req, "subject");
  if (!*issuer || !**issuer || strlen(*issuer) >= 256)
    problem_field(req, "issuer",
                  "is required: the principal's issuer, as "
                  "/v1/whoami shows it");
  if (!*subject || !**subject || strlen(*subject) >= 128)
    problem_field(req, "subject", "is required: the principal's sub");
  if (req->err.fields && json_array_size(req->err.fields) > 0) {
    problem_fail(req, GG_BAD_REQUEST,
                 "Name the principal: ?issuer=…&subject=….");
    return false;
  }
  return true;
}

enum gg_code sessions_list(struct gg_req *req)
{
  const char *issuer, *subject;
  json_t *items = NULL; /* new */
  enum gg_code rc;

  if (!principal_query(req, &issuer, &subject))
    return req->err.code;
  if ((rc = db_sessions_list(req_db(req), &req->err, issuer, subject,
                             &items)) != GG_OK)
    return rc;
  req_add_header(req, "Cache-Control", "no-store");
  req_reply(req, 200, json_pack("{s:o}", "items", items));
  return GG_OK;
}

enum gg_code sessions_delete(struct gg_req *req)
{
  const char *issuer, *subject;
  enum gg_code rc;
  long n = 0;

  if (!principal_query(req, &issuer, &subject))
    return req->err.code;
  if ((rc = db_sessions_end(req_db(req), &req->err, issuer, subject, &n)) !=
      GG_OK)
    return rc;
  session_forget();
  log_msg(LOG_INFO, "sessions: %ld of %s at %s ended by %s", n, subject, issuer,
          req->principal.email[0]     ? req->principal.email
          : req->principal.subject[0] ? req->principal.subject
                                      : "an administrator");
  req_reply(req, 200, json_pack("{s:I}", "ended", (json_int_t)n));
  return GG_OK;
}

/* ---- Back-Channel Logout ---- */

struct form {
  size_t n;
  char buf[LOGOUT_BODY_MAX + 1];
};

void auth_backchannel_logout_chunk(struct gg_req *req, const char *data,
                                   size_t n)
{
  struct form *f = req->stream;

  if (!f) {
    f = calloc(1, sizeof(*f));
    if (!f) {
      problem_fail(req, GG_INTERNAL, "Out of memory.");
      return;
    }
    req->stream = f;
    req->stream_free = free;
  }
  if (n > LOGOUT_BODY_MAX - f->n) {
    problem_fail(req, GG_PAYLOAD_TOO_LARGE,
                 "The request body exceeds %d bytes.", LOGOUT_BODY_MAX);
    return;
  }
  memcpy(f->buf + f->n, data, n);
  f->n += n;
  f->buf[f->n] = '\0';
}

/*
 * The value of name in the application/x-www-form-urlencoded form
 * (NUL-terminated, borrowed) into out[size]; false when absent, given
 * twice or too long. A JWT is base64url and dots, which form encoding
 * leaves as they are: a value with any other byte (an escape included) is
 * no token, and is refused here rather than decoded.
 */
static bool form_token(const char *form, const char *name, char *out,
                       size_t size)
{
  size_t nlen = strlen(name), n;
  const char *p = form, *v = NULL;

  while (p && *p) {
    const char *amp = strchr(p, '&');
    if (!strncmp(p, name, nlen) && p[nlen] == '=') {
      if (v)
        return false; /* twice: which one was meant? */
      v = p + nlen + 1;
    }
    p = amp ? amp + 1 : NULL;
  }
  if (!v)
    return false;
  n = strcspn(v, "&");
  if (n == 0 || n >= size ||
      strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                "0123456789-_.") < n)
    return false;
  memcpy(out, v, n);
  out[n] = '\0';
  return true;
}

enum gg_code auth_backchannel_logout(struct gg_req *req)
{
  const struct config_oidc *o = &req->cfg->identity.oidc;
  const struct form *f = req->stream;
  const char *ct = req_header(req, "Content-Type"), *why = NULL;
  char token[LOGOUT_BODY_MAX], sub[128], sid[256];
  struct idp *idp = NULL;
  enum gg_code rc;
  long n = 0;

  req_add_header(req, "Cache-Control", "no-store");
  if (req->err.code != GG_OK)
    return req->err.code; /* refused while the body came in */
  if (!o->client_id[0])
    return problem_fail(req, GG_NOT_FOUND,
                        "Console sign-in is not configured "
                        "(GPUGATE_OIDC_CLIENT_ID).");
  if (!ct || strncasecmp(ct, "application/x-www-form-urlencoded", 33) != 0)
    return problem_fail(req, GG_UNSUPPORTED_MEDIA,
                        "The logout request must be "
                        "application/x-www-form-urlencoded.");
  if (!f || !form_token(f->buf, "logout_token", token, sizeof(token))) {
    problem_field(req, "logout_token", "is required, once");
    return problem_fail(req, GG_BAD_REQUEST, "No logout_token.");
  }
  idp = idp_new(o, req->cfg->identity.jwt_leeway_s);
  if (!idp || idp_verify_logout_token(idp, token, time(NULL), sub, sizeof(sub),
                                      sid, sizeof(sid), &why) != 0) {
    problem_field(req, "logout_token", "%s", why ? why : "out of memory");
    rc = problem_fail(req, GG_BAD_REQUEST, "The logout token is invalid.");
    goto out;
  }
  if ((rc = db_sessions_logout(req_db(req), &req->err, o->issuers[0], sid, sub,
                               &n)) != GG_OK)
    goto out;
  session_forget();
  log_msg(LOG_INFO, "back-channel logout: %ld session(s) ended", n);
  req_reply(req, 200, NULL);
  rc = GG_OK;
out:
  idp_free(idp);
  return rc;
}
