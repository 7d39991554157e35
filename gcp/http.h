/*
 * http.h — the one place gpugate performs outbound HTTP (STYLE §11): a
 * request on a caller-owned libcurl easy handle with no signals, connect and
 * total timeouts and a cap on the response size. Used by gcp/auth.c
 * (OAuth tokens) and gcp/batch_client.c (Cloud Batch).
 *
 * An easy handle belongs to one thread at a time; reusing it keeps its
 * connections alive between requests (curl_easy_reset keeps them).
 */
#ifndef GPUGATE_BATCH_HTTP_H
#define GPUGATE_BATCH_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>

#include "gcp/batch_job.h"

#define BATCH_HTTP_CONNECT_MS 3000L
#define BATCH_HTTP_TOTAL_MS 15000L
#define BATCH_HTTP_MAX_RESPONSE ((size_t)8 << 20) /* 8 MiB */

/* One request. Strings are borrowed for the duration of the call. */
struct batch_http_req {
  const char *method; /* "GET", "POST", "DELETE" */
  const char *url;
  struct curl_slist *headers; /* borrowed; NULL = none */
  const char *body;           /* NULL = no body */
  size_t body_len;
  long connect_ms;     /* <= 0: BATCH_HTTP_CONNECT_MS */
  long total_ms;       /* <= 0: BATCH_HTTP_TOTAL_MS */
  size_t max_response; /* 0: BATCH_HTTP_MAX_RESPONSE */
  char *buf;           /* NULL, or a buffer (taken over: the response's body is
                          it, grown if need be) to write the body into */
  size_t buf_cap;      /* its size */
};

/* Its outcome. body is owned: free with batch_http_resp_free(). */
struct batch_http_resp {
  CURLcode code; /* CURLE_OK when an HTTP response arrived */
  long status;   /* HTTP status; 0 without a response */
  char *body;    /* NUL-terminated, may be NULL when empty */
  size_t len;
  size_t cap;           /* of body: what a request may give back as its buf */
  char retry_after[64]; /* the Retry-After header, "" when absent */
  bool too_large;       /* aborted: the body passed max_response */
  char curl_err[CURL_ERROR_SIZE];
};

/*
 * One transfer's state from its setup to its end, for a transfer run by a
 * libcurl multi handle: curl writes into it, so it must not move
 * meanwhile. resp is the outcome (owned: free with batch_http_resp_free()).
 */
struct batch_http_xfer {
  struct batch_http_resp resp;
  size_t cap; /* of resp.body */
  size_t max; /* the response-size cap */
  CURL *h;    /* borrowed: the body's announced length */
};

/*
 * Reset h and set every option of req on it, writing into *x (zeroed
 * first); req and its strings must outlive the transfer. Returns 0, or -1
 * (an option refused: x->resp filled as by batch_http_finish()).
 */
int batch_http_setup(CURL *h, const struct batch_http_req *req,
                     struct batch_http_xfer *x);

/*
 * Complete x after h's transfer ended with code: the HTTP status, the
 * error buffer detached. Returns 0 when an HTTP response arrived (any
 * status), -1 on a transport failure or an oversize body.
 */
int batch_http_finish(CURL *h, CURLcode code, struct batch_http_xfer *x);

/*
 * Perform req on h (reset first, so no option leaks from a previous call).
 * Fills *resp (zeroed first). Returns 0 when an HTTP response arrived (any
 * status), -1 on a transport failure (resp->code says which) or when the
 * body was over the cap. h is borrowed; the caller frees resp.
 */
int batch_http_perform(CURL *h, const struct batch_http_req *req,
                       struct batch_http_resp *resp);

/* Free resp->body; accepts a zeroed struct. */
void batch_http_resp_free(struct batch_http_resp *resp);

/*
 * Fill *e for a failed batch_http_perform(): timeouts DEADLINE_EXCEEDED,
 * other transport failures UNAVAILABLE (both retryable, http_status 0), an
 * oversize reply RESPONSE_TOO_LARGE (not retryable, its HTTP status kept).
 * what names the call ("token", "create", ...) for the message.
 */
void batch_http_transport_error(const struct batch_http_resp *resp,
                                const char *what, struct batch_error *e);

/*
 * The message of a google.rpc.Status error reply (error.message), else the
 * start of the body, into out (NUL-terminated, at most 200 characters).
 */
void batch_http_status_message(const struct batch_http_resp *resp, char *out,
                               size_t len);

/* Whether a failed perform was a connection reset or empty reply. */
bool batch_http_was_reset(const struct batch_http_resp *resp);

/*
 * Append s to buf (NUL-terminated, size cap) percent-encoded for a URL query
 * value or path segment: everything but RFC 3986 unreserved characters is
 * escaped. Returns 0, or -1 when it does not fit (buf then unspecified).
 */
int batch_http_escape(char *buf, size_t cap, const char *s);

#endif
