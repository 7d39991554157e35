/*
 * db.h — the PostgreSQL layer: connection pool, migrations, the one
 * SQLSTATE → result-code mapping. All SQL lives under db/; a PGresult never
 * leaves it. A db_conn is used by one thread at a time.
 */
#ifndef GPUGATE_DB_H
#define GPUGATE_DB_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>

#include "lib/err.h"

struct db_pool;

#define DB_MAX_PARAMS 24
#define DB_PREPARED_MAX 128

struct db_conn {
  PGconn *pg;                            /* NULL until connected */
  int index;                             /* slot in the pool */
  const char *prepared[DB_PREPARED_MAX]; /* SQL prepared as "gg<i>" */
  int n_prepared;
  long long prepared_since; /* monotonic s when the cache was started */
};

/*
 * A pool of up to size connections to url. Connections are opened lazily
 * and re-opened after failure, so the pool survives PostgreSQL restarts.
 * Returns NULL on allocation failure only.
 */
struct db_pool *db_pool_new(const char *url, int size);
void db_pool_free(struct db_pool *p); /* accepts NULL */

/*
 * Check a connection out, waiting at most wait_ms for a free slot. Returns
 * NULL when none is free in time or PostgreSQL cannot be reached (logged).
 * Thread-safe.
 */
struct db_conn *db_acquire(struct db_pool *p, int wait_ms);

/* Whether jobs run on Cloud Batch (dispatch through the outbox) or not;
 * set once at start-up. */
void db_pool_set_batch(struct db_pool *p, bool batch);
bool db_pool_batch(const struct db_pool *p);

/* Return c to the pool; a broken connection is closed. Accepts NULL. */
void db_release(struct db_pool *p, struct db_conn *c);

/* Open a standalone connection (CLI commands, leader lock). NULL on error,
 * with the reason in err. */
PGconn *db_connect(const char *url, char *err, size_t errlen);

/*
 * Run sql with text parameters. Returns the result (caller PQclear()s) when
 * the command succeeded, else NULL with *code set from the SQLSTATE
 * (connection loss → GG_UNAVAILABLE) and the server message logged. For
 * use inside db/ only.
 */
PGresult *db_exec(struct db_conn *c, const char *sql, int nparams,
                  const char *const *params, enum gg_code *code);

/* One statement of a pipeline: static SQL and its text parameters. */
struct db_stmt {
  const char *sql;
  int nparams;
  const char *const *params;
};

#define DB_PIPELINE_MAX 4

/*
 * Run n (1..DB_PIPELINE_MAX) statements in one round trip (libpq's
 * pipeline mode; "BEGIN" and "COMMIT" may be among them). On success
 * results[i] holds each result (caller PQclear()s). Otherwise returns the
 * code of the first failure (its message logged; later statements were
 * skipped by the server) with every results[i] NULL. For db/ only.
 */
enum gg_code db_pipeline(struct db_conn *c, int n, const struct db_stmt *stmts,
                         PGresult **results);

/*
 * For the db functions behind request handlers: record in err the one
 * client-safe failure of a database step (GG_UNAVAILABLE unreachable,
 * GG_CONFLICT a serialization conflict, else GG_INTERNAL) and return its
 * code.
 */
enum gg_code db_fail(struct gg_err *err, enum gg_code code);

/*
 * db_exec() for a request: the result, or NULL with the failure recorded in
 * err through db_fail() (c NULL: the database is unreachable). Caller
 * PQclear()s.
 */
PGresult *db_err_exec(struct db_conn *c, struct gg_err *err, const char *sql,
                      int nparams, const char *const *params);

/*
 * For background loops: the result, or NULL with the server's message in
 * err. Caller PQclear()s.
 */
PGresult *db_query(struct db_conn *c, const char *sql, int nparams,
                   const char *const *params, char *err, size_t errlen);

/*
 * db_query(), planned for these parameters on every call instead of
 * prepared once: for the statements that join jobs to arrays of ids (the
 * admission leader's batched writes). A prepared statement's generic plan
 * is kept until the table is analyzed again; made while jobs was nearly
 * empty (a new deployment, a bench), it hashed every active job on each
 * cycle. Planning each call sees the arrays' lengths and the table's
 * current size; it costs a parse and a plan per cycle, not per job.
 */
PGresult *db_query_planned(struct db_conn *c, const char *sql, int nparams,
                           const char *const *params, char *err, size_t errlen);

/* db_query() of a statement that returns one row whose first column is a
 * count or another whole number: that number (0 when the column is NULL),
 * or -1 with the server's message in err. */
long db_query_long(struct db_conn *c, const char *sql, int nparams,
                   const char *const *params, char *err, size_t errlen);

/* db_query() and discard the result: *rows (may be NULL) gets the rows
 * returned or affected. Returns 0 or -1. */
int db_run(struct db_conn *c, const char *sql, int nparams,
           const char *const *params, int *rows, char *err, size_t errlen);
/* db_run() of db_query_planned() */
int db_run_planned(struct db_conn *c, const char *sql, int nparams,
                   const char *const *params, int *rows, char *err,
                   size_t errlen);

/* Map a failed result's SQLSTATE to a result code. */
enum gg_code db_code_of(const PGresult *res, const PGconn *pg);

/* BEGIN / COMMIT / ROLLBACK; COMMIT failures are reported like db_exec. */
enum gg_code db_begin(struct db_conn *c);
enum gg_code db_commit(struct db_conn *c);
void db_rollback(struct db_conn *c);

/*
 * Apply pending migrations (embedded db/migrations/NNNN_*.sql) in order,
 * each in its own transaction, under an advisory lock so concurrent
 * replicas serialise. Returns 0 or -1 with err filled.
 */
int db_migrate(PGconn *pg, char *err, size_t errlen);

/* Number of embedded migrations, and of those applied (-1 on error). */
int db_migrations_expected(void);
int db_migrations_applied(struct db_conn *c);

#endif
