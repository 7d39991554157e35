/*
 * whoami.c — GET /v1/whoami: who the bearer token says the caller is (team,
 * role, subject, expiry), so a client such as the console builds its
 * navigation from the server's reading of the token instead of parsing the
 * JWT itself. Nothing is looked up: the answer is the verified token.
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
  json_t *out;

  if (!gmtime_r(&exp, &tm) ||
      strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    return problem_fail(req, GG_INTERNAL, "The token's expiry is unreadable.");
  out = json_pack("{s:o, s:s, s:o, s:s, s:I}", "team",
                  p->team[0] ? json_string(p->team) : json_null(), "role",
                  auth_role_name(p->role), "subject",
                  p->subject[0] ? json_string(p->subject) : json_null(),
                  "expires_at", when, "exp", (json_int_t)p->exp);
  if (!out)
    return problem_fail(req, GG_INTERNAL, "The answer could not be built.");
  req_reply(req, 200, out);
  return GG_OK;
}
