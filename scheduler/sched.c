/*
 * sched.c — one admission cycle with Kueue's semantics, as a pure function.
 *
 * The cycle works on arrays indexed [cq][flavor][resource] that it builds
 * from the input and frees before returning: the usage of admitted jobs, and
 * a second "released" view — the usage once every evicting job has gone and
 * every preemptor waiting for it has landed. Admission decisions are taken
 * against the real usage (evicting jobs still hold quota); preemption is
 * planned against the released view, so two preemptors never count on the
 * same freed quota and a job that only waits for evictions already under way
 * picks no new victims.
 *
 * First the preemptors of earlier cycles (sched_job.preempting), then
 * rounds. Each round takes the head of every cluster queue still in play,
 * assigns it a flavor against the usage at that moment, sorts the heads
 * Kueue's way (no borrowing first, then the lower weighted share,
 * priority, creation time, seq) and processes them in that order. The
 * rounds run in two phases: in the first a CQ whose head would borrow is
 * parked, so every job that fits without borrowing, however deep in its
 * CQ, is decided before any borrower (Kueue's cycle puts non-borrowing
 * heads first for the same reason: a lender's deeper jobs must not be left
 * to reclaim what a borrower took a moment before); the second decides the
 * parked CQs and the rest. A head whose assignment changed because of an
 * earlier decision in the same round is deferred to the next round; the
 * first head of a round always sees the state its assignment was computed
 * on, so every round decides at least one job or parks a CQ, and the cycle
 * ends. Nothing depends on the order of the CQ array:
 * every tie is broken by job fields (seq, then the job's array index).
 *
 * The input's checks and capacity windows are in sched_input.c, building
 * and freeing the working state in sched_work.c, fair share over time in
 * sched_fs.c; what they share is in sched_internal.h.
 */
#include "scheduler/sched.h"

#include <stdlib.h>
#include <string.h>

#include "scheduler/sched_fs.h"
#include "scheduler/sched_internal.h"

#define ZERO_WEIGHT_SHARE 1e9 /* weight 0 and borrowing: always last */

enum plan { PLAN_NONE = 0, PLAN_WAIT, PLAN_VICTIMS };

static int64_t max0(int64_t v)
{
  return v > 0 ? v : 0;
}

/* Unused quota of CQ c in (f, r) under usage view u / pu. */
static int64_t avail(const struct state *s, const int64_t *u, const int64_t *pu,
                     int c, int f, int r)
{
  size_t i = cell(s, c, f, r);
  const struct sched_quota *q = &s->quota[i];
  int k = s->in->cqs[c].cohort;
  int64_t lim, coh;
  size_t ki;

  if (k < 0)
    return q->nominal - u[i];
  lim = q->borrowing_limit == SCHED_UNLIMITED
            ? QTY_INF
            : q->nominal + q->borrowing_limit - u[i];
  ki = ((size_t)k * (size_t)s->nf + (size_t)f) * SCHED_NRES + (size_t)r;
  coh = max0(s->guar[i] - u[i]) + s->pool[ki] - pu[ki];
  return min64(lim, coh);
}

/* Whether req fits in flavor f of CQ c under usage view u / pu. */
static bool fits(const struct state *s, const int64_t *u, const int64_t *pu,
                 int c, int f, const int64_t *req)
{
  int r;

  for (r = 0; r < SCHED_NRES; r++)
    if (req[r] > 0 && req[r] > avail(s, u, pu, c, f, r))
      return false;
  return true;
}

/* Whether adding req to CQ c in flavor f goes above its nominal quota. */
static bool borrows(const struct state *s, const int64_t *u, int c, int f,
                    const int64_t *req)
{
  int r;

  for (r = 0; r < SCHED_NRES; r++) {
    size_t i = cell(s, c, f, r);

    if (req[r] > 0 && u[i] + req[r] > s->quota[i].nominal)
      return true;
  }
  return false;
}

