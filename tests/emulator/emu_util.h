/*
 * emu_util.h — small helpers shared by the Batch emulator's modules: clocks,
 * timestamps, base64, form decoding and random identifiers.
 */
#ifndef GPUGATE_EMU_UTIL_H
#define GPUGATE_EMU_UTIL_H

#include <stdbool.h>
#include <stddef.h>

/* Milliseconds on CLOCK_MONOTONIC. Thread-safe. */
long long emu_now_ms(void);

/* Milliseconds since the Unix epoch. */
long long emu_wall_ms(void);

/* Sleep ms milliseconds (restarts after signals). */
void emu_sleep_ms(long ms);

/* The current UTC time as RFC 3339 with microseconds ("…T12:00:00.123456Z"). */
void emu_rfc3339(char *buf, size_t len);
/* The same for ago_ms milliseconds before now. */
void emu_rfc3339_ago(char *buf, size_t len, long long ago_ms);

/*
 * Decode unpadded or padded base64url. Returns a new NUL-terminated buffer
 * (caller frees) and its length in *outlen, or NULL on bad input.
 */
unsigned char *emu_b64url_decode(const char *in, size_t inlen, size_t *outlen);

/*
 * Percent-decode s in place for application/x-www-form-urlencoded ('+' is a
 * space). Returns false on a malformed escape or an encoded NUL.
 */
bool emu_form_decode(char *s);

/* 2*nbytes random lower-case hex digits into out (size >= 2*nbytes+1). */
void emu_random_hex(char *out, size_t nbytes);

/* A random version-4 UUID into out (size >= 37). */
void emu_uuid4(char *out, size_t len);

/* True when s is a canonical UUID (8-4-4-4-12 hex) and not all zeros. */
bool emu_is_uuid(const char *s);

/* Parse a whole decimal integer; false unless all of s was consumed. */
bool emu_parse_long(const char *s, long long *out);

#endif
