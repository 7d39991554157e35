/*
 * fuzz_validate.c — job and administrator bodies: the first input byte
 * picks one of the route table's JSON-body routes (job submission, every
 * administrator PUT, ...), the rest is the body. It is parsed as the server
 * parses bodies (duplicate keys refused, an object required) and given to
 * the route's handler as an admin (or, for team routes, a member of team
 * "team-a") with no database: validation runs in full, a valid body stops
 * at the database with 503. A crash, a leak, undefined behaviour or a 500
 * for any body is a finding.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/problem.h"
#include "server/router.h"
#include "tests/fuzz/fake_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_TARGETS 64

/* A concrete path for each body route: every {param} is "team-a". */
static char paths[MAX_TARGETS][256];
static const struct route *targets[MAX_TARGETS];
static size_t n_targets;

static void find_targets(void)
{
  const struct route *all;
  size_t n, i;

  if (router_init() != 0)
    abort();
  all = router_routes(&n);
  for (i = 0; i < n && n_targets < MAX_TARGETS; i++) {
    const struct route *r = &all[i];
    const char *p;
    size_t o = 0;
    if (r->body_max == 0 || r->chunk || r->roles == 0)
      continue;
    for (p = r->pattern; *p && o + 8 < sizeof(paths[0]); p++) {
      if (*p == '{') {
        memcpy(paths[n_targets] + o, "team-a", 6);
        o += 6;
        while (*p && *p != '}')
          p++;
      } else {
        paths[n_targets][o++] = *p;
      }
    }
    paths[n_targets][o] = '\0';
    targets[n_targets++] = r;
  }
  if (n_targets == 0)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const struct route *route;
  struct gg_req req;
  json_error_t jerr;
  char allow[128];
  enum gg_code code;
  size_t t;

  if (!n_targets)
    find_targets();
  if (size < 1 || size > 65536)
    return 0;
  t = data[0] % n_targets;
  fuzz_req_init(&req);
  req.method = targets[t]->method;
  if (router_match(req.method, paths[t], &route, &req, allow, sizeof(allow)) !=
          ROUTER_FOUND ||
      route != targets[t])
    abort(); /* the table's own pattern must route to itself */
  req.json = json_loadb((const char *)data + 1, size - 1,
                        JSON_REJECT_DUPLICATES, &jerr);
  if (!json_is_object(req.json))
    goto out;
  if (route->team_param >= 0 && (route->roles & ROLE_MEMBER)) {
    req.principal.role = AUTH_ROLE_MEMBER;
    snprintf(req.principal.team, sizeof(req.principal.team), "team-a");
  } else {
    req.principal.role =
        (route->roles & ROLE_ADMIN) ? AUTH_ROLE_ADMIN : AUTH_ROLE_FINANCE;
  }
  code = route->handler(&req);
  if (code == GG_INTERNAL || req.err.code == GG_INTERNAL)
    abort(); /* a bad body is a 4xx, never a 500 */
  if (code == GG_BAD_REQUEST && problem_nfields(&req) == 0 &&
      !req.err.detail[0])
    abort(); /* a 400 says why */
out:
  req_cleanup(&req);
  return 0;
}
