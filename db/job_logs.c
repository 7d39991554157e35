/*
 * job_logs.c (db) — a job's existence and liveness for its log reads (see
 * job_logs.h).
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "db/job_logs.h"
#include "server/problem.h"

#define LIVE_STATES "('PENDING', 'ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING')"

static const char sql_target[] =
    "SELECT state IN " LIVE_STATES " FROM jobs WHERE team = $1 AND id = $2";

/* $1: a JSON array of ids, so that any number travel as one parameter */
static const char sql_live[] = "SELECT id FROM jobs WHERE id IN (SELECT "
                               "jsonb_array_elements_text($1::jsonb)) "
                               "AND state IN " LIVE_STATES;

enum gg_code db_job_log_target(struct gg_req *req, const char *team,
                               const char *id, bool *live)
{
  struct db_conn *db = req_db(req);
  const char *params[2] = {team, id};
  PGresult *res;
  int rows;

  *live = false;
  if (!db)
    return db_fail(req, GG_UNAVAILABLE);
  if (!(res = db_req_exec(req, db, sql_target, 2, params)))
    return req->code;
  rows = PQntuples(res);
  if (rows)
    *live = !strcmp(PQgetvalue(res, 0, 0), "t");
  PQclear(res);
  if (!rows)
    return problem_fail(req, GG_NOT_FOUND, "Job \"%s\" was not found.", id);
  return GG_OK;
}

int db_jobs_live(struct db_conn *c, const char *const *ids, size_t n,
                 bool *live, char *err, size_t errlen)
{
  json_t *arr = json_array();
  const char *params[1];
  PGresult *res = NULL;
  char *text = NULL;
  size_t i;
  int r, rc = -1;

  for (i = 0; i < n; i++) {
    live[i] = false;
    json_array_append_new(arr, json_string(ids[i]));
  }
  text = json_dumps(arr, JSON_COMPACT);
  if (!text) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  params[0] = text;
  if (!(res = db_query(c, sql_live, 1, params, err, errlen)))
    goto out;
  for (r = 0; r < PQntuples(res); r++)
    for (i = 0; i < n; i++)
      if (!strcmp(PQgetvalue(res, r, 0), ids[i]))
        live[i] = true;
  rc = 0;
out:
  PQclear(res);
  free(text);
  json_decref(arr);
  return rc;
}
