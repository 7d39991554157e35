/*
 * bq_rendered.c — the emulator's table rendered once (see bq_rendered.h).
 */
#include <stdlib.h>
#include <string.h>

#include "tests/emulator/bq_rendered.h"

#define ROW_MAX 4096 /* a fixture row's cell */

struct day {
  char *text;  /* the rows, each `,{"f":[{"v":"…"}]}` */
  size_t *off; /* row i's at off[i]; off[n] = the end */
  long n;
};

static struct day days[BQ_FIX_MAX_DAYS];
static int n_days;

static int render_day(const struct bq_fixture *f, int d, struct day *out)
{
  struct bq_fixture_daytext dt;
  long n = bq_fixture_day_rows(f, d), i;
  size_t cap = (size_t)(n > 0 ? n : 1) * 1536, len = 0;
  char *text = malloc(cap);
  size_t *off = malloc((size_t)(n + 1) * sizeof(*off));

  if (!text || !off)
    goto fail;
  bq_fixture_daytext(f, d, &dt);
  for (i = 0; i < n; i++) {
    size_t k;
    if (cap - len < 1 + ROW_MAX) {
      char *g = realloc(text, 2 * cap);
      if (!g)
        goto fail;
      text = g;
      cap *= 2;
    }
    off[i] = len;
    text[len++] = ',';
    if ((k = bq_fixture_cell(f, &dt, d, i, text + len, ROW_MAX)) == 0)
      goto fail;
    len += k;
  }
  off[n] = len;
  out->text = text;
  out->off = off;
  out->n = n;
  return 0;
fail:
  free(text);
  free(off);
  return -1;
}

int bq_rendered_build(const struct bq_fixture *f)
{
  int d;

  for (d = 0; d < f->days; d++)
    if (render_day(f, d, &days[d]) != 0) {
      while (d-- > 0) {
        free(days[d].text);
        free(days[d].off);
        days[d].text = NULL;
      }
      return -1;
    }
  n_days = f->days;
  return 0;
}

bool bq_rendered_span(int d, long offset, long end, const char **p, size_t *n)
{
  const struct day *x;

  if (d < 0 || d >= n_days || offset < 0 || end <= offset)
    return false;
  x = &days[d];
  if (!x->text || end > x->n)
    return false;
  *p = x->text + x->off[offset] + 1; /* after the row's comma */
  *n = x->off[end] - x->off[offset] - 1;
  return true;
}
