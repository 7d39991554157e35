/*
 * fuzz_route.c — path routing and query parsing: a method, a path and a
 * query string ("METHOD\nPATH\nQUERY") go through router_match() and, for
 * a GET route, its handler with the caller the route admits (so limit,
 * cursor and the list filters are parsed) and no database: whatever passes
 * validation stops at the database with 503. Crashes, leaks and undefined
 * behaviour are the findings; also, a matched route's parameters must be
 * NUL-terminated and fit their buffers, and a handler must never answer
 * 500.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/router.h"
#include "tests/fuzz/fake_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static int ready;
  const struct route *route = NULL;
  const uint8_t *rest, *query;
  size_t rest_n, query_n;
  char *method = NULL, *path = NULL, allow[128];
  struct gg_req req;
  enum router_result rr;

  if (!ready) {
    if (router_init() != 0)
      abort();
    ready = 1;
  }
  if (size > 4096)
    return 0;
  fuzz_split(data, size, '\n', &method, &rest, &rest_n);
  fuzz_split(rest, rest_n, '\n', &path, &query, &query_n);
  if (!method || !path)
    goto out;
  fuzz_req_init(&req);
  req.method = method;
  fuzz_req_query((const char *)query, query_n);
  rr = router_match(method, path, &route, &req, allow, sizeof(allow));
  if (rr == ROUTER_FOUND) {
    int i;
    for (i = 0; i < req.n_params; i++)
      if (!memchr(req.param_values[i], '\0', sizeof(req.param_values[i])))
        abort();
    if (!strcmp(route->method, "GET") && route->roles != 0 && !route->chunk) {
      enum gg_code code;
      if (route->roles & ROLE_ADMIN)
        req.principal.role = AUTH_ROLE_ADMIN;
      else if (route->roles & ROLE_FINANCE)
        req.principal.role = AUTH_ROLE_FINANCE;
      else
        req.principal.role = AUTH_ROLE_MEMBER;
      if (route->team_param >= 0)
        memcpy(req.principal.team, req.param_values[route->team_param],
               sizeof(req.principal.team));
      code = route->handler(&req);
      if (code == GG_INTERNAL || req.code == GG_INTERNAL)
        abort(); /* bad input is a 4xx, never a 500 */
    }
  } else if (rr == ROUTER_NO_METHOD && !allow[0]) {
    abort(); /* 405 always names what is allowed */
  }
  req_cleanup(&req);
out:
  free(method);
  free(path);
  return 0;
}
