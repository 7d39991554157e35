/*
 * billing_partitions.c — the export's partitions the BigQuery pull read
 * (see db/billing_sync.h, db/migrations/0031_billing_sync_partitions.sql).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/billing_sync.h"
#include "db/billing_sync_internal.h"
#include "db/db.h"

static void partition_fill(void *elem, const PGresult *res, int row)
{
  struct billing_partition *p = elem;

  snprintf(p->day, sizeof(p->day), "%s", PQgetvalue(res, row, 0));
  snprintf(p->export_time, sizeof(p->export_time), "%s",
           PQgetvalue(res, row, 1));
  snprintf(p->first, sizeof(p->first), "%s", PQgetvalue(res, row, 2));
}

enum gg_code db_billing_sync_partitions(struct db_conn *c, const char *from,
                                        struct billing_partition **out,
                                        size_t *n)
{
  void *v;
  enum gg_code code = db_billing_sync_read(
      c,
      "SELECT to_char(partition_day, 'YYYY-MM-DD'), export_time,"
      " to_char(first_usage_day, 'YYYY-MM-DD') FROM "
      "billing_sync_partitions"
      " WHERE $1::date IS NULL OR partition_day >= $1::date"
      " ORDER BY partition_day",
      from, sizeof(**out), partition_fill, &v, n);

  *out = v;
  return code;
}

/* Append s to the array literal being built in *lit (owned), items
 * unquoted: days and export times hold no character to quote. */
static int lit_add(char **lit, size_t *len, size_t *cap, const char *s)
{
  size_t n = strlen(s);

  if (*len + n + 3 > *cap) {
    size_t c = *cap ? *cap * 2 : 4096;
    char *g;
    while (c < *len + n + 3)
      c *= 2;
    if (!(g = realloc(*lit, c)))
      return -1;
    *lit = g;
    *cap = c;
  }
  (*lit)[*len] = *len ? ',' : '{';
  (*len)++;
  memcpy(*lit + *len, s, n);
  *len += n;
  (*lit)[*len] = '}';
  (*lit)[*len + 1] = '\0';
  return 0;
}

enum gg_code db_billing_sync_partitions_save(struct db_conn *c,
                                             const struct billing_partition *p,
                                             size_t n)
{
  char *lit[3] = {NULL, NULL, NULL}; /* owned */
  size_t len[3] = {0, 0, 0}, cap[3] = {0, 0, 0}, i;
  const char *params[3];
  enum gg_code code = GG_INTERNAL;
  int k;

  if (n == 0)
    return GG_OK;
  for (i = 0; i < n; i++)
    if (lit_add(&lit[0], &len[0], &cap[0], p[i].day) ||
        lit_add(&lit[1], &len[1], &cap[1], p[i].export_time) ||
        lit_add(&lit[2], &len[2], &cap[2], p[i].first))
      goto out;
  for (k = 0; k < 3; k++)
    params[k] = lit[k];
  PQclear(db_exec(c,
                  "INSERT INTO billing_sync_partitions AS s (partition_day,"
                  " export_time, first_usage_day)"
                  " SELECT * FROM unnest($1::date[], $2::text[], $3::date[])"
                  " ON CONFLICT (partition_day) DO UPDATE SET"
                  " export_time = excluded.export_time,"
                  " first_usage_day = excluded.first_usage_day,"
                  " seen_at = now()",
                  3, params, &code));
out:
  for (k = 0; k < 3; k++)
    free(lit[k]);
  return code;
}
