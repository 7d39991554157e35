/*
 * emu_logs.h — the Batch emulator's jobs writing their output to Cloud
 * Logging, as Batch does for a job whose logsPolicy.destination is
 * CLOUD_LOGGING: entries of the batch_task_logs and batch_agent_logs logs,
 * posted (entries:write) to EMU_LOGGING_URL (the Cloud Logging emulator,
 * build/logging_emulator) by a thread of their own, in the order they were
 * made. Off when EMU_LOGGING_URL is unset. Thread-safe.
 */
#ifndef GPUGATE_EMU_LOGS_H
#define GPUGATE_EMU_LOGS_H

#include <jansson.h>

/* Start the writer (after curl_global_init()). 0, or -1. */
int emu_logs_start(void);
void emu_logs_stop(void); /* unwritten entries are dropped */

/*
 * Job name (projects/P/locations/L/jobs/ID, uid uid, job the submitted Job,
 * borrowed) entered state: the entries its tasks write then are queued.
 * RUNNING: an agent entry and a line per task; SUCCEEDED: a line per task,
 * or task 0's alone when it was retried (retry 1: the others ended with
 * their first run); FAILED: task 0's error (ERROR, as stderr is). Each
 * task's labels.task_id names its run (task/<uid>-group0-<i>/<retry>/0).
 * Never blocks on the network.
 */
void emu_logs_job_state(const char *name, const char *uid, const json_t *job,
                        const char *state, long long task_count, int retry);

/*
 * Task 0's first run failed and Batch runs it again (maxRetryCount >= 1):
 * task 0's error and the other tasks' last lines of their first run, then
 * task 0's first line of its second run (retry 1).
 */
void emu_logs_task_retried(const char *name, const char *uid, const json_t *job,
                           long long task_count);

#endif
