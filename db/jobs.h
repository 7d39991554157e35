/*
 * jobs.h — storage of jobs, their events and idempotency keys.
 *
 * Every statement that reads or changes a job names the team in its WHERE
 * clause: a job of another team does not exist for the caller.
 */
#ifndef GPUGATE_DB_JOBS_H
#define GPUGATE_DB_JOBS_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "db/job_target.h"
#include "lib/err.h"

struct db_conn;

/*
 * Resolve queue and priority class (NULL: the default class) for team from
 * the per-process cache (db/targets.h): true on a hit, with t filled and
 * t->cached set. Free t with db_job_target_free() either way.
 */
bool db_job_target_cached(const char *team, const char *queue,
                          const char *priority_class, struct db_job_target *t);

/*
 * The same from the database (db unreachable when NULL). Records 422 field
 * errors ("queue", "priority_class") in err when they do not exist. Free
 * with db_job_target_free().
 */
enum gg_code db_job_target(struct db_conn *db, struct gg_err *err,
                           const char *team, const char *queue,
                           const char *priority_class, struct db_job_target *t);

/* A validated submission ready to store. */
struct db_job_new {
  const char *team;
  const char *queue;
  const char *name;
  json_t *spec;       /* borrowed: normalised body */
  json_t *labels;     /* borrowed: object of strings */
  int64_t request[3]; /* gpu, cpu_milli, memory_mib (whole job) */
  int64_t max_run_duration_s;
  const char *actor; /* who submits, for the first event; may be NULL */
};

/* Outcome of an Idempotency-Key. */
enum db_idem {
  DB_IDEM_NEW,      /* first use (or none): the job was stored */
  DB_IDEM_REPLAY,   /* same key, same body: status, location, body */
  DB_IDEM_MISMATCH, /* same key, another body: 422 */
  DB_IDEM_IN_FLIGHT /* the first request is still running: 409 */
};

/* What a submission did. */
struct db_submit_result {
  bool stale;        /* validated against a superseded configuration:
                        nothing stored, the target cache flushed; validate
                        again and retry */
  enum db_idem idem; /* with a key: NEW when this request stored the job */
  char id[32];       /* the stored job's id (NEW only) */
  char *text;        /* and the job as the reply's JSON (NEW only; new
                        string) */
  size_t text_len;
  int status;     /* REPLAY: the first response's status, */
  char *location; /* its Location (new string or NULL) */
  char *body;     /* and its body (new string) */
};
void db_submit_result_free(struct db_submit_result *r);

/*
 * Store a new PENDING job with its first event and wake the admission
 * loop — only while t's configuration version is still current — and,
 * when idem_key is non-NULL, claim the key (taking over one that expired)
 * and record the response, all atomically. One round trip to PostgreSQL
 * without a key, two with one. *out says what happened (free with
 * db_submit_result_free); the return is GG_OK unless the database failed.
 */
enum gg_code db_job_submit(struct db_conn *db, struct gg_err *err,
                           const struct db_job_new *j,
                           const struct db_job_target *t, const char *idem_key,
                           const char *idem_hash, struct db_submit_result *out);

/* NOTIFY the admission loop of new submissions on pg (a session of the
 * caller's own). 0, or -1 with err filled. */
int db_wake_admission(PGconn *pg, char *err, size_t errlen);

/*
 * The state of (team, key) for a request whose body hashes to hash,
 * without claiming it: out->idem is NEW when the key is unused or
 * expired. For requests that fail before they are stored.
 */
enum gg_code db_idem_read(struct db_conn *db, struct gg_err *err,
                          const char *team, const char *key, const char *hash,
                          struct db_submit_result *out);

/* One job of team as the API shows it, as JSON text (GG_JSON_DUMP) in
 * *text (free() it) of *len bytes; 404 when absent. */
enum gg_code db_job_get(struct db_conn *db, struct gg_err *err,
                        const char *team, const char *id, char **text,
                        size_t *len);

/* Filters of a job list; NULL fields do not filter. */
struct db_job_filter {
  const char *states; /* comma-separated states */
  const char *queue;
  const char *label_key;
  const char *label_value;
  int64_t after_seq; /* 0 = from the newest */
  int limit;
};

/*
 * A page of team's jobs, newest first. *items is a new array; *next_seq
 * the cursor of the next page or 0.
 */
enum gg_code db_job_list(struct db_conn *db, struct gg_err *err,
                         const char *team, const struct db_job_filter *f,
                         json_t **items, int64_t *next_seq);

/*
 * Cancel a job (idempotent: a finished job is returned as it is). Without
 * a Batch backend (batch false) an admitted job is cancelled at once. actor
 * (may be NULL) is who cancels, for the event. GG_CONFLICT when the job's
 * run already succeeded at Batch and the job is finishing (a race's winner
 * SUCCEEDED while its losers stop): it ends SUCCEEDED, so a cancel that
 * is accepted always ends the job CANCELLED. *out: a new reference on
 * GG_OK, else NULL.
 */
enum gg_code db_job_cancel(struct db_conn *db, struct gg_err *err, bool batch,
                           const char *actor, const char *team, const char *id,
                           json_t **out);

/* The state history of a job, oldest first, paged by event id. */
enum gg_code db_job_events(struct db_conn *db, struct gg_err *err,
                           const char *team, const char *id, int64_t after,
                           int limit, json_t **items, int64_t *next);

/* Pending jobs of a team queue in admission order with positions. */
enum gg_code db_queue_pending(struct db_conn *db, struct gg_err *err,
                              const char *team, const char *queue,
                              int64_t after, int limit, json_t **items,
                              int64_t *next);

/*
 * A page of jobs newest first, like db_job_list, with two more filters:
 * name_part (a substring of the job's name, NULL = any) and — when team is
 * NULL — every team (callers allow that to admins only; team_filter then
 * optionally narrows to one team). *items is a new array.
 */
enum gg_code db_job_find(struct db_conn *db, struct gg_err *err,
                         const char *team, const char *team_filter,
                         const struct db_job_filter *f, const char *name_part,
                         json_t **items, int64_t *next_seq);

/*
 * Job counts and GPU sums of team by state and queue:
 * *out = {"counts": [{"queue", "state", "jobs", "gpus"}],
 *         "totals": {STATE: {"jobs", "gpus"}}} (new reference). Answered
 * from the (team, state, queue) index, never from other teams' rows.
 */
enum gg_code db_job_summary(struct db_conn *db, struct gg_err *err,
                            const char *team, json_t **out);

#endif
