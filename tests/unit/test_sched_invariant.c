/*
 * test_sched_invariant.c — the scheduler's invariants under a long random
 * simulation (fixed seed, our own PRNG).
 *
 * Jobs are submitted, cancelled and finish; admissions are applied to the
 * admitted set, evictions complete by moving the victim back to pending
 * with its original creation time; quotas, cohorts, policies, stop policies
 * and budgets change now and then. After every cycle:
 *   - per CQ, flavor, resource: usage ≤ nominal + borrowing_limit when
 *     limited (≤ nominal without a cohort);
 *   - per cohort, flavor, resource: Σ usage ≤ Σ nominal, and what CQs use
 *     above their guaranteed part ≤ what the lenders' lending limits allow;
 *   - no job admitted twice or held in two flavors;
 *   - every decision obeys its rule (victims: priority, policy, cohort,
 *     minimum runtime; budgets; stopped queues; reasons);
 *   - the same input with the CQ and cohort arrays permuted gives the very
 *     same decisions;
 *   - a job goes into the flavor with a capacity window (it moves on each
 *     time it ends) only inside it and only when its run ends by its end.
 * Some cluster queues order by usage (fair share over time): each CQ has
 * two team queues whose scores move at random, ties within 1e-9 included;
 * every invariant above holds for them too.
 * A quota change is applied only when the current admitted set satisfies
 * the invariants under it (Kueue does not evict on a quota cut, so a cut
 * below current usage would make the first invariant unsatisfiable).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched.h"
#include "tests/unit/rng.h"

Suite *sched_invariant_suite(void);

/*
 * Check's ck_assert records a mark point (a write to its pipe) on every
 * success; hundreds of thousands of them would dominate the run. These only
 * call into Check on failure.
 */
#define REQUIRE(cond) REQUIRE_MSG(cond, "%s", #cond)
#define REQUIRE_MSG(cond, ...)                                                 \
  do {                                                                         \
    if (!(cond))                                                               \
      ck_abort_msg(__VA_ARGS__);                                               \
  } while (0)
#define REQUIRE_EQ(a, b)                                                       \
  REQUIRE_MSG((a) == (b), "%s == %s: %lld != %lld", #a, #b, (long long)(a),    \
              (long long)(b))

#define N_FLAVORS 3
#define N_COHORTS 2
#define N_CQS 7
#define N_TEAMS 3
#define MAX_JOBS 400
#define CYCLES 20000
#define WINDOW_FLAVOR 2 /* the flavor with a capacity window */

static bool chance(struct rng *r, int percent)
{
  return below(r, 100) < percent;
}

struct sim {
  struct rng rng;
  int64_t now;
  int64_t next_seq;
  struct sched_cq cqs[N_CQS];
  struct sched_team teams[N_TEAMS];
  struct sched_tq tqs[2 * N_CQS]; /* CQ c's are 2c and 2c + 1 */
  struct sched_job pending[MAX_JOBS];
  int n_pending;
  struct sched_job admitted[MAX_JOBS];
  int n_admitted;
  /* statistics */
  long submitted, cancelled, finished, admissions, evictions, requeued;
  long config_applied, config_rejected, preempt_evictions;
  long preemptor_admissions;   /* of jobs marked preempting */
  int64_t win_from, win_until; /* WINDOW_FLAVOR's capacity window */
  long window_admissions;
};

/* Give WINDOW_FLAVOR, in every CQ listing it, the current window; once it
 * has ended the next one opens within 200 s and lasts 300–900 s. */
static void move_window(struct sim *s)
{
  int c, k;

  if (s->now >= s->win_until) {
    s->win_from = s->now + below(&s->rng, 200);
    s->win_until = s->win_from + 300 + below(&s->rng, 600);
  }
  for (c = 0; c < N_CQS; c++)
    for (k = 0; k < s->cqs[c].n_flavors; k++) {
      bool w = s->cqs[c].flavors[k].flavor == WINDOW_FLAVOR;
      s->cqs[c].flavors[k].window_from = w ? s->win_from : 0;
      s->cqs[c].flavors[k].window_until = w ? s->win_until : 0;
    }
}

