/*
 * queue_status.c — what a queue's and a cluster queue's status show of
 * their jobs: the pending and admitted counts the admission leader
 * published, and a cluster queue's usage with its cohort's lendable pool.
 */
#include <stdlib.h>

#include "db/db.h"
#include "db/queue_status.h"

/* as the admission leader last published them (0007's admission_counts):
 * a handful of rows, never a count of the jobs */
static const char sql_counts_queue[] =
    "SELECT coalesce(sum(pending), 0), coalesce(sum(admitted), 0) "
    "FROM admission_counts WHERE team = $1 AND queue = $2";

static const char sql_counts_cq[] =
    "SELECT coalesce(sum(pending), 0), coalesce(sum(admitted), 0) "
    "FROM admission_counts WHERE cluster_queue = $1";

enum gg_code db_job_counts(struct db_conn *db, struct gg_err *err,
                           const char *team, const char *queue_or_cq,
                           json_t **out)
{
  const char *params[2];
  PGresult *res;

  *out = NULL;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  if (team) {
    params[0] = team;
    params[1] = queue_or_cq;
    res = db_err_exec(db, err, sql_counts_queue, 2, params);
  } else {
    params[0] = queue_or_cq;
    res = db_err_exec(db, err, sql_counts_cq, 1, params);
  }
  if (!res)
    return err->code;
  *out = json_pack("{s:I, s:I}", "pending",
                   (json_int_t)strtoll(PQgetvalue(res, 0, 0), NULL, 10),
                   "admitted",
                   (json_int_t)strtoll(PQgetvalue(res, 0, 1), NULL, 10));
  PQclear(res);
  return GG_OK;
}

static const char sql_cq_usage[] =
    "SELECT coalesce(json_object_agg(flavor, json_build_object('gpu', g, "
    "'cpu_milli', c, 'memory_mib', m)), '{}') FROM (SELECT flavor, "
    "sum(gpu) g, sum(cpu_milli) c, sum(memory_mib) m FROM jobs "
    "WHERE cluster_queue = $1 AND state IN ('ADMITTED', 'QUEUED', "
    "'RUNNING', 'EVICTING') AND flavor IS NOT NULL GROUP BY flavor) u";

static const char sql_cohort_pool[] =
    "SELECT coalesce(json_object_agg(flavor, res), '{}') FROM ("
    "SELECT flavor, json_object_agg(resource, lendable) res FROM ("
    "SELECT f->>'name' flavor, r.key resource, "
    "sum(coalesce((r.value->>'lending_limit')::bigint, "
    "(r.value->>'nominal')::bigint)) lendable "
    "FROM cluster_queues c, json_array_elements(c.spec->'flavors') f, "
    "json_each(f->'resources') r WHERE c.cohort = $1 "
    "GROUP BY 1, 2) x GROUP BY flavor) y";

enum gg_code db_cq_usage(struct db_conn *db, struct gg_err *err, const char *cq,
                         const char *cohort, json_t **usage, json_t **pool)
{
  const char *params[1] = {cq};
  PGresult *res;

  *usage = NULL;
  *pool = NULL;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  if (!(res = db_err_exec(db, err, sql_cq_usage, 1, params)))
    return err->code;
  *usage = json_loads(PQgetvalue(res, 0, 0), 0, NULL);
  PQclear(res);
  if (!cohort) {
    *pool = json_object();
    return *usage ? GG_OK : db_fail(err, GG_INTERNAL);
  }
  params[0] = cohort;
  if (!(res = db_err_exec(db, err, sql_cohort_pool, 1, params))) {
    json_decref(*usage);
    *usage = NULL;
    return err->code;
  }
  *pool = json_loads(PQgetvalue(res, 0, 0), 0, NULL);
  PQclear(res);
  return *usage && *pool ? GG_OK : db_fail(err, GG_INTERNAL);
}
