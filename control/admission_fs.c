/*
 * admission_fs.c — the leader's usage accounts (see admission_fs.h).
 *
 * An account is matched to its team queue by names, so a configuration
 * reload keeps every usage whatever the new indices. A job's key in the
 * accounts is its seq (unique), which is all fs_release() needs. A job
 * that ended is released as of its end (the finished_at the feed reads),
 * so the time it takes gpugate to hear of an end charges nobody.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/fairshare.h"
#include "scheduler/fairshare.h"
#include "control/admission_fs.h"
#include "lib/metrics.h"

#define SAVE_US 5000000LL /* a running job's accrual is written this often */
#define US 1000000LL

struct account {
  char team[DB_NAME_LEN], queue[DB_NAME_LEN];
  double half_life_s;
  double min_charge_s; /* its cluster queue's */
  struct fs_usage u;
};

struct admission_fs {
  bool restored;          /* rows read since the last reset */
  struct db_fs_row *rows; /* what was stored when this leader started */
  int n_rows;
  /* the holds that ended since rows were written (db_fs_ended()), for the
   * accounts restored from them; dropped once they are */
  struct db_fs_ended *ended;
  int n_ended;
  struct account *acc; /* aligned with the configuration's tqs */
  int n_acc;
  int64_t saved_us; /* last write */
};

struct admission_fs *admission_fs_new(void)
{
  return calloc(1, sizeof(struct admission_fs));
}

static void drop_accounts(struct admission_fs *b)
{
  int i;

  for (i = 0; i < b->n_acc; i++)
    fs_usage_free(&b->acc[i].u);
  free(b->acc);
  b->acc = NULL;
  b->n_acc = 0;
}

void admission_fs_reset(struct admission_fs *b)
{
  if (!b)
    return;
  drop_accounts(b);
  free(b->rows);
  b->rows = NULL;
  b->n_rows = 0;
  free(b->ended);
  b->ended = NULL;
  b->n_ended = 0;
  b->restored = false;
  b->saved_us = 0;
}

void admission_fs_free(struct admission_fs *b)
{
  admission_fs_reset(b);
  free(b);
}

static int find(const struct account *acc, int n, const char *team,
                const char *queue)
{
  int i;

  for (i = 0; i < n; i++)
    if (!strcmp(acc[i].team, team) && !strcmp(acc[i].queue, queue))
      return i;
  return -1;
}

static const struct db_fs_row *stored(const struct admission_fs *b,
                                      const char *team, const char *queue)
{
  int i;

  for (i = 0; i < b->n_rows; i++)
    if (!strcmp(b->rows[i].team, team) && !strcmp(b->rows[i].queue, queue))
      return &b->rows[i];
  return NULL;
}

/* Apply the quota log to the accounts as they are. Returns how many
 * events moved an account, or -1 when out of memory. */
static int drain(struct admission_fs *b, struct sched_state *st, int64_t now_us)
{
  int i, moved = 0;

  for (i = 0; i < st->n_qlog; i++) {
    const struct sched_quota_event *e = &st->qlog[i];
    int k = find(b->acc, b->n_acc, e->team->s, e->queue->s);
    double req[SCHED_NRES];
    struct account *a;
    int rc;

    if (k < 0)
      continue;
    a = &b->acc[k];
    fs_request(e->request, req);
    if (e->start)
      rc = fs_admit(&a->u, a->half_life_s, a->min_charge_s, e->admitted_at_us,
                    now_us, e->seq, req);
    else /* a restored account had every holding job accruing since its
            usage was stored, so an end before that is taken back too */
      rc = fs_release(&a->u, a->half_life_s, a->min_charge_s, e->admitted_at_us,
                      e->ended_at_us, now_us, e->seq, req);
    /* -1 is a clock behind the account (refused) or out of memory: the
     * event cannot be told better later, so it is let go */
    moved += rc == 0;
  }
  st->n_qlog = 0;
  return moved;
}

/*
 * The new accounts (fresh[i]) brought to now_us: each from what was stored
 * (0 as of now when nothing was), with every hold since (fs_restore()):
 * the jobs holding quota in st (counted when admitted at or before the
 * stored as_of) and, when restoring, the jobs that ended since it was
 * written (b->ended, less those st still holds: the feed will tell their
 * end). Returns 0, or -1 when out of memory.
 */
