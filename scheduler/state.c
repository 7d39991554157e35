/*
 * state.c — the admission leader's jobs in memory: a dense array of jobs
 * with an open-addressing index by id (linear probing, backward-shift
 * deletion), and the queue positions computed from it.
 */
#include <stdlib.h>
#include <string.h>

#include "scheduler/state.h"

void sched_state_init(struct sched_state *st)
{
  memset(st, 0, sizeof(*st));
}

void sched_state_free(struct sched_state *st)
{
  int i;

  for (i = 0; i < st->n; i++)
    free(st->jobs[i].locations);
  for (i = 0; i < st->n_names; i++)
    free(st->names[i]);
  free(st->jobs);
  free(st->slots);
  free(st->names);
  free(st->name_slots);
  memset(st, 0, sizeof(*st));
}

static uint32_t hash_id(const char *id)
{
  uint32_t h = 2166136261u;

  for (; *id; id++)
    h = (h ^ (uint8_t)*id) * 16777619u;
  return h;
}

/* ---- names ---------------------------------------------------------------
 * A few hundred at most (the configuration's names and the jobs' teams
 * and queues), never removed: an open-addressing set of ids by text. */

static int name_slot(const struct sched_state *st, const char *s)
{
  int mask = st->n_name_slots - 1;
  int k = (int)(hash_id(s) & (uint32_t)mask);

  while (st->name_slots[k] &&
         strcmp(st->names[st->name_slots[k] - 1]->s, s) != 0)
    k = (k + 1) & mask;
  return k;
}

static int name_rehash(struct sched_state *st, int n_slots)
{
  int *slots = calloc((size_t)n_slots, sizeof(*slots));
  int i;

  if (!slots)
    return -1;
  free(st->name_slots);
  st->name_slots = slots;
  st->n_name_slots = n_slots;
  for (i = 0; i < st->n_names; i++)
    st->name_slots[name_slot(st, st->names[i]->s)] = i + 1;
  return 0;
}

const struct sched_name *sched_state_name(struct sched_state *st, const char *s)
{
  struct sched_name *nm;
  size_t len;
  int k;

  if (!s)
    s = "";
  if (st->n_name_slots) {
    k = name_slot(st, s);
    if (st->name_slots[k])
      return st->names[st->name_slots[k] - 1];
  }
  if (st->n_names == st->cap_names) {
    int cap = st->cap_names ? st->cap_names * 2 : 16;
    struct sched_name **names =
        realloc(st->names, (size_t)cap * sizeof(struct sched_name *));
    if (!names)
      return NULL;
    st->names = names;
    st->cap_names = cap;
  }
  if ((st->n_names + 1) * 2 > st->n_name_slots &&
      name_rehash(st, st->n_name_slots ? st->n_name_slots * 2 : 32))
    return NULL;
  len = strlen(s) + 1;
  if (!(nm = malloc(sizeof(*nm) + len)))
    return NULL;
  nm->id = st->n_names;
  memcpy(nm->s, s, len);
  st->names[st->n_names++] = nm;
  st->name_slots[name_slot(st, s)] = nm->id + 1;
  return nm;
}

/* name, as this state's own (a name of another state, or of a caller's,
 * is looked up by its text) */
static const struct sched_name *own_name(struct sched_state *st,
                                         const struct sched_name *name)
{
  if (name && name->id >= 0 && name->id < st->n_names &&
      st->names[name->id] == name)
    return name;
  return sched_state_name(st, name ? name->s : "");
}

/* The slot holding id, or the empty slot where it would go. */
static int slot_of(const struct sched_state *st, const char *id)
{
  int mask = st->n_slots - 1;
  int s = (int)(hash_id(id) & (uint32_t)mask);

  while (st->slots[s] && strcmp(st->jobs[st->slots[s] - 1].id, id) != 0)
    s = (s + 1) & mask;
  return s;
}

int sched_state_find(const struct sched_state *st, const char *id)
{
  int s;

  if (!st->n_slots)
    return -1;
  s = slot_of(st, id);
  return st->slots[s] - 1;
}

/* Rebuild the index with n_slots slots (a power of two). */
static int rehash(struct sched_state *st, int n_slots)
{
  int *slots = calloc((size_t)n_slots, sizeof(*slots));
  int i;

  if (!slots)
    return -1;
  free(st->slots);
  st->slots = slots;
  st->n_slots = n_slots;
  for (i = 0; i < st->n; i++)
    st->slots[slot_of(st, st->jobs[i].id)] = i + 1;
  return 0;
}

