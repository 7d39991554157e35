/*
 * job_views.h — the team job list with a name search, for jobs_list to hand
 * ?name= over to (handlers/job_views.c).
 */
#ifndef GPUGATE_HANDLERS_JOB_VIEWS_H
#define GPUGATE_HANDLERS_JOB_VIEWS_H

#include "server/req.h"

/* GET /v1/teams/{team}/jobs with ?name=: the same page, filtered by a
 * substring of the job's name. */
enum gg_code job_views_team_list(struct gg_req *req);

#endif