static int restore(struct admission_fs *b, struct account *acc, int n,
                   const bool *fresh, const struct sched_state *st,
                   int64_t now_us)
{
  int m = st->n + b->n_ended, i, k, rc = -1;
  int *count = calloc((size_t)n + 2, sizeof(*count));
  int *at = calloc((size_t)n + 2, sizeof(*at));
  int *of = calloc((size_t)m + 1, sizeof(*of)); /* jobs, then ended */
  struct fs_hold *holds = calloc((size_t)m + 1, sizeof(*holds));

  if (!count || !at || !of || !holds)
    goto out;
  /* which fresh account each hold is for (-1: none), then bucketed */
  for (i = 0; i < m; i++)
    of[i] = -1;
  for (i = 0; i < st->n; i++) {
    const struct sched_state_job *j = &st->jobs[i];
    if (!sched_state_pending(j) &&
        (k = find(acc, n, j->team->s, j->queue->s)) >= 0 && fresh[k])
      of[i] = k;
  }
  for (i = 0; i < b->n_ended; i++) {
    const struct db_fs_ended *e = &b->ended[i];
    if (sched_state_find(st, e->id) < 0 &&
        (k = find(acc, n, e->team, e->queue)) >= 0 && fresh[k])
      of[st->n + i] = k;
  }
  for (i = 0; i < m; i++)
    if (of[i] >= 0)
      count[of[i] + 1]++;
  for (k = 0; k < n; k++)
    count[k + 1] += count[k];
  memcpy(at, count, (size_t)(n + 1) * sizeof(*at));
  for (i = 0; i < st->n; i++) {
    const struct sched_state_job *j = &st->jobs[i];
    struct fs_hold *h;
    if (of[i] < 0)
      continue;
    h = &holds[at[of[i]]++];
    h->key = j->seq;
    h->admitted_us = j->admitted_at_us;
    h->ended_us = 0;
    /* admissions are written by leaders' cycles after their usage is:
     * admitted at or before as_of, it was counted when stored */
    h->counted = stored(b, acc[of[i]].team, acc[of[i]].queue) &&
                 j->admitted_at_us <= acc[of[i]].u.at_us;
    fs_request(j->request, h->req);
  }
  for (i = 0; i < b->n_ended; i++)
    if (of[st->n + i] >= 0)
      holds[at[of[st->n + i]]++] = b->ended[i].hold;
  for (k = 0; k < n; k++)
    if (fresh[k])
      fs_restore(&acc[k].u, acc[k].half_life_s, acc[k].min_charge_s, now_us,
                 holds + count[k], count[k + 1] - count[k]);
  rc = 0;
out:
  free(count);
  free(at);
  free(of);
  free(holds);
  return rc;
}

/* Match the accounts to cfg's team queues; new ones restored and given
 * their holding jobs. */
static int resync(struct admission_fs *b, const struct db_sched *cfg,
                  const struct sched_state *st, int64_t now_us)
{
  int n = cfg->in.n_tqs, i;
  struct account *acc = calloc((size_t)n + 1, sizeof(*acc));
  bool *fresh = calloc((size_t)n + 1, sizeof(*fresh));

  if (!acc || !fresh) {
    free(acc);
    free(fresh);
    return -1;
  }
  for (i = 0; i < n; i++) {
    const char *team = cfg->tq_team[i], *queue = cfg->tq_queue[i];
    int k = find(b->acc, b->n_acc, team, queue);
    struct account *a = &acc[i];
    const struct db_fs_row *row;

    snprintf(a->team, sizeof(a->team), "%s", team);
    snprintf(a->queue, sizeof(a->queue), "%s", queue);
    a->half_life_s = cfg->fs_half_life[cfg->tqs[i].cq];
    a->min_charge_s = cfg->cqs[cfg->tqs[i].cq].fs_min_charge_s;
    if (k >= 0) {
      a->u = b->acc[k].u; /* moved: its list goes with it */
      memset(&b->acc[k].u, 0, sizeof(b->acc[k].u));
      continue;
    }
    fresh[i] = true;
    /* valued as stored (fs_restore() brings it to now), or 0 as of now */
    row = stored(b, team, queue);
    fs_usage_init(&a->u,
                  row && row->as_of_us <= now_us ? row->as_of_us : now_us);
    if (row)
      memcpy(a->u.u, row->u, sizeof(a->u.u));
  }
  if (restore(b, acc, n, fresh, st, now_us)) {
    for (i = 0; i < n; i++)
      fs_usage_free(&acc[i].u);
    free(acc);
    free(fresh);
    return -1;
  }
  /* the ended holds are told once: a later resync's new account (a team
   * queue added meanwhile) has none */
  free(b->ended);
  b->ended = NULL;
  b->n_ended = 0;
  drop_accounts(b);
  b->acc = acc;
  b->n_acc = n;
  free(fresh);
  return 0;
}

