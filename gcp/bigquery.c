/*
 * bigquery.c — jobs.query and getQueryResults (see bigquery.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>
#include <pthread.h>

#include "gcp/auth.h"
#include "gcp/bigquery.h"
#include "gcp/bq_page.h"
#include "gcp/gcall.h"
#include "gcp/http.h"
#include "lib/log.h"

#define BQ_TOTAL_MS 120000L                        /* one call */
#define BQ_MAX_RESPONSE ((size_t)32 * 1024 * 1024) /* one page */
#define BQ_POLL_MS 10000                           /* timeoutMs of a poll */
#define BQ_SPARE_PAGES 2 /* page buffers a client keeps for its next pages */

struct bq_client {
  char endpoint[512];
  char project[128];
  char location[64];
  struct batch_token_source *ts; /* borrowed */
  CURL *h;
  long backoff_ms;
  long calls;
  long long max_bytes;       /* maximumBytesBilled of every query (0: none) */
  long long bytes;           /* totalBytesProcessed of the queries run */
  struct bq_scratch scratch; /* the cells of a page's rows */
  /* page buffers given back, for the next replies to be written into (a
   * query's pages are read one while the next is fetched: two at most) */
  pthread_mutex_t mu;
  char *spare[BQ_SPARE_PAGES];
  size_t spare_cap[BQ_SPARE_PAGES];
  int n_spare;
};

/* A buffer given back (body, of cap bytes; owned), or NULL. */
static void spare_take(struct bq_client *c, char **body, size_t *cap)
{
  pthread_mutex_lock(&c->mu);
  if (c->n_spare > 0) {
    c->n_spare--;
    *body = c->spare[c->n_spare];
    *cap = c->spare_cap[c->n_spare];
  } else {
    *body = NULL;
    *cap = 0;
  }
  pthread_mutex_unlock(&c->mu);
}

/* Give back a reply's body (stolen), or free it when enough are kept. */
static void spare_give(struct bq_client *c, struct batch_http_resp *resp)
{
  pthread_mutex_lock(&c->mu);
  if (resp->body && resp->cap > 0 && c->n_spare < BQ_SPARE_PAGES) {
    c->spare[c->n_spare] = resp->body;
    c->spare_cap[c->n_spare++] = resp->cap;
    resp->body = NULL;
  }
  pthread_mutex_unlock(&c->mu);
  batch_http_resp_free(resp);
}

struct bq_client *bq_client_new(const char *endpoint, const char *project,
                                const char *location,
                                struct batch_token_source *ts)
{
  struct bq_client *c = calloc(1, sizeof(*c));

  if (!c)
    return NULL;
  gcall_endpoint(c->endpoint, sizeof(c->endpoint), endpoint);
  snprintf(c->project, sizeof(c->project), "%s", project);
  snprintf(c->location, sizeof(c->location), "%s", location ? location : "");
  c->ts = ts;
  c->backoff_ms = 200;
  c->h = curl_easy_init();
  if (!c->h) {
    free(c);
    return NULL;
  }
  pthread_mutex_init(&c->mu, NULL);
  return c;
}

void bq_client_free(struct bq_client *c)
{
  if (!c)
    return;
  curl_easy_cleanup(c->h);
  free(c->scratch.p);
  while (c->n_spare > 0)
    free(c->spare[--c->n_spare]);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

void bq_client_set_backoff_ms(struct bq_client *c, long ms)
{
  c->backoff_ms = ms;
}

long bq_client_calls(const struct bq_client *c)
{
  return c->calls;
}

void bq_client_set_max_bytes_billed(struct bq_client *c, long long bytes)
{
  c->max_bytes = bytes;
}

long long bq_client_bytes(const struct bq_client *c)
{
  return c->bytes;
}

json_t *bq_param(const char *name, const char *type, const char *value)
{
  return json_pack("{s:s, s:{s:s}, s:{s:s}}", "name", name, "parameterType",
                   "type", type, "parameterValue", "value", value);
}

static void sleep_ms(long ms)
{
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};

  while (nanosleep(&t, &t) != 0)
    ;
}

/*
 * One call with retries: method on url with body (NULL: none). Returns 0
 * with the 2xx reply in *out (free it with batch_http_resp_free), or -1
 * with err filled.
 */
