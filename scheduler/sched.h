/*
 * sched.h — admission as a pure function (Kueue's semantics).
 *
 * (cluster queues with flavor quotas, cohorts, teams' budgets, admitted and
 * pending jobs, now) → (admissions, evictions, a reason for every job left
 * pending). No I/O, no globals, no clock: the caller passes `now`. The same
 * input always gives the same output, whatever the order of names.
 *
 * Resources are integers: GPUs, CPU millicores, MiB of memory. The
 * input's and output's types are sched_types.h, which the scheduler's own
 * helpers (sched_fs, fairshare) include instead of this file: sched.c sits
 * on top of them.
 */
#ifndef GPUGATE_SCHED_H
#define GPUGATE_SCHED_H

#include <stdint.h>

#include "scheduler/sched_types.h"

/*
 * Run one admission cycle. Fills *out with new arrays (free with
 * sched_output_free()). Returns 0, or -1 (and *out empty) on allocation
 * failure or invalid input: an index out of range, a negative amount or
 * weight, a limit below SCHED_UNLIMITED, a flavor listed twice in one CQ, a
 * capacity window that ends before it starts.
 * Thread-safe: touches only its arguments.
 */
int sched_cycle(const struct sched_input *in, struct sched_output *out);
void sched_output_free(struct sched_output *out);

/*
 * Usage of cluster queue cq in global flavor f, resource r, from the
 * admitted jobs (the GET status "total").
 */
int64_t sched_usage(const struct sched_input *in, int cq, int flavor,
                    enum sched_res r);

/*
 * The CQ's weighted dominant-resource share: over its flavors and
 * resources, the largest (usage above nominal) / (the cohort's lendable
 * quota), divided by the weight; 0 when not borrowing or not in a cohort.
 */
double sched_weighted_share(const struct sched_input *in, int cq);

#endif
