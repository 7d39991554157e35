/*
 * job_logs.h (db) — what the log reads need of a job: whether it exists in
 * a team and whether it is still live (its logs may still grow).
 */
#ifndef GPUGATE_DB_JOB_LOGS_H
#define GPUGATE_DB_JOB_LOGS_H

#include <stdbool.h>
#include <stddef.h>

#include "db/db.h"
#include "server/req.h"

/*
 * Job id of team: GG_OK with *live (PENDING, ADMITTED, QUEUED, RUNNING or
 * EVICTING), or the problem recorded (404 when the team has no such job).
 */
enum gg_code db_job_log_target(struct gg_req *req, const char *team,
                               const char *id, bool *live);

/*
 * For ids[0..n) (borrowed), live[i] says whether ids[i] is a live job; a
 * job that is gone counts as ended. Through c (no transaction open).
 * Returns 0, or -1 with err.
 */
int db_jobs_live(struct db_conn *c, const char *const *ids, size_t n,
                 bool *live, char *err, size_t errlen);

#endif
