/*
 * bq_emulator.c — build/bigquery_emulator: a local stand-in for the two
 * BigQuery v2 REST calls gpugate's billing pull makes, in BigQuery's JSON
 * shapes (jobReference, jobComplete, schema.fields, rows[].f[].v,
 * totalRows as a string, pageToken), over a generated billing export
 * (bq_fixture.h). It runs no SQL: it recognises a query by what it asks
 * (the partitions: DATE(_PARTITIONTIME) selected, MAX(export_time),
 * GROUP BY, @from_day; a per-day summary: COUNT(*), GROUP BY, @from_day; a
 * day's rows: TO_JSON_STRING, @day), accounts the bytes of the partitions its
 * _PARTITIONTIME filter keeps, and honours maximumBytesBilled
 * (tests/emulator/README.md names the source of each point).
 *
 *   POST /bigquery/v2/projects/{p}/queries          jobs.query
 *   GET  /bigquery/v2/projects/{p}/queries/{jobId}  getQueryResults
 *        (maxResults, pageToken, location)
 *   POST /bigquery/v2/projects/{p}/jobs             jobs.insert (a query
 *        job: configuration.query; the client's jobReference.jobId)
 *   GET  /bigquery/v2/projects/{p}/jobs/{jobId}     jobs.get (RUNNING
 *        while the job has incomplete polls left, then DONE)
 * the last two being what Google's bq CLI uses (`bq --api=URL query`).
 *
 * Control endpoints (never faulted nor logged):
 *   GET  /emulator/requests   the request log: [{"method", "call",
 *        "shape", "day", "page_token", "status", "complete"}] (DELETE
 *        empties it)
 *   POST /emulator/faults     {"status": 503, "count": 1, "skip": 0,
 *        "call": "query" | "results" | "any"}: the next count calls of that
 *        kind, after skipping skip, answer status (a google.rpc.Status)
 *   POST /emulator/revise     {"day": "YYYY-MM-DD"}: that day's costs
 *        change and its export_time moves (one revision more)
 *   POST /emulator/late       {"day": "YYYY-MM-DD", "partition":
 *        "YYYY-MM-DD"}: one row more for that usage day, exported late,
 *        in that later partition (its export_time moves, and the day's)
 *   POST /emulator/touch      {"day": "YYYY-MM-DD"}: that day's export_time
 *        moves by a minute, its amounts stay
 *   POST /emulator/config     {"incomplete_polls": n, "page_rows": n,
 *        "page_delay_ms": n, "short_day": "YYYY-MM-DD" | null,
 *        "empty_summary": bool}
 *   GET  /emulator/last_query   the body of the last jobs.query request
 *   GET  /emulator/totals?team=T   {"cost", "credits", "net"} exact
 *        decimals of the whole fixture (all teams without team)
 *
 * Environment: BQ_EMU_LISTEN (127.0.0.1:0), BQ_EMU_PORT_FILE, BQ_EMU_DAYS
 * (92), BQ_EMU_ROWS (rows per day, 24), BQ_EMU_START (2026-08-01),
 * BQ_EMU_INCOMPLETE_POLLS (1: a job's replies say jobComplete false that
 * many times first, jobs.query's included), BQ_EMU_PAGE_ROWS (page size cap,
 * 1000), BQ_EMU_PRERENDER (1: the rows rendered once at start and pages
 * sent from them, bq_rendered.h). SIGTERM or SIGINT stops it; it also exits
 * when its parent dies.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "tests/emulator/bq_fixture.h"
#include "tests/emulator/bq_rendered.h"
#include "tests/emulator/emu_serve.h"

#define MAX_JOBS 4096
#define BODY_MAX ((size_t)1 << 20)
#define LOG_MAX 100000

enum shape { SHAPE_DAYS, SHAPE_ROWS, SHAPE_PARTS };

struct job {
  char id[128];
  char request_id[80];
  enum shape shape;
  int day;   /* SHAPE_ROWS: the day; SHAPE_DAYS: the first day; SHAPE_PARTS:
                the first partition */
  int polls; /* incomplete replies left */
  long long bytes; /* totalBytesProcessed: the partitions it scans */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct bq_fixture fix;
static struct job jobs[MAX_JOBS];
static int n_jobs;
static long page_rows = 1000;
static int incomplete_polls = 1;
static bool empty_summary;    /* the summary answers no day (a swapped view) */
static int short_day = -1;    /* its rows query answers one row fewer */
static long page_delay_ms;    /* before every page of rows */
static long long bytes_total; /* totalBytesProcessed of every job */
static char *last_query;      /* the body of the last jobs.query */
static bool rendered;         /* bq_rendered holds the rows as they stand */
static json_t *req_log;
static struct {
  int status, count, skip;
  char call[16];
} fault;

struct body {
  char *p;
  size_t len;
  bool too_large;
};

/* ---- replies ----------------------------------------------------------- */

