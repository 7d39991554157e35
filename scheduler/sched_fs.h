/*
 * sched_fs.h — fair share over time inside one scheduling cycle
 * (scheduler/sched.c's helper): the team queues' scores as the cycle
 * goes, the head of a cluster queue that orders by usage, the minimum
 * charge of an admission, and the order of preemption victims.
 *
 * The usage and its decay are scheduler/fairshare.c's; this file only
 * orders by the scores sched_input gives. Pure: no I/O, no globals.
 */
#ifndef GPUGATE_SCHED_FS_H
#define GPUGATE_SCHED_FS_H

#include <stdbool.h>
#include <stdint.h>

#include "scheduler/sched_types.h"

/* A team queue's pending jobs within its usage_fs CQ: pend_idx[begin,
 * end) of the cycle, cur the first not yet taken. */
struct sched_fs_seg {
  int tq, begin, end, cur;
};

/* A cycle's fair share: a usage_fs CQ's pending jobs are grouped by team
 * queue (segments, each in priority-then-FIFO order); its head is the
 * best segment head by score and priority (sched_fs_pick()). */
struct sched_fs {
  const struct sched_input *in;
  double *tq_score; /* per team queue: working copy, grows on admission */
  double *cq_fs;    /* per CQ: Σ of its team queues' score × weight */
  bool *coh_fs;     /* per cohort: every CQ of it sets usage_fs */
  struct sched_fs_seg *segs;
  int *seg_start;     /* per CQ: its segments, [seg_start[c], seg_start[c+1]) */
  double *cand_score; /* per admitted job: scratch for the victims' order */
  int *cand_group;
};

/* A preemption candidate with Kueue's ordering keys. */
struct sched_cand {
  bool other; /* from another (borrowing) CQ of the cohort */
  int32_t priority;
  double score; /* its team queue's usage score (0: none) */
  int group;    /* the score's tie group (fs_groups()): what sorts */
  int64_t admitted_at;
  int64_t seq;
  int idx; /* into admitted */
};

/* Allocate f for in (scores copied, cohorts marked). Returns 0, or -1
 * when out of memory (free f with sched_fs_free() either way). */
int sched_fs_init(struct sched_fs *f, const struct sched_input *in);
void sched_fs_free(struct sched_fs *f);

/* Job j's team queue when its CQ orders by usage, else -1. */
int sched_fs_job_tq(const struct sched_input *in, const struct sched_job *j);

/* The score of job j's team queue as the cycle stands (0: none). */
double sched_fs_score(const struct sched_fs *f, const struct sched_job *j);

/*
 * Group the pending jobs of each usage_fs CQ into team-queue segments:
 * pend_idx holds the pending jobs by CQ (pend_start, n_cqs + 1 entries),
 * each CQ's sorted by team queue (sched_fs_job_tq()), then priority and
 * creation.
 */
void sched_fs_segments(struct sched_fs *f, const int *pend_start,
                       const int *pend_idx);

/*
 * The head of usage_fs CQ c: the position in pend_idx of the best of its
 * segments' first jobs not taken (precedence usage: score, then priority,
 * then creation; priority: priority, score, creation; scores equal as
 * fs_cmp() has them), or -1 when none is left. Costs its team queues, not
 * its jobs.
 */
int sched_fs_pick(struct sched_fs *f, int c, const int *pend_idx,
                  const bool *taken);

/* An admission's minimum charge goes on its team queue's score at once:
 * a burst weighs before its jobs have run (Kueue's entry penalty). */
void sched_fs_charge(struct sched_fs *f, const struct sched_job *j);

/*
 * Sort n preemption candidates, the first to go first: other CQs' before
 * the CQ's own, lower priority first, then the highest usage score (by tie
 * group, so the order is total), then the latest admitted. Returns 0, or
 * -1 when out of memory (c unsorted).
 */
int sched_fs_sort_victims(struct sched_fs *f, struct sched_cand *c, int n);

#endif
