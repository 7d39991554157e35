/*
 * dispatch.h — the Cloud Batch workers of one replica (with
 * GPUGATE_BATCH_BACKEND=gcp): dispatcher workers emptying the outbox and
 * a status sync that also moves Flex Start jobs past their max_wait_s.
 */
#ifndef GPUGATE_DISPATCH_H
#define GPUGATE_DISPATCH_H

#include <stddef.h>

#include "server/config.h"

struct dispatch;

/* Start the workers; cfg is borrowed and must outlive them. NULL with a
 * one-line reason in err on failure. */
struct dispatch *dispatch_start(const struct config *cfg, char *err,
                                size_t errlen);

/* Stop the workers (finishing calls in progress) and free. Accepts NULL. */
void dispatch_stop(struct dispatch *d);

#endif
