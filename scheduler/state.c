/*
 * state.c — the admission leader's jobs in memory: a dense array of jobs
 * with an open-addressing index by id (linear probing, backward-shift
 * deletion), its names held once, and the comparison of two states. The
 * admission order, the queue positions and counts computed from it are
 * state_order.c.
 */
#include <stdlib.h>
#include <string.h>

#include "scheduler/state.h"
#include "scheduler/state_internal.h"

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
const struct sched_name *sched_state_own_name(struct sched_state *st,
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
   * (db/batch_sync.c, sql_flex_move), and is charged once (issue 34) */
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
      !(copy.team = sched_state_own_name(st, in->team)) ||
      !(copy.queue = sched_state_own_name(st, in->queue)) ||
      !(copy.cq = sched_state_own_name(st, in->cq)) ||
      !(copy.flavor = sched_state_own_name(st, in->flavor))) {
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
int sched_name_cmp(const struct sched_name *a, const struct sched_name *b)
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
