/*
 * queues.c — /v1/teams/{team}/queues: a team's named queues, each pointing
 * at one cluster queue. Members read their own team's queues.
 */
#include "db/fairshare.h"
#include "db/queue_status.h"
#include "handlers/admin.h"
#include "handlers/fairshare_fields.h"
#include "handlers/handlers.h"

static const struct v_field fields[] = {
    {.key = "cluster_queue", .type = V_NAME, .flags = V_REQUIRED},
    {.key = "description",
     .type = V_STRING,
     .flags = V_NULLABLE,
     .min = 0,
     .max = 256,
     .dflt = "null"},
    FAIRSHARE_TQ_FIELD,
    {.key = NULL}};

/* Pending and admitted counts of the queue's jobs. */
static enum gg_code decorate(struct gg_req *req, json_t *obj)
{
  json_t *counts = NULL;
  enum gg_code code = db_job_counts(
      req_db(req), &req->err, json_string_value(json_object_get(obj, "team")),
      json_string_value(json_object_get(obj, "name")), &counts);

  if (code != GG_OK)
    return code;
  json_object_set_new(obj, "status", counts);
  /* fair share over time: only when its cluster queue sets it */
  {
    json_t *fs = NULL;
    code = db_fs_queue(req_db(req), &req->err,
                       json_string_value(json_object_get(obj, "team")),
                       json_string_value(json_object_get(obj, "name")), &fs);
    if (code == GG_OK && json_is_object(fs))
      json_object_set(obj, "fair_sharing", fs);
    json_decref(fs);
  }
  return code;
}

static const struct admin_kind kind = {
    DB_TEAM_QUEUE, "queue", "team", fields, fairshare_check_tq, decorate};

enum gg_code queues_list(struct gg_req *req)
{
  return admin_list(req, &kind);
}

enum gg_code queues_get(struct gg_req *req)
{
  return admin_get(req, &kind);
}

enum gg_code queues_put(struct gg_req *req)
{
  return admin_put(req, &kind);
}

enum gg_code queues_delete(struct gg_req *req)
{
  return admin_delete(req, &kind);
}