/* The CQ's entry for global flavor f, or NULL. */
static const struct sched_cq_flavor *entry_of(const struct sched_cq *cq, int f)
{
  int k;

  for (k = 0; k < cq->n_flavors; k++)
    if (cq->flavors[k].flavor == f)
      return &cq->flavors[k];
  return NULL;
}

static void input_of(struct sim *s, struct sched_input *in)
{
  memset(in, 0, sizeof(*in));
  in->now = s->now;
  in->n_flavors = N_FLAVORS;
  in->n_cohorts = N_COHORTS;
  in->cqs = s->cqs;
  in->n_cqs = N_CQS;
  in->teams = s->teams;
  in->n_teams = N_TEAMS;
  in->admitted = s->admitted;
  in->n_admitted = s->n_admitted;
  in->pending = s->pending;
  in->n_pending = s->n_pending;
  in->tqs = s->tqs;
  in->n_tqs = 2 * N_CQS;
}

/* Team queue scores move: decay, a random charge, now and then a tie. */
static void move_scores(struct sim *s)
{
  static const double charges[] = {0, 0, 60, 120, 600};
  int i;

  for (i = 0; i < 2 * N_CQS; i++) {
    s->tqs[i].score = s->tqs[i].score * 0.9 + charges[below(&s->rng, 5)];
    if (i % 2 && chance(&s->rng, 20)) /* equal within 1e-9 */
      s->tqs[i].score = s->tqs[i - 1].score * (1 + 1e-12);
  }
}

static int64_t rand_amount(struct rng *r, int res)
{
  static const int64_t unit[SCHED_NRES] = {1, 500, 1024};

  return unit[res] * below(r, 13);
}

static struct sched_quota rand_quota(struct rng *r, int res)
{
  struct sched_quota q;

  q.nominal = rand_amount(r, res);
  q.borrowing_limit = chance(r, 30) ? SCHED_UNLIMITED : rand_amount(r, res);
  q.lending_limit =
      chance(r, 30) ? SCHED_UNLIMITED : q.nominal * below(r, 5) / 4;
  return q;
}

/* A CQ with 1–3 distinct flavors in random order. */
static void rand_flavors(struct rng *r, struct sched_cq *cq)
{
  int order[N_FLAVORS] = {0, 1, 2}, i, k;

  for (i = N_FLAVORS - 1; i > 0; i--) {
    int j = below(r, i + 1), t = order[i];

    order[i] = order[j];
    order[j] = t;
  }
  cq->n_flavors = 1 + below(r, N_FLAVORS);
  for (k = 0; k < cq->n_flavors; k++) {
    cq->flavors[k].flavor = order[k];
    for (i = 0; i < SCHED_NRES; i++)
      cq->flavors[k].quota[i] = rand_quota(r, i);
  }
}

static void rand_policy(struct rng *r, struct sched_cq *cq)
{
  static const double weights[] = {0, 0.5, 1, 1, 2, 3};

  cq->strategy = chance(r, 30) ? SCHED_STRICT_FIFO : SCHED_BEST_EFFORT_FIFO;
  cq->within = chance(r, 60) ? SCHED_WITHIN_LOWER_PRIORITY : SCHED_WITHIN_NEVER;
  cq->reclaim = (enum sched_reclaim)below(r, 3);
  cq->when_borrow = chance(r, 70) ? SCHED_BORROW : SCHED_BORROW_TRY_NEXT;
  cq->when_preempt = chance(r, 70) ? SCHED_PREEMPT_TRY_NEXT : SCHED_PREEMPT;
  cq->weight = weights[below(r, 6)];
  cq->min_runtime_s = chance(r, 50) ? 0 : below(r, 120);
  cq->usage_fs = chance(r, 50);
  cq->precedence =
      chance(r, 50) ? SCHED_PRECEDENCE_USAGE : SCHED_PRECEDENCE_PRIORITY;
  cq->fs_weights[SCHED_GPU] = 1;
  cq->fs_weights[SCHED_CPU] = chance(r, 50) ? 0.5 : 0;
  cq->fs_weights[SCHED_MEM] = 0;
  cq->fs_min_charge_s = chance(r, 50) ? 60 : below(r, 3) * 5;
}

