/*
 * events.c — GET /v1/teams/{team}/events: the team's job events and queue
 * position changes as Server-Sent Events, as they commit
 * (server/events_hub.h). Each event's `id:` is its stream cursor; a client
 * that reconnects with it as Last-Event-ID gets every later event once.
 */
#include <stdio.h>
#include <string.h>

#include "db/db.h"
#include "db/events.h"
#include "handlers/events.h"
#include "handlers/handlers.h"
#include "handlers/validate.h"
#include "server/events_hub.h"
#include "server/problem.h"

/* The bytes a stream hands libmicrohttpd per read: a few events; a
 * thousand idle clients then cost a thousand small buffers. */
#define EVENTS_BLOCK 4096

enum gg_code events_serve(struct gg_req *req, const char *team, const char *job)
{
  const char *last = req_header(req, "Last-Event-ID");
  struct events_sub *sub = NULL;
  struct evcursor from = {0, 0};
  struct db_conn *db;
  bool exists = true, done = false;
  char err[256];

  if (last && !evcursor_parse(last, &from)) {
    problem_field(req, "Last-Event-ID", "is not an event id this API sent");
    return problem_fail(req, GG_BAD_REQUEST,
                        "Last-Event-ID \"%.64s\" is not an event id.", last);
  }
  db = req_db(req);
  if (!db)
    return db_fail(&req->err, GG_UNAVAILABLE);
  if (job) {
    if (db_events_job_state(db->pg, team, job, &from, &exists, &done, err,
                            sizeof(err)) != 0)
      return db_fail(&req->err, GG_INTERNAL);
    if (!exists)
      return problem_fail(req, GG_NOT_FOUND, "Job \"%s\" was not found.", job);
  } else {
    int r = db_events_team_exists(db->pg, team, err, sizeof(err));
    if (r < 0)
      return db_fail(&req->err, GG_INTERNAL);
    if (r == 0)
      return problem_fail(req, GG_NOT_FOUND, "Team \"%s\" was not found.",
                          team);
    if (!last && events_hub_now(db, &from) != 0)
      return db_fail(&req->err, GG_UNAVAILABLE);
  }
  switch (events_hub_open(db, team, job, &from, done, req->conn, &sub)) {
  case EVENTS_OPEN_OK:
    break;
  case EVENTS_OPEN_BUSY:
    req_add_header(req, "Retry-After", "1");
    return problem_fail(req, GG_UNAVAILABLE,
                        "The stream is moving faster than it can be caught "
                        "up with; retry.");
  case EVENTS_OPEN_NO_MEMORY:
    return problem_fail(req, GG_INTERNAL, "Out of memory.");
  default:
    return db_fail(&req->err, GG_UNAVAILABLE);
  }
  req_add_header(req, "Cache-Control", "no-cache");
  req_add_header(req, "X-Accel-Buffering", "no");
  req_reply_stream(req, 200, "text/event-stream", events_hub_read, sub,
                   events_hub_release);
  req->reply_read_block = EVENTS_BLOCK;
  return GG_OK;
}

enum gg_code events_stream(struct gg_req *req)
{
  if (!v_path_name(req, "team"))
    return problem_fail(req, GG_NOT_FOUND, "The path names no valid team.");
  return events_serve(req, req_param(req, "team"), NULL);
}