/* A page's rows as JSON text, spliced into the reply by reply() (the rows
 * of a billing day are written straight, not as a JSON tree: the emulator
 * serves a million rows about as fast as gpugate reads them). */
static __thread char *rows_text;
static __thread size_t rows_len, rows_cap;
/* or the page's rows as a span of the rendered table (bq_rendered.h) */
static __thread const char *rows_span;
static __thread size_t rows_span_len;

/* Room for n more bytes (and a NUL). */
static void rows_room(size_t n)
{
  if (rows_len + n + 1 > rows_cap) {
    size_t cap = rows_cap ? rows_cap : 65536;
    char *g;
    while (cap < rows_len + n + 1)
      cap *= 2;
    if (!(g = realloc(rows_text, cap)))
      abort();
    rows_text = g;
    rows_cap = cap;
  }
}

static void rows_put(const char *p, size_t n)
{
  rows_room(n);
  memcpy(rows_text + rows_len, p, n);
  rows_len += n;
}

/* s as a JSON string (the fixture's text: no control characters),
 * escaped straight into the buffer (a row has a quote every few bytes) */
static void rows_put_string(const char *s, size_t n)
{
  char *o;
  size_t i;

  rows_room(2 * n + 2); /* the worst case: every byte escaped */
  o = rows_text + rows_len;
  *o++ = '"';
  for (i = 0; i < n; i++) {
    if (s[i] == '"' || s[i] == '\\')
      *o++ = '\\';
    *o++ = s[i];
  }
  *o++ = '"';
  rows_len = (size_t)(o - rows_text);
}

static void free_text(void *text)
{
  free(text);
}

/* doc, with the page's rows (if any) after its members. The rows go out
 * from rows_text itself: MHD serves a connection's requests one after
 * another in that connection's thread (MHD_USE_THREAD_PER_CONNECTION), so
 * the thread's buffer is not written again until this reply is sent. */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
                             json_t *doc)
{
  char *text = json_dumps(doc, JSON_COMPACT);
  struct MHD_Response *r;
  enum MHD_Result ret;
  size_t len;

  json_decref(doc);
  if (!text)
    return MHD_NO;
  len = strlen(text);
  if (rows_span && len > 2) { /* ...} → ...,"rows":[span]} */
    const struct MHD_IoVec iov[4] = {{text, len - 1},
                                     {",\"rows\":[", 9},
                                     {rows_span, rows_span_len},
                                     {"]}", 2}};
    rows_span = NULL;
    rows_len = 0;
    r = MHD_create_response_from_iovec(iov, 4, free_text, text);
  } else if (rows_len > 0 && len > 2) { /* ...} → ...,"rows":[...]} */
    const struct MHD_IoVec iov[4] = {
        {text, len - 1}, {",\"rows\":", 8}, {rows_text, rows_len}, {"}", 1}};
    rows_len = 0;
    r = MHD_create_response_from_iovec(iov, 4, free_text, text);
  } else {
    r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
  }
  if (!r) {
    free(text);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", "application/json");
  ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static const char *reason_of(int status)
{
  switch (status) {
  case 400:
    return "invalidQuery";
  case 403:
    return "accessDenied";
  case 404:
    return "notFound";
  case 429:
    return "rateLimitExceeded";
  default:
    return "backendError";
  }
}

static const char *rpc_of(int status)
{
  switch (status) {
  case 400:
    return "INVALID_ARGUMENT";
  case 403:
    return "PERMISSION_DENIED";
  case 404:
    return "NOT_FOUND";
  case 429:
    return "RESOURCE_EXHAUSTED";
  case 503:
    return "UNAVAILABLE";
  default:
    return "INTERNAL";
  }
}

static enum MHD_Result error_reply(struct MHD_Connection *c, int status,
                                   const char *msg)
{
  return reply(c, (unsigned)status,
               json_pack("{s:{s:i, s:s, s:[{s:s, s:s, s:s}], s:s}}", "error",
                         "code", status, "message", msg, "errors", "message",
                         msg, "domain", "global", "reason", reason_of(status),
                         "status", rpc_of(status)));
}

/* ---- the request log and faults (under mu) ------------------------------ */

static void log_call(const char *method, const char *call, const struct job *j,
                     const char *token, int status, bool complete)
{
  char day[11] = "";

  if (json_array_size(req_log) >= LOG_MAX)
    return;
  if (j && j->shape == SHAPE_ROWS)
    bq_fixture_day(&fix, j->day, day);
  json_array_append_new(
      req_log,
      json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:b, s:I}", "method", method,
                "call", call, "shape",
                !j                        ? ""
                : j->shape == SHAPE_DAYS  ? "billing-days"
                : j->shape == SHAPE_PARTS ? "billing-partitions"
                                          : "billing-rows",
                "day", day, "page_token", token ? token : "", "status", status,
                "complete", complete, "bytes", (json_int_t)(j ? j->bytes : 0)));
}

