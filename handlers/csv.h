/*
 * csv.h — RFC 4180 CSV text, for the cost reports (handlers/costs.c) and
 * the FOCUS export (handlers/focus_csv.h): a growing buffer and the
 * quoting of a field.
 */
#ifndef GPUGATE_CSV_H
#define GPUGATE_CSV_H

#include <stdbool.h>
#include <stddef.h>

/* A growing text buffer, NUL-terminated; after a failed allocation it
 * stays failed (and keeps what it had). Zero-initialise it. */
struct csv_buf {
  char *data;
  size_t len, cap;
  bool failed;
};

/* Append s[0..n). */
void csv_put(struct csv_buf *b, const char *s, size_t n);

/* Append the string s. */
void csv_puts(struct csv_buf *b, const char *s);

/* Release b's text and empty it. */
void csv_buf_free(struct csv_buf *b);

/*
 * Append one field: quoted when it holds a comma, a double quote, CR or
 * LF, its quotes doubled. With formula_guard (a text cell a person may
 * open in a spreadsheet), a value starting with = + - @ TAB or CR gets a '
 * in front, inside quotes (OWASP's CSV injection advice); without it the
 * value is kept as it is.
 */
void csv_field(struct csv_buf *b, const char *s, bool formula_guard);

#endif
