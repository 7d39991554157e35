/*
 * fairshare.h (db) — fair share over time in PostgreSQL: the leader's
 * usage written and read back (fair_share_usage, 0019), and the figures
 * of team queue and cluster queue status.
 */
#ifndef GPUGATE_DB_FAIRSHARE_H
#define GPUGATE_DB_FAIRSHARE_H

#include <jansson.h>
#include <stdint.h>

#include "db/db.h"
#include "db/sched.h"
#include "scheduler/fairshare.h"
#include "scheduler/sched.h"
#include "lib/err.h"

/* One team queue's stored usage, and (written only) its standing. */
struct db_fs_row {
  char team[DB_NAME_LEN], queue[DB_NAME_LEN];
  double u[SCHED_NRES]; /* GPU-s, CPU-s, GiB-s */
  int64_t as_of_us;
  double score, half_life_s; /* as of as_of_us */
  int rank;                  /* in its cluster queue, 1 = first */
};

/*
 * Every stored usage: *rows a new array of *n (caller frees). Returns 0,
 * or -1 with err filled.
 */
int db_fs_load(struct db_conn *c, struct db_fs_row **rows, int *n, char *err,
               size_t errlen);

/*
 * Write n team queues' usage (upsert, one statement) valued at each row's
 * as_of_us, with seen, the snapshot of the change feed the leader had read
 * (db_feed.snapshot; "" or NULL: none), and their standing
 * (fair_share_ranks, 0023: these rows only, one statement), inside the
 * caller's transaction. Returns 0 or -1 with err.
 */
int db_fs_save(struct db_conn *c, const struct db_fs_row *rows, int n,
               const char *seen, char *err, size_t errlen);

/* A job of a team queue with stored usage that held quota and ended since
 * that usage was written, and that the usage does not have whole. */
struct db_fs_ended {
  char team[DB_NAME_LEN], queue[DB_NAME_LEN];
  char id[32];
  struct fs_hold hold; /* ended_us > 0; counted: admitted at or before the
                          usage's as_of, its end not told to its writer */
};

/*
 * Every such job, for a leader that reads the usage back (fs_restore()):
 * admitted after its team queue's as_of and ended, or admitted before it
 * and ended without the writer being told (its event into its final state
 * not visible in the stored snapshot). ended_us is finished_at (else the
 * last write). *out a new array of *n (caller frees). A job that has
 * ended since the caller's own read of the active jobs is among them: the
 * caller skips the jobs it holds. Returns 0, or -1 with err filled.
 */
int db_fs_ended(struct db_conn *c, struct db_fs_ended **out, int *n, char *err,
                size_t errlen);

/*
 * The fair_sharing status of team queue (team, queue): {"weight", "usage":
 * {gpu, cpu, memory}, "score"}, usage decayed to now from what the leader
 * wrote last; JSON null when its cluster queue has no usage_fair_sharing.
 * *out new reference.
 */
enum gg_code db_fs_queue(struct db_conn *db, struct gg_err *err,
                         const char *team, const char *queue, json_t **out);

/*
 * Every team queue of cluster queue cq with its fair_sharing status (as
 * above, plus "team" and "queue"), in score order with a 1-based "rank";
 * JSON null when cq has no usage_fair_sharing. *out new reference.
 */
enum gg_code db_fs_cluster_queue(struct db_conn *db, struct gg_err *err,
                                 const char *cq, json_t **out);

#endif
