/*
 * state.c — the admission leader's jobs in memory: a dense array of jobs
 * with an open-addressing index by id (linear probing, backward-shift
 * deletion), and the queue positions computed from it, in an admission
 * order kept from one computation to the next.
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
  free(st->order);
  free(st->fs);
  free(st->qlog);
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

/* a and b sort to the same place in admission order (their cluster
 * queue, of one state, and priority, created_at, seq) */
static bool same_order_key(const struct sched_state_job *a,
                           const struct sched_state_job *b)
{
  return a->cq == b->cq && a->priority == b->priority &&
         a->created_at == b->created_at && a->seq == b->seq;
}

/* Room for two more quota events (a stop and a start). */
static int qlog_room(struct sched_state *st)
{
  struct sched_quota_event *q;
  int cap;

  if (!st->log_quota || st->n_qlog + 2 <= st->cap_qlog)
    return 0;
  cap = st->cap_qlog ? st->cap_qlog * 2 : 64;
  if (!(q = realloc(st->qlog, (size_t)cap * sizeof(*q))))
    return -1;
  st->qlog = q;
  st->cap_qlog = cap;
  return 0;
}

/* Log job j's start or stop (the room was made by qlog_room()). */
static void qlog_add(struct sched_state *st, const struct sched_state_job *j,
                     bool start)
{
  struct sched_quota_event *e;

  if (!st->log_quota || st->n_qlog >= st->cap_qlog)
    return;
  e = &st->qlog[st->n_qlog++];
  e->start = start;
  e->seq = j->seq;
  e->team = j->team;
  e->queue = j->queue;
  memcpy(e->request, j->request, sizeof(e->request));
  e->admitted_at_us = j->admitted_at_us;
  e->ended_at_us = 0;
}

/* A job's quota events between its held version old (NULL: none) and new_
 * (NULL: removed); both the state's. */
static void qlog_change(struct sched_state *st,
                        const struct sched_state_job *old,
                        const struct sched_state_job *new_)
{
  bool was = old && !sched_state_pending(old);
  bool is = new_ && !sched_state_pending(new_);
  /* a new attempt is a new admission only with a new admitted_at: a Flex
   * Start failover moves on to its next attempt with the same admission
   * (db/batch.c, sql_flex_move), and is charged once (issue 34) */
  bool again = was && is && old->attempt != new_->attempt &&
               old->admitted_at_us != new_->admitted_at_us;

  if (was && (!is || again))
    qlog_add(st, old, false);
  if (is && (!was || again))
    qlog_add(st, new_, true);
}

int sched_state_put(struct sched_state *st, const struct sched_state_job *in)
{
  int i = sched_state_find(st, in->id), s;
  char *locs = dup_or_null(in->locations);
  struct sched_state_job *dst, copy = *in;
  const struct sched_state_job *j = &copy;

  if ((in->locations && !locs) || qlog_room(st) ||
      !(copy.team = own_name(st, in->team)) ||
      !(copy.queue = own_name(st, in->queue)) ||
      !(copy.cq = own_name(st, in->cq)) ||
      !(copy.flavor = own_name(st, in->flavor))) {
    free(locs);
    return -1;
  }
  if (i >= 0) {
    dst = &st->jobs[i];
    int32_t pq = dst->pos_queue, pc = dst->pos_cq, ord = dst->ord;
    int32_t fg = dst->fs_group;
    bool ff = dst->fs_first;
    int64_t ag = dst->ahead_gpus;
    bool pre = dst->preempting && sched_state_pending(j);
    bool fresh = dst->fresh && sched_state_pending(j);
    if (ord >= 0 && !same_order_key(dst, j)) {
      st->order[ord] = -1; /* placed again by the next positions */
      ord = -1;
    }
    qlog_change(st, dst, j);
    free(dst->locations);
    *dst = *j;
    dst->locations = locs;
    dst->pos_queue = pq;
    dst->pos_cq = pc;
    dst->ahead_gpus = ag;
    dst->preempting = pre;
    dst->fresh = fresh;
    dst->ord = ord;
    dst->fs_group = fg;
    dst->fs_first = ff;
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
  qlog_change(st, NULL, j);
  i = st->n++;
  dst = &st->jobs[i];
  *dst = *j;
  dst->locations = locs;
  dst->pos_queue = -1;
  dst->pos_cq = -1;
  dst->ahead_gpus = -1;
  dst->preempting = false;
  dst->fresh = sched_state_pending(j);
  dst->ord = -1;
  dst->fs_group = 0;
  dst->fs_first = false;
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
  sched_state_end(st, id, 0);
}

void sched_state_end(struct sched_state *st, const char *id,
                     int64_t ended_at_us)
{
  int i = sched_state_find(st, id), last, n_qlog = st->n_qlog;

  if (i < 0)
    return;
  if (!qlog_room(st)) /* out of memory: the event is lost, the job not */
    qlog_change(st, &st->jobs[i], NULL);
  if (st->n_qlog > n_qlog)
    st->qlog[st->n_qlog - 1].ended_at_us = ended_at_us;
  unslot(st, slot_of(st, id));
  free(st->jobs[i].locations);
  if (st->jobs[i].ord >= 0)
    st->order[st->jobs[i].ord] = -1;
  last = st->n - 1;
  if (i != last) {
    st->jobs[i] = st->jobs[last];
    st->slots[slot_of(st, st->jobs[i].id)] = i + 1;
    if (st->jobs[i].ord >= 0)
      st->order[st->jobs[i].ord] = i;
  }
  st->n--;
}

bool sched_state_pending(const struct sched_state_job *j)
{
  /* state is a char[16]: the eight bytes of "PENDING" and its NUL are one
   * word to compare (strcmp was ~7 % of a publication's CPU) */
  return !memcmp(j->state, "PENDING", 8);
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
         a->admitted_at_us == b->admitted_at_us &&
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
    if (!(next[m].team = own_name(st, keys[i].team)) ||
        !(next[m].queue = own_name(st, keys[i].queue))) {
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
