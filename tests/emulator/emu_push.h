/*
 * emu_push.h — Pub/Sub push delivery of Batch job-state notifications to
 * EMU_PUSH_URL, from one worker thread in event order. Thread-safe.
 */
#ifndef GPUGATE_EMU_PUSH_H
#define GPUGATE_EMU_PUSH_H

#include <jansson.h>

/* Start the worker. Call after curl_global_init(). Returns 0 or -1. */
int emu_push_start(void);

/* Stop the worker; undelivered messages are dropped. */
void emu_push_stop(void);

/*
 * Queue a JOB_STATE_CHANGED message for job name/uid entering state, when
 * EMU_PUSH_URL is set. Never blocks on the network; strings are copied.
 */
void emu_push_job_state(const char *name, const char *uid, const char *state);

/* {"queued", "delivered", "failed", "attempts"} as a new JSON object. */
json_t *emu_push_stats(void);

#endif
