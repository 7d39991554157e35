/*
 * priority_classes.c — /v1/priority-classes: job priorities and whether
 * they may preempt. Exactly one class is the default once any exists.
 */
#include "handlers/admin.h"
#include "handlers/handlers.h"

static const char *const policies[] = {"PreemptLowerPriority", "Never", NULL};

static const struct v_field fields[] = {
    {.key = "value",
     .type = V_INT,
     .flags = V_REQUIRED,
     .min = -2147483648.0,
     .max = 1000000000},
    {.key = "preemption_policy",
     .type = V_ENUM,
     .choices = policies,
     .dflt = "\"PreemptLowerPriority\""},
    {.key = "default", .type = V_BOOL, .dflt = "false"},
    {.key = "description",
     .type = V_STRING,
     .flags = V_NULLABLE,
     .min = 0,
     .max = 256,
     .dflt = "null"},
    {.key = NULL}};

static const struct admin_kind kind = {
    DB_PRIORITY_CLASS, "name", NULL, fields, NULL, NULL};

enum gg_code priority_classes_list(struct gg_req *req)
{
  return admin_list(req, &kind);
}

enum gg_code priority_classes_get(struct gg_req *req)
{
  return admin_get(req, &kind);
}

enum gg_code priority_classes_put(struct gg_req *req)
{
  return admin_put(req, &kind);
}

enum gg_code priority_classes_delete(struct gg_req *req)
{
  return admin_delete(req, &kind);
}
