/*
 * sched_regions.c (db) — a cycle's lists of allowed regions, each
 * distinct one parsed once (see sched_regions.h).
 */
#include <stdlib.h>
#include <string.h>

#include "db/sched_regions.h"

#define SLOTS (SCHED_REGIONS_MAX + 1) /* and the last: no region named */

int sched_regions_init(struct sched_regions *m, int n_cqs)
{
  size_t n = (size_t)(n_cqs > 0 ? n_cqs : 1) * SLOTS;

  memset(m, 0, sizeof(*m));
  if (!(m->empty = json_array()) ||
      !(m->excluded = calloc(n, sizeof(*m->excluded))))
    return -1;
  return 0;
}

void sched_regions_free(struct sched_regions *m)
{
  int k;

  json_decref(m->empty);
  for (k = 0; k < m->n; k++)
    json_decref(m->arr[k]);
  free(m->excluded);
  memset(m, 0, sizeof(*m));
}

json_t *sched_regions_get(struct sched_regions *m, const struct db_sched *cfg,
                          int cq, const char *text, uint32_t *excluded)
{
  json_t *arr;
  int k;

  if (!text || !strcmp(text, "[]")) {
    k = SCHED_REGIONS_MAX;
  } else {
    for (k = 0; k < m->n && strcmp(m->text[k], text) != 0; k++)
      ;
    if (k == m->n) {
      /* unparseable: no region named, as before */
      if (!(arr = json_loads(text, 0, NULL)) && !(arr = json_array()))
        return NULL;
      if (m->n == SCHED_REGIONS_MAX) { /* too many lists: this one alone */
        *excluded = db_sched_excluded(cfg, cq, arr);
        return arr;
      }
      m->text[k] = text;
      m->arr[k] = arr;
      m->n++;
    }
  }
  arr = k == SCHED_REGIONS_MAX ? m->empty : m->arr[k];
  if (!m->excluded[cq * SLOTS + k])
    m->excluded[cq * SLOTS + k] = (uint64_t)db_sched_excluded(cfg, cq, arr) + 1;
  *excluded = (uint32_t)(m->excluded[cq * SLOTS + k] - 1);
  return json_incref(arr);
}
