/*
 * whoami.c — GET /v1/whoami: who the caller is (SPEC §9: issuer, subject,
 * verified email, grants, expiry, and whether a token or a console session
 * says so; team and role of the grant in effect besides), so a client such
 * as the console builds its navigation from the server's reading of the
 * credentials instead of parsing a JWT itself. Nothing is looked up: the
 * answer is the verified token and the bindings cached with it.
 */
#include <stdio.h>
#include <time.h>

#include "handlers/handlers.h"
#include "server/problem.h"

enum gg_code whoami_get(struct gg_req *req)
{
  const struct auth_principal *p = &req->principal;
  time_t exp = (time_t)p->exp;
  struct tm tm;
  char when[32];
  json_t *out, *grants = json_array();
  int i;

  if (!gmtime_r(&exp, &tm) ||
      strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
    json_decref(grants);
    return problem_fail(req, GG_INTERNAL, "The token's expiry is unreadable.");
  }
  for (i = 0; i < p->n_grants; i++)
    json_array_append_new(
        grants, json_pack("{s:s, s:o}", "role",
                          auth_role_name(p->grants[i].role), "team",
                          p->grants[i].team[0] ? json_string(p->grants[i].team)
                                               : json_null()));
  out = json_pack(
      "{s:o, s:o, s:o, s:o, s:I, s:s, s:o, s:s, s:s}", "issuer",
      p->issuer[0] ? json_string(p->issuer) : json_null(), "subject",
      p->subject[0] ? json_string(p->subject) : json_null(), "email",
      p->email[0] ? json_string(p->email) : json_null(), "grants", grants,
      "exp", (json_int_t)p->exp, "via", p->session ? "session" : "token",
      "team", p->team[0] ? json_string(p->team) : json_null(), "role",
      auth_role_name(p->role), "expires_at", when);
  if (!out)
    return problem_fail(req, GG_INTERNAL, "The answer could not be built.");
  req_reply(req, 200, out);
  return GG_OK;
}
