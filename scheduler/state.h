/*
 * state.h — the admission leader's jobs in memory (Kueue's cache and queue
 * manager, the jobs part): every active job by id, kept current from a
 * change feed, plus the queue positions last published.
 *
 * Pure: plain structs, no I/O, no clock, no globals. A job is named by
 * strings (team, queue, cluster queue, flavor), so a configuration reload
 * never has to remap the jobs; the caller maps names to the scheduler's
 * indices when it builds a cycle's input. Not thread-safe: one owner.
 */
#ifndef GPUGATE_SCHED_STATE_H
#define GPUGATE_SCHED_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "scheduler/sched.h"

/*
 * A name a job refers to (team, queue, cluster queue, flavor), held once
 * by the state however many jobs name it: a job carries four pointers
 * instead of four copies, and within one state two names are equal
 * exactly when their pointers are. Ids are dense (0..sched_state_n_names
 * - 1) and stable while the state lives, so a caller can keep its own
 * per-name data (say, the name's index in a configuration) in an array.
 */
struct sched_name {
  int id;
  char s[]; /* NUL-terminated */
};

/* What the scheduler needs of one active job (a jobs row). */
struct sched_state_job {
  char id[32];
  int attempt;
  char state[16];  /* PENDING, ADMITTED, QUEUED, RUNNING, EVICTING */
  char reason[32]; /* "" when none */
  /* held by the state (a job passed to sched_state_put may name any
   * sched_name: put interns it by its text; NULL reads as "") */
  const struct sched_name *team;
  const struct sched_name *queue;
  const struct sched_name *cq;
  const struct sched_name *flavor; /* "" while pending */
  int32_t priority;
  bool can_preempt;
  int64_t created_at; /* µs */
  int64_t seq;
  int64_t request[SCHED_NRES];
  int64_t admitted_at_us; /* µs, 0 when none */
  int64_t backoff_until;  /* µs, 0 when none */
  int64_t max_run_s;
  double estimated_cost; /* the stored estimate (jobs holding quota) */
  char *locations;       /* owned: the job's allowed regions, JSON text */
  uint64_t change_xid;   /* the transaction that wrote this version */
  /* published queue position (not part of the job's identity): -1 when
   * none has been published */
  int32_t pos_queue;
  int32_t pos_cq;
  int64_t ahead_gpus;
  /* the last cycle made it a preemptor (sched_job.preempting): kept while
   * it stays pending, not part of the job's identity either */
  bool preempting;
  /* pending and not yet given to a cycle: set when put() adds a pending
   * job, kept while it stays pending; the caller clears it */
  bool fresh;
  /* its entry in the state's admission order (below), -1 when none: kept
   * by put() and remove(), not part of the job's identity */
  int32_t ord;
  /* its team queue's fair-share order key as the order placed it (see
   * sched_state_fs_order()), kept with ord: the tie group of its score
   * and whether the score goes before priority */
  int32_t fs_group;
  bool fs_first;
};

/* A team queue's fair-share order key: its cluster queue orders by usage
 * (scheduler/fairshare.h), group is the tie group of its score within the
 * cluster queue (fs_groups(), 0 the lowest) and first whether the score
 * goes before priority (precedence usage). A team queue without a key
 * orders as group 0, not first: by priority and creation. */
struct sched_fs_key {
  const struct sched_name *team, *queue; /* any state's, or a caller's */
  int32_t group;
  bool first;
  bool changed; /* the state's: since the order last placed its jobs */
};

/* A job started or stopped holding quota (see sched_state.log_quota). */
struct sched_quota_event {
  bool start; /* started (admitted), else stopped (released) */
  int64_t seq;
  const struct sched_name *team, *queue; /* the state's */
  int64_t request[SCHED_NRES];
  int64_t admitted_at_us; /* µs: usage is charged from it */
  int64_t ended_at_us;    /* a stop: when it ended, µs; 0: now */
};

