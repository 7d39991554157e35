/*
 * evcursor.c — the event stream's cursor text and SSE frames (see
 * evcursor.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/evcursor.h"

int evcursor_cmp(const struct evcursor *a, const struct evcursor *b)
{
  if (a->xid != b->xid)
    return a->xid < b->xid ? -1 : 1;
  if (a->id != b->id)
    return a->id < b->id ? -1 : 1;
  return 0;
}

void evcursor_format(const struct evcursor *c, char *out, size_t outlen)
{
  snprintf(out, outlen, "%" PRIu64 ".%" PRId64, c->xid, c->id);
}

/* Digits only, 1..19 of them, into *v; false otherwise. */
static bool digits(const char *s, size_t n, uint64_t max, uint64_t *v)
{
  uint64_t x = 0;
  size_t i;

  if (n == 0 || n > 19)
    return false;
  for (i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    x = x * 10 + (uint64_t)(s[i] - '0');
  }
  if (x > max)
    return false;
  *v = x;
  return true;
}

bool evcursor_parse(const char *text, struct evcursor *c)
{
  const char *dot = text ? strchr(text, '.') : NULL;
  uint64_t x, i;

  if (!dot || !digits(text, (size_t)(dot - text), UINT64_MAX, &x) ||
      !digits(dot + 1, strlen(dot + 1), (uint64_t)INT64_MAX, &i))
    return false;
  c->xid = x;
  c->id = (int64_t)i;
  return true;
}

char *evcursor_frame(const struct evcursor *c, const char *event,
                     const char *data, size_t *len)
{
  char id[EVCURSOR_TEXT], *out;
  size_t cap;
  int n;

  if (strpbrk(data, "\r\n"))
    return NULL;
  evcursor_format(c, id, sizeof(id));
  cap = strlen(id) + strlen(event) + strlen(data) + 32;
  out = malloc(cap);
  if (!out)
    return NULL;
  n = snprintf(out, cap, "id: %s\nevent: %s\ndata: %s\n\n", id, event, data);
  if (n < 0 || (size_t)n >= cap) {
    free(out);
    return NULL;
  }
  *len = (size_t)n;
  return out;
}