/* Whether CQ c uses more than its nominal quota of flavor f in view u. */
static bool cq_borrowing(const struct state *s, const int64_t *u, int c, int f)
{
  int r;

  for (r = 0; r < SCHED_NRES; r++) {
    size_t i = cell(s, c, f, r);

    if (u[i] > s->quota[i].nominal)
      return true;
  }
  return false;
}

/*
 * Whether req could fit in flavor f of CQ c were every other job gone: a
 * cheap filter that spares victim search for jobs too big to ever fit.
 */
static bool could_fit(const struct state *s, int c, int f, const int64_t *req)
{
  int k = s->in->cqs[c].cohort;
  int r;

  for (r = 0; r < SCHED_NRES; r++) {
    size_t i = cell(s, c, f, r);
    const struct sched_quota *q = &s->quota[i];
    int64_t cap = q->nominal;

    if (k >= 0) {
      size_t ki =
          ((size_t)k * (size_t)s->nf + (size_t)f) * SCHED_NRES + (size_t)r;

      cap = s->guar[i] + s->pool[ki];
      if (q->borrowing_limit != SCHED_UNLIMITED)
        cap = min64(cap, q->nominal + q->borrowing_limit);
    }
    if (req[r] > 0 && req[r] > cap)
      return false;
  }
  return true;
}

/* Add (sign 1) or remove (sign −1) req to CQ c, flavor f in view u / pu. */
void sched_add_use(const struct state *s, int64_t *u, int64_t *pu, int c, int f,
                   const int64_t *req, int64_t sign)
{
  int k = s->in->cqs[c].cohort;
  int r;

  for (r = 0; r < SCHED_NRES; r++) {
    size_t i = cell(s, c, f, r);
    int64_t old = u[i], now = old + sign * req[r];

    if (k >= 0) {
      size_t ki =
          ((size_t)k * (size_t)s->nf + (size_t)f) * SCHED_NRES + (size_t)r;
      pu[ki] += max0(now - s->guar[i]) - max0(old - s->guar[i]);
    }
    u[i] = now;
  }
}

/*
 * Weighted dominant-resource share of CQ c with req added in flavor fa
 * (fa −1: nothing added), given its usage u and the cohort pools.
 */
static double share_of(const struct sched_cq *cq, const int64_t *u_cq,
                       const int64_t *pool_k, int fa, const int64_t *req)
{
  double best = 0;
  int k, r;

  if (cq->cohort < 0)
    return 0;
  for (k = 0; k < cq->n_flavors; k++) {
    const struct sched_cq_flavor *fl = &cq->flavors[k];

    for (r = 0; r < SCHED_NRES; r++) {
      int64_t used = u_cq[(size_t)fl->flavor * SCHED_NRES + (size_t)r];
      int64_t over, p;
      double v;

      if (fl->flavor == fa)
        used += req[r];
      over = used - fl->quota[r].nominal;
      p = pool_k[(size_t)fl->flavor * SCHED_NRES + (size_t)r];
      if (over <= 0 || p <= 0)
        continue;
      v = (double)over / (double)p;
      if (v > best)
        best = v;
    }
  }
  if (best <= 0)
    return 0;
  if (cq->weight <= 0)
    return ZERO_WEIGHT_SHARE;
  return best / cq->weight;
}

static bool team_held(const struct state *s, const struct sched_job *j)
{
  const struct sched_team *t;

  if (j->team < 0)
    return false;
  t = &s->in->teams[j->team];
  return t->hold && s->spent[j->team] >= t->budget;
}

/* Move usage_fs CQ c's head to its best untaken job (done when none). */
void sched_pick(struct state *s, int c)
{
  int k = sched_fs_pick(&s->fs, c, s->pend_idx, s->taken);

  if (k < 0)
    s->done[c] = true;
  else
    s->cursor[c] = k;
}

static int cmp_head(const void *a, const void *b)
{
  const struct head_key *x = a, *y = b;

  if (x->h.borrow != y->h.borrow)
    return x->h.borrow ? 1 : -1;
  if (x->h.borrow && x->h.share != y->h.share)
    return x->h.share < y->h.share ? -1 : 1;
  if (x->priority != y->priority)
    return x->priority > y->priority ? -1 : 1;
  if (x->created_at != y->created_at)
    return x->created_at < y->created_at ? -1 : 1;
  if (x->seq != y->seq)
    return x->seq < y->seq ? -1 : 1;
  return x->h.job < y->h.job ? -1 : (x->h.job > y->h.job);
}

