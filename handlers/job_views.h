/*
 * job_views.h — the team job list with a name search, for jobs_list to hand
 * ?name= over to, and the follow of a job's events, for jobs_events to
 * hand ?follow= over to (handlers/job_views.c).
 */
#ifndef GPUGATE_HANDLERS_JOB_VIEWS_H
#define GPUGATE_HANDLERS_JOB_VIEWS_H

#include "server/req.h"

/* GET /v1/teams/{team}/jobs with ?name=: the same page, filtered by a
 * substring of the job's name. */
enum gg_code job_views_team_list(struct gg_req *req);

/* GET /v1/teams/{team}/jobs/{id}/events with ?follow=: true streams the
 * job's events as Server-Sent Events until its last one; false (or any
 * other value: 400) is for jobs_events' page. Returns GG_OK with the
 * stream set, or a problem. */
enum gg_code job_views_follow(struct gg_req *req);

#endif
