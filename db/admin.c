/*
 * admin.c — the SQL behind the administrator's objects.
 *
 * One descriptor per kind holds its static SQL. Key parameters come first
 * ($1 = name, or $1 = team and $2 = name for team queues) and the spec
 * follows as the next parameter. The generic functions below run the
 * kind's statements in the same order for every kind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/admin.h"
#include "db/db.h"
#include "lib/jsonx.h"

#define TS(col)                                                                \
  "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
#define COLS "spec, version, " TS("created_at") ", " TS("updated_at")

/* The statements of a kind keyed by name alone, stored in table t. */
#define BY_NAME(t)                                                             \
  .nkeys = 1, .get = "SELECT " COLS " FROM " t " WHERE name = $1",             \
  .list = "SELECT name, " COLS " FROM " t " WHERE name > $1 "                  \
          "ORDER BY name LIMIT $2::int",                                       \
  .lock = "SELECT version, spec::jsonb = $2::jsonb FROM " t                    \
          " WHERE name = $1 FOR UPDATE",                                       \
  .del = "DELETE FROM " t " WHERE name = $1"

/* The writes of a kind keyed by name that stores nothing but its spec. */
#define SPEC_ONLY(t)                                                           \
  .insert = "INSERT INTO " t " (name, spec) VALUES ($1, $2::json)",            \
  .update = "UPDATE " t " SET spec = $2::json, version = version + 1, "        \
            "updated_at = now() WHERE name = $1"

/* A delete guard: the jobs in it (as `where` picks them) not yet finished. */
#define ACTIVE_JOBS(where)                                                     \
  "SELECT format('%s jobs are still pending or admitted in it', count(*)) "    \
  "FROM jobs WHERE " where " AND state IN ('PENDING', 'ADMITTED', "            \
  "'QUEUED', 'RUNNING', 'EVICTING') HAVING count(*) > 0"

struct kind {
  const char *name;      /* for messages */
  int nkeys;             /* 1, or 2 for team queues */
  const char *get;       /* keys → spec, version, created, updated */
  const char *list;      /* [team,] after, limit → name, COLS */
  const char *lock;      /* keys, spec → version, unchanged */
  const char *insert;    /* keys, spec */
  const char *update;    /* keys, spec */
  const char *del;       /* keys */
  const char *refs;      /* keys, spec → field, message of missing refs */
  const char *guard_put; /* keys, spec → message when forbidden (409) */
  const char *guard_del; /* keys → message when forbidden (409) */
  const char *before;    /* keys, spec: runs before insert/update */
  const char *after[2];  /* keys, spec: run after insert/update */
  const char *in_use;    /* message when a delete hits a reference */
};

