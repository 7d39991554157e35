/*
 * cohorts.c — /v1/cohorts: groups of cluster queues that lend each other
 * unused quota.
 */
#include "handlers/admin.h"
#include "handlers/handlers.h"

static const struct v_field fields[] = {{.key = "description",
                                         .type = V_STRING,
                                         .flags = V_NULLABLE,
                                         .min = 0,
                                         .max = 256,
                                         .dflt = "null"},
                                        {.key = NULL}};

static const struct admin_kind kind = {DB_COHORT, "name", NULL,
                                       fields,    NULL,   NULL};

enum gg_code cohorts_list(struct gg_req *req)
{
  return admin_list(req, &kind);
}

enum gg_code cohorts_get(struct gg_req *req)
{
  return admin_get(req, &kind);
}

enum gg_code cohorts_put(struct gg_req *req)
{
  return admin_put(req, &kind);
}

enum gg_code cohorts_delete(struct gg_req *req)
{
  return admin_delete(req, &kind);
}
