/*
 * sched_fs.c — fair share over time inside one scheduling cycle: scores
 * as the cycle goes, the head of a usage-ordered cluster queue, the
 * minimum charge of an admission and the victims' order (see sched_fs.h).
 */
#include "scheduler/sched_fs.h"

#include <stdlib.h>
#include <string.h>

#include "scheduler/fairshare.h"
#include "scheduler/sched_alloc.h"

int sched_fs_init(struct sched_fs *f, const struct sched_input *in)
{
  int i;

  memset(f, 0, sizeof(*f));
  f->in = in;
  f->tq_score = sched_zalloc((size_t)in->n_tqs, sizeof(double));
  f->cq_fs = sched_zalloc((size_t)in->n_cqs, sizeof(double));
  f->coh_fs = sched_zalloc((size_t)in->n_cohorts, sizeof(bool));
  f->segs = sched_zalloc((size_t)in->n_pending, sizeof(*f->segs));
  f->seg_start = sched_zalloc((size_t)in->n_cqs + 1, sizeof(int));
  f->cand_score = sched_zalloc((size_t)in->n_admitted, sizeof(double));
  f->cand_group = sched_zalloc((size_t)in->n_admitted, sizeof(int));
  if (!f->tq_score || !f->cq_fs || !f->coh_fs || !f->segs || !f->seg_start ||
      !f->cand_score || !f->cand_group)
    return -1;
  /* scores, and the cohorts ranked by usage */
  for (i = 0; i < in->n_tqs; i++) {
    f->tq_score[i] = in->tqs[i].score;
    f->cq_fs[in->tqs[i].cq] += in->tqs[i].score * in->tqs[i].weight;
  }
  for (i = 0; i < in->n_cohorts; i++)
    f->coh_fs[i] = true;
  for (i = 0; i < in->n_cqs; i++)
    if (in->cqs[i].cohort >= 0 && !in->cqs[i].usage_fs)
      f->coh_fs[in->cqs[i].cohort] = false;
  return 0;
}

void sched_fs_free(struct sched_fs *f)
{
  free(f->tq_score);
  free(f->cq_fs);
  free(f->coh_fs);
  free(f->segs);
  free(f->seg_start);
  free(f->cand_score);
  free(f->cand_group);
  memset(f, 0, sizeof(*f));
}

int sched_fs_job_tq(const struct sched_input *in, const struct sched_job *j)
{
  if (!in->cqs[j->cq].usage_fs || j->tq < 0 || j->tq >= in->n_tqs ||
      in->tqs[j->tq].cq != j->cq)
    return -1;
  return j->tq;
}

double sched_fs_score(const struct sched_fs *f, const struct sched_job *j)
{
  int t = sched_fs_job_tq(f->in, j);

  return t < 0 ? 0 : f->tq_score[t];
}

void sched_fs_segments(struct sched_fs *f, const int *pend_start,
                       const int *pend_idx)
{
  const struct sched_input *in = f->in;
  int i, x, ns = 0, tq = -1;

  for (i = 0; i < in->n_cqs; i++) {
    f->seg_start[i] = ns;
    if (!in->cqs[i].usage_fs)
      continue;
    for (x = pend_start[i]; x < pend_start[i + 1]; x++) {
      int t = sched_fs_job_tq(in, &in->pending[pend_idx[x]]);
      if (x == pend_start[i] || t != tq)
        f->segs[ns++] = (struct sched_fs_seg){t, x, x + 1, x};
      else
        f->segs[ns - 1].end = x + 1;
      tq = t;
    }
  }
  f->seg_start[in->n_cqs] = ns;
}

/* Pending job a goes before b in their usage_fs CQ: score, then priority
 * (precedence usage, Kueue's order) or the other way round, then creation
 * time, seq, index. Scores equal as fs_cmp() has them. */
static bool better(const struct sched_fs *f, int a, int b)
{
  const struct sched_job *x = &f->in->pending[a], *y = &f->in->pending[b];
  int sc = fs_cmp(sched_fs_score(f, x), sched_fs_score(f, y));
  bool usage_first = f->in->cqs[x->cq].precedence == SCHED_PRECEDENCE_USAGE;

  if (usage_first && sc != 0)
    return sc < 0;
  if (x->priority != y->priority)
    return x->priority > y->priority;
  if (sc != 0)
    return sc < 0;
  if (x->created_at != y->created_at)
    return x->created_at < y->created_at;
  if (x->seq != y->seq)
    return x->seq < y->seq;
  return a < b;
}

int sched_fs_pick(struct sched_fs *f, int c, const int *pend_idx,
                  const bool *taken)
{
  int k, best = -1;

  for (k = f->seg_start[c]; k < f->seg_start[c + 1]; k++) {
    struct sched_fs_seg *g = &f->segs[k];

    while (g->cur < g->end && taken[pend_idx[g->cur]])
      g->cur++;
    if (g->cur < g->end &&
        (best < 0 || better(f, pend_idx[g->cur], pend_idx[f->segs[best].cur])))
      best = k;
  }
  return best < 0 ? -1 : f->segs[best].cur;
}

void sched_fs_charge(struct sched_fs *f, const struct sched_job *j)
{
  const struct sched_cq *cq = &f->in->cqs[j->cq];
  int t = sched_fs_job_tq(f->in, j);
  double req[SCHED_NRES], c;

  if (t < 0)
    return;
  fs_request(j->request, req);
  c = cq->fs_min_charge_s * fs_score(req, cq->fs_weights, 1);
  f->tq_score[t] += c / f->in->tqs[t].weight;
  f->cq_fs[j->cq] += c;
}

static int cmp_cand(const void *a, const void *b)
{
  const struct sched_cand *x = a, *y = b;

  if (x->other != y->other)
    return x->other ? -1 : 1;
  if (x->priority != y->priority)
    return x->priority < y->priority ? -1 : 1;
  if (x->group != y->group) /* the highest usage goes first */
    return x->group > y->group ? -1 : 1;
  if (x->admitted_at != y->admitted_at)
    return x->admitted_at > y->admitted_at ? -1 : 1;
  if (x->seq != y->seq)
    return x->seq > y->seq ? -1 : 1;
  return x->idx > y->idx ? -1 : (x->idx < y->idx);
}

int sched_fs_sort_victims(struct sched_fs *f, struct sched_cand *c, int n)
{
  int i;

  for (i = 0; i < n && c[i].score == 0; i++)
    ;
  if (i < n) { /* usage among them: their tie groups (fs_cmp() alone is
                * not transitive) */
    for (i = 0; i < n; i++)
      f->cand_score[i] = c[i].score;
    if (fs_groups(f->cand_score, n, f->cand_group))
      return -1;
    for (i = 0; i < n; i++)
      c[i].group = f->cand_group[i];
  } else {
    for (i = 0; i < n; i++)
      c[i].group = 0;
  }
  qsort(c, (size_t)n, sizeof(*c), cmp_cand);
  return 0;
}
