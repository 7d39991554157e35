/*
 * client.c — Cloud Batch v1 REST calls (see client.h): one at a time over
 * the client's reused easy handle, or many at once on a batch_multi (one
 * libcurl multi handle). Both build a call the same way and read its
 * answer the same way. URLs are built from validated, percent-encoded parts
 * only; the Authorization header is freed when the transfer ends.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "gcp/batch_client.h"
#include "gcp/http.h"

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

struct batch_client *batch_client_new_shared(const struct gcp_config *cfg,
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

struct batch_client *batch_client_new(const struct gcp_config *cfg, char *err,
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

enum call_kind { CALL_CREATE, CALL_GET, CALL_LIST, CALL_CANCEL, CALL_DELETE };

/*
 * One call, from its request to its result, the same for a call performed
 * at once (batch_client_*) and one run by a batch_multi: begin() sets up
 * an easy handle, end() turns the finished transfer into the result (or
 * asks for one more try). Address-stable while a transfer runs.
 */
struct batch_call {
  struct batch_client *c;
  enum call_kind kind;
  const char *method, *what; /* static strings */
  struct url u;
  char *body; /* owned; NULL = none */
  struct curl_slist *hdrs;
  struct batch_http_req req;
  struct batch_http_xfer x;
  struct batch_result r;
  int rc; /* the call's return value, once ended */
  int tries;
  long t0;
  void *tag;                      /* the multi caller's */
  CURL *easy;                     /* the multi's handle it runs on */
  struct batch_call *prev, *next; /* in the multi's running or done list */
};

static void call_free(struct batch_call *k)
{
  if (!k)
    return;
  curl_slist_free_all(k->hdrs);
  batch_http_resp_free(&k->x.resp);
  free(k->body);
  free(k);
}

/* A new call of kind; the caller fills k->u (and k->body). */
static struct batch_call *call_new(struct batch_client *c, enum call_kind kind)
{
  static const char *const methods[] = {"POST", "GET", "GET", "POST", "DELETE"};
  static const char *const whats[] = {"create", "get", "list", "cancel",
                                      "delete"};
  struct batch_call *k = calloc(1, sizeof(*k));

  if (!k)
    return NULL;
  k->c = c;
  k->kind = kind;
  k->method = methods[kind];
  k->what = whats[kind];
  k->t0 = now_ms();
  return k;
}

static int fail(struct batch_call *k, const char *status, const char *msg,
                bool retryable)
{
  batch_error_transport(&k->r.error, status, msg, retryable);
  k->rc = -1;
  return -1;
}

/*
 * Set up easy for the call's next try: token, headers, options. Returns 0,
 * or -1 with the call ended (k->r says why: nothing was sent).
 */
static int begin(struct batch_call *k, CURL *easy)
{
  char auth[BATCH_TOKEN_MAX + 32], token[BATCH_TOKEN_MAX];
  struct curl_slist *h;
  int trc;

  memset(&k->r, 0, sizeof(k->r));
  curl_slist_free_all(k->hdrs);
  k->hdrs = NULL;
  if (k->u.bad || (k->kind == CALL_CREATE && !k->body)) {
    char msg[128];
    snprintf(msg, sizeof(msg), "%s: invalid name, region, id or URL too long",
             k->what);
    return fail(k, "INVALID_ARGUMENT", msg, false);
  }
  trc = batch_token_get(k->c->ts, token, sizeof(token), &k->r.error);
  if (trc < 0) {
    char msg[sizeof(k->r.error.message)];
    int n = snprintf(msg, sizeof(msg), "%s: no access token: ", k->what);
    if (n > 0 && (size_t)n < sizeof(msg))
      put_cut(msg + n, sizeof(msg) - (size_t)n, k->r.error.message);
    /* never the job's fault: retry later rather than fail the job */
    return fail(k, "UNAUTHENTICATED", msg, true);
  }
  auth[0] = '\0';
  if (trc == 0)
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
  OPENSSL_cleanse(token, sizeof(token));

  h = curl_slist_append(NULL, "Accept: application/json");
  if (h && k->body)
    h = curl_slist_append(k->hdrs = h, "Content-Type: application/json");
  if (h)
    h = curl_slist_append(k->hdrs = h, "Expect:");
  if (h && auth[0])
    h = curl_slist_append(k->hdrs = h, auth);
  OPENSSL_cleanse(auth, sizeof(auth));
  if (!h)
    return fail(k, "UNAVAILABLE", "out of memory", true);
  k->hdrs = h;

  memset(&k->req, 0, sizeof(k->req));
  k->req.method = k->method;
  k->req.url = k->u.s;
  k->req.headers = k->hdrs;
  k->req.body = k->body;
  k->req.body_len = k->body ? strlen(k->body) : 0;
  k->req.connect_ms = k->c->connect_ms;
  k->req.total_ms = k->c->total_ms;
  batch_http_resp_free(&k->x.resp);
  if (batch_http_setup(easy, &k->req, &k->x) != 0) {
    batch_http_transport_error(&k->x.resp, k->what, &k->r.error);
    k->rc = -1;
    return -1;
  }
  return 0;
}