/*
 * Whether admitted job a may be a victim at all (age, not yet chosen).
 * Age counts only when its CQ sets a minimum runtime: admitted_at is in
 * whole seconds and may lie up to a second past now, and the admission
 * loop reruns the scheduler as time passes only for CQs with a minimum
 * (control/admission.c, time_matters()), so without one the clock must not
 * decide.
 */
static bool victim_ok(const struct state *s, int a)
{
  const struct sched_job *v = &s->in->admitted[a];
  int64_t min_runtime = s->in->cqs[v->cq].min_runtime_s;

  if (s->victim[a])
    return false;
  return min_runtime <= 0 || s->in->now - v->admitted_at >= min_runtime;
}

void sched_release(struct state *s, int a, int64_t sign)
{
  const struct sched_job *v = &s->in->admitted[a];

  sched_add_use(s, s->rel, s->rel_pool_used, v->cq, v->flavor, v->request,
                -sign);
}

/*
 * Plan preemption for pending job jidx of CQ c in flavor f, in the released
 * view. PLAN_WAIT: it fits once the evictions under way complete.
 * PLAN_VICTIMS: a minimal victim set was found. With commit, the victims are
 * recorded as evictions and the job's request is reserved in the released
 * view; without, the state is left as it was. *borrow: whether the job goes
 * above its CQ's nominal quota once admitted.
 */
static enum plan preempt_plan(struct state *s, int c, int f, int jidx,
                              bool commit, bool *borrow)
{
  const struct sched_input *in = s->in;
  const struct sched_job *j = &in->pending[jidx];
  const struct sched_cq *cq = &in->cqs[c];
  int n = 0, m = 0, i, k = cq->cohort;
  bool ok = false;

  if (!j->can_preempt || !could_fit(s, c, f, j->request))
    return PLAN_NONE;
  if (fits(s, s->rel, s->rel_pool_used, c, f, j->request)) {
    *borrow = borrows(s, s->rel, c, f, j->request);
    if (commit) {
      sched_add_use(s, s->rel, s->rel_pool_used, c, f, j->request, 1);
      s->version++;
    }
    return PLAN_WAIT;
  }

  if (cq->within == SCHED_WITHIN_LOWER_PRIORITY) {
    for (i = s->adm_start[c]; i < s->adm_start[c + 1]; i++) {
      int a = s->adm_idx[i];
      const struct sched_job *v = &in->admitted[a];

      if (v->flavor == f && v->priority < j->priority && victim_ok(s, a))
        s->cands[n++] = (struct sched_cand){
            false, v->priority,    sched_fs_score(&s->fs, v),
            0,     v->admitted_at, v->seq,
            a};
    }
  }
  if (k >= 0 && cq->reclaim != SCHED_RECLAIM_NEVER &&
      !borrows(s, s->rel, c, f, j->request)) {
    for (i = s->coh_start[k]; i < s->coh_start[k + 1]; i++) {
      int c2 = s->coh_idx[i], x;

      if (c2 == c || !cq_borrowing(s, s->rel, c2, f))
        continue;
      for (x = s->adm_start[c2]; x < s->adm_start[c2 + 1]; x++) {
        int a = s->adm_idx[x];
        const struct sched_job *v = &in->admitted[a];

        if (v->flavor != f || !victim_ok(s, a))
          continue;
        if (cq->reclaim == SCHED_RECLAIM_ANY || v->priority < j->priority)
          s->cands[n++] = (struct sched_cand){
              true, v->priority,    sched_fs_score(&s->fs, v),
              0,    v->admitted_at, v->seq,
              a};
      }
    }
  }
  if (n == 0 || sched_fs_sort_victims(&s->fs, s->cands, n))
    return PLAN_NONE;

  for (i = 0; i < n && !ok; i++) {
    const struct sched_job *v = &in->admitted[s->cands[i].idx];

    if (s->cands[i].other && !cq_borrowing(s, s->rel, v->cq, f))
      continue;
    sched_release(s, s->cands[i].idx, 1);
    s->chosen[m++] = i;
    ok = fits(s, s->rel, s->rel_pool_used, c, f, j->request);
  }
  if (!ok) {
    for (i = 0; i < m; i++)
      sched_release(s, s->cands[s->chosen[i]].idx, -1);
    return PLAN_NONE;
  }
  /* Minimal set: give back every victim the job can do without. */
  for (i = m - 1; i >= 0; i--) {
    sched_release(s, s->cands[s->chosen[i]].idx, -1);
    if (fits(s, s->rel, s->rel_pool_used, c, f, j->request))
      s->chosen[i] = -1;
    else
      sched_release(s, s->cands[s->chosen[i]].idx, 1);
  }
  *borrow = borrows(s, s->rel, c, f, j->request);
  for (i = 0; i < m; i++) {
    const struct sched_cand *v;

    if (s->chosen[i] < 0)
      continue;
    v = &s->cands[s->chosen[i]];
    if (!commit) {
      sched_release(s, v->idx, -1);
      continue;
    }
    s->victim[v->idx] = true;
    s->out->evictions[s->out->n_evictions++] = (struct sched_eviction){
        v->idx, jidx,
        v->other ? SCHED_EVICT_RECLAIM : SCHED_EVICT_IN_CLUSTER_QUEUE};
  }
  if (commit) {
    sched_add_use(s, s->rel, s->rel_pool_used, c, f, j->request, 1);
    s->version++;
  }
  return PLAN_VICTIMS;
}

