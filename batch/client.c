/*
 * client.c — Cloud Batch v1 REST calls over one reused easy handle per
 * client (see client.h). URLs are built from validated, percent-encoded
 * parts only; the Authorization header is wiped after each call.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "batch/client.h"
#include "batch/http.h"

#define URL_MAX 4096

struct batch_client {
  CURL *curl;
  char endpoint[512]; /* without a trailing '/' */
  char project[128];
  struct batch_token_source *ts;
  bool own_ts;
  long connect_ms, total_ms;
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init_once(void)
{
  curl_global_init(CURL_GLOBAL_DEFAULT);
}

void batch_global_init(void)
{
  pthread_once(&global_once, global_init_once);
}

/* ------------------------------------------------------------ setup */

struct batch_client *batch_client_new_shared(const struct config *cfg,
                                             struct batch_token_source *ts,
                                             char *err, size_t errlen)
{
  struct batch_client *c = NULL;
  size_t n;

  if (!*cfg->gcp_project) {
    snprintf(err, errlen, "GPUGATE_GCP_PROJECT: required for Cloud Batch");
    return NULL;
  }
  n = strlen(cfg->batch_endpoint);
  while (n > 0 && cfg->batch_endpoint[n - 1] == '/')
    n--;
  if (n == 0 || n >= sizeof(c->endpoint) ||
      (strncmp(cfg->batch_endpoint, "http://", 7) != 0 &&
       strncmp(cfg->batch_endpoint, "https://", 8) != 0)) {
    snprintf(err, errlen,
             "GPUGATE_BATCH_ENDPOINT: expected an http:// or https:// URL");
    return NULL;
  }
  if (strlen(cfg->gcp_project) >= sizeof(c->project)) {
    snprintf(err, errlen, "GPUGATE_GCP_PROJECT: too long");
    return NULL;
  }
  c = calloc(1, sizeof(*c));
  if (!c) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  memcpy(c->endpoint, cfg->batch_endpoint, n);
  c->endpoint[n] = '\0';
  memcpy(c->project, cfg->gcp_project, strlen(cfg->gcp_project) + 1);
  c->ts = ts;
  c->curl = curl_easy_init();
  if (!c->curl) {
    snprintf(err, errlen, "curl_easy_init failed");
    free(c);
    return NULL;
  }
  return c;
}

struct batch_client *batch_client_new(const struct config *cfg, char *err,
                                      size_t errlen)
{
  struct batch_token_source *ts = batch_token_new(cfg, err, errlen);
  struct batch_client *c;

  if (!ts)
    return NULL;
  c = batch_client_new_shared(cfg, ts, err, errlen);
  if (!c) {
    batch_token_free(ts);
    return NULL;
  }
  c->own_ts = true;
  return c;
}

void batch_client_free(struct batch_client *c)
{
  if (!c)
    return;
  if (c->curl)
    curl_easy_cleanup(c->curl);
  if (c->own_ts)
    batch_token_free(c->ts);
  free(c);
}

void batch_client_set_timeouts(struct batch_client *c, long connect_ms,
                               long total_ms)
{
  c->connect_ms = connect_ms;
  c->total_ms = total_ms;
}

const char *batch_client_project(const struct batch_client *c)
{
  return c->project;
}

void batch_result_clear(struct batch_result *r)
{
  json_decref(r->json);
  memset(r, 0, sizeof(*r));
}

/* -------------------------------------------------------------- URLs */

struct url {
  char s[URL_MAX];
  bool bad; /* overflow or invalid part */
};

static void url_add(struct url *u, const char *s)
{
  size_t n = strlen(u->s), k = strlen(s);

  if (n + k >= sizeof(u->s)) {
    u->bad = true;
    return;
  }
  memcpy(u->s + n, s, k + 1);
}

static void url_esc(struct url *u, const char *s)
{
  if (batch_http_escape(u->s, sizeof(u->s), s) != 0)
    u->bad = true;
}

/* "&k=v" or "?k=v", escaped; skipped when v is NULL or empty. */
static void url_query(struct url *u, const char *k, const char *v)
{
  if (!v || !*v)
    return;
  url_add(u, strchr(u->s, '?') ? "&" : "?");
  url_add(u, k);
  url_add(u, "=");
  url_esc(u, v);
}

/* A path segment we accept from a caller or a Batch reply. */
static bool segment_ok(const char *s, size_t n)
{
  size_t i;

  if (n == 0 || n > 128 || (n <= 2 && !strncmp(s, "..", n)))
    return false;
  for (i = 0; i < n; i++) {
    char ch = s[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
          (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' ||
          ch == ':' || ch == '~'))
      return false;
  }
  return true;
}

