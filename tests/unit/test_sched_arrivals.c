/*
 * test_sched_arrivals.c — the claim the admission leader's arrivals-only
 * cycle rests on (control/admission.c), as a property of the pure
 * scheduler over seeded random cases:
 *
 *   when nothing has freed quota since a cycle whose decisions were all
 *   applied (only submissions and admissions happened since: no job left,
 *   was evicted or requeued, no configuration change) and no team is held
 *   by a budget, the old pending jobs of a cluster queue that is in no
 *   cohort, is BestEffortFIFO and holds no old job that could preempt (a
 *   class that may, in a CQ whose policy lets it, or a preemptor already)
 *   can be left out of a cycle: it decides exactly what a cycle over the
 *   whole backlog decides — the same admissions, the same evictions, the
 *   same reasons for the jobs it was given, and the old jobs keep theirs.
 *
 * Each condition is needed, and this test found what breaks without them:
 *   - preemption: a job admitted since can be a victim an old job may now
 *     choose;
 *   - the cohort: a cycle decides one head per cluster queue per round
 *     (Kueue's cycle, repeated), so the old jobs ahead of an arrival decide
 *     in which round it comes, and two arrivals in two CQs of a cohort
 *     compete for the cohort's quota in that order.
 * (Kueue itself keeps such old jobs in its inadmissible list, out of its
 * cycles, until quota is released or the configuration changes.)
 *
 * Each case settles a random backlog with full cycles (admissions
 * applied, evicted jobs back to pending), then adds arrivals in rounds
 * and compares the two cycles; the full one's decisions are applied, and
 * after a round that evicted, the backlog is settled with full cycles
 * again, as the leader gives every pending job to the cycle after an
 * eviction; after one that only admitted, the next round compares at
 * once.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched.h"
#include "tests/unit/rng.h"

Suite *sched_arrivals_suite(void);

#define N_FLAVORS 3
#define N_COHORTS 2
#define N_CQS 6
#define MAX_JOBS 256
#define CASES 2000
#define ROUNDS 6

struct world {
  struct rng rng;
  int64_t now, next_seq;
  struct sched_cq cqs[N_CQS];
  struct sched_team team;
  struct sched_job pending[MAX_JOBS];
  enum sched_pending_reason reason[MAX_JOBS]; /* as last decided */
  bool fresh[MAX_JOBS];                       /* arrived since */
  int n_pending;
  struct sched_job admitted[MAX_JOBS];
  int n_admitted;
  int preempt_percent; /* of the jobs arriving: their class may preempt */
};

static struct sched_quota rand_quota(struct rng *r, int64_t unit)
{
  struct sched_quota q;

  q.nominal = unit * below(r, 9);
  q.borrowing_limit = below(r, 3) == 0 ? SCHED_UNLIMITED : unit * below(r, 6);
  q.lending_limit =
      below(r, 3) == 0 ? SCHED_UNLIMITED : q.nominal * below(r, 5) / 4;
  return q;
}

/* Whether pending job j could preempt (the leader's test): its class may,
 * and its CQ's policy lets it within the CQ or in the cohort. */
static bool could_preempt(const struct world *w, const struct sched_job *j)
{
  const struct sched_cq *cq = &w->cqs[j->cq];

  return j->can_preempt && (cq->within != SCHED_WITHIN_NEVER ||
                            cq->reclaim != SCHED_RECLAIM_NEVER);
}

static void world_init(struct world *w, uint64_t seed)
{
  static const int64_t unit[SCHED_NRES] = {1, 500, 1024};
  static const double weights[] = {0, 0.5, 1, 2};
  int c, k, r;

  memset(w, 0, sizeof(*w));
  w->rng.s = seed;
  w->now = 10000;
  w->next_seq = 1;
  for (c = 0; c < N_CQS; c++) {
    struct sched_cq *cq = &w->cqs[c];
    int first = below(&w->rng, N_FLAVORS);
    cq->cohort = below(&w->rng, 10) < 4 ? -1 : below(&w->rng, N_COHORTS);
    cq->strategy = SCHED_BEST_EFFORT_FIFO;
    cq->within = (enum sched_within)below(&w->rng, 2);
    cq->reclaim = (enum sched_reclaim)below(&w->rng, 3);
    cq->when_borrow = (enum sched_when_borrow)below(&w->rng, 2);
    cq->when_preempt = (enum sched_when_preempt)below(&w->rng, 2);
    cq->weight = weights[below(&w->rng, 4)];
    cq->n_flavors = 1 + below(&w->rng, N_FLAVORS);
    for (k = 0; k < cq->n_flavors; k++) {
      cq->flavors[k].flavor = (first + k) % N_FLAVORS;
      for (r = 0; r < SCHED_NRES; r++)
        cq->flavors[k].quota[r] = rand_quota(&w->rng, unit[r]);
    }
  }
  w->team = (struct sched_team){false, 0, 0};
}

