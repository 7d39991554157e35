/*
 * fairshare_fields.h — the request fields of fair share over time: a
 * cluster queue's `usage_fair_sharing` and a team queue's
 * `fair_sharing_weight` (SPEC §9), as field tables and the cross-field
 * checks a table cannot say (strictly positive, at least one weight).
 */
#ifndef GPUGATE_FAIRSHARE_FIELDS_H
#define GPUGATE_FAIRSHARE_FIELDS_H

#include <jansson.h>

#include "handlers/validate.h"
#include "server/req.h"

/* The fields of a usage_fair_sharing object: half_life_s, min_charge_s,
 * resource_weights {gpu, cpu, memory}, precedence. */
extern const struct v_field fairshare_usage_fields[];

#define FAIRSHARE_WEIGHT_MAX 1e6

/* The cluster queue's "usage_fair_sharing" entry of a field table: null
 * (the default) or an object of fairshare_usage_fields. */
#define FAIRSHARE_CQ_FIELD                                                     \
  {                                                                            \
    .key = "usage_fair_sharing", .type = V_OBJECT, .flags = V_NULLABLE,        \
    .dflt = "null", .fields = fairshare_usage_fields                           \
  }

/* The team queue's "fair_sharing_weight" entry (default 1). */
#define FAIRSHARE_TQ_FIELD                                                     \
  {                                                                            \
    .key = "fair_sharing_weight", .type = V_NUMBER, .min = 0,                  \
    .max = FAIRSHARE_WEIGHT_MAX, .dflt = "1"                                   \
  }

/*
 * Checks on a normalised cluster queue spec: half_life_s > 0 (Kueue's
 * silent "0 disables it" is refused), at least one resource weight > 0.
 * Records problem_field()s on req; spec is borrowed.
 */
void fairshare_check_cq(struct gg_req *req, json_t *spec);

/* Checks on a normalised team queue spec: fair_sharing_weight > 0. */
void fairshare_check_tq(struct gg_req *req, json_t *spec);

#endif
