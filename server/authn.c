/*
 * authn.c — who a request's caller is and whether it may call the route:
 * the bearer token (identity/auth.c, its verifications cached) or the
 * console's session cookie (server/session.c), the grant of the caller's
 * access bindings that the route's roles allow, and the per-team (or
 * per-role) request rate. Split from server/http.c, whose pipeline calls
 * authn_request() once a request's route is known.
 */
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "server/authn.h"
#include "server/problem.h"
#include "server/router.h"
#include "server/session.h"

/*
 * The grant of p that lets it call route r (for team, the route's {team},
 * or NULL): one whose role the route allows and, for a member, of that
 * team. Roles that reach every team come first (admin, then finance, then
 * metrics), so a principal holding several grants acts with the widest.
 * NULL when none does; *other_team tells whether a member grant of
 * another team would have.
 */
static const struct auth_grant *grant_for(const struct auth_principal *p,
                                          const struct route *r,
                                          const char *team, bool *other_team)
{
  static const enum auth_role order[] = {AUTH_ROLE_ADMIN, AUTH_ROLE_FINANCE,
                                         AUTH_ROLE_METRICS, AUTH_ROLE_MEMBER};
  size_t o;
  int i;

  *other_team = false;
  for (o = 0; o < sizeof(order) / sizeof(order[0]); o++) {
    if (!(r->roles & (unsigned)order[o]))
      continue;
    for (i = 0; i < p->n_grants; i++) {
      const struct auth_grant *g = &p->grants[i];
      if (g->role != order[o])
        continue;
      if (g->role == AUTH_ROLE_MEMBER && team && strcmp(g->team, team) != 0) {
        *other_team = true;
        continue;
      }
      return g;
    }
  }
  return NULL;
}

/* The caller's name for messages and logs: verified email, else sub. */
static const char *who(const struct auth_principal *p)
{
  return p->email[0] ? p->email : p->subject[0] ? p->subject : "the caller";
}

enum gg_code authn_request(const struct auth_ctx *auth,
                           struct ratelimit *limiter, struct gg_req *req,
                           long long now_us)
{
  const char *hdr = req_header(req, "Authorization");
  const char *sid = req_cookie(req, SESSION_COOKIE);
  const char *team = NULL;
  const struct auth_grant *g;
  bool other_team = false;
  enum gg_code code;
  char why[128];

  if (!hdr && sid) {
    /* the console's session (a bearer token, when sent, takes precedence) */
    if ((code = session_authenticate(req, sid)) != GG_OK)
      return code;
  } else if (!hdr || strncasecmp(hdr, "Bearer ", 7) != 0) {
    return problem_fail(req, GG_UNAUTHORIZED,
                        "A bearer token is required in the Authorization "
                        "header.");
  } else {
    hdr += 7;
    while (*hdr == ' ')
      hdr++;
    if (auth_verify(auth, hdr, time(NULL), &req->principal, why, sizeof(why)) !=
        0)
      return problem_fail(req, GG_UNAUTHORIZED,
                          "The bearer token is invalid: %s.", why);
  }
  if (req->principal.n_grants == 0)
    return problem_fail(req, GG_FORBIDDEN,
                        "The token of \"%.200s\" (issuer \"%.200s\") is "
                        "valid but matches no access binding: ask an "
                        "administrator to bind its group, email or "
                        "subject to a role.",
                        who(&req->principal), req->principal.issuer);
  if (req->route->team_param >= 0)
    team = req->param_values[req->route->team_param];
  g = grant_for(&req->principal, req->route, team, &other_team);
  if (g) {
    /* the grant in effect: what handlers read as the caller's role */
    req->principal.role = g->role;
    memcpy(req->principal.team, g->team, sizeof(req->principal.team));
  }
  snprintf(req->team_for_log, sizeof(req->team_for_log), "%s",
           req->principal.team);
  {
    long retry = 1;
    char key[64];
    /* a token without a team (admin, finance) counts against its role */
    if (req->principal.team[0])
      snprintf(key, sizeof(key), "%s", req->principal.team);
    else
      snprintf(key, sizeof(key), "(%s)", auth_role_name(req->principal.role));
    if (!ratelimit_take(limiter, key, now_us, &retry)) {
      char v[24];
      snprintf(v, sizeof(v), "%ld", retry);
      req_add_header(req, MHD_HTTP_HEADER_RETRY_AFTER, v);
      return problem_fail(req, GG_TOO_MANY_REQUESTS,
                          "\"%s\" is over its request rate; retry after %ld "
                          "s.",
                          key, retry);
    }
  }
  /* members see only their own teams; others' objects do not exist */
  if (!g && other_team)
    return problem_fail(req, GG_NOT_FOUND, "Team \"%s\" was not found.", team);
  if (!g)
    return problem_fail(req, GG_FORBIDDEN, "Role \"%s\" may not call %s %s.",
                        auth_role_name(req->principal.role), req->method,
                        req->route->pattern);
  return GG_OK;
}
