/*
 * discovery.c — provider metadata cached per issuer (see discovery.h).
 * Like the key-set cache, and through the same mechanism (bgfetch.h), a
 * fetch runs on a thread of its own and never holds the lock: the slot is
 * marked in flight, and callers that need a document nobody has yet wait
 * for that fetch, briefly, rather than starting another.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "gcp/http.h"
#include "identity/bgfetch.h"
#include "identity/discovery.h"
#include "lib/log.h"

#define DISCOVERY_MAX 8
#define DISCOVERY_TTL_S 3600
#define DISCOVERY_RETRY_S 30
#define DISCOVERY_TOTAL_MS 5000L
#define DISCOVERY_MAX_RESPONSE ((size_t)64 * 1024)

bool discovery_url_ok(const char *url)
{
  const char *host, *end;
  size_t n, i;

  if (!url)
    return false;
  if (!strncmp(url, "https://", 8))
    return url[8] != '\0';
  if (strncmp(url, "http://", 7) != 0)
    return false;
  /* http:// only to this machine: the authority, no user info, is
   * localhost, 127.0.0.0/8 or [::1], with or without a port */
  host = url + 7;
  n = strcspn(host, "/?#");
  if (memchr(host, '@', n))
    return false;
  if (!strncmp(host, "[::1]", 5))
    end = host + 5;
  else {
    end = host + strcspn(host, ":/?#");
    if ((size_t)(end - host) == 9 && !strncmp(host, "localhost", 9))
      ;
    else if ((size_t)(end - host) > 4 && !strncmp(host, "127.", 4)) {
      for (i = 4; host + i < end; i++)
        if (!((host[i] >= '0' && host[i] <= '9') || host[i] == '.'))
          return false;
    } else
      return false;
  }
  if (*end == ':') {
    for (end++; *end >= '0' && *end <= '9'; end++)
      ;
  }
  return *end == '\0' || *end == '/' || *end == '?' || *end == '#';
}

/* Copy the URL member name of doc into dst; false when absent or unfit
 * and required. */
static bool url_member(const json_t *doc, const char *name, char *dst,
                       size_t size, bool required)
{
  const char *v = json_string_value(json_object_get(doc, name));

  dst[0] = '\0';
  if (!v)
    return !required;
  if (!discovery_url_ok(v) || strlen(v) >= size)
    return false;
  snprintf(dst, size, "%s", v);
  return true;
}

int discovery_parse(const char *issuer, const char *json, size_t len,
                    struct discovery_doc *out, char *err, size_t errlen)
{
  json_t *doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, NULL); /* new */
  const char *iss = json_string_value(json_object_get(doc, "issuer"));
  int rc = -1;

  memset(out, 0, sizeof(*out));
  if (!json_is_object(doc)) {
    snprintf(err, errlen, "the discovery document is not a JSON object");
    goto out;
  }
  if (!iss || strcmp(iss, issuer) != 0) {
    snprintf(err, errlen,
             "the discovery document names another issuer than the one "
             "configured");
    goto out;
  }
  if (!url_member(doc, "jwks_uri", out->jwks_uri, sizeof(out->jwks_uri),
                  true)) {
    snprintf(err, errlen, "the discovery document has no usable jwks_uri");
    goto out;
  }
  if (!url_member(doc, "authorization_endpoint", out->authorization_endpoint,
                  sizeof(out->authorization_endpoint), false) ||
      !url_member(doc, "token_endpoint", out->token_endpoint,
                  sizeof(out->token_endpoint), false)) {
    snprintf(err, errlen, "the discovery document has an unusable endpoint");
    goto out;
  }
  {
    json_t *sc; /* borrowed */
    size_t i;
    json_array_foreach (json_object_get(doc, "scopes_supported"), i, sc)
      if (json_is_string(sc) && !strcmp(json_string_value(sc), "groups"))
        out->groups_scope = true;
  }
  rc = 0;
out:
  json_decref(doc);
  return rc;
}