static bool accruing(const struct admission_fs *b)
{
  int i, r;

  for (i = 0; i < b->n_acc; i++) {
    if (b->acc[i].u.n_grace)
      return true;
    for (r = 0; r < SCHED_NRES; r++)
      if (b->acc[i].u.rate[r] > 0)
        return true;
  }
  return false;
}

/* A team queue in (cluster queue, team, queue) order, for standing(). */
struct tq_ref {
  int cq;
  const char *team, *queue;
  int idx;
};

static int cmp_tq_ref(const void *pa, const void *pb)
{
  const struct tq_ref *a = pa, *b = pb;
  int c;

  if (a->cq != b->cq)
    return a->cq < b->cq ? -1 : 1;
  c = strcmp(a->team, b->team);
  return c ? c : strcmp(a->queue, b->queue);
}

/*
 * Each team queue's standing in its cluster queue by score[] (n = cfg's
 * team queues): group, the tie group of its score (fs_groups(), 0 the
 * lowest), and rank, 1-based in (group, team, queue) order. Costs a sort
 * of the team queues, never a look at the jobs. Returns 0, or -1 when out
 * of memory.
 */
static int standing(const struct db_sched *cfg, const double *score, int *group,
                    int *rank)
{
  int n = cfg->in.n_tqs, i, k, m, rc = 0;
  struct tq_ref *ref = calloc((size_t)n + 1, sizeof(*ref));
  int *g = calloc((size_t)n + 1, sizeof(*g));
  int *at = calloc((size_t)n + 2, sizeof(*at));
  double *sc = calloc((size_t)n + 1, sizeof(*sc));

  if (!ref || !g || !at || !sc) {
    rc = -1;
    goto out;
  }
  for (i = 0; i < n; i++)
    ref[i] =
        (struct tq_ref){cfg->tqs[i].cq, cfg->tq_team[i], cfg->tq_queue[i], i};
  qsort(ref, (size_t)n, sizeof(*ref), cmp_tq_ref);
  for (i = 0; i < n; i = k) {
    for (k = i; k < n && ref[k].cq == ref[i].cq; k++)
      sc[k - i] = score[ref[k].idx];
    if (fs_groups(sc, k - i, g)) {
      rc = -1;
      goto out;
    }
    /* rank: by group, then (team, queue), the order ref[i..k) is in */
    memset(at, 0, (size_t)(k - i + 1) * sizeof(*at));
    for (m = 0; m < k - i; m++)
      at[g[m] + 1]++;
    for (m = 0; m < k - i; m++)
      at[m + 1] += at[m];
    for (m = 0; m < k - i; m++) {
      group[ref[i + m].idx] = g[m];
      rank[ref[i + m].idx] = ++at[g[m]];
    }
  }
out:
  free(ref);
  free(g);
  free(at);
  free(sc);
  return rc;
}