/* The status of an injected fault for this call, or 0. */
static int take_fault(const char *call)
{
  if (fault.count <= 0 ||
      (strcmp(fault.call, "any") != 0 && strcmp(fault.call, call) != 0))
    return 0;
  if (fault.skip > 0) {
    fault.skip--;
    return 0;
  }
  fault.count--;
  return fault.status;
}

/* ---- results ------------------------------------------------------------ */

static json_t *schema_of(enum shape s)
{
  if (s == SHAPE_DAYS)
    return json_pack("{s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, s:s}, "
                     "{s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, s:s}]}",
                     "fields", "name", "day", "type", "STRING", "mode",
                     "NULLABLE", "name", "row_count", "type", "INTEGER", "mode",
                     "NULLABLE", "name", "export_time", "type", "STRING",
                     "mode", "NULLABLE", "name", "cost", "type", "STRING",
                     "mode", "NULLABLE", "name", "credits", "type", "STRING",
                     "mode", "NULLABLE", "name", "accounts", "type", "STRING",
                     "mode", "NULLABLE");
  if (s == SHAPE_PARTS)
    return json_pack("{s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s, s:s}]}",
                     "fields", "name", "partition_day", "type", "STRING",
                     "mode", "NULLABLE", "name", "export_time", "type",
                     "STRING", "mode", "NULLABLE", "name", "first_usage_day",
                     "type", "STRING", "mode", "NULLABLE");
  return json_pack("{s:[{s:s, s:s, s:s}]}", "fields", "name", "row", "type",
                   "STRING", "mode", "NULLABLE");
}

/* The partitions from j's first on that hold rows; with page (not NULL),
 * those of index offset..end written into the page. */
static long partitions(const struct job *j, long offset, long end, bool page)
{
  long n = 0;
  int p;

  for (p = j->day > 1 ? j->day : 1; p <= fix.days; p++) {
    char et[40], first[11], day[11];
    if (!bq_fixture_partition(&fix, p, et, first))
      continue;
    if (page && n >= offset && n < end) {
      /* the partition's date: day p of the fixture's calendar */
      bq_fixture_day(&fix, p, day);
      rows_put(n == offset ? "[" : ",", 1);
      rows_put("{\"f\":[{\"v\":", 11);
      rows_put_string(day, strlen(day));
      rows_put("},{\"v\":", 7);
      rows_put_string(et, strlen(et));
      rows_put("},{\"v\":", 7);
      rows_put_string(first, strlen(first));
      rows_put("}]}", 3);
    }
    n++;
  }
  return n;
}

/* Rows of day d the rows query answers (one fewer on the short day). */
static long day_rows(int d)
{
  long n = bq_fixture_day_rows(&fix, d);

  return d == short_day && n > 0 ? n - 1 : n;
}

static long total_rows(const struct job *j)
{
  if (j->shape == SHAPE_DAYS)
    return empty_summary ? 0 : fix.days - j->day;
  if (j->shape == SHAPE_PARTS)
    return empty_summary ? 0 : partitions(j, 0, 0, false);
  return day_rows(j->day);
}

/* CAST(micro-dollars AS STRING) of a NUMERIC: no trailing zeros. */
static void numeric_text(long long micros, char *out, size_t len)
{
  long long a = micros < 0 ? -micros : micros, frac = a % 1000000;
  int width = 6;

  if (!frac) {
    snprintf(out, len, "%s%lld", micros < 0 ? "-" : "", a / 1000000);
    return;
  }
  while (frac % 10 == 0) {
    frac /= 10;
    width--;
  }
  snprintf(out, len, "%s%lld.%0*lld", micros < 0 ? "-" : "", a / 1000000, width,
           frac);
}

