/*
 * real.h — reals read and written without printf, for billing rows and
 * lib/jsonw.c:
 * strtod of a JSON number's text and Jansson 2.14's dump of a real
 * ("%.17g" and its touches; amounts are never written from a double:
 * billing/billing_fields.h), each exactly as glibc and
 * Jansson do it, by exact integer arithmetic where it can and by glibc
 * where it cannot. Pure functions, thread-safe.
 */
#ifndef GPUGATE_REAL_H
#define GPUGATE_REAL_H

#include <stddef.h>
#include <stdint.h>

/* 10^k for k = 0 .. REAL_POW10_N - 1, the powers a uint64_t holds. */
#define REAL_POW10_N 19
extern const uint64_t real_pow10[REAL_POW10_N];

/* Numbers longer than this (bytes of text) are left to Jansson. */
#define BILLING_NUM_MAX 64

/* strtod of a JSON number's text s[0..len) (valid JSON; s need not be
 * NUL-terminated when len < BILLING_NUM_MAX). */
double billing_read_real(const char *s, size_t len);

/*
 * v as Jansson 2.14's sorted dump writes a real (jsonp_dtostr, precision
 * 17): "%.17g", ".0" added when it looks like an integer, the exponent's
 * '+' and leading zeros removed. Its length, or 0 when Jansson's buffer
 * could not hold it in size bytes (the dump then fails).
 */
size_t billing_real_text(double v, char *buf, size_t size);

/* The same with another precision (1 to 17): Jansson's dump with
 * JSON_REAL_PRECISION(precision), as lib/jsonw.c writes replies (15). */
size_t billing_real_jansson(double v, int precision, char *buf, size_t size);

#endif
