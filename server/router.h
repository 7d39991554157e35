/*
 * router.h — the route table (server/routes.def) compiled once at start-up
 * into segment lists, and the matcher: 404 when no pattern matches the path,
 * 405 (with the allowed methods) when only the method is wrong.
 */
#ifndef GPUGATE_ROUTER_H
#define GPUGATE_ROUTER_H

#include <stddef.h>

#include "server/req.h"

#define ROUTER_MAX_SEGMENTS 8

/* Who may call a route (ROLE_* are enum auth_role bits). */
#define PUBLIC 0u
#define ROLE_MEMBER ((unsigned)AUTH_ROLE_MEMBER)
#define ROLE_ADMIN ((unsigned)AUTH_ROLE_ADMIN)
#define ROLE_FINANCE ((unsigned)AUTH_ROLE_FINANCE)
#define ROLE_METRICS ((unsigned)AUTH_ROLE_METRICS)
#define ROLE_ANY (ROLE_MEMBER | ROLE_ADMIN | ROLE_FINANCE)
/* Public, but a bearer token, when one is sent, is verified and must carry
 * one of the route's roles (GET /metrics: more with a token). */
#define TOKEN_OPTIONAL (1u << 16)

/* Largest accepted request body. */
#define BODY_NONE ((size_t)0)
#define BODY_64K ((size_t)64 * 1024)
#define BODY_1MIB ((size_t)1024 * 1024)

typedef enum gg_code (*route_handler)(struct gg_req *req);

/* A streaming route's body handler: called for each piece of the body
 * (after decompression), before the route's handler finishes the request.
 * It records failures with problem_fail(); after one, no more is fed. */
typedef void (*route_chunk)(struct gg_req *req, const char *data, size_t n);

struct route {
  const char *method;
  const char *pattern;
  route_handler handler;
  const char *name; /* handler name: the OpenAPI operationId */
  unsigned roles;
  size_t body_max;
  /* compiled by router_init() */
  int n_segments;
  const char *segments[ROUTER_MAX_SEGMENTS]; /* NULL for a {param} */
  char seg_store[ROUTER_MAX_SEGMENTS][64];
  const char *param_names[ROUTER_MAX_SEGMENTS];
  char param_store[ROUTER_MAX_SEGMENTS][32];
  int team_param;    /* index into req params of {team}, or -1 */
  route_chunk chunk; /* streaming routes (streams.def), else NULL */
};

enum router_result {
  ROUTER_FOUND,
  ROUTER_NO_PATH,
  ROUTER_NO_METHOD,
  ROUTER_BAD_PATH
};

/* Compile the table. Returns 0, or -1 on a malformed pattern (a bug). */
int router_init(void);

/*
 * Match method and path (no query string). On ROUTER_FOUND sets *out and
 * fills req's path parameters. On ROUTER_NO_METHOD writes the allowed
 * methods ("GET, PUT") into allow. ROUTER_BAD_PATH: a parameter is too long
 * or the path has too many segments. Thread-safe after router_init().
 */
enum router_result router_match(const char *method, const char *path,
                                const struct route **out, struct gg_req *req,
                                char *allow, size_t allowlen);

/* The whole table, for the OpenAPI comparison and metrics. */
const struct route *router_routes(size_t *n);

#endif
