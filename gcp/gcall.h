/*
 * gcall.h — the core both JSON API clients (gcp/bigquery.c, gcp/logging.c)
 * share: an endpoint without its trailing slashes, and one attempt of a
 * call — an access token from the token source, the Authorization,
 * Content-Type and Expect headers, the request performed on the client's
 * libcurl handle. Retries, backoff and what a status means stay with each
 * client.
 */
#ifndef GPUGATE_GCP_GCALL_H
#define GPUGATE_GCP_GCALL_H

#include <stddef.h>

#include <curl/curl.h>

#include "gcp/auth.h"
#include "gcp/http.h"

/* Copy endpoint into dst (size n) without its trailing slashes. */
void gcall_endpoint(char *dst, size_t n, const char *endpoint);

/* One attempt: method on url with body (NULL: none) and these limits. */
struct gcall {
  const char *what; /* names the call in messages ("entries:list") */
  const char *method;
  const char *url;
  const char *body;
  long total_ms;
  size_t max_response;
  char *buf;      /* NULL, or a buffer for the reply's body (new reference:
                     taken over by gcall_once whatever the outcome) */
  size_t buf_cap; /* its size */
};

enum gcall_outcome {
  GCALL_REPLY = 0,      /* an HTTP reply, any status, in *resp */
  GCALL_TOKEN = -1,     /* no token: *e says why (e->retryable) */
  GCALL_TRANSPORT = -2, /* no reply: *e says why */
};

/*
 * Perform call on h with a token from ts (NULL: none sent). *resp is
 * zeroed first and owned by the caller (batch_http_resp_free) whatever the
 * outcome. The token and its header are wiped before returning.
 */
enum gcall_outcome gcall_once(CURL *h, struct batch_token_source *ts,
                              const struct gcall *call,
                              struct batch_http_resp *resp,
                              struct batch_error *e);

#endif