static void arrive(struct world *w)
{
  struct sched_job *j;
  int g;

  if (w->n_pending >= MAX_JOBS / 2)
    return;
  j = &w->pending[w->n_pending];
  memset(j, 0, sizeof(*j));
  g = 1 + below(&w->rng, 4);
  j->cq = below(&w->rng, N_CQS);
  j->team = 0;
  j->priority = 10 * below(&w->rng, 4);
  j->can_preempt = below(&w->rng, 100) < w->preempt_percent;
  j->created_at = w->now * 1000000 + w->next_seq;
  j->seq = w->next_seq++;
  j->request[SCHED_GPU] = g;
  j->request[SCHED_CPU] = 500 * g;
  j->request[SCHED_MEM] = 1024 * g;
  j->excluded_flavors = below(&w->rng, 4) == 0 ? 1u : 0u;
  j->max_run_s = 3600;
  j->flavor = -1;
  w->reason[w->n_pending] = SCHED_INSUFFICIENT_QUOTA;
  w->fresh[w->n_pending] = true;
  w->n_pending++;
}

static void input_of(const struct world *w, struct sched_input *in,
                     const struct sched_job *pending, int n_pending)
{
  memset(in, 0, sizeof(*in));
  in->now = w->now;
  in->n_flavors = N_FLAVORS;
  in->n_cohorts = N_COHORTS;
  in->cqs = w->cqs;
  in->n_cqs = N_CQS;
  in->teams = &w->team;
  in->n_teams = 1;
  in->admitted = w->admitted;
  in->n_admitted = w->n_admitted;
  in->pending = pending;
  in->n_pending = n_pending;
}

/* Apply out (decided over all of w's pending jobs): admissions join the
 * admitted set, victims go back to pending; the rest keep their reasons.
 * Returns whether anything was evicted. */
static bool apply(struct world *w, const struct sched_output *out)
{
  struct sched_job keep[MAX_JOBS];
  enum sched_pending_reason kept_reason[MAX_JOBS];
  bool gone[MAX_JOBS] = {false}, evicted[MAX_JOBS] = {false};
  int i, n = 0, na = 0;

  for (i = 0; i < out->n_admissions; i++) {
    struct sched_job j = w->pending[out->admissions[i].job];
    j.flavor = out->admissions[i].flavor;
    j.admitted_at = w->now;
    gone[out->admissions[i].job] = true;
    w->admitted[w->n_admitted++] = j;
  }
  for (i = 0; i < w->n_pending; i++) {
    w->reason[i] = out->reasons[i];
    if (gone[i])
      continue;
    keep[n] = w->pending[i];
    kept_reason[n++] = w->reason[i];
  }
  for (i = 0; i < out->n_evictions; i++)
    evicted[out->evictions[i].job] = true;
  for (i = 0; i < w->n_admitted; i++) {
    if (!evicted[i]) {
      w->admitted[na++] = w->admitted[i];
      continue;
    }
    keep[n] = w->admitted[i];
    keep[n].flavor = -1;
    kept_reason[n++] = SCHED_INSUFFICIENT_QUOTA;
  }
  w->n_admitted = na;
  memcpy(w->pending, keep, (size_t)n * sizeof(keep[0]));
  memcpy(w->reason, kept_reason, (size_t)n * sizeof(kept_reason[0]));
  memset(w->fresh, 0, sizeof(w->fresh));
  w->n_pending = n;
  return out->n_evictions > 0;
}

/* Full cycles until one decides nothing; false when it never settles or
 * leaves a preemptor (the leader runs full cycles then). */
static bool settle(struct world *w)
{
  struct sched_input in;
  struct sched_output out;
  int round, i;
  bool quiet = false;

  for (round = 0; round < 50 && !quiet; round++) {
    input_of(w, &in, w->pending, w->n_pending);
    ck_assert_int_eq(sched_cycle(&in, &out), 0);
    quiet = out.n_admissions == 0 && out.n_evictions == 0;
    apply(w, &out);
    sched_output_free(&out);
    w->now += 5;
  }
  for (i = 0; i < w->n_pending; i++)
    if (w->reason[i] == SCHED_PREEMPTING)
      return false;
  return quiet;
}

static int cmp_i64(const void *a, const void *b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

  return x < y ? -1 : x > y;
}

/* A cycle's decisions as sorted keys: admissions (seq, flavor), evictions
 * (victim seq, reason, preemptor seq). */
