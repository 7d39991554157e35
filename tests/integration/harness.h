/*
 * harness.h — black-box integration tests: the real build/gpugate on a free
 * port against a throwaway PostgreSQL cluster, driven over HTTP by libcurl.
 *
 * tests/run.sh starts one cluster for the whole run and exports its URI as
 * GPUGATE_TEST_PG_URI; each suite creates its own database in it. Tests
 * that must stop PostgreSQL start a private cluster with h_pg_start().
 *
 * Helpers that "fail the test" do so with Check's ck_assert, so they run
 * only inside a test (or its fixture), not in a watcher thread.
 */
#ifndef GPUGATE_TEST_HARNESS_H
#define GPUGATE_TEST_HARNESS_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define H_SECRET_FILE "tests/fixtures/keys/hs256.secret"

struct h_server {
  pid_t pid;
  unsigned short port;
  char dir[256]; /* temp dir: port file, log */
  char log[300]; /* the server's stderr */
  char db_url[512];
};

struct h_resp {
  long status;
  char *body; /* owned, NUL-terminated */
  size_t body_len;
  json_t *json;       /* owned; NULL unless the body parsed as JSON */
  char headers[8192]; /* raw response headers */
};

/* Create a fresh database named name in the run's cluster; writes its URI. */
int h_db_create(const char *name, char *url, size_t urllen);

/* The reference architecture of SPEC §2, as `gpugate apply` takes it. */
#define H_REFERENCE "deploy/examples/reference-architecture.json"

/*
 * h_db_create(name), then `gpugate apply config` on it; fails the test
 * (Check) with gpugate's output when either fails. Writes the URI.
 */
void h_db_apply(const char *name, const char *config, char *url, size_t urllen);

/*
 * Start build/gpugate serve on port 0 against db_url with the test JWT
 * configuration, plus extra "NAME=value" environment entries (NULL-ended,
 * may be NULL; a GPUGATE_LISTEN among them replaces 127.0.0.1:0, and the
 * h_request() helpers then reach the server only if it also listens
 * there). Waits until its port file is written. Returns 0 or -1.
 */
int h_server_start(struct h_server *s, const char *db_url,
                   const char *const *extra_env);

/*
 * Start build/batch_emulator on port 0 (it exits with the test process)
 * with extra "EMU_...=value" entries (NULL-ended, may be NULL). Stop it
 * with h_server_stop(). Returns 0 or -1.
 */
int h_emulator_start(struct h_server *emu, const char *const *extra_env);

/*
 * Start build/bigquery_emulator on port 0 (it exits with the test
 * process) with extra "BQ_EMU_...=value" entries (NULL-ended, may be
 * NULL). Stop it with h_server_stop(). Returns 0 or -1.
 */
int h_bq_emulator_start(struct h_server *emu, const char *const *extra_env);

/* build/logging_emulator (the Cloud Logging emulator) the same way, with
 * its extra environment. Returns 0 or -1. */
int h_log_emulator_start(struct h_server *emu, const char *const *extra_env);

/*
 * The environment entries that point gpugate at the emulator: backend gcp,
 * project test-project, its endpoint and its metadata server.
 */
#define H_GCP_ENV 4
void h_gcp_env(const struct h_server *emu, char store[H_GCP_ENV][128]);

/* SIGTERM, wait, SIGKILL if needed. Keeps the log on disk. */
void h_server_stop(struct h_server *s);

/*
 * Send sig (e.g. SIGKILL) to the server and wait until the process is gone
 * (or a zombie, when the caller is not its parent, as in a forked Check
 * test). Returns 0 when it died within 10 s, -1 otherwise. The process is
 * reaped and s->pid cleared when the caller is its parent; otherwise the
 * parent's later h_server_stop() reaps it at once.
 */
int h_server_kill(struct h_server *s, int sig);

/*
 * One HTTP request. token may be NULL (no Authorization), body may be NULL.
 * headers: extra "Name: value" lines, NULL-ended, may be NULL. A JSON body
 * is sent with Content-Type: application/json unless headers set one.
 * Returns 0 when a response arrived (any status), -1 otherwise.
 */
int h_request(const struct h_server *s, const char *method, const char *path,
              const char *token, const char *body, const char *const *headers,
              struct h_resp *out);

/*
 * h_request with a body of len bytes that need not be text (a large NDJSON
 * file, a gzip stream): sent as it is, with the headers given (a
 * Content-Type among them, else application/json) and a 120 s limit.
 * Returns 0 when a response arrived (any status), -1 otherwise.
 */
int h_request_raw(const struct h_server *s, const char *method,
                  const char *path, const char *token, const void *body,
                  size_t len, const char *const *headers, struct h_resp *out);

/* The value of a response header (case-insensitive) into buf, or NULL. */
const char *h_header(const struct h_resp *r, const char *name, char *buf,
                     size_t buflen);

void h_resp_free(struct h_resp *r);

/* A valid HS256 token for team/role from the test secret (malloc'd); team
 * NULL: no team claim (admin, finance, metrics). */
char *h_token(const char *team, const char *role, long ttl_s);

