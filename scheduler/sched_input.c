/*
 * sched_input.c — the checks on one admission cycle's input
 * (sched_input_valid()) and the capacity windows its flavors may have
 * (see sched_internal.h). Pure: no I/O, no globals.
 */
#include <math.h>

#include "scheduler/fairshare.h"
#include "scheduler/sched_internal.h"

/*
 * Capacity windows (DWS Calendar mode). A flavor with a window offers its
 * quota only inside it (outside, the CQ's quota there is zero: nothing is
 * admitted nor lent), and takes a job only if the job's longest run ends
 * by the window's end.
 */
static bool window_set(const struct sched_cq_flavor *fl)
{
  return fl->window_from != 0 || fl->window_until != 0;
}

bool sched_window_open(const struct sched_cq_flavor *fl, int64_t now)
{
  return !window_set(fl) || (now >= fl->window_from && now < fl->window_until);
}

bool sched_window_fits(const struct sched_cq_flavor *fl, int64_t now,
                       int64_t max_run_s)
{
  return !window_set(fl) || (sched_window_open(fl, now) && max_run_s > 0 &&
                             max_run_s <= fl->window_until - now);
}

static bool quota_valid(const struct sched_quota *q)
{
  return q->nominal >= 0 && q->nominal < QTY_INF &&
         q->borrowing_limit >= SCHED_UNLIMITED &&
         q->borrowing_limit < QTY_INF && q->lending_limit >= SCHED_UNLIMITED;
}

static bool job_valid(const struct sched_input *in, const struct sched_job *j,
                      bool admitted)
{
  int r;

  if (j->cq < 0 || j->cq >= in->n_cqs)
    return false;
  if (j->team < -1 || j->team >= in->n_teams)
    return false;
  if (admitted && (j->flavor < 0 || j->flavor >= in->n_flavors))
    return false;
  for (r = 0; r < SCHED_NRES; r++)
    if (j->request[r] < 0 || j->request[r] >= QTY_INF)
      return false;
  return true;
}

bool sched_input_valid(const struct sched_input *in)
{
  int i, k, r;

  if (in->n_flavors < 0 || in->n_cohorts < 0 || in->n_cqs < 0 ||
      in->n_teams < 0 || in->n_admitted < 0 || in->n_pending < 0)
    return false;
  if ((in->n_cqs && !in->cqs) || (in->n_teams && !in->teams) ||
      (in->n_admitted && !in->admitted) || (in->n_pending && !in->pending))
    return false;
  for (i = 0; i < in->n_cqs; i++) {
    const struct sched_cq *cq = &in->cqs[i];

    if (cq->cohort < -1 || cq->cohort >= in->n_cohorts)
      return false;
    if (cq->n_flavors < 0 || cq->n_flavors > SCHED_MAX_FLAVORS)
      return false;
    if (!(cq->weight >= 0)) /* also rejects NaN */
      return false;
    for (k = 0; k < cq->n_flavors; k++) {
      int f = cq->flavors[k].flavor, m;

      if (f < 0 || f >= in->n_flavors)
        return false;
      for (m = 0; m < k; m++)
        if (cq->flavors[m].flavor == f)
          return false;
      if (window_set(&cq->flavors[k]) &&
          cq->flavors[k].window_until <= cq->flavors[k].window_from)
        return false;
      for (r = 0; r < SCHED_NRES; r++)
        if (!quota_valid(&cq->flavors[k].quota[r]))
          return false;
    }
  }
  for (i = 0; i < in->n_admitted; i++)
    if (!job_valid(in, &in->admitted[i], true))
      return false;
  for (i = 0; i < in->n_pending; i++)
    if (!job_valid(in, &in->pending[i], false))
      return false;
  if (in->n_tqs < 0 || (in->n_tqs && !in->tqs))
    return false;
  for (i = 0; i < in->n_tqs; i++) {
    const struct sched_tq *t = &in->tqs[i];

    if (t->cq < 0 || t->cq >= in->n_cqs || !(t->weight > 0) ||
        !(t->score >= 0) || !isfinite(t->score) || !isfinite(t->weight))
      return false;
  }
  for (i = 0; i < in->n_cqs; i++) {
    if (in->cqs[i].usage_fs &&
        !(in->cqs[i].fs_min_charge_s >= 0 &&
          in->cqs[i].fs_min_charge_s <= FS_MIN_CHARGE_MAX))
      return false;
    for (r = 0; r < SCHED_NRES; r++)
      if (in->cqs[i].usage_fs && !(in->cqs[i].fs_weights[r] >= 0))
        return false;
  }
  return true;
}
