/*
 * pool.c — a fixed set of PostgreSQL connections shared by the HTTP
 * workers. A worker checks one out per request; a connection found broken
 * is closed and re-opened on its next checkout, so gpugate answers 503
 * while PostgreSQL is away and recovers by itself when it returns.
 */
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db/db.h"
#include "lib/log.h"

struct db_pool {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  char *url;
  int size;
  struct db_conn *conns;
  bool *busy;
  bool batch;
};

/* Server notices ("relation already exists, skipping") are debug noise. */
static void on_notice(void *arg, const char *message)
{
  (void)arg;
  if (log_enabled(LOG_DEBUG)) {
    json_t *f = json_pack("{s:s}", "notice", message);
    log_json(LOG_DEBUG, "postgresql notice", f);
    json_decref(f);
  }
}

PGconn *db_connect(const char *url, char *err, size_t errlen)
{
  /* expand_dbname lets url be a URI or a conninfo string; the explicit
   * keywords bound how long a dead server can hold a worker. */
  const char *const keys[] = {"dbname",           "connect_timeout",
                              "keepalives_idle",  "keepalives_interval",
                              "keepalives_count", "options",
                              "application_name", NULL};
  const char *const vals[] = {
      url, "3", "10", "5", "2", "-c statement_timeout=30000", "gpugate", NULL};
  PGconn *pg = PQconnectdbParams(keys, vals, 1);

  if (!pg || PQstatus(pg) != CONNECTION_OK) {
    if (err && errlen) {
      const char *m = pg ? PQerrorMessage(pg) : "out of memory";
      size_t n = strcspn(m, "\n");
      snprintf(err, errlen, "%.*s", (int)(n > 200 ? 200 : n), m);
    }
    PQfinish(pg);
    return NULL;
  }
  PQsetNoticeProcessor(pg, on_notice, NULL);
  return pg;
}

struct db_pool *db_pool_new(const char *url, int size)
{
  struct db_pool *p = calloc(1, sizeof(*p));
  int i;

  if (!p)
    return NULL;
  p->url = strdup(url);
  p->conns = calloc((size_t)size, sizeof(*p->conns));
  p->busy = calloc((size_t)size, sizeof(*p->busy));
  if (!p->url || !p->conns || !p->busy) {
    db_pool_free(p);
    return NULL;
  }
  p->size = size;
  for (i = 0; i < size; i++)
    p->conns[i].index = i;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->cond, NULL);
  return p;
}

void db_pool_set_batch(struct db_pool *p, bool batch)
{
  p->batch = batch;
}

bool db_pool_batch(const struct db_pool *p)
{
  return p && p->batch;
}

void db_pool_free(struct db_pool *p)
{
  int i;

  if (!p)
    return;
  if (p->conns) {
    for (i = 0; i < p->size; i++)
      PQfinish(p->conns[i].pg);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
  }
  free(p->conns);
  free(p->busy);
  free(p->url);
  free(p);
}

struct db_conn *db_acquire(struct db_pool *p, int wait_ms)
{
  struct timespec deadline;
  struct db_conn *c = NULL;
  char err[256];
  int i;

  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += wait_ms / 1000;
  deadline.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&p->lock);
  for (;;) {
    /* prefer a slot that is already connected */
    for (i = 0; i < p->size && !c; i++)
      if (!p->busy[i] && p->conns[i].pg)
        c = &p->conns[i];
    for (i = 0; i < p->size && !c; i++)
      if (!p->busy[i])
        c = &p->conns[i];
    if (c)
      break;
    if (pthread_cond_timedwait(&p->cond, &p->lock, &deadline) == ETIMEDOUT)
      break;
  }
  if (c)
    p->busy[c->index] = true;
  pthread_mutex_unlock(&p->lock);
  if (!c) {
    log_msg(LOG_WARN, "database pool exhausted after %d ms", wait_ms);
    return NULL;
  }
  /* an idle connection whose server went away has the close waiting on
   * its socket: read it now rather than fail the request's first query */
  if (c->pg && (!PQconsumeInput(c->pg) || PQstatus(c->pg) != CONNECTION_OK)) {
    PQfinish(c->pg);
    c->pg = NULL;
  }
  if (!c->pg) {
    c->n_prepared = 0;
    c->pg = db_connect(p->url, err, sizeof(err));
    if (!c->pg) {
      log_msg(LOG_WARN, "database unreachable: %s", err);
      db_release(p, c);
      return NULL;
    }
  }
  return c;
}

