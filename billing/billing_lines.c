/*
 * billing_lines.c — NDJSON line splitting for the ingest engine (see
 * billing_lines.h): lines straddle chunks, bounded memory.
 */
#include <stdlib.h>
#include <string.h>

#include "billing/billing_lines.h"

void billing_splitter_init(struct billing_splitter *sp, size_t max)
{
  memset(sp, 0, sizeof(*sp));
  sp->max = max;
}

void billing_splitter_free(struct billing_splitter *sp)
{
  free(sp->buf);
  sp->buf = NULL;
  sp->len = sp->cap = 0;
}

/* Append to the partial line (the caller checked it stays within max). */
static int append(struct billing_splitter *sp, const char *data, size_t n)
{
  if (sp->cap - sp->len < n) {
    size_t cap = sp->cap ? sp->cap : (size_t)64 * 1024;
    char *grown;
    while (cap - sp->len < n)
      cap *= 2;
    grown = realloc(sp->buf, cap);
    if (!grown)
      return -1;
    sp->buf = grown;
    sp->cap = cap;
  }
  memcpy(sp->buf + sp->len, data, n);
  sp->len += n;
  return 0;
}

int billing_splitter_feed(struct billing_splitter *sp, const char *data,
                          size_t n, billing_line_fn fn, void *ctx)
{
  int rc = 0;

  while (n > 0 && rc == 0) {
    const char *nl = memchr(data, '\n', n);
    size_t take_n = nl ? (size_t)(nl - data) : n;

    if (sp->skipping) {
      /* the rest of a line already reported as too long */
    } else if (sp->len + take_n > sp->max) {
      rc = fn(ctx, sp->lines + 1, NULL, 0, true);
      sp->len = 0;
      sp->skipping = true;
    } else if (nl && sp->len == 0) {
      rc = fn(ctx, sp->lines + 1, data, take_n, false); /* no copy */
    } else if (append(sp, data, take_n) != 0) {
      return -1;
    } else if (nl) {
      rc = fn(ctx, sp->lines + 1, sp->buf, sp->len, false);
      sp->len = 0;
    }
    if (nl) {
      sp->lines++;
      sp->skipping = false;
      take_n++;
    }
    data += take_n;
    n -= take_n;
  }
  return rc;
}

int billing_splitter_finish(struct billing_splitter *sp, billing_line_fn fn,
                            void *ctx)
{
  int rc = 0;

  if (sp->len > 0 && !sp->skipping)
    rc = fn(ctx, sp->lines + 1, sp->buf, sp->len, false);
  if (sp->len > 0 || sp->skipping)
    sp->lines++;
  sp->len = 0;
  sp->skipping = false;
  return rc;
}
