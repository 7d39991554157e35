/*
 * batch_job.h — the pure half of the Cloud Batch v1 client: the Job body
 * built from an admitted job (SPEC §4), the full job name and labels,
 * google.rpc.Status error parsing and the retry back-off. The deterministic
 * Batch job id and the map from Batch job states to gpugate's are
 * lib/batch_names.h's (included here), which db/ shares. No I/O, no globals:
 * everything here is safe to call from any thread and is unit-tested as tables
 * (tests/unit/test_batch.c).
 */
#ifndef GPUGATE_BATCH_JOB_H
#define GPUGATE_BATCH_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "lib/batch_names.h"

#define BATCH_LABEL_MAX 63 /* GCP label keys and values */
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

/*
 * When Batch says a v1 Job in a final state (SUCCEEDED, FAILED,
 * CANCELLED) ended: the latest of its status.statusEvents[].eventTime, in
 * µs since the epoch; 0 when it is not final or names no valid time. The
 * job is borrowed (NULL: 0).
 */
int64_t batch_job_ended_us(const json_t *job);

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
