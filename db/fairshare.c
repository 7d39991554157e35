/*
 * fairshare.c (db) — fair_share_usage (0019): the admission leader's
 * decayed usage per team queue, written in its cycle's transaction and
 * read back by a new leader; and the status figures, decayed to now from
 * the last write (the leader writes at least every few seconds while
 * usage moves, see control/admission_fs.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/fairshare.h"
#include "scheduler/fairshare.h"

static const char *const res_names[SCHED_NRES] = {"gpu", "cpu", "memory"};

static int res_index(const char *s)
{
  int r;

  for (r = 0; r < SCHED_NRES; r++)
    if (!strcmp(res_names[r], s))
      return r;
  return -1;
}

static const char sql_load[] =
    "SELECT team, queue, resource, usage, "
    "(extract(epoch FROM as_of) * 1000000)::bigint FROM fair_share_usage "
    "ORDER BY team, queue";

int db_fs_load(struct db_conn *c, struct db_fs_row **rows, int *n, char *err,
               size_t errlen)
{
  PGresult *res = db_query(c, sql_load, 0, NULL, err, errlen);
  struct db_fs_row *out;
  int i, k = 0;

  *rows = NULL;
  *n = 0;
  if (!res)
    return -1;
  out = calloc((size_t)PQntuples(res) + 1, sizeof(*out));
  if (!out) {
    PQclear(res);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (i = 0; i < PQntuples(res); i++) {
    int r = res_index(PQgetvalue(res, i, 2));
    struct db_fs_row *row = k ? &out[k - 1] : NULL;
    if (r < 0)
      continue;
    if (!row || strcmp(row->team, PQgetvalue(res, i, 0)) != 0 ||
        strcmp(row->queue, PQgetvalue(res, i, 1)) != 0) {
      row = &out[k++];
      snprintf(row->team, sizeof(row->team), "%s", PQgetvalue(res, i, 0));
      snprintf(row->queue, sizeof(row->queue), "%s", PQgetvalue(res, i, 1));
    }
    row->u[r] = strtod(PQgetvalue(res, i, 3), NULL);
    /* one as_of per team queue: the leader writes its resources together */
    row->as_of_us = strtoll(PQgetvalue(res, i, 4), NULL, 10);
  }
  PQclear(res);
  *rows = out;
  *n = k;
  return 0;
}

static const char sql_save[] =
    "INSERT INTO fair_share_usage AS f (team, queue, resource, usage, as_of, "
    "seen) SELECT t, q, r, u, to_timestamp(a / 1000000.0), "
    "nullif($6, '')::pg_snapshot FROM unnest($1::text[], $2::text[], "
    "$3::text[], $4::float8[], $5::bigint[]) AS x(t, q, r, u, a) "
    "ON CONFLICT (team, queue, resource) DO UPDATE SET usage = "
    "excluded.usage, as_of = excluded.as_of, seen = excluded.seen";

/*
 * The holds that ended since each stored usage was written and that it
 * does not have whole (see db_fs_ended()). An end was told to the leader
 * that wrote the row when the job's event into its final state was
 * written by a transaction visible in the feed snapshot it had read (an
 * event of before 0041, with no xid, is old: told). The candidates are the
 * jobs written since the oldest of those snapshots (the feed's own rule,
 * on its index); a row of before 0044 (no snapshot) reads them all once.
 */
static const char sql_ended[] =
    "WITH u AS (SELECT DISTINCT ON (team, queue) team, queue, as_of, seen "
    "FROM fair_share_usage ORDER BY team, queue), "
    "lo AS (SELECT CASE WHEN bool_or(seen IS NULL) THEN '0'::xid8 ELSE "
    "min(pg_snapshot_xmin(seen)) END AS x FROM u) "
    "SELECT j.team, j.queue, j.id, j.seq, j.gpu, j.cpu_milli, j.memory_mib, "
    "(extract(epoch FROM j.admitted_at) * 1000000)::bigint, "
    "(extract(epoch FROM coalesce(j.finished_at, j.updated_at)) * "
    "1000000)::bigint, j.admitted_at <= u.as_of "
    "FROM u JOIN jobs j ON j.team = u.team AND j.queue = u.queue "
    "WHERE j.change_xid >= coalesce((SELECT x FROM lo), '0'::xid8) "
    "AND j.admitted_at IS NOT NULL "
    "AND j.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED') "
    "AND (j.admitted_at > u.as_of OR (u.seen IS NOT NULL AND NOT EXISTS "
    "(SELECT 1 FROM job_events e WHERE e.job_id = j.id "
    "AND e.to_state = j.state AND (e.xid IS NULL OR "
    "pg_visible_in_snapshot(e.xid, u.seen)))))";

