/*
 * cluster_queues.c — /v1/cluster-queues: quota pools with their ordered
 * flavors, borrowing and lending limits and admission policy (Kueue's
 * ClusterQueue).
 */
#include <string.h>

#include "db/fairshare.h"
#include "db/queue_status.h"
#include "db/window.h"
#include "handlers/admin.h"
#include "handlers/cluster_queues.h"
#include "handlers/fairshare_fields.h"
#include "handlers/handlers.h"
#include "server/problem.h"

#define QUOTA_MAX 1e15

static const char *const strategies[] = {"BestEffortFIFO", "StrictFIFO", NULL};
static const char *const within[] = {"Never", "LowerPriority", NULL};
static const char *const reclaim[] = {"Never", "LowerPriority", "Any", NULL};
static const char *const borrow[] = {"Borrow", "TryNextFlavor", NULL};
static const char *const preempt[] = {"TryNextFlavor", "Preempt", NULL};
static const char *const stops[] = {"None", "Hold", "HoldAndDrain", NULL};
static const char *const resources[] = {"gpu", "cpu_milli", "memory_mib", NULL};

static const struct v_field quota[] = {
    {.type = V_OBJECT,
     .fields = (const struct v_field[]){{.key = "nominal",
                                         .type = V_INT,
                                         .flags = V_REQUIRED,
                                         .min = 0,
                                         .max = QUOTA_MAX},
                                        {.key = "borrowing_limit",
                                         .type = V_INT,
                                         .flags = V_NULLABLE,
                                         .min = 0,
                                         .max = QUOTA_MAX,
                                         .dflt = "null"},
                                        {.key = "lending_limit",
                                         .type = V_INT,
                                         .flags = V_NULLABLE,
                                         .min = 0,
                                         .max = QUOTA_MAX,
                                         .dflt = "null"},
                                        {.key = NULL}}}};

static const struct v_field flavor_quota[] = {
    {.type = V_OBJECT,
     .fields = (const struct v_field[]){
         {.key = "name", .type = V_NAME, .flags = V_REQUIRED},
         {.key = "resources",
          .type = V_MAP,
          .flags = V_REQUIRED,
          .min = 1,
          .max = 3,
          .fields = quota,
          .keys = resources},
         {.key = NULL}}}};

static const struct v_field fields[] = {
    {.key = "cohort", .type = V_NAME, .flags = V_NULLABLE, .dflt = "null"},
    {.key = "queueing_strategy",
     .type = V_ENUM,
     .choices = strategies,
     .dflt = "\"BestEffortFIFO\""},
    {"preemption", V_OBJECT, 0,
     .dflt = "{\"within_cluster_queue\": \"Never\", "
             "\"reclaim_within_cohort\": \"Never\"}",
     .fields = (const struct v_field[]){{.key = "within_cluster_queue",
                                         .type = V_ENUM,
                                         .choices = within,
                                         .dflt = "\"Never\""},
                                        {.key = "reclaim_within_cohort",
                                         .type = V_ENUM,
                                         .choices = reclaim,
                                         .dflt = "\"Never\""},
                                        {.key = NULL}}},
    {"flavor_fungibility", V_OBJECT, 0,
     .dflt = "{\"when_can_borrow\": \"Borrow\", "
             "\"when_can_preempt\": \"TryNextFlavor\"}",
     .fields = (const struct v_field[]){{.key = "when_can_borrow",
                                         .type = V_ENUM,
                                         .choices = borrow,
                                         .dflt = "\"Borrow\""},
                                        {.key = "when_can_preempt",
                                         .type = V_ENUM,
                                         .choices = preempt,
                                         .dflt = "\"TryNextFlavor\""},
                                        {.key = NULL}}},
    {.key = "fair_sharing_weight",
     .type = V_NUMBER,
     .min = 0,
     .max = 1e6,
     .dflt = "1"},
    {.key = "flavors",
     .type = V_LIST,
     .flags = V_REQUIRED,
     .min = 1,
     .max = 16,
     .fields = flavor_quota},
    {.key = "min_runtime_before_preemption_s",
     .type = V_INT,
     .min = 0,
     .max = 31536000,
     .dflt = "0"},
    {.key = "default_max_run_duration_s",
     .type = V_INT,
     .flags = V_NULLABLE,
     .min = 1,
     .max = 315360000,
     .dflt = "null"},
    {.key = "stop_policy",
     .type = V_ENUM,
     .choices = stops,
     .dflt = "\"None\""},
    FAIRSHARE_CQ_FIELD,
    {.key = NULL}};