/* What a 2xx answer to the call means. */
static int answered(struct batch_call *k)
{
  struct batch_result *r = &k->r;

  if (k->kind == CALL_LIST) {
    if (!r->json)
      r->json = json_object();
    if (!json_is_object(r->json)) {
      json_decref(r->json);
      r->json = NULL;
      return fail(k, "UNAVAILABLE", "list: the reply is not a JSON object",
                  true);
    }
    if (!json_is_array(json_object_get(r->json, "jobs")))
      json_object_set_new(r->json, "jobs", json_array());
  }
  return 0;
}

/*
 * The transfer on easy ended with code: fill the call's result. Returns 1
 * when the call should be tried again at once (a GET whose connection was
 * reset, once), else 0 with k->rc and k->r final.
 */
static int end(struct batch_call *k, CURL *easy, CURLcode code)
{
  struct batch_http_resp *resp = &k->x.resp;
  struct batch_result *r = &k->r;

  if (batch_http_finish(easy, code, &k->x) != 0) {
    if (k->kind != CALL_CREATE && k->kind != CALL_CANCEL &&
        k->kind != CALL_DELETE && k->tries++ == 0 && batch_http_was_reset(resp))
      return 1;
    batch_http_transport_error(resp, k->what, &r->error);
    r->http_status = resp->status;
    k->rc = -1;
  } else if (resp->status >= 200 && resp->status < 300) {
    json_error_t jerr;
    r->http_status = resp->status;
    k->rc = 0;
    if (resp->len > 0 &&
        !(r->json = json_loadb(resp->body, resp->len, 0, &jerr))) {
      char msg[160];
      snprintf(msg, sizeof(msg), "%s: the HTTP %ld reply is not JSON", k->what,
               resp->status);
      fail(k, "UNAVAILABLE", msg, true);
      r->error.http_status = resp->status;
    } else {
      answered(k);
    }
  } else {
    r->http_status = resp->status;
    batch_parse_error(resp->status, resp->body, resp->retry_after, &r->error);
    if (resp->status == 401) {
      batch_token_invalidate(k->c->ts); /* expired or revoked: fetch anew */
      r->error.retryable = true;
    }
    k->rc = -1;
    if (k->kind == CALL_CREATE && r->error.already_exists) {
      k->rc = 0; /* created before: a retry after a lost reply */
      json_decref(r->json);
      r->json = NULL;
    }
  }
  batch_http_resp_free(resp);
  curl_slist_free_all(k->hdrs);
  k->hdrs = NULL;
  r->elapsed_ms = now_ms() - k->t0;
  return 0;
}

/* Perform k on the client's own handle, hand its result to *r, free k. */
static int perform(struct batch_client *c, struct batch_call *k,
                   struct batch_result *r)
{
  int rc;

  memset(r, 0, sizeof(*r));
  if (!k) {
    batch_error_transport(&r->error, "UNAVAILABLE", "out of memory", true);
    return -1;
  }
  while (begin(k, c->curl) == 0 &&
         end(k, c->curl, curl_easy_perform(c->curl)) == 1)
    ;
  *r = k->r;
  r->elapsed_ms = now_ms() - k->t0;
  rc = k->rc;
  call_free(k);
  return rc;
}

/* ------------------------------------------------- building the calls */

static struct batch_call *make_create(struct batch_client *c,
                                      const char *region, const char *job_id,
                                      const char *request_id, json_t *body)
{
  struct batch_call *k = call_new(c, CALL_CREATE);
  size_t n = job_id ? strlen(job_id) : 0;

  if (!k)
    return NULL;
  url_parent(&k->u, c, region);
  /* ^[a-z]([a-z0-9-]*[a-z0-9])?$, at most 63: anything else is ours */
  if (n == 0 || n > BATCH_JOB_ID_MAX || job_id[0] < 'a' || job_id[0] > 'z' ||
      job_id[n - 1] == '-' ||
      strspn(job_id, "abcdefghijklmnopqrstuvwxyz"
                     "0123456789-") != n)
    k->u.bad = true;
  url_query(&k->u, "job_id", job_id);
  url_query(&k->u, "request_id", request_id);
  k->body = body ? json_dumps(body, JSON_COMPACT) : NULL;
  return k;
}

