/*
 * fuzz_route.c — path routing and query parsing: a method, a path and a
 * query string ("METHOD\nPATH\nQUERY") go through router_match() and, for
 * a GET route, its handler with the caller the route admits (so limit,
 * cursor and the list filters are parsed) and no database: whatever passes
 * validation stops at the database with 503 (the cursor key is fixed, so
 * cursors are opened and checked). Crashes, leaks and undefined behaviour
 * are the findings; also, a matched route's parameters must be
 * NUL-terminated and fit their buffers, a handler must never answer 500,
 * and a cursor sealed for a list opens to its position for that list only.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cursor.h"
#include "server/router.h"
#include "tests/fuzz/fake_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A position sealed for a scope opens to itself, and not for another. */
static void cursor_round_trip(const char *position, const char *scope)
{
  static const unsigned char key[CURSOR_KEY_LEN] = {1, 2, 3};
  static const unsigned char iv[12] = {9, 8, 7};
  char sealed[CURSOR_MAX + 1], back[CURSOR_POSITION_MAX + 1];
  size_t n = strlen(position);

  if (n == 0 || n > CURSOR_POSITION_MAX ||
      cursor_seal(key, scope, position, iv, sealed, sizeof(sealed)) != 0)
    return;
  if (cursor_open(key, scope, sealed, back, sizeof(back)) != 0 ||
      strcmp(back, position) != 0)
    abort();
  if (cursor_open(key, "another list", sealed, back, sizeof(back)) == 0 &&
      strcmp(scope, "another list") != 0)
    abort();
}

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
  if (strlen(path) < CURSOR_SCOPE_MAX)
    cursor_round_trip(method, path);
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
      if (code == GG_INTERNAL || req.err.code == GG_INTERNAL)
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
