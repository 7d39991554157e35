/*
 * team_capacity.c — GET /v1/teams/{team}/cluster-queues: the capacity a
 * team's queues draw on, readable by the team's members (GET
 * /v1/cluster-queues is for administrators). For each cluster queue one of
 * the team's queues points at: its quota per flavor and resource, usage
 * and borrowing, pending and admitted counts, stop policy, and which of
 * the team's own queues feed it. Nothing names another team or one of its
 * jobs: a shared cluster queue's counts and usage are aggregates.
 */
#include <string.h>

#include "db/admin.h"
#include "handlers/cluster_queues.h"
#include "handlers/handlers.h"
#include "handlers/validate.h"
#include "server/problem.h"

#define MAX_TEAM_QUEUES 500

/* The member-safe view of a cluster queue with status (borrowed). New
 * reference. */
static json_t *summary(json_t *cq, json_t *queues)
{
  static const char *const keep[] = {
      "name",    "cohort",     "queueing_strategy",   "stop_policy",
      "flavors", "preemption", "fair_sharing_weight", "flavor_fungibility",
      "status",  NULL};
  json_t *out = json_object();
  size_t i;

  for (i = 0; keep[i]; i++) {
    json_t *v = json_object_get(cq, keep[i]);
    if (v)
      json_object_set(out, keep[i], v);
  }
  if (!json_object_get(out, "stop_policy"))
    json_object_set_new(out, "stop_policy", json_string("None"));
  json_object_set(out, "team_queues", queues);
  return out;
}

enum gg_code team_cluster_queues(struct gg_req *req)
{
  const char *team = req_param(req, "team");
  json_t *tqs = NULL, *by_cq = NULL, *items = NULL, *tq, *queues;
  enum gg_code code;
  const char *cqname;
  bool more = false;
  size_t i;

  if (!v_path_name(req, "team"))
    return problem_fail(req, GG_NOT_FOUND, "The path names no valid team.");
  code = db_admin_list(req_db(req), &req->err, DB_TEAM_QUEUE, team, "",
                       MAX_TEAM_QUEUES, &tqs, &more);
  if (code != GG_OK)
    goto out;
  by_cq = json_object(); /* cluster queue → [team queue names] */
  json_array_foreach (tqs, i, tq) {
    const char *cq = json_string_value(json_object_get(tq, "cluster_queue"));
    json_t *names;
    if (!cq)
      continue;
    names = json_object_get(by_cq, cq);
    if (!names) {
      names = json_array();
      json_object_set_new(by_cq, cq, names);
    }
    json_array_append(names, json_object_get(tq, "name"));
  }
  items = json_array();
  json_object_foreach (by_cq, cqname, queues) {
    json_t *cq = NULL;
    code = db_admin_get(req_db(req), &req->err, DB_CLUSTER_QUEUE, NULL, cqname,
                        &cq, NULL);
    if (code == GG_OK)
      code = cluster_queues_status(req, cq);
    if (code == GG_OK)
      json_array_append_new(items, summary(cq, queues));
    json_decref(cq);
    if (code != GG_OK)
      goto out;
  }
  req_reply(req, 200,
            json_pack("{s:s, s:O, s:n}", "team", team, "items", items,
                      "next_cursor"));
out:
  json_decref(tqs);
  json_decref(by_cq);
  json_decref(items);
  return req->err.code;
}