static int call(struct bq_client *c, const char *what, const char *method,
                const char *url, const char *body, struct batch_http_resp *out,
                char *err, size_t errlen)
{
  struct gcall gc = {what,        method,          url,  body,
                     BQ_TOTAL_MS, BQ_MAX_RESPONSE, NULL, 0};
  long wait = c->backoff_ms;
  bool reauth = true;
  int attempt;

  for (attempt = 1; attempt <= BQ_TRIES; attempt++) {
    char msg[256];
    struct batch_error e;
    struct batch_http_resp resp;
    enum gcall_outcome got;
    bool retry;

    spare_take(c, &gc.buf, &gc.buf_cap); /* taken over by the call */
    got = gcall_once(c->h, c->ts, &gc, &resp, &e);
    if (got == GCALL_TOKEN) {
      snprintf(err, errlen, "%s: token: %s", what, e.message);
      batch_http_resp_free(&resp);
      if (!e.retryable || attempt == BQ_TRIES)
        return -1;
      sleep_ms(wait);
      wait *= 2;
      continue;
    }
    c->calls++;
    if (got == GCALL_TRANSPORT) {
      snprintf(err, errlen, "%s: %s", what, e.message);
      retry = e.retryable;
    } else if (resp.status >= 200 && resp.status < 300) {
      *out = resp;
      return 0;
    } else {
      batch_http_status_message(&resp, msg, sizeof(msg));
      snprintf(err, errlen, "%s: HTTP %ld: %s", what, resp.status, msg);
      retry = resp.status == 429 || resp.status >= 500;
      if (resp.status == 401 && reauth && c->ts) {
        batch_token_invalidate(c->ts);
        reauth = false;
        retry = true;
      }
    }
    batch_http_resp_free(&resp);
    if (!retry || attempt == BQ_TRIES)
      return -1;
    log_msg(LOG_WARN, "bigquery: %s (attempt %d of %d)", err, attempt,
            BQ_TRIES);
    sleep_ms(wait);
    wait *= 2;
  }
  return -1;
}

/* The URL of getQueryResults for job, after page token (NULL: first). */
static int results_url(const struct bq_client *c, const char *job,
                       const char *location, const char *token, char *url,
                       size_t len)
{
  char ej[512] = "", el[128] = "", et[1024] = ""; /* escape appends */
  int n;

  if (batch_http_escape(ej, sizeof(ej), job) != 0 ||
      batch_http_escape(el, sizeof(el), location) != 0 ||
      batch_http_escape(et, sizeof(et), token ? token : "") != 0)
    return -1;
  n = snprintf(url, len,
               "%s/bigquery/v2/projects/%s/queries/%s?maxResults=%d"
               "&timeoutMs=%d%s%s%s%s",
               c->endpoint, c->project, ej, BQ_PAGE_ROWS, BQ_POLL_MS,
               *el ? "&location=" : "", el, token ? "&pageToken=" : "", et);
  return n > 0 && (size_t)n < len ? 0 : -1;
}

/* A reply: its bytes, the JSON without its rows, and the rows' text. */
struct page {
  struct batch_http_resp resp;
  json_t *doc;
  const char *rows;
  size_t rows_len;
};

/* Done with p: its body back to c's spares. */
static void page_free(struct bq_client *c, struct page *p)
{
  json_decref(p->doc);
  spare_give(c, &p->resp);
  memset(p, 0, sizeof(*p));
}

static int page_of(struct page *p, const char *what, char *err, size_t errlen)
{
  if (bq_page_split(p->resp.body ? p->resp.body : "", p->resp.len, &p->doc,
                    &p->rows, &p->rows_len) != 0) {
    snprintf(err, errlen, "%s: the reply is not a JSON object", what);
    return -1;
  }
  return 0;
}

/* getQueryResults of one job, on a thread of its own while the caller
 * walks the page before (the client's handle is the fetcher's then). */
struct fetcher {
  struct bq_client *c;
  char job[512], location[64], token[1024], err[256];
  struct page *out;
  int rc;
  pthread_t thread;
};

static int fetch(struct fetcher *f, const char *token, struct page *out,
                 char *err, size_t errlen)
{
  char url[2048];

  memset(out, 0, sizeof(*out));
  if (results_url(f->c, f->job, f->location, token, url, sizeof(url)) != 0) {
    snprintf(err, errlen, "getQueryResults: job id or page token too long");
    return -1;
  }
  if (call(f->c, "getQueryResults", "GET", url, NULL, &out->resp, err,
           errlen) != 0)
    return -1;
  if (page_of(out, "getQueryResults", err, errlen) != 0) {
    page_free(f->c, out);
    return -1;
  }
  return 0;
}

static void *fetch_thread(void *arg)
{
  struct fetcher *f = arg;

  f->rc = fetch(f, f->token, f->out, f->err, sizeof(f->err));
  return NULL;
}

/* A query whose job is complete: its first page, and how to ask for the
 * next ones. */
struct bq_result {
  struct bq_client *c;
  struct page cur;
  struct fetcher f;
};

int bq_query_start(struct bq_client *c, const char *sql, json_t *params,
                   struct bq_result **out, char *err, size_t errlen)
{
  char url[2048], request_id[40];
  unsigned char rnd[16];
  const char *job, *loc;
  struct bq_result *r;
  json_t *body, *ref;
  char *text;
  int rc, i;