static const struct kind kinds[DB_KIND_COUNT] = {
    [DB_FLAVOR] =
        {
            .name = "flavor",
            BY_NAME("flavors"),
            SPEC_ONLY("flavors"),
            .in_use = "a cluster queue still uses it",
        },
    [DB_COHORT] =
        {
            .name = "cohort",
            BY_NAME("cohorts"),
            SPEC_ONLY("cohorts"),
            .in_use = "a cluster queue is still in it",
        },
    [DB_CLUSTER_QUEUE] =
        {
            .name = "cluster queue",
            BY_NAME("cluster_queues"),
            .insert = "INSERT INTO cluster_queues (name, spec, cohort) "
                      "VALUES ($1, $2::json, $2::json->>'cohort')",
            .update = "UPDATE cluster_queues SET spec = $2::json, "
                      "cohort = $2::json->>'cohort', version = version + 1, "
                      "updated_at = now() WHERE name = $1",
            .guard_del = ACTIVE_JOBS("cluster_queue = $1"),
            .refs = "SELECT 'cohort', format('cohort \"%s\" does not exist', "
                    "$2::json->>'cohort') "
                    "WHERE $2::json->>'cohort' IS NOT NULL AND NOT EXISTS "
                    "(SELECT 1 FROM cohorts WHERE name = $2::json->>'cohort') "
                    "UNION ALL "
                    "SELECT format('flavors[%s].name', o - 1), "
                    "format('flavor \"%s\" does not exist', f->>'name') "
                    "FROM json_array_elements($2::json->'flavors') "
                    "WITH ORDINALITY AS x(f, o) WHERE NOT EXISTS "
                    "(SELECT 1 FROM flavors WHERE name = f->>'name')",
            .after = {"DELETE FROM cluster_queue_flavors "
                      "WHERE cluster_queue = $1",
                      "INSERT INTO cluster_queue_flavors "
                      "(cluster_queue, flavor, position) "
                      "SELECT $1, f->>'name', o - 1 "
                      "FROM json_array_elements($2::json->'flavors') "
                      "WITH ORDINALITY AS x(f, o)"},
            .in_use = "a team queue still points at it",
        },
    [DB_PRIORITY_CLASS] =
        {
            .name = "priority class",
            BY_NAME("priority_classes"),
            .insert = "INSERT INTO priority_classes "
                      "(name, spec, value, is_default) VALUES ($1, $2::json, "
                      "($2::json->>'value')::int, "
                      "($2::json->>'default')::boolean)",
            .update = "UPDATE priority_classes SET spec = $2::json, "
                      "value = ($2::json->>'value')::int, "
                      "is_default = ($2::json->>'default')::boolean, "
                      "version = version + 1, updated_at = now() "
                      "WHERE name = $1",
            .guard_put = "SELECT format('priority class \"%s\" is the "
                         "default; make another class the default first', "
                         "name) FROM priority_classes WHERE name = $1 AND "
                         "is_default AND NOT ($2::json->>'default')::boolean",
            .guard_del = "SELECT format('priority class \"%s\" is the "
                         "default; make another class the default first', "
                         "name) FROM priority_classes p WHERE name = $1 AND "
                         "is_default AND EXISTS (SELECT 1 FROM "
                         "priority_classes q WHERE q.name <> p.name)",
            /* moving the default: the old one stops being it, and its
             * stored spec says so too */
            .before = "UPDATE priority_classes SET is_default = false, "
                      "spec = json_build_object('value', spec->'value', "
                      "'preemption_policy', spec->'preemption_policy', "
                      "'default', false, 'description', spec->'description'), "
                      "version = version + 1, updated_at = now() "
                      "WHERE is_default AND name <> $1 AND "
                      "($2::json->>'default')::boolean",
            .in_use = "jobs still use it",
        },
    [DB_TEAM] =
        {
            .name = "team",
            BY_NAME("teams"),
            SPEC_ONLY("teams"),
            .in_use = "it still has queues",
        },
    [DB_TEAM_QUEUE] =
        {
            .name = "queue",
            .nkeys = 2,
            .get = "SELECT " COLS " FROM team_queues "
                   "WHERE team = $1 AND name = $2",
            .list = "SELECT name, " COLS " FROM team_queues "
                    "WHERE team = $1 AND name > $2 ORDER BY name LIMIT $3::int",
            .lock = "SELECT version, spec::jsonb = $3::jsonb "
                    "FROM team_queues WHERE team = $1 AND name = $2 "
                    "FOR UPDATE",
            .insert = "INSERT INTO team_queues (team, name, spec, "
                      "cluster_queue) VALUES ($1, $2, $3::json, "
                      "$3::json->>'cluster_queue')",
            .update = "UPDATE team_queues SET spec = $3::json, "
                      "cluster_queue = $3::json->>'cluster_queue', "
                      "version = version + 1, updated_at = now() "
                      "WHERE team = $1 AND name = $2",
            .del = "DELETE FROM team_queues WHERE team = $1 AND name = $2",
            .guard_del = ACTIVE_JOBS("team = $1 AND queue = $2"),
            .refs = "SELECT 'cluster_queue', format('cluster queue \"%s\" "
                    "does not exist', $3::json->>'cluster_queue') "
                    "WHERE NOT EXISTS (SELECT 1 FROM cluster_queues "
                    "WHERE name = $3::json->>'cluster_queue')",
            .in_use = "jobs still use it",
        },
    [DB_ACCESS_BINDING] =
        {
            .name = "access binding",
            BY_NAME("access_bindings"),
            SPEC_ONLY("access_bindings"),
            .refs = "SELECT 'team', format('team \"%s\" does not exist', "
                    "$2::json->>'team') "
                    "WHERE $2::json->>'team' IS NOT NULL AND NOT EXISTS "
                    "(SELECT 1 FROM teams WHERE name = $2::json->>'team')",
            .in_use = "",
        },
};

/* A configuration change may let jobs in: wake the admission loop. */
static const char sql_wake[] =
    "SELECT pg_notify('gpugate_admission', 'config')";

const char *db_kind_name(enum db_kind k)
{
  return kinds[k].name;
}