/* Flavor assignment of CQ c's head job (flavor fungibility); no change. */
static void assign(struct state *s, struct head *h)
{
  const struct sched_input *in = s->in;
  const struct sched_cq *cq = &in->cqs[h->cq];
  const int64_t *req = in->pending[h->job].request;
  int k, borrow_f = -1, preempt_f = -1;
  bool preempt_borrow = false;

  h->kind = KIND_NONE;
  h->flavor = -1;
  h->borrow = false;
  h->share = 0;
  h->version = s->version;
  for (k = 0; k < cq->n_flavors; k++) {
    int f = cq->flavors[k].flavor;
    bool b = false;

    if (in->pending[h->job].excluded_flavors & (1u << k))
      continue; /* e.g. none of its regions is one the job allows */
    if (!sched_window_fits(&cq->flavors[k], in->now,
                           in->pending[h->job].max_run_s))
      continue; /* capacity window closed, or too short for the job */
    /* the released view too: quota a preemptor waits for (its victims'
     * evictions under way) is not handed to another job meanwhile, or the
     * victims would be readmitted and evicted again cycle after cycle */
    if (fits(s, s->use, s->pool_used, h->cq, f, req) &&
        fits(s, s->rel, s->rel_pool_used, h->cq, f, req)) {
      if (!borrows(s, s->use, h->cq, f, req)) {
        h->kind = KIND_FIT;
        h->flavor = f;
        return;
      }
      if (cq->when_borrow == SCHED_BORROW) {
        borrow_f = f;
        break;
      }
      if (borrow_f < 0)
        borrow_f = f;
      continue;
    }
    if (preempt_plan(s, h->cq, f, h->job, false, &b) == PLAN_NONE)
      continue;
    if (cq->when_preempt == SCHED_PREEMPT) {
      h->kind = KIND_PREEMPT;
      h->flavor = f;
      h->borrow = b;
      break;
    }
    if (preempt_f < 0) {
      preempt_f = f;
      preempt_borrow = b;
    }
  }
  if (h->kind == KIND_NONE && borrow_f >= 0) {
    h->kind = KIND_BORROW;
    h->flavor = borrow_f;
    h->borrow = true;
  } else if (h->kind == KIND_NONE && preempt_f >= 0) {
    h->kind = KIND_PREEMPT;
    h->flavor = preempt_f;
    h->borrow = preempt_borrow;
  }
  if (h->kind != KIND_NONE && h->borrow && cq->cohort >= 0 &&
      s->fs.coh_fs[cq->cohort])
    /* every CQ of the cohort orders by usage: rank the borrowers by their
     * decayed usage instead of what they hold this instant (beyond
     * Kueue, its issue #9734) */
    h->share = cq->weight > 0 ? s->fs.cq_fs[h->cq] / cq->weight
                              : ZERO_WEIGHT_SHARE + s->fs.cq_fs[h->cq];
  else if (h->kind != KIND_NONE && h->borrow && cq->cohort >= 0)
    h->share =
        share_of(cq, &s->use[cell(s, h->cq, 0, 0)],
                 &s->pool[(size_t)cq->cohort * (size_t)s->nf * SCHED_NRES],
                 h->flavor, req);
}

