/*
 * fairshare.h — fair share over time: a team queue's usage in decayed
 * resource-seconds, accrued exactly, and the score that orders admission.
 *
 * While jobs with total request R hold quota, usage moves by the closed
 * form of a constant request decayed continuously with half-life h:
 *
 *   U(t + Δ) = U(t)·2^(−Δ/h) + R·h/ln2·(1 − 2^(−Δ/h))
 *
 * A job is charged at least m seconds of its request (the cluster
 * queue's usage_fair_sharing.min_charge_s, FS_MIN_CHARGE_S by default),
 * counted at once at its admission: R·m is added then, and the job
 * accrues only from admission + m on. So a job held for H seconds is
 * charged exactly max(m, H)·R in all, each part decayed from when it was
 * charged (Kueue's entry penalty and Armada's short-job penalty in one
 * rule; m = 0 is exact accrual only). The jobs still inside their first
 * m seconds are kept in a short list ordered by when they start to
 * accrue; time only moves forwards.
 *
 * Pure: no I/O, no clock, no globals. Not thread-safe: one owner.
 */
#ifndef GPUGATE_FAIRSHARE_H
#define GPUGATE_FAIRSHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "scheduler/sched_types.h"

#define FS_MIN_CHARGE_S 60      /* min_charge_s when absent */
#define FS_MIN_CHARGE_MAX 86400 /* a day */
#define FS_TIE_REL 1e-9         /* scores this close (relative) are equal */
#define FS_TIE_ABS 1.0 /* and scores this close (absolute: one score unit) */

/* A job inside its minimum charge: it starts to accrue at end_us. */
struct fs_grace {
  int64_t end_us;
  int64_t key; /* the job (its seq) */
  double req[SCHED_NRES];
};

/* One team queue's usage. */
struct fs_usage {
  double u[SCHED_NRES];    /* GPU-s, CPU-s, GiB-s, decayed to at_us */
  double rate[SCHED_NRES]; /* requests of the jobs accruing now */
  int64_t at_us;           /* the time u is valued at */
  struct fs_grace *grace;  /* by end_us ascending */
  int n_grace, cap_grace;
};

/* A job's request in the units of usage (GPUs, CPUs, GiB) from the
 * scheduler's integers (GPUs, CPU millicores, MiB). */
void fs_request(const int64_t request[SCHED_NRES], double out[SCHED_NRES]);

/* Usage 0 valued at at_us. */
void fs_usage_init(struct fs_usage *u, int64_t at_us);
void fs_usage_free(struct fs_usage *u);

/* 2^(−dt/h) and the accrual factor h/ln2·(1 − 2^(−dt/h)), dt ≥ 0. */
double fs_decay(double half_life_s, double dt_s);
double fs_accrual(double half_life_s, double dt_s);

/*
 * Value u at now_us: decay it, accrue the running jobs, and move the jobs
 * whose minimum charge ended on the way into the accruing set at the exact
 * time it ended. Returns 0, or -1 (u unchanged) when now_us is before
 * u->at_us (a clock that stepped backwards is refused) or the half-life
 * is not > 0.
 */
int fs_advance(struct fs_usage *u, double half_life_s, int64_t now_us);

/*
 * Charge a job admitted at admitted_us (≤ now_us; later is read as now)
 * with request req and a minimum of min_charge_s seconds (a negative or
 * NaN one is read as 0, more than FS_MIN_CHARGE_MAX as that), valued at
 * now_us: its minimum charge, decayed since its admission, and what it
 * has accrued since the minimum ended when that lies before now.
 * Advances u to now_us first. Returns 0, or -1 as fs_advance(), or when
 * out of memory (u valued at now_us, job not added).
 */
int fs_admit(struct fs_usage *u, double half_life_s, double min_charge_s,
             int64_t admitted_us, int64_t now_us, int64_t key,
             const double req[SCHED_NRES]);

/*
 * Take up a job already charged (its usage was restored from storage):
 * it accrues from now on, or from the end of its minimum charge when that
 * is still ahead. Same returns as fs_admit().
 */