/* {"name", ["team",] spec..., "created_at", "updated_at"}: new reference */
static json_t *object_of(enum db_kind k, const char *team, const char *name,
                         const char *spec, const char *created,
                         const char *updated)
{
  json_t *s = json_loads(spec, 0, NULL);
  json_t *o;

  if (!s)
    return NULL;
  o = json_object();
  json_object_set_new(o, "name", json_string(name));
  if (k == DB_TEAM_QUEUE)
    json_object_set_new(o, "team", json_string(team));
  json_object_update(o, s);
  json_decref(s);
  json_object_set_new(o, "created_at", json_string(created));
  json_object_set_new(o, "updated_at", json_string(updated));
  return o;
}

static int keys_of(enum db_kind k, const char *team, const char *name,
                   const char **params)
{
  if (kinds[k].nkeys == 2) {
    params[0] = team;
    params[1] = name;
    return 2;
  }
  params[0] = name;
  return 1;
}

static enum gg_code not_found(struct gg_err *err, enum db_kind k,
                              const char *name)
{
  return err_fail(err, GG_NOT_FOUND, "The %s \"%s\" was not found.",
                  kinds[k].name, name);
}

enum gg_code db_admin_get(struct db_conn *db, struct gg_err *err,
                          enum db_kind k, const char *team, const char *name,
                          json_t **out, long long *version)
{
  const char *params[3];
  enum gg_code code;
  PGresult *res;
  int n;

  *out = NULL;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  n = keys_of(k, team, name, params);
  res = db_exec(db, kinds[k].get, n, params, &code);
  if (!res)
    return db_fail(err, code);
  if (PQntuples(res) == 0) {
    PQclear(res);
    return not_found(err, k, name);
  }
  *out = object_of(k, team, name, PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 2),
                   PQgetvalue(res, 0, 3));
  if (version)
    *version = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
  PQclear(res);
  return *out ? GG_OK : db_fail(err, GG_INTERNAL);
}

enum gg_code db_admin_list(struct db_conn *db, struct gg_err *err,
                           enum db_kind k, const char *team, const char *after,
                           int limit, json_t **items, bool *more)
{
  const char *params[3];
  char lim[16];
  enum gg_code code;
  PGresult *res;
  int n = 0, i, rows;

  *items = NULL;
  *more = false;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  if (kinds[k].nkeys == 2)
    params[n++] = team;
  params[n++] = after;
  snprintf(lim, sizeof(lim), "%d", limit + 1); /* one more: is there a next? */
  params[n++] = lim;
  res = db_exec(db, kinds[k].list, n, params, &code);
  if (!res)
    return db_fail(err, code);
  rows = PQntuples(res);
  *more = rows > limit;
  *items = json_array();
  for (i = 0; i < rows && i < limit; i++)
    json_array_append_new(
        *items, object_of(k, team, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1),
                          PQgetvalue(res, i, 3), PQgetvalue(res, i, 4)));
  PQclear(res);
  return GG_OK;
}

static bool match_ok(const struct db_if_match *m, bool exists,
                     long long version)
{
  int i;

  if (!m || !m->present)
    return true;
  if (!exists)
    return false;
  if (m->any)
    return true;
  for (i = 0; i < m->n; i++)
    if (m->versions[i] == version)
      return true;
  return false;
}

/* Each row of sql is (field, message) or (message): record them. */
static int report(struct db_conn *db, struct gg_err *err, const char *sql,
                  int n, const char *const *params, enum gg_code as)
{
  PGresult *res = db_err_exec(db, err, sql, n, params);
  int i, rows;

  if (!res)
    return -1;
  rows = PQntuples(res);
  for (i = 0; i < rows; i++) {
    if (PQnfields(res) == 2)
      err_field(err, PQgetvalue(res, i, 0), "%s", PQgetvalue(res, i, 1));
    else
      err_fail(err, as, "The change is not allowed: %s.",
               PQgetvalue(res, i, 0));
  }
  if (rows && PQnfields(res) == 2)
    err_fail(err, as, "The body refers to objects that do not exist.");
  PQclear(res);
  return rows ? -1 : 0;
}

/* Run a statement whose result is not needed; false with the problem
 * recorded on req. */
static bool step(struct db_conn *db, struct gg_err *err, const char *sql, int n,
                 const char *const *params)
{
  PGresult *res = db_err_exec(db, err, sql, n, params);

  PQclear(res);
  return res != NULL;
}

/* Wake the admission loop when something changed, then commit; false
 * with the problem recorded on req (the caller rolls back). */
