/*
 * billing_ingest.h — the billing-export ingest engine, shared by
 * POST /v1/billing/export-rows and `gpugate ingest-billing`, and the pure
 * pieces it is made of (line splitting, row parsing), exposed for tests.
 *
 * Input is NDJSON: one row of the Cloud Billing standard usage cost export
 * per line, as BigQuery writes them. The engine splits the lines across
 * chunk boundaries, parses and validates each row, records bad lines
 * ({line, error}) without stopping, and stores valid rows in batches of
 * BILLING_BATCH_ROWS, each in one transaction (db_billing_flush). Its
 * memory is bounded whatever the input size: the current partial line
 * (at most BILLING_LINE_MAX), one batch, and at most BILLING_REJECTED_MAX
 * recorded rejections.
 *
 * Amounts. Jansson holds a JSON number as a 64-bit integer or a double.
 * Integers are passed to SQL as they are; reals as "%.15g", whose 15
 * significant digits give back every decimal of at most 15 significant
 * digits exactly (1234.567890123, 0.1) and drop the binary noise of
 * float-valued exports (0.30000000000000004 becomes 0.3). Amounts with more
 * significant digits are rounded to 15. From there on everything is exact
 * decimal: the credits of a row are added here in decimal, and PostgreSQL
 * sums numerics.
 */
#ifndef GPUGATE_BILLING_INGEST_H
#define GPUGATE_BILLING_INGEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "db/billing.h"

#define BILLING_LINE_MAX ((size_t)1024 * 1024) /* longer lines: rejected */
#define BILLING_BATCH_ROWS 5000                /* rows per transaction */
#define BILLING_BATCH_BYTES ((size_t)8 * 1024 * 1024) /* or COPY bytes */
#define BILLING_REJECTED_MAX 10000 /* rejections listed (all counted) */
#define BILLING_UNATTRIBUTED "(unattributed)"
/* Longest team, flavor, service, sku or location: they key the rollups,
 * whose index entries PostgreSQL limits to about 2.7 kB. */
#define BILLING_NAME_MAX 256

/* Large enough for any exact sum of a row's credits (see billing.c). */
#define BILLING_DEC_MAX 720

struct db_conn;
struct billing_ingest;

/* ---- the engine ---------------------------------------------------- */

/*
 * A new engine storing into db (borrowed; it must outlive the engine and
 * not be used by anyone else in between). NULL on allocation failure.
 * Not thread-safe: one engine is fed by one thread.
 */
struct billing_ingest *billing_ingest_new(struct db_conn *db);

/* Free bi. Never touches the database. Accepts NULL. */
void billing_ingest_free(struct billing_ingest *bi);

/*
 * Feed the next n bytes of input (any split, lines may straddle calls).
 * Returns 0, or -1 once the database (or memory) has failed: batches
 * committed before stay committed, and nothing more is stored.
 */
int billing_ingest_feed(struct billing_ingest *bi, const char *data, size_t n);

/*
 * End of input: store what is left and return the report, a new reference:
 * {"inserted": n, "duplicates": n, "rejected": [{"line": n, "error": s}],
 *  "rejected_count": n, "truncated": bool}. NULL when the database (or
 * memory) failed, now or earlier. Call once.
 */
json_t *billing_ingest_finish(struct billing_ingest *bi);

/* Rows parsed so far (valid ones) and seconds since billing_ingest_new. */
void billing_ingest_progress(const struct billing_ingest *bi, long *rows,
                             double *seconds);

/* Rows in committed batches (inserted + duplicates): what a failure
 * leaves stored. */
long billing_ingest_committed(const struct billing_ingest *bi);

/* ---- line splitting (pure) --------------------------------------------- */

/*
 * Called for each line, without its newline: line[0..len) borrowed for the
 * call, lineno counting from 1. A line longer than the splitter's max is
 * reported once, as soon as it is known to be too long, with too_long set
 * and line NULL; the rest of it is skipped. A nonzero return stops the
 * splitter, which returns it.
 */
typedef int (*billing_line_fn)(void *ctx, long lineno, const char *line,
                               size_t len, bool too_long);

struct billing_splitter {
  char *buf; /* owned: the current partial line */
  size_t len, cap, max;
  long lines;    /* lines completed */
  bool skipping; /* inside a too-long line */
};

