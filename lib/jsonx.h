/*
 * jsonx.h — JSON with exact decimal numbers: a decimal's text travels in a
 * Jansson tree as a marked string and is written as a bare JSON number, so
 * money goes from PostgreSQL numeric to the client without a double.
 */
#ifndef GPUGATE_JSONX_H
#define GPUGATE_JSONX_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* How every JSON text gpugate writes is encoded: compact, in the order the
 * object was built, and reals with 15 significant digits (0.8, not
 * 0.80000000000000004). */
#define GG_JSON_DUMP                                                           \
  (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

/* Longest decimal text carried, in bytes. */
#define JSONX_DECIMAL_MAX 1024

/*
 * True when s (borrowed; may be NULL) is a JSON number (RFC 8259 §6) of at
 * most JSONX_DECIMAL_MAX bytes. PostgreSQL's NaN and Infinity are not.
 */
bool jsonx_number_text(const char *s);

/*
 * A new reference holding the decimal text (borrowed), written by
 * jsonx_dumps() exactly as given; JSON null when text is not a JSON number
 * (NaN, Infinity, NULL). json_dumps() would write it as an odd string:
 * only jsonx_dumps() may write a tree that holds one.
 */
json_t *jsonx_decimal(const char *text);

/*
 * v (borrowed) as JSON text like json_dumps(v, flags) with JSON_COMPACT
 * (objects in insertion order), decimals from jsonx_decimal() as bare
 * numbers. Returns a new NUL-terminated buffer (free() it) with its length
 * in *len (len may be NULL); NULL when out of memory or nested deeper than
 * 64. Thread-safe.
 */
char *jsonx_dumps(const json_t *v, size_t flags, size_t *len);

#endif
