/*
 * cluster_queues.h — a cluster queue's read-only status, for views other
 * than /v1/cluster-queues that show it (handlers/team_capacity.c).
 */
#ifndef GPUGATE_HANDLERS_CLUSTER_QUEUES_H
#define GPUGATE_HANDLERS_CLUSTER_QUEUES_H

#include <jansson.h>

#include "server/req.h"

/* Add "status" (pending, admitted, weighted_share, usage[]) to obj, a
 * cluster queue as db_admin_get() returns it (borrowed, modified). */
enum gg_code cluster_queues_status(struct gg_req *req, json_t *obj);

#endif
