/*
 * fairshare.c — decayed usage per team queue, accrued exactly (closed
 * form between events), with the minimum charge counted at admission.
 * See fairshare.h for the rule.
 */
#include "scheduler/fairshare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define US 1000000.0

void fs_request(const int64_t request[SCHED_NRES], double out[SCHED_NRES])
{
  out[SCHED_GPU] = (double)request[SCHED_GPU];
  out[SCHED_CPU] = (double)request[SCHED_CPU] / 1000.0;
  out[SCHED_MEM] = (double)request[SCHED_MEM] / 1024.0;
}

void fs_usage_init(struct fs_usage *u, int64_t at_us)
{
  memset(u, 0, sizeof(*u));
  u->at_us = at_us;
}

void fs_usage_free(struct fs_usage *u)
{
  if (!u)
    return;
  free(u->grace);
  u->grace = NULL;
  u->n_grace = u->cap_grace = 0;
}

double fs_decay(double half_life_s, double dt_s)
{
  return exp2(-dt_s / half_life_s);
}

double fs_accrual(double half_life_s, double dt_s)
{
  /* h/ln2·(1 − e^(−dt·ln2/h)), without cancellation for small dt */
  return -half_life_s / M_LN2 * expm1(-dt_s * M_LN2 / half_life_s);
}

/* Decay and accrue the running jobs from u->at_us to t_us (≥ at_us). */
static void step(struct fs_usage *u, double h, int64_t t_us)
{
  double dt = (double)(t_us - u->at_us) / US;
  double d, a;
  int r;

  if (dt <= 0)
    return;
  d = fs_decay(h, dt);
  a = fs_accrual(h, dt);
  for (r = 0; r < SCHED_NRES; r++)
    u->u[r] = u->u[r] * d + u->rate[r] * a;
  u->at_us = t_us;
}

static void rate_add(struct fs_usage *u, const double req[SCHED_NRES],
                     double sign)
{
  int r;

  for (r = 0; r < SCHED_NRES; r++) {
    u->rate[r] += sign * req[r];
    /* the float residue of a sum back to nothing (CPUs are thousandths) */
    if (sign < 0 && u->rate[r] < 1e-9 * (req[r] > 1 ? req[r] : 1))
      u->rate[r] = 0;
  }
}

int fs_advance(struct fs_usage *u, double half_life_s, int64_t now_us)
{
  int i = 0;

  if (now_us < u->at_us || !(half_life_s > 0))
    return -1;
  for (; i < u->n_grace && u->grace[i].end_us <= now_us; i++) {
    step(u, half_life_s,
         u->grace[i].end_us > u->at_us ? u->grace[i].end_us : u->at_us);
    rate_add(u, u->grace[i].req, 1);
  }
  if (i > 0) {
    memmove(u->grace, u->grace + i,
            (size_t)(u->n_grace - i) * sizeof(*u->grace));
    u->n_grace -= i;
  }
  step(u, half_life_s, now_us);
  return 0;
}

/* Add a job to the list in end order. */
static int grace_add(struct fs_usage *u, int64_t end_us, int64_t key,
                     const double req[SCHED_NRES])
{
  int i;

  if (u->n_grace == u->cap_grace) {
    int cap = u->cap_grace ? 2 * u->cap_grace : 8;
    struct fs_grace *g = realloc(u->grace, (size_t)cap * sizeof(*g));
    if (!g)
      return -1;
    u->grace = g;
    u->cap_grace = cap;
  }
  for (i = u->n_grace; i > 0 && u->grace[i - 1].end_us > end_us; i--)
    u->grace[i] = u->grace[i - 1];
  u->grace[i].end_us = end_us;
  u->grace[i].key = key;
  memcpy(u->grace[i].req, req, sizeof(u->grace[i].req));
  u->n_grace++;
  return 0;
}

/* The minimum charge as used: a negative or NaN one is 0, more than
 * FS_MIN_CHARGE_MAX that. */
static double min_of(double m)
{
  if (!(m > 0)) /* NaN too */
    return 0;
  return m > FS_MIN_CHARGE_MAX ? FS_MIN_CHARGE_MAX : m;
}

/* Shared by admit (charge true: its minimum and its accrual since) and
 * resume (the charge is in u already up to since_us: the accrual after
 * it, or after the end of the minimum when later, is added). */
static int take(struct fs_usage *u, double h, double m, int64_t admitted_us,
                int64_t since_us, int64_t now_us, int64_t key,
                const double req[SCHED_NRES], bool charge)
{
  int64_t end_us, from_us;
  int r;

  if (fs_advance(u, h, now_us))
    return -1;
  if (admitted_us > now_us)
    admitted_us = now_us;
  m = min_of(m);
  end_us = admitted_us + (int64_t)llround(m * US);
  from_us = charge || end_us > since_us ? end_us : since_us;
  if (charge || from_us < now_us) {
    double d = charge ? fs_decay(h, (double)(now_us - admitted_us) / US) : 0;
    double a =
        from_us < now_us ? fs_accrual(h, (double)(now_us - from_us) / US) : 0;
    for (r = 0; r < SCHED_NRES; r++)
      u->u[r] += req[r] * m * d + req[r] * a;
  }
  if (end_us > now_us)
    return grace_add(u, end_us, key, req);
  rate_add(u, req, 1);
  return 0;
}