static int save(struct admission_fs *b, struct db_conn *c,
                const struct db_sched *cfg, int64_t now_us, const char *seen,
                char *err, size_t errlen)
{
  struct db_fs_row *rows = calloc((size_t)b->n_acc + 1, sizeof(*rows));
  double *score = calloc((size_t)b->n_acc + 1, sizeof(*score));
  int *group = calloc((size_t)b->n_acc + 1, sizeof(*group));
  int *rank = calloc((size_t)b->n_acc + 1, sizeof(*rank));
  int i, rc = -1;

  if (!rows || !score || !group || !rank || b->n_acc != cfg->in.n_tqs)
    goto oom;
  for (i = 0; i < b->n_acc; i++) {
    struct account *a = &b->acc[i];
    const struct sched_tq *t = &cfg->tqs[i];
    fs_advance(&a->u, a->half_life_s, now_us);
    snprintf(rows[i].team, sizeof(rows[i].team), "%s", a->team);
    snprintf(rows[i].queue, sizeof(rows[i].queue), "%s", a->queue);
    memcpy(rows[i].u, a->u.u, sizeof(rows[i].u));
    rows[i].as_of_us = a->u.at_us;
    rows[i].half_life_s = a->half_life_s;
    score[i] = fs_score(a->u.u, cfg->cqs[t->cq].fs_weights, t->weight);
  }
  /* the standing a pending job's status shows, written with the usage */
  if (standing(cfg, score, group, rank))
    goto oom;
  for (i = 0; i < b->n_acc; i++) {
    rows[i].score = score[i];
    rows[i].rank = rank[i];
  }
  rc = db_fs_save(c, rows, b->n_acc, seen, err, errlen);
  if (rc == 0)
    b->saved_us = now_us;
  goto out;
oom:
  snprintf(err, errlen, "out of memory");
out:
  free(rows);
  free(score);
  free(group);
  free(rank);
  return rc;
}

int admission_fs_update(struct admission_fs *b, struct db_conn *c,
                        const struct db_sched *cfg, struct sched_state *st,
                        bool resync_now, int64_t now_us, const char *seen,
                        char *err, size_t errlen)
{
  int moved;

  if (!b->restored) {
    if (db_fs_load(c, &b->rows, &b->n_rows, err, errlen) ||
        db_fs_ended(c, &b->ended, &b->n_ended, err, errlen))
      return -1;
    b->restored = true;
    resync_now = true;
  }
  moved = drain(b, st, now_us);
  if (resync_now) {
    if (resync(b, cfg, st, now_us)) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    moved += b->n_acc > 0;
  }
  if (b->n_acc > 0 &&
      (moved > 0 || (accruing(b) && now_us - b->saved_us >= SAVE_US)))
    return save(b, c, cfg, now_us, seen, err, errlen);
  return 0;
}

void admission_fs_scores(struct admission_fs *b, struct db_sched *cfg,
                         int64_t now_us)
{
  int i;

  for (i = 0; i < b->n_acc && i < cfg->in.n_tqs; i++) {
    struct account *a = &b->acc[i];
    struct sched_tq *t = &cfg->tqs[i];

    fs_advance(&a->u, a->half_life_s, now_us);
    t->score = fs_score(a->u.u, cfg->cqs[t->cq].fs_weights, t->weight);
  }
}

void admission_fs_gauges(const struct admission_fs *b,
                         const struct db_sched *cfg, struct metrics_gauges *g)
{
  int i;

  for (i = 0; i < b->n_acc && i < cfg->in.n_tqs; i++)
    metrics_gauge_fair_share(g, b->acc[i].team, b->acc[i].queue, b->acc[i].u.u,
                             cfg->tqs[i].score);
}

int admission_fs_order(const struct db_sched *cfg, struct sched_state *st)
{
  int n = cfg->in.n_tqs, i, rc = -1;
  double *score = calloc((size_t)n + 1, sizeof(*score));
  int *group = calloc((size_t)n + 1, sizeof(*group));
  int *rank = calloc((size_t)n + 1, sizeof(*rank));
  struct sched_fs_key *keys = calloc((size_t)n + 1, sizeof(*keys));

  if (!score || !group || !rank || !keys)
    goto out;
  for (i = 0; i < n; i++)
    score[i] = cfg->tqs[i].score;
  if (standing(cfg, score, group, rank))
    goto out;
  for (i = 0; i < n; i++) {
    keys[i].team = sched_state_name(st, cfg->tq_team[i]);
    keys[i].queue = sched_state_name(st, cfg->tq_queue[i]);
    if (!keys[i].team || !keys[i].queue)
      goto out;
    keys[i].group = group[i];
    keys[i].first =
        cfg->cqs[cfg->tqs[i].cq].precedence == SCHED_PRECEDENCE_USAGE;
  }
  rc = sched_state_fs_order(st, keys, n);
out:
  free(score);
  free(group);
  free(rank);
  free(keys);
  return rc;
}