  *out = NULL;
  /* requestId: a retried POST is recognised as the same query */
  if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
    json_decref(params);
    snprintf(err, errlen, "jobs.query: no random bytes");
    return -1;
  }
  for (i = 0; i < 16; i++)
    snprintf(request_id + (size_t)i * 2, 3, "%02x", rnd[i]);
  body =
      json_pack("{s:s, s:b, s:s, s:o, s:s, s:i, s:i}", "query", sql,
                "useLegacySql", 0, "parameterMode", "NAMED", "queryParameters",
                params ? params : json_array(), "requestId", request_id,
                "maxResults", BQ_PAGE_ROWS, "timeoutMs", BQ_POLL_MS);
  if (body && *c->location)
    json_object_set_new(body, "location", json_string(c->location));
  if (body && c->max_bytes > 0) { /* an int64: a string in JSON */
    char max[24];
    snprintf(max, sizeof(max), "%lld", c->max_bytes);
    json_object_set_new(body, "maximumBytesBilled", json_string(max));
  }
  text = body ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  snprintf(url, sizeof(url), "%s/bigquery/v2/projects/%s/queries", c->endpoint,
           c->project);
  r = calloc(1, sizeof(*r));
  if (!text || !r) {
    free(text);
    free(r);
    snprintf(err, errlen, "jobs.query: out of memory");
    return -1;
  }
  rc = call(c, "jobs.query", "POST", url, text, &r->cur.resp, err, errlen);
  free(text);
  if (rc != 0 || page_of(&r->cur, "jobs.query", err, errlen) != 0) {
    batch_http_resp_free(&r->cur.resp);
    free(r);
    return -1;
  }
  ref = json_object_get(r->cur.doc, "jobReference");
  job = json_string_value(json_object_get(ref, "jobId"));
  loc = json_string_value(json_object_get(ref, "location"));
  snprintf(r->f.job, sizeof(r->f.job), "%s", job ? job : "");
  snprintf(r->f.location, sizeof(r->f.location), "%s", loc ? loc : c->location);
  r->f.c = c;
  r->c = c;
  /* poll until the job is complete: its rows come with the first reply
   * that says so */
  while (!json_is_true(json_object_get(r->cur.doc, "jobComplete"))) {
    page_free(c, &r->cur);
    if (!*r->f.job || fetch(&r->f, NULL, &r->cur, err, errlen) != 0) {
      free(r);
      return -1;
    }
  }
  {
    /* what the job scanned, and is billed for (an int64 as a string) */
    const char *b =
        json_string_value(json_object_get(r->cur.doc, "totalBytesProcessed"));
    if (b)
      c->bytes += strtoll(b, NULL, 10);
  }
  *out = r;
  return 0;
}

void bq_result_free(struct bq_result *r)
{
  if (!r)
    return;
  page_free(r->c, &r->cur);
  free(r);
}

int bq_result_rows(struct bq_result *r, bq_cells_fn fn, void *ctx, char *err,
                   size_t errlen)
{
  struct bq_client *c = r->c;
  struct fetcher *f = &r->f;
  int rc = -1;

  /* page after page: the next one is fetched while this one's rows go to
   * fn (at most two pages in memory) */
  for (;;) {
    const char *token =
        json_string_value(json_object_get(r->cur.doc, "pageToken"));
    struct page next;
    bool more = token && *token, ahead = false;
    int walked;
    memset(&next, 0, sizeof(next));
    if (more) {
      snprintf(f->token, sizeof(f->token), "%s", token);
      if (strlen(token) >= sizeof(f->token)) {
        snprintf(err, errlen, "getQueryResults: page token too long");
        break;
      }
      f->out = &next;
      f->rc = -1;
      ahead = pthread_create(&f->thread, NULL, fetch_thread, f) == 0;
      if (!ahead)
        f->rc = fetch(f, f->token, &next, f->err, sizeof(f->err));
    }
    walked = bq_page_rows(r->cur.rows, r->cur.rows_len, &c->scratch, fn, ctx,
                          err, errlen);
    if (ahead)
      pthread_join(f->thread, NULL);
    page_free(c, &r->cur);
    if (walked != 0) {
      page_free(c, &next);
      break;
    }
    if (!more) {
      rc = 0;
      break;
    }
    if (f->rc != 0) {
      snprintf(err, errlen, "%s", f->err);
      break;
    }
    r->cur = next;
  }
  bq_result_free(r);
  return rc;
}

int bq_query(struct bq_client *c, const char *sql, json_t *params,
             bq_cells_fn fn, void *ctx, char *err, size_t errlen)
{
  struct bq_result *r;

  if (bq_query_start(c, sql, params, &r, err, errlen) != 0)
    return -1;
  return bq_result_rows(r, fn, ctx, err, errlen);
}
