/*
 * configwatch.h — keeps this replica's caches of submission targets
 * (db/targets.h) and of access bindings (identity/bindings.h) current: a thread
 * on its own session connection LISTENs on `gpugate_config`, which every
 * administrator change notifies on commit (0008), and flushes the cache on each
 * notification — and whenever the connection is (re)established, since
 * notifications sent while it was down are lost. The INSERT of a submission
 * checks the configuration version besides, so the cache is never acted on
 * while a notification is on its way.
 */
#ifndef GPUGATE_CONFIGWATCH_H
#define GPUGATE_CONFIGWATCH_H

#include "control/control_config.h"

struct configwatch;

/* Start the thread (cfg borrowed for its lifetime), having loaded the
 * access bindings once when the database answers. NULL on failure. */
struct configwatch *configwatch_start(const struct control_config *cfg);

/* Stop and join the thread; accepts NULL. */
void configwatch_stop(struct configwatch *w);

#endif
