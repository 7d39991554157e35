/*
 * sched_regions.h (db) — a cycle's lists of allowed regions: every
 * pending job's `locations` is an input of the admission cycle, but a
 * workload pinned to regions names one of a few lists, so each distinct
 * text is parsed once a cycle (json_loads of every pending job's list was
 * most of the leader's CPU with 10,000 jobs pending: malloc, free and
 * Jansson), and the flavors it excludes are worked out once per cluster
 * queue. Past SCHED_REGIONS_MAX distinct texts, a job's list is parsed on
 * its own. One per cycle (db_sched_state_build), on the leader's thread.
 */
#ifndef GPUGATE_DB_SCHED_REGIONS_H
#define GPUGATE_DB_SCHED_REGIONS_H

#include <jansson.h>
#include <stdint.h>

#include "db/sched.h"

#define SCHED_REGIONS_MAX 32

struct sched_regions {
  json_t *empty;                       /* the jobs that name no region */
  const char *text[SCHED_REGIONS_MAX]; /* borrowed: the jobs' texts */
  json_t *arr[SCHED_REGIONS_MAX];
  int n;
  uint64_t *excluded; /* [cq][list, or the last: none]: the mask + 1, or 0 */
};

/* For a configuration of n_cqs cluster queues. 0, or -1 when out of
 * memory (sched_regions_free() still applies). */
int sched_regions_init(struct sched_regions *m, int n_cqs);
void sched_regions_free(struct sched_regions *m);

/*
 * The allowed regions of a job of cluster queue cq whose `locations` is
 * text (NULL or "[]": none named; text must outlive m): a new reference,
 * NULL when out of memory; *excluded gets the flavors of cq they exclude
 * (db_sched_excluded).
 */
json_t *sched_regions_get(struct sched_regions *m, const struct db_sched *cfg,
                          int cq, const char *text, uint32_t *excluded);

#endif