/* The page of j from offset, at most max rows, into doc. */
static void add_page(json_t *doc, const struct job *j, long offset, long max)
{
  long total = total_rows(j), end, i;
  char buf[4096];
  struct bq_fixture_daytext dt;

  if (max <= 0 || max > page_rows)
    max = page_rows;
  end = offset + max < total ? offset + max : total;
  rows_len = 0;
  rows_span = NULL;
  if (j->shape == SHAPE_PARTS) {
    partitions(j, offset, end, true);
    i = end;
  } else if (j->shape == SHAPE_ROWS && rendered &&
             bq_rendered_span(j->day, offset, end, &rows_span,
                              &rows_span_len)) {
    i = end; /* the stored rows, as they are */
  } else {
    if (j->shape == SHAPE_ROWS)
      bq_fixture_daytext(&fix, j->day, &dt);
    i = offset;
  }
  for (; i < end; i++) {
    rows_put(i == offset ? "[" : ",", 1);
    if (j->shape == SHAPE_DAYS) {
      char day[11], et[40], n[24], cost[48], credits[48];
      int d = j->day + (int)i;
      long long c, cr;
      bq_fixture_day(&fix, d, day);
      bq_fixture_export_time(&fix, d, et);
      snprintf(n, sizeof(n), "%ld", bq_fixture_day_rows(&fix, d));
      /* the source's own count and sums: every row, the short day's too */
      bq_fixture_day_sums(&fix, d, bq_fixture_day_rows(&fix, d), &c, &cr);
      numeric_text(c, cost, sizeof(cost));
      numeric_text(cr, credits, sizeof(credits));
      rows_put("{\"f\":[{\"v\":", 11);
      rows_put_string(day, strlen(day));
      rows_put("},{\"v\":", 7);
      rows_put_string(n, strlen(n));
      rows_put("},{\"v\":", 7);
      rows_put_string(et, strlen(et));
      rows_put("},{\"v\":", 7);
      rows_put_string(cost, strlen(cost));
      rows_put("},{\"v\":", 7);
      rows_put_string(credits, strlen(credits));
      rows_put("},{\"v\":", 7);
      rows_put_string(BQ_FIX_ACCOUNT, strlen(BQ_FIX_ACCOUNT));
      rows_put("}]}", 3);
    } else {
      /* the row's JSON escaped straight into the page */
      rows_room(sizeof(buf));
      rows_len += bq_fixture_cell(&fix, &dt, j->day, i, rows_text + rows_len,
                                  sizeof(buf));
    }
  }
  if (end > offset && !rows_span) /* the span goes out bracketed by reply() */
    rows_put("]", 1);
  snprintf(buf, sizeof(buf), "%ld", total);
  json_object_set_new(doc, "schema", schema_of(j->shape));
  json_object_set_new(doc, "totalRows", json_string(buf));
  if (end < total) {
    snprintf(buf, sizeof(buf), "p%ld", end);
    json_object_set_new(doc, "pageToken", json_string(buf));
  }
}

static json_t *job_doc(const struct job *j, const char *kind)
{
  char bytes[32];

  snprintf(bytes, sizeof(bytes), "%lld", j->bytes);
  return json_pack("{s:s, s:{s:s, s:s, s:s}, s:s, s:b}", "kind", kind,
                   "jobReference", "projectId", "billing-project", "jobId",
                   j->id, "location", "US", "totalBytesProcessed", bytes,
                   "cacheHit", 0);
}

/* ---- jobs.query --------------------------------------------------------- */

static const char *param(json_t *body, const char *name)
{
  json_t *p;
  size_t i;

  json_array_foreach (json_object_get(body, "queryParameters"), i, p) {
    const char *n = json_string_value(json_object_get(p, "name"));
    if (n && !strcmp(n, name))
      return json_string_value(
          json_object_get(json_object_get(p, "parameterValue"), "value"));
  }
  return NULL;
}

/*
 * The bytes a query scans (totalBytesProcessed): BigQuery reads the
 * partitions a filter on the pseudo-column _PARTITIONTIME keeps, and the
 * whole table without one. The export's rows of usage day d are in the
 * partition of the day after (exported then); each partition is taken as
 * BQ_ROW_BYTES per row. gpugate's filter keeps the partitions from its
 * parameter's day on (from_day or day, the job's first day): days first - 1
 * on.
 */
#define BQ_ROW_BYTES 1000LL
static long long scanned(const char *text, int first)
{
  long long per_day = fix.rows_per_day * BQ_ROW_BYTES;
  int from = 0;

  if (strstr(text, "_PARTITIONTIME") && first > 0)
    from = first - 1;
  if (first < 0)
    return 0;
  if (from > fix.days)
    from = fix.days;
  return (long long)(fix.days - from) * per_day;
}

/*
 * The job of a query (q: "query", "useLegacySql", "queryParameters"): the
 * one of an earlier request with the same rid (a retry), else a new one,
 * named id (NULL: the emulator's name). legacy_default: what an absent
 * useLegacySql means (true for jobs.insert, false for jobs.query). NULL
 * with *why when the query is refused. Called with mu held.
 */
