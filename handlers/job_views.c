/*
 * job_views.c — the job views a console (or any client) needs beyond the
 * plain list: a team's job counts and GPU sums by state and queue
 * (GET /v1/teams/{team}/jobs/summary), the team list with a name search
 * (GET /v1/teams/{team}/jobs?name=), the administrators' list across
 * teams (GET /v1/jobs), and a job's events as they happen
 * (GET /v1/teams/{team}/jobs/{id}/events?follow=true). Filters and cursors read
 * exactly like the team list's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/jobs.h"
#include "handlers/events.h"
#include "handlers/handlers.h"
#include "handlers/job_views.h"
#include "handlers/validate.h"
#include "server/problem.h"

#define NAME_PART_MAX 63

static bool label_value_ok(const char *s)
{
  size_t i;

  for (i = 0; s[i]; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '_' || s[i] == '-'))
      return false;
  return i <= 63;
}

/* A name search: the characters a job name may hold, 1..63 of them. */
static bool name_part_ok(const char *s)
{
  size_t i;

  for (i = 0; s[i]; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '-'))
      return false;
  return i >= 1 && i <= NAME_PART_MAX;
}

/* Parse ?state= ?queue= ?label= ?limit= ?cursor= into f (lkey holds the
 * label's key); problems are recorded on req. */
static void parse_filters(struct gg_req *req, struct db_job_filter *f,
                          char lkey[64])
{
  const char *label = req_query(req, "label");
  char cur[64], *end;

  memset(f, 0, sizeof(*f));
  if (v_page(req, &f->limit, cur, sizeof(cur)) && cur[0]) {
    f->after_seq = strtoll(cur, &end, 10);
    if (*end || f->after_seq <= 0)
      problem_field(req, "cursor", "is not a cursor this API returned");
  }
  f->states = req_query(req, "state");
  if (f->states && !v_job_states(f->states))
    problem_field(req, "state",
                  "must be a comma-separated list of PENDING, ADMITTED, "
                  "QUEUED, RUNNING, EVICTING, SUCCEEDED, FAILED, CANCELLED");
  f->queue = req_query(req, "queue");
  if (f->queue && !v_is_name(f->queue))
    problem_field(req, "queue", "is not a queue name");
  if (label) {
    const char *eq = strchr(label, '=');
    size_t klen = eq ? (size_t)(eq - label) : 0;
    if (!eq || klen == 0 || klen >= 64 || !label_value_ok(eq + 1)) {
      problem_field(req, "label", "must be key=value");
    } else {
      memcpy(lkey, label, klen);
      lkey[klen] = '\0';
      f->label_key = lkey;
      f->label_value = eq + 1;
    }
  }
}

static enum gg_code list(struct gg_req *req, const char *team,
                         const char *team_filter)
{
  const char *name = req_query(req, "name");
  struct db_job_filter f;
  char lkey[64] = "", num[24], cursor[V_CURSOR_MAX];
  json_t *items = NULL;
  int64_t next = 0;
  enum gg_code code;

  parse_filters(req, &f, lkey);
  if (name && !name_part_ok(name))
    problem_field(req, "name",
                  "must be 1 to 63 of the characters of a job name "
                  "([a-z0-9-])");
  if (team_filter && !v_is_name(team_filter))
    problem_field(req, "team", "is not a team name");
  if (problem_nfields(req))
    return problem_fail(req, GG_BAD_REQUEST, "The filters are invalid.");
  code = db_job_find(req_db(req), &req->err, team, team_filter, &f, name,
                     &items, &next);
  if (code != GG_OK)
    return code;
  if (next) {
    snprintf(num, sizeof(num), "%lld", (long long)next);
    if (!v_cursor(req, num, cursor, sizeof(cursor))) {
      json_decref(items);
      return problem_fail(req, GG_INTERNAL, "The cursor could not be made.");
    }
    req_reply(req, 200,
              json_pack("{s:o, s:s}", "items", items, "next_cursor", cursor));
  } else {
    req_reply(req, 200, json_pack("{s:o, s:n}", "items", items, "next_cursor"));
  }
  return GG_OK;
}

enum gg_code job_views_team_list(struct gg_req *req)
{
  if (!v_path_name(req, "team"))
    return problem_fail(req, GG_NOT_FOUND, "The path names no valid team.");
  return list(req, req_param(req, "team"), NULL);
}

enum gg_code jobs_list_all(struct gg_req *req)
{
  return list(req, NULL, req_query(req, "team"));
}

enum gg_code jobs_summary(struct gg_req *req)
{
  json_t *out = NULL;
  enum gg_code code;

  if (!v_path_name(req, "team"))
    return problem_fail(req, GG_NOT_FOUND, "The path names no valid team.");
  code = db_job_summary(req_db(req), &req->err, req_param(req, "team"), &out);
  if (code != GG_OK)
    return code;
  req_reply(req, 200, out);
  return GG_OK;
}

enum gg_code job_views_follow(struct gg_req *req)
{
  const char *follow = req_query(req, "follow");
  const char *id = req_param(req, "id");

  if (!follow || strcmp(follow, "true") != 0) {
    problem_field(req, "follow", "must be true or false");
    return problem_fail(req, GG_BAD_REQUEST, "The follow flag is invalid.");
  }
  if (!v_path_name(req, "team") || !id || !v_is_name(id))
    return problem_fail(req, GG_NOT_FOUND, "No such job.");
  return events_serve(req, req_param(req, "team"), id);
}
