/*
 * job_target.h — what a submission is checked against (db_job_target()
 * in db/jobs.h resolves it; db/targets.h caches it): the piece the jobs
 * and the target cache share, so that neither includes the other.
 */
#ifndef GPUGATE_DB_JOB_TARGET_H
#define GPUGATE_DB_JOB_TARGET_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* What admission needs to know about a submission's target. */
struct db_job_target {
  char cluster_queue[64];
  json_t *cq_spec;    /* new reference: the CQ's stored spec */
  json_t *flavors;    /* new reference: {flavor name: flavor spec} */
  json_t *cohort_cqs; /* new reference: [spec of every other CQ in the
                         cohort] (empty without a cohort) */
  char priority_class[64];
  int32_t priority;
  bool can_preempt;
  int64_t config_version; /* of the configuration all this was read at */
  bool cached;            /* read from the cache, not the database */
};

/* Drop t's references and zero it (db/jobs_submit.c). */
void db_job_target_free(struct db_job_target *t);

#endif
