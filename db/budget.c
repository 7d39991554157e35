/*
 * budget.c (db) — leases from the per-region Batch mutation bucket.
 *
 * The bucket refills continuously at rate up to burst; a lease takes the
 * whole tokens it may and leaves the fraction. Each lease reads the clock
 * once (clock_timestamp(), never an earlier transaction start) and refills
 * from the row's stamp up to that time only, moving the stamp no further:
 * a lease that read its time before a concurrent one committed a later
 * stamp refills nothing, and leaves that interval to the next. No interval
 * is counted twice and the tokens never go below zero: over any interval
 * of T seconds the deployment is granted at most burst + rate × T tokens.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "db/budget.h"

static const char sql_init[] =
    "INSERT INTO batch_budget (region, tokens, refilled_at) "
    "VALUES ($1, $2::float8, clock_timestamp()) "
    "ON CONFLICT (region) DO NOTHING";

/* $2 want, $3 rate, $4 burst. The clock is read once per statement (n.t):
 * read per expression, the tokens left, the grant and the refill stamp
 * each saw another time, and the bucket could go below zero. The refill
 * expression appears twice: an UPDATE cannot name its target in a LATERAL
 * subquery. */
#define AVAIL                                                                  \
  "least($4::float8, tokens + $3::float8 * greatest(0, extract(epoch FROM "    \
  "n.t - refilled_at)))"
static const char sql_lease[] =
    "WITH n AS (SELECT clock_timestamp() AS t) "
    "UPDATE batch_budget SET "
    "last_grant = floor(least($2::float8, " AVAIL ")), "
    "tokens = " AVAIL " - floor(least($2::float8, " AVAIL ")), "
    "refilled_at = greatest(refilled_at, n.t) "
    "FROM n WHERE region = $1 RETURNING last_grant, tokens";

int db_budget_lease(struct db_conn *c, const char *region, int want,
                    double rate, long burst, int *granted, long *wait_ms,
                    char *err, size_t errlen)
{
  char w[16], r[32], b[32];
  const char *params[4] = {region, w, r, b};
  PGresult *res;
  double left;
  int tries;

  *granted = 0;
  *wait_ms = 0;
  snprintf(w, sizeof(w), "%d", want);
  snprintf(r, sizeof(r), "%.6f", rate);
  snprintf(b, sizeof(b), "%ld", burst);
  for (tries = 0; tries < 2; tries++) {
    if (!(res = db_query(c, sql_lease, 4, params, err, errlen)))
      return -1;
    if (PQntuples(res) == 1)
      break;
    PQclear(res);
    res = NULL;
    /* the region's first lease: a full bucket */
    params[1] = b;
    if (db_run(c, sql_init, 2, params, NULL, err, errlen))
      return -1;
    params[1] = w;
  }
  if (!res) {
    snprintf(err, errlen, "no budget row for region \"%s\"", region);
    return -1;
  }
  *granted = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10);
  left = strtod(PQgetvalue(res, 0, 1), NULL);
  PQclear(res);
  if (left < 1)
    *wait_ms = (long)ceil(1000.0 * (1.0 - left) / rate);
  return 0;
}