/* {endpoint}/v1/projects/{p}/locations/{r}/jobs[/{id}] from a full name. */
static void url_name(struct url *u, const struct batch_client *c,
                     const char *name)
{
  static const char *const fixed[3] = {"projects", "locations", "jobs"};
  const char *p = name ? name : "";
  char seg[129];
  int i;

  url_add(u, c->endpoint);
  url_add(u, "/v1");
  for (i = 0; i < 6; i++) {
    size_t n = strcspn(p, "/");
    if (!segment_ok(p, n) ||
        (i % 2 == 0 &&
         (strlen(fixed[i / 2]) != n || strncmp(p, fixed[i / 2], n) != 0))) {
      u->bad = true;
      return;
    }
    memcpy(seg, p, n);
    seg[n] = '\0';
    url_add(u, "/");
    url_esc(u, seg);
    p += n;
    if (i < 5 && *p++ != '/') {
      u->bad = true;
      return;
    }
  }
  if (*p)
    u->bad = true;
}

static void url_parent(struct url *u, const struct batch_client *c,
                       const char *region)
{
  if (!region || !segment_ok(region, strlen(region))) {
    u->bad = true;
    return;
  }
  url_add(u, c->endpoint);
  url_add(u, "/v1/projects/");
  url_esc(u, c->project);
  url_add(u, "/locations/");
  url_esc(u, region);
  url_add(u, "/jobs");
}

/* ------------------------------------------------------------- calls */

static long now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Copy src into dst, cut to fit. */
static void put_cut(char *dst, size_t dstlen, const char *src)
{
  size_t n = strnlen(src, dstlen - 1);

  memcpy(dst, src, n);
  dst[n] = '\0';
}

static int bad_request(struct batch_result *r, const char *what)
{
  char msg[128];

  snprintf(msg, sizeof(msg), "%s: invalid name, region, id or URL too long",
           what);
  batch_error_transport(&r->error, "INVALID_ARGUMENT", msg, false);
  return -1;
}

/* One exchange; fills *r. */
static int call(struct batch_client *c, const char *method, const char *url,
                const char *body, const char *what, struct batch_result *r)
{
  char auth[BATCH_TOKEN_MAX + 32], token[BATCH_TOKEN_MAX];
  struct curl_slist *hdrs = NULL, *h;
  struct batch_http_resp resp;
  struct batch_http_req req;
  bool is_get = !strcmp(method, "GET");
  int trc, rc = -1, tries;

  memset(&resp, 0, sizeof(resp));
  trc = batch_token_get(c->ts, token, sizeof(token), &r->error);
  if (trc < 0) {
    char msg[sizeof(r->error.message)];
    int n = snprintf(msg, sizeof(msg), "%s: no access token: ", what);
    if (n > 0 && (size_t)n < sizeof(msg))
      put_cut(msg + n, sizeof(msg) - (size_t)n, r->error.message);
    /* never the job's fault: retry later rather than fail the job */
    batch_error_transport(&r->error, "UNAUTHENTICATED", msg, true);
    goto out;
  }
  auth[0] = '\0';
  if (trc == 0)
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
  OPENSSL_cleanse(token, sizeof(token));

  h = curl_slist_append(hdrs, "Accept: application/json");
  if (h && body)
    h = curl_slist_append(hdrs = h, "Content-Type: application/json");
  if (h)
    h = curl_slist_append(hdrs = h, "Expect:");
  if (h && auth[0])
    h = curl_slist_append(hdrs = h, auth);
  OPENSSL_cleanse(auth, sizeof(auth));
  if (!h) {
    batch_error_transport(&r->error, "UNAVAILABLE", "out of memory", true);
    goto out;
  }
  hdrs = h;

  memset(&req, 0, sizeof(req));
  req.method = method;
  req.url = url;
  req.headers = hdrs;
  req.body = body;
  req.body_len = body ? strlen(body) : 0;
  req.connect_ms = c->connect_ms;
  req.total_ms = c->total_ms;
  for (tries = 0;; tries++) {
    batch_http_resp_free(&resp);
    if (batch_http_perform(c->curl, &req, &resp) == 0)
      break;
    if (!(is_get && tries == 0 && batch_http_was_reset(&resp))) {
      batch_http_transport_error(&resp, what, &r->error);
      r->http_status = resp.status;
      goto out;
    }
  }
  r->http_status = resp.status;
  if (resp.status >= 200 && resp.status < 300) {
    json_error_t jerr;
    if (resp.len > 0) {
      r->json = json_loadb(resp.body, resp.len, 0, &jerr);
      if (!r->json) {
        char msg[160];
        snprintf(msg, sizeof(msg), "%s: the HTTP %ld reply is not JSON", what,
                 resp.status);
        batch_error_transport(&r->error, "UNAVAILABLE", msg, true);
        r->error.http_status = resp.status;
        goto out;
      }
    }
    rc = 0;
    goto out;
  }
  batch_parse_error(resp.status, resp.body, resp.retry_after, &r->error);
  if (resp.status == 401) {
    batch_token_invalidate(c->ts); /* expired or revoked: fetch anew */
    r->error.retryable = true;
  }
out:
  curl_slist_free_all(hdrs);
  batch_http_resp_free(&resp);
  return rc;
}

