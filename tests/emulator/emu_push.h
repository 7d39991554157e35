/*
 * emu_push.h — Pub/Sub push delivery of Batch job-state notifications to
 * EMU_PUSH_URL, from several worker threads; each job's messages in the
 * order its states changed. Thread-safe.
 */
#ifndef GPUGATE_EMU_PUSH_H
#define GPUGATE_EMU_PUSH_H

#include <jansson.h>

/* Start the workers. Call after curl_global_init(). Returns 0 or -1. */
int emu_push_start(void);

/* Stop the workers; undelivered messages are dropped. */
void emu_push_stop(void);

/*
 * Queue a JOB_STATE_CHANGED message for job name/uid entering state, when
 * EMU_PUSH_URL is set. Never blocks on the network; strings are copied.
 */
void emu_push_job_state(const char *name, const char *uid, const char *state);

/* {"queued", "delivered", "failed", "attempts"} as a new JSON object. */
json_t *emu_push_stats(void);

#endif
