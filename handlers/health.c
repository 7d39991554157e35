/*
 * health.c — liveness, readiness and the OpenAPI document (no auth).
 */
#include <string.h>

#include "db/db.h"
#include "handlers/handlers.h"
#include "lib/embedded.h"
#include "server/problem.h"

enum gg_code health_live(struct gg_req *req)
{
  req_reply(req, 200, json_pack("{s:s}", "status", "ok"));
  return GG_OK;
}

enum gg_code health_ready(struct gg_req *req)
{
  struct db_conn *db = req_db(req);
  int applied, expected = db_migrations_expected();

  if (!db)
    return problem_fail(req, GG_UNAVAILABLE, "The database is not reachable.");
  applied = db_migrations_applied(db);
  if (applied < 0)
    return problem_fail(req, GG_UNAVAILABLE,
                        "The migration state cannot be read.");
  if (applied < expected)
    return problem_fail(req, GG_UNAVAILABLE,
                        "%d of %d migrations are applied; run "
                        "\"gpugate migrate\".",
                        applied, expected);
  req_reply(req, 200,
            json_pack("{s:s, s:s, s:{s:i, s:i}}", "status", "ready", "database",
                      "ok", "migrations", "applied", applied, "expected",
                      expected));
  return GG_OK;
}

static enum gg_code send_file(struct gg_req *req, const char *path,
                              const char *type)
{
  const struct embedded_file *f = embedded_find(path);

  if (!f)
    return problem_fail(req, GG_NOT_FOUND, "The document is not built in.");
  return req_reply_text(req, 200, type, (const char *)f->data, f->len);
}

enum gg_code openapi_json(struct gg_req *req)
{
  return send_file(req, "openapi/openapi.json", "application/json");
}

enum gg_code openapi_yaml(struct gg_req *req)
{
  return send_file(req, "openapi/openapi.yaml", "application/yaml");
}
