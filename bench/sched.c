/*
 * bench/sched.c — times admission passes of the pure scheduler (not a test).
 *
 * Kueue's baseline shape: 5 cohorts × 6 cluster queues, each CQ with a
 * nominal quota of 20 CPU and a borrowing limit of 100 CPU (millicores),
 * BestEffortFIFO, preemption LowerPriority within the CQ and Any within the
 * cohort; per CQ 350 small (1 CPU, priority 50), 100 medium (5 CPU,
 * priority 100) and 50 large (20 CPU, priority 200) jobs: 15,000 pending.
 *
 *   cold  — nothing admitted: one pass over all 15,000 pending jobs.
 *   busy  — every cohort's quota held by low-priority 1-CPU jobs of its
 *           first CQ (borrowing all the others lend): every CQ's head goes
 *           through victim selection (reclaim, or within its CQ).
 *   small — as cold, but small jobs have the highest priority: 600 jobs
 *           admitted over many rounds, most of them borrowing (fair
 *           sharing and re-checks at work).
 *
 * Prints, per scenario, the median and max of PASSES passes in ms and the
 * decisions of one pass. Build without the Makefile:
 *
 *   cc -std=c11 -O2 -D_GNU_SOURCE -I. -o build/bench_sched bench/sched.c \
 *      scheduler/sched*.c scheduler/fairshare.c -lm
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scheduler/sched.h"

#define N_COHORTS 5
#define CQS_PER_COHORT 6
#define N_CQS (N_COHORTS * CQS_PER_COHORT)
#define PER_CQ 500
#define N_PENDING (N_CQS * PER_CQ)
#define PASSES 20

static double now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;

  return (x > y) - (x < y);
}

static void make_cqs(struct sched_cq *cqs)
{
  int i;

  memset(cqs, 0, sizeof(*cqs) * N_CQS);
  for (i = 0; i < N_CQS; i++) {
    struct sched_cq *cq = &cqs[i];

    cq->cohort = i / CQS_PER_COHORT;
    cq->strategy = SCHED_BEST_EFFORT_FIFO;
    cq->within = SCHED_WITHIN_LOWER_PRIORITY;
    cq->reclaim = SCHED_RECLAIM_ANY;
    cq->when_borrow = SCHED_BORROW;
    cq->when_preempt = SCHED_PREEMPT_TRY_NEXT;
    cq->weight = 1;
    cq->n_flavors = 1;
    cq->flavors[0].flavor = 0;
    cq->flavors[0].quota[SCHED_CPU] =
        (struct sched_quota){20000, 100000, SCHED_UNLIMITED};
  }
}

/* Per CQ, 350 small, 100 medium, 50 large, interleaved in time; with
 * small_first, small jobs get the highest priority instead of the lowest. */
static void make_pending(struct sched_job *jobs, bool small_first)
{
  int c, k, n = 0;

  for (k = 0; k < PER_CQ; k++)
    for (c = 0; c < N_CQS; c++) {
      struct sched_job *j = &jobs[n];
      int m = k % 10; /* 7 small, 2 medium, 1 large in every 10 */

      memset(j, 0, sizeof(*j));
      j->cq = c;
      j->team = -1;
      j->priority = m < 7 ? 50 : m < 9 ? 100 : 200;
      if (small_first)
        j->priority = 250 - j->priority;
      j->request[SCHED_CPU] = m < 7 ? 1000 : m < 9 ? 5000 : 20000;
      j->can_preempt = true;
      j->created_at = k;
      j->seq = ++n;
    }
}

static int run(const char *name, const struct sched_input *in)
{
  double ms[PASSES];
  struct sched_output out;
  int i, reasons[6] = {0};

  for (i = 0; i < PASSES; i++) {
    double t0 = now_ms();

    if (sched_cycle(in, &out) < 0) {
      fprintf(stderr, "sched_cycle failed\n");
      return -1;
    }
    ms[i] = now_ms() - t0;
    if (i < PASSES - 1)
      sched_output_free(&out);
  }
  for (i = 0; i < in->n_pending; i++)
    reasons[out.reasons[i]]++;
  qsort(ms, PASSES, sizeof(ms[0]), cmp_double);
  printf("%-5s %5d pending %4d admitted, %d passes: median %.2f ms, max "
         "%.2f ms; %d admissions, %d evictions, %d preempting, %d "
         "insufficient quota\n",
         name, in->n_pending, in->n_admitted, PASSES, ms[PASSES / 2],
         ms[PASSES - 1], out.n_admissions, out.n_evictions,
         reasons[SCHED_PREEMPTING], reasons[SCHED_INSUFFICIENT_QUOTA]);
  sched_output_free(&out);
  return 0;
}

int main(void)
{
  static struct sched_cq cqs[N_CQS];
  static struct sched_job pending[N_PENDING];
  static struct sched_job admitted[N_CQS * 120];
  struct sched_input in;
  int c, k, n = 0;

  make_cqs(cqs);
  make_pending(pending, false);
  memset(&in, 0, sizeof(in));
  in.now = 100000;
  in.n_flavors = 1;
  in.n_cohorts = N_COHORTS;
  in.cqs = cqs;
  in.n_cqs = N_CQS;
  in.pending = pending;
  in.n_pending = N_PENDING;
  if (run("cold", &in) < 0)
    return EXIT_FAILURE;

  /* busy: each cohort's 120 CPU held by 1-CPU jobs of priority 10, the
   * first CQ of each cohort borrowing everything the others lend */
  for (c = 0; c < N_CQS; c++) {
    int count = c % CQS_PER_COHORT == 0 ? 120 : 0;

    for (k = 0; k < count; k++) {
      struct sched_job *j = &admitted[n];

      memset(j, 0, sizeof(*j));
      j->cq = c;
      j->team = -1;
      j->priority = 10;
      j->request[SCHED_CPU] = 1000;
      j->flavor = 0;
      j->admitted_at = k;
      j->seq = N_PENDING + ++n;
    }
  }
  in.admitted = admitted;
  in.n_admitted = n;
  if (run("busy", &in) < 0)
    return EXIT_FAILURE;

  make_pending(pending, true);
  in.admitted = NULL;
  in.n_admitted = 0;
  if (run("small", &in) < 0)
    return EXIT_FAILURE;
  return EXIT_SUCCESS;
}
