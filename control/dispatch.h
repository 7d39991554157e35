/*
 * dispatch.h — the Cloud Batch workers of one replica (with
 * GPUGATE_BATCH_BACKEND=gcp): dispatcher workers emptying the outbox and
 * a status sync that also moves Flex Start jobs past their max_wait_s.
 */
#ifndef GPUGATE_DISPATCH_H
#define GPUGATE_DISPATCH_H

#include <stddef.h>

#include "control/control_config.h"

struct dispatch;

/* Start the workers; cfg is borrowed and must outlive them. NULL with a
 * one-line reason in err on failure. */
struct dispatch *dispatch_start(const struct control_config *cfg, char *err,
                                size_t errlen);

/* Stop the workers (finishing calls in progress) and free. Accepts NULL. */
/*
 * New creates are in the outbox (this replica's leader just committed
 * admissions): wake one dispatcher thread now instead of when the NOTIFY
 * of the commit reaches its session (a round through PostgreSQL's
 * processes, tens of milliseconds on a busy machine, which an admitted
 * job spends holding its quota). Never blocks; accepts NULL.
 */
void dispatch_poke(struct dispatch *d);

void dispatch_stop(struct dispatch *d);

#endif