int fs_resume(struct fs_usage *u, double half_life_s, double min_charge_s,
              int64_t admitted_us, int64_t now_us, int64_t key,
              const double req[SCHED_NRES]);

/*
 * Take up a job that the stored usage in u counted as accruing when it
 * was valued at since_us (a usage read back: the job was admitted at or
 * before since_us and its end, if any, was not yet told): what it accrued
 * from since_us, or from the end of its minimum charge when that is
 * later, up to now_us is charged, and it accrues on. since_us = now_us is
 * fs_resume(). Same returns as fs_admit().
 */
int fs_resume_since(struct fs_usage *u, double half_life_s, double min_charge_s,
                    int64_t admitted_us, int64_t since_us, int64_t now_us,
                    int64_t key, const double req[SCHED_NRES]);

/* One job's hold of quota, as a leader that reads usage back sees it. */
struct fs_hold {
  int64_t key;         /* the job (its seq) */
  int64_t admitted_us; /* its admission (admitted_at) */
  int64_t ended_us;    /* when it stopped holding (finished_at); 0: holds */
  bool counted; /* the stored usage counted it accruing at its value's time:
                   admitted at or before it, its end not told by then */
  double req[SCHED_NRES];
};

/*
 * Bring a usage read back (u valued at u->at_us, the time it was stored)
 * to now_us with every hold that overlaps the time since: a counted one is
 * taken up by fs_resume_since(u->at_us), any other charged by fs_admit(),
 * and one that ended is then released at its end by fs_release(). So the
 * usage is exactly what the leader that stored it would have reached had
 * it run on: nothing between the store and now_us is lost, nothing
 * charged twice, whatever cycles failed or leaders changed in between.
 * Holds that still hold accrue on. Returns 0, or -1 as fs_advance() (u
 * unchanged) or when out of memory (that hold left out).
 */
int fs_restore(struct fs_usage *u, double half_life_s, double min_charge_s,
               int64_t now_us, const struct fs_hold *holds, int n);

/*
 * The job (admitted at admitted_us with a minimum of min_charge_s, as
 * fs_admit() was told) stopped holding quota at ended_us and it is told
 * at now_us: it stops accruing, and what it accrued between ended_us and
 * now_us (never before the end of its minimum) is taken back, so a lag in
 * hearing of the end charges nothing. ended_us ≤ 0 or ≥ now_us: it ended
 * now. A job still inside its minimum charge is only dropped from the
 * list: its minimum was charged whole. The caller keeps ended_us at or
 * after the time u began accruing the job (a job taken up by fs_resume()
 * accrued from then only). Returns 0, or -1 as fs_advance().
 */
int fs_release(struct fs_usage *u, double half_life_s, double min_charge_s,
               int64_t admitted_us, int64_t ended_us, int64_t now_us,
               int64_t key, const double req[SCHED_NRES]);

/* score = Σ weights_r × usage_r ÷ weight (weight > 0). */
double fs_score(const double usage[SCHED_NRES],
                const double weights[SCHED_NRES], double weight);

/*
 * −1, 0 or 1: a below, equal to or above b. Two scores are equal when
 * they differ by at most FS_TIE_REL relative (decayed values never tie
 * exactly) or by at most FS_TIE_ABS absolute: one score unit, one
 * weighted resource-second (a GPU-second at weight 1 per unit of
 * fair_sharing_weight), below anything worth ordering on. The floor lets
 * usage be forgotten: ten half-lives shrink 1,000 GPU-seconds to under
 * one, and arrival order returns. Not transitive (0, 0.8 and 1.6): a sort
 * orders by fs_groups() instead.
 */
int fs_cmp(double a, double b);

/*
 * Tie groups of n scores for sorting: group[i] is the 0-based rank of
 * score[i]'s group, groups ascending by score. Scores are taken in
 * ascending order and a group holds the scores that fs_cmp() finds equal
 * to its lowest one, so the ranks are a total order consistent with
 * fs_cmp() wherever it is transitive. Returns 0, or -1 when out of memory.
 */
int fs_groups(const double *score, int n, int *group);

#endif