static int decisions(const struct sched_output *out,
                     const struct sched_job *pending,
                     const struct sched_job *admitted, int64_t *keys)
{
  int i, n = 0;

  for (i = 0; i < out->n_admissions; i++)
    keys[n++] =
        pending[out->admissions[i].job].seq * 16 + out->admissions[i].flavor;
  for (i = 0; i < out->n_evictions; i++) {
    const struct sched_eviction *e = &out->evictions[i];
    int64_t by = e->preemptor < 0 ? 0 : pending[e->preemptor].seq;
    keys[n++] = -((admitted[e->job].seq * 4 + e->reason) * 4096 + by);
  }
  qsort(keys, (size_t)n, sizeof(*keys), cmp_i64);
  return n;
}

START_TEST(arrivals_decide_as_the_backlog)
{
  static struct world w;
  static int64_t kf[2 * MAX_JOBS], ka[2 * MAX_JOBS];
  struct sched_job fresh[MAX_JOBS];
  int fresh_at[MAX_JOBS];
  long compared = 0, admitted = 0, evicted = 0, skipped = 0, left_out = 0;
  bool leave_old[N_CQS], evicting = false;
  int c, round, i, k;

  for (c = 0; c < CASES; c++) {
    world_init(&w, 0x5eed0000u + (uint64_t)c);
    /* a backlog of jobs that cannot preempt, then arrivals that may */
    w.preempt_percent = 5;
    for (i = 0, k = 5 + below(&w.rng, 40); i < k; i++)
      arrive(&w);
    w.preempt_percent = 35;
    for (round = 0; round < ROUNDS; round++) {
      struct sched_input in;
      struct sched_output full, only;
      int nf, na, nfresh = 0;
      bool left[MAX_JOBS] = {false};

      /* the leader gives every pending job to the cycles after an
       * eviction (or at the start); after one that only admitted, the
       * next may leave old jobs out at once */
      if ((round == 0 || evicting) && !settle(&w)) {
        skipped++;
        break;
      }
      for (i = 0, k = 1 + below(&w.rng, 12); i < k; i++)
        arrive(&w);
      /* the leader's rule: which CQs' old jobs stay out */
      for (i = 0; i < N_CQS; i++)
        leave_old[i] =
            w.cqs[i].cohort < 0 && w.cqs[i].strategy == SCHED_BEST_EFFORT_FIFO;
      for (i = 0; i < w.n_pending; i++)
        if (!w.fresh[i] && could_preempt(&w, &w.pending[i]))
          leave_old[w.pending[i].cq] = false;
      for (i = 0; i < w.n_pending; i++)
        if (w.fresh[i] || !leave_old[w.pending[i].cq]) {
          fresh_at[nfresh] = i;
          fresh[nfresh++] = w.pending[i];
        } else {
          left[i] = true;
          left_out++;
        }
      input_of(&w, &in, w.pending, w.n_pending);
      ck_assert_int_eq(sched_cycle(&in, &full), 0);
      input_of(&w, &in, fresh, nfresh);
      ck_assert_int_eq(sched_cycle(&in, &only), 0);

      nf = decisions(&full, w.pending, w.admitted, kf);
      na = decisions(&only, fresh, w.admitted, ka);
      ck_assert_msg(nf == na && !memcmp(kf, ka, (size_t)nf * sizeof(*kf)),
                    "case %d round %d: %d decisions over the backlog, %d "
                    "over fewer jobs",
                    c, round, nf, na);
      for (i = 0; i < nfresh; i++)
        ck_assert_msg(full.reasons[fresh_at[i]] == only.reasons[i],
                      "case %d round %d: job %lld: reason %d over the "
                      "backlog, %d over fewer jobs",
                      c, round, (long long)fresh[i].seq,
                      (int)full.reasons[fresh_at[i]], (int)only.reasons[i]);
      for (i = 0; i < w.n_pending; i++)
        ck_assert_msg(!left[i] || full.reasons[i] == w.reason[i],
                      "case %d round %d: old job %lld left out: reason %d, "
                      "now %d",
                      c, round, (long long)w.pending[i].seq, (int)w.reason[i],
                      (int)full.reasons[i]);
      compared++;
      admitted += only.n_admissions;
      evicted += only.n_evictions;
      evicting = apply(&w, &full);
      sched_output_free(&full);
      sched_output_free(&only);
      w.now += 5;
    }
  }
  /* the cases reach what they are meant to: comparisons that admit and
   * that preempt, most cases settling */
  ck_assert_int_gt(compared, CASES * ROUNDS / 2);
  ck_assert_int_gt(admitted, 100);
  ck_assert_int_gt(evicted, 10);
  ck_assert_int_lt(skipped, CASES / 4);
  ck_assert_int_gt(left_out, 10000);
}
END_TEST

Suite *sched_arrivals_suite(void)
{
  Suite *s = suite_create("sched_arrivals");
  TCase *tc = tcase_create("arrivals");

  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, arrivals_decide_as_the_backlog);
  suite_add_tcase(s, tc);
  return s;
}
