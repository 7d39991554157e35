/*
 * admin.c — get / list / put / delete for administrator objects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/admin.h"
#include "lib/log.h"
#include "server/problem.h"

/* Every administrator change through the API is logged with who made it
 * (`gpugate apply` prints its own summary). */
static void log_change(struct gg_req *req, const struct admin_kind *k,
                       const char *what)
{
  const char *actor = req_actor(req);
  const char *team = k->team_param ? req_param(req, k->team_param) : NULL;

  if (!req->conn)
    return;
  log_msg(LOG_INFO, "admin: %s %s \"%s%s%s\" by %s", what,
          db_kind_name(k->kind), team ? team : "", team ? "/" : "",
          req_param(req, k->name_param),
          actor ? actor : auth_role_name(req->principal.role));
}

static void set_etag(struct gg_req *req, long long version)
{
  char etag[32];

  snprintf(etag, sizeof(etag), "\"%lld\"", version);
  req_add_header(req, "ETag", etag);
}

/* If-Match: "*" or a comma-separated list of strong ETags ("12"). */
static bool parse_if_match(struct gg_req *req, struct db_if_match *m)
{
  const char *h = req_header(req, "If-Match");
  const char *p = h;

  memset(m, 0, sizeof(*m));
  if (!h)
    return true;
  m->present = true;
  while (*p == ' ')
    p++;
  if (!strcmp(p, "*")) {
    m->any = true;
    return true;
  }
  while (*p) {
    char *end;
    long long v;
    while (*p == ' ' || *p == ',')
      p++;
    if (!*p)
      break;
    if (!strncmp(p, "W/", 2)) {
      /* a weak tag never matches strongly; skip it */
      p = strchr(p, ',') ? strchr(p, ',') : p + strlen(p);
      continue;
    }
    if (*p != '"' || m->n == 8)
      goto bad;
    v = strtoll(p + 1, &end, 10);
    if (end == p + 1 || *end != '"')
      goto bad;
    m->versions[m->n++] = v;
    p = end + 1;
  }
  return true;
bad:
  problem_field(req, "If-Match",
                "must be \"*\" or a list of ETags such as "
                "\"\\\"3\\\"\"");
  problem_fail(req, GG_BAD_REQUEST, "The If-Match header is malformed.");
  return false;
}

/* Path names: a bad one is 404 when reading, 400 when creating. */
static bool names_ok(struct gg_req *req, const struct admin_kind *k,
                     enum gg_code code)
{
  bool ok = v_path_name(req, k->name_param);

  if (k->team_param)
    ok = v_path_name(req, k->team_param) && ok;
  if (!ok)
    problem_fail(req, code, "The path does not name a valid %s.",
                 db_kind_name(k->kind));
  return ok;
}

static const char *team_of(struct gg_req *req, const struct admin_kind *k)
{
  return k->team_param ? req_param(req, k->team_param) : NULL;
}

/* The parent team of a team queue must exist: 404 otherwise. */
static enum gg_code parent_exists(struct gg_req *req,
                                  const struct admin_kind *k)
{
  json_t *team = NULL;
  enum gg_code code;

  if (!k->team_param)
    return GG_OK;
  code = db_admin_get(req_db(req), &req->err, DB_TEAM, NULL, team_of(req, k),
                      &team, NULL);
  json_decref(team);
  return code;
}

enum gg_code admin_get(struct gg_req *req, const struct admin_kind *k)
{
  json_t *obj = NULL;
  long long version = 0;
  enum gg_code code;

  if (!names_ok(req, k, GG_NOT_FOUND))
    return GG_NOT_FOUND;
  code = db_admin_get(req_db(req), &req->err, k->kind, team_of(req, k),
                      req_param(req, k->name_param), &obj, &version);
  if (code == GG_OK && k->decorate)
    code = k->decorate(req, obj);
  if (code != GG_OK) {
    json_decref(obj);
    return code;
  }
  set_etag(req, version);
  req_reply(req, 200, obj);
  return GG_OK;
}

enum gg_code admin_list(struct gg_req *req, const struct admin_kind *k)
{
  char after[128], cursor[V_CURSOR_MAX];
  json_t *items = NULL, *obj, *page;
  bool more = false;
  enum gg_code code;
  size_t i;
  int limit;

  if (k->team_param && !v_path_name(req, k->team_param))
    return problem_fail(req, GG_NOT_FOUND, "The path names no valid team.");
  if (!v_page(req, &limit, after, sizeof(after)))
    return problem_fail(req, GG_BAD_REQUEST,
                        "The paging parameters are invalid.");
  if ((code = parent_exists(req, k)) != GG_OK)
    return code;
  code = db_admin_list(req_db(req), &req->err, k->kind, team_of(req, k), after,
                       limit, &items, &more);
  if (code != GG_OK)
    return code;
  json_array_foreach (items, i, obj) {
    if (k->decorate && (code = k->decorate(req, obj)) != GG_OK) {
      json_decref(items);
      return code;
    }
  }
  page = json_pack("{s:o}", "items", items);
  if (more) {
    obj = json_array_get(items, json_array_size(items) - 1);
    if (!v_cursor(req, json_string_value(json_object_get(obj, "name")), cursor,
                  sizeof(cursor))) {
      json_decref(page);
      return problem_fail(req, GG_INTERNAL, "The cursor could not be made.");
    }
    json_object_set_new(page, "next_cursor", json_string(cursor));
  } else {
    json_object_set_new(page, "next_cursor", json_null());
  }
  req_reply(req, 200, page);
  return GG_OK;
}

enum gg_code admin_put(struct gg_req *req, const struct admin_kind *k)
{
  struct db_if_match m;
  json_t *spec = NULL, *obj = NULL;
  long long version = 0;
  bool created = false;
  enum gg_code code;

  if (!names_ok(req, k, GG_BAD_REQUEST))
    return GG_BAD_REQUEST;
  if (!parse_if_match(req, &m))
    return GG_BAD_REQUEST;
  spec = v_object(req, "", req->json, k->fields);
  if (spec && k->check)
    k->check(req, spec);
  if (!spec || problem_nfields(req)) {
    json_decref(spec);
    return problem_fail(req, GG_BAD_REQUEST, "The %s is invalid; see errors.",
                        db_kind_name(k->kind));
  }
  code = parent_exists(req, k);
  if (code == GG_OK)
    code = db_admin_put(req_db(req), &req->err, k->kind, team_of(req, k),
                        req_param(req, k->name_param), spec, &m, &obj, &version,
                        &created);
  json_decref(spec);
  if (code == GG_OK && k->decorate)
    code = k->decorate(req, obj);
  if (code != GG_OK) {
    json_decref(obj);
    return code;
  }
  set_etag(req, version);
  log_change(req, k, created ? "created" : "put");
  if (created) {
    char loc[600];
    snprintf(loc, sizeof(loc), "%s", req->path);
    req_add_header(req, "Location", loc);
  }
  req_reply(req, created ? 201 : 200, obj);
  return GG_OK;
}

enum gg_code admin_delete(struct gg_req *req, const struct admin_kind *k)
{
  struct db_if_match m;
  enum gg_code code;

  if (!names_ok(req, k, GG_NOT_FOUND))
    return GG_NOT_FOUND;
  if (!parse_if_match(req, &m))
    return GG_BAD_REQUEST;
  code = db_admin_delete(req_db(req), &req->err, k->kind, team_of(req, k),
                         req_param(req, k->name_param), &m);
  if (code != GG_OK)
    return code;
  log_change(req, k, "deleted");
  req_reply(req, 204, NULL);
  return GG_OK;
}