static void sim_init(struct sim *s, uint64_t seed)
{
  int i;

  memset(s, 0, sizeof(*s));
  s->rng.s = seed;
  s->now = 1000;
  s->next_seq = 1;
  for (i = 0; i < N_CQS; i++) {
    s->cqs[i].cohort = i < 3 ? 0 : i < 5 ? 1 : -1;
    rand_flavors(&s->rng, &s->cqs[i]);
    rand_policy(&s->rng, &s->cqs[i]);
  }
  for (i = 0; i < N_TEAMS; i++)
    s->teams[i] = (struct sched_team){i != 2, 100.0 * (i + 1), 0};
  for (i = 0; i < 2 * N_CQS; i++)
    s->tqs[i] = (struct sched_tq){i / 2, i % 3 ? 1.0 : 2.0, 0};
}

static const struct sched_quota *quota_of(const struct sched_cq *cq, int f,
                                          int r)
{
  int k;

  for (k = 0; k < cq->n_flavors; k++)
    if (cq->flavors[k].flavor == f)
      return &cq->flavors[k].quota[r];
  return NULL;
}

/*
 * The quota invariants for the admitted set; returns NULL when they hold,
 * else which one failed.
 */
static const char *check_quota(const struct sim *s)
{
  int64_t use[N_CQS][N_FLAVORS][SCHED_NRES];
  int c, f, r, i, k;

  memset(use, 0, sizeof(use));
  for (i = 0; i < s->n_admitted; i++)
    for (r = 0; r < SCHED_NRES; r++)
      use[s->admitted[i].cq][s->admitted[i].flavor][r] +=
          s->admitted[i].request[r];
  for (c = 0; c < N_CQS; c++)
    for (f = 0; f < N_FLAVORS; f++)
      for (r = 0; r < SCHED_NRES; r++) {
        const struct sched_quota *q = quota_of(&s->cqs[c], f, r);
        int64_t nominal = q ? q->nominal : 0;
        int64_t bl = q ? q->borrowing_limit : 0;

        if (s->cqs[c].cohort < 0 && use[c][f][r] > nominal)
          return "usage > nominal (no cohort)";
        if (bl != SCHED_UNLIMITED && use[c][f][r] > nominal + bl)
          return "usage > nominal + borrowing_limit";
      }
  for (k = 0; k < N_COHORTS; k++)
    for (f = 0; f < N_FLAVORS; f++)
      for (r = 0; r < SCHED_NRES; r++) {
        int64_t sum_use = 0, sum_nominal = 0, above = 0, lendable = 0;

        for (c = 0; c < N_CQS; c++) {
          const struct sched_quota *q = quota_of(&s->cqs[c], f, r);
          int64_t n = q ? q->nominal : 0, l = n, g;

          if (s->cqs[c].cohort != k)
            continue;
          if (q && q->lending_limit != SCHED_UNLIMITED && q->lending_limit < n)
            l = q->lending_limit;
          g = n - l;
          sum_use += use[c][f][r];
          sum_nominal += n;
          lendable += l;
          if (use[c][f][r] > g)
            above += use[c][f][r] - g;
        }
        if (sum_use > sum_nominal)
          return "cohort usage > cohort nominal";
        if (above > lendable)
          return "cohort borrowing > lending limits allow";
      }
  return NULL;
}

