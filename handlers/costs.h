/*
 * costs.h — the pure helpers of the cost report handlers (handlers/costs.c),
 * exposed for unit tests: query parsing, content negotiation, and the JSON
 * and CSV renderings of a report table.
 */
#ifndef GPUGATE_HANDLERS_COSTS_H
#define GPUGATE_HANDLERS_COSTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "db/costs.h"
#include "server/req.h"

/* The representations a report can be sent in. */
enum costs_format {
  COSTS_JSON,
  COSTS_CSV,
  COSTS_NONE /* the client accepts neither: 406 */
};

/*
 * Parse a group_by value: a comma-separated list of day, month, service,
 * sku, flavor and location (repeats allowed). NULL or "" is no dimension.
 * dims receives the set; returns false on an empty item or an unknown name
 * (dims is then unspecified).
 */
bool costs_group_by(const char *s, bool dims[DB_COST_NDIMS]);

/*
 * Whether s is a calendar date written YYYY-MM-DD (years 0001 to 9999);
 * *days receives its distance in days from 1970-01-01. s may be NULL.
 */
bool costs_date(const char *s, long *days);

/*
 * The representation an Accept header asks for (RFC 9110 §12.5.1): each of
 * application/json and text/csv takes the q of the most specific media
 * range that matches it; the higher q wins, JSON on a tie; both 0 (or
 * unmatched) is COSTS_NONE. NULL or an empty header accepts anything
 * (JSON). Ranges with a malformed q are ignored.
 */
enum costs_format costs_accept(const char *accept);

/*
 * The table as CSV (RFC 4180): one header row of column names, then the
 * rows, CRLF after each; fields holding a comma, quote, CR or LF are
 * quoted, with quotes doubled; null cells are empty. A text cell (or
 * column name) starting with '=', '+', '-', '@', tab or CR — a formula to
 * a spreadsheet — is prefixed with a single quote and quoted (OWASP CSV
 * injection); number columns are written as PostgreSQL printed them, so a
 * credit stays -357.28. Returns a new buffer
 * (free() it), NUL-terminated, with its length in *len; NULL when out of
 * memory. t is borrowed.
 */
char *costs_csv(const struct db_cost_table *t, size_t *len);

/*
 * The table's rows as an array of objects keyed by column name in column
 * order; numbers become exact decimals (lib/jsonx.h: write the tree
 * with jsonx_dumps()), integers JSON integers. Returns a new reference, NULL
 * when out of memory. t is borrowed.
 */
json_t *costs_json_rows(const struct db_cost_table *t);

/*
 * The query's from and to (borrowed from req): each a date YYYY-MM-DD, to
 * not before from and at most three years after it. Each bad one is
 * recorded with problem_field(); the caller fails the request when
 * problem_nfields(req) says so.
 */
void costs_range(struct gg_req *req, const char **from, const char **to);

#endif
