/*
 * events.h — serving a live event stream as Server-Sent Events, for
 * GET /v1/teams/{team}/events (handlers/events.c) and the follow of
 * GET /v1/teams/{team}/jobs/{id}/events (handlers/job_views.c).
 */
#ifndef GPUGATE_HANDLERS_EVENTS_H
#define GPUGATE_HANDLERS_EVENTS_H

#include "server/req.h"

/*
 * Reply with the stream of team's events (job NULL), or of job's, from
 * the request's Last-Event-ID (a bad one: 400 naming it), else from now
 * (team) or from the job's first event (job). 404 when the team or job
 * does not exist.
 */
enum gg_code events_serve(struct gg_req *req, const char *team,
                          const char *job);

#endif
