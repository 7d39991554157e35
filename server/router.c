/*
 * router.c — compiles server/routes.def and matches requests against it.
 *
 * Patterns are split into segments once; a request path is split the same
 * way and compared segment by segment. With a few dozen routes a linear
 * scan is faster than anything cleverer and keeps 404/405 exact.
 */
#include <stdio.h>
#include <string.h>

#include "handlers/handlers.h"
#include "server/router.h"

static struct route routes[] = {
#define ROUTE(m, p, h, r, b)                                                   \
  {#m, p, h, #h, r, b, 0, {0}, {{0}}, {0}, {{0}}, -1, NULL},
#include "server/routes.def"
#undef ROUTE
};

static const size_t n_routes = sizeof(routes) / sizeof(routes[0]);

/* Longest path segment looked at; parameters longer than a name can be
 * reach the handler empty, so it answers with the field at fault. */
#define SEGMENT_MAX 256

/* Split path into at most max segments in store; -1 if too many/too long. */
static int split(const char *path, char store[][SEGMENT_MAX], int max,
                 size_t seglen)
{
  int n = 0;
  const char *p = path;

  if (*p != '/')
    return -1;
  while (*p == '/') {
    size_t len;
    p++;
    len = strcspn(p, "/");
    if (len == 0 && *p == '\0')
      break; /* trailing slash */
    if (n == max || len >= seglen || len == 0)
      return -1;
    memcpy(store[n], p, len);
    store[n][len] = '\0';
    n++;
    p += len;
  }
  return n;
}

/* Streaming routes take their body through a chunk handler. */
static const struct {
  const char *handler;
  route_chunk chunk;
} streams[] = {
#define STREAM(h, c) {#h, c},
#include "server/streams.def"
#undef STREAM
    {NULL, NULL}};

int router_init(void)
{
  size_t i, k;
  int s;

  for (i = 0; i < n_routes; i++) {
    struct route *r = &routes[i];
    for (k = 0; streams[k].handler; k++)
      if (!strcmp(streams[k].handler, r->name))
        r->chunk = streams[k].chunk;
    char segs[ROUTER_MAX_SEGMENTS][SEGMENT_MAX];
    int n =
        split(r->pattern, segs, ROUTER_MAX_SEGMENTS, sizeof(r->seg_store[0]));
    int params = 0;

    if (n < 0)
      return -1;
    r->n_segments = n;
    r->team_param = -1;
    for (s = 0; s < n; s++) {
      char *seg = r->seg_store[s];
      size_t len = strlen(segs[s]);
      memcpy(seg, segs[s], len + 1);
      if (seg[0] == '{' && seg[len - 1] == '}') {
        if (params == REQ_MAX_PARAMS || len - 2 >= sizeof(r->param_store[0]))
          return -1;
        memcpy(r->param_store[params], seg + 1, len - 2);
        r->param_store[params][len - 2] = '\0';
        r->param_names[params] = r->param_store[params];
        if (!strcmp(r->param_store[params], "team"))
          r->team_param = params;
        r->segments[s] = NULL;
        params++;
      } else {
        r->segments[s] = seg;
      }
    }
  }
  return 0;
}

static int matches(const struct route *r, char segs[][SEGMENT_MAX], int n)
{
  int s;

  if (r->n_segments != n)
    return 0;
  for (s = 0; s < n; s++)
    if (r->segments[s] && strcmp(r->segments[s], segs[s]) != 0)
      return 0;
  return 1;
}

enum router_result router_match(const char *method, const char *path,
                                const struct route **out, struct gg_req *req,
                                char *allow, size_t allowlen)
{
  char segs[ROUTER_MAX_SEGMENTS][SEGMENT_MAX];
  int n = split(path, segs, ROUTER_MAX_SEGMENTS, SEGMENT_MAX);
  size_t i, used = 0;
  int s, path_found = 0;

  if (n < 0)
    return ROUTER_BAD_PATH;
  if (allowlen)
    allow[0] = '\0';
  for (i = 0; i < n_routes; i++) {
    const struct route *r = &routes[i];
    if (!matches(r, segs, n))
      continue;
    if (strcmp(r->method, method) == 0) {
      int p = 0;
      for (s = 0; s < n; s++) {
        if (r->segments[s])
          continue;
        req->param_names[p] = r->param_names[p];
        if (strlen(segs[s]) < sizeof(req->param_values[p]))
          memcpy(req->param_values[p], segs[s], strlen(segs[s]) + 1);
        else
          req->param_values[p][0] = '\0'; /* too long to be a name */
        p++;
      }
      req->n_params = p;
      *out = r;
      return ROUTER_FOUND;
    }
    path_found = 1;
    if (used < allowlen) {
      int w = snprintf(allow + used, allowlen - used, "%s%s", used ? ", " : "",
                       r->method);
      if (w > 0)
        used += (size_t)w;
    }
  }
  return path_found ? ROUTER_NO_METHOD : ROUTER_NO_PATH;
}

const struct route *router_routes(size_t *n)
{
  *n = n_routes;
  return routes;
}
