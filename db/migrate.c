/*
 * migrate.c — schema migrations: the embedded db/migrations/NNNN_name.sql
 * files, applied in order, each in its own transaction, recorded in
 * schema_migrations. A session advisory lock serialises replicas that
 * start at the same time; the second one finds the work done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "lib/embedded.h"
#include "lib/log.h"

#define MIGRATION_PREFIX "db/migrations/"
/* arbitrary constant: "gpugate migrations" */
#define MIGRATION_LOCK "7301001"

static const char sql_create[] =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version int PRIMARY KEY,"
    " name text NOT NULL,"
    " applied_at timestamptz NOT NULL DEFAULT now())";

static int is_migration(const struct embedded_file *f)
{
  return strncmp(f->path, MIGRATION_PREFIX, strlen(MIGRATION_PREFIX)) == 0;
}

int db_migrations_expected(void)
{
  size_t i;
  int n = 0;

  for (i = 0; i < embedded_nfiles; i++)
    n += is_migration(&embedded_files[i]);
  return n;
}

int db_migrations_applied(struct db_conn *c)
{
  enum gg_code code;
  PGresult *res =
      db_exec(c, "SELECT count(*) FROM schema_migrations", 0, NULL, &code);
  int n;

  if (!res)
    return -1;
  n = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10);
  PQclear(res);
  return n;
}

static int simple(PGconn *pg, const char *sql, char *err, size_t errlen)
{
  PGresult *res = PQexec(pg, sql);
  ExecStatusType st = PQresultStatus(res);
  int rc = 0;

  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    snprintf(err, errlen, "%s", PQresultErrorMessage(res));
    err[strcspn(err, "\n")] = '\0';
    rc = -1;
  }
  PQclear(res);
  return rc;
}

/* Parse "db/migrations/0007_name.sql" → 7; -1 when malformed. */
static long version_of(const char *path, const char **name)
{
  const char *base = path + strlen(MIGRATION_PREFIX);
  char *end;
  long v = strtol(base, &end, 10);

  if (end == base || *end != '_')
    return -1;
  *name = end + 1;
  return v;
}

static int apply_one(PGconn *pg, const struct embedded_file *f, char *err,
                     size_t errlen)
{
  const char *name;
  long v = version_of(f->path, &name);
  char vbuf[24];
  const char *params[2];
  PGresult *res;
  int applied;

  if (v < 0) {
    snprintf(err, errlen, "malformed migration file name %s", f->path);
    return -1;
  }
  snprintf(vbuf, sizeof(vbuf), "%ld", v);
  params[0] = vbuf;
  params[1] = name;
  res = PQexecParams(pg, "SELECT 1 FROM schema_migrations WHERE version = $1",
                     1, NULL, params, NULL, NULL, 0);
  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    snprintf(err, errlen, "%s", PQresultErrorMessage(res));
    PQclear(res);
    return -1;
  }
  applied = PQntuples(res) > 0;
  PQclear(res);
  if (applied)
    return 0;

  if (simple(pg, "BEGIN", err, errlen))
    return -1;
  if (simple(pg, (const char *)f->data, err, errlen))
    goto fail;
  res = PQexecParams(pg,
                     "INSERT INTO schema_migrations (version, name) "
                     "VALUES ($1, $2)",
                     2, NULL, params, NULL, NULL, 0);
  if (PQresultStatus(res) != PGRES_COMMAND_OK) {
    snprintf(err, errlen, "%s", PQresultErrorMessage(res));
    PQclear(res);
    goto fail;
  }
  PQclear(res);
  if (simple(pg, "COMMIT", err, errlen))
    goto fail;
  log_msg(LOG_INFO, "applied migration %s", f->path);
  return 0;
fail:
  PQclear(PQexec(pg, "ROLLBACK"));
  err[strcspn(err, "\n")] = '\0';
  return -1;
}

/* The embedded migrations' versions rise strictly: two files with one
 * number (branches merged) would otherwise apply only the first. */
static int versions_rise(char *err, size_t errlen)
{
  const char *prev = NULL, *name;
  long last = -1, v;
  size_t i;

  for (i = 0; i < embedded_nfiles; i++) {
    if (!is_migration(&embedded_files[i]))
      continue;
    v = version_of(embedded_files[i].path, &name);
    if (v < 0) {
      snprintf(err, errlen, "malformed migration file name %s",
               embedded_files[i].path);
      return -1;
    }
    if (v <= last) {
      snprintf(err, errlen, "migrations %s and %s share version %ld", prev,
               embedded_files[i].path, v);
      return -1;
    }
    last = v;
    prev = embedded_files[i].path;
  }
  return 0;
}

int db_migrate(PGconn *pg, char *err, size_t errlen)
{
  size_t i;
  int rc = -1;

  if (versions_rise(err, errlen))
    return -1;
  if (simple(pg, "SELECT pg_advisory_lock(" MIGRATION_LOCK ")", err, errlen))
    return -1;
  /* concurrent CREATE TABLE IF NOT EXISTS can still collide: under the lock */
  if (simple(pg, sql_create, err, errlen))
    goto out;
  /* the embed tool received the files sorted, so the table is in order */
  for (i = 0; i < embedded_nfiles; i++)
    if (is_migration(&embedded_files[i]) &&
        apply_one(pg, &embedded_files[i], err, errlen))
      goto out;
  rc = 0;
out : {
  char ignore[64];
  simple(pg, "SELECT pg_advisory_unlock(" MIGRATION_LOCK ")", ignore,
         sizeof(ignore));
}
  return rc;
}