static bool commit_change(struct db_conn *db, struct gg_err *err, bool changed)
{
  enum gg_code code;

  if (changed && !step(db, err, sql_wake, 0, NULL))
    return false;
  if ((code = db_commit(db)) != GG_OK) {
    db_fail(err, code);
    return false;
  }
  return true;
}

enum gg_code db_admin_put(struct db_conn *db, struct gg_err *err,
                          enum db_kind k, const char *team, const char *name,
                          json_t *spec, const struct db_if_match *m,
                          json_t **out, long long *version, bool *created)
{
  const struct kind *K = &kinds[k];
  const char *params[3];
  char *text = NULL;
  PGresult *res = NULL;
  enum gg_code code = GG_OK;
  bool exists, unchanged = false;
  long long cur = 0;
  int n, i;

  *out = NULL;
  *created = false;
  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  text = json_dumps(spec, GG_JSON_DUMP);
  if (!text)
    return db_fail(err, GG_INTERNAL);
  n = keys_of(k, team, name, params);
  params[n] = text;

  if ((code = db_begin(db)) != GG_OK) {
    db_fail(err, code);
    goto out;
  }
  if (!(res = db_err_exec(db, err, K->lock, n + 1, params)))
    goto fail;
  exists = PQntuples(res) > 0;
  if (exists) {
    cur = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    unchanged = PQgetvalue(res, 0, 1)[0] == 't';
  }
  PQclear(res);
  res = NULL;
  if (!match_ok(m, exists, cur)) {
    err_fail(err, GG_PRECONDITION_FAILED,
             exists ? "The %s \"%s\" has changed since the ETag given in "
                      "If-Match."
                    : "The %s \"%s\" does not exist, so If-Match cannot "
                      "match.",
             K->name, name);
    goto fail;
  }
  if (!unchanged) {
    if (K->refs &&
        report(db, err, K->refs, n + 1, params, GG_UNPROCESSABLE) != 0)
      goto fail;
    if (K->guard_put &&
        report(db, err, K->guard_put, n + 1, params, GG_CONFLICT) != 0)
      goto fail;
    if (K->before && !step(db, err, K->before, n + 1, params))
      goto fail;
    if (!step(db, err, exists ? K->update : K->insert, n + 1, params))
      goto fail;
    for (i = 0; i < 2 && K->after[i]; i++)
      if (!step(db, err, K->after[i], n + 1, params))
        goto fail;
  }
  if (!commit_change(db, err, !unchanged))
    goto fail;
  *created = !exists;
  free(text);
  return db_admin_get(db, err, k, team, name, out, version);
fail:
  db_rollback(db);
out:
  PQclear(res);
  free(text);
  return err->code != GG_OK ? err->code : GG_INTERNAL;
}

enum gg_code db_admin_delete(struct db_conn *db, struct gg_err *err,
                             enum db_kind k, const char *team, const char *name,
                             const struct db_if_match *m)
{
  const struct kind *K = &kinds[k];
  const char *params[3];
  PGresult *res = NULL;
  enum gg_code code;
  long long cur;
  int n;

  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  n = keys_of(k, team, name, params);
  if ((code = db_begin(db)) != GG_OK)
    return db_fail(err, code);
  /* lock takes the spec too; NULL compares as unknown, which is fine */
  params[n] = NULL;
  if (!(res = db_err_exec(db, err, K->lock, n + 1, params)))
    goto fail;
  if (PQntuples(res) == 0) {
    not_found(err, k, name);
    goto fail;
  }
  cur = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
  PQclear(res);
  res = NULL;
  if (!match_ok(m, true, cur)) {
    err_fail(err, GG_PRECONDITION_FAILED,
             "The %s \"%s\" has changed since the ETag given in "
             "If-Match.",
             K->name, name);
    goto fail;
  }
  if (K->guard_del &&
      report(db, err, K->guard_del, n, params, GG_CONFLICT) != 0)
    goto fail;
  res = db_exec(db, K->del, n, params, &code);
  if (!res) {
    if (code == GG_CONFLICT)
      err_fail(err, GG_CONFLICT, "The %s \"%s\" cannot be deleted: %s.",
               K->name, name, K->in_use);
    else
      db_fail(err, code);
    goto fail;
  }
  PQclear(res);
  res = NULL;
  if (!commit_change(db, err, true))
    goto fail;
  return GG_OK;
fail:
  PQclear(res);
  db_rollback(db);
  return err->code != GG_OK ? err->code : GG_INTERNAL;
}