static struct job *job_for(json_t *q, const char *rid, const char *id,
                           bool legacy_default, const char **why)
{
  const char *text = json_string_value(json_object_get(q, "query"));
  json_t *legacy = json_object_get(q, "useLegacySql");
  struct job nj;
  int i;

  if (!text || (legacy ? json_is_true(legacy) : legacy_default)) {
    *why = "a standard SQL query is required";
    return NULL;
  }
  for (i = 0; rid && *rid && i < n_jobs; i++)
    if (!strcmp(jobs[i].request_id, rid))
      return &jobs[i];
  memset(&nj, 0, sizeof(nj));
  /* what the query asks, not who wrote it: the per-day summary counts and
   * groups and takes @from_day; the rows are TO_JSON_STRING of a day's
   * rows, @day */
  if (strstr(text, "DATE(_PARTITIONTIME) AS STRING)") &&
      strstr(text, "MAX(export_time)") && strstr(text, "GROUP BY") &&
      !strstr(text, "COUNT(*)") && param(q, "from_day")) {
    /* the partitions (Koku's query): grouped by the partition it selects,
     * MAX(export_time) each, from @from_day's partition on */
    const char *from = param(q, "from_day");
    nj.shape = SHAPE_PARTS;
    nj.day = *from ? bq_fixture_day_index(&fix, from) : 0;
    if (nj.day < 0) {
      char first[11];
      bq_fixture_day(&fix, 0, first);
      nj.day = strcmp(from, first) < 0 ? 0 : fix.days + 1;
    }
  } else if (strstr(text, "COUNT(*)") && strstr(text, "GROUP BY") &&
             param(q, "from_day")) {
    const char *from = param(q, "from_day");
    nj.shape = SHAPE_DAYS;
    nj.day = *from ? bq_fixture_day_index(&fix, from) : 0;
    if (nj.day < 0) { /* before or after the fixture */
      char first[11];
      bq_fixture_day(&fix, 0, first);
      nj.day = strcmp(from, first) < 0 ? 0 : fix.days;
    }
  } else if (strstr(text, "TO_JSON_STRING") && param(q, "day")) {
    nj.shape = SHAPE_ROWS;
    nj.day = bq_fixture_day_index(&fix, param(q, "day"));
  } else {
    nj.day = -2;
  }
  nj.bytes = scanned(text, nj.day);
  {
    /* maximumBytesBilled (an int64 as a string): a query that would scan
     * more fails before running (bytesBilledLimitExceeded) */
    static char msg[160];
    const char *max =
        json_string_value(json_object_get(q, "maximumBytesBilled"));
    if (max && nj.day >= 0 && nj.bytes > strtoll(max, NULL, 10)) {
      snprintf(msg, sizeof(msg),
               "Query exceeded limit for bytes billed: %s. %lld or higher "
               "required.",
               max, nj.bytes);
      *why = msg;
      return NULL;
    }
  }
  bytes_total += nj.bytes;
  if (nj.day < 0 || n_jobs == MAX_JOBS || (id && strlen(id) >= sizeof(nj.id))) {
    *why = nj.day == -2 ? "Unrecognized query (the emulator knows gpugate's "
                          "billing queries)"
                        : "Query parameter out of range";
    return NULL;
  }
  if (id && *id)
    snprintf(nj.id, sizeof(nj.id), "%s", id);
  else
    snprintf(nj.id, sizeof(nj.id), "job_emu%06d", n_jobs);
  snprintf(nj.request_id, sizeof(nj.request_id), "%s", rid ? rid : "");
  nj.polls = incomplete_polls;
  jobs[n_jobs] = nj;
  return &jobs[n_jobs++];
}

static enum MHD_Result on_query(struct MHD_Connection *c, const char *body,
                                size_t len)
{
  json_t *doc = json_loadb(body ? body : "", len, 0, NULL);
  const char *rid = json_string_value(json_object_get(doc, "requestId"));
  const char *why = "";
  json_t *out;
  struct job *j;
  int st;

  pthread_mutex_lock(&mu);
  free(last_query);
  last_query = strndup(body ? body : "", len);
  st = take_fault("query");
  if (st) {
    log_call("POST", "query", NULL, NULL, st, false);
    pthread_mutex_unlock(&mu);
    json_decref(doc);
    return error_reply(c, st, "injected fault");
  }
  j = job_for(doc, rid, NULL, false, &why);
  if (!j) {
    log_call("POST", "query", NULL, NULL, 400, false);
    pthread_mutex_unlock(&mu);
    json_decref(doc);
    return error_reply(c, 400, why);
  }
  out = job_doc(j, "bigquery#queryResponse");
  if (j->polls > 0) {
    j->polls--;
    json_object_set_new(out, "jobComplete", json_false());
  } else {
    json_object_set_new(out, "jobComplete", json_true());
    add_page(out, j, 0,
             (long)json_integer_value(json_object_get(doc, "maxResults")));
  }
  log_call("POST", "query", j, NULL, 200,
           json_is_true(json_object_get(out, "jobComplete")));
  pthread_mutex_unlock(&mu);
  json_decref(doc);
  return reply(c, 200, out);
}

/* ---- jobs.insert and jobs.get (the shapes the bq CLI uses) -------------- */

/* A Job resource: RUNNING while the job has incomplete polls left (one is
 * used up), else DONE. */
static json_t *job_resource(struct job *j, const char *project)
{
  bool done = j->polls == 0;

  if (!done)
    j->polls--;
  return json_pack(
      "{s:s, s:s++, s:{s:s, s:s, s:s}, s:{s:s, s:{s:b}}, s:{s:s}, "
      "s:{s:s, s:s, s:s, s:{s:s, s:s}}}",
      "kind", "bigquery#job", "id", project, ":US.", j->id, "jobReference",
      "projectId", project, "jobId", j->id, "location", "US", "configuration",
      "jobType", "QUERY", "query", "useLegacySql", 0, "status", "state",
      done ? "DONE" : "RUNNING", "statistics", "creationTime", "1764201600000",
      "startTime", "1764201600000", "endTime", done ? "1764201600001" : "",
      "query", "statementType", "SELECT", "totalBytesProcessed", "0");
}

