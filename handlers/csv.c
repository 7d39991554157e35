/*
 * csv.c — RFC 4180 CSV text (see csv.h).
 */
#include <stdlib.h>
#include <string.h>

#include "handlers/csv.h"

void csv_put(struct csv_buf *b, const char *s, size_t n)
{
  if (b->failed)
    return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    char *p;
    while (cap < b->len + n + 1)
      cap *= 2;
    p = realloc(b->data, cap);
    if (!p) {
      b->failed = true;
      return;
    }
    b->data = p;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void csv_puts(struct csv_buf *b, const char *s)
{
  csv_put(b, s, strlen(s));
}

void csv_buf_free(struct csv_buf *b)
{
  free(b->data);
  memset(b, 0, sizeof(*b));
}

void csv_field(struct csv_buf *b, const char *s, bool formula_guard)
{
  const char *q;
  bool formula = formula_guard && *s && strchr("=+-@\t\r", *s);

  if (!formula && !s[strcspn(s, ",\"\r\n")]) {
    csv_puts(b, s);
    return;
  }
  csv_puts(b, "\"");
  if (formula)
    csv_puts(b, "'");
  while ((q = strchr(s, '"'))) {
    csv_put(b, s, (size_t)(q - s) + 1);
    csv_puts(b, "\"");
    s = q + 1;
  }
  csv_puts(b, s);
  csv_puts(b, "\"");
}
