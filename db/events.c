/*
 * events.c — reading the live event stream (see events.h and migration
 * 0041). The JSON objects are built here, once per row, as
 * GET /v1/teams/{team}/jobs/{id}/events shows a job's events (with the
 * job's id added), so that a replica renders each event once for all of
 * its clients.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/events.h"
#include "db/jobs_internal.h"

static const char sql_horizon[] =
    "SELECT pg_snapshot_xmin(pg_current_snapshot())::text";

/* The two sources in one order. $1, $2: the cursor; $3: the horizon; $4:
 * the team (NULL: all, in the stream); the stream's limit is $5, one
 * job's is $6 after the job ($5). The stream (every job) walks the
 * (xid, id) indexes from the cursor; one job ($5) reads its events by the
 * primary key (job_id, id) and sorts them, counting rows from before 0041
 * as xid 0. */
/* clang-format off */
#define EV_OBJECT(e)                                                           \
  "json_build_object('job_id', " e ".job_id, 'at', " TS(e ".at") ", "          \
  "'from', " e ".from_state, 'to', " e ".to_state, 'reason', " e ".reason, "   \
  "'attempt', " e ".attempt, 'message', " e ".message, 'actor', " e ".actor)"
#define POS_OBJECT(p)                                                          \
  "json_build_object('job_id', " p ".job_id, 'position_in_queue', "            \
  p ".position_in_queue, 'position_in_cluster_queue', "                        \
  p ".position_in_cluster_queue, 'ahead_gpus', " p ".ahead_gpus)"
#define EV_TERMINAL(e)                                                         \
  "(" e ".to_state IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))"

static const char sql_stream[] =
    "SELECT x::text, id, team, job_id, pos, term, data FROM ("
    "(SELECT e.xid AS x, e.id, e.team, e.job_id, false AS pos, "
    EV_TERMINAL("e") " AS term, " EV_OBJECT("e") "::text AS data "
    "FROM job_events e WHERE e.xid IS NOT NULL "
    "AND (e.xid, e.id) > ($1::xid8, $2::bigint) AND e.xid < $3::xid8 "
    "AND ($4::text IS NULL OR e.team = $4) "
    "ORDER BY e.xid, e.id LIMIT $5::int) "
    "UNION ALL "
    "(SELECT p.xid, p.sid, j.team, p.job_id, true, false, "
    POS_OBJECT("p") "::text "
    "FROM job_positions p JOIN jobs j ON j.id = p.job_id "
    "WHERE p.xid IS NOT NULL "
    "AND (p.xid, p.sid) > ($1::xid8, $2::bigint) AND p.xid < $3::xid8 "
    "AND ($4::text IS NULL OR j.team = $4) "
    "ORDER BY p.xid, p.sid LIMIT $5::int)) s "
    "ORDER BY x, id LIMIT $5::int";

static const char sql_job[] =
    "SELECT x::text, id, team, job_id, pos, term, data FROM ("
    "SELECT coalesce(e.xid, '0'::xid8) AS x, e.id, e.team, e.job_id, "
    "false AS pos, " EV_TERMINAL("e") " AS term, "
    EV_OBJECT("e") "::text AS data "
    "FROM job_events e WHERE e.job_id = $5 AND e.team = $4 "
    "AND (coalesce(e.xid, '0'::xid8), e.id) > ($1::xid8, $2::bigint) "
    "AND coalesce(e.xid, '0'::xid8) < $3::xid8 "
    "UNION ALL "
    "SELECT p.xid, p.sid, j.team, p.job_id, true, false, "
    POS_OBJECT("p") "::text "
    "FROM job_positions p JOIN jobs j ON j.id = p.job_id "
    "WHERE p.job_id = $5 AND j.team = $4 AND p.xid IS NOT NULL "
    "AND (p.xid, p.sid) > ($1::xid8, $2::bigint) AND p.xid < $3::xid8) s "
    "ORDER BY x, id LIMIT $6::int";