/* Move CQ c's head to its next job not yet decided. */
static void advance(struct state *s, int c)
{
  if (s->in->cqs[c].usage_fs) {
    sched_pick(s, c);
    return;
  }
  do {
    if (++s->cursor[c] >= s->pend_start[c + 1]) {
      s->done[c] = true;
      return;
    }
  } while (s->taken[s->pend_idx[s->cursor[c]]]);
}

/* Job (of CQ c) is decided: the CQ moves past it if it is the head. */
static void settle(struct state *s, int c, int job)
{
  s->taken[job] = true;
  /* usage_fs: a decision out of turn may have moved a score */
  if (!s->done[c] &&
      (s->pend_idx[s->cursor[c]] == job || s->in->cqs[c].usage_fs))
    advance(s, c);
}

/* StrictFIFO: the head stays; everything behind it waits for it. */
static void block(struct state *s, int c)
{
  int i;

  /* usage_fs: the jobs not yet taken lie on both sides of the head */
  for (i = s->in->cqs[c].usage_fs ? s->pend_start[c] : s->cursor[c] + 1;
       i < s->pend_start[c + 1]; i++) {
    int p = s->pend_idx[i];

    if (s->in->cqs[c].usage_fs && (s->taken[p] || i == s->cursor[c]))
      continue;
    s->out->reasons[p] = team_held(s, &s->in->pending[p])
                             ? SCHED_BUDGET_EXCEEDED
                             : SCHED_WAITING_FOR_HEAD;
  }
  s->done[c] = true;
}

/* A head that cannot be admitted nor preempt this cycle. */
static void give_up(struct state *s, int c, int job)
{
  s->out->reasons[job] = SCHED_INSUFFICIENT_QUOTA;
  if (s->in->cqs[c].strategy == SCHED_STRICT_FIFO)
    block(s, c);
  else
    settle(s, c, job);
}

static void admit(struct state *s, const struct head *h)
{
  const struct sched_job *j = &s->in->pending[h->job];
  bool b = borrows(s, s->use, h->cq, h->flavor, j->request);

  sched_add_use(s, s->use, s->pool_used, h->cq, h->flavor, j->request, 1);
  sched_add_use(s, s->rel, s->rel_pool_used, h->cq, h->flavor, j->request, 1);
  s->out->admissions[s->out->n_admissions++] =
      (struct sched_admission){h->job, h->flavor, b};
  s->out->reasons[h->job] = SCHED_ADMITTED;
  if (j->team >= 0 && s->in->teams[j->team].hold)
    s->spent[j->team] += j->estimated_cost;
  sched_fs_charge(&s->fs, j);
  s->version++;
  settle(s, h->cq, h->job);
}

