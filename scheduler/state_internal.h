/*
 * state_internal.h — what scheduler/state.c (the jobs and their names) and
 * scheduler/state_order.c (the admission order, positions and counts)
 * share. Not part of the state's interface (state.h); nothing else
 * includes it.
 */
#ifndef GPUGATE_SCHED_STATE_INTERNAL_H
#define GPUGATE_SCHED_STATE_INTERNAL_H

struct sched_name;
struct sched_state;

/* name, as st's own (a name of another state, or of a caller's, is looked
 * up by its text); NULL when out of memory */
const struct sched_name *sched_state_own_name(struct sched_state *st,
                                              const struct sched_name *name);

/* names in text order (within one state, the same name is the same
 * pointer) */
int sched_name_cmp(const struct sched_name *a, const struct sched_name *b);

#endif