static struct batch_call *make_named(struct batch_client *c,
                                     enum call_kind kind, const char *name)
{
  struct batch_call *k = call_new(c, kind);

  if (!k)
    return NULL;
  url_name(&k->u, c, name);
  if (kind == CALL_CANCEL) {
    url_add(&k->u, ":cancel");
    k->body = strdup("{}");
    if (!k->body) {
      call_free(k);
      return NULL;
    }
  }
  return k;
}

static struct batch_call *make_list(struct batch_client *c, const char *region,
                                    const char *filter, int page_size,
                                    const char *page_token)
{
  struct batch_call *k = call_new(c, CALL_LIST);
  char size[16];

  if (!k)
    return NULL;
  url_parent(&k->u, c, region);
  url_query(&k->u, "filter", filter);
  if (page_size > 0) {
    snprintf(size, sizeof(size), "%d", page_size);
    url_query(&k->u, "pageSize", size);
  }
  url_query(&k->u, "pageToken", page_token);
  return k;
}

int batch_client_create(struct batch_client *c, const char *region,
                        const char *job_id, const char *request_id,
                        json_t *body, struct batch_result *r)
{
  return perform(c, make_create(c, region, job_id, request_id, body), r);
}

int batch_client_get(struct batch_client *c, const char *name,
                     struct batch_result *r)
{
  return perform(c, make_named(c, CALL_GET, name), r);
}

int batch_client_list(struct batch_client *c, const char *region,
                      const char *filter, int page_size, const char *page_token,
                      struct batch_result *r)
{
  return perform(c, make_list(c, region, filter, page_size, page_token), r);
}

int batch_client_cancel(struct batch_client *c, const char *name,
                        struct batch_result *r)
{
  return perform(c, make_named(c, CALL_CANCEL, name), r);
}

int batch_client_delete(struct batch_client *c, const char *name,
                        struct batch_result *r)
{
  return perform(c, make_named(c, CALL_DELETE, name), r);
}

/* ------------------------------------------------- many calls at once */

#define IDLE_HANDLES 64       /* easy handles kept for reuse */
#define MULTI_CONNECTIONS 256 /* connections a multi handle keeps open */

struct batch_multi {
  struct batch_client *c; /* borrowed */
  CURLM *multi;
  CURL *idle[IDLE_HANDLES];
  size_t n_idle;
  struct batch_call *running;               /* transfers under way */
  struct batch_call *done_head, *done_tail; /* ended, not yet taken */
  size_t n;                                 /* started, not yet taken */
};

struct batch_multi *batch_multi_new(struct batch_client *c)
{
  struct batch_multi *m = calloc(1, sizeof(*m));

  if (!m)
    return NULL;
  m->c = c;
  m->multi = curl_multi_init();
  if (!m->multi) {
    free(m);
    return NULL;
  }
  /* keep a connection per call that may be under way (HTTP/1.1), so a
   * lull does not close connections the next burst opens again */
  curl_multi_setopt(m->multi, CURLMOPT_MAXCONNECTS, (long)MULTI_CONNECTIONS);
  return m;
}

static void unlink_running(struct batch_multi *m, struct batch_call *k)
{
  if (k->prev)
    k->prev->next = k->next;
  else
    m->running = k->next;
  if (k->next)
    k->next->prev = k->prev;
  k->prev = k->next = NULL;
}

static void release_handle(struct batch_multi *m, CURL *easy)
{
  if (m->n_idle < IDLE_HANDLES)
    m->idle[m->n_idle++] = easy;
  else
    curl_easy_cleanup(easy);
}

static void push_done(struct batch_multi *m, struct batch_call *k)
{
  if (k->easy)
    release_handle(m, k->easy);
  k->easy = NULL;
  k->next = NULL;
  if (m->done_tail)
    m->done_tail->next = k;
  else
    m->done_head = k;
  m->done_tail = k;
}

