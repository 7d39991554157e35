/*
 * logpoll_round.h — one poll of the replica holding the project's Cloud
 * Logging lease (control/logpoll.c's thread, migration 0035): the new
 * entries of every job some replica's followers follow (their wants, from
 * the earliest position one of them has not seen), in one entries:list
 * call within the deployment's read budget, published as a round
 * (db_log_round_put) for every replica to hand on. The jobs that ended
 * GPUGATE_LOGGING_END_GRACE_MS ago before the call are named in the round:
 * their followers end with it when it is complete.
 */
#ifndef GPUGATE_SERVER_LOGPOLL_ROUND_H
#define GPUGATE_SERVER_LOGPOLL_ROUND_H

#include <stddef.h>

#include "gcp/logging.h"
#include "db/db.h"
#include "control/control_config.h"

/* A token of the read budget: 1 taken, 0 spent (*wait_ms), -1 failed. */
typedef int (*logpoll_take_fn)(struct db_conn *c, long *wait_ms, char *err,
                               size_t errlen);
/* entries:list of filter (0, or -1 with r->status and r->err). */
typedef int (*logpoll_call_fn)(const char *filter, int page_size,
                               const char *token, struct logging_result *r);

struct logpoll_poller {
  const struct control_config *cfg; /* borrowed */
  long ttl_ms;                      /* a replica's wants count this long */
  size_t rotate; /* first job of the next poll when there are many */
  logpoll_take_fn take;
  logpoll_call_fn call;
};

/* One poll through c (no transaction open). Returns how long to wait
 * before the next (ms): 0 when the page was not all there was. */
long logpoll_round(struct db_conn *c, struct logpoll_poller *p);

#endif