struct sched_state {
  struct sched_state_job *jobs; /* dense: 0..n-1 */
  int n, cap;
  int *slots; /* open addressing: job index + 1, 0 empty */
  int n_slots;
  struct sched_name **names; /* by id: 0..n_names-1 */
  int n_names, cap_names;
  int *name_slots; /* open addressing: name id + 1, 0 empty */
  int n_name_slots;
  /* The pending jobs in admission order (cluster queue, then priority
   * desc, created_at, seq) as sched_state_positions() last sorted them:
   * job indices, -1 for a job removed since or whose order key changed.
   * The next call merges the jobs added since into it instead of sorting
   * every pending job again. */
  int *order;
  int n_order;
  /* The fair-share order keys (sched_state_fs_order()), by team and queue
   * name id; fs_changed when one changed since the order was updated. */
  struct sched_fs_key *fs;
  int n_fs;
  bool fs_changed;
  /* With log_quota set, put() and remove() append an event to qlog each
   * time a job starts or stops holding quota (a job that holds it is not
   * PENDING; a new attempt of a held job is a stop and a start): the
   * leader's fair share over time accrues from them and drains the log
   * (n_qlog = 0). Off by default; sched_state_free() clears it. */
  bool log_quota;
  struct sched_quota_event *qlog;
  int n_qlog, cap_qlog;
};

void sched_state_init(struct sched_state *st);
/* Frees the jobs and the names. */
void sched_state_free(struct sched_state *st);

/* The state's name with text s (added when new), or NULL when out of
 * memory. Names live until sched_state_free(). */
const struct sched_name *sched_state_name(struct sched_state *st,
                                          const char *s);

/* The index of job id, or -1. */
int sched_state_find(const struct sched_state *st, const char *id);

/*
 * Insert or replace job j (copied; its locations string is copied too).
 * A replaced job keeps its published position, and its preempting and
 * fresh marks while it stays pending; an added one is fresh when pending.
 * Returns its index, or -1 when out of memory (the state is unchanged then).
 */
int sched_state_put(struct sched_state *st, const struct sched_state_job *j);

/* Remove job id (absent: nothing). Indices of other jobs may change. */
void sched_state_remove(struct sched_state *st, const char *id);
/* The same for a job that ended at ended_at_us (µs; 0: unknown, now): a
 * holding job's stop event carries it. */
void sched_state_end(struct sched_state *st, const char *id,
                     int64_t ended_at_us);

/* true when the job is PENDING (in backoff or not). */
bool sched_state_pending(const struct sched_state_job *j);

/* true when a and b are the same version of a job, the published position
 * aside. */
bool sched_state_job_equal(const struct sched_state_job *a,
                           const struct sched_state_job *b);

/*
 * Compare two states job by job. Calls diff(arg, id, a, b) for each job
 * that differs (a or b NULL when absent from that side) and returns how
 * many did.
 */
int sched_state_compare(const struct sched_state *a,
                        const struct sched_state *b,
                        void (*diff)(void *arg, const char *id,
                                     const struct sched_state_job *ja,
                                     const struct sched_state_job *jb),
                        void *arg);

/*
 * Set the fair-share order keys of the team queues (n of them, copied; a
 * team queue left out has none). The pending jobs of a team queue whose
 * key changed are placed again by the next sched_state_positions(), in a
 * cost bounded by those jobs (plus a look-up per pending job in the pass
 * it makes anyway); the others keep their place. Returns 0, or -1 when
 * out of memory (the keys are unchanged then).
 */
int sched_state_fs_order(struct sched_state *st,
                         const struct sched_fs_key *keys, int n);

/* A job's queue position as admission order gives it. */
struct sched_position {
  int job;            /* index into the state */
  int32_t pos_queue;  /* 1-based, within (team, queue) */
  int32_t pos_cq;     /* 1-based, within the cluster queue */
  int64_t ahead_gpus; /* GPUs of the pending jobs ahead in the CQ */
};

/*
 * The positions of every PENDING job (in backoff too): per cluster queue
 * in admission order (priority desc, created_at, seq; in a cluster queue
 * that orders by usage, as the scheduler does: the score's tie group, then
 * priority, or priority then the group, then created_at, seq). *out is a new
 * array of *n entries, ordered by cluster queue and position (caller
 * frees). Returns 0, or -1 when out of memory.
 *
 * Costs a pass over the jobs plus sorting the pending jobs that are not
 * yet in the state's order (those added, pending again, or whose key
 * changed since the last call), not all of them: the order is kept in st.
 */
int sched_state_positions(struct sched_state *st, struct sched_position **out,
                          int *n);

/* Jobs per (team, queue, cluster queue): PENDING ones and the ones
 * holding quota. */
struct sched_count {
  const char *team, *queue, *cq; /* borrowed from the state's jobs */
  int64_t pending, admitted;
};

/*
 * The counts of every (team, queue, cluster queue) with an active job, in
 * name order. *out is a new array of *n entries (caller frees; its names
 * are valid until the state changes). One pass over the jobs, then a sort
 * of the groups only. Returns 0, or -1 when out of memory.
 */
int sched_state_counts(const struct sched_state *st, struct sched_count **out,
                       int *n);

#endif
