/*
 * state_order.c — the admission leader's queue positions: the admission
 * order kept from one computation to the next (a job keeps its place until
 * it leaves PENDING or its team queue's fair-share key changes), the
 * fair-share order keys, and the per-queue counts of pending and admitted
 * jobs. The jobs themselves and their index are state.c.
 *
 * Pure: no I/O, no clock, no globals.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/state.h"
#include "scheduler/state_internal.h"

/* admission order within a scope: priority desc, created_at, seq; in a
 * cluster queue that orders by usage, the score's tie group before or
 * after priority (the same for every job of one cluster queue) */
static int cmp_order(const struct sched_state_job *a,
                     const struct sched_state_job *b)
{
  if (a->fs_first && a->fs_group != b->fs_group)
    return a->fs_group < b->fs_group ? -1 : 1;
  if (a->priority != b->priority)
    return a->priority > b->priority ? -1 : 1;
  if (a->fs_group != b->fs_group)
    return a->fs_group < b->fs_group ? -1 : 1;
  if (a->created_at != b->created_at)
    return a->created_at < b->created_at ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

struct sort_key {
  const struct sched_state_job *j;
  int idx;
};

static int cmp_by_cq(const void *pa, const void *pb)
{
  const struct sort_key *a = pa, *b = pb;
  int c = sched_name_cmp(a->j->cq, b->j->cq);

  return c ? c : cmp_order(a->j, b->j);
}

static int cmp_by_queue(const void *pa, const void *pb)
{
  const struct sort_key *a = pa, *b = pb;
  int c = sched_name_cmp(a->j->team, b->j->team);

  if (!c)
    c = sched_name_cmp(a->j->queue, b->j->queue);
  return c ? c : cmp_order(a->j, b->j);
}

/* ---- tallies by names ----------------------------------------------------
 * A few groups (team queues, cluster queues) tallied over many jobs: an
 * open-addressing table keyed by up to three name ids, over a dense array
 * of the groups in the order first seen. */

struct tally {
  int key[3];                          /* name ids, -1 when unused */
  const struct sched_state_job *first; /* the group's first job seen */
  int64_t v[2];
};

struct tallies {
  struct tally *t; /* dense: 0..n-1 */
  int n, cap;
  int *slots; /* tally index + 1, 0 empty */
  int n_slots;
  int last; /* the group found last + 1: jobs of a group often come
             * together */
};

static void tallies_free(struct tallies *ts)
{
  free(ts->t);
  free(ts->slots);
}

static int tally_slot(const struct tallies *ts, const int key[3])
{
  int mask = ts->n_slots - 1;
  uint32_t h = (uint32_t)key[0] * 0x9e3779b1u ^ (uint32_t)key[1] * 0x85ebca77u ^
               (uint32_t)key[2] * 0xc2b2ae3du;
  int s = (int)((h ^ (h >> 15)) & (uint32_t)mask);

  while (ts->slots[s] &&
         memcmp(ts->t[ts->slots[s] - 1].key, key, sizeof(int[3])) != 0)
    s = (s + 1) & mask;
  return s;
}

/* The group of key (added, with j as its first job, when new), or NULL
 * when out of memory. */
static struct tally *tally_of(struct tallies *ts, int a, int b, int c,
                              const struct sched_state_job *j)
{
  const int key[3] = {a, b, c};
  int s, i;

  if (ts->last && !memcmp(ts->t[ts->last - 1].key, key, sizeof(key)))
    return &ts->t[ts->last - 1];
  if (ts->n_slots) {
    s = tally_slot(ts, key);
    if (ts->slots[s]) {
      ts->last = ts->slots[s];
      return &ts->t[ts->last - 1];
    }
  }
  if (ts->n == ts->cap) {
    int cap = ts->cap ? ts->cap * 2 : 16;
    struct tally *t = realloc(ts->t, (size_t)cap * sizeof(*t));
    if (!t)
      return NULL;
    ts->t = t;
    ts->cap = cap;
  }
  if ((ts->n + 1) * 2 > ts->n_slots) {
    int n_slots = ts->n_slots ? ts->n_slots * 2 : 32;
    int *slots = calloc((size_t)n_slots, sizeof(*slots));
    if (!slots)
      return NULL;
    free(ts->slots);
    ts->slots = slots;
    ts->n_slots = n_slots;
    for (i = 0; i < ts->n; i++)
      ts->slots[tally_slot(ts, ts->t[i].key)] = i + 1;
  }
  i = ts->n++;
  memcpy(ts->t[i].key, key, sizeof(key));
  ts->t[i].first = j;
  ts->t[i].v[0] = ts->t[i].v[1] = 0;
  ts->slots[tally_slot(ts, key)] = i + 1;
  ts->last = i + 1;
  return &ts->t[i];
}

/* ---- fair-share order keys ------------------------------------------------
 * One per team queue of a cluster queue that orders by usage (a few
 * hundred at most), sorted by (team, queue) name id for bsearch. */

static int cmp_fs_key(const void *pa, const void *pb)
{
  const struct sched_fs_key *a = pa, *b = pb;

  if (a->team->id != b->team->id)
    return a->team->id < b->team->id ? -1 : 1;
  return a->queue->id < b->queue->id ? -1 : (a->queue->id > b->queue->id);
}

static struct sched_fs_key *fs_find(struct sched_fs_key *keys, int n,
                                    const struct sched_name *team,
                                    const struct sched_name *queue)
{
  struct sched_fs_key k = {.team = team, .queue = queue};

  if (n == 0)
    return NULL;
  return bsearch(&k, keys, (size_t)n, sizeof(k), cmp_fs_key);
}

int sched_state_fs_order(struct sched_state *st,
                         const struct sched_fs_key *keys, int n)
{
  struct sched_fs_key *next =
      malloc(((size_t)n + (size_t)st->n_fs + 1) * sizeof(*next));
  int i, m = 0;

  if (!next)
    return -1;
  for (i = 0; i < n; i++) {
    next[m] = keys[i];
    next[m].changed = false;
    if (!(next[m].team = sched_state_own_name(st, keys[i].team)) ||
        !(next[m].queue = sched_state_own_name(st, keys[i].queue))) {
      free(next);
      return -1;
    }
    if (next[m].group != 0 || next[m].first) /* else: as without a key */
      m++;
  }
  qsort(next, (size_t)m, sizeof(*next), cmp_fs_key);
  for (i = 0; i < m; i++) {
    const struct sched_fs_key *old =
        fs_find(st->fs, st->n_fs, next[i].team, next[i].queue);
    next[i].changed = !old || old->changed || old->group != next[i].group ||
                      old->first != next[i].first;
    st->fs_changed |= next[i].changed;
  }
  /* a team queue that lost its key: placed again once, as without one */
  n = m;
  for (i = 0; i < st->n_fs; i++)
    if (!fs_find(next, n, st->fs[i].team, st->fs[i].queue)) {
      next[m] = st->fs[i];
      next[m].group = 0;
      next[m].first = false;
      next[m++].changed = true;
      st->fs_changed = true;
    }
  qsort(next, (size_t)m, sizeof(*next), cmp_fs_key);
  free(st->fs);
  st->fs = next;
  st->n_fs = m;
  return 0;
}

/* Job j's key as the order places it now. */
static void fs_apply(struct sched_state *st, struct sched_state_job *j)
{
  const struct sched_fs_key *k = fs_find(st->fs, st->n_fs, j->team, j->queue);

  j->fs_group = k ? k->group : 0;
  j->fs_first = k ? k->first : false;
}

/* Job j (in the order) must be placed again: its team queue's key
 * changed. */
static bool fs_moved(struct sched_state *st, const struct sched_state_job *j)
{
  const struct sched_fs_key *k;

  if (!st->fs_changed)
    return false;
  k = fs_find(st->fs, st->n_fs, j->team, j->queue);
  return k && k->changed;
}

/* ---- positions ------------------------------------------------------------
 */

/* Still in the order: present and pending. A job that left PENDING leaves
 * the order, and comes back into it as an added one. */
static bool keeps_place(struct sched_state *st, int k)
{
  if (k < 0)
    return false;
  if (sched_state_pending(&st->jobs[k]))
    return true;
  st->jobs[k].ord = -1;
  return false;
}

/*
 * st->order brought up to date: the jobs still in it, in the order they
 * had, merged with the pending jobs not in it (sorted). *np: its length.
 * Returns 0, or -1 when out of memory (st unchanged).
 */
static int update_order(struct sched_state *st, int *np)
{
  struct sort_key *add = malloc(((size_t)st->n + 1) * sizeof(*add));
  int *next = NULL;
  int i, k, na = 0, n = 0;

  if (!add)
    return -1;
  for (i = 0; i < st->n; i++) {
    struct sched_state_job *j = &st->jobs[i];
    if (!sched_state_pending(j))
      continue;
    if (j->ord >= 0 && fs_moved(st, j)) {
      st->order[j->ord] = -1; /* its key changed: placed again */
      j->ord = -1;
    }
    if (j->ord < 0) {
      fs_apply(st, j);
      add[na].j = j;
      add[na].idx = i;
      na++;
    }
  }
  for (i = 0; i < st->n_fs; i++)
    st->fs[i].changed = false;
  st->fs_changed = false;
  qsort(add, (size_t)na, sizeof(*add), cmp_by_cq);
  if (!(next =
            malloc(((size_t)st->n_order + (size_t)na + 1) * sizeof(*next)))) {
    free(add);
    return -1;
  }
  for (i = 0, k = 0;;) {
    while (i < st->n_order && !keeps_place(st, st->order[i]))
      i++;
    if (i == st->n_order && k == na)
      break;
    if (k == na || (i < st->n_order &&
                    cmp_by_cq(&(struct sort_key){&st->jobs[st->order[i]], 0},
                              &add[k]) <= 0))
      next[n++] = st->order[i++];
    else
      next[n++] = add[k++].idx;
  }
  for (i = 0; i < n; i++)
    st->jobs[next[i]].ord = i;
  free(st->order);
  st->order = next;
  st->n_order = n;
  *np = n;
  free(add);
  return 0;
}

/* pos[].pos_queue by sorting (a team queue whose jobs are in more than one
 * cluster queue: its order interleaves theirs) */
static int queue_positions_sorted(const struct sched_state *st,
                                  struct sched_position *pos, int np)
{
  struct sort_key *keys = malloc(((size_t)np + 1) * sizeof(*keys));
  int *slot = malloc(((size_t)st->n + 1) * sizeof(*slot));
  int i, rank = 0;

  if (!keys || !slot) {
    free(keys);
    free(slot);
    return -1;
  }
  for (i = 0; i < np; i++) {
    keys[i].j = &st->jobs[pos[i].job];
    keys[i].idx = pos[i].job;
    slot[pos[i].job] = i;
  }
  qsort(keys, (size_t)np, sizeof(*keys), cmp_by_queue);
  for (i = 0; i < np; i++) {
    if (i == 0 || keys[i].j->team != keys[i - 1].j->team ||
        keys[i].j->queue != keys[i - 1].j->queue)
      rank = 0;
    pos[slot[keys[i].idx]].pos_queue = ++rank;
  }
  free(keys);
  free(slot);
  return 0;
}

int sched_state_positions(struct sched_state *st, struct sched_position **out,
                          int *n)
{
  struct tallies queues = {0};
  struct sched_position *pos = NULL;
  bool spread = false; /* a team queue in more than one cluster queue */
  int i, np = 0, rank = 0;
  int64_t gpus = 0;

  *out = NULL;
  *n = 0;
  if (update_order(st, &np) || !(pos = malloc(((size_t)np + 1) * sizeof(*pos))))
    goto oom;
  for (i = 0; i < np; i++) {
    const struct sched_state_job *j = &st->jobs[st->order[i]];
    struct tally *q;
    if (i == 0 || j->cq != st->jobs[st->order[i - 1]].cq) {
      rank = 0;
      gpus = 0;
    }
    pos[i].job = st->order[i];
    pos[i].pos_cq = ++rank;
    pos[i].ahead_gpus = gpus;
    gpus += j->request[SCHED_GPU];
    if (!(q = tally_of(&queues, j->team->id, j->queue->id, -1, j)))
      goto oom;
    spread |= q->first->cq != j->cq;
    pos[i].pos_queue = (int32_t)++q->v[0];
  }
  if (spread && queue_positions_sorted(st, pos, np))
    goto oom;
  tallies_free(&queues);
  *out = pos;
  *n = np;
  return 0;
oom:
  tallies_free(&queues);
  free(pos);
  return -1;
}

/* ---- counts ---------------------------------------------------------------
 */

static int cmp_count(const void *pa, const void *pb)
{
  const struct sched_count *a = pa, *b = pb;
  int c = strcmp(a->team, b->team);

  if (!c)
    c = strcmp(a->queue, b->queue);
  return c ? c : strcmp(a->cq, b->cq);
}

int sched_state_counts(const struct sched_state *st, struct sched_count **out,
                       int *n)
{
  struct tallies g = {0};
  struct sched_count *c;
  int i;

  *out = NULL;
  *n = 0;
  for (i = 0; i < st->n; i++) {
    const struct sched_state_job *j = &st->jobs[i];
    struct tally *t = tally_of(&g, j->team->id, j->queue->id, j->cq->id, j);
    if (!t) {
      tallies_free(&g);
      return -1;
    }
    t->v[sched_state_pending(j) ? 0 : 1]++;
  }
  if (!(c = malloc(((size_t)g.n + 1) * sizeof(*c)))) {
    tallies_free(&g);
    return -1;
  }
  for (i = 0; i < g.n; i++) {
    c[i].team = g.t[i].first->team->s;
    c[i].queue = g.t[i].first->queue->s;
    c[i].cq = g.t[i].first->cq->s;
    c[i].pending = g.t[i].v[0];
    c[i].admitted = g.t[i].v[1];
  }
  qsort(c, (size_t)g.n, sizeof(*c), cmp_count);
  tallies_free(&g);
  *out = c;
  *n = g.n;
  return 0;
}
