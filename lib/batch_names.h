/*
 * batch_names.h — Cloud Batch's names and states as gpugate reads them:
 * the deterministic Batch job id of an attempt and its parse, and Batch's
 * job states folded into what gpugate acts on (batch_state_target). Pure
 * functions over strings, below both gcp/ (which sends and reads them) and
 * db/ (which records what Batch reported), so that db/ includes no gcp/.
 * No I/O, no globals; unit-tested as tables (tests/unit/test_batch.c).
 */
#ifndef GPUGATE_BATCH_NAMES_H
#define GPUGATE_BATCH_NAMES_H

#include <stddef.h>

#define BATCH_JOB_ID_MAX 63 /* Batch jobId */

/*
 * Batch job states (Job.status.state), folded the way gpugate acts on them.
 */
enum batch_state {
  BATCH_STATE_UNKNOWN = 0, /* STATE_UNSPECIFIED, missing or unrecognised */
  BATCH_STATE_QUEUED,      /* QUEUED, SCHEDULED: waiting for capacity */
  BATCH_STATE_RUNNING,     /* RUNNING */
  BATCH_STATE_SUCCEEDED,   /* SUCCEEDED */
  BATCH_STATE_FAILED,      /* FAILED */
  BATCH_STATE_CANCELLED,   /* CANCELLED */
  BATCH_STATE_DELETED,     /* DELETION_IN_PROGRESS, or a 404 on get */
  BATCH_STATE_CANCELLING   /* CANCELLATION_IN_PROGRESS: may still run */
};

/* Why gpugate last asked Batch to stop the job, if it did. */
enum batch_intent {
  BATCH_INTENT_NONE = 0, /* we never cancelled it */
  BATCH_INTENT_CANCEL,   /* the user cancelled the job */
  BATCH_INTENT_EVICT     /* preemption, drain or a Flex Start re-dispatch */
};

/*
 * Write the Batch jobId of one attempt, "gpugate-<job_id>-a<attempt>", into
 * out. Returns 0, or -1 (out set to "") when attempt < 1, the result does not
 * fit outlen, is longer than 63 characters or does not match
 * ^[a-z]([a-z0-9-]*[a-z0-9])?$ (e.g. an upper-case job id).
 */
int batch_job_id(const char *job_id, int attempt, char *out, size_t outlen);

/*
 * Parse a Batch job id or full name that gpugate may have made:
 * "gpugate-<job>-a<attempt>" or "gpugate-<job>-a<attempt>-r<k>" (a raced
 * copy, k >= 1). Writes the gpugate job id to id and the attempt to
 * *attempt, and k to *race_k (0 when not raced; may be NULL). Returns 0,
 * or -1 when the name is not of that form.
 */
int batch_job_id_parse(const char *name, char *id, size_t idlen, int *attempt,
                       int *race_k);

/* Parse Job.status.state ("QUEUED", ...); NULL or unknown → UNKNOWN. */
enum batch_state batch_state_parse(const char *batch_state);

/*
 * The gpugate job state a Batch state leads to, given what we asked for:
 * "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "PENDING" (an
 * eviction completed: the caller requeues with attempt + 1), or NULL for
 * "no change" (UNKNOWN, or still queued/running while our cancel is in
 * flight). *reason (may be NULL) gets a static reason for FAILED, CANCELLED
 * and PENDING outcomes, else NULL. Pass BATCH_STATE_DELETED for a 404.
 */
const char *batch_state_target(enum batch_state st, enum batch_intent intent,
                               const char **reason);

#endif
