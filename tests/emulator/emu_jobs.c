/*
 * emu_jobs.c — job store and state machine of the Batch emulator.
 *
 * Jobs live in one array in creation order (sequence numbers only grow),
 * under one mutex, indexed by name in a hash table. A ticker thread wakes
 * every TICK_MS (or when kicked) and moves, in creation order, every job
 * whose time has come: the QUEUED jobs (a list in creation order) and the
 * jobs due to leave their timed state (a heap by due time, recomputed when
 * the timings change), so a tick costs what moves, not every job ever made.
 * Capacity is taken when a job is SCHEDULED and given back when it reaches
 * a terminal state or is gone; the GPUs held per location and provisioning
 * model are kept as they change. Notifications are queued while the mutex
 * is held so that each job's pushes leave in the order its states changed.
 *
 * Operations live in a ring of MAX_OPS (the oldest is dropped), indexed by
 * name and, while not done, by target job name. Create counts are indexed
 * by job name. The hash tables chain through their elements.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/emulator/emu_config.h"
#include "tests/emulator/emu_jobs.h"
#include "tests/emulator/emu_logs.h"
#include "tests/emulator/emu_push.h"
#include "tests/emulator/emu_util.h"

#define TICK_MS 10
#define NAME_MAX_ 512
#define MAX_OPS 100000
#define MAX_USAGE 256

enum state {
  QUEUED = 0,
  SCHEDULED,
  RUNNING,
  SUCCEEDED,
  FAILED,
  CANCELLATION_IN_PROGRESS,
  CANCELLED,
  DELETION_IN_PROGRESS
};

static const char *const state_names[] = {
    "QUEUED",    "SCHEDULED",
    "RUNNING",   "SUCCEEDED",
    "FAILED",    "CANCELLATION_IN_PROGRESS",
    "CANCELLED", "DELETION_IN_PROGRESS"};

struct job {
  unsigned long long seq;
  struct emu_job_spec spec;
  char name[NAME_MAX_];
  char uid[64];
  enum state state;
  bool held; /* holds spec.gpus of its location/model */
  bool gone; /* removed at the end of this tick */
  long long created_ms, since_ms, run_start_ms, run_end_ms;
  char create_time[40], update_time[40];
  json_t *body;              /* owned: the submitted Job, echoed */
  json_t *events;            /* owned: status.statusEvents */
  unsigned long long hash;   /* of name */
  struct job *hnext;         /* next in its bucket of the name index */
  size_t hpos;               /* index + 1 in the timer heap; 0: not there */
  long long due_ms;          /* when its timed state is over */
  struct job *qprev, *qnext; /* the QUEUED list */
  bool queued;               /* on the QUEUED list */
  long long cancel_at_ms;    /* an accepted cancel acts then (0: none) */
  bool cancel_dropped;       /* EMU_CANCEL_DROP_FIRST: one was lost */
  int retry;                 /* task 0's run: 0 its first, 1 Batch's retry */
};

struct op {
  char name[NAME_MAX_];
  char target[NAME_MAX_];
  char verb[8];
  char create_time[40];
  char end_time[40];
  bool done;
  unsigned long long name_hash, target_hash;
  /* number + 1 of the next op in its bucket (0: none): by name, and by
   * target while not done */
  unsigned long long name_next, target_next;
};

struct create_count {
  char name[NAME_MAX_];
  long long n;
  unsigned long long hash;
  size_t next; /* index + 1 of the next count in its bucket (0: none) */
};

struct usage {
  char location[128];
  char model[32];
  long long used;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static struct job **jobs;
static size_t n_jobs, cap_jobs;
static struct job **heap; /* timed jobs by due_ms, then seq */
static size_t n_heap, cap_heap;
static struct job *q_head, *q_tail; /* QUEUED jobs in creation order */
static struct job **due;            /* room for n_jobs: a tick's due jobs */
static size_t cap_due;
static struct job **scratch; /* room for n_jobs: the jobs gone in a tick */
static size_t cap_scratch;
static struct usage *held_use; /* GPUs held per location/model */
static size_t n_held_use, cap_held_use;
/* the timings due_ms was computed with */
static long long t_start, t_run, t_cancel, t_delete;
static bool t_known;
static struct job **job_index; /* name → job; buckets a power of two */
static size_t n_job_buckets;
static struct op *ops; /* op number k at ops[k % MAX_OPS] */
static size_t n_ops, cap_ops;
static unsigned long long next_op;                /* number of the next op */
static unsigned long long *op_names, *op_pending; /* op number + 1 */
static size_t n_op_buckets;
static struct create_count *counts;
static size_t n_counts, cap_counts;
static size_t *count_index; /* index + 1 */
static size_t n_count_buckets;
static unsigned long long next_seq = 1;
static bool stopping, started;
static pthread_t ticker;

static bool terminal(enum state s)
{
  return s == SUCCEEDED || s == FAILED || s == CANCELLED;
}

/* Make room for one more element of size elem in *arr. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
  void *p;
  size_t want;

  if (n < *cap)
    return 0;
  want = *cap ? *cap * 2 : 64;
  p = realloc(*arr, want * elem);
  if (!p)
    return -1;
  *arr = p;
  *cap = want;
  return 0;
}

/* FNV-1a, high bits folded into the low ones (buckets take those). */
static unsigned long long hash_str(const char *s)
{
  unsigned long long h = 1469598103934665603ULL;

  while (*s) {
    h ^= (unsigned char)*s++;
    h *= 1099511628211ULL;
  }
  return h ^ (h >> 32);
}

/* Buckets for at least n elements: a power of two, from 64. */
static size_t buckets_for(size_t n)
{
  size_t b = 64;

  while (b < n)
    b *= 2;
  return b;
}

/* Caller holds mu. */
static struct job *find(const char *name)
{
  unsigned long long h;
  struct job *j;