/* No job twice: seqs are unique across admitted and pending. */
static void check_unique(const struct sim *s)
{
  static unsigned char seen[CYCLES * 8 + 64];
  int i;

  memset(seen, 0, sizeof(seen));
  for (i = 0; i < s->n_admitted; i++) {
    int64_t q = s->admitted[i].seq;

    REQUIRE(q > 0 && q < (int64_t)sizeof(seen));
    REQUIRE_MSG(!seen[q]++, "job %lld held twice", (long long)q);
  }
  for (i = 0; i < s->n_pending; i++) {
    int64_t q = s->pending[i].seq;

    REQUIRE(q > 0 && q < (int64_t)sizeof(seen));
    REQUIRE_MSG(!seen[q]++, "job %lld pending and admitted", (long long)q);
  }
}

/* Every decision obeys its rule. */
static void check_decisions(const struct sim *s, const struct sched_output *o)
{
  bool admitted_now[MAX_JOBS] = {false}, evicted_now[MAX_JOBS] = {false};
  double spent[N_TEAMS];
  int i;

  for (i = 0; i < N_TEAMS; i++)
    spent[i] = s->teams[i].spent;
  for (i = 0; i < o->n_admissions; i++) {
    const struct sched_admission *a = &o->admissions[i];
    const struct sched_job *j = &s->pending[a->job];
    const struct sched_cq *cq;

    REQUIRE(a->job >= 0 && a->job < s->n_pending);
    REQUIRE_MSG(!admitted_now[a->job], "admitted twice in a cycle");
    admitted_now[a->job] = true;
    REQUIRE(o->reasons[a->job] == SCHED_ADMITTED);
    cq = &s->cqs[j->cq];
    REQUIRE(cq->stop == SCHED_STOP_NONE);
    REQUIRE_MSG(quota_of(cq, a->flavor, 0) != NULL,
                "admitted into a flavor its CQ does not list");
    {
      const struct sched_cq_flavor *fl = entry_of(cq, a->flavor);
      if (fl->window_from || fl->window_until) {
        REQUIRE_MSG(s->now >= fl->window_from && s->now < fl->window_until,
                    "admitted outside the flavor's capacity window");
        REQUIRE_MSG(j->max_run_s > 0 &&
                        s->now + j->max_run_s <= fl->window_until,
                    "admitted with a run that outlasts the window");
      }
    }
    if (j->team >= 0 && s->teams[j->team].hold) {
      REQUIRE_MSG(spent[j->team] < s->teams[j->team].budget,
                  "admitted over budget");
      spent[j->team] += j->estimated_cost;
    }
  }
  for (i = 0; i < s->n_pending; i++) {
    enum sched_pending_reason r = o->reasons[i];

    REQUIRE(admitted_now[i] == (r == SCHED_ADMITTED));
    REQUIRE((r == SCHED_QUEUE_STOPPED) ==
            (s->cqs[s->pending[i].cq].stop != SCHED_STOP_NONE));
  }
  for (i = 0; i < o->n_evictions; i++) {
    const struct sched_eviction *e = &o->evictions[i];
    const struct sched_job *v, *p;
    const struct sched_cq *pcq;

    REQUIRE(e->job >= 0 && e->job < s->n_admitted);
    v = &s->admitted[e->job];
    REQUIRE_MSG(!v->evicting && !evicted_now[e->job], "evicted twice");
    evicted_now[e->job] = true;
    if (e->reason == SCHED_EVICT_STOPPED) {
      REQUIRE(e->preemptor == -1);
      REQUIRE(s->cqs[v->cq].stop == SCHED_STOP_DRAIN);
      continue;
    }
    REQUIRE(e->preemptor >= 0 && e->preemptor < s->n_pending);
    p = &s->pending[e->preemptor];
    pcq = &s->cqs[p->cq];
    REQUIRE(p->can_preempt);
    REQUIRE(o->reasons[e->preemptor] == SCHED_PREEMPTING);
    REQUIRE_MSG(s->cqs[v->cq].min_runtime_s <= 0 ||
                    s->now - v->admitted_at >= s->cqs[v->cq].min_runtime_s,
                "victim younger than min_runtime");
    if (e->reason == SCHED_EVICT_IN_CLUSTER_QUEUE) {
      REQUIRE(v->cq == p->cq);
      REQUIRE(pcq->within == SCHED_WITHIN_LOWER_PRIORITY);
      REQUIRE(v->priority < p->priority);
    } else {
      REQUIRE(e->reason == SCHED_EVICT_RECLAIM);
      REQUIRE(v->cq != p->cq && pcq->cohort >= 0);
      REQUIRE(s->cqs[v->cq].cohort == pcq->cohort);
      REQUIRE(pcq->reclaim != SCHED_RECLAIM_NEVER);
      REQUIRE(pcq->reclaim == SCHED_RECLAIM_ANY || v->priority < p->priority);
    }
  }
}

