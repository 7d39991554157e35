/*
 * code_exchange.c — authorization code → ID token at the provider's token
 * endpoint (RFC 6749 §4.1.3 with RFC 7636's code_verifier), through the
 * one outbound HTTP layer; and a session's refresh token → a fresh ID
 * token (RFC 6749 §6, OIDC Core §12).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "identity/code_exchange.h"
#include "gcp/http.h"

#define EXCHANGE_TOTAL_MS 10000L
#define EXCHANGE_MAX_RESPONSE ((size_t)64 * 1024)

/* Append "&name=<value escaped>" (no & first) to buf; -1 when it does not
 * fit. */
static int add(char *buf, size_t cap, const char *name, const char *value)
{
  size_t n = strlen(buf);

  if (snprintf(buf + n, cap - n, "%s%s=", n ? "&" : "", name) >= (int)(cap - n))
    return -1;
  return batch_http_escape(buf, cap, value);
}

/*
 * POST the form body to endpoint; the ID token as a new string and, when
 * the provider gives one, its refresh token into refresh (refresh_len;
 * NULL: not wanted). *refused (may be NULL) is set when the provider
 * answered with an OAuth error (HTTP 400/401), as opposed to not
 * answering.
 */
static char *token_request(const char *endpoint, const char *body,
                           char *refresh, size_t refresh_len, bool *refused,
                           char *err, size_t errlen)
{
  struct curl_slist *hdrs = NULL;
  struct batch_http_req rq = {.method = "POST",
                              .url = endpoint,
                              .body = body,
                              .body_len = strlen(body),
                              .total_ms = EXCHANGE_TOTAL_MS,
                              .max_response = EXCHANGE_MAX_RESPONSE};
  struct batch_http_resp rs = {0};
  CURL *c = curl_easy_init();
  json_t *doc = NULL; /* new */
  const char *tok, *rt;
  char *out = NULL;

  if (refused)
    *refused = false;
  if (refresh && refresh_len)
    refresh[0] = '\0';
  if (!c) {
    snprintf(err, errlen, "no curl handle");
    return NULL;
  }
  hdrs = curl_slist_append(hdrs,
                           "Content-Type: application/x-www-form-urlencoded");
  hdrs = curl_slist_append(hdrs, "Accept: application/json");
  rq.headers = hdrs;
  if (batch_http_perform(c, &rq, &rs) != 0) {
    snprintf(err, errlen, "token endpoint unreachable: %.200s",
             rs.curl_err[0] ? rs.curl_err : curl_easy_strerror(rs.code));
    goto out;
  }
  doc = json_loadb(rs.body ? rs.body : "", rs.len, 0, NULL);
  if (rs.status != 200) {
    if (refused && (rs.status == 400 || rs.status == 401))
      *refused = true;
    snprintf(err, errlen, "token endpoint answered HTTP %ld (%.64s)", rs.status,
             json_string_value(json_object_get(doc, "error"))
                 ? json_string_value(json_object_get(doc, "error"))
                 : "no error code");
    goto out;
  }
  tok = json_string_value(json_object_get(doc, "id_token"));
  rt = json_string_value(json_object_get(doc, "refresh_token"));
  if (refresh && rt && strlen(rt) < refresh_len)
    snprintf(refresh, refresh_len, "%s", rt);
  if (!tok || !(out = strdup(tok)))
    snprintf(err, errlen, "the token response holds no id_token");
out:
  json_decref(doc);
  batch_http_resp_free(&rs);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(c);
  return out;
}

char *code_exchange_id_token(const struct code_exchange *x, char *refresh,
                             size_t refresh_len, char *err, size_t errlen)
{
  char body[4096] = "";

  if (add(body, sizeof(body), "grant_type", "authorization_code") ||
      add(body, sizeof(body), "code", x->code) ||
      add(body, sizeof(body), "redirect_uri", x->redirect_uri) ||
      add(body, sizeof(body), "code_verifier", x->code_verifier) ||
      add(body, sizeof(body), "client_id", x->client_id) ||
      add(body, sizeof(body), "client_secret", x->client_secret)) {
    snprintf(err, errlen, "the token request does not fit");
    return NULL;
  }
  return token_request(x->token_endpoint, body, refresh, refresh_len, NULL, err,
                       errlen);
}

char *code_exchange_refresh(const struct code_exchange *x, char *refresh,
                            size_t refresh_len, bool *refused, char *err,
                            size_t errlen)
{
  char body[4096] = "";

  *refused = false;
  if (add(body, sizeof(body), "grant_type", "refresh_token") ||
      add(body, sizeof(body), "refresh_token", x->code) ||
      add(body, sizeof(body), "client_id", x->client_id) ||
      add(body, sizeof(body), "client_secret", x->client_secret)) {
    snprintf(err, errlen, "the refresh request does not fit");
    return NULL;
  }
  return token_request(x->token_endpoint, body, refresh, refresh_len, refused,
                       err, errlen);
}
