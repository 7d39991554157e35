/*
 * http.c — outbound HTTP for batch/: one bounded request on a reused
 * libcurl easy handle (see http.h). Never logs: URLs, headers and bodies
 * may carry tokens.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gcp/http.h"

/* The body's length as its Content-Length announces it, plus one for the
 * NUL, or 0 when unknown or over the cap. (Compressed, it is the
 * compressed length: the body is at least that long.) */
static size_t announced(const struct batch_http_xfer *x)
{
  curl_off_t n = -1;

  if (!x->h ||
      curl_easy_getinfo(x->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &n) !=
          CURLE_OK ||
      n <= 0 || (unsigned long long)n > x->max)
    return 0;
  return (size_t)n + 1;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userp)
{
  struct batch_http_xfer *x = userp;
  struct batch_http_resp *r = &x->resp;
  size_t n = size * nmemb;

  if (n > x->max - r->len) {
    r->too_large = true;
    return 0; /* CURLE_WRITE_ERROR: abort the transfer */
  }
  if (r->len + n + 1 > x->cap) {
    /* the whole announced body at once (a 10 MB page grown from 4 KiB by
     * doubling was copied and faulted in again and again), else twice */
    size_t cap = x->cap ? 2 * x->cap : 4096, whole = announced(x);
    char *p;
    if (whole > cap)
      cap = whole;
    while (cap < r->len + n + 1)
      cap *= 2;
    if (cap > x->max + 1)
      cap = x->max + 1;
    p = realloc(r->body, cap);
    if (!p)
      return 0;
    r->body = p;
    x->cap = cap;
  }
  memcpy(r->body + r->len, data, n);
  r->len += n;
  r->body[r->len] = '\0';
  return n;
}

static size_t on_header(char *data, size_t size, size_t nitems, void *userp)
{
  struct batch_http_resp *r = userp;
  size_t n = size * nitems, k;
  static const char name[] = "retry-after:";

  if (n >= 5 && !strncmp(data, "HTTP/", 5)) {
    r->retry_after[0] = '\0'; /* a new (final) response begins */
    return n;
  }
  k = sizeof(name) - 1;
  if (n > k && !strncasecmp(data, name, k)) {
    size_t i = k, len;
    while (i < n && (data[i] == ' ' || data[i] == '\t'))
      i++;
    len = n - i;
    while (len > 0 && (data[i + len - 1] == '\r' || data[i + len - 1] == '\n'))
      len--;
    if (len >= sizeof(r->retry_after))
      len = sizeof(r->retry_after) - 1;
    memcpy(r->retry_after, data + i, len);
    r->retry_after[len] = '\0';
  }
  return n;
}

int batch_http_setup(CURL *h, const struct batch_http_req *req,
                     struct batch_http_xfer *x)
{
  struct batch_http_resp *resp = &x->resp;
  CURLcode rc;

  memset(x, 0, sizeof(*x));
  x->max = req->max_response ? req->max_response : BATCH_HTTP_MAX_RESPONSE;
  x->h = h;
  if (req->buf && req->buf_cap > 0) { /* the caller's, taken over */
    resp->body = req->buf;
    resp->body[0] = '\0';
    x->cap = req->buf_cap;
  }