void db_release(struct db_pool *p, struct db_conn *c)
{
  if (!c)
    return;
  if (c->pg && (PQstatus(c->pg) != CONNECTION_OK ||
                PQtransactionStatus(c->pg) != PQTRANS_IDLE)) {
    /* a request that left a transaction open or lost the server */
    PQfinish(c->pg);
    c->pg = NULL;
    c->n_prepared = 0;
  }
  pthread_mutex_lock(&p->lock);
  p->busy[c->index] = false;
  pthread_cond_signal(&p->cond);
  pthread_mutex_unlock(&p->lock);
}

enum gg_code db_code_of(const PGresult *res, const PGconn *pg)
{
  const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

  if (pg && PQstatus(pg) != CONNECTION_OK)
    return GG_UNAVAILABLE;
  if (!state)
    return GG_UNAVAILABLE; /* no server answer at all */
  if (!strcmp(state, "23505"))
    return GG_CONFLICT; /* unique_violation */
  if (!strcmp(state, "23503"))
    return GG_CONFLICT; /* foreign_key_violation: still referenced */
  if (!strcmp(state, "40001") || !strcmp(state, "40P01"))
    return GG_CONFLICT; /* serialization failure, deadlock */
  if (!strncmp(state, "22", 2) || !strcmp(state, "23514"))
    return GG_UNPROCESSABLE; /* data exception, check violation */
  if (!strncmp(state, "08", 2) || !strncmp(state, "57P", 3) ||
      !strcmp(state, "53300") || !strcmp(state, "57014"))
    return GG_UNAVAILABLE; /* connection, shutdown, too many, cancel */
  return GG_INTERNAL;
}

/*
 * Every parameter is text: statements cast where they need another type,
 * and a parameter a statement does not use needs no type inference.
 *
 * Statements are prepared once per connection, keyed by the address of
 * their static SQL text (all SQL in db/ is static), so repeated calls skip
 * parsing and planning. The cache is dropped with the connection, and
 * every REPLAN_S on an idle connection: PostgreSQL keeps a statement's
 * generic plan until the table is next analyzed, and a plan made while
 * `jobs` was nearly empty (a new deployment, a bench) reads a whole team's
 * jobs to find one by id once the table has grown. Planning again sees the
 * table as it is now (its current size even before autovacuum analyzes).
 */
#define REPLAN_S 30

static void replan_if_due(struct db_conn *c)
{
  struct timespec ts;
  long long now;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  now = (long long)ts.tv_sec;
  if (c->n_prepared == 0 || now - c->prepared_since < REPLAN_S) {
    if (c->n_prepared == 0)
      c->prepared_since = now;
    return;
  }
  if (PQtransactionStatus(c->pg) != PQTRANS_IDLE)
    return;
  PQclear(PQexec(c->pg, "DEALLOCATE ALL"));
  c->n_prepared = 0;
  c->prepared_since = now;
}

static const Oid text_oids[DB_MAX_PARAMS] = {25, 25, 25, 25, 25, 25, 25, 25,
                                             25, 25, 25, 25, 25, 25, 25, 25,
                                             25, 25, 25, 25, 25, 25, 25, 25};

/*
 * The name sql is prepared under on c ("gg<i>"), preparing it now if
 * needed. Returns 1 with name filled; 0 when the cache is full (run the
 * text); -1 when PREPARE failed, with its result in *err (caller
 * PQclear()s).
 */
static int prepared_name(struct db_conn *c, const char *sql, int nparams,
                         char name[16], PGresult **err)
{
  int i;

  *err = NULL;
  for (i = 0; i < c->n_prepared; i++)
    if (c->prepared[i] == sql)
      break;
  if (i == c->n_prepared) {
    PGresult *res;
    if (i == DB_PREPARED_MAX)
      return 0;
    snprintf(name, 16, "gg%d", i);
    res = PQprepare(c->pg, name, sql, nparams, text_oids);
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
      *err = res;
      return -1;
    }
    PQclear(res);
    c->prepared[c->n_prepared++] = sql;
  }
  snprintf(name, 16, "gg%d", i);
  return 1;
}

