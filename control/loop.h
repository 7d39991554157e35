/*
 * loop.h — the admission loop. Every replica runs one; only the holder of
 * a PostgreSQL advisory lock (the leader) admits. It runs a cycle when
 * woken by NOTIFY gpugate_admission (submit, cancel, configuration change)
 * and at least every GPUGATE_ADMISSION_INTERVAL_MS.
 */
#ifndef GPUGATE_LOOP_H
#define GPUGATE_LOOP_H

#include "control/control_config.h"

struct loop;

struct dispatch;

/* Start the loop's thread; cfg is borrowed and must outlive it, and so
 * must dispatch (this replica's dispatchers, poked when the leader admits;
 * NULL: none). NULL on failure. */
struct loop *loop_start(const struct control_config *cfg,
                        struct dispatch *dispatch);

/* Stop the thread (finishing a cycle in progress) and free. Accepts NULL. */
void loop_stop(struct loop *l);

#endif
