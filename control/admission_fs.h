/*
 * admission_fs.h — the admission leader's fair share over time: one
 * decayed usage per team queue of the cluster queues that set
 * usage_fair_sharing, kept in memory beside the admission state, accrued
 * from the jobs that start and stop holding quota (the state's quota log,
 * no scan of the jobs per cycle), written to fair_share_usage and read
 * back when a leader starts.
 */
#ifndef GPUGATE_ADMISSION_FS_H
#define GPUGATE_ADMISSION_FS_H

#include <stdbool.h>
#include <stdint.h>

#include "db/db.h"
#include "db/sched.h"
#include "scheduler/state.h"

struct admission_fs;

struct admission_fs *admission_fs_new(void);
void admission_fs_free(struct admission_fs *b);

/* Forget everything: the next update restores from the database (after a
 * failed cycle, or a lost leadership). */
void admission_fs_reset(struct admission_fs *b);

/*
 * Inside the cycle's transaction, after memory was brought up to date:
 * apply st's quota log (then emptied) at now_us, and when the team queues
 * may have changed (resync: a fresh load or a new configuration) match
 * the accounts to cfg's team queues — a new one restored from what was
 * stored, decayed to now, plus its jobs holding quota (one pass over st,
 * only then). Writes the usage when it moved (events, or jobs holding
 * quota and the last write older than a few seconds), with seen, the
 * snapshot of the feed st was brought to (db_feed.snapshot). A leader
 * that reads the usage back (after a reset) charges every hold since it
 * was written from the jobs' own times (fs_restore()), so a failed cycle
 * or a change of leader loses nothing. Returns 0, or -1 with err filled.
 */
int admission_fs_update(struct admission_fs *b, struct db_conn *c,
                        const struct db_sched *cfg, struct sched_state *st,
                        bool resync, int64_t now_us, const char *seen,
                        char *err, size_t errlen);

/* Every team queue's score as of now_us into cfg->tqs (for the cycle). */
void admission_fs_scores(struct admission_fs *b, struct db_sched *cfg,
                         int64_t now_us);

struct metrics_gauges;

/*
 * Give st the fair-share order keys of cfg's team queues, from their
 * scores as the last cycle computed them (cfg->tqs): the tie group of
 * each score within its cluster queue and its precedence, so that the
 * queue positions published follow the order the cycle admits in. Costs
 * a sort of the team queues. Returns 0, or -1 when out of memory.
 */
int admission_fs_order(const struct db_sched *cfg, struct sched_state *st);

/* Every account's usage and score (as last computed) into g. */
void admission_fs_gauges(const struct admission_fs *b,
                         const struct db_sched *cfg, struct metrics_gauges *g);

#endif