static PGresult *execute(struct db_conn *c, const char *sql, int nparams,
                         const char *const *params)
{
  PGresult *err;
  char name[16];
  int rc;

  if (nparams > DB_MAX_PARAMS)
    return NULL;
  replan_if_due(c);
  rc = prepared_name(c, sql, nparams, name, &err);
  if (rc < 0)
    return err; /* the error, reported like any other */
  if (rc == 0)
    return PQexecParams(c->pg, sql, nparams, text_oids, params, NULL, NULL, 0);
  return PQexecPrepared(c->pg, name, nparams, params, NULL, NULL, 0);
}

/* The code of a failed result (NULL: no answer), with the server's
 * message logged; clears res. */
static enum gg_code failed(struct db_conn *c, PGresult *res)
{
  enum gg_code code = db_code_of(res, c->pg);
  const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
  const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY)
                        : PQerrorMessage(c->pg);
  json_t *f = json_pack("{s:s, s:s}", "sqlstate", state ? state : "", "error",
                        msg ? msg : "");

  log_json(code == GG_CONFLICT ? LOG_DEBUG : LOG_WARN, "sql failed", f);
  json_decref(f);
  PQclear(res);
  return code;
}

/* Read one pipelined statement's result and the NULL that ends it. */
static PGresult *next_result(PGconn *pg)
{
  PGresult *res = PQgetResult(pg), *extra;

  if (res)
    while ((extra = PQgetResult(pg)) != NULL)
      PQclear(extra);
  return res;
}

enum gg_code db_pipeline(struct db_conn *c, int n, const struct db_stmt *stmts,
                         PGresult **results)
{
  enum gg_code code = GG_OK;
  char names[DB_PIPELINE_MAX][16];
  PGresult *res;
  int i;

  for (i = 0; i < n; i++)
    results[i] = NULL;
  if (n < 1 || n > DB_PIPELINE_MAX)
    return GG_INTERNAL;
  replan_if_due(c);
  for (i = 0; i < n; i++) {
    int rc;
    if (stmts[i].nparams > DB_MAX_PARAMS)
      return GG_INTERNAL;
    rc = prepared_name(c, stmts[i].sql, stmts[i].nparams, names[i], &res);
    if (rc < 0)
      return failed(c, res);
    if (rc == 0)
      return GG_INTERNAL; /* no room to prepare: never with gpugate's SQL */
  }
  if (!PQenterPipelineMode(c->pg))
    return failed(c, NULL);
  for (i = 0; i < n; i++)
    if (!PQsendQueryPrepared(c->pg, names[i], stmts[i].nparams, stmts[i].params,
                             NULL, NULL, 0))
      break;
  if (i < n || !PQpipelineSync(c->pg)) {
    code = failed(c, NULL);
    PQfinish(c->pg); /* a half-sent pipeline: the connection is lost */
    c->pg = NULL;
    c->n_prepared = 0;
    return code;
  }
  for (i = 0; i < n; i++) {
    ExecStatusType st;
    res = next_result(c->pg);
    st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
      results[i] = res;
    else if (code == GG_OK && st != PGRES_PIPELINE_ABORTED)
      code = failed(c, res); /* the first failure; those after it are
                                skipped by the server */
    else
      PQclear(res);
    if (!res)
      break;
  }
  res = PQgetResult(c->pg); /* PGRES_PIPELINE_SYNC */
  while (res && PQresultStatus(res) != PGRES_PIPELINE_SYNC) {
    PQclear(res);
    res = PQgetResult(c->pg);
  }
  PQclear(res);
  if (!PQexitPipelineMode(c->pg)) {
    /* results still unread: the connection cannot be trusted again */
    PQfinish(c->pg);
    c->pg = NULL;
    c->n_prepared = 0;
    if (code == GG_OK)
      code = GG_UNAVAILABLE;
  }
  if (code != GG_OK)
    for (i = 0; i < n; i++) {
      PQclear(results[i]);
      results[i] = NULL;
    }
  return code;
}