int fs_admit(struct fs_usage *u, double half_life_s, double min_charge_s,
             int64_t admitted_us, int64_t now_us, int64_t key,
             const double req[SCHED_NRES])
{
  return take(u, half_life_s, min_charge_s, admitted_us, now_us, now_us, key,
              req, true);
}

int fs_resume(struct fs_usage *u, double half_life_s, double min_charge_s,
              int64_t admitted_us, int64_t now_us, int64_t key,
              const double req[SCHED_NRES])
{
  return take(u, half_life_s, min_charge_s, admitted_us, now_us, now_us, key,
              req, false);
}

int fs_resume_since(struct fs_usage *u, double half_life_s, double min_charge_s,
                    int64_t admitted_us, int64_t since_us, int64_t now_us,
                    int64_t key, const double req[SCHED_NRES])
{
  return take(u, half_life_s, min_charge_s, admitted_us, since_us, now_us, key,
              req, false);
}

int fs_restore(struct fs_usage *u, double half_life_s, double min_charge_s,
               int64_t now_us, const struct fs_hold *holds, int n)
{
  int64_t since_us = u->at_us;
  int i, rc = 0;

  if (fs_advance(u, half_life_s, now_us))
    return -1;
  for (i = 0; i < n; i++) {
    const struct fs_hold *j = &holds[i];
    int r = j->counted
                ? fs_resume_since(u, half_life_s, min_charge_s, j->admitted_us,
                                  since_us, now_us, j->key, j->req)
                : fs_admit(u, half_life_s, min_charge_s, j->admitted_us, now_us,
                           j->key, j->req);
    if (r == 0 && j->ended_us > 0)
      r = fs_release(u, half_life_s, min_charge_s, j->admitted_us, j->ended_us,
                     now_us, j->key, j->req);
    rc = rc ? rc : r;
  }
  return rc;
}

int fs_release(struct fs_usage *u, double half_life_s, double min_charge_s,
               int64_t admitted_us, int64_t ended_us, int64_t now_us,
               int64_t key, const double req[SCHED_NRES])
{
  int64_t from_us;
  double back;
  int i, r;

  if (fs_advance(u, half_life_s, now_us))
    return -1;
  for (i = 0; i < u->n_grace; i++)
    if (u->grace[i].key == key) {
      memmove(u->grace + i, u->grace + i + 1,
              (size_t)(u->n_grace - i - 1) * sizeof(*u->grace));
      u->n_grace--;
      return 0;
    }
  rate_add(u, req, -1);
  /* it accrued since the end of its minimum (or since it was taken up):
   * what it accrued after it ended is taken back, decayed to now */
  from_us = admitted_us + (int64_t)llround(min_of(min_charge_s) * US);
  if (ended_us > from_us)
    from_us = ended_us;
  if (ended_us <= 0 || from_us >= now_us)
    return 0;
  back = fs_accrual(half_life_s, (double)(now_us - from_us) / US);
  for (r = 0; r < SCHED_NRES; r++) {
    u->u[r] -= req[r] * back;
    if (u->u[r] < 0) /* the float residue of taking back all there was */
      u->u[r] = 0;
  }
  return 0;
}

double fs_score(const double usage[SCHED_NRES],
                const double weights[SCHED_NRES], double weight)
{
  double s = 0;
  int r;

  for (r = 0; r < SCHED_NRES; r++)
    s += weights[r] * usage[r];
  return weight > 0 ? s / weight : s;
}

int fs_cmp(double a, double b)
{
  double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);

  if (fabs(a - b) <= FS_TIE_REL * m || fabs(a - b) <= FS_TIE_ABS)
    return 0;
  return a < b ? -1 : 1;
}

struct scored {
  double score;
  int idx;
};

static int cmp_scored(const void *pa, const void *pb)
{
  const struct scored *a = pa, *b = pb;

  if (a->score != b->score)
    return a->score < b->score ? -1 : 1;
  return a->idx < b->idx ? -1 : (a->idx > b->idx);
}

int fs_groups(const double *score, int n, int *group)
{
  struct scored *v = malloc(((size_t)(n > 0 ? n : 0) + 1) * sizeof(*v));
  int i, g = -1;
  double first = 0;

  if (!v)
    return -1;
  for (i = 0; i < n; i++)
    v[i] = (struct scored){score[i], i};
  qsort(v, (size_t)(n > 0 ? n : 0), sizeof(*v), cmp_scored);
  for (i = 0; i < n; i++) {
    if (g < 0 || fs_cmp(v[i].score, first) != 0) {
      first = v[i].score;
      g++;
    }
    group[v[i].idx] = g;
  }
  free(v);
  return 0;
}
