/*
 * teams.c — /v1/teams: who owns queues and pays for them. Members see
 * only their own teams.
 */
#include <string.h>

#include "handlers/admin.h"
#include "handlers/handlers.h"
#include "server/problem.h"

static const char *const policies[] = {"none", "warn", "hold", NULL};

static const struct v_field fields[] = {{.key = "display_name",
                                         .type = V_STRING,
                                         .flags = V_NULLABLE,
                                         .min = 0,
                                         .max = 128,
                                         .dflt = "null"},
                                        {.key = "cost_center",
                                         .type = V_STRING,
                                         .flags = V_NULLABLE,
                                         .min = 0,
                                         .max = 63,
                                         .dflt = "null"},
                                        {.key = "monthly_budget_usd",
                                         .type = V_NUMBER,
                                         .flags = V_NULLABLE,
                                         .min = 0,
                                         .max = 1e12,
                                         .dflt = "null"},
                                        {.key = "budget_policy",
                                         .type = V_ENUM,
                                         .choices = policies,
                                         .dflt = "\"none\""},
                                        {.key = NULL}};

/* GCP label values: lowercase letters, digits, '_' and '-'. */
static bool label_value(const char *s)
{
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' ||
          *s == '-'))
      return false;
  return true;
}

static void check(struct gg_req *req, json_t *spec)
{
  json_t *cc = json_object_get(spec, "cost_center");
  const char *policy =
      json_string_value(json_object_get(spec, "budget_policy"));

  if (json_is_string(cc) && !label_value(json_string_value(cc)))
    problem_field(req, "cost_center",
                  "must be a valid label value: lowercase letters, digits, "
                  "'_' and '-'");
  if (strcmp(policy, "none") != 0 &&
      json_is_null(json_object_get(spec, "monthly_budget_usd")))
    problem_field(req, "monthly_budget_usd",
                  "is required when budget_policy is \"%s\"", policy);
}

static const struct admin_kind kind = {DB_TEAM, "team", NULL,
                                       fields,  check,  NULL};

enum gg_code teams_list(struct gg_req *req)
{
  const struct auth_principal *p = &req->principal;
  json_t *team = NULL, *items;
  enum gg_code code;
  int i;

  if (!req_is_member(req))
    return admin_list(req, &kind);
  /* a member's list is its own teams (a provider principal may be a
   * member of several), those that have been created */
  items = json_array();
  for (i = 0; i < p->n_grants; i++) {
    if (p->grants[i].role != AUTH_ROLE_MEMBER)
      continue;
    code = db_admin_get(req_db(req), &req->err, DB_TEAM, NULL,
                        p->grants[i].team, &team, NULL);
    if (code == GG_NOT_FOUND) {
      problem_clear(req);
      continue;
    }
    if (code != GG_OK) {
      json_decref(items);
      return code;
    }
    json_array_append_new(items, team);
    team = NULL;
  }
  req_reply(req, 200, json_pack("{s:o, s:n}", "items", items, "next_cursor"));
  return GG_OK;
}

enum gg_code teams_get(struct gg_req *req)
{
  return admin_get(req, &kind);
}

enum gg_code teams_put(struct gg_req *req)
{
  return admin_put(req, &kind);
}