/* Decide one head of the sorted round; it may be deferred to the next. */
static void process(struct state *s, const struct head *h0)
{
  const struct sched_job *j = &s->in->pending[h0->job];
  struct head h = *h0;
  bool b = false;

  if (team_held(s, j)) {
    s->out->reasons[h.job] = SCHED_BUDGET_EXCEEDED;
    settle(s, h.cq, h.job);
    return;
  }
  if (h.version != s->version) {
    assign(s, &h);
    if (h.kind != h0->kind || h.flavor != h0->flavor)
      return; /* deferred: it gets a fresh assignment next round */
  }
  if (h.kind == KIND_FIT || h.kind == KIND_BORROW) {
    admit(s, &h);
    return;
  }
  if (preempt_plan(s, h.cq, h.flavor, h.job, true, &b) == PLAN_NONE) {
    give_up(s, h.cq, h.job); /* unreachable: assign() planned it just now */
    return;
  }
  s->out->reasons[h.job] = SCHED_PREEMPTING;
  if (s->in->cqs[h.cq].strategy == SCHED_STRICT_FIFO)
    block(s, h.cq);
  else
    settle(s, h.cq, h.job);
}

/*
 * The preemptors of earlier cycles are decided first, in head order: Kueue
 * keeps a preemptor at its CQ's head until it is admitted, so the quota its
 * victims free is its own. Without this, a victim whose eviction completes
 * at once (its Batch job not yet created) is readmitted by its CQ's head in
 * the next cycle's first round, while the preemptor, deeper in its own CQ,
 * comes in a later round and chooses victims again, cycle after cycle.
 * StrictFIFO CQs are left out: their preemptor is their head anyway.
 */
static void preemptors_first(struct state *s)
{
  const struct sched_input *in = s->in;
  struct head_key *keys = s->heads;
  int i, nh = 0;

  for (i = 0; i < in->n_pending; i++) {
    const struct sched_job *j = &in->pending[i];
    struct head h = {.cq = j->cq, .job = i};

    if (!j->preempting || s->done[j->cq] ||
        in->cqs[j->cq].strategy == SCHED_STRICT_FIFO || team_held(s, j))
      continue;
    assign(s, &h);
    if (h.kind != KIND_NONE) /* else its turn in the rounds decides */
      keys[nh++] = (struct head_key){h, j->priority, j->created_at, j->seq};
  }
  qsort(keys, (size_t)nh, sizeof(*keys), cmp_head);
  for (i = 0; i < nh; i++)
    process(s, &keys[i].h);
}

/* One round; returns the number of heads still in play before it. */
static int round_once(struct state *s)
{
  const struct sched_input *in = s->in;
  struct head_key *keys = s->heads;
  int c, nh = 0, active = 0, i;

  for (c = 0; c < in->n_cqs; c++) {
    struct head h;
    const struct sched_job *j;

    if (s->done[c] || (s->parked[c] && !s->borrow_phase))
      continue;
    active++;
    while (!s->done[c] &&
           team_held(s, &in->pending[s->pend_idx[s->cursor[c]]])) {
      s->out->reasons[s->pend_idx[s->cursor[c]]] = SCHED_BUDGET_EXCEEDED;
      settle(s, c, s->pend_idx[s->cursor[c]]);
    }
    if (s->done[c])
      continue;
    h.cq = c;
    h.job = s->pend_idx[s->cursor[c]];
    assign(s, &h);
    if (h.kind == KIND_NONE) {
      give_up(s, c, h.job);
      continue;
    }
    if (h.borrow && !s->borrow_phase) {
      s->parked[c] = true; /* usage only grows: it still borrows later */
      continue;
    }
    j = &in->pending[h.job];
    keys[nh++] = (struct head_key){h, j->priority, j->created_at, j->seq};
  }
  qsort(keys, (size_t)nh, sizeof(*keys), cmp_head);
  for (i = 0; i < nh; i++)
    process(s, &keys[i].h);
  return active;
}

/* Stop policies: Hold parks the queue, HoldAndDrain also evicts. */
static void apply_stops(struct state *s)
{
  const struct sched_input *in = s->in;
  int i;

  for (i = 0; i < in->n_cqs; i++) {
    int x;

    if (in->cqs[i].stop == SCHED_STOP_NONE)
      continue;
    for (x = s->pend_start[i]; x < s->pend_start[i + 1]; x++)
      s->out->reasons[s->pend_idx[x]] = SCHED_QUEUE_STOPPED;
    s->done[i] = true;
  }
  for (i = 0; i < in->n_admitted; i++) {
    if (s->victim[i] || in->cqs[in->admitted[i].cq].stop != SCHED_STOP_DRAIN)
      continue;
    s->victim[i] = true;
    sched_release(s, i, 1);
    s->out->evictions[s->out->n_evictions++] =
        (struct sched_eviction){i, -1, SCHED_EVICT_STOPPED};
  }
}