static int timed_call(struct batch_client *c, const char *method,
                      const struct url *u, const char *body, const char *what,
                      struct batch_result *r)
{
  long t0 = now_ms();
  int rc;

  if (u->bad)
    return bad_request(r, what);
  rc = call(c, method, u->s, body, what, r);
  r->elapsed_ms = now_ms() - t0;
  return rc;
}

int batch_client_create(struct batch_client *c, const char *region,
                        const char *job_id, const char *request_id,
                        json_t *body, struct batch_result *r)
{
  struct url u = {{0}, false};
  char *text = NULL;
  size_t n = job_id ? strlen(job_id) : 0;
  int rc;

  memset(r, 0, sizeof(*r));
  url_parent(&u, c, region);
  /* ^[a-z]([a-z0-9-]*[a-z0-9])?$, at most 63: anything else is ours */
  if (n == 0 || n > BATCH_JOB_ID_MAX || job_id[0] < 'a' || job_id[0] > 'z' ||
      job_id[n - 1] == '-' ||
      strspn(job_id, "abcdefghijklmnopqrstuvwxyz"
                     "0123456789-") != n)
    u.bad = true;
  url_query(&u, "job_id", job_id);
  url_query(&u, "request_id", request_id);
  text = body ? json_dumps(body, JSON_COMPACT) : NULL;
  if (!text)
    return bad_request(r, "create");
  rc = timed_call(c, "POST", &u, text, "create", r);
  free(text);
  if (rc != 0 && r->error.already_exists) {
    json_decref(r->json);
    r->json = NULL;
    return 0; /* created before: a retry after a lost reply */
  }
  return rc;
}

int batch_client_get(struct batch_client *c, const char *name,
                     struct batch_result *r)
{
  struct url u = {{0}, false};

  memset(r, 0, sizeof(*r));
  url_name(&u, c, name);
  return timed_call(c, "GET", &u, NULL, "get", r);
}

int batch_client_list(struct batch_client *c, const char *region,
                      const char *filter, int page_size, const char *page_token,
                      struct batch_result *r)
{
  struct url u = {{0}, false};
  char size[16];
  int rc;

  memset(r, 0, sizeof(*r));
  url_parent(&u, c, region);
  url_query(&u, "filter", filter);
  if (page_size > 0) {
    snprintf(size, sizeof(size), "%d", page_size);
    url_query(&u, "pageSize", size);
  }
  url_query(&u, "pageToken", page_token);
  rc = timed_call(c, "GET", &u, NULL, "list", r);
  if (rc == 0 && !r->json)
    r->json = json_object();
  if (rc == 0 && !json_is_object(r->json)) {
    long status = r->http_status;
    batch_result_clear(r);
    r->http_status = status;
    batch_error_transport(&r->error, "UNAVAILABLE",
                          "list: the reply is not a JSON object", true);
    return -1;
  }
  if (rc == 0 && !json_is_array(json_object_get(r->json, "jobs")))
    json_object_set_new(r->json, "jobs", json_array());
  return rc;
}

int batch_client_cancel(struct batch_client *c, const char *name,
                        struct batch_result *r)
{
  struct url u = {{0}, false};

  memset(r, 0, sizeof(*r));
  url_name(&u, c, name);
  url_add(&u, ":cancel");
  return timed_call(c, "POST", &u, "{}", "cancel", r);
}

int batch_client_delete(struct batch_client *c, const char *name,
                        struct batch_result *r)
{
  struct url u = {{0}, false};

  memset(r, 0, sizeof(*r));
  url_name(&u, c, name);
  return timed_call(c, "DELETE", &u, NULL, "delete", r);
}
