/*
 * sched.h (db) — load the admission state from PostgreSQL into the pure
 * scheduler's structs, and write a cycle's decisions back, inside the
 * caller's transaction.
 */
#ifndef GPUGATE_DB_SCHED_H
#define GPUGATE_DB_SCHED_H

#include <jansson.h>
#include <stdbool.h>

#include "db/db.h"
#include "scheduler/sched.h"

#define DB_NAME_LEN 64

struct db_sched {
  struct sched_input in; /* points into the arrays below */
  /* owned storage */
  char (*flavor_names)[DB_NAME_LEN];
  json_t *flavor_specs; /* {name: spec}, new reference */
  char (*cq_names)[DB_NAME_LEN];
  struct sched_cq *cqs;
  char (*team_names)[DB_NAME_LEN];
  struct sched_team *teams;
  struct sched_job *admitted;
  char (*admitted_ids)[32];
  int *admitted_attempt;
  char (*admitted_state)[16];
  struct sched_job *pending;
  char (*pending_ids)[32];
  int *pending_attempt;
  char (*pending_reason)[32]; /* "" when none */
  int64_t *pending_max_run_s;
  int *pending_state; /* index into the admission state (its runs only) */
  /* per cluster queue: its old pending jobs were left out of this run, as
   * db_sched_state_build() may (its runs only; NULL: none left out) */
  bool *old_left_out;
  json_t *pending_locations; /* array (per pending job) of arrays */
  /* fair share over time (configuration): per cluster queue its
   * usage_fair_sharing half-life (0: off); the team queues of the CQs
   * that set it (in.tqs: their scores are the caller's to fill) */
  double *fs_half_life;
  char (*tq_team)[DB_NAME_LEN];
  char (*tq_queue)[DB_NAME_LEN];
  struct sched_tq *tqs;
};

struct db_sched_stats {
  int admitted;
  int evicted;
  int requeued; /* evictions completed at once */
  int reasons_changed;
  /* metrics: optional arrays the caller owns (n_admissions / n_evictions
   * long, or NULL), kept by db_sched_apply's reset of the counts above;
   * entry i is set to whether decision i was written (false: its job
   * changed meanwhile) */
  bool *admission_written;
  bool *eviction_written;
};

/* Free what db_sched_load_config() loaded. */
void db_sched_free(struct db_sched *s);

/*
 * Read now, flavors, cohorts, cluster queues and teams (spent: the billed
 * month-to-date part) — no jobs: the admission state keeps those
 * (db/sched_state.h). Call inside a transaction that holds the
 * configuration lock (db_sched_lock()). Returns 0, or -1 with err filled
 * (and the transaction left to roll back).
 */
int db_sched_load_config(struct db_conn *c, struct db_sched *s, char *err,
                         size_t errlen);

/* BEGIN and lock the quota configuration against concurrent changes. */
int db_sched_lock(struct db_conn *c, char *err, size_t errlen);

/*
 * Write out's admissions, evictions and pending reasons. Each update names
 * the job's state and attempt, so a job cancelled meanwhile is left alone.
 * With batch, an admission also queues the Batch create in the outbox and
 * an eviction the Batch cancel; without it (or when the create had not
 * been sent yet) a victim returns to PENDING with attempt + 1 at once.
 * Events are written for every state change.
 */
int db_sched_apply(struct db_conn *c, const struct db_sched *s,
                   const struct sched_output *out, bool batch,
                   struct db_sched_stats *stats, char *err, size_t errlen);

/* The API names of pending reasons ("InsufficientQuota", ...). */
const char *db_sched_reason_name(enum sched_pending_reason r);

/* The event reason of an eviction ("Preempted", "Reclaimed",
 * "ClusterQueueStopped"). */
const char *db_sched_evict_reason_name(enum sched_evict_reason r);

/*
 * Metrics feed, outside a cycle's transaction (the leader's gauges).
 *
 * db_sched_team_costs: net cost (cost + credits) in USD for the current
 * UTC month per team, every team listed (0 without rows), plus
 * "(unattributed)" when rows name no known team. *names and *usd are new
 * arrays of *n entries (caller frees both). Returns 0, 1 when the table
 * cost_rollups does not exist yet (*n = 0), or -1 with err filled.
 */
int db_sched_team_costs(struct db_conn *c, char (**names)[DB_NAME_LEN],
                        double **usd, int *n, char *err, size_t errlen);

/*
 * Helpers for a state kept elsewhere (db/sched_state.c): the index of name
 * in one of s's sorted name tables (or -1); the price per GPU-hour a
 * pending job of cluster queue cq is estimated at; the CQ's flavors that
 * offer none of the regions in allowed (borrowed JSON array).
 */
int db_sched_find(const char (*names)[DB_NAME_LEN], int n, const char *name);
double db_sched_max_price(const struct db_sched *s, int cq);
uint32_t db_sched_excluded(const struct db_sched *s, int cq, json_t *allowed);

#endif