static enum MHD_Result on_insert(struct MHD_Connection *c, const char *project,
                                 const char *body, size_t len)
{
  json_t *doc = json_loadb(body ? body : "", len, 0, NULL), *out;
  json_t *q = json_object_get(json_object_get(doc, "configuration"), "query");
  const char *id = json_string_value(
      json_object_get(json_object_get(doc, "jobReference"), "jobId"));
  const char *why = "";
  struct job *j;
  int st;

  pthread_mutex_lock(&mu);
  st = take_fault("query");
  j = st ? NULL : job_for(q, id, id, true, &why);
  if (!j) {
    log_call("POST", "insert", NULL, NULL, st ? st : 400, false);
    pthread_mutex_unlock(&mu);
    json_decref(doc);
    return error_reply(c, st ? st : 400, st ? "injected fault" : why);
  }
  out = job_resource(j, project);
  log_call("POST", "insert", j, NULL, 200, false);
  pthread_mutex_unlock(&mu);
  json_decref(doc);
  return reply(c, 200, out);
}

static enum MHD_Result on_job_get(struct MHD_Connection *c, const char *project,
                                  const char *id)
{
  struct job *j = NULL;
  json_t *out;
  int i;

  pthread_mutex_lock(&mu);
  for (i = 0; i < n_jobs; i++)
    if (!strcmp(jobs[i].id, id))
      j = &jobs[i];
  if (!j) {
    log_call("GET", "job", NULL, NULL, 404, false);
    pthread_mutex_unlock(&mu);
    return error_reply(c, 404, "Not found: Job");
  }
  out = job_resource(j, project);
  log_call("GET", "job", j, NULL, 200,
           !strcmp(json_string_value(json_object_get(
                       json_object_get(out, "status"), "state")),
                   "DONE"));
  pthread_mutex_unlock(&mu);
  return reply(c, 200, out);
}

/* ---- getQueryResults ---------------------------------------------------- */

static enum MHD_Result on_results(struct MHD_Connection *c, const char *id)
{
  const char *token =
      MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pageToken");
  const char *max =
      MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "maxResults");
  struct job *j = NULL;
  json_t *out;
  long offset = 0, delay;
  int i, st;

  pthread_mutex_lock(&mu);
  for (i = 0; i < n_jobs; i++)
    if (!strcmp(jobs[i].id, id))
      j = &jobs[i];
  st = j ? take_fault("results") : 404;
  if (st) {
    log_call("GET", "results", j, token, st, false);
    pthread_mutex_unlock(&mu);
    return error_reply(c, st, st == 404 ? "Not found: Job" : "injected fault");
  }
  if (token) {
    char *end;
    offset = token[0] == 'p' ? strtol(token + 1, &end, 10) : -1;
    if (offset < 0 || token[0] != 'p' || *end || offset > total_rows(j)) {
      log_call("GET", "results", j, token, 400, false);
      pthread_mutex_unlock(&mu);
      return error_reply(c, 400, "Invalid page token");
    }
  }
  out = job_doc(j, "bigquery#getQueryResultsResponse");
  if (j->polls > 0) {
    j->polls--;
    json_object_set_new(out, "jobComplete", json_false());
  } else {
    json_object_set_new(out, "jobComplete", json_true());
    add_page(out, j, offset, max ? strtol(max, NULL, 10) : 0);
  }
  log_call("GET", "results", j, token, 200,
           json_is_true(json_object_get(out, "jobComplete")));
  delay = j->shape == SHAPE_ROWS ? page_delay_ms : 0;
  pthread_mutex_unlock(&mu);
  if (delay > 0) /* a slow page: the reader stays inside the day */
    usleep((useconds_t)delay * 1000);
  return reply(c, 200, out);
}

/* ---- control ------------------------------------------------------------ */

static json_t *money(long long micros)
{
  char s[48];
  long long a = micros < 0 ? -micros : micros;

  snprintf(s, sizeof(s), "%s%lld.%06lld", micros < 0 ? "-" : "", a / 1000000,
           a % 1000000);
  return json_string(s);
}

