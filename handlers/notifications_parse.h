/*
 * notifications_parse.h — the pure reading of a Pub/Sub push body for
 * POST /v1/batch/notifications: which Batch job changed to which state, or
 * why the message is none of gpugate's business. No I/O, no globals: the
 * fuzz harness for push bodies calls notifications_parse_push() directly.
 */
#ifndef GPUGATE_NOTIFICATIONS_PARSE_H
#define GPUGATE_NOTIFICATIONS_PARSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* What a push carries. Every kind but PUSH_JOB_STATE is acknowledged and
 * dropped: redelivering it could never help. */
enum push_kind {
  PUSH_JOB_STATE, /* a state change of one of gpugate's Batch jobs */
  PUSH_IGNORED,   /* a well-formed message that is no job state change */
  PUSH_FOREIGN,   /* a job state change of a Batch job gpugate did not name */
  PUSH_MALFORMED  /* not a Pub/Sub push envelope of Batch's attributes */
};

/* The longest JobName (projects/P/locations/L/jobs/ID) and state read. */
#define PUSH_NAME_MAX 256
#define PUSH_STATE_MAX 40

struct push_msg {
  enum push_kind kind;
  char job_name[PUSH_NAME_MAX]; /* as sent: PUSH_JOB_STATE only */
  char state[PUSH_STATE_MAX];   /* NewJobState: PUSH_JOB_STATE only */
  const char *why;              /* static: why it is not PUSH_JOB_STATE */
};

/*
 * Read a push envelope (borrowed): {"message": {"attributes": {"Type",
 * "JobName", "NewJobState", ...}, "data", "messageId", ...},
 * "subscription"}. A job state change is Type JOB_STATE_CHANGED (or no
 * Type) with a JobName whose last segment is gpugate's Batch job id —
 * gpugate-<job id>-a<attempt>[-r<k>] — and a NewJobState of upper-case
 * letters and '_'. Fills *out; returns out->kind.
 */
enum push_kind notifications_parse_envelope(const json_t *env,
                                            struct push_msg *out);

/*
 * The same from the raw body (borrowed, len bytes, need not be
 * NUL-terminated): anything that is not one JSON object is
 * PUSH_MALFORMED.
 */
enum push_kind notifications_parse_push(const char *body, size_t len,
                                        struct push_msg *out);

/*
 * Whether base (the last segment of a Batch job name) is one gpugate
 * creates: gpugate-<id>-a<attempt>[-r<k>], id of [a-z0-9-], attempt 1 to
 * 9 digits, k 1 to 4 digits, 63 characters at most.
 */
bool notifications_is_gpugate_job(const char *base);

#endif