struct slot {
  time_t fetched_at; /* 0: nothing cached */
  time_t last_try;
  char issuer[256];
  char why[256]; /* why the last fetch failed, "" when it did not */
  struct discovery_doc doc;
  bool fetching;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static struct slot slots[DISCOVERY_MAX];

/* Fetch the document of issuer (no lock held). */
static int fetch(const char *issuer, struct discovery_doc *out, char *err,
                 size_t errlen)
{
  char url[512];
  struct batch_http_req rq = {.method = "GET",
                              .url = url,
                              .total_ms = DISCOVERY_TOTAL_MS,
                              .max_response = DISCOVERY_MAX_RESPONSE};
  struct batch_http_resp rs = {0};
  CURL *c = curl_easy_init();
  size_t n = strlen(issuer);
  int rc = -1;

  /* "<issuer>/.well-known/…" with the issuer's own trailing slash, if
   * any, not doubled */
  snprintf(url, sizeof(url), "%.*s/.well-known/openid-configuration",
           (int)(n && issuer[n - 1] == '/' ? n - 1 : n), issuer);
  if (!c) {
    snprintf(err, errlen, "no curl handle");
    return -1;
  }
  if (batch_http_perform(c, &rq, &rs) != 0)
    snprintf(err, errlen, "discovery failed: %.200s",
             rs.curl_err[0] ? rs.curl_err : curl_easy_strerror(rs.code));
  else if (rs.status != 200)
    snprintf(err, errlen, "discovery answered HTTP %ld", rs.status);
  else
    rc = discovery_parse(issuer, rs.body ? rs.body : "", rs.len, out, err,
                         errlen);
  batch_http_resp_free(&rs);
  curl_easy_cleanup(c);
  return rc;
}

static struct slot *slot_for(const char *issuer)
{
  int i, free_i = -1;

  for (i = 0; i < DISCOVERY_MAX; i++) {
    if (!strcmp(slots[i].issuer, issuer))
      return &slots[i];
    if (!slots[i].issuer[0] && free_i < 0)
      free_i = i;
  }
  if (free_i < 0 || strlen(issuer) >= sizeof(slots[0].issuer))
    return NULL;
  snprintf(slots[free_i].issuer, sizeof(slots[0].issuer), "%s", issuer);
  return &slots[free_i];
}

/* A fetch handed to a thread of its own. */
struct job {
  char issuer[256];
  time_t now;
};

/* Fetch j's document (no lock held on entry or exit: run by
 * bgfetch_start) and store it in its issuer's slot, or keep what the slot
 * holds and say why; wake the callers waiting. Frees j. */
static void *finish(void *arg)
{
  struct job *j = arg;
  struct discovery_doc doc;
  char why[256] = "";
  struct slot *s;
  int rc;

  rc = fetch(j->issuer, &doc, why, sizeof(why));
  if (rc != 0)
    log_msg(LOG_WARN, "oidc: %s: %s", j->issuer, why);
  pthread_mutex_lock(&mu);
  s = slot_for(j->issuer);
  if (s && s->fetching) {
    s->fetching = false;
    snprintf(s->why, sizeof(s->why), "%s", why);
    if (rc == 0) {
      s->doc = doc;
      s->fetched_at = j->now;
    }
  }
  pthread_cond_broadcast(&done);
  pthread_mutex_unlock(&mu);
  free(j);
  return NULL;
}

/* Whether a fetch of issuer's document is in flight (mu held). */
static bool in_flight(const char *issuer)
{
  int i;

  for (i = 0; i < DISCOVERY_MAX; i++)
    if (slots[i].fetching && !strcmp(slots[i].issuer, issuer))
      return true;
  return false;
}

/* Start a fetch of s's document (mu held) off the caller: marked in
 * flight (single-flight, and the 30 s retry counts from now). */
static void start(struct slot *s, time_t now)
{
  struct job *j = calloc(1, sizeof(*j)); /* new: finish() frees it */

  if (!j)
    return;
  s->fetching = true;
  s->last_try = now;
  snprintf(j->issuer, sizeof(j->issuer), "%s", s->issuer);
  j->now = now;
  bgfetch_start(&mu, finish, j);
}

int discovery_get(const char *issuer, time_t now, struct discovery_doc *out,
                  char *err, size_t errlen)
{
  struct slot *s;
  int rc = -1;

  pthread_mutex_lock(&mu);
  s = slot_for(issuer);
  if (!s) {
    snprintf(err, errlen, "too many issuers");
    goto out;
  }
  if (!s->fetching &&
      (!s->fetched_at || now - s->fetched_at >= DISCOVERY_TTL_S) &&
      (!s->last_try || now - s->last_try >= DISCOVERY_RETRY_S ||
       now < s->last_try))
    start(s, now); /* a stale document is refetched behind this caller */
  if (!s->fetched_at &&
      bgfetch_await(&mu, &done, BGFETCH_WAIT_MS, in_flight, issuer)) {
    /* nothing cached, and the fetch in flight outlasted the wait */
    snprintf(err, errlen, "%s", DISCOVERY_ERR_FETCHING);
    goto out;
  }
  if (!s->fetched_at) {
    snprintf(err, errlen, "%s",
             s->why[0] ? s->why : "the provider's metadata is unavailable");
    goto out;
  }
  *out = s->doc;
  rc = 0;
out:
  pthread_mutex_unlock(&mu);
  return rc;
}

void discovery_reset(void)
{
  int i;

  pthread_mutex_lock(&mu);
  for (i = 0; i < DISCOVERY_MAX; i++)
    if (!slots[i].fetching)
      memset(&slots[i], 0, sizeof(slots[i]));
  pthread_mutex_unlock(&mu);
}
