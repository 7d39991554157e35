/*
 * gcall.c — one attempt of a call to a Google JSON API, shared by the
 * BigQuery and Cloud Logging clients (see gcall.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcp/gcall.h"

void gcall_endpoint(char *dst, size_t n, const char *endpoint)
{
  size_t len;

  snprintf(dst, n, "%s", endpoint);
  len = strlen(dst);
  while (len > 0 && dst[len - 1] == '/')
    dst[--len] = '\0';
}

enum gcall_outcome gcall_once(CURL *h, struct batch_token_source *ts,
                              const struct gcall *call,
                              struct batch_http_resp *resp,
                              struct batch_error *e)
{
  char token[BATCH_TOKEN_MAX], auth[BATCH_TOKEN_MAX + 32];
  struct curl_slist *headers = NULL;
  struct batch_http_req req;
  enum gcall_outcome rc = GCALL_REPLY;
  int got = 1;

  memset(resp, 0, sizeof(*resp));
  memset(&req, 0, sizeof(req));
  if (ts) {
    got = batch_token_get(ts, token, sizeof(token), e);
    if (got < 0) {
      free(call->buf);
      return GCALL_TOKEN;
    }
  }
  if (got == 0) {
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
    headers = curl_slist_append(headers, auth);
  }
  headers = curl_slist_append(headers, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Expect:"); /* no 100-continue wait */
  req.method = call->method;
  req.url = call->url;
  req.headers = headers;
  req.body = call->body;
  req.body_len = call->body ? strlen(call->body) : 0;
  req.total_ms = call->total_ms;
  req.max_response = call->max_response;
  req.buf = call->buf;
  req.buf_cap = call->buf_cap;
  if (batch_http_perform(h, &req, resp) != 0) {
    batch_http_transport_error(resp, call->what, e);
    rc = GCALL_TRANSPORT;
  }
  curl_slist_free_all(headers);
  memset(token, 0, sizeof(token));
  memset(auth, 0, sizeof(auth));
  return rc;
}
