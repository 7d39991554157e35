/*
 * cluster_queues.c — /v1/cluster-queues: quota pools with their ordered
 * flavors, borrowing and lending limits and admission policy (Kueue's
 * ClusterQueue).
 */
#include <string.h>

#include "handlers/admin.h"
#include "handlers/handlers.h"
#include "server/problem.h"

#define QUOTA_MAX 1e15

static const char *const strategies[] = {"BestEffortFIFO", "StrictFIFO",
                                         NULL};
static const char *const within[] = {"Never", "LowerPriority", NULL};
static const char *const reclaim[] = {"Never", "LowerPriority", "Any", NULL};
static const char *const borrow[] = {"Borrow", "TryNextFlavor", NULL};
static const char *const preempt[] = {"TryNextFlavor", "Preempt", NULL};
static const char *const stops[] = {"None", "Hold", "HoldAndDrain", NULL};
static const char *const resources[] = {"gpu", "cpu_milli", "memory_mib",
                                        NULL};

static const struct v_field quota[] = {{.type = V_OBJECT,
                                        .fields = (const struct v_field[]){
                                            {.key = "nominal", .type = V_INT, .flags = V_REQUIRED, .min = 0, .max = QUOTA_MAX},
                                            {.key = "borrowing_limit", .type = V_INT, .flags = V_NULLABLE, .min = 0, .max = QUOTA_MAX, .dflt = "null"},
                                            {.key = "lending_limit", .type = V_INT, .flags = V_NULLABLE, .min = 0, .max = QUOTA_MAX, .dflt = "null"},
                                            {.key = NULL}}}};

static const struct v_field flavor_quota[] = {
    {.type = V_OBJECT,
     .fields = (const struct v_field[]){
         {.key = "name", .type = V_NAME, .flags = V_REQUIRED},
         {.key = "resources", .type = V_MAP, .flags = V_REQUIRED, .min = 1, .max = 3, .fields = quota,
          .keys = resources},
         {.key = NULL}}}};

static const struct v_field fields[] = {
    {.key = "cohort", .type = V_NAME, .flags = V_NULLABLE, .dflt = "null"},
    {.key = "queueing_strategy", .type = V_ENUM, .choices = strategies, .dflt = "\"BestEffortFIFO\""},
    {"preemption", V_OBJECT, 0,
     .dflt = "{\"within_cluster_queue\": \"Never\", "
             "\"reclaim_within_cohort\": \"Never\"}",
     .fields = (const struct v_field[]){
         {.key = "within_cluster_queue", .type = V_ENUM, .choices = within, .dflt = "\"Never\""},
         {.key = "reclaim_within_cohort", .type = V_ENUM, .choices = reclaim, .dflt = "\"Never\""},
         {.key = NULL}}},
    {"flavor_fungibility", V_OBJECT, 0,
     .dflt = "{\"when_can_borrow\": \"Borrow\", "
             "\"when_can_preempt\": \"TryNextFlavor\"}",
     .fields = (const struct v_field[]){
         {.key = "when_can_borrow", .type = V_ENUM, .choices = borrow, .dflt = "\"Borrow\""},
         {.key = "when_can_preempt", .type = V_ENUM, .choices = preempt, .dflt = "\"TryNextFlavor\""},
         {.key = NULL}}},
    {.key = "fair_sharing_weight", .type = V_NUMBER, .min = 0, .max = 1e6, .dflt = "1"},
    {.key = "flavors", .type = V_LIST, .flags = V_REQUIRED, .min = 1, .max = 16, .fields = flavor_quota},
    {.key = "min_runtime_before_preemption_s", .type = V_INT, .min = 0, .max = 31536000, .dflt = "0"},
    {.key = "default_max_run_duration_s", .type = V_INT, .flags = V_NULLABLE, .min = 1, .max = 315360000, .dflt = "null"},
    {.key = "stop_policy", .type = V_ENUM, .choices = stops, .dflt = "\"None\""},
    {.key = NULL}};

static void check(struct gg_req *req, json_t *spec)
{
  bool cohort = !json_is_null(json_object_get(spec, "cohort"));
  json_t *flavors = json_object_get(spec, "flavors"), *fl;
  size_t i, j;

  json_array_foreach(flavors, i, fl)
  {
    const char *name = json_string_value(json_object_get(fl, "name"));
    json_t *res = json_object_get(fl, "resources"), *q;
    const char *r;
    char path[160];

    for (j = 0; j < i; j++)
      if (!strcmp(name, json_string_value(json_object_get(
                            json_array_get(flavors, j), "name"))))
        problem_field(req, "flavors", "lists flavor \"%s\" twice", name);
    json_object_foreach(res, r, q)
    {
      json_t *bl = json_object_get(q, "borrowing_limit");
      json_t *ll = json_object_get(q, "lending_limit");
      if (!cohort && !json_is_null(bl)) {
        snprintf(path, sizeof(path), "flavors[%zu].resources.%s."
                                     "borrowing_limit", i, r);
        problem_field(req, path, "is only allowed with a cohort");
      }
      if (!cohort && !json_is_null(ll)) {
        snprintf(path, sizeof(path), "flavors[%zu].resources.%s."
                                     "lending_limit", i, r);
        problem_field(req, path, "is only allowed with a cohort");
      }
      if (json_is_integer(ll) &&
          json_integer_value(ll) >
              json_integer_value(json_object_get(q, "nominal"))) {
        snprintf(path, sizeof(path), "flavors[%zu].resources.%s."
                                     "lending_limit", i, r);
        problem_field(req, path, "must not exceed nominal (%lld)",
                      (long long)json_integer_value(
                          json_object_get(q, "nominal")));
      }
    }
  }
}

/*
 * The read-only status. Usage comes from admitted jobs; until the job
 * tables exist nothing can hold quota, so every total is zero and the
 * share is zero.
 */
static enum gg_code decorate(struct gg_req *req, json_t *obj)
{
  json_t *usage = json_array(), *fl, *q;
  size_t i;
  const char *r;

  (void)req;
  json_array_foreach(json_object_get(obj, "flavors"), i, fl)
  {
    json_object_foreach(json_object_get(fl, "resources"), r, q)
    {
      json_array_append_new(
          usage, json_pack("{s:O, s:s, s:i, s:i, s:O, s:O}", "flavor",
                           json_object_get(fl, "name"), "resource", r,
                           "total", 0, "borrowed", 0, "nominal",
                           json_object_get(q, "nominal"), "borrowing_limit",
                           json_object_get(q, "borrowing_limit")));
    }
  }
  json_object_set_new(obj, "status",
                      json_pack("{s:i, s:i, s:f, s:o}", "pending", 0,
                                "admitted", 0, "weighted_share", 0.0,
                                "usage", usage));
  return GG_OK;
}

static const struct admin_kind kind = {DB_CLUSTER_QUEUE, "name", NULL,
                                       fields, check, decorate};

enum gg_code cluster_queues_list(struct gg_req *req)
{
  return admin_list(req, &kind);
}

enum gg_code cluster_queues_get(struct gg_req *req)
{
  return admin_get(req, &kind);
}

enum gg_code cluster_queues_put(struct gg_req *req)
{
  return admin_put(req, &kind);
}

enum gg_code cluster_queues_delete(struct gg_req *req)
{
  return admin_delete(req, &kind);
}