/* Start k's next try on its handle; on failure it is done at once. */
static void launch(struct batch_multi *m, struct batch_call *k)
{
  if (begin(k, k->easy) != 0) {
    push_done(m, k);
    return;
  }
  curl_easy_setopt(k->easy, CURLOPT_PRIVATE, (char *)k);
  if (curl_multi_add_handle(m->multi, k->easy) != CURLM_OK) {
    fail(k, "UNAVAILABLE", "cannot start the transfer", true);
    batch_http_resp_free(&k->x.resp);
    push_done(m, k);
    return;
  }
  k->next = m->running;
  if (m->running)
    m->running->prev = k;
  m->running = k;
}

static int start(struct batch_multi *m, struct batch_call *k, void *tag)
{
  if (!k)
    return -1;
  k->tag = tag;
  k->easy = m->n_idle ? m->idle[--m->n_idle] : curl_easy_init();
  if (!k->easy) {
    call_free(k);
    return -1;
  }
  m->n++;
  launch(m, k);
  return 0;
}

int batch_multi_create(struct batch_multi *m, const char *region,
                       const char *job_id, const char *request_id, json_t *body,
                       void *tag)
{
  return start(m, make_create(m->c, region, job_id, request_id, body), tag);
}

int batch_multi_get(struct batch_multi *m, const char *name, void *tag)
{
  return start(m, make_named(m->c, CALL_GET, name), tag);
}

int batch_multi_list(struct batch_multi *m, const char *region,
                     const char *filter, int page_size, const char *page_token,
                     void *tag)
{
  return start(m, make_list(m->c, region, filter, page_size, page_token), tag);
}

int batch_multi_cancel(struct batch_multi *m, const char *name, void *tag)
{
  return start(m, make_named(m->c, CALL_CANCEL, name), tag);
}

int batch_multi_delete(struct batch_multi *m, const char *name, void *tag)
{
  return start(m, make_named(m->c, CALL_DELETE, name), tag);
}

/* Move the transfers libcurl reports finished to the done list. */
static void collect(struct batch_multi *m)
{
  CURLMsg *msg;
  int left, running;

  curl_multi_perform(m->multi, &running);
  while ((msg = curl_multi_info_read(m->multi, &left)) != NULL) {
    CURL *easy = msg->easy_handle;
    CURLcode code = msg->data.result;
    char *priv = NULL;
    struct batch_call *k;

    if (msg->msg != CURLMSG_DONE)
      continue;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
    curl_multi_remove_handle(m->multi, easy);
    if (!(k = (struct batch_call *)priv))
      continue;
    unlink_running(m, k);
    if (end(k, easy, code) == 1)
      launch(m, k);
    else
      push_done(m, k);
  }
}

int batch_multi_poll(struct batch_multi *m, const int *fds, bool *ready,
                     unsigned n_fds, int timeout_ms)
{
  struct curl_waitfd w[BATCH_MULTI_MAX_FDS];
  unsigned i;

  if (n_fds > BATCH_MULTI_MAX_FDS)
    n_fds = BATCH_MULTI_MAX_FDS;
  for (i = 0; i < n_fds; i++) {
    w[i].fd = fds[i];
    w[i].events = CURL_WAIT_POLLIN;
    w[i].revents = 0;
    ready[i] = false;
  }
  collect(m);
  if (curl_multi_poll(m->multi, w, n_fds, m->done_head ? 0 : timeout_ms,
                      NULL) != CURLM_OK)
    return -1;
  for (i = 0; i < n_fds; i++)
    ready[i] = (w[i].revents & CURL_WAIT_POLLIN) != 0;
  collect(m);
  return 0;
}

bool batch_multi_next(struct batch_multi *m, void **tag, int *rc,
                      struct batch_result *r)
{
  struct batch_call *k = m->done_head;

  if (!k)
    return false;
  m->done_head = k->next;
  if (!m->done_head)
    m->done_tail = NULL;
  m->n--;
  *tag = k->tag;
  *rc = k->rc;
  *r = k->r;
  call_free(k);
  return true;
}

size_t batch_multi_count(const struct batch_multi *m)
{
  return m->n;
}

void batch_multi_free(struct batch_multi *m)
{
  struct batch_call *k, *next;

  if (!m)
    return;
  for (k = m->running; k; k = next) {
    next = k->next;
    curl_multi_remove_handle(m->multi, k->easy);
    curl_easy_cleanup(k->easy);
    call_free(k);
  }
  for (k = m->done_head; k; k = next) {
    next = k->next;
    json_decref(k->r.json);
    call_free(k);
  }
  while (m->n_idle)
    curl_easy_cleanup(m->idle[--m->n_idle]);
  curl_multi_cleanup(m->multi);
  free(m);
}
