/*
 * sched_internal.h — what the files of one admission cycle share
 * (scheduler/sched.c, sched_input.c, sched_work.c): the cycle's working
 * state and the helpers each side needs of the other. Not part of the
 * scheduler's interface (sched.h); nothing outside these files includes it.
 *
 * Pure: no I/O, no globals.
 */
#ifndef GPUGATE_SCHED_INTERNAL_H
#define GPUGATE_SCHED_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scheduler/sched_types.h"
#include "scheduler/sched_alloc.h"
#include "scheduler/sched_fs.h"

#define QTY_INF (INT64_MAX / 4) /* an unlimited amount of quota */

enum kind { KIND_NONE = 0, KIND_FIT, KIND_BORROW, KIND_PREEMPT };

/* The head of a cluster queue in the current round. */
struct head {
  int cq;
  int job; /* into pending */
  enum kind kind;
  int flavor;
  bool borrow;
  double share;
  uint64_t version; /* state version the assignment was computed on */
};

/* A head with the job's ordering keys, for the round's sort. */
struct head_key {
  struct head h;
  int32_t priority;
  int64_t created_at;
  int64_t seq;
};

struct state {
  const struct sched_input *in;
  struct sched_output *out;
  int nf;
  struct sched_quota *quota; /* [cq][f][r]; unlisted flavor: all zero */
  int64_t *guar;             /* [cq][f][r] nominal − lendable */
  int64_t *pool;             /* [cohort][f][r] Σ lendable */
  int64_t *use;              /* [cq][f][r] admitted usage */
  int64_t *pool_used;        /* [cohort][f][r] Σ max(0, use − guar) */
  int64_t *rel;              /* released view of use */
  int64_t *rel_pool_used;    /* released view of pool_used */
  int *adm_start;            /* admitted jobs grouped by CQ */
  int *adm_idx;
  bool *victim;   /* per admitted: evicting or chosen this cycle */
  int *coh_start; /* CQs grouped by cohort */
  int *coh_idx;
  int *pend_start; /* pending jobs grouped by CQ, in queue order */
  int *pend_idx;
  int *cursor;  /* per CQ: position of its head in pend_idx */
  bool *done;   /* per CQ: exhausted, blocked or stopped */
  bool *taken;  /* per pending: decided out of turn (a preemptor's turn) */
  bool *parked; /* per CQ: its head borrows; it waits for the borrow phase */
  bool borrow_phase; /* heads that borrow are decided now */
  double *spent;     /* per team: working copy */
  struct sched_cand *cands;
  int *chosen;
  struct head_key *heads; /* this round's heads, or the earlier preemptors */
  struct sched_fs fs;     /* fair share over time (sched_fs.h) */
  uint64_t version;       /* bumped by every decision that changes the state */
};

static inline size_t cell(const struct state *s, int c, int f, int r)
{
  return ((size_t)c * (size_t)s->nf + (size_t)f) * SCHED_NRES + (size_t)r;
}

static inline int64_t min64(int64_t a, int64_t b)
{
  return a < b ? a : b;
}

static inline int64_t lendable(const struct sched_quota *q)
{
  if (q->lending_limit == SCHED_UNLIMITED)
    return q->nominal;
  return min64(q->lending_limit, q->nominal);
}

/* sched_input.c */

/* Whether in is well formed: indices in range, quotas and requests within
 * bounds, windows ordered, fair-share fields valid. */
bool sched_input_valid(const struct sched_input *in);

/* Whether flavor fl's capacity window (if any) is open at now. */
bool sched_window_open(const struct sched_cq_flavor *fl, int64_t now);

/* Whether a job whose longest run is max_run_s fits in fl's capacity window
 * (if any) from now. */
bool sched_window_fits(const struct sched_cq_flavor *fl, int64_t now,
                       int64_t max_run_s);

/* sched_work.c */

/* Build s for one cycle over in, writing decisions to out (borrowed, both
 * outlive s). Returns 0, or -1 when out of memory (free s with
 * sched_work_free() either way). */
int sched_work_init(struct state *s, const struct sched_input *in,
                    struct sched_output *out);
void sched_work_free(struct state *s);

/* sched.c */

/* Add (sign 1) or remove (sign −1) req to CQ c, flavor f in view u / pu. */
void sched_add_use(const struct state *s, int64_t *u, int64_t *pu, int c, int f,
                   const int64_t *req, int64_t sign);

/* Take admitted job a's usage out of the released view (sign 1), or put it
 * back (sign −1). */
void sched_release(struct state *s, int a, int64_t sign);

/* Move usage_fs CQ c's head to its best untaken job (done when none). */
void sched_pick(struct state *s, int c);

#endif