/* See sched.h. */
int sched_cycle(const struct sched_input *in, struct sched_output *out)
{
  struct state s;
  int result = -1, i;

  memset(out, 0, sizeof(*out));
  memset(&s, 0, sizeof(s));
  if (!in || !sched_input_valid(in))
    return -1;
  out->admissions =
      sched_zalloc((size_t)in->n_pending, sizeof(*out->admissions));
  out->evictions =
      sched_zalloc((size_t)in->n_admitted, sizeof(*out->evictions));
  out->reasons = sched_zalloc((size_t)in->n_pending, sizeof(*out->reasons));
  if (!out->admissions || !out->evictions || !out->reasons)
    goto out;
  if (sched_work_init(&s, in, out) < 0)
    goto out;
  for (i = 0; i < in->n_pending; i++)
    out->reasons[i] = SCHED_INSUFFICIENT_QUOTA;
  apply_stops(&s);
  preemptors_first(&s);
  /* every job that fits without borrowing first, then the borrowers */
  while (round_once(&s) > 0)
    ;
  s.borrow_phase = true;
  while (round_once(&s) > 0)
    ;
  result = 0;
out:
  sched_work_free(&s);
  if (result < 0)
    sched_output_free(out);
  return result;
}

/* See sched.h. */
void sched_output_free(struct sched_output *out)
{
  if (!out)
    return;
  free(out->admissions);
  free(out->evictions);
  free(out->reasons);
  memset(out, 0, sizeof(*out));
}

/* See sched.h. */
int64_t sched_usage(const struct sched_input *in, int cq, int flavor,
                    enum sched_res r)
{
  int64_t sum = 0;
  int i;

  if ((int)r < 0 || r >= SCHED_NRES)
    return 0;
  for (i = 0; i < in->n_admitted; i++)
    if (in->admitted[i].cq == cq && in->admitted[i].flavor == flavor)
      sum += in->admitted[i].request[r];
  return sum;
}

/* See sched.h. */
double sched_weighted_share(const struct sched_input *in, int cq)
{
  int64_t use[SCHED_MAX_FLAVORS][SCHED_NRES];
  int64_t pool[SCHED_MAX_FLAVORS][SCHED_NRES];
  const struct sched_cq *c;
  struct sched_cq local;
  int64_t zero[SCHED_NRES] = {0};
  int i, k, r;

  if (cq < 0 || cq >= in->n_cqs)
    return 0;
  c = &in->cqs[cq];
  if (c->cohort < 0 || c->n_flavors < 0 || c->n_flavors > SCHED_MAX_FLAVORS)
    return 0;
  /* share_of() indexes by global flavor: renumber the CQ's flavors 0..n−1 */
  local = *c;
  memset(use, 0, sizeof(use));
  memset(pool, 0, sizeof(pool));
  for (k = 0; k < c->n_flavors; k++) {
    local.flavors[k].flavor = k;
    for (r = 0; r < SCHED_NRES; r++)
      use[k][r] = sched_usage(in, cq, c->flavors[k].flavor, (enum sched_res)r);
    for (i = 0; i < in->n_cqs; i++) {
      const struct sched_cq *o = &in->cqs[i];
      int m;

      if (o->cohort != c->cohort)
        continue;
      for (m = 0; m < o->n_flavors && m < SCHED_MAX_FLAVORS; m++)
        if (o->flavors[m].flavor == c->flavors[k].flavor)
          for (r = 0; r < SCHED_NRES; r++)
            pool[k][r] += lendable(&o->flavors[m].quota[r]);
    }
  }
  return share_of(&local, &use[0][0], &pool[0][0], -1, zero);
}