int db_fs_ended(struct db_conn *c, struct db_fs_ended **out, int *n, char *err,
                size_t errlen)
{
  PGresult *res = db_query(c, sql_ended, 0, NULL, err, errlen);
  struct db_fs_ended *v;
  int i;

  *out = NULL;
  *n = 0;
  if (!res)
    return -1;
  if (!(v = calloc((size_t)PQntuples(res) + 1, sizeof(*v)))) {
    PQclear(res);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (i = 0; i < PQntuples(res); i++) {
    struct db_fs_ended *e = &v[i];
    int64_t request[SCHED_NRES];
    snprintf(e->team, sizeof(e->team), "%s", PQgetvalue(res, i, 0));
    snprintf(e->queue, sizeof(e->queue), "%s", PQgetvalue(res, i, 1));
    snprintf(e->id, sizeof(e->id), "%s", PQgetvalue(res, i, 2));
    e->hold.key = strtoll(PQgetvalue(res, i, 3), NULL, 10);
    request[SCHED_GPU] = strtoll(PQgetvalue(res, i, 4), NULL, 10);
    request[SCHED_CPU] = strtoll(PQgetvalue(res, i, 5), NULL, 10);
    request[SCHED_MEM] = strtoll(PQgetvalue(res, i, 6), NULL, 10);
    fs_request(request, e->hold.req);
    e->hold.admitted_us = strtoll(PQgetvalue(res, i, 7), NULL, 10);
    e->hold.ended_us = strtoll(PQgetvalue(res, i, 8), NULL, 10);
    if (e->hold.ended_us <= 0) /* ended: never read as holding */
      e->hold.ended_us = 1;
    e->hold.counted = PQgetvalue(res, i, 9)[0] == 't';
  }
  *n = PQntuples(res);
  *out = v;
  PQclear(res);
  return 0;
}

/* the standing of the team queues written, and no other's */
static const char sql_save_ranks[] =
    "WITH x AS (SELECT * FROM unnest($1::text[], $2::text[], $3::float8[], "
    "$4::int[], $5::float8[], $6::bigint[]) AS x(t, q, s, r, h, a)), "
    "gone AS (DELETE FROM fair_share_ranks f WHERE NOT EXISTS (SELECT 1 "
    "FROM x WHERE x.t = f.team AND x.q = f.queue)) "
    "INSERT INTO fair_share_ranks AS f (team, queue, score, rank, "
    "half_life_s, as_of) SELECT t, q, s, r, h, to_timestamp(a / 1000000.0) "
    "FROM x ON CONFLICT (team, queue) DO UPDATE SET score = excluded.score, "
    "rank = excluded.rank, half_life_s = excluded.half_life_s, "
    "as_of = excluded.as_of";

/* Append s to a growing buffer (NUL kept); -1 when out of memory. */
static int put(char **buf, size_t *len, size_t *cap, const char *s)
{
  size_t n = strlen(s);

  if (*len + n + 1 > *cap) {
    size_t c = (*cap ? *cap : 256);
    char *b;
    while (c < *len + n + 1)
      c *= 2;
    if (!(b = realloc(*buf, c)))
      return -1;
    *buf = b;
    *cap = c;
  }
  memcpy(*buf + *len, s, n + 1);
  *len += n;
  return 0;
}

static int save_ranks(struct db_conn *c, const struct db_fs_row *rows, int n,
                      char *err, size_t errlen)
{
  char *a[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
  size_t len[6] = {0}, cap[6] = {0};
  const char *params[6];
  int i, k, rc = -1;

  for (k = 0; k < 6; k++)
    if (put(&a[k], &len[k], &cap[k], "{"))
      goto oom;
  for (i = 0; i < n; i++) {
    char num[4][48];
    const char *sep = i ? "," : "";
    snprintf(num[0], sizeof(num[0]), "%s%.17g", sep,
             isfinite(rows[i].score) && rows[i].score > 0 ? rows[i].score : 0);
    snprintf(num[1], sizeof(num[1]), "%s%d", sep,
             rows[i].rank > 0 ? rows[i].rank : 1);
    snprintf(num[2], sizeof(num[2]), "%s%.17g", sep,
             rows[i].half_life_s > 0 ? rows[i].half_life_s : 1);
    snprintf(num[3], sizeof(num[3]), "%s%lld", sep,
             (long long)rows[i].as_of_us);
    if (put(&a[0], &len[0], &cap[0], sep) ||
        put(&a[0], &len[0], &cap[0], rows[i].team) ||
        put(&a[1], &len[1], &cap[1], sep) ||
        put(&a[1], &len[1], &cap[1], rows[i].queue) ||
        put(&a[2], &len[2], &cap[2], num[0]) ||
        put(&a[3], &len[3], &cap[3], num[1]) ||
        put(&a[4], &len[4], &cap[4], num[2]) ||
        put(&a[5], &len[5], &cap[5], num[3]))
      goto oom;
  }
  for (k = 0; k < 6; k++) {
    if (put(&a[k], &len[k], &cap[k], "}"))
      goto oom;
    params[k] = a[k];
  }
  rc = db_run(c, sql_save_ranks, 6, params, NULL, err, errlen);
  goto out;
oom:
  snprintf(err, errlen, "out of memory");
out:
  for (k = 0; k < 6; k++)
    free(a[k]);
  return rc;
}

int db_fs_save(struct db_conn *c, const struct db_fs_row *rows, int n,
               const char *seen, char *err, size_t errlen)
{
  /* PostgreSQL array literals; names are [a-z0-9-], never quoted */
  char *a[5] = {NULL, NULL, NULL, NULL, NULL};
  size_t len[5] = {0}, cap[5] = {0};
  const char *params[6];
  int i, k, r, rc = -1;

  if (n == 0)
    return 0;
  for (k = 0; k < 5; k++)
    if (put(&a[k], &len[k], &cap[k], "{"))
      goto oom;
  for (i = 0; i < n; i++)
    for (r = 0; r < SCHED_NRES; r++) {
      char num[2][40];
      const char *sep = i || r ? "," : "";
      snprintf(num[0], sizeof(num[0]), "%s%.17g", sep,
               isfinite(rows[i].u[r]) && rows[i].u[r] > 0 ? rows[i].u[r] : 0);
      snprintf(num[1], sizeof(num[1]), "%s%lld", sep,
               (long long)rows[i].as_of_us);
      if (put(&a[0], &len[0], &cap[0], sep) ||
          put(&a[0], &len[0], &cap[0], rows[i].team) ||
          put(&a[1], &len[1], &cap[1], sep) ||
          put(&a[1], &len[1], &cap[1], rows[i].queue) ||
          put(&a[2], &len[2], &cap[2], sep) ||
          put(&a[2], &len[2], &cap[2], res_names[r]) ||
          put(&a[3], &len[3], &cap[3], num[0]) ||
          put(&a[4], &len[4], &cap[4], num[1]))
        goto oom;
    }
  for (k = 0; k < 5; k++) {
    if (put(&a[k], &len[k], &cap[k], "}"))
      goto oom;
    params[k] = a[k];
  }
  params[5] = seen ? seen : "";
  rc = db_run(c, sql_save, 6, params, NULL, err, errlen);
  if (rc == 0)
    rc = save_ranks(c, rows, n, err, errlen);
  goto out;
oom:
  snprintf(err, errlen, "out of memory");
out:
  for (k = 0; k < 5; k++)
    free(a[k]);
  return rc;
}

/* ---- status ------------------------------------------------------------ */

#define STATUS_SELECT                                                          \
  "SELECT q.team, q.name, coalesce((q.spec->>'fair_sharing_weight')::float8, " \
  "1), (c.spec->'usage_fair_sharing')::text, u.resource, u.usage, "            \
  "greatest(extract(epoch FROM now() - u.as_of), 0)::float8 "                  \
  "FROM team_queues q JOIN cluster_queues c ON c.name = q.cluster_queue "      \
  "LEFT JOIN fair_share_usage u ON u.team = q.team AND u.queue = q.name "

static const char sql_status_queue[] =
    STATUS_SELECT "WHERE q.team = $1 AND q.name = $2";
static const char sql_status_cq[] =
    STATUS_SELECT "WHERE q.cluster_queue = $1 ORDER BY q.team, q.name";

/* The status of the team queues in res (rows grouped by team queue), as
 * an array of {team, queue, weight, usage, score}; JSON null when their
 * cluster queue has no usage_fair_sharing. New reference. */
static json_t *status_of(PGresult *res)
{
  json_t *cfg = NULL, *list = json_array(), *cur = NULL;
  double w[SCHED_NRES] = {1, 0, 0}, h = 0, u[SCHED_NRES] = {0};
  int i, r;

  if (PQntuples(res) > 0)
    cfg = json_loads(PQgetvalue(res, 0, 3), JSON_DECODE_ANY, NULL);
  if (!json_is_object(cfg)) {
    json_decref(cfg);
    json_decref(list);
    return json_null();
  }
  h = json_number_value(json_object_get(cfg, "half_life_s"));
  {
    json_t *rw = json_object_get(cfg, "resource_weights");
    for (r = 0; r < SCHED_NRES; r++)
      if (json_object_get(rw, res_names[r]))
        w[r] = json_number_value(json_object_get(rw, res_names[r]));
  }
  json_decref(cfg);
  for (i = 0; i <= PQntuples(res); i++) {
    bool next =
        i == PQntuples(res) ||
        (cur && (strcmp(json_string_value(json_object_get(cur, "team")),
                        PQgetvalue(res, i, 0)) != 0 ||
                 strcmp(json_string_value(json_object_get(cur, "queue")),
                        PQgetvalue(res, i, 1)) != 0));
    if (cur && next) {
      double weight = json_number_value(json_object_get(cur, "weight"));
      json_object_set_new(cur, "usage",
                          json_pack("{s:f, s:f, s:f}", "gpu", u[SCHED_GPU],
                                    "cpu", u[SCHED_CPU], "memory",
                                    u[SCHED_MEM]));
      json_object_set_new(cur, "score", json_real(fs_score(u, w, weight)));
      json_array_append_new(list, cur);
      cur = NULL;
    }
    if (i == PQntuples(res))
      break;
    if (!cur) {
      cur = json_pack("{s:s, s:s, s:f}", "team", PQgetvalue(res, i, 0), "queue",
                      PQgetvalue(res, i, 1), "weight",
                      strtod(PQgetvalue(res, i, 2), NULL));
      memset(u, 0, sizeof(u));
    }
    r = PQgetisnull(res, i, 4) ? -1 : res_index(PQgetvalue(res, i, 4));
    if (r >= 0 && h > 0)
      u[r] = strtod(PQgetvalue(res, i, 5), NULL) *
             fs_decay(h, strtod(PQgetvalue(res, i, 6), NULL));
  }
  return list;
}

enum gg_code db_fs_queue(struct db_conn *db, struct gg_err *err,
                         const char *team, const char *queue, json_t **out)
{
  const char *params[2] = {team, queue};
  PGresult *res;
  json_t *list;

  *out = NULL;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  if (!(res = db_err_exec(db, err, sql_status_queue, 2, params)))
    return err->code;
  list = status_of(res);
  PQclear(res);
  if (json_is_array(list) && json_array_size(list) == 1) {
    *out = json_incref(json_array_get(list, 0));
    json_object_del(*out, "team");
    json_object_del(*out, "queue");
  } else {
    *out = json_null();
  }
  json_decref(list);
  return GG_OK;
}

/* A team queue's status and its place in (team, queue) order. */
struct ranked {
  json_t *item;
  int group; /* its score's tie group (fs_groups()) */
  size_t at;
};

/* By score (equal ones as fs_cmp() has them), then (team, queue) order. */
static int cmp_score(const void *a, const void *b)
{
  const struct ranked *x = a, *y = b;

  if (x->group != y->group)
    return x->group < y->group ? -1 : 1;
  return x->at < y->at ? -1 : (x->at > y->at);
}

enum gg_code db_fs_cluster_queue(struct db_conn *db, struct gg_err *err,
                                 const char *cq, json_t **out)
{
  const char *params[1] = {cq};
  PGresult *res;
  json_t *list, *sorted;
  struct ranked *items;
  double *score;
  int *group;
  size_t i, n;

  *out = NULL;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  if (!(res = db_err_exec(db, err, sql_status_cq, 1, params)))
    return err->code;
  list = status_of(res);
  PQclear(res);
  if (!json_is_array(list)) {
    *out = list;
    return GG_OK;
  }
  n = json_array_size(list);
  items = calloc(n + 1, sizeof(*items));
  score = calloc(n + 1, sizeof(*score));
  group = calloc(n + 1, sizeof(*group));
  sorted = json_array();
  for (i = 0; score && i < n; i++)
    score[i] =
        json_number_value(json_object_get(json_array_get(list, i), "score"));
  for (i = 0; items && i < n; i++)
    items[i] = (struct ranked){json_array_get(list, i), 0, i};
  if (items && sorted && score && group &&
      fs_groups(score, (int)n, group) == 0) {
    for (i = 0; i < n; i++)
      items[i].group = group[i];
    qsort(items, n, sizeof(*items), cmp_score);
    for (i = 0; i < n; i++) {
      json_object_set_new(items[i].item, "rank",
                          json_integer((json_int_t)i + 1));
      json_array_append(sorted, items[i].item);
    }
  }
  free(items);
  free(score);
  free(group);
  json_decref(list);
  *out = sorted ? sorted : json_array();
  return GG_OK;
}