/* Run the cycle on a copy with CQs and cohorts renumbered; compare. */
static void check_permuted(struct sim *s, const struct sched_output *o)
{
  static struct sched_job adm[MAX_JOBS], pend[MAX_JOBS];
  struct sched_cq cqs[N_CQS];
  struct sched_tq tqs[2 * N_CQS];
  struct sched_input in;
  struct sched_output o2;
  int perm[N_CQS], kperm[N_COHORTS] = {1, 0}, i;

  for (i = 0; i < N_CQS; i++)
    perm[i] = i;
  for (i = N_CQS - 1; i > 0; i--) {
    int j = below(&s->rng, i + 1), t = perm[i];

    perm[i] = perm[j];
    perm[j] = t;
  }
  for (i = 0; i < N_CQS; i++) {
    cqs[perm[i]] = s->cqs[i];
    if (s->cqs[i].cohort >= 0)
      cqs[perm[i]].cohort = kperm[s->cqs[i].cohort];
  }
  for (i = 0; i < 2 * N_CQS; i++) {
    tqs[i] = s->tqs[i];
    tqs[i].cq = perm[tqs[i].cq];
  }
  for (i = 0; i < s->n_admitted; i++) {
    adm[i] = s->admitted[i];
    adm[i].cq = perm[adm[i].cq];
  }
  for (i = 0; i < s->n_pending; i++) {
    pend[i] = s->pending[i];
    pend[i].cq = perm[pend[i].cq];
  }
  input_of(s, &in);
  in.cqs = cqs;
  in.tqs = tqs;
  in.admitted = adm;
  in.pending = pend;
  REQUIRE_EQ(sched_cycle(&in, &o2), 0);
  REQUIRE_EQ(o2.n_admissions, o->n_admissions);
  REQUIRE_EQ(o2.n_evictions, o->n_evictions);
  for (i = 0; i < o->n_admissions; i++) {
    REQUIRE_EQ(o2.admissions[i].job, o->admissions[i].job);
    REQUIRE_EQ(o2.admissions[i].flavor, o->admissions[i].flavor);
    REQUIRE(o2.admissions[i].borrowed == o->admissions[i].borrowed);
  }
  for (i = 0; i < o->n_evictions; i++) {
    REQUIRE_EQ(o2.evictions[i].job, o->evictions[i].job);
    REQUIRE_EQ(o2.evictions[i].preemptor, o->evictions[i].preemptor);
    REQUIRE_EQ(o2.evictions[i].reason, o->evictions[i].reason);
  }
  for (i = 0; i < s->n_pending; i++)
    REQUIRE_EQ(o2.reasons[i], o->reasons[i]);
  sched_output_free(&o2);
}