static void check(struct gg_req *req, json_t *spec)
{
  bool cohort = !json_is_null(json_object_get(spec, "cohort"));
  json_t *flavors = json_object_get(spec, "flavors"), *fl;
  size_t i, j;

  fairshare_check_cq(req, spec);
  json_array_foreach (flavors, i, fl) {
    const char *name = json_string_value(json_object_get(fl, "name"));
    json_t *res = json_object_get(fl, "resources"), *q;
    const char *r;
    char path[160];

    for (j = 0; j < i; j++)
      if (!strcmp(name, json_string_value(json_object_get(
                            json_array_get(flavors, j), "name"))))
        problem_field(req, "flavors", "lists flavor \"%s\" twice", name);
    json_object_foreach (res, r, q) {
      json_t *bl = json_object_get(q, "borrowing_limit");
      json_t *ll = json_object_get(q, "lending_limit");
      if (!cohort && !json_is_null(bl)) {
        snprintf(path, sizeof(path),
                 "flavors[%zu].resources.%s."
                 "borrowing_limit",
                 i, r);
        problem_field(req, path, "is only allowed with a cohort");
      }
      if (!cohort && !json_is_null(ll)) {
        snprintf(path, sizeof(path),
                 "flavors[%zu].resources.%s."
                 "lending_limit",
                 i, r);
        problem_field(req, path, "is only allowed with a cohort");
      }
      if (json_is_integer(ll) &&
          json_integer_value(ll) >
              json_integer_value(json_object_get(q, "nominal"))) {
        snprintf(path, sizeof(path),
                 "flavors[%zu].resources.%s."
                 "lending_limit",
                 i, r);
        problem_field(
            req, path, "must not exceed nominal (%lld)",
            (long long)json_integer_value(json_object_get(q, "nominal")));
      }
    }
  }
}

/* The capacity windows of the queue's Calendar-mode flavors and the time
 * left in each (only when one has a window). status is borrowed. */
static enum gg_code add_windows(struct gg_req *req, const char *name,
                                json_t *status)
{
  long grace = req->cfg ? req->cfg->control.capacity_window_grace_s : 600;
  json_t *windows = NULL;
  enum gg_code code =
      db_window_status(req_db(req), &req->err, name, grace, &windows);

  if (code == GG_OK && json_array_size(windows) > 0)
    json_object_set(status, "capacity_windows", windows);
  json_decref(windows);
  return code;
}

/*
 * The read-only status: pending and admitted counts, usage and borrowing
 * per flavor and resource from the jobs holding quota, and the weighted
 * dominant-resource share — the largest fraction of the cohort's lendable
 * quota the queue borrows, divided by its fair-sharing weight.
 */
static enum gg_code decorate(struct gg_req *req, json_t *obj)
{
  const char *name = json_string_value(json_object_get(obj, "name"));
  json_t *cohort = json_object_get(obj, "cohort");
  json_t *usage_list = NULL, *counts = NULL, *usage = NULL, *pool = NULL;
  json_t *fl, *q;
  double weight =
      json_number_value(json_object_get(obj, "fair_sharing_weight"));
  double share = 0;
  enum gg_code code;
  const char *r;
  size_t i;

  code = db_job_counts(req_db(req), &req->err, NULL, name, &counts);
  if (code == GG_OK)
    code =
        db_cq_usage(req_db(req), &req->err, name,
                    json_is_string(cohort) ? json_string_value(cohort) : NULL,
                    &usage, &pool);
  if (code != GG_OK)
    goto out;
  usage_list = json_array();
  json_array_foreach (json_object_get(obj, "flavors"), i, fl) {
    const char *fname = json_string_value(json_object_get(fl, "name"));
    json_object_foreach (json_object_get(fl, "resources"), r, q) {
      json_int_t total =
          json_integer_value(json_object_get(json_object_get(usage, fname), r));
      json_int_t nominal = json_integer_value(json_object_get(q, "nominal"));
      json_int_t borrowed = total > nominal ? total - nominal : 0;
      json_int_t lendable =
          json_integer_value(json_object_get(json_object_get(pool, fname), r));
      double s = 0;
      if (borrowed > 0 && lendable > 0)
        s = (double)borrowed / (double)lendable;
      if (s > 0)
        s = weight > 0 ? s / weight : 1e9;
      if (s > share)
        share = s;
      json_array_append_new(usage_list,
                            json_pack("{s:s, s:s, s:I, s:I, s:I, s:O}",
                                      "flavor", fname, "resource", r, "total",
                                      total, "borrowed", borrowed, "nominal",
                                      nominal, "borrowing_limit",
                                      json_object_get(q, "borrowing_limit")));
    }
  }
  json_object_set_new(obj, "status",
                      json_pack("{s:O, s:O, s:f, s:o}", "pending",
                                json_object_get(counts, "pending"), "admitted",
                                json_object_get(counts, "admitted"),
                                "weighted_share", share, "usage", usage_list));
  code = add_windows(req, name, json_object_get(obj, "status"));
out:
  json_decref(counts);
  json_decref(usage);
  json_decref(pool);
  return code;
}

enum gg_code cluster_queues_status(struct gg_req *req, json_t *obj)
{
  return decorate(req, obj);
}

/* The administrator's view adds, with usage_fair_sharing, every team
 * queue's fair-sharing score and rank (a member's view of the queue,
 * cluster_queues_status(), does not: other teams' usage is theirs). */
static enum gg_code decorate_admin(struct gg_req *req, json_t *obj)
{
  enum gg_code code = decorate(req, obj);
  json_t *fs = NULL;

  if (code != GG_OK ||
      !json_is_object(json_object_get(obj, "usage_fair_sharing")))
    return code;
  code =
      db_fs_cluster_queue(req_db(req), &req->err,
                          json_string_value(json_object_get(obj, "name")), &fs);
  if (code == GG_OK && json_is_array(fs))
    json_object_set(json_object_get(obj, "status"), "fair_sharing", fs);
  json_decref(fs);
  return code;
}

static const struct admin_kind kind = {
    DB_CLUSTER_QUEUE, "name", NULL, fields, check, decorate_admin};

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
