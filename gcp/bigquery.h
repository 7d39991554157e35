/*
 * bigquery.h — a BigQuery v2 REST client for the billing pull: one query
 * through jobs.query (POST {endpoint}/bigquery/v2/projects/{p}/queries,
 * standard SQL, named parameters, a requestId so that a retried POST is the
 * same job) and its rows through getQueryResults (GET .../queries/{jobId},
 * polled while jobComplete is false, then page by page with pageToken).
 * Rows are handed to a callback a page at a time, their cells read in
 * place (gcp/bq_page.h), while the next page is fetched on a thread of
 * its own: memory is two pages whatever the result's size. 429, 5xx and
 * transport failures are retried with exponential backoff; a 401 refetches the
 * token once.
 *
 * OAuth tokens come from the same sources as Cloud Batch's (gcp/auth.h),
 * asked for BigQuery's scope, BQ_TOKEN_SCOPE.
 */
#ifndef GPUGATE_BATCH_BIGQUERY_H
#define GPUGATE_BATCH_BIGQUERY_H

#include <jansson.h>
#include <stddef.h>

#include "gcp/bq_page.h"

struct batch_token_source;
struct bq_client;

#define BQ_PAGE_ROWS 5000 /* maxResults of every page (≈ 7 MB of rows) */
#define BQ_TRIES 6        /* attempts of one call on retryable failures */
#define BQ_TOKEN_SCOPE "https://www.googleapis.com/auth/bigquery"

/*
 * A client of endpoint (no trailing slash needed) running jobs in project
 * at location ("" = none given). ts is borrowed (NULL: no Authorization).
 * NULL when out of memory.
 */
struct bq_client *bq_client_new(const char *endpoint, const char *project,
                                const char *location,
                                struct batch_token_source *ts);
void bq_client_free(struct bq_client *c); /* accepts NULL */

/* First backoff in milliseconds (doubling per retry; default 200). */
void bq_client_set_backoff_ms(struct bq_client *c, long ms);

/*
 * Run sql with params (a JSON array of queryParameters, stolen; NULL: none)
 * and feed every row to fn. Returns 0, or -1 with a one-line message in err
 * naming the call and the HTTP status (never a token).
 */
int bq_query(struct bq_client *c, const char *sql, json_t *params,
             bq_cells_fn fn, void *ctx, char *err, size_t errlen);

/*
 * bq_query in two steps, so that a query can be started (on another
 * client, another thread) while the rows of the one before are read:
 * bq_query_start runs sql until its job is complete and holds its first
 * page in *out; bq_result_rows feeds every row to fn as bq_query does and
 * frees the result, bq_result_free frees one not read (accepts NULL). A
 * result is read on the client that started it, one at a time.
 */
struct bq_result;
int bq_query_start(struct bq_client *c, const char *sql, json_t *params,
                   struct bq_result **out, char *err, size_t errlen);
int bq_result_rows(struct bq_result *r, bq_cells_fn fn, void *ctx, char *err,
                   size_t errlen);
void bq_result_free(struct bq_result *r);

/* A named STRING or DATE parameter: {"name", "parameterType": {"type"},
 * "parameterValue": {"value"}}, a new reference. */
json_t *bq_param(const char *name, const char *type, const char *value);

/* Calls made so far (every HTTP request, retries included). */
long bq_client_calls(const struct bq_client *c);

/* maximumBytesBilled of every query from now on (0: none): BigQuery fails
 * a query that would bill more, before it runs. */
void bq_client_set_max_bytes_billed(struct bq_client *c, long long bytes);

/* Σ totalBytesProcessed of the queries run so far (as their completed
 * replies said). */
long long bq_client_bytes(const struct bq_client *c);

#endif
