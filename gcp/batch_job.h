/*
 * job.h — the pure half of the Cloud Batch v1 client: the deterministic
 * Batch job id, the Job body built from an admitted job (SPEC §4), the map
 * from Batch job states to gpugate's, google.rpc.Status error parsing and
 * the retry back-off. No I/O, no globals: everything here is safe to call
 * from any thread and is unit-tested as tables (tests/unit/test_batch.c).
 */
#ifndef GPUGATE_BATCH_JOB_H
#define GPUGATE_BATCH_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#define BATCH_LABEL_MAX 63  /* GCP label keys and values */
#define BATCH_JOB_ID_MAX 63 /* Batch jobId */
#define BATCH_BACKOFF_BASE_MS 500L
#define BATCH_BACKOFF_CAP_MS 60000L

/* What batch_job_body() needs to know about one admitted attempt. */
struct batch_job_input {
  const char *job_id;      /* gpugate's id, "j-01jdq8m2v7x3k9" */
  int attempt;             /* 1, 2, ... */
  const char *team;        /* team name */
  const char *queue;       /* the team queue the job was submitted to */
  const char *cost_center; /* the team's; NULL or "" = none */
  const char *region;      /* admitted location, "us-central1" */
  const char *flavor;      /* admitted flavor's name */
  /* borrowed: the flavor's spec as stored (handlers/flavors.c fields):
   * provisioning_model, machine_type, accelerator_type, reservation,
   * max_run_duration_s */
  json_t *flavor_spec;
  /* borrowed: the job's spec as stored (handlers/jobs.c job_fields):
   * task {image, commands, env, cpu_milli, memory_mib, gpu}, task_count,
   * parallelism, max_retry_count, labels, checkpoint_uri */
  json_t *job_spec;
  /* the effective limit (job, cluster-queue default or flavor); <= 0 falls
   * back to the flavor's max_run_duration_s, else none is sent */
  long max_run_duration_s;
  /* optional (NULL or ""): the Pub/Sub topic ("projects/p/topics/t") Batch
   * publishes the job's state changes to, and the service account email
   * the job's VMs run as */
  const char *pubsub_topic;
  const char *service_account;
  /* the gpugate-deployment label (GPUGATE_DEPLOYMENT); NULL or "" = none */
  const char *deployment;
};

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

/* A failed Batch (or OAuth) call, parsed from its HTTP status and body. */
struct batch_error {
  long http_status;    /* 0 = transport failure (no HTTP response) */
  char status[32];     /* google.rpc.Code name, "RESOURCE_EXHAUSTED" */
  char message[512];   /* printable, NUL-terminated, never a token */
  long retry_after_ms; /* Retry-After or RetryInfo; -1 = none given */
  bool retryable;      /* 408, 429, 5xx but 501, 409 ABORTED, transport */
  bool already_exists; /* 409 ALREADY_EXISTS (or a bare 409) */
  bool not_found;      /* 404 */
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

/*
 * Write the full resource name "projects/<p>/locations/<r>/jobs/<id>" into
 * out. Returns 0, or -1 when it does not fit.
 */
int batch_job_name(const char *project, const char *region,
                   const char *batch_job_id, char *out, size_t outlen);

/*
 * Copy s into out (outlen >= 64) as a GCP label value: ASCII letters
 * lowercased, [a-z0-9_-] kept, any other character (a UTF-8 sequence
 * counting as one) replaced by '_', cut at 63 characters. Returns the
 * length written.
 */
size_t batch_label_sanitize(const char *s, char *out, size_t outlen);

/* Whether k is a valid GCP label key: [a-z][a-z0-9_-]{0,62}. */
bool batch_label_key_ok(const char *k);

/*
 * Build the Batch v1 Job resource for one attempt (SPEC §4): one task group,
 * the container runnable, environment (the job's env plus GPUGATE_JOB_ID,
 * GPUGATE_ATTEMPT and, when set, GPUGATE_CHECKPOINT_URI), compute resource,
 * maxRunDuration "<N>s", maxRetryCount; the allocation policy (region,
 * machine type, provisioning model — RESERVATION becomes RESERVATION_BOUND
 * with its reservation —, accelerators {type, count = the task's gpu},
 * installGpuDrivers) and the labels gpugate-team, gpugate-job,
 * gpugate-queue, gpugate-flavor, cost-center plus the job's own, on both the
 * job and its allocation policy; logs to Cloud Logging.
 *
 * Returns a new reference, or NULL when the input is incomplete or invalid
 * (no image, unknown provisioning model, RESERVATION without a reservation,
 * GPUs without an accelerator type, bad region, id or attempt) or memory
 * runs out. The inputs are only borrowed.
 */
json_t *batch_job_body(const struct batch_job_input *in);

/* Parse Job.status.state ("QUEUED", ...); NULL or unknown → UNKNOWN. */
enum batch_state batch_state_parse(const char *batch_state);

/*
 * When Batch says a v1 Job in a final state (SUCCEEDED, FAILED,
 * CANCELLED) ended: the latest of its status.statusEvents[].eventTime, in
 * µs since the epoch; 0 when it is not final or names no valid time. The
 * job is borrowed (NULL: 0).
 */
int64_t batch_job_ended_us(const json_t *job);

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

/*
 * Fill *e from an HTTP status, the response body (may be NULL or not JSON,
 * e.g. an HTML 502 page) and the Retry-After header value (may be NULL;
 * delta-seconds or an HTTP-date, measured against time(NULL)). The delay is
 * the larger of Retry-After and a google.rpc.RetryInfo retryDelay. Returns
 * 0 when the body was a google.rpc.Status (or an OAuth error object), -1
 * when *e was derived from the HTTP status alone. Never fails otherwise.
 */
int batch_parse_error(long http_status, const char *body,
                      const char *retry_after_header, struct batch_error *e);

/* batch_parse_error() with an explicit clock for HTTP-date Retry-After. */
int batch_parse_error_at(long http_status, const char *body,
                         const char *retry_after_header, time_t now,
                         struct batch_error *e);

/*
 * Fill *e for a failure without an HTTP response (connect error, timeout,
 * reset, oversize reply): http_status 0, the given status name and message,
 * retryable as told, no delay.
 */
void batch_error_transport(struct batch_error *e, const char *status,
                           const char *message, bool retryable);

/*
 * Delay before retry number try_no (0 = the first retry): full jitter,
 * uniform in [0, min(60 s, 500 ms * 2^try_no)], and never below
 * retry_after_ms when that is >= 0. *rng_state is the caller's PRNG state
 * (any value; 0 is replaced by a fixed seed), advanced on each call.
 */
long batch_backoff_ms(int try_no, long retry_after_ms, unsigned *rng_state);

#endif
