/*
 * rng.h — the unit tests' seeded random numbers (splitmix64: small,
 * fixed, good enough for a test; no libc rand(), so a seed means the same
 * cases everywhere).
 */
#ifndef GPUGATE_TEST_RNG_H
#define GPUGATE_TEST_RNG_H

#include <stdint.h>

struct rng {
  uint64_t s;
};

static inline uint64_t next_u64(struct rng *r)
{
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Uniform in [0, n). */
static inline int below(struct rng *r, int n)
{
  return (int)(next_u64(r) % (uint64_t)n);
}

#endif
