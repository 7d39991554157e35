/*
 * sched_alloc.h — the scheduler's one allocation helper, shared by the
 * cycle's working state (sched_work.c) and its fair share (sched_fs.c).
 */
#ifndef GPUGATE_SCHED_ALLOC_H
#define GPUGATE_SCHED_ALLOC_H

#include <stddef.h>
#include <stdlib.h>

/* calloc(n, size) that never asks for 0 bytes; NULL when out of memory. */
static inline void *sched_zalloc(size_t n, size_t size)
{
  return calloc(n ? n : 1, size);
}

#endif
