/*
 * access_bindings.c — /v1/access-bindings: which principals of the
 * organisation's OpenID Provider get which role (SPEC §9). Stored and
 * versioned like every administrator object (handlers/admin.c); each
 * replica's cache (identity/bindings.c) reloads on the change notification.
 */
#include <string.h>

#include "db/db.h"
#include "handlers/admin.h"
#include "handlers/handlers.h"
#include "identity/bindings.h"
#include "lib/log.h"
#include "server/problem.h"

static const char *const kinds[] = {"group", "email", "subject", NULL};
static const char *const roles[] = {"member", "admin", "finance", "metrics",
                                    NULL};

static const struct v_field subject[] = {
    {.type = V_OBJECT,
     .fields = (const struct v_field[]){
         {.key = "kind", .type = V_ENUM, .flags = V_REQUIRED, .choices = kinds},
         {.key = "name",
          .type = V_STRING,
          .flags = V_REQUIRED,
          .max = BINDINGS_NAME_MAX},
         {.key = "issuer",
          .type = V_STRING,
          .flags = V_NULLABLE,
          .max = BINDINGS_ISSUER_MAX,
          .dflt = "null"},
         {.key = NULL}}}};

static const struct v_field fields[] = {
    {.key = "subjects",
     .type = V_LIST,
     .flags = V_REQUIRED,
     .min = 1,
     .max = BINDINGS_MAX_SUBJECTS,
     .fields = subject},
    {.key = "role", .type = V_ENUM, .flags = V_REQUIRED, .choices = roles},
    {.key = "team", .type = V_NAME, .flags = V_NULLABLE, .dflt = "null"},
    {.key = NULL}};

/* A member binding names its team; no other role does. Subject names are
 * not empty. */
static void check(struct gg_req *req, json_t *spec)
{
  const char *role = json_string_value(json_object_get(spec, "role"));
  bool has_team = !json_is_null(json_object_get(spec, "team"));
  json_t *s; /* borrowed */
  size_t i;

  if (role && !strcmp(role, "member") && !has_team)
    problem_field(req, "team", "is required when role is \"member\"");
  if (role && strcmp(role, "member") != 0 && has_team)
    problem_field(req, "team",
                  "must be null unless role is \"member\" (role \"%s\" is "
                  "not limited to a team)",
                  role);
  json_array_foreach (json_object_get(spec, "subjects"), i, s) {
    const char *name = json_string_value(json_object_get(s, "name"));
    const char *iss = json_string_value(json_object_get(s, "issuer"));
    char field[64];

    if (name && !name[0]) {
      snprintf(field, sizeof(field), "subjects[%zu].name", i);
      problem_field(req, field, "must not be empty");
    }
    if (iss && !iss[0]) {
      snprintf(field, sizeof(field), "subjects[%zu].issuer", i);
      problem_field(req, field, "must be null or an issuer URL");
    }
  }
}

/* Each subject shows the issuer it matches: one naming none is the first
 * of GPUGATE_OIDC_ISSUERS's (null only while no issuer is trusted). */
static enum gg_code decorate(struct gg_req *req, json_t *obj)
{
  const struct config_oidc *o = req->cfg ? &req->cfg->identity.oidc : NULL;
  json_t *s; /* borrowed */
  size_t i;

  if (!o || !o->n_issuers) /* gpugate apply: no server configuration */
    return GG_OK;
  json_array_foreach (json_object_get(obj, "subjects"), i, s) {
    if (json_is_object(s) && !json_is_string(json_object_get(s, "issuer")))
      json_object_set_new(s, "issuer", json_string(o->issuers[0]));
  }
  return GG_OK;
}

static const struct admin_kind kind = {
    DB_ACCESS_BINDING, "name", NULL, fields, check, decorate};

enum gg_code access_bindings_list(struct gg_req *req)
{
  return admin_list(req, &kind);
}

enum gg_code access_bindings_get(struct gg_req *req)
{
  return admin_get(req, &kind);
}

/* After a change, this replica reloads its cache at once from the
 * request's connection, so the next request here sees the change; other
 * replicas reload on the change's notification. */
static enum gg_code reload(struct gg_req *req, enum gg_code code)
{
  struct db_conn *db;
  char err[256];

  if (code == GG_OK && (db = req_db(req)) &&
      bindings_reload(db->pg, err, sizeof(err)) != 0)
    log_msg(LOG_WARN, "access bindings: %s", err);
  return code;
}

enum gg_code access_bindings_put(struct gg_req *req)
{
  return reload(req, admin_put(req, &kind));
}

enum gg_code access_bindings_delete(struct gg_req *req)
{
  return reload(req, admin_delete(req, &kind));
}
