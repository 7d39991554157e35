/*
 * bigquery.c — jobs.query and getQueryResults (see bigquery.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "batch/auth.h"
#include "batch/bigquery.h"
#include "batch/http.h"
#include "server/log.h"

#define BQ_TOTAL_MS 120000L                        /* one call */
#define BQ_MAX_RESPONSE ((size_t)32 * 1024 * 1024) /* one page */
#define BQ_POLL_MS 10000                           /* timeoutMs of a poll */

struct bq_client {
  char endpoint[512];
  char project[128];
  char location[64];
  struct batch_token_source *ts; /* borrowed */
  CURL *h;
  long backoff_ms;
  long calls;
};

struct bq_client *bq_client_new(const char *endpoint, const char *project,
                                const char *location,
                                struct batch_token_source *ts)
{
  struct bq_client *c = calloc(1, sizeof(*c));
  size_t n;

  if (!c)
    return NULL;
  snprintf(c->endpoint, sizeof(c->endpoint), "%s", endpoint);
  n = strlen(c->endpoint);
  while (n > 0 && c->endpoint[n - 1] == '/')
    c->endpoint[--n] = '\0';
  snprintf(c->project, sizeof(c->project), "%s", project);
  snprintf(c->location, sizeof(c->location), "%s", location ? location : "");
  c->ts = ts;
  c->backoff_ms = 200;
  c->h = curl_easy_init();
  if (!c->h) {
    free(c);
    return NULL;
  }
  return c;
}

void bq_client_free(struct bq_client *c)
{
  if (!c)
    return;
  curl_easy_cleanup(c->h);
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

/* The error message of a google.rpc.Status reply, or the body's start. */
static void reply_message(const struct batch_http_resp *resp, char *out,
                          size_t len)
{
  json_t *doc = resp->body ? json_loadb(resp->body, resp->len, 0, NULL) : NULL;
  const char *m = json_string_value(
      json_object_get(json_object_get(doc, "error"), "message"));

  snprintf(out, len, "%.200s", m ? m : resp->body ? resp->body : "");
  json_decref(doc);
}

/*
 * One call with retries: method on url with body (NULL: none). Returns the
 * parsed reply (a new reference) or NULL with err filled.
 */
static json_t *call(struct bq_client *c, const char *what, const char *method,
                    const char *url, const char *body, char *err, size_t errlen)
{
  long wait = c->backoff_ms;
  bool reauth = true;
  int attempt;

  for (attempt = 1; attempt <= BQ_TRIES; attempt++) {
    char token[BATCH_TOKEN_MAX], auth[BATCH_TOKEN_MAX + 32], msg[256];
    struct batch_error e;
    struct batch_http_resp resp;
    struct batch_http_req req;
    struct curl_slist *headers = NULL;
    int got = 1;
    bool retry;

    memset(&req, 0, sizeof(req));
    if (c->ts) {
      got = batch_token_get(c->ts, token, sizeof(token), &e);
      if (got < 0) {
        snprintf(err, errlen, "%s: token: %s", what, e.message);
        if (!e.retryable || attempt == BQ_TRIES)
          return NULL;
        sleep_ms(wait);
        wait *= 2;
        continue;
      }
    }
    if (got == 0) {
      snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
      headers = curl_slist_append(headers, auth);
    }
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:"); /* no 100-continue wait */
    req.method = method;
    req.url = url;
    req.headers = headers;
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    req.total_ms = BQ_TOTAL_MS;
    req.max_response = BQ_MAX_RESPONSE;
    c->calls++;
    if (batch_http_perform(c->h, &req, &resp) != 0) {
      batch_http_transport_error(&resp, what, &e);
      snprintf(err, errlen, "%s: %s", what, e.message);
      retry = e.retryable;
    } else if (resp.status >= 200 && resp.status < 300) {
      json_t *doc = json_loadb(resp.body ? resp.body : "", resp.len, 0, NULL);
      curl_slist_free_all(headers);
      batch_http_resp_free(&resp);
      if (!doc)
        snprintf(err, errlen, "%s: the reply is not JSON", what);
      return doc;
    } else {
      reply_message(&resp, msg, sizeof(msg));
      snprintf(err, errlen, "%s: HTTP %ld: %s", what, resp.status, msg);
      retry = resp.status == 429 || resp.status >= 500;
      if (resp.status == 401 && reauth && c->ts) {
        batch_token_invalidate(c->ts);
        reauth = false;
        retry = true;
      }
    }
    curl_slist_free_all(headers);
    batch_http_resp_free(&resp);
    if (!retry || attempt == BQ_TRIES)
      return NULL;
    log_msg(LOG_WARN, "bigquery: %s (attempt %d of %d)", err, attempt,
            BQ_TRIES);
    sleep_ms(wait);
    wait *= 2;
  }
  return NULL;
}

/* Feed the rows of a reply to fn. */
static int feed(json_t *doc, bq_row_fn fn, void *ctx, char *err, size_t errlen)
{
  json_t *rows = json_object_get(doc, "rows"), *row;
  size_t i;

  json_array_foreach (rows, i, row) {
    json_t *cells = json_object_get(row, "f");
    if (!json_is_array(cells)) {
      snprintf(err, errlen, "getQueryResults: a row without \"f\"");
      return -1;
    }
    if (fn(ctx, cells, err, errlen) != 0)
      return -1;
  }
  return 0;
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

int bq_query(struct bq_client *c, const char *sql, json_t *params, bq_row_fn fn,
             void *ctx, char *err, size_t errlen)
{
  char url[2048], request_id[40], job[512], location[64];
  unsigned char rnd[16];
  json_t *body, *doc = NULL;
  char *text;
  int rc = -1, i;

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
  text = body ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  snprintf(url, sizeof(url), "%s/bigquery/v2/projects/%s/queries", c->endpoint,
           c->project);
  if (text)
    doc = call(c, "jobs.query", "POST", url, text, err, errlen);
  else
    snprintf(err, errlen, "jobs.query: out of memory");
  free(text);
  if (!doc)
    return -1;
  snprintf(job, sizeof(job), "%s",
           json_string_value(
               json_object_get(json_object_get(doc, "jobReference"), "jobId"))
               ? json_string_value(json_object_get(
                     json_object_get(doc, "jobReference"), "jobId"))
               : "");
  {
    const char *loc = json_string_value(
        json_object_get(json_object_get(doc, "jobReference"), "location"));
    snprintf(location, sizeof(location), "%s", loc ? loc : c->location);
  }
  /* poll until the job is complete: its rows come with the first reply
   * that says so */
  while (!json_is_true(json_object_get(doc, "jobComplete"))) {
    json_decref(doc);
    doc = NULL;
    if (!*job || results_url(c, job, location, NULL, url, sizeof(url)) != 0) {
      snprintf(err, errlen, "jobs.query: no usable jobReference");
      return -1;
    }
    doc = call(c, "getQueryResults", "GET", url, NULL, err, errlen);
    if (!doc)
      return -1;
  }
  for (;;) {
    const char *token;
    if (feed(doc, fn, ctx, err, errlen) != 0)
      break;
    token = json_string_value(json_object_get(doc, "pageToken"));
    if (!token || !*token) {
      rc = 0;
      break;
    }
    if (results_url(c, job, location, token, url, sizeof(url)) != 0) {
      snprintf(err, errlen, "getQueryResults: page token too long");
      break;
    }
    json_decref(doc);
    doc = call(c, "getQueryResults", "GET", url, NULL, err, errlen);
    if (!doc)
      return -1;
  }
  json_decref(doc);
  return rc;
}