static const char sql_job_state[] =
    "SELECT j.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED') AND NOT EXISTS ("
    "SELECT 1 FROM job_events e WHERE e.job_id = j.id "
    "AND (coalesce(e.xid, '0'::xid8), e.id) > ($3::xid8, $4::bigint)) "
    "FROM jobs j WHERE j.team = $1 AND j.id = $2";
/* clang-format on */

static const char sql_team[] = "SELECT 1 FROM teams WHERE name = $1";

/* The server's message into err; clears res. Returns -1. */
static int failed(PGconn *pg, PGresult *res, char *err, size_t errlen)
{
  snprintf(err, errlen, "%s", PQerrorMessage(pg));
  PQclear(res);
  return -1;
}

int db_events_horizon(PGconn *pg, uint64_t *xmin, char *err, size_t errlen)
{
  PGresult *res = PQexec(pg, sql_horizon);

  if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
    return failed(pg, res, err, errlen);
  *xmin = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
  PQclear(res);
  return 0;
}

int db_events_read(PGconn *pg, const char *team, const char *job,
                   const struct evcursor *after, uint64_t horizon, int limit,
                   db_event_fn each, void *cls, char *err, size_t errlen)
{
  char xid[24], id[24], hz[24], lim[16];
  const char *params[6] = {xid, id, hz, team, job ? job : lim, lim};
  PGresult *res;
  int i, n;

  snprintf(xid, sizeof(xid), "%" PRIu64, after->xid);
  snprintf(id, sizeof(id), "%" PRId64, after->id);
  snprintf(hz, sizeof(hz), "%" PRIu64, horizon);
  snprintf(lim, sizeof(lim), "%d", limit);
  if (job)
    res = PQexecParams(pg, sql_job, 6, NULL, params, NULL, NULL, 0);
  else
    res = PQexecParams(pg, sql_stream, 5, NULL, params, NULL, NULL, 0);
  if (PQresultStatus(res) != PGRES_TUPLES_OK)
    return failed(pg, res, err, errlen);
  n = PQntuples(res);
  for (i = 0; i < n; i++) {
    struct db_event ev;
    ev.at.xid = strtoull(PQgetvalue(res, i, 0), NULL, 10);
    ev.at.id = strtoll(PQgetvalue(res, i, 1), NULL, 10);
    ev.team = PQgetvalue(res, i, 2);
    ev.job_id = PQgetvalue(res, i, 3);
    ev.position = PQgetvalue(res, i, 4)[0] == 't';
    ev.terminal = PQgetvalue(res, i, 5)[0] == 't';
    ev.data = PQgetvalue(res, i, 6);
    each(cls, &ev);
  }
  PQclear(res);
  return n;
}

int db_events_job_state(PGconn *pg, const char *team, const char *job,
                        const struct evcursor *after, bool *exists, bool *done,
                        char *err, size_t errlen)
{
  char xid[24], id[24];
  const char *params[4] = {team, job, xid, id};
  PGresult *res;

  snprintf(xid, sizeof(xid), "%" PRIu64, after->xid);
  snprintf(id, sizeof(id), "%" PRId64, after->id);
  res = PQexecParams(pg, sql_job_state, 4, NULL, params, NULL, NULL, 0);
  if (PQresultStatus(res) != PGRES_TUPLES_OK)
    return failed(pg, res, err, errlen);
  *exists = PQntuples(res) == 1;
  *done = *exists && PQgetvalue(res, 0, 0)[0] == 't';
  PQclear(res);
  return 0;
}

int db_events_team_exists(PGconn *pg, const char *team, char *err,
                          size_t errlen)
{
  const char *params[1] = {team};
  PGresult *res = PQexecParams(pg, sql_team, 1, NULL, params, NULL, NULL, 0);
  int n;

  if (PQresultStatus(res) != PGRES_TUPLES_OK)
    return failed(pg, res, err, errlen);
  n = PQntuples(res);
  PQclear(res);
  return n > 0;
}
