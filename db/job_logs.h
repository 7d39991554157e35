/*
 * job_logs.h (db) — what the log reads need of a job: whether it exists in
 * a team and whether it is still live (its logs may still grow).
 */
#ifndef GPUGATE_DB_JOB_LOGS_H
#define GPUGATE_DB_JOB_LOGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db/db.h"
#include "lib/err.h"

/*
 * Job id of team: GG_OK with *live (PENDING, ADMITTED, QUEUED, RUNNING or
 * EVICTING), or the problem recorded (404 when the team has no such job).
 */
enum gg_code db_job_log_target(struct db_conn *db, struct gg_err *err,
                               const char *team, const char *id, bool *live);

/*
 * For ids[0..n) (borrowed), live[i] says whether ids[i] is a live job or
 * one that ended (finished_at) less than grace_ms ago; a job that is gone
 * counts as ended. Through c (no transaction open). Returns 0, or -1 with
 * err.
 */
int db_jobs_live(struct db_conn *c, const char *const *ids, size_t n,
                 long grace_ms, bool *live, char *err, size_t errlen);

/* ---- the one poller per project (migration 0035, control/logpoll.c) ---- */

/*
 * Take or renew project's poller lease for holder for ttl_ms: *held says
 * whether holder has it now (it was free, expired or already holder's).
 * Returns 0, or -1 with err.
 */
int db_log_lease(struct db_conn *c, const char *project, const char *holder,
                 long ttl_ms, bool *held, char *err, size_t errlen);

/* Give the lease up (at a clean stop). 0 or -1. */
int db_log_unlease(struct db_conn *c, const char *project, const char *holder,
                   char *err, size_t errlen);

/*
 * replica's followed jobs become wants (borrowed JSON text: an array of
 * {"job", "ns"}, ns the earliest position one of its followers of job
 * has not seen), renewed now. 0 or -1.
 */
int db_log_follows_set(struct db_conn *c, const char *replica,
                       const char *wants, char *err, size_t errlen);

/*
 * Every replica's followed jobs renewed within ttl_ms: rows (job, the
 * least since_ns), ordered by job (new, PQclear), or NULL with err.
 * Deletes the rows of replicas long gone.
 */
PGresult *db_log_wants(struct db_conn *c, long ttl_ms, char *err,
                       size_t errlen);

/* One poll of the holder (all borrowed; jobs, ended, entries JSON text). */
struct db_log_round {
  const char *project;
  int64_t since_ns;
  const char *jobs, *ended; /* arrays of job ids */
  bool complete;
  int64_t last_ns;     /* the page's last entry, -1 when none */
  const char *last_id; /* its insertId */
  const char *entries; /* the page's LogEntry array, oldest first */
};

/* Publish r and NOTIFY gpugate_logs, in one transaction. 0 or -1. */
int db_log_round_put(struct db_conn *c, const struct db_log_round *r, char *err,
                     size_t errlen);

/*
 * project's rounds after seq after, at most limit, in order: rows (seq,
 * since_ns, jobs, ended, complete, last_ns, last_id, entries) (new,
 * PQclear), or NULL with err.
 */
PGresult *db_log_rounds(struct db_conn *c, const char *project, long long after,
                        int limit, char *err, size_t errlen);

/* The last round's seq (0: none). 0 or -1. */
int db_log_rounds_top(struct db_conn *c, const char *project, long long *seq,
                      char *err, size_t errlen);

#endif