void billing_splitter_init(struct billing_splitter *sp, size_t max);
void billing_splitter_free(struct billing_splitter *sp);

/* Split data[0..n); returns 0, fn's nonzero return, or -1 when out of
 * memory. */
int billing_splitter_feed(struct billing_splitter *sp, const char *data,
                          size_t n, billing_line_fn fn, void *ctx);

/* End of input: a last line without a newline is passed to fn. */
int billing_splitter_finish(struct billing_splitter *sp, billing_line_fn fn,
                            void *ctx);

/* ---- rows (pure) -----------------------------------------------------------
 */

/*
 * A parsed row. db's strings point into doc, into a scratch (see
 * billing_parse_row_with), into the buffers below, or (db.row) into the
 * line it was parsed from, which must outlive the row's use.
 */
struct billing_row {
  struct db_billing_row db;
  json_t *doc;                 /* owned: the parsed line (Jansson path) */
  struct billing_scratch *own; /* owned: from billing_parse_row */
  char currency[4];
  char usage_start[48]; /* "YYYY-MM-DD HH:MM:SS[.ffffff]+00" */
  char usage_day[16];
  char invoice_month[8];
  char location[BILLING_NAME_MAX + 1];
  char cost[32];
  char credits[BILLING_DEC_MAX];
  char gpu_amount[32];
};

/*
 * Parse and validate one line. Returns 0 with *out filled (release it with
 * billing_row_clear), or -1 with a message naming the field in err
 * ("cost: not a number", "not JSON: ..."); *out then needs no clearing.
 *
 * Two paths give the same results: a single-pass parser that writes the
 * canonical text as it goes (no allocation per row), and Jansson (load,
 * checks, sorted dump), which decides every row the first does not accept
 * — so every rejection, with its message, is Jansson's.
 */
int billing_parse_row(const char *line, size_t len, struct billing_row *out,
                      char *err, size_t errlen);

/*
 * Memory the fast path reuses from row to row (the engine keeps one). A
 * row parsed with it borrows from it until the next parse with it.
 */
struct billing_scratch;
struct billing_scratch *billing_scratch_new(void);    /* NULL: no memory */
void billing_scratch_free(struct billing_scratch *s); /* accepts NULL */
int billing_parse_row_with(struct billing_scratch *s, const char *line,
                           size_t len, struct billing_row *out, char *err,
                           size_t errlen);

/*
 * The fast path's numbers, exposed for tests: a real as Jansson's sorted
 * dump writes it ("%.17g" with Jansson's touches; its length, 0 when it does
 * not fit size); as "%.15g" (amounts); and strtod of a JSON number's text.
 */
size_t billing_real_text(double v, char *buf, size_t size);
void billing_real15(double v, char out[32]);
double billing_read_real(const char *s, size_t len);

/* The Jansson path alone: the reference the tests hold the other to. */
int billing_parse_row_jansson(const char *line, size_t len,
                              struct billing_row *out, char *err,
                              size_t errlen);

/* Release what a parsed row owns. Accepts a zeroed row. */
void billing_row_clear(struct billing_row *r);

/*
 * Parse a timestamp as BigQuery's JSON export ("2026-08-01 10:00:00 UTC",
 * with optional fraction) or RFC 3339 writes it ("2026-08-01T10:00:00Z",
 * "...+02:00"). A time zone is required. On success writes the instant in
 * UTC as "YYYY-MM-DD HH:MM:SS[.ffffff]+00" into ts (48 bytes; fractions
 * beyond microseconds are dropped) and its UTC day "YYYY-MM-DD" into day
 * (16 bytes), and returns 0; else -1.
 */
int billing_parse_timestamp(const char *s, char *ts, char *day);

/*
 * Exact decimal sum: *acc += x, both decimal text as "%.15g" writes it
 * ("-1.5", "2e-07", "-0"); acc is rewritten as plain decimal ("-0.0000002")
 * and must hold BILLING_DEC_MAX bytes. Returns 0, or -1 when either is not
 * a number or the sum is out of range.
 */
int billing_dec_add(char *acc, const char *x);

/* The same on the full decimal grid only (billing_dec_add takes a 64-bit
 * shortcut when it can): the reference for tests. */
int billing_dec_add_grid(char *acc, const char *x);

#endif
