/*
 * jobs_internal.h — what db/jobs.c (reads, cancel, console views) and
 * db/jobs_submit.c (submission and idempotency keys) share: the columns a
 * job is shown with, their positions, and the renderers that read them.
 * Not part of db/'s interface (jobs.h); nothing else includes it.
 */
#ifndef GPUGATE_DB_JOBS_INTERNAL_H
#define GPUGATE_DB_JOBS_INTERNAL_H

#include <libpq-fe.h>
#include <stddef.h>

#define TS(col)                                                                \
  "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

/* The columns a job is shown with, given the expressions of its two queue
 * positions and of the GPUs ahead of it; render() reads them by position. */
/* clang-format off */
#define JOB_COLUMNS(pos_queue, pos_cq, ahead_gpus)                             \
  JOB_COLUMNS_SPEC(pos_queue, pos_cq, ahead_gpus, "j.spec")
#define JOB_COLUMNS_SPEC(pos_queue, pos_cq, ahead_gpus, spec)                  \
  JOB_COLUMNS_PRICED(pos_queue, pos_cq, ahead_gpus, spec,                      \
                     "(f.spec->>'price_per_gpu_hour_usd')::numeric")
/* price: the GPU-hour price of the job's flavor, NULL when none */
#define JOB_COLUMNS_PRICED(pos_queue, pos_cq, ahead_gpus, spec, price)         \
  "j.id, j.team, j.name, j.queue, j.cluster_queue, "                           \
  "j.priority_class, j.priority, j.state, j.reason, j.attempt, "               \
  TS("j.created_at") ", " TS("j.updated_at") ", "                              \
  "j.gpu, j.cpu_milli, j.memory_mib, j.flavor, j.location, j.borrowed, "       \
  TS("j.admitted_at") ", round(j.estimated_cost_usd, 4), "                     \
  "round(coalesce(" price " * j.gpu * "                                        \
  "extract(epoch FROM coalesce(j.finished_at, now()) - j.run_started_at) "     \
  "/ 3600, 0), 4), "                                                           \
  pos_queue ", " pos_cq ", "                                                   \
  spec ", j.seq, j.batch_job_name, j.batch_state, " ahead_gpus " "
/* clang-format on */

enum {
  C_ID,
  C_TEAM,
  C_NAME,
  C_QUEUE,
  C_CQ,
  C_PC,
  C_PRIO,
  C_STATE,
  C_REASON,
  C_ATTEMPT,
  C_CREATED,
  C_UPDATED,
  C_GPU,
  C_CPU,
  C_MEM,
  C_FLAVOR,
  C_LOC,
  C_BORROWED,
  C_ADMITTED,
  C_EST,
  C_ACCRUED,
  C_POS_Q,
  C_POS_CQ,
  C_SPEC,
  C_SEQ,
  C_BATCH_NAME,
  C_BATCH_STATE,
  C_AHEAD_GPUS
};

/* One job row written as text, as db/jobs.c's render() shows it, with
 * the stored spec spliced in (see db/jobs.c). Returns a new buffer of *len
 * bytes, or NULL when out of memory. */
char *db_job_render_text_spec(const PGresult *r, int row, const char *spec,
                              size_t *len);

#endif