/* res if it succeeded (*code GG_OK), else NULL with *code set */
static PGresult *succeeded(struct db_conn *c, PGresult *res, enum gg_code *code)
{
  ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;

  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
    *code = GG_OK;
    return res;
  }
  *code = failed(c, res);
  return NULL;
}

PGresult *db_exec(struct db_conn *c, const char *sql, int nparams,
                  const char *const *params, enum gg_code *code)
{
  return succeeded(c, execute(c, sql, nparams, params), code);
}

enum gg_code db_fail(struct gg_err *err, enum gg_code code)
{
  if (code == GG_UNAVAILABLE)
    return err_fail(err, code, "The database is not reachable.");
  if (code == GG_CONFLICT)
    return err_fail(err, code,
                    "A concurrent change conflicted; retry the request.");
  return err_fail(err, GG_INTERNAL, "The request could not be completed.");
}

PGresult *db_err_exec(struct db_conn *c, struct gg_err *err, const char *sql,
                      int nparams, const char *const *params)
{
  enum gg_code code;
  PGresult *res;

  if (!c) {
    db_fail(err, GG_UNAVAILABLE);
    return NULL;
  }
  res = db_exec(c, sql, nparams, params, &code);
  if (!res)
    db_fail(err, code);
  return res;
}

PGresult *db_query(struct db_conn *c, const char *sql, int nparams,
                   const char *const *params, char *err, size_t errlen)
{
  enum gg_code code;
  PGresult *res = db_exec(c, sql, nparams, params, &code);

  if (!res)
    snprintf(err, errlen, "%s",
             c->pg ? PQerrorMessage(c->pg) : "no database connection");
  return res;
}

PGresult *db_query_planned(struct db_conn *c, const char *sql, int nparams,
                           const char *const *params, char *err, size_t errlen)
{
  enum gg_code code;
  PGresult *res = NULL;

  if (nparams <= DB_MAX_PARAMS && c->pg)
    res = PQexecParams(c->pg, sql, nparams, text_oids, params, NULL, NULL, 0);
  if (!(res = succeeded(c, res, &code)))
    snprintf(err, errlen, "%s",
             c->pg ? PQerrorMessage(c->pg) : "no database connection");
  return res;
}

long db_query_long(struct db_conn *c, const char *sql, int nparams,
                   const char *const *params, char *err, size_t errlen)
{
  PGresult *res = db_query(c, sql, nparams, params, err, errlen);
  long n;

  if (!res)
    return -1;
  if (PQntuples(res) < 1 || PQnfields(res) < 1) {
    snprintf(err, errlen, "expected one row, got %d", PQntuples(res));
    PQclear(res);
    return -1;
  }
  n = strtol(PQgetvalue(res, 0, 0), NULL, 10);
  PQclear(res);
  return n;
}

/* Discard a db_query*() result: *rows (may be NULL) gets the rows it
 * returned or affected. */
static int ran(PGresult *res, int *rows)
{
  if (!res)
    return -1;
  if (rows)
    *rows = PQresultStatus(res) == PGRES_TUPLES_OK
                ? PQntuples(res)
                : (int)strtol(PQcmdTuples(res), NULL, 10);
  PQclear(res);
  return 0;
}

int db_run(struct db_conn *c, const char *sql, int nparams,
           const char *const *params, int *rows, char *err, size_t errlen)
{
  return ran(db_query(c, sql, nparams, params, err, errlen), rows);
}

int db_run_planned(struct db_conn *c, const char *sql, int nparams,
                   const char *const *params, int *rows, char *err,
                   size_t errlen)
{
  return ran(db_query_planned(c, sql, nparams, params, err, errlen), rows);
}

static enum gg_code run_simple(struct db_conn *c, const char *sql)
{
  enum gg_code code;
  PGresult *res = db_exec(c, sql, 0, NULL, &code);

  PQclear(res);
  return code;
}

enum gg_code db_begin(struct db_conn *c)
{
  return run_simple(c, "BEGIN");
}

enum gg_code db_commit(struct db_conn *c)
{
  return run_simple(c, "COMMIT");
}

void db_rollback(struct db_conn *c)
{
  if (c->pg && PQtransactionStatus(c->pg) != PQTRANS_IDLE)
    PQclear(PQexec(c->pg, "ROLLBACK"));
}
