/*
 * sha256_lanes.h — SHA-256 of many short messages at once.
 *
 * A billing row is hashed for its key (SHA-256 of its canonical JSON,
 * ~700 bytes): a million rows were a fifth of a BigQuery pull's CPU, one
 * message at a time at ~210 MB/s on a core without the SHA extensions.
 * Sixteen messages go through the rounds together in the sixteen 32-bit
 * lanes of AVX-512 registers where the CPU has AVX-512 (checked at run
 * time), eight in AVX2's, else one by one through OpenSSL. Same digests
 * every way (FIPS 180-4).
 */
#ifndef GPUGATE_SERVER_SHA256_LANES_H
#define GPUGATE_SERVER_SHA256_LANES_H

#include <stddef.h>

#define SHA256_LANES 16 /* the most messages hashed at once */
#define SHA256_LEN 32

/*
 * out[i] = SHA-256 of msg[i][0..len[i]) for i < n. Returns 0, or -1 when
 * OpenSSL fails (out of memory).
 */
int sha256_lanes(size_t n, const unsigned char *const *msg, const size_t *len,
                 unsigned char (*out)[SHA256_LEN]);

/* The ways through the rounds, narrowest first. */
enum sha256_path { SHA256_OPENSSL, SHA256_AVX2, SHA256_AVX512 };

/* The widest way this CPU has, within the limit. */
enum sha256_path sha256_lanes_path(void);

/* Go no wider than max (tests and benchmarks; SHA256_AVX512: no limit). */
void sha256_lanes_limit(enum sha256_path max);

#endif