  if (!n_job_buckets)
    return NULL;
  h = hash_str(name);
  for (j = job_index[h & (n_job_buckets - 1)]; j; j = j->hnext)
    if (j->hash == h && !j->gone && !strcmp(j->name, name))
      return j;
  return NULL;
}

/* Caller holds mu. Puts j (hash set) into the name index. */
static void index_add(struct job *j)
{
  struct job **b = &job_index[j->hash & (n_job_buckets - 1)];

  j->hnext = *b;
  *b = j;
}

/* Caller holds mu. Takes j out of the name index. */
static void index_del(struct job *j)
{
  struct job **p = &job_index[j->hash & (n_job_buckets - 1)];

  while (*p && *p != j)
    p = &(*p)->hnext;
  if (*p)
    *p = j->hnext;
}

/*
 * Caller holds mu; not within a tick. Room for one more job in jobs, the
 * heap, due, scratch and the name index.
 */
static int reserve_job(void)
{
  size_t want = buckets_for(n_jobs + 1), i;

  if (grow((void **)&jobs, &cap_jobs, n_jobs, sizeof(struct job *)) != 0 ||
      grow((void **)&heap, &cap_heap, n_jobs, sizeof(struct job *)) != 0 ||
      grow((void **)&due, &cap_due, n_jobs, sizeof(struct job *)) != 0 ||
      grow((void **)&scratch, &cap_scratch, n_jobs, sizeof(struct job *)) != 0)
    return -1;
  if (want > n_job_buckets) {
    struct job **t = calloc(want, sizeof(struct job *));
    if (!t)
      return -1;
    free(job_index);
    job_index = t;
    n_job_buckets = want;
    for (i = 0; i < n_jobs; i++)
      if (!jobs[i]->gone)
        index_add(jobs[i]);
  }
  return 0;
}

/* Caller holds mu. The index of the first of arr[0..n) with seq >= seq. */
static size_t seq_pos(struct job *const *arr, size_t n, unsigned long long seq)
{
  size_t lo = 0, hi = n;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (arr[mid]->seq < seq)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* since + ms, saturated. */
static long long after_ms(long long since, long long ms)
{
  if (ms > 0 && since > LLONG_MAX - ms)
    return LLONG_MAX;
  if (ms < 0 && since < LLONG_MIN - ms)
    return LLONG_MIN;
  return since + ms;
}

/* Caller holds mu. When j's timed state is over (tick: in_state >= …). */
static long long due_of(const struct job *j)
{
  long long at;

  switch (j->state) {
  case SCHEDULED:
    at = after_ms(j->since_ms,
                  j->spec.start_ms >= 0 ? j->spec.start_ms : t_start);
    return j->cancel_at_ms && j->cancel_at_ms < at ? j->cancel_at_ms : at;
  case RUNNING:
    at = after_ms(j->since_ms, j->spec.run_ms >= 0 ? j->spec.run_ms : t_run);
    return j->cancel_at_ms && j->cancel_at_ms < at ? j->cancel_at_ms : at;
  case CANCELLATION_IN_PROGRESS:
    return after_ms(j->since_ms, t_cancel);
  default:
    return after_ms(j->since_ms, t_delete);
  }
}

static bool due_before(const struct job *a, const struct job *b)
{
  return a->due_ms < b->due_ms || (a->due_ms == b->due_ms && a->seq < b->seq);
}

static void heap_set(size_t i, struct job *j)
{
  heap[i] = j;
  j->hpos = i + 1;
}

static void heap_up(size_t i)
{
  struct job *j = heap[i];

  while (i > 0 && due_before(j, heap[(i - 1) / 2])) {
    heap_set(i, heap[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  heap_set(i, j);
}

static void heap_down(size_t i)
{
  struct job *j = heap[i];

  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n_heap)
      break;
    if (c + 1 < n_heap && due_before(heap[c + 1], heap[c]))
      c++;
    if (!due_before(heap[c], j))
      break;
    heap_set(i, heap[c]);
    i = c;
  }
  heap_set(i, j);
}

/* Caller holds mu. Takes j (hpos set) out of the heap. */
static void heap_del(struct job *j)
{
  size_t i = j->hpos - 1;
  struct job *last = heap[--n_heap];

  j->hpos = 0;
  if (i == n_heap)
    return;
  heap_set(i, last);
  heap_down(i);
  heap_up(last->hpos - 1);
}

/* Caller holds mu. Takes j off the QUEUED list. */
static void queue_del(struct job *j)
{
  if (j->qprev)
    j->qprev->qnext = j->qnext;
  else
    q_head = j->qnext;
  if (j->qnext)
    j->qnext->qprev = j->qprev;
  else
    q_tail = j->qprev;
  j->qprev = j->qnext = NULL;
  j->queued = false;
}

/*
 * Caller holds mu. Files j by its state: QUEUED on the list (it is the
 * newest job: only a create makes one), a timed state in the heap, a
 * terminal state nowhere. reserve_job left room in the heap for every job.
 */
static void place(struct job *j)
{
  if (j->hpos)
    heap_del(j);
  if (j->queued && (j->gone || j->state != QUEUED))
    queue_del(j);
  if (j->gone || terminal(j->state))
    return;
  if (j->state == QUEUED) {
    if (!j->queued) {
      j->qprev = q_tail;
      j->qnext = NULL;
      if (q_tail)
        q_tail->qnext = j;
      else
        q_head = j;
      q_tail = j;
      j->queued = true;
    }
    return;
  }
  j->due_ms = due_of(j);
  heap_set(n_heap++, j);
  heap_up(n_heap - 1);
}

/* Caller holds mu. Takes up c's timings; on a change, every due_ms. */
static void sync_timings(const struct emu_config *c)
{
  size_t i;

  if (t_known && t_start == c->start_ms && t_run == c->run_ms &&
      t_cancel == c->cancel_ms && t_delete == c->delete_ms)
    return;
  t_start = c->start_ms;
  t_run = c->run_ms;
  t_cancel = c->cancel_ms;
  t_delete = c->delete_ms;
  t_known = true;
  for (i = 0; i < n_heap; i++)
    heap[i]->due_ms = due_of(heap[i]);
  for (i = n_heap / 2; i-- > 0;)
    heap_down(i);
}

static void free_job(struct job *j)
{
  if (!j)
    return;
  json_decref(j->body);
  json_decref(j->events);
  free(j);
}

/* Caller holds mu. Appends a status event and notifies; the move took
 * place at now (monotonic ms, not after the present: a timed state ends
 * when its time is up, however late the tick that sees it). */
static void set_state(struct job *j, enum state to, long long now,
                      const char *detail)
{
  char desc[1024], when[40];

  emu_rfc3339_ago(when, sizeof(when), emu_now_ms() - now);
  snprintf(desc, sizeof(desc), "Job state is set from %s to %s for job %s.%s%s",
           state_names[j->state], state_names[to], j->name, detail ? " " : "",
           detail ? detail : "");
  json_array_append_new(j->events,
                        json_pack("{s:s, s:s, s:s}", "type", "STATUS_CHANGED",
                                  "description", desc, "eventTime", when));
  j->state = to;
  j->since_ms = now;
  snprintf(j->update_time, sizeof(j->update_time), "%s", when);
  if (to == RUNNING)
    j->run_start_ms = now;
  if (j->run_start_ms && !j->run_end_ms && to != RUNNING)
    j->run_end_ms = now;
  place(j);
  emu_push_job_state(j->name, j->uid, state_names[to]);
  emu_logs_job_state(j->name, j->uid, j->body, state_names[to],
                     j->spec.task_count, j->retry);
}

static struct op *op_at(unsigned long long k)
{
  return &ops[k % MAX_OPS];
}

/* op's link in the chain by target (pending) or by name. */
static unsigned long long *op_link(struct op *o, bool pending)
{
  return pending ? &o->target_next : &o->name_next;
}

/* Caller holds mu. The head of op's bucket by target or by name. */
static unsigned long long *op_head(const struct op *o, bool pending)
{
  return pending ? &op_pending[o->target_hash & (n_op_buckets - 1)]
                 : &op_names[o->name_hash & (n_op_buckets - 1)];
}

/* Caller holds mu. Puts op number k into its chain by target or name. */
static void op_chain(unsigned long long k, bool pending)
{
  struct op *o = op_at(k);
  unsigned long long *head = op_head(o, pending);

  *op_link(o, pending) = *head;
  *head = k + 1;
}

/* Caller holds mu. Takes op number k out of its chain by target or name. */
static void op_unchain(unsigned long long k, bool pending)
{
  struct op *o = op_at(k);
  unsigned long long *p = op_head(o, pending);

  while (*p && *p != k + 1)
    p = op_link(op_at(*p - 1), pending);
  if (*p)
    *p = *op_link(o, pending);
}

/* Caller holds mu. Marks the operations on target (verb NULL: all) done. */
static void finish_ops(const char *target, const char *verb)
{
  char when[40];
  unsigned long long h, *p;

  if (!n_op_buckets)
    return;
  emu_rfc3339(when, sizeof(when));
  h = hash_str(target);
  p = &op_pending[h & (n_op_buckets - 1)];
  while (*p) {
    struct op *o = op_at(*p - 1);
    if (o->target_hash == h && !strcmp(o->target, target) &&
        (!verb || !strcmp(o->verb, verb))) {
      o->done = true;
      snprintf(o->end_time, sizeof(o->end_time), "%s", when);
      *p = o->target_next;
    } else {
      p = &o->target_next;
    }
  }
}

static const char *task_state(enum state s)
{
  switch (s) {
  case QUEUED:
    return "PENDING";
  case SCHEDULED:
    return "ASSIGNED";
  case RUNNING:
    return "RUNNING";
  case SUCCEEDED:
    return "SUCCEEDED";
  case FAILED:
    return "FAILED";
  default:
    return NULL;
  }
}

/* Caller holds mu. The Batch v1 Job (new reference). */
static json_t *job_view(const struct job *j)
{
  json_t *v = json_deep_copy(j->body), *status;
  const char *ts = task_state(j->state);

  if (!v)
    return NULL;
  /* a copy: the ticker appends to j->events while the caller serialises */
  status = json_pack("{s:s, s:o}", "state", state_names[j->state],
                     "statusEvents", json_deep_copy(j->events));
  if (status && j->run_start_ms) {
    char dur[32];
    long long end = j->run_end_ms ? j->run_end_ms : emu_now_ms();
    snprintf(dur, sizeof(dur), "%lld.%03llds", (end - j->run_start_ms) / 1000,
             (end - j->run_start_ms) % 1000);
    json_object_set_new(status, "runDuration", json_string(dur));
  }
  if (status && ts) {
    char n[24];
    snprintf(n, sizeof(n), "%lld", j->spec.task_count);
    json_object_set_new(status, "taskGroups",
                        json_pack("{s:{s:{s:s}}}", "group0", "counts", ts, n));
  }
  json_object_set_new(v, "name", json_string(j->name));
  json_object_set_new(v, "uid", json_string(j->uid));
  json_object_set_new(v, "status", status);
  json_object_set_new(v, "createTime", json_string(j->create_time));
  json_object_set_new(v, "updateTime", json_string(j->update_time));
  return v;
}

static json_t *op_view(const struct op *o)
{
  json_t *meta =
      json_pack("{s:s, s:s, s:s, s:s, s:b, s:s}", "@type",
                "type.googleapis.com/google.cloud.batch.v1.OperationMetadata",
                "createTime", o->create_time, "target", o->target, "verb",
                o->verb, "requestedCancellation", 0, "apiVersion", "v1");
  json_t *v;

  if (meta && o->done)
    json_object_set_new(meta, "endTime", json_string(o->end_time));
  v = json_pack("{s:s, s:o, s:b}", "name", o->name, "metadata", meta, "done",
                o->done);
  if (v && o->done)
    json_object_set_new(
        v, "response",
        json_pack("{s:s}", "@type",
                  !strcmp(o->verb, "cancel")
                      ? "type.googleapis.com/google.cloud.batch.v1."
                        "CancelJobResponse"
                      : "type.googleapis.com/google.protobuf.Empty"));
  return v;
}

/* Caller holds mu. A new operation on j; its view in *out. */
static enum emu_jobs_rc new_op(const struct job *j, const char *verb,
                               json_t **out)
{
  struct op *o;
  char hex[17];

  if (n_ops >= MAX_OPS) {
    /* the oldest goes; its slot is the new one's */
    unsigned long long old = next_op - n_ops;
    op_unchain(old, false);
    if (!op_at(old)->done)
      op_unchain(old, true);
    n_ops--;
  } else if (n_ops == cap_ops) {
    size_t want = cap_ops ? cap_ops * 2 : 64, nb;
    unsigned long long *names, *pending, k;
    struct op *p;

    if (want > MAX_OPS)
      want = MAX_OPS;
    nb = buckets_for(want);
    names = calloc(nb, sizeof(*names));
    pending = calloc(nb, sizeof(*pending));
    p = names && pending ? realloc(ops, want * sizeof(*ops)) : NULL;
    if (!p) {
      free(names);
      free(pending);
      return EMU_JOBS_NO_MEMORY;
    }
    ops = p;
    cap_ops = want;
    free(op_names);
    free(op_pending);
    op_names = names;
    op_pending = pending;
    n_op_buckets = nb;
    for (k = next_op - n_ops; k < next_op; k++) {
      op_chain(k, false);
      if (!op_at(k)->done)
        op_chain(k, true);
    }
  }
  o = op_at(next_op);
  memset(o, 0, sizeof(*o));
  emu_random_hex(hex, 8);
  snprintf(o->name, sizeof(o->name),
           "projects/%s/locations/%s/operations/operation-%lld-%s",
           j->spec.project, j->spec.location, emu_wall_ms(), hex);
  snprintf(o->target, sizeof(o->target), "%s", j->name);
  snprintf(o->verb, sizeof(o->verb), "%s", verb);
  emu_rfc3339(o->create_time, sizeof(o->create_time));
  o->name_hash = hash_str(o->name);
  o->target_hash = hash_str(o->target);
  op_chain(next_op, false);
  op_chain(next_op, true);
  next_op++;
  n_ops++;
  *out = op_view(o);
  return *out ? EMU_JOBS_OK : EMU_JOBS_NO_MEMORY;
}

static long long *usage_slot(struct usage *u, size_t *n, const char *location,
                             const char *model)
{
  size_t i;

  for (i = 0; i < *n; i++)
    if (!strcmp(u[i].location, location) && !strcmp(u[i].model, model))
      return &u[i].used;
  if (*n >= MAX_USAGE)
    return NULL;
  snprintf(u[*n].location, sizeof(u[*n].location), "%s", location);
  snprintf(u[*n].model, sizeof(u[*n].model), "%s", model);
  u[*n].used = 0;
  return &u[(*n)++].used;
}

/*
 * Caller holds mu. GPUs held per location/model into u, the slots in the
 * order of the jobs holding them.
 */
static size_t compute_usage(struct usage *u)
{
  size_t n = 0, i;

  for (i = 0; i < n_jobs; i++) {
    long long *slot;
    if (!jobs[i]->held || jobs[i]->gone)
      continue;
    slot = usage_slot(u, &n, jobs[i]->spec.location, jobs[i]->spec.model);
    if (slot)
      *slot += jobs[i]->spec.gpus;
  }
  return n;
}

/* Caller holds mu. The GPUs held of j's location/model (NULL: no memory). */
static long long *held_slot(const struct job *j)
{
  size_t i;

  for (i = 0; i < n_held_use; i++)
    if (!strcmp(held_use[i].location, j->spec.location) &&
        !strcmp(held_use[i].model, j->spec.model))
      return &held_use[i].used;
  if (grow((void **)&held_use, &cap_held_use, n_held_use, sizeof(*held_use)) !=
      0)
    return NULL;
  snprintf(held_use[i].location, sizeof(held_use[i].location), "%s",
           j->spec.location);
  snprintf(held_use[i].model, sizeof(held_use[i].model), "%s", j->spec.model);
  held_use[i].used = 0;
  n_held_use++;
  return &held_use[i].used;
}

/* Caller holds mu. */
static void release(struct job *j)
{
  long long *slot;

  if (!j->held)
    return;
  j->held = false;
  slot = held_slot(j);
  if (slot)
    *slot -= j->spec.gpus;
}

/* Caller holds mu. Whether j may leave QUEUED now. */
static bool try_schedule(struct job *j, const struct emu_config *c,
                         long long now)
{
  long long cap = emu_config_capacity(c, j->spec.location, j->spec.model);
  long long *slot;

  if (cap == 0)
    return false;
  if (!strcmp(j->spec.model, "FLEX_START") &&
      now - j->created_ms < c->flex_wait_ms)
    return false;
  slot = held_slot(j);
  if (cap > 0 && (!slot || *slot + j->spec.gpus > cap))
    return false;
  if (slot)
    *slot += j->spec.gpus;
  j->held = true;
  return true;
}

static void finish_run(struct job *j, const struct emu_config *c, long long now)
{
  bool fail = j->spec.outcome == EMU_OUTCOME_FAIL ||
              (j->spec.fail_first && j->retry == 0) ||
              (j->spec.outcome == EMU_OUTCOME_RANDOM && c->fail_rate > 0 &&
               emu_rand(EMU_RAND_OUTCOME) < c->fail_rate);

  if (j->spec.fail_first && j->retry == 0 && j->spec.max_retry >= 1) {
    /* task 0's first run failed, the others succeeded: Batch retries the
     * failed task (maxRetryCount) and the job runs on until it ends */
    j->retry = 1;
    emu_logs_task_retried(j->name, j->uid, j->body, j->spec.task_count);
    j->since_ms = now;
    place(j);
    return;
  }
  release(j);
  set_state(j, fail ? FAILED : SUCCEEDED, now,
            fail ? "Job failed due to task failure. Specifically, task with "
                   "index 0 failed with exit code 1."
                 : NULL);
}

/*
 * Caller holds mu. Frees gone[0..n) (in creation order) and takes them out
 * of jobs; they are out of the heap, the list and the name index already.
 */
static void drop_jobs(struct job **gone, size_t n)
{
  size_t i, w, g = 0;

  if (!n)
    return;
  i = w = seq_pos(jobs, n_jobs, gone[0]->seq);
  for (; i < n_jobs && g < n; i++) {
    if (jobs[i] == gone[g]) {
      free_job(jobs[i]);
      g++;
    } else {
      jobs[w++] = jobs[i];
    }
  }
  memmove(jobs + w, jobs + i, (n_jobs - i) * sizeof(struct job *));
  n_jobs = w + (n_jobs - i);
}

/* Caller holds mu. Moves j on if its time has come. */
static void step(struct job *j, const struct emu_config *c, long long now)
{
  long long in_state = now - j->since_ms;
  long long run_ms = j->spec.run_ms >= 0 ? j->spec.run_ms : c->run_ms;
  long long start_ms = j->spec.start_ms >= 0 ? j->spec.start_ms : c->start_ms;

  if (j->cancel_at_ms && now >= j->cancel_at_ms) {
    /* a cancel accepted EMU_CANCEL_LAG_MS ago acts now */
    j->cancel_at_ms = 0;
    if (j->state == QUEUED || j->state == SCHEDULED || j->state == RUNNING) {
      set_state(j, CANCELLATION_IN_PROGRESS, now, NULL);
      return;
    }
  }
  switch (j->state) {
  case QUEUED:
    if (!try_schedule(j, c, now))
      break;
    set_state(j, SCHEDULED, now, NULL);
    if (start_ms == 0) /* no start time: running at once */
      set_state(j, RUNNING, now, NULL);
    break;
  case SCHEDULED:
    if (in_state >= start_ms)
      set_state(j, RUNNING, j->since_ms + start_ms, NULL);
    break;
  case RUNNING:
    if (in_state >= run_ms)
      finish_run(j, c, j->since_ms + run_ms);
    break;
  case CANCELLATION_IN_PROGRESS:
    if (in_state >= c->cancel_ms) {
      release(j);
      set_state(j, CANCELLED, j->since_ms + c->cancel_ms, NULL);
      finish_ops(j->name, "cancel");
    }
    break;
  case DELETION_IN_PROGRESS:
    if (in_state >= c->delete_ms) {
      release(j);
      j->gone = true;
      index_del(j);
      finish_ops(j->name, NULL);
    }
    break;
  case SUCCEEDED:
  case FAILED:
  case CANCELLED:
    break;
  }
}

static int by_seq(const void *a, const void *b)
{
  const struct job *x = *(struct job *const *)a, *y = *(struct job *const *)b;

  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Caller holds mu. Steps the QUEUED jobs and the timed ones that are due,
 * in creation order: what a walk over every job would do, since no other
 * job can move now.
 */
static void tick(const struct emu_config *c)
{
  size_t n_due = 0, d = 0, n_gone = 0;
  long long now = emu_now_ms();
  struct job *q = q_head;

  sync_timings(c);
  while (n_heap && heap[0]->due_ms <= now) {
    due[n_due++] = heap[0];
    heap_del(heap[0]);
  }
  if (n_due > 1)
    qsort(due, n_due, sizeof(struct job *), by_seq);
  while (d < n_due || q) {
    struct job *j;
    if (q && (d == n_due || q->seq < due[d]->seq)) {
      j = q;
      q = q->qnext; /* before step takes j off the list */
    } else {
      j = due[d++];
    }
    step(j, c, now);
    if (j->gone)
      scratch[n_gone++] = j;
    else if (!j->hpos && !j->queued && !terminal(j->state))
      place(j); /* not moved after all: back into the heap */
  }
  drop_jobs(scratch, n_gone);
}

static void *run(void *arg)
{
  struct emu_config c;
  long long wait_ms;

  (void)arg;
  pthread_mutex_lock(&mu);
  while (!stopping) {
    struct timespec ts;

    pthread_mutex_unlock(&mu);
    emu_config_get(&c);
    pthread_mutex_lock(&mu);
    tick(&c);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    /* the next tick, or sooner the next timed state's end */
    wait_ms = n_heap ? heap[0]->due_ms - emu_now_ms() : TICK_MS;
    ts.tv_nsec += (wait_ms < 1         ? 1
                   : wait_ms < TICK_MS ? wait_ms
                                       : TICK_MS) *
                  1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    if (!stopping)
      pthread_cond_timedwait(&cv, &mu, &ts);
  }
  pthread_mutex_unlock(&mu);
  return NULL;
}

int emu_jobs_start(void)
{
  pthread_condattr_t ca;

  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&cv, &ca);
  pthread_condattr_destroy(&ca);
  stopping = false;
  started = pthread_create(&ticker, NULL, run, NULL) == 0;
  return started ? 0 : -1;
}

void emu_jobs_stop(void)
{
  size_t i;

  if (started) {
    pthread_mutex_lock(&mu);
    stopping = true;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(ticker, NULL);
    started = false;
    pthread_cond_destroy(&cv);
  }
  for (i = 0; i < n_jobs; i++)
    free_job(jobs[i]);
  free(jobs);
  free(heap);
  free(due);
  free(scratch);
  free(held_use);
  free(job_index);
  free(ops);
  free(op_names);
  free(op_pending);
  free(counts);
  free(count_index);
  jobs = heap = due = scratch = job_index = NULL;
  held_use = NULL;
  q_head = q_tail = NULL;
  ops = NULL;
  op_names = op_pending = NULL;
  counts = NULL;
  count_index = NULL;
  n_jobs = cap_jobs = n_heap = cap_heap = cap_due = cap_scratch = 0;
  n_job_buckets = n_held_use = cap_held_use = 0;
  t_known = false;
  n_ops = cap_ops = n_op_buckets = n_counts = cap_counts = n_count_buckets = 0;
  next_op = 0;
}

void emu_jobs_kick(void)
{
  pthread_mutex_lock(&mu);
  if (started)
    pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

/* Caller holds mu. The create count of name, NULL if none. */
static struct create_count *find_count(const char *name, unsigned long long h)
{
  size_t i;

  if (!n_count_buckets)
    return NULL;
  for (i = count_index[h & (n_count_buckets - 1)]; i; i = counts[i - 1].next)
    if (counts[i - 1].hash == h && !strcmp(counts[i - 1].name, name))
      return &counts[i - 1];
  return NULL;
}

/* Caller holds mu. Puts counts[i] into the index. */
static void count_chain(size_t i)
{
  size_t *head = &count_index[counts[i].hash & (n_count_buckets - 1)];

  counts[i].next = *head;
  *head = i + 1;
}

/* Caller holds mu. */
static int count_create(const char *name)
{
  unsigned long long h = hash_str(name);
  struct create_count *cc = find_count(name, h);
  size_t want = buckets_for(n_counts + 1), i;

  if (cc) {
    cc->n++;
    return 0;
  }
  if (grow((void **)&counts, &cap_counts, n_counts, sizeof(*counts)) != 0)
    return -1;
  if (want > n_count_buckets) {
    size_t *t = calloc(want, sizeof(*t));
    if (!t)
      return -1;
    free(count_index);
    count_index = t;
    n_count_buckets = want;
    for (i = 0; i < n_counts; i++)
      count_chain(i);
  }
  snprintf(counts[n_counts].name, sizeof(counts[n_counts].name), "%s", name);
  counts[n_counts].n = 1;
  counts[n_counts].hash = h;
  count_chain(n_counts++);
  return 0;
}

/* Caller holds mu. */
static long long create_count(const char *name)
{
  const struct create_count *cc = find_count(name, hash_str(name));

  return cc ? cc->n : 0;
}

enum emu_jobs_rc emu_jobs_create(const struct emu_job_spec *spec, json_t *job,
                                 json_t **out)
{
  struct job *j = NULL, *old;
  char name[NAME_MAX_], uuid[40];
  enum emu_jobs_rc rc = EMU_JOBS_NO_MEMORY;

  *out = NULL;
  snprintf(name, sizeof(name), "projects/%s/locations/%s/jobs/%s",
           spec->project, spec->location, spec->id);
  pthread_mutex_lock(&mu);
  old = find(name);
  if (old) {
    if (spec->request_id[0] &&
        !strcmp(spec->request_id, old->spec.request_id)) {
      *out = job_view(old);
      rc = EMU_JOBS_SAME_REQUEST;
    } else {
      rc = EMU_JOBS_EXISTS;
    }
    goto out;
  }
  if (reserve_job() != 0 || !(j = calloc(1, sizeof(*j))) ||
      !(j->events = json_array()) || count_create(name) != 0)
    goto out;
  j->seq = next_seq++;
  j->spec = *spec;
  snprintf(j->name, sizeof(j->name), "%s", name);
  j->hash = hash_str(j->name);
  emu_uuid4(uuid, sizeof(uuid));
  snprintf(j->uid, sizeof(j->uid), "%.20s-%.36s", spec->id, uuid);
  j->body = job;
  job = NULL;
  j->created_ms = j->since_ms = emu_now_ms();
  emu_rfc3339(j->create_time, sizeof(j->create_time));
  snprintf(j->update_time, sizeof(j->update_time), "%s", j->create_time);
  j->state = QUEUED;
  {
    char desc[NAME_MAX_ + 64];
    snprintf(desc, sizeof(desc), "Job state is set to QUEUED for job %s.",
             name);
    json_array_append_new(
        j->events, json_pack("{s:s, s:s, s:s}", "type", "STATUS_CHANGED",
                             "description", desc, "eventTime", j->create_time));
  }
  emu_push_job_state(j->name, j->uid, "QUEUED");
  /* the newest: last in creation order */
  jobs[n_jobs++] = j;
  place(j);
  index_add(j);
  *out = job_view(j);
  j = NULL;
  rc = *out ? EMU_JOBS_OK : EMU_JOBS_NO_MEMORY;
  pthread_cond_broadcast(&cv);
out:
  pthread_mutex_unlock(&mu);
  free_job(j);
  json_decref(job);
  return rc;
}

enum emu_jobs_rc emu_jobs_get(const char *name, json_t **out)
{
  struct job *j;

  pthread_mutex_lock(&mu);
  j = find(name);
  *out = j ? job_view(j) : NULL;
  pthread_mutex_unlock(&mu);
  if (!j)
    return EMU_JOBS_NOT_FOUND;
  return *out ? EMU_JOBS_OK : EMU_JOBS_NO_MEMORY;
}

json_t *emu_jobs_list(const char *project, const char *location,
                      emu_jobs_match match, void *ud, unsigned long long after,
                      size_t page_size, unsigned long long *next)
{
  json_t *arr = json_array();
  unsigned long long last = 0;
  size_t i;

  *next = 0;
  if (!arr)
    return NULL;
  pthread_mutex_lock(&mu);
  for (i = seq_pos(jobs, n_jobs, after + 1); i < n_jobs; i++) {
    struct job *j = jobs[i];
    if (j->gone || j->seq <= after || strcmp(j->spec.project, project) != 0 ||
        (strcmp(location, "-") != 0 && strcmp(j->spec.location, location) != 0))
      continue;
    if (match &&
        !match(json_object_get(j->body, "labels"), state_names[j->state], ud))
      continue;
    if (json_array_size(arr) == page_size) {
      /* one more match exists: the next page starts after the last one */
      *next = last;
      break;
    }
    json_array_append_new(arr, job_view(j));
    last = j->seq;
  }
  pthread_mutex_unlock(&mu);
  return arr;
}

/*
 * Move job `name` into state `to` (unless it is there already) and start
 * operation `verb` on it; *op is a new reference. With only_live, a job
 * that has finished or is being deleted is refused (EMU_JOBS_BAD_STATE).
 */
static enum emu_jobs_rc start_op(const char *name, const char *verb,
                                 enum state to, bool only_live, json_t **op)
{
  struct emu_config c;
  struct job *j;
  enum emu_jobs_rc rc;

  *op = NULL;
  emu_config_get(&c);
  pthread_mutex_lock(&mu);
  j = find(name);
  if (!j)
    rc = EMU_JOBS_NOT_FOUND;
  else if (only_live &&
           (terminal(j->state) || j->state == DELETION_IN_PROGRESS))
    rc = EMU_JOBS_BAD_STATE;
  else if (to == CANCELLATION_IN_PROGRESS && c.cancel_drop_first &&
           !j->cancel_dropped &&
           (j->state == QUEUED || j->state == SCHEDULED ||
            j->state == RUNNING)) {
    /* accepted, never acted on: the job runs on (its operation stays
     * done: false) until a later :cancel */
    j->cancel_dropped = true;
    rc = new_op(j, verb, op);
  } else if (to == CANCELLATION_IN_PROGRESS && c.cancel_lag_ms > 0 &&
             (j->state == QUEUED || j->state == SCHEDULED ||
              j->state == RUNNING)) {
    /* accepted, acted on later: the job runs on meanwhile (its operation
     * is not done until the job is CANCELLED) */
    if (!j->cancel_at_ms) {
      j->cancel_at_ms = emu_now_ms() + c.cancel_lag_ms;
      place(j);
    }
    rc = new_op(j, verb, op);
    pthread_cond_broadcast(&cv);
  } else {
    if (j->state != to)
      set_state(j, to, emu_now_ms(), NULL);
    rc = new_op(j, verb, op);
    pthread_cond_broadcast(&cv);
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

enum emu_jobs_rc emu_jobs_cancel(const char *name, json_t **op)
{
  return start_op(name, "cancel", CANCELLATION_IN_PROGRESS, true, op);
}

enum emu_jobs_rc emu_jobs_delete(const char *name, json_t **op)
{
  return start_op(name, "delete", DELETION_IN_PROGRESS, false, op);
}

enum emu_jobs_rc emu_jobs_operation(const char *name, json_t **out)
{
  unsigned long long h = hash_str(name), k, best = 0;

  *out = NULL;
  pthread_mutex_lock(&mu);
  /* the oldest of that name, as a walk in creation order would find */
  for (k = n_op_buckets ? op_names[h & (n_op_buckets - 1)] : 0; k;
       k = op_at(k - 1)->name_next)
    if (op_at(k - 1)->name_hash == h && !strcmp(op_at(k - 1)->name, name) &&
        (!best || k < best))
      best = k;
  if (best)
    *out = op_view(op_at(best - 1));
  pthread_mutex_unlock(&mu);
  return *out ? EMU_JOBS_OK : EMU_JOBS_NOT_FOUND;
}

size_t emu_jobs_disappear(const char *id)
{
  size_t i, w, n = 0;

  pthread_mutex_lock(&mu);
  for (i = 0; i < n_jobs; i++)
    if (!strcmp(jobs[i]->spec.id, id)) {
      finish_ops(jobs[i]->name, NULL);
      index_del(jobs[i]);
      release(jobs[i]);
      jobs[i]->gone = true;
      place(jobs[i]); /* out of the heap and the list */
      n++;
    }
  if (n) {
    for (i = w = 0; i < n_jobs; i++) {
      if (jobs[i]->gone)
        free_job(jobs[i]);
      else
        jobs[w++] = jobs[i];
    }
    n_jobs = w;
  }
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  return n;
}

json_t *emu_jobs_dump(void)
{
  struct emu_config c;
  struct usage u[MAX_USAGE];
  json_t *arr = json_array(), *creates = json_object(), *usage = json_array();
  size_t i, nu;
  int k;

  emu_config_get(&c);
  pthread_mutex_lock(&mu);
  for (i = 0; i < n_jobs; i++) {
    const struct job *j = jobs[i];
    if (j->gone)
      continue;
    json_array_append_new(
        arr,
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:b, s:s, s:I, "
                  "s:s}",
                  "name", j->name, "jobId", j->spec.id, "project",
                  j->spec.project, "location", j->spec.location, "uid", j->uid,
                  "state", state_names[j->state], "provisioningModel",
                  j->spec.model, "gpus", (json_int_t)j->spec.gpus,
                  "holdsCapacity", j->held, "requestId", j->spec.request_id,
                  "createCount", (json_int_t)create_count(j->name),
                  "createTime", j->create_time));
  }
  for (i = 0; i < n_counts; i++)
    json_object_set_new(creates, counts[i].name, json_integer(counts[i].n));
  nu = compute_usage(u);
  pthread_mutex_unlock(&mu);
  for (k = 0; k < c.n_caps; k++)
    usage_slot(u, &nu, c.caps[k].location, c.caps[k].model);
  for (i = 0; i < nu; i++) {
    long long cap = emu_config_capacity(&c, u[i].location, u[i].model);
    json_array_append_new(
        usage, json_pack("{s:s, s:s, s:I, s:o}", "location", u[i].location,
                         "provisioningModel", u[i].model, "usedGpus",
                         (json_int_t)u[i].used, "capacityGpus",
                         cap < 0 ? json_null() : json_integer(cap)));
  }
  return json_pack("{s:o, s:o, s:o}", "jobs", arr, "creates", creates, "usage",
                   usage);
}

size_t emu_jobs_count(void)
{
  size_t n;

  pthread_mutex_lock(&mu);
  n = n_jobs;
  pthread_mutex_unlock(&mu);
  return n;
}
