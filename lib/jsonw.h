/*
 * jsonw.h — JSON text written straight into a growing buffer, byte for
 * byte as Jansson's json_dumps() with GG_JSON_DUMP writes the same values
 * (compact, members in the order written, reals with 15 significant
 * digits), for replies whose shape is fixed and whose cost matters: no
 * tree is built and none is walked.
 */
#ifndef GPUGATE_JSONW_H
#define GPUGATE_JSONW_H

#include <stdbool.h>
#include <stddef.h>

struct jsonw {
  char *data; /* NUL-terminated once anything is written */
  size_t len, cap;
  bool failed; /* out of memory: every later write does nothing */
};

#define JSONW_INIT                                                             \
  {                                                                            \
    NULL, 0, 0, false                                                          \
  }

/* s[0..n) as it is (JSON text the caller vouches for). */
void jsonw_raw(struct jsonw *w, const char *s, size_t n);

/* A string literal as it is, e.g. jsonw_lit(w, ",\"id\":"). */
#define jsonw_lit(w, s) jsonw_raw((w), (s), sizeof(s) - 1)

/* s (NUL-terminated UTF-8, borrowed) as a JSON string, escaped as
 * Jansson escapes it: '"' and '\\', \b \f \n \r \t, other control
 * characters as \u00XX; '/' and non-ASCII as they are. NULL writes null. */
void jsonw_string(struct jsonw *w, const char *s);

/* Room for the escaped form of n bytes: 6 × n + 2 (the quotes). */
#define JSONW_ESCAPED_MAX(n) (6 * (n) + 2)

/* s[0..n) escaped as jsonw_string() does, quotes included, into dst of
 * at least JSONW_ESCAPED_MAX(n) bytes (not NUL-terminated). Returns the
 * bytes written. */
size_t jsonw_escape(char *dst, const char *s, size_t n);

/* v as json_integer(v) is written. */
void jsonw_int(struct jsonw *w, long long v);

/* v as json_real(v) is written with JSON_REAL_PRECISION(15): "%.15g",
 * ".0" added when neither '.' nor 'e' is in it, the exponent without '+'
 * and leading zeros. v must be finite (Jansson holds no other). */
void jsonw_real(struct jsonw *w, double v);

/* The text (free() it) and its length in *len; NULL when out of memory
 * or when nothing was written (then the buffer is freed). */
char *jsonw_finish(struct jsonw *w, size_t *len);

#endif
