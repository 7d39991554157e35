/*
 * b64url.h — base64url (RFC 4648 §5) without padding, as JWTs (RFC 7515
 * §2), JWKs and gpugate's cursors use it. One encoder and one canonical
 * decoder for every caller. Pure functions, thread-safe.
 */
#ifndef GPUGATE_B64URL_H
#define GPUGATE_B64URL_H

#include <stddef.h>

/* The value (0..63) of one base64url character, or -1. */
int b64url_value(char c);

/*
 * Encode n bytes of in into out (cap bytes, NUL included). Returns the
 * length written, or 0 when out is too small (4 * ceil(n / 3) + 1 is
 * always enough).
 */
size_t b64url_encode(const unsigned char *in, size_t n, char *out, size_t cap);

/*
 * Decode len characters of canonical unpadded base64url: no padding, no
 * whitespace, unused trailing bits zero, so every byte string has exactly
 * one accepted encoding. Writes at most cap bytes to out and their count
 * to *outlen. Returns 0, or -1 for a bad character, a length no encoding
 * has, non-zero trailing bits or too small an out.
 */
int b64url_decode(const char *in, size_t len, unsigned char *out, size_t cap,
                  size_t *outlen);

#endif
