/*
 * sched_work.c — the working state of one admission cycle (struct state in
 * sched_internal.h): built from the input before the first round — quotas
 * and cohort pools, both usage views, the jobs grouped by cluster queue in
 * queue order — and freed after the last. Pure: no I/O, no globals.
 */
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched_internal.h"

/* A pending job with its ordering keys, for the per-CQ sort. */
struct pend_key {
  int cq;
  int tq; /* usage_fs CQs: the team queue (-1 none); else -1 */
  int32_t priority;
  int64_t created_at;
  int64_t seq;
  int idx;
};

static int cmp_pend(const void *a, const void *b)
{
  const struct pend_key *x = a, *y = b;

  if (x->cq != y->cq)
    return x->cq < y->cq ? -1 : 1;
  if (x->tq != y->tq)
    return x->tq < y->tq ? -1 : 1;
  if (x->priority != y->priority)
    return x->priority > y->priority ? -1 : 1;
  if (x->created_at != y->created_at)
    return x->created_at < y->created_at ? -1 : 1;
  if (x->seq != y->seq)
    return x->seq < y->seq ? -1 : 1;
  return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

void sched_work_free(struct state *s)
{
  free(s->quota);
  free(s->guar);
  free(s->pool);
  free(s->use);
  free(s->pool_used);
  free(s->rel);
  free(s->rel_pool_used);
  free(s->adm_start);
  free(s->adm_idx);
  free(s->victim);
  free(s->coh_start);
  free(s->coh_idx);
  free(s->pend_start);
  free(s->pend_idx);
  sched_fs_free(&s->fs);
  free(s->cursor);
  free(s->done);
  free(s->taken);
  free(s->parked);
  free(s->spent);
  free(s->cands);
  free(s->chosen);
  free(s->heads);
}

/* Group n items by key (0..nk−1): start has nk+1 entries. */
static void group(int *start, int *idx, int nk, int n, const int *key)
{
  int i;

  for (i = 0; i < n; i++)
    start[key[i] + 1]++;
  for (i = 0; i < nk; i++)
    start[i + 1] += start[i];
  for (i = 0; i < n; i++)
    idx[start[key[i]]++] = i;
  for (i = nk; i > 0; i--)
    start[i] = start[i - 1];
  start[0] = 0;
}

int sched_work_init(struct state *s, const struct sched_input *in,
                    struct sched_output *out)
{
  size_t ncell = (size_t)in->n_cqs * (size_t)in->n_flavors * SCHED_NRES;
  size_t kcell = (size_t)in->n_cohorts * (size_t)in->n_flavors * SCHED_NRES;
  struct pend_key *pk = NULL;
  int *key = NULL;
  int i, r, n_pre = 0, result = -1;
  size_t nkey =
      (size_t)(in->n_admitted > in->n_cqs ? in->n_admitted : in->n_cqs);

  memset(s, 0, sizeof(*s));
  s->in = in;
  s->out = out;
  s->nf = in->n_flavors;
  s->quota = sched_zalloc(ncell, sizeof(*s->quota));
  s->guar = sched_zalloc(ncell, sizeof(*s->guar));
  s->pool = sched_zalloc(kcell, sizeof(*s->pool));
  s->use = sched_zalloc(ncell, sizeof(*s->use));
  s->pool_used = sched_zalloc(kcell, sizeof(*s->pool_used));
  s->rel = sched_zalloc(ncell, sizeof(*s->rel));
  s->rel_pool_used = sched_zalloc(kcell, sizeof(*s->rel_pool_used));
  s->adm_start = sched_zalloc((size_t)in->n_cqs + 1, sizeof(int));
  s->adm_idx = sched_zalloc((size_t)in->n_admitted, sizeof(int));
  s->victim = sched_zalloc((size_t)in->n_admitted, sizeof(bool));
  s->coh_start = sched_zalloc((size_t)in->n_cohorts + 2, sizeof(int));
  s->coh_idx = sched_zalloc((size_t)in->n_cqs, sizeof(int));
  s->pend_start = sched_zalloc((size_t)in->n_cqs + 1, sizeof(int));
  s->pend_idx = sched_zalloc((size_t)in->n_pending, sizeof(int));
  s->cursor = sched_zalloc((size_t)in->n_cqs, sizeof(int));
  s->done = sched_zalloc((size_t)in->n_cqs, sizeof(bool));
  s->taken = sched_zalloc((size_t)in->n_pending, sizeof(bool));
  s->parked = sched_zalloc((size_t)in->n_cqs, sizeof(bool));
  s->spent = sched_zalloc((size_t)in->n_teams, sizeof(double));
  s->cands = sched_zalloc((size_t)in->n_admitted, sizeof(*s->cands));
  s->chosen = sched_zalloc((size_t)in->n_admitted, sizeof(int));
  /* a round's heads (one per CQ), or the earlier preemptors */
  for (i = 0; i < in->n_pending; i++)
    n_pre += in->pending[i].preempting;
  s->heads = sched_zalloc((size_t)(in->n_cqs > n_pre ? in->n_cqs : n_pre),
                          sizeof(*s->heads));
  key = sched_zalloc(nkey, sizeof(int));
  pk = sched_zalloc((size_t)in->n_pending, sizeof(*pk));
  if (!s->quota || !s->guar || !s->pool || !s->use || !s->pool_used ||
      !s->rel || !s->rel_pool_used || !s->adm_start || !s->adm_idx ||
      !s->victim || !s->coh_start || !s->coh_idx || !s->pend_start ||
      !s->pend_idx || !s->cursor || !s->done || !s->taken || !s->parked ||
      !s->spent || !s->cands || !s->chosen || !s->heads || !key || !pk ||
      sched_fs_init(&s->fs, in))
    goto out;

  /* Quotas, guaranteed parts and cohort pools. */
  for (i = 0; i < in->n_cqs; i++) {
    const struct sched_cq *cq = &in->cqs[i];
    int k;

    for (k = 0; k < cq->n_flavors; k++) {
      int f = cq->flavors[k].flavor;

      for (r = 0; r < SCHED_NRES; r++) {
        static const struct sched_quota closed = {0, 0, 0};
        const struct sched_quota *q =
            sched_window_open(&cq->flavors[k], in->now)
                ? &cq->flavors[k].quota[r]
                : &closed;
        size_t x = cell(s, i, f, r);

        s->quota[x] = *q;
        s->guar[x] = q->nominal - lendable(q);
        if (cq->cohort >= 0)
          s->pool[((size_t)cq->cohort * (size_t)s->nf + (size_t)f) *
                      SCHED_NRES +
                  (size_t)r] += lendable(q);
      }
    }
  }

  /* Usage of the admitted jobs; both views start equal. */
  for (i = 0; i < in->n_admitted; i++) {
    const struct sched_job *j = &in->admitted[i];

    sched_add_use(s, s->use, s->pool_used, j->cq, j->flavor, j->request, 1);
    key[i] = j->cq;
  }
  memcpy(s->rel, s->use, ncell * sizeof(*s->rel));
  memcpy(s->rel_pool_used, s->pool_used, kcell * sizeof(*s->pool_used));
  group(s->adm_start, s->adm_idx, in->n_cqs, in->n_admitted, key);
  for (i = 0; i < in->n_admitted; i++)
    if (in->admitted[i].evicting) {
      s->victim[i] = true;
      sched_release(s, i, 1);
    }

  /* CQs by cohort; CQs without one go to an extra last group. */
  for (i = 0; i < in->n_cqs; i++)
    key[i] = in->cqs[i].cohort >= 0 ? in->cqs[i].cohort : in->n_cohorts;
  group(s->coh_start, s->coh_idx, in->n_cohorts + 1, in->n_cqs, key);

  /* Pending jobs by CQ, each queue in priority-then-FIFO order. */
  for (i = 0; i < in->n_pending; i++) {
    const struct sched_job *j = &in->pending[i];

    pk[i] = (struct pend_key){
        j->cq, sched_fs_job_tq(in, j), j->priority, j->created_at, j->seq, i};
    s->pend_start[j->cq + 1]++;
  }
  qsort(pk, (size_t)in->n_pending, sizeof(*pk), cmp_pend);
  for (i = 0; i < in->n_cqs; i++)
    s->pend_start[i + 1] += s->pend_start[i];
  for (i = 0; i < in->n_pending; i++)
    s->pend_idx[i] = pk[i].idx;
  for (i = 0; i < in->n_cqs; i++) {
    s->cursor[i] = s->pend_start[i];
    s->done[i] = s->pend_start[i] == s->pend_start[i + 1];
  }
  /* fair share over time: each usage_fs CQ's team-queue segments with
   * its first head */
  sched_fs_segments(&s->fs, s->pend_start, s->pend_idx);
  for (i = 0; i < in->n_cqs; i++)
    if (in->cqs[i].usage_fs && !s->done[i])
      sched_pick(s, i);
  for (i = 0; i < in->n_teams; i++)
    s->spent[i] = in->teams[i].spent;
  result = 0;
out:
  free(key);
  free(pk);
  return result;
}
