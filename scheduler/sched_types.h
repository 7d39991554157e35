/*
 * sched_types.h — the admission cycle's input and output (sched.h's
 * types): cluster queues and their flavors' quotas, cohorts, teams, team
 * queues, jobs, admissions, evictions and the reasons a job waits. Types
 * only, so that the scheduler's helpers (sched_fs.c, fairshare.c) need not
 * include sched.h, whose sched.c includes them.
 *
 * Pure: plain structs, no I/O, no globals.
 */
#ifndef GPUGATE_SCHED_TYPES_H
#define GPUGATE_SCHED_TYPES_H

#include <stdbool.h>
#include <stdint.h>

enum sched_res { SCHED_GPU = 0, SCHED_CPU, SCHED_MEM, SCHED_NRES };

#define SCHED_UNLIMITED (-1) /* borrowing_limit / lending_limit null */
#define SCHED_MAX_FLAVORS 16 /* flavors per cluster queue */

/* One resource of one flavor of a cluster queue. */
struct sched_quota {
  int64_t nominal;
  int64_t borrowing_limit; /* SCHED_UNLIMITED or ≥ 0 */
  int64_t lending_limit;   /* SCHED_UNLIMITED or 0..nominal */
};

struct sched_cq_flavor {
  int flavor;                           /* global flavor index */
  struct sched_quota quota[SCHED_NRES]; /* absent resource: all zero */
  /* DWS Calendar-mode capacity window of the flavor, seconds like now:
   * its quota counts only in [window_from, window_until), and a job goes
   * in only if now + its max_run_s ends by window_until. Both 0: none. */
  int64_t window_from, window_until;
};

enum sched_strategy { SCHED_BEST_EFFORT_FIFO = 0, SCHED_STRICT_FIFO };
enum sched_within { SCHED_WITHIN_NEVER = 0, SCHED_WITHIN_LOWER_PRIORITY };
enum sched_reclaim {
  SCHED_RECLAIM_NEVER = 0,
  SCHED_RECLAIM_LOWER_PRIORITY,
  SCHED_RECLAIM_ANY
};
enum sched_when_borrow { SCHED_BORROW = 0, SCHED_BORROW_TRY_NEXT };
enum sched_when_preempt { SCHED_PREEMPT_TRY_NEXT = 0, SCHED_PREEMPT };
enum sched_stop { SCHED_STOP_NONE = 0, SCHED_STOP_HOLD, SCHED_STOP_DRAIN };
/* usage_fair_sharing's precedence: score before priority, or after it */
enum sched_precedence { SCHED_PRECEDENCE_USAGE = 0, SCHED_PRECEDENCE_PRIORITY };

struct sched_cq {
  int cohort; /* cohort index, or -1 for none */
  enum sched_strategy strategy;
  enum sched_within within;
  enum sched_reclaim reclaim;
  enum sched_when_borrow when_borrow;
  enum sched_when_preempt when_preempt;
  double weight;         /* fair_sharing_weight, ≥ 0 */
  int64_t min_runtime_s; /* its jobs are not preempted younger */
  enum sched_stop stop;
  /* fair share over time (usage_fair_sharing): its pending jobs are
   * ordered by their team queue's score (sched_tq); an admission adds its
   * minimum charge (fs_min_charge_s seconds of the request, weighted by
   * fs_weights per GPU, CPU and GiB) to the score at once */
  bool usage_fs;
  enum sched_precedence precedence;
  double fs_weights[SCHED_NRES];
  double fs_min_charge_s; /* usage_fair_sharing.min_charge_s, ≥ 0 */
  int n_flavors;
  struct sched_cq_flavor flavors[SCHED_MAX_FLAVORS]; /* in order */
};

/* A team's budget input: hold new jobs once spent reaches budget. */
struct sched_team {
  bool hold;     /* budget_policy "hold" with a budget */
  double budget; /* monthly budget, USD */
  double spent;  /* month-to-date net + estimates of admitted jobs */
};

/* A team queue of a cluster queue with usage_fs. */
struct sched_tq {
  int cq;        /* its cluster queue */
  double weight; /* fair_sharing_weight, > 0 */
  double score;  /* Σ weight_r × usage_r ÷ weight, ≥ 0, as of now */
};

struct sched_job {
  int cq;   /* cluster queue index */
  int tq;   /* team queue index into sched_input.tqs; read only when its
               CQ has usage_fs and tqs[tq].cq is that CQ (else: none) */
  int team; /* team index, or -1 */
  int32_t priority;
  bool can_preempt;            /* class policy PreemptLowerPriority */
  int64_t created_at;          /* ordering key; eviction keeps it */
  int64_t seq;                 /* unique tie-breaker (e.g. row id) */
  int64_t request[SCHED_NRES]; /* parallelism × per-task */
  double estimated_cost;       /* USD, for the budget */
  uint32_t excluded_flavors;   /* bit k: its CQ's flavors[k] cannot take it
                                  (0: any flavor may) */
  int64_t max_run_s;           /* pending: longest run, seconds (0: unknown,
                                  kept out of windowed flavors) */
  bool preempting;             /* pending: it chose victims in an earlier
                                  cycle and has not been admitted since; it
                                  is decided before every CQ's heads */
  /* admitted jobs only */
  int flavor;          /* global flavor index it holds quota in */
  int64_t admitted_at; /* seconds */
  bool evicting;       /* already being evicted: still holds quota */
};

enum sched_pending_reason {
  SCHED_ADMITTED = 0, /* not pending: admitted this cycle */
  SCHED_INSUFFICIENT_QUOTA,
  SCHED_BUDGET_EXCEEDED,
  SCHED_QUEUE_STOPPED,
  SCHED_WAITING_FOR_HEAD, /* StrictFIFO: behind a blocked head */
  SCHED_PREEMPTING        /* victims chosen; waits for release */
};

enum sched_evict_reason {
  SCHED_EVICT_IN_CLUSTER_QUEUE = 1, /* preempted by a higher priority job */
  SCHED_EVICT_RECLAIM,              /* its CQ borrowed; lender reclaimed */
  SCHED_EVICT_STOPPED               /* HoldAndDrain */
};

struct sched_admission {
  int job;       /* index into pending */
  int flavor;    /* global flavor index */
  bool borrowed; /* usage above the CQ's nominal in some resource */
};

struct sched_eviction {
  int job;       /* index into admitted */
  int preemptor; /* index into pending, or -1 (drain) */
  enum sched_evict_reason reason;
};

struct sched_input {
  int64_t now;   /* seconds */
  int n_flavors; /* global flavors: 0..n_flavors-1 */
  int n_cohorts;
  const struct sched_cq *cqs;
  int n_cqs;
  const struct sched_team *teams;
  int n_teams;
  const struct sched_job *admitted; /* hold quota (incl. evicting) */
  int n_admitted;
  const struct sched_job *pending;
  int n_pending;
  const struct sched_tq *tqs; /* fair share over time (may be NULL) */
  int n_tqs;
};

struct sched_output {
  struct sched_admission *admissions; /* in the order they were decided */
  int n_admissions;
  struct sched_eviction *evictions;
  int n_evictions;
  enum sched_pending_reason *reasons; /* per pending job */
};

#endif