static char *dup_or_null(const char *s)
{
  size_t n;
  char *d;

  if (!s)
    return NULL;
  n = strlen(s) + 1;
  d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

int sched_state_put(struct sched_state *st, const struct sched_state_job *in)
{
  int i = sched_state_find(st, in->id), s;
  char *locs = dup_or_null(in->locations);
  struct sched_state_job *dst, copy = *in;
  const struct sched_state_job *j = &copy;

  if ((in->locations && !locs) || !(copy.team = own_name(st, in->team)) ||
      !(copy.queue = own_name(st, in->queue)) ||
      !(copy.cq = own_name(st, in->cq)) ||
      !(copy.flavor = own_name(st, in->flavor))) {
    free(locs);
    return -1;
  }
  if (i >= 0) {
    dst = &st->jobs[i];
    int32_t pq = dst->pos_queue, pc = dst->pos_cq;
    int64_t ag = dst->ahead_gpus;
    bool pre = dst->preempting && sched_state_pending(j);
    bool fresh = dst->fresh && sched_state_pending(j);
    free(dst->locations);
    *dst = *j;
    dst->locations = locs;
    dst->pos_queue = pq;
    dst->pos_cq = pc;
    dst->ahead_gpus = ag;
    dst->preempting = pre;
    dst->fresh = fresh;
    return i;
  }
  if (st->n == st->cap) {
    int cap = st->cap ? st->cap * 2 : 64;
    struct sched_state_job *jobs =
        realloc(st->jobs, (size_t)cap * sizeof(*jobs));
    if (!jobs) {
      free(locs);
      return -1;
    }
    st->jobs = jobs;
    st->cap = cap;
  }
  if ((st->n + 1) * 2 > st->n_slots &&
      rehash(st, st->n_slots ? st->n_slots * 2 : 128)) {
    free(locs);
    return -1;
  }
  i = st->n++;
  dst = &st->jobs[i];
  *dst = *j;
  dst->locations = locs;
  dst->pos_queue = -1;
  dst->pos_cq = -1;
  dst->ahead_gpus = -1;
  dst->preempting = false;
  dst->fresh = sched_state_pending(j);
  s = slot_of(st, j->id);
  st->slots[s] = i + 1;
  return i;
}

/* Empty slot s and shift later entries of its probe run back. */
static void unslot(struct sched_state *st, int s)
{
  int mask = st->n_slots - 1, next = (s + 1) & mask;

  st->slots[s] = 0;
  while (st->slots[next]) {
    int k = st->slots[next];
    int home = (int)(hash_id(st->jobs[k - 1].id) & (uint32_t)mask);
    /* move k back to s when its home is not in (s, next] cyclically */
    bool between =
        s <= next ? (home > s && home <= next) : (home > s || home <= next);
    if (!between) {
      st->slots[s] = k;
      st->slots[next] = 0;
      s = next;
    }
    next = (next + 1) & mask;
  }
}

void sched_state_remove(struct sched_state *st, const char *id)
{
  int i = sched_state_find(st, id), last;

  if (i < 0)
    return;
  unslot(st, slot_of(st, id));
  free(st->jobs[i].locations);
  last = st->n - 1;
  if (i != last) {
    st->jobs[i] = st->jobs[last];
    st->slots[slot_of(st, st->jobs[i].id)] = i + 1;
  }
  st->n--;
}

bool sched_state_pending(const struct sched_state_job *j)
{
  /* no other state starts with P: one byte decides for most jobs */
  return j->state[0] == 'P' && !strcmp(j->state, "PENDING");
}

static bool str_eq(const char *a, const char *b)
{
  return (!a && !b) || (a && b && !strcmp(a, b));
}

/* names in text order (within one state, the same name is the same
 * pointer) */
static int name_cmp(const struct sched_name *a, const struct sched_name *b)
{
  return a == b ? 0 : strcmp(a->s, b->s);
}

/* two names, of one state or of two */
static bool name_eq(const struct sched_name *a, const struct sched_name *b)
{
  return a == b || !strcmp(a ? a->s : "", b ? b->s : "");
}

bool sched_state_job_equal(const struct sched_state_job *a,
                           const struct sched_state_job *b)
{
  int r;

  for (r = 0; r < SCHED_NRES; r++)
    if (a->request[r] != b->request[r])
      return false;
  return !strcmp(a->id, b->id) && a->attempt == b->attempt &&
         !strcmp(a->state, b->state) && !strcmp(a->reason, b->reason) &&
         name_eq(a->team, b->team) && name_eq(a->queue, b->queue) &&
         name_eq(a->cq, b->cq) && name_eq(a->flavor, b->flavor) &&
         a->priority == b->priority && a->can_preempt == b->can_preempt &&
         a->created_at == b->created_at && a->seq == b->seq &&
         a->admitted_at == b->admitted_at &&
         a->backoff_until == b->backoff_until && a->max_run_s == b->max_run_s &&
         a->estimated_cost == b->estimated_cost &&
         str_eq(a->locations, b->locations) && a->change_xid == b->change_xid;
}

int sched_state_compare(const struct sched_state *a,
                        const struct sched_state *b,
                        void (*diff)(void *arg, const char *id,
                                     const struct sched_state_job *ja,
                                     const struct sched_state_job *jb),
                        void *arg)
{
  int i, k, n = 0;

  for (i = 0; i < a->n; i++) {
    const struct sched_state_job *ja = &a->jobs[i];
    k = sched_state_find(b, ja->id);
    if (k >= 0 && sched_state_job_equal(ja, &b->jobs[k]))
      continue;
    n++;
    if (diff)
      diff(arg, ja->id, ja, k >= 0 ? &b->jobs[k] : NULL);
  }
  for (i = 0; i < b->n; i++) {
    if (sched_state_find(a, b->jobs[i].id) >= 0)
      continue;
    n++;
    if (diff)
      diff(arg, b->jobs[i].id, NULL, &b->jobs[i]);
  }
  return n;
}

/* admission order within a scope: priority desc, created_at, seq */
static int cmp_order(const struct sched_state_job *a,
                     const struct sched_state_job *b)
{
  if (a->priority != b->priority)
    return a->priority > b->priority ? -1 : 1;
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
  int c = name_cmp(a->j->cq, b->j->cq);

  return c ? c : cmp_order(a->j, b->j);
}

static int cmp_by_queue(const void *pa, const void *pb)
{
  const struct sort_key *a = pa, *b = pb;
  int c = name_cmp(a->j->team, b->j->team);

  if (!c)
    c = name_cmp(a->j->queue, b->j->queue);
  return c ? c : cmp_order(a->j, b->j);
}

int sched_state_positions(const struct sched_state *st,
                          struct sched_position **out, int *n)
{
  struct sort_key *keys = NULL;
  struct sched_position *pos = NULL;
  int *slot = NULL; /* state index → pos index */
  int i, np = 0, rank = 0;
  int64_t gpus = 0;

  *out = NULL;
  *n = 0;
  keys = calloc((size_t)st->n + 1, sizeof(*keys));
  pos = calloc((size_t)st->n + 1, sizeof(*pos));
  slot = calloc((size_t)st->n + 1, sizeof(*slot));
  if (!keys || !pos || !slot) {
    free(keys);
    free(pos);
    free(slot);
    return -1;
  }
  for (i = 0; i < st->n; i++)
    if (sched_state_pending(&st->jobs[i])) {
      keys[np].j = &st->jobs[i];
      keys[np].idx = i;
      np++;
    }
  qsort(keys, (size_t)np, sizeof(*keys), cmp_by_cq);
  for (i = 0; i < np; i++) {
    if (i == 0 || name_cmp(keys[i].j->cq, keys[i - 1].j->cq) != 0) {
      rank = 0;
      gpus = 0;
    }
    pos[i].job = keys[i].idx;
    pos[i].pos_cq = ++rank;
    pos[i].ahead_gpus = gpus;
    gpus += keys[i].j->request[SCHED_GPU];
    slot[keys[i].idx] = i;
  }
  qsort(keys, (size_t)np, sizeof(*keys), cmp_by_queue);
  for (i = 0; i < np; i++) {
    if (i == 0 || name_cmp(keys[i].j->team, keys[i - 1].j->team) != 0 ||
        name_cmp(keys[i].j->queue, keys[i - 1].j->queue) != 0)
      rank = 0;
    pos[slot[keys[i].idx]].pos_queue = ++rank;
  }
  free(keys);
  free(slot);
  *out = pos;
  *n = np;
  return 0;
}

static int cmp_triple(const void *pa, const void *pb)
{
  const struct sort_key *a = pa, *b = pb;
  int c = name_cmp(a->j->team, b->j->team);

  if (!c)
    c = name_cmp(a->j->queue, b->j->queue);
  return c ? c : name_cmp(a->j->cq, b->j->cq);
}

int sched_state_counts(const struct sched_state *st, struct sched_count **out,
                       int *n)
{
  struct sort_key *keys = calloc((size_t)st->n + 1, sizeof(*keys));
  struct sched_count *c = calloc((size_t)st->n + 1, sizeof(*c));
  int i, nc = 0;

  *out = NULL;
  *n = 0;
  if (!keys || !c) {
    free(keys);
    free(c);
    return -1;
  }
  for (i = 0; i < st->n; i++) {
    keys[i].j = &st->jobs[i];
    keys[i].idx = i;
  }
  qsort(keys, (size_t)st->n, sizeof(*keys), cmp_triple);
  for (i = 0; i < st->n; i++) {
    const struct sched_state_job *j = keys[i].j;
    if (i == 0 || cmp_triple(&keys[i], &keys[i - 1]) != 0) {
      c[nc].team = j->team->s;
      c[nc].queue = j->queue->s;
      c[nc].cq = j->cq->s;
      nc++;
    }
    if (sched_state_pending(j))
      c[nc - 1].pending++;
    else
      c[nc - 1].admitted++;
  }
  free(keys);
  *out = c;
  *n = nc;
  return 0;
}