/*
 * Run argv (argv[0] a path) with the test process's environment, less the
 * GPUGATE_ variables other than GPUGATE_TEST_, plus extra_env ("NAME=value",
 * NULL-ended, may be NULL), and wait up to timeout_ms (-1: no limit).
 * stdout and stderr together are appended to the file log, which is kept
 * (NULL: a temp file, removed), and copied to out (at most outlen - 1
 * bytes, NUL-terminated; may be NULL). Returns the exit status (128 +
 * signal when killed), -1 when it could not be started, -2 when it still
 * ran at the timeout (it is left running).
 */
int h_run(const char *const *argv, const char *const *extra_env,
          long timeout_ms, const char *log, char *out, size_t outlen);

/*
 * Run build/gpugate with args against db_url (test JWT env set); stdout and
 * stderr go to out (may be NULL). Returns the exit status, -1 on failure.
 */
int h_gpugate(const char *db_url, const char *const *args, char *out,
              size_t outlen);

/* A private PostgreSQL cluster (tests/pg.sh) in dir; writes its URI. */
int h_pg_start(const char *dir, char *uri, size_t urilen);
int h_pg_stop(const char *dir);

/* True when the response is problem+json naming field (NULL: any). */
bool h_is_problem(const struct h_resp *r, long status, const char *field);

/*
 * One request with no extra headers that must answer want; fails the test
 * (Check) on no response or another status. Returns the JSON body (new
 * reference; NULL when the body is empty or not JSON).
 */
json_t *h_call(const struct h_server *s, const char *method, const char *path,
               const char *token, const char *body, long want);

/*
 * GET an emulator control endpoint (/emulator/jobs, /emulator/requests,
 * ...); fails the test unless it answers 200 with JSON. Returns a new
 * reference.
 */
json_t *h_emu_get(const struct h_server *emu, const char *path);

/*
 * POST a typical job of the reference architecture (2 tasks × (2 CPU,
 * 10 GiB, 2 GPU), python train.py) named name to team's queue with
 * priority class klass through s; fails the test unless it answers 201.
 * Its id goes to id (may be NULL).
 */
void h_submit_typical(const struct h_server *s, const char *team,
                      const char *token, const char *queue, const char *name,
                      const char *klass, char id[32]);

/* ---- small helpers shared by the suites ---- */

/* Where servers, emulators and providers keep their logs and port files:
 * $GPUGATE_TEST_TMPDIR (tests/run.sh points it into its work dir, removed
 * when the run passes, kept when it fails), else /tmp. */
const char *h_tmp_base(void);

/* A growing, NUL-terminated buffer of what a transfer sent (data owned:
 * free() it; NULL until the first byte). */
struct h_buf {
  char *data;
  size_t len, cap;
};

/* A libcurl CURLOPT_WRITEFUNCTION appending to the struct h_buf given as
 * CURLOPT_WRITEDATA; 0 (the transfer fails) when out of memory. */
size_t h_curl_write(char *p, size_t size, size_t n, void *ud);

void h_sleep_ms(long ms);

/* CLOCK_MONOTONIC in milliseconds. */
long long h_now_ms(void);

/* xorshift32: the next value of the sequence seeded in *s (updated). */
unsigned h_next_rand(unsigned *s);

/* The string member k of o (borrowed), or NULL. */
const char *h_str(const json_t *o, const char *k);

/* The whole file at path (malloc'd, NUL-terminated) and its length in *len
 * (may be NULL); NULL when it cannot be read. */
char *h_slurp(const char *path, size_t *len);

/*
 * A new file /tmp/gpugate-<what>-XXXXXX holding text; its path goes to
 * path (the caller unlinks it). Fails the test (Check) when it cannot.
 */
void h_write_temp(const char *what, const char *text, char *path,
                  size_t pathlen);

/* The value of the exact sample line "series value" in a /metrics text,
 * -1 if absent. */
double h_sample(const char *text, const char *series);

/* gpugate_admission_state_drift_total as s's /metrics shows it (-1:
 * absent). */
long h_drift_total(const struct h_server *s);

/* Occurrences of needle in the log of s (0 when there is none yet). */
int h_log_count(const struct h_server *s, const char *needle);

/*
 * A connection to url with JIT off (the planner overestimates the JSON set
 * functions of h_sql_quota_violations and would JIT-compile every check).
 * The caller checks PQstatus() and PQfinish()es it. Safe from any thread.
 */
PGconn *h_db_connect(const char *url);

/* The first column of the first row of sql as an integer; fails the test
 * (Check) when the query fails. */
long long h_db_int(PGconn *pg, const char *sql);

/* A one-line summary "STATE=n ..." of the jobs table into out. */
void h_db_state_summary(PGconn *pg, char *out, size_t outlen);

/*
 * Run h_sql_quota_violations: as the statement prepared under the name
 * stmt, or as text when stmt is NULL. Returns the number of violations
 * (-1: the query failed); the first one, or the error, goes to first.
 * Does not touch Check: safe from a watcher thread.
 */
int h_db_violations(PGconn *pg, const char *stmt, char *first, size_t len);

/*
 * SQL that returns one text row per violated quota invariant (per cluster
 * queue and flavor: usage <= nominal + borrowing_limit, or <= nominal
 * without a cohort; per cohort: usage <= the sum of nominal; no PENDING job
 * with a flavor, no job holding quota without one). No rows: all hold.
 */
extern const char h_sql_quota_violations[];

#endif
