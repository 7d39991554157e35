/*
 * emu_jobs.h — the emulator's jobs and their life cycle:
 *
 *   QUEUED → SCHEDULED → RUNNING → SUCCEEDED | FAILED
 *   (any live state) → CANCELLATION_IN_PROGRESS → CANCELLED
 *   (any state) → DELETION_IN_PROGRESS → gone
 *
 * A job leaves QUEUED when its location and provisioning model have free
 * GPUs (FLEX_START jobs also wait EMU_FLEX_WAIT_MS; capacity 0 never
 * schedules) and holds them until it is terminal or gone. A ticker thread
 * drives the timed transitions; every state change is pushed (emu_push).
 * All functions are thread-safe.
 */
#ifndef GPUGATE_EMU_JOBS_H
#define GPUGATE_EMU_JOBS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum emu_jobs_rc {
  EMU_JOBS_OK = 0,
  EMU_JOBS_SAME_REQUEST, /* create retried with the same request_id */
  EMU_JOBS_EXISTS,
  EMU_JOBS_NOT_FOUND,
  EMU_JOBS_BAD_STATE,
  EMU_JOBS_NO_MEMORY
};

enum emu_outcome {
  EMU_OUTCOME_RANDOM = 0,
  EMU_OUTCOME_SUCCEED,
  EMU_OUTCOME_FAIL
};

/* What the REST layer extracted from a validated create request. */
struct emu_job_spec {
  char project[128];
  char location[128];
  char id[128];
  char request_id[40]; /* "" = none */
  char model[32];      /* provisioning model */
  long long gpus;      /* parallelism × accelerator count */
  long long task_count;
  long long run_ms;   /* -1: EMU_RUN_MS */
  long long start_ms; /* -1: EMU_START_MS */
  enum emu_outcome outcome;
  bool fail_first;     /* EMU_FAIL_FIRST_ATTEMPT: task 0's first run fails */
  long long max_retry; /* taskGroups[0].taskSpec.maxRetryCount */
};

/* Start / stop the ticker thread. */
int emu_jobs_start(void);
void emu_jobs_stop(void);

/* Wake the ticker at once (after a configuration change). */
void emu_jobs_kick(void);

/*
 * Create a job from spec and job (stolen: the Job JSON to echo, without
 * output fields). On OK or SAME_REQUEST *out is the job (new reference).
 */
enum emu_jobs_rc emu_jobs_create(const struct emu_job_spec *spec, json_t *job,
                                 json_t **out);

/* The job named name ("projects/…/jobs/ID") as a new reference in *out. */
enum emu_jobs_rc emu_jobs_get(const char *name, json_t **out);

/* Filter callback: labels (borrowed object, may be NULL) and state name. */
typedef bool (*emu_jobs_match)(const json_t *labels, const char *state,
                               void *ud);

/*
 * A page of project's jobs in location ("-" = every location) in creation
 * order, after sequence number after (0 = from the start), at most
 * page_size, as a new array. *next is the sequence to continue after, or 0
 * when this is the last page.
 */
json_t *emu_jobs_list(const char *project, const char *location,
                      emu_jobs_match match, void *ud, unsigned long long after,
                      size_t page_size, unsigned long long *next);

/*
 * Start cancelling / deleting a job. *op is the long-running Operation
 * (new reference). BAD_STATE: the job cannot be cancelled in its state.
 */
enum emu_jobs_rc emu_jobs_cancel(const char *name, json_t **op);
enum emu_jobs_rc emu_jobs_delete(const char *name, json_t **op);

/* The operation named name as a new reference in *out. */
enum emu_jobs_rc emu_jobs_operation(const char *name, json_t **out);

/* Drop every job with this ID at once, without a notification. */
size_t emu_jobs_disappear(const char *id);

/*
 * {"jobs": [...], "creates": {name: n}, "usage": [...]}: every job's
 * emulator-side view, successful creates per job name, GPUs in use.
 */
json_t *emu_jobs_dump(void);

/* How many jobs exist. */
size_t emu_jobs_count(void);

#endif