  curl_easy_reset(h);
  rc = curl_easy_setopt(h, CURLOPT_URL, req->url);
  if (rc == CURLE_OK)
    rc = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  if (rc == CURLE_OK)
    rc = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  if (rc == CURLE_OK)
    rc = curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                          req->connect_ms > 0 ? req->connect_ms
                                              : BATCH_HTTP_CONNECT_MS);
  if (rc == CURLE_OK)
    rc = curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                          req->total_ms > 0 ? req->total_ms
                                            : BATCH_HTTP_TOTAL_MS);
  if (rc == CURLE_OK)
    rc = curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)x->max);
  if (rc == CURLE_OK)
    rc = curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  if (rc == CURLE_OK)
    rc = curl_easy_setopt(h, CURLOPT_USERAGENT, "gpugate/1");
  if (rc == CURLE_OK)
    rc = curl_easy_setopt(h, CURLOPT_ERRORBUFFER, resp->curl_err);
  if (rc == CURLE_OK)
    rc = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  if (rc == CURLE_OK)
    rc = curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
  if (rc == CURLE_OK)
    rc = curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  if (rc == CURLE_OK)
    rc = curl_easy_setopt(h, CURLOPT_HEADERDATA, resp);
  if (rc == CURLE_OK && req->headers)
    rc = curl_easy_setopt(h, CURLOPT_HTTPHEADER, req->headers);
  /* several calls at once to an HTTP/2 host share one connection */
  if (rc == CURLE_OK && !strncmp(req->url, "https://", 8))
    rc = curl_easy_setopt(h, CURLOPT_PIPEWAIT, 1L);
  if (rc == CURLE_OK && !strcmp(req->method, "POST")) {
    rc = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
                          (curl_off_t)(req->body ? req->body_len : 0));
    if (rc == CURLE_OK)
      rc = curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body ? req->body : "");
  } else if (rc == CURLE_OK && strcmp(req->method, "GET") != 0) {
    rc = curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
  }
  if (rc != CURLE_OK) {
    batch_http_finish(h, rc, x);
    return -1;
  }
  return 0;
}

int batch_http_finish(CURL *h, CURLcode code, struct batch_http_xfer *x)
{
  struct batch_http_resp *resp = &x->resp;

  resp->code = code;
  resp->cap = x->cap;
  resp->status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
  /* the error buffer lives in x: detach it before x goes away */
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
  if (code == CURLE_FILESIZE_EXCEEDED)
    resp->too_large = true;
  if (code != CURLE_OK || resp->too_large) {
    if (!resp->too_large)
      resp->status = 0;
    return -1;
  }
  return 0;
}

int batch_http_perform(CURL *h, const struct batch_http_req *req,
                       struct batch_http_resp *resp)
{
  struct batch_http_xfer x;
  int rc = -1;

  if (batch_http_setup(h, req, &x) == 0)
    rc = batch_http_finish(h, curl_easy_perform(h), &x);
  *resp = x.resp;
  return rc;
}

void batch_http_resp_free(struct batch_http_resp *resp)
{
  free(resp->body);
  resp->body = NULL;
  resp->len = resp->cap = 0;
}

void batch_http_transport_error(const struct batch_http_resp *resp,
                                const char *what, struct batch_error *e)
{
  char msg[sizeof(e->message)];
  const char *detail =
      resp->curl_err[0] ? resp->curl_err : curl_easy_strerror(resp->code);

  if (resp->too_large) {
    snprintf(msg, sizeof(msg), "%s: response larger than %zu bytes", what,
             (size_t)BATCH_HTTP_MAX_RESPONSE);
    batch_error_transport(e, "RESPONSE_TOO_LARGE", msg, false);
    e->http_status = resp->status;
    return;
  }
  snprintf(msg, sizeof(msg), "%s: %s", what, detail);
  batch_error_transport(e,
                        resp->code == CURLE_OPERATION_TIMEDOUT
                            ? "DEADLINE_EXCEEDED"
                            : "UNAVAILABLE",
                        msg, true);
}

void batch_http_status_message(const struct batch_http_resp *resp, char *out,
                               size_t len)
{
  json_t *doc = resp->body ? json_loadb(resp->body, resp->len, 0, NULL) : NULL;
  const char *m = json_string_value(
      json_object_get(json_object_get(doc, "error"), "message"));

  snprintf(out, len, "%.200s", m ? m : resp->body ? resp->body : "");
  json_decref(doc);
}

bool batch_http_was_reset(const struct batch_http_resp *resp)
{
  return !resp->too_large &&
         (resp->code == CURLE_RECV_ERROR || resp->code == CURLE_SEND_ERROR ||
          resp->code == CURLE_GOT_NOTHING);
}

int batch_http_escape(char *buf, size_t cap, const char *s)
{
  static const char hex[] = "0123456789ABCDEF";
  size_t n = strlen(buf);

  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                 c == '~';
    if (n + (plain ? 1 : 3) + 1 > cap)
      return -1;
    if (plain) {
      buf[n++] = (char)c;
    } else {
      buf[n++] = '%';
      buf[n++] = hex[c >> 4];
      buf[n++] = hex[c & 15];
    }
  }
  buf[n] = '\0';
  return 0;
}