/* Apply the decisions: evictions start, admissions move to admitted. */
static void apply(struct sim *s, const struct sched_output *o)
{
  bool gone[MAX_JOBS] = {false};
  int i, n = 0;

  for (i = 0; i < o->n_evictions; i++) {
    s->admitted[o->evictions[i].job].evicting = true;
    s->evictions++;
    if (o->evictions[i].preemptor >= 0)
      s->preempt_evictions++;
  }
  for (i = 0; i < o->n_admissions; i++) {
    struct sched_job *j = &s->pending[o->admissions[i].job];

    REQUIRE(s->n_admitted < MAX_JOBS);
    s->admitted[s->n_admitted] = *j;
    s->admitted[s->n_admitted].flavor = o->admissions[i].flavor;
    s->admitted[s->n_admitted].admitted_at = s->now;
    s->admitted[s->n_admitted].evicting = false;
    s->n_admitted++;
    if (j->team >= 0)
      s->teams[j->team].spent += j->estimated_cost;
    gone[o->admissions[i].job] = true;
    s->admissions++;
    s->preemptor_admissions += j->preempting;
    s->admitted[s->n_admitted - 1].preempting = false;
    s->window_admissions += o->admissions[i].flavor == WINDOW_FLAVOR;
  }
  /* as the leader does: the preemptors go first next cycle */
  for (i = 0; i < s->n_pending; i++) {
    s->pending[i].preempting = o->reasons[i] == SCHED_PREEMPTING;
    if (!gone[i])
      s->pending[n++] = s->pending[i];
  }
  s->n_pending = n;
}

/* Jobs arrive, are cancelled, finish; evictions complete. */
static void churn(struct sim *s)
{
  int i, n, k = below(&s->rng, 6);

  if (s->now / 2000 != (s->now - 20) / 2000) /* a new month */
    for (i = 0; i < N_TEAMS; i++)
      s->teams[i].spent = 0;
  for (i = 0; i < k && s->n_pending + s->n_admitted < MAX_JOBS - 1; i++) {
    struct sched_job *j = &s->pending[s->n_pending++];
    int r;

    memset(j, 0, sizeof(*j));
    j->cq = below(&s->rng, N_CQS);
    j->tq = 2 * j->cq + below(&s->rng, 2);
    j->team = below(&s->rng, N_TEAMS + 1) - 1;
    j->priority = 10 * below(&s->rng, 4);
    j->can_preempt = chance(&s->rng, 70);
    j->created_at = s->now;
    j->seq = s->next_seq++;
    for (r = 0; r < SCHED_NRES; r++)
      j->request[r] = chance(&s->rng, 25) ? 0 : rand_amount(&s->rng, r) / 3;
    if (!j->request[SCHED_GPU] && !j->request[SCHED_CPU])
      j->request[SCHED_CPU] = 100; /* never an empty request */
    j->estimated_cost = below(&s->rng, 20);
    j->max_run_s = chance(&s->rng, 10) ? 0 : 1 + below(&s->rng, 400);
    s->submitted++;
  }
  for (i = 0, n = 0; i < s->n_pending; i++) {
    if (chance(&s->rng, 1)) {
      s->cancelled++;
      continue;
    }
    s->pending[n++] = s->pending[i];
  }
  s->n_pending = n;
  for (i = 0, n = 0; i < s->n_admitted; i++) {
    struct sched_job *j = &s->admitted[i];

    if (j->evicting && chance(&s->rng, 60)) {
      /* eviction done: back to pending, same place in the queue */
      struct sched_job *p = &s->pending[s->n_pending++];

      *p = *j;
      p->evicting = false;
      p->preempting = false;
      p->flavor = 0;
      p->admitted_at = 0;
      s->requeued++;
      continue;
    }
    if (!j->evicting && chance(&s->rng, 8)) {
      s->finished++;
      continue;
    }
    s->admitted[n++] = *j;
  }
  s->n_admitted = n;
}

