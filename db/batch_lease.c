/*
 * batch_lease.c (db) — a dispatcher's leases on the outbox rows it
 * claimed (db/batch.c): given back when their calls were not made, and
 * renewed while their calls are under way. A lease is live while its
 * holder renews it (claimed_until ahead), whatever became of the session
 * that took it; db/batch.c says why.
 */
#include <stdio.h>
#include <stdlib.h>

#include "db/batch.h"

static const char sql_release[] =
    "UPDATE batch_ops SET claimed_by = NULL, claimed_pid = NULL, "
    "claimed_until = NULL "
    "WHERE id = $1::bigint AND claimed_by = $2";

static const char sql_release_many[] =
    "UPDATE batch_ops SET claimed_by = NULL, claimed_pid = NULL, "
    "claimed_until = NULL "
    "WHERE id = ANY($1::bigint[]) AND claimed_by = $2";

/* ids[0..n) as a bigint[] literal. New string, or NULL when out of
 * memory. */
static char *id_array(const long long *ids, size_t n)
{
  size_t i, len = 0, cap = 3 + n * 21;
  char *out = malloc(cap);

  if (!out)
    return NULL;
  out[len++] = '{';
  for (i = 0; i < n; i++)
    len +=
        (size_t)snprintf(out + len, cap - len, "%s%lld", i ? "," : "", ids[i]);
  snprintf(out + len, cap - len, "}");
  return out;
}

int db_batch_unclaim_many(struct db_conn *c, const struct db_batch_op *ops,
                          size_t n, char *err, size_t errlen)
{
  long long *idv;
  char *ids = NULL;
  const char *params[2];
  size_t i;
  int rc = -1;

  if (n == 0)
    return 0;
  if ((idv = malloc(n * sizeof(*idv)))) {
    for (i = 0; i < n; i++)
      idv[i] = (long long)ops[i].id;
    ids = id_array(idv, n);
    free(idv);
  }
  if (!ids) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  params[0] = ids;
  params[1] = ops[0].claimed_by; /* one claimer's rows */
  rc = db_run(c, sql_release_many, 2, params, NULL, err, errlen);
  free(ids);
  return rc;
}

/* Only the holder renews: a row another dispatcher took over after the
 * lease ran out is that one's. */
static const char sql_renew[] =
    "UPDATE batch_ops SET claimed_until = clock_timestamp() + "
    "$3::int * interval '1 second' "
    "WHERE id = ANY($1::bigint[]) AND claimed_by = $2";

int db_batch_renew(struct db_conn *c, const char *claimer, const long long *ids,
                   size_t n, int lease_s, char *err, size_t errlen)
{
  char lease[16], *list;
  const char *params[3];
  int rc;

  if (n == 0)
    return 0;
  if (!(list = id_array(ids, n))) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  snprintf(lease, sizeof(lease), "%d", lease_s);
  params[0] = list;
  params[1] = claimer;
  params[2] = lease;
  rc = db_run(c, sql_renew, 3, params, NULL, err, errlen);
  free(list);
  return rc;
}

int db_batch_unclaim(struct db_conn *c, const struct db_batch_op *op, char *err,
                     size_t errlen)
{
  char id[24];
  const char *params[2] = {id, op->claimed_by};

  snprintf(id, sizeof(id), "%lld", (long long)op->id);
  return db_run(c, sql_release, 2, params, NULL, err, errlen);
}
