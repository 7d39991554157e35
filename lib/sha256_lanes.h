/*
 * sha256_lanes.h — SHA-256 of many short messages at once.
 *
 * A billing row is hashed for its key (SHA-256 of its canonical JSON,
 * ~700 bytes): a million rows were a fifth of a BigQuery pull's CPU, one
 * message at a time at ~210 MB/s on a core without the SHA extensions.
 * Eight messages go through the rounds together in the eight 32-bit lanes
 * of AVX2 registers where the CPU has AVX2 (checked at run time), else
 * one by one through OpenSSL. Same digests either way (FIPS 180-4).
 */
#ifndef GPUGATE_SERVER_SHA256_LANES_H
#define GPUGATE_SERVER_SHA256_LANES_H

#include <stdbool.h>
#include <stddef.h>

#define SHA256_LANES 8
#define SHA256_LEN 32

/*
 * out[i] = SHA-256 of msg[i][0..len[i]) for i < n. Returns 0, or -1 when
 * OpenSSL fails (out of memory).
 */
int sha256_lanes(size_t n, const unsigned char *const *msg, const size_t *len,
                 unsigned char (*out)[SHA256_LEN]);

/* Whether sha256_lanes uses the eight lanes (for tests and benchmarks);
 * use false to force the OpenSSL path. */
bool sha256_lanes_simd(void);
void sha256_lanes_force_portable(bool portable);

#endif