static enum MHD_Result on_control(struct MHD_Connection *c, const char *method,
                                  const char *url, const char *body, size_t len)
{
  json_t *doc = body ? json_loadb(body, len, 0, NULL) : NULL, *out = NULL;
  unsigned status = 200;

  pthread_mutex_lock(&mu);
  if (!strcmp(url, "/emulator/requests") && !strcmp(method, "GET")) {
    out = json_deep_copy(req_log);
  } else if (!strcmp(url, "/emulator/requests") && !strcmp(method, "DELETE")) {
    json_array_clear(req_log);
    out = json_object();
  } else if (!strcmp(url, "/emulator/faults") && !strcmp(method, "POST")) {
    const char *call = json_string_value(json_object_get(doc, "call"));
    fault.status = (int)json_integer_value(json_object_get(doc, "status"));
    fault.count = (int)json_integer_value(json_object_get(doc, "count"));
    fault.skip = (int)json_integer_value(json_object_get(doc, "skip"));
    snprintf(fault.call, sizeof(fault.call), "%s", call ? call : "any");
    out = json_object();
  } else if ((!strcmp(url, "/emulator/revise") ||
              !strcmp(url, "/emulator/touch")) &&
             !strcmp(method, "POST")) {
    const char *day = json_string_value(json_object_get(doc, "day"));
    int d = day ? bq_fixture_day_index(&fix, day) : -1;
    if (d < 0) {
      status = 400;
      out = json_pack("{s:s}", "error", "day: not in the fixture");
    } else if (!strcmp(url, "/emulator/touch")) {
      rendered = false;
      fix.touched[d]++;
      out = json_pack("{s:i}", "touched", fix.touched[d]);
    } else {
      rendered = false;
      fix.revision[d]++;
      out = json_pack("{s:i}", "revision", fix.revision[d]);
    }
  } else if (!strcmp(url, "/emulator/late") && !strcmp(method, "POST")) {
    const char *day = json_string_value(json_object_get(doc, "day"));
    const char *part = json_string_value(json_object_get(doc, "partition"));
    int d = day ? bq_fixture_day_index(&fix, day) : -1;
    int p = part ? bq_fixture_day_index(&fix, part) : -1;
    if (d < 0 || p <= d + 1) {
      status = 400;
      out = json_pack("{s:s}", "error",
                      "day, partition: days of the fixture, the partition "
                      "after the day's own");
    } else {
      rendered = false;
      fix.late[d] = p;
      out =
          json_pack("{s:I}", "rows", (json_int_t)bq_fixture_day_rows(&fix, d));
    }
  } else if (!strcmp(url, "/emulator/config") && !strcmp(method, "POST")) {
    json_t *v;
    if ((v = json_object_get(doc, "incomplete_polls")))
      incomplete_polls = (int)json_integer_value(v);
    if ((v = json_object_get(doc, "page_rows")) && json_integer_value(v) > 0)
      page_rows = (long)json_integer_value(v);
    if ((v = json_object_get(doc, "empty_summary")))
      empty_summary = json_is_true(v);
    if ((v = json_object_get(doc, "page_delay_ms")))
      page_delay_ms = (long)json_integer_value(v);
    if ((v = json_object_get(doc, "short_day")))
      short_day = json_is_string(v)
                      ? bq_fixture_day_index(&fix, json_string_value(v))
                      : -1;
    out = json_object();
  } else if (!strcmp(url, "/emulator/totals") && !strcmp(method, "GET")) {
    const char *team =
        MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "team");
    long long cost, credits;
    json_int_t rows = 0;
    int d;
    bq_fixture_totals(&fix, team, &cost, &credits);
    for (d = 0; d < fix.days; d++)
      rows += bq_fixture_day_rows(&fix, d);
    out = json_pack("{s:o, s:o, s:o, s:I, s:I}", "cost", money(cost), "credits",
                    money(credits), "net", money(cost + credits), "rows", rows,
                    "bytes", (json_int_t)bytes_total);
  } else if (!strcmp(url, "/emulator/last_query") && !strcmp(method, "GET")) {
    out = json_loads(last_query ? last_query : "{}", 0, NULL);
    if (!out)
      out = json_object();
  } else if (!strcmp(url, "/emulator/healthz")) {
    out = json_pack("{s:s}", "status", "ok");
  } else {
    status = 404;
    out = json_pack("{s:s}", "error", "no such control endpoint");
  }
  pthread_mutex_unlock(&mu);
  json_decref(doc);
  return reply(c, status, out);
}

