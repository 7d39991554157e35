/*
 * queue_status.h — the job figures of queue and cluster-queue status.
 */
#ifndef GPUGATE_DB_QUEUE_STATUS_H
#define GPUGATE_DB_QUEUE_STATUS_H

#include <jansson.h>

#include "lib/err.h"

struct db_conn;

/* Per-(team, queue) and per-CQ pending and admitted counts as
 * {"pending": n, "admitted": n}; team NULL → by cluster queue. */
enum gg_code db_job_counts(struct db_conn *db, struct gg_err *err,
                           const char *team, const char *queue_or_cq,
                           json_t **out);

/*
 * A cluster queue's usage and its cohort's lendable pool:
 * *usage = {flavor: {"gpu": n, "cpu_milli": n, "memory_mib": n}} over jobs
 * holding quota; *pool = {flavor: {resource: n}} summed over the cohort's
 * cluster queues (lending_limit, else nominal), or an empty object without
 * a cohort. Both new references.
 */
enum gg_code db_cq_usage(struct db_conn *db, struct gg_err *err, const char *cq,
                         const char *cohort, json_t **usage, json_t **pool);

#endif