/* Change one thing of the configuration; keep it only if still valid. */
static void reconfigure(struct sim *s)
{
  int c = below(&s->rng, N_CQS), what = below(&s->rng, 8);
  struct sched_cq saved = s->cqs[c];
  struct sched_cq *cq = &s->cqs[c];

  switch (what) {
  case 0:
  case 1:
  case 2: { /* one quota cell */
    int k = below(&s->rng, cq->n_flavors), r = below(&s->rng, SCHED_NRES);

    cq->flavors[k].quota[r] = rand_quota(&s->rng, r);
    break;
  }
  case 3: /* flavors redrawn: order, set and quotas */
    rand_flavors(&s->rng, cq);
    break;
  case 4:
    rand_policy(&s->rng, cq);
    break;
  case 5: /* move to another cohort, or out of any */
    cq->cohort = below(&s->rng, N_COHORTS + 1) - 1;
    break;
  case 6: /* stop policies come and go */
    cq->stop = cq->stop != SCHED_STOP_NONE ? SCHED_STOP_NONE
               : chance(&s->rng, 50)       ? SCHED_STOP_HOLD
                                           : SCHED_STOP_DRAIN;
    break;
  default: { /* a team's budget: new month, or a new budget */
    struct sched_team *t = &s->teams[below(&s->rng, N_TEAMS)];

    if (chance(&s->rng, 50))
      t->spent = 0;
    else
      t->budget = below(&s->rng, 400);
    t->hold = chance(&s->rng, 80);
    break;
  }
  }
  if (check_quota(s)) {
    s->cqs[c] = saved;
    s->config_rejected++;
  } else {
    s->config_applied++;
  }
}

START_TEST(random_cycles)
{
  struct sim *s = calloc(1, sizeof(*s));
  int cycle;

  ck_assert_ptr_nonnull(s);
  sim_init(s, 0x5eed0001ULL);
  for (cycle = 0; cycle < CYCLES; cycle++) {
    struct sched_input in;
    struct sched_output out;
    const char *bad;

    s->now += 1 + below(&s->rng, 20);
    churn(s);
    if (chance(&s->rng, 15))
      reconfigure(s);
    move_window(s);
    move_scores(s);
    input_of(s, &in);
    REQUIRE_EQ(sched_cycle(&in, &out), 0);
    check_decisions(s, &out);
    check_permuted(s, &out);
    apply(s, &out);
    sched_output_free(&out);
    bad = check_quota(s);
    REQUIRE_MSG(bad == NULL, "cycle %d: %s", cycle, bad);
    check_unique(s);
  }
  if (getenv("SCHED_INVARIANT_VERBOSE"))
    fprintf(stderr,
            "sched_invariant: %d cycles, %ld submitted, %ld cancelled, "
            "%ld finished, %ld admissions (%ld of earlier preemptors), %ld "
            "evictions (%ld by preemption), %ld requeued, %ld config "
            "changes applied, %ld "
            "rejected, %ld into the windowed flavor, %d pending and %d "
            "admitted at the end\n",
            CYCLES, s->submitted, s->cancelled, s->finished, s->admissions,
            s->preemptor_admissions, s->evictions, s->preempt_evictions,
            s->requeued, s->config_applied, s->config_rejected,
            s->window_admissions, s->n_pending, s->n_admitted);
  /* The run must have exercised what it claims to. */
  ck_assert_int_gt(s->admissions, 10000);
  ck_assert_int_gt(s->preempt_evictions, 500);
  ck_assert_int_gt(s->requeued, 500);
  ck_assert_int_gt(s->preemptor_admissions, 200);
  ck_assert_int_gt(s->config_applied, 1000);
  ck_assert_int_gt(s->window_admissions, 1000);
  free(s);
}
END_TEST

Suite *sched_invariant_suite(void)
{
  Suite *s = suite_create("sched_invariant");
  TCase *tc = tcase_create("random");

  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, random_cycles);
  suite_add_tcase(s, tc);
  return s;
}