/* ---- dispatch ----------------------------------------------------------- */

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
  struct body *b = *con_cls;
  const char *prefix = "/bigquery/v2/projects/", *rest, *slash;
  char project[128];

  (void)cls;
  (void)version;
  if (!b) {
    b = calloc(1, sizeof(*b));
    if (!b)
      return MHD_NO;
    *con_cls = b;
    return MHD_YES;
  }
  if (*upload_size > 0) {
    if (b->len + *upload_size > BODY_MAX) {
      b->too_large = true;
    } else {
      char *g = realloc(b->p, b->len + *upload_size + 1);
      if (!g)
        return MHD_NO;
      b->p = g;
      memcpy(b->p + b->len, upload, *upload_size);
      b->len += *upload_size;
      b->p[b->len] = '\0';
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (b->too_large)
    return error_reply(c, 413, "request too large");
  if (!strncmp(url, "/emulator/", 10))
    return on_control(c, method, url, b->p, b->len);
  if (strncmp(url, prefix, strlen(prefix)) != 0)
    return error_reply(c, 404, "Not found");
  rest = url + strlen(prefix);
  slash = strchr(rest, '/');
  if (slash && (size_t)(slash - rest) < sizeof(project)) {
    memcpy(project, rest, (size_t)(slash - rest));
    project[slash - rest] = '\0';
  } else {
    return error_reply(c, 404, "Not found");
  }
  if (!strcmp(slash, "/jobs") && !strcmp(method, "POST"))
    return on_insert(c, project, b->p, b->len);
  if (!strncmp(slash, "/jobs/", 6) && slash[6] && !strchr(slash + 6, '/') &&
      !strcmp(method, "GET"))
    return on_job_get(c, project, slash + 6);
  if (strncmp(slash, "/queries", 8) != 0)
    return error_reply(c, 404, "Not found");
  if (!strcmp(slash, "/queries") && !strcmp(method, "POST"))
    return on_query(c, b->p, b->len);
  if (!strncmp(slash, "/queries/", 9) && slash[9] && !strcmp(method, "GET"))
    return on_results(c, slash + 9);
  return error_reply(c, 404, "Not found");
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls,
                 enum MHD_RequestTerminationCode toe)
{
  struct body *b = *con_cls;

  (void)cls;
  (void)c;
  (void)toe;
  if (b) {
    free(b->p);
    free(b);
  }
  *con_cls = NULL;
}

/* ---- main --------------------------------------------------------------- */

static long env_long(const char *name, long def)
{
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 10) : def;
}

/* `bigquery_emulator dump`: the fixture's rows as NDJSON on stdout, as the
 * rows query returns them (the rows a sync loads; bench/ingest.sh copies
 * them for its floor); `dump-export`: as BigQuery's own NDJSON export
 * writes the same rows. */
static int dump(bool export_form)
{
  char buf[4096];
  int d;
  long i;

  for (d = 0; d < fix.days; d++) {
    struct bq_fixture_daytext dt;
    bq_fixture_daytext(&fix, d, &dt);
    for (i = 0; i < bq_fixture_day_rows(&fix, d); i++) {
      size_t n =
          export_form
              ? bq_fixture_row_export(&fix, &dt, d, i, buf, sizeof(buf) - 1)
              : bq_fixture_row(&fix, &dt, d, i, false, buf, sizeof(buf) - 1);
      buf[n++] = '\n';
      if (fwrite(buf, 1, n, stdout) != n)
        return 1;
    }
  }
  return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
  const char *start = getenv("BQ_EMU_START");
  char about[64];
  int rc, y = 2026, m = 8, dd = 1;

  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (start && sscanf(start, "%d-%d-%d", &y, &m, &dd) != 3) {
    fprintf(stderr, "bigquery_emulator: BQ_EMU_START: expected YYYY-MM-DD\n");
    return 1;
  }
  {
    /* days_from_civil */
    long yy = m <= 2 ? y - 1 : y;
    long era = (yy >= 0 ? yy : yy - 399) / 400;
    long yoe = yy - era * 400;
    long doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + dd - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    fix.start = era * 146097 + doe - 719468;
  }
  fix.days = (int)env_long("BQ_EMU_DAYS", 92);
  fix.rows_per_day = env_long("BQ_EMU_ROWS", 24);
  incomplete_polls = (int)env_long("BQ_EMU_INCOMPLETE_POLLS", 1);
  page_rows = env_long("BQ_EMU_PAGE_ROWS", 1000);
  if (fix.days < 1 || fix.days > BQ_FIX_MAX_DAYS || fix.rows_per_day < 0 ||
      page_rows < 1) {
    fprintf(stderr, "bigquery_emulator: BQ_EMU_DAYS, BQ_EMU_ROWS or "
                    "BQ_EMU_PAGE_ROWS out of range\n");
    return 1;
  }
  if (argc > 1)
    return !strcmp(argv[1], "dump")          ? dump(false)
           : !strcmp(argv[1], "dump-export") ? dump(true)
                                             : 2;
  if (env_long("BQ_EMU_PRERENDER", 0) == 1) {
    if (bq_rendered_build(&fix) != 0) {
      fprintf(stderr, "bigquery_emulator: BQ_EMU_PRERENDER: out of memory\n");
      return 1;
    }
    rendered = true;
  }
  req_log = json_array();
  snprintf(about, sizeof(about), "%d days × %ld rows", fix.days,
           fix.rows_per_day);
  rc = emu_serve("bigquery_emulator", "BQ_EMU_LISTEN", "BQ_EMU_PORT_FILE",
                 handle, done, about);
  if (rc == 0)
    json_decref(req_log);
  return rc;
}
