/*
 * auth.c — OAuth 2.0 access tokens for Cloud Batch: metadata server,
 * service-account key (RS256 JWT-bearer grant) or none, cached per source
 * under a mutex (see auth.h). Tokens, assertions and private keys are
 * wiped when dropped and never logged or put into error messages.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "gcp/auth.h"
#include "gcp/http.h"
#include "lib/b64url.h"
#include "lib/file.h"

#define KEY_FILE_MAX ((size_t)64 * 1024)
#define ASSERTION_LIFETIME_S 3600
#define DEFAULT_LIFETIME_S 3600 /* when a token reply omits expires_in */
#define STALE_GRACE_S 10        /* a cached token must outlive a request */
#define REFRESH_MARGIN_S 300
#define RETRY_FETCH_S 5 /* between failed refreshes of a valid token */

enum source_kind { SRC_NONE, SRC_METADATA, SRC_KEY_FILE, SRC_CUSTOM };

struct batch_token_source {
  pthread_mutex_t mu;
  enum source_kind kind;
  batch_token_fetch_fn fetch;
  void *fetch_ctx;
  batch_clock_fn clock;
  void *clock_ctx;

  bool have;         /* token holds a fetched token */
  time_t expires_at; /* clock seconds */
  time_t refresh_at;
  char token[BATCH_TOKEN_MAX];

  CURL *curl;              /* built-in fetches only; used under mu */
  char metadata_url[768];  /* SRC_METADATA */
  struct batch_sa_key key; /* SRC_KEY_FILE */
  char scope[256];         /* what the tokens are for */
};

static time_t monotonic_s(void *ctx)
{
  struct timespec ts;

  (void)ctx;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec;
}

long batch_token_refresh_margin_s(long lifetime_s)
{
  long tenth = lifetime_s / 10;
  return tenth < REFRESH_MARGIN_S ? tenth : REFRESH_MARGIN_S;
}

/* ------------------------------------------------------ key and JWT */

static int no_password(char *buf, int size, int rwflag, void *u)
{
  (void)buf;
  (void)size;
  (void)rwflag;
  (void)u;
  return -1; /* encrypted keys are refused, never prompted for */
}

static EVP_PKEY *load_private_key(const char *pem)
{
  BIO *bio = BIO_new_mem_buf(pem, -1);
  EVP_PKEY *pkey = NULL;

  if (bio)
    pkey = PEM_read_bio_PrivateKey(bio, NULL, no_password, NULL);
  BIO_free(bio);
  if (pkey && EVP_PKEY_get_base_id(pkey) != EVP_PKEY_RSA) {
    EVP_PKEY_free(pkey);
    pkey = NULL;
  }
  return pkey;
}

/* Copy a string field of o into dst; -1 when absent, empty or too long. */
static int copy_field(json_t *o, const char *k, char *dst, size_t dstlen)
{
  const char *s = json_string_value(json_object_get(o, k));
  size_t n = s ? strlen(s) : 0;

  if (n == 0 || n >= dstlen)
    return -1;
  memcpy(dst, s, n + 1);
  return 0;
}

int batch_token_read_key(const char *path, struct batch_sa_key *key, char *err,
                         size_t errlen)
{
  char *text = NULL;
  size_t len = 0;
  json_t *root = NULL;
  json_error_t jerr;
  const char *pem;
  EVP_PKEY *pkey = NULL;
  int rc = -1;

  memset(key, 0, sizeof(*key));
  text = file_read(path, KEY_FILE_MAX, &len);
  if (!text) {
    snprintf(err, errlen, "cannot read the key file \"%s\": %s", path,
             strerror(errno));
    goto out;
  }
  root = json_loadb(text, len, 0, &jerr);
  if (!json_is_object(root)) {
    snprintf(err, errlen, "the key file \"%s\" is not a JSON object", path);
    goto out;
  }
  if (copy_field(root, "client_email", key->client_email,
                 sizeof(key->client_email)) != 0) {
    snprintf(err, errlen, "the key file \"%s\" has no usable client_email",
             path);
    goto out;
  }
  if (json_object_get(root, "private_key_id") &&
      copy_field(root, "private_key_id", key->private_key_id,
                 sizeof(key->private_key_id)) != 0) {
    snprintf(err, errlen, "the key file \"%s\" has a bad private_key_id", path);
    goto out;
  }
  if (!json_object_get(root, "token_uri"))
    snprintf(key->token_uri, sizeof(key->token_uri), "%s",
             BATCH_TOKEN_DEFAULT_URI);
  else if (copy_field(root, "token_uri", key->token_uri,
                      sizeof(key->token_uri)) != 0) {
    snprintf(err, errlen, "the key file \"%s\" has a bad token_uri", path);
    goto out;
  }
  pem = json_string_value(json_object_get(root, "private_key"));
  if (pem)
    pkey = load_private_key(pem);
  if (!pkey) {
    snprintf(err, errlen,
             "the key file \"%s\" has no private_key that is an "
             "unencrypted RSA PEM",
             path);
    goto out;
  }
  key->private_key = strdup(pem);
  if (!key->private_key) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  rc = 0;
out:
  EVP_PKEY_free(pkey);
  json_decref(root); /* jansson does not wipe; the file buffer is wiped */
  if (text) {
    OPENSSL_cleanse(text, len);
    free(text);
  }
  return rc;
}

void batch_token_key_free(struct batch_sa_key *key)
{
  if (!key)
    return;
  if (key->private_key) {
    OPENSSL_cleanse(key->private_key, strlen(key->private_key));
    free(key->private_key);
  }
  key->private_key = NULL;
}

/* base64url without padding of n bytes into a new string. */
static char *b64url(const unsigned char *in, size_t n)
{
  size_t cap = 4 * ((n + 2) / 3) + 1;
  char *out = n < SIZE_MAX / 2 ? malloc(cap) : NULL;

  if (out && n > 0 && b64url_encode(in, n, out, cap) == 0) {
    free(out);
    return NULL;
  }
  if (out && n == 0)
    out[0] = '\0';
  return out;
}

static char *b64url_json(json_t *j)
{
  char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  char *out = text ? b64url((unsigned char *)text, strlen(text)) : NULL;

  free(text);
  return out;
}

int batch_token_assertion(const struct batch_sa_key *key, time_t iat,
                          char **out, char *err, size_t errlen)
{
  return batch_token_assertion_scoped(key, BATCH_TOKEN_SCOPE, iat, out, err,
                                      errlen);
}

int batch_token_assertion_scoped(const struct batch_sa_key *key,
                                 const char *scope, time_t iat, char **out,
                                 char *err, size_t errlen)
{
  json_t *header = NULL, *claims = NULL;
  char *h64 = NULL, *c64 = NULL, *s64 = NULL, *signing = NULL, *jwt = NULL;
  unsigned char *sig = NULL;
  size_t siglen = 0, slen;
  EVP_PKEY *pkey = NULL;
  EVP_MD_CTX *md = NULL;
  int rc = -1;

  *out = NULL;
  if (!key->private_key || !(pkey = load_private_key(key->private_key))) {
    snprintf(err, errlen, "the service-account private key cannot be loaded");
    goto out;
  }
  header = json_pack("{s:s, s:s}", "alg", "RS256", "typ", "JWT");
  if (header && key->private_key_id[0])
    json_object_set_new(header, "kid", json_string(key->private_key_id));
  claims =
      json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", key->client_email, "scope",
                scope, "aud", key->token_uri, "iat", (json_int_t)iat, "exp",
                (json_int_t)iat + ASSERTION_LIFETIME_S);
  h64 = b64url_json(header);
  c64 = b64url_json(claims);
  if (!h64 || !c64)
    goto oom;
  slen = strlen(h64) + 1 + strlen(c64);
  signing = malloc(slen + 1);
  if (!signing)
    goto oom;
  snprintf(signing, slen + 1, "%s.%s", h64, c64);

  md = EVP_MD_CTX_new();
  if (!md || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, pkey) != 1 ||
      EVP_DigestSign(md, NULL, &siglen, (unsigned char *)signing, slen) != 1 ||
      !(sig = malloc(siglen)) ||
      EVP_DigestSign(md, sig, &siglen, (unsigned char *)signing, slen) != 1) {
    snprintf(err, errlen, "RS256 signing failed");
    goto out;
  }
  s64 = b64url(sig, siglen);
  if (!s64)
    goto oom;
  jwt = malloc(slen + 1 + strlen(s64) + 1);
  if (!jwt)
    goto oom;
  snprintf(jwt, slen + 1 + strlen(s64) + 1, "%s.%s", signing, s64);
  *out = jwt;
  rc = 0;
  goto out;
oom:
  snprintf(err, errlen, "out of memory");
out:
  EVP_MD_CTX_free(md);
  EVP_PKEY_free(pkey);
  json_decref(header);
  json_decref(claims);
  free(h64);
  free(c64);
  free(s64);
  free(signing);
  free(sig);
  return rc;
}

/* --------------------------------------------------- built-in fetches */

/* A token must be a single header-safe word. */
static bool token_chars_ok(const char *t)
{
  for (; *t; t++)
    if ((unsigned char)*t <= 0x20 || (unsigned char)*t >= 0x7F)
      return false;
  return true;
}

/* {"access_token": ..., "expires_in": n} → token, lifetime. */
static int parse_token_reply(const struct batch_http_resp *r, char *token,
                             size_t toklen, long *expires_in_s,
                             struct batch_error *e)
{
  json_t *root = NULL, *exp;
  json_error_t jerr;
  const char *tok;
  int rc = -1;

  if (r->status != 200) {
    batch_parse_error(r->status, r->body, r->retry_after, e);
    /* retryable as the HTTP status says (429/5xx yes, invalid_grant no) */
    snprintf(e->status, sizeof(e->status), "UNAUTHENTICATED");
    goto out;
  }
  root = r->body ? json_loadb(r->body, r->len, 0, &jerr) : NULL;
  tok = json_string_value(json_object_get(root, "access_token"));
  exp = json_object_get(root, "expires_in");
  if (!tok || !*tok || strlen(tok) >= toklen || !token_chars_ok(tok)) {
    batch_error_transport(e, "UNAUTHENTICATED",
                          "token: the reply has no usable access_token", true);
    e->http_status = r->status;
    goto out;
  }
  memcpy(token, tok, strlen(tok) + 1);
  *expires_in_s = json_is_integer(exp) ? (long)json_integer_value(exp)
                  : json_is_real(exp)  ? (long)json_real_value(exp)
                                       : DEFAULT_LIFETIME_S;
  rc = 0;
out:
  if (root) {
    /* wipe the token inside jansson's copy before freeing it */
    json_t *at = json_object_get(root, "access_token");
    if (json_is_string(at))
      OPENSSL_cleanse((char *)json_string_value(at), json_string_length(at));
  }
  json_decref(root);
  return rc;
}

static int fetch_http(struct batch_token_source *ts,
                      const struct batch_http_req *req, char *token,
                      size_t toklen, long *expires_in_s, struct batch_error *e)
{
  struct batch_http_resp r;
  int rc;

  if (!ts->curl)
    ts->curl = curl_easy_init();
  if (!ts->curl) {
    batch_error_transport(e, "UNAVAILABLE", "token: curl_easy_init failed",
                          true);
    return -1;
  }
  if (batch_http_perform(ts->curl, req, &r) != 0) {
    batch_http_transport_error(&r, "token", e);
    if (r.too_large)
      e->retryable = true; /* a broken token service, not a Batch job */
    batch_http_resp_free(&r);
    return -1;
  }
  rc = parse_token_reply(&r, token, toklen, expires_in_s, e);
  if (r.body)
    OPENSSL_cleanse(r.body, r.len);
  batch_http_resp_free(&r);
  return rc;
}

static int fetch_metadata(void *ctx, char *token, size_t toklen,
                          long *expires_in_s, struct batch_error *e)
{
  struct batch_token_source *ts = ctx;
  struct curl_slist *hdr = curl_slist_append(NULL, "Metadata-Flavor: Google");
  struct batch_http_req req = {
      .method = "GET", .url = ts->metadata_url, .headers = hdr};
  int rc;

  if (!hdr) {
    batch_error_transport(e, "UNAVAILABLE", "token: out of memory", true);
    return -1;
  }
  rc = fetch_http(ts, &req, token, toklen, expires_in_s, e);
  curl_slist_free_all(hdr);
  return rc;
}

static int fetch_key_file(void *ctx, char *token, size_t toklen,
                          long *expires_in_s, struct batch_error *e)
{
  static const char grant[] =
      "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
      "&assertion=";
  struct batch_token_source *ts = ctx;
  struct curl_slist *hdr = NULL;
  char *jwt = NULL, *form = NULL, msg[256];
  size_t cap;
  int rc = -1;

  if (batch_token_assertion_scoped(&ts->key, ts->scope, time(NULL), &jwt, msg,
                                   sizeof(msg))) {
    batch_error_transport(e, "UNAUTHENTICATED", msg, false);
    goto out;
  }
  cap = sizeof(grant) + 3 * strlen(jwt) + 1;
  form = malloc(cap);
  hdr = curl_slist_append(NULL,
                          "Content-Type: application/x-www-form-urlencoded");
  if (!form || !hdr) {
    batch_error_transport(e, "UNAVAILABLE", "token: out of memory", true);
    goto out;
  }
  memcpy(form, grant, sizeof(grant));
  if (batch_http_escape(form, cap, jwt) != 0) {
    batch_error_transport(e, "UNAUTHENTICATED", "token: assertion too long",
                          false);
    goto out;
  }
  {
    struct batch_http_req req = {.method = "POST",
                                 .url = ts->key.token_uri,
                                 .headers = hdr,
                                 .body = form,
                                 .body_len = strlen(form)};
    rc = fetch_http(ts, &req, token, toklen, expires_in_s, e);
  }
out:
  if (jwt) {
    OPENSSL_cleanse(jwt, strlen(jwt));
    free(jwt);
  }
  if (form) {
    OPENSSL_cleanse(form, strlen(form));
    free(form);
  }
  curl_slist_free_all(hdr);
  return rc;
}

/* ------------------------------------------------------------ source */

struct batch_token_source *batch_token_new_custom(batch_token_fetch_fn fetch,
                                                  void *fetch_ctx,
                                                  batch_clock_fn clock,
                                                  void *clock_ctx)
{
  struct batch_token_source *ts = calloc(1, sizeof(*ts));

  if (!ts)
    return NULL;
  if (pthread_mutex_init(&ts->mu, NULL) != 0) {
    free(ts);
    return NULL;
  }
  ts->kind = fetch ? SRC_CUSTOM : SRC_NONE;
  ts->fetch = fetch;
  ts->fetch_ctx = fetch_ctx;
  ts->clock = clock ? clock : monotonic_s;
  ts->clock_ctx = clock_ctx;
  return ts;
}

struct batch_token_source *batch_token_new(const struct gcp_config *cfg,
                                           char *err, size_t errlen)
{
  return batch_token_new_scoped(cfg, BATCH_TOKEN_SCOPE, err, errlen);
}

struct batch_token_source *batch_token_new_scoped(const struct gcp_config *cfg,
                                                  const char *scope, char *err,
                                                  size_t errlen)
{
  struct batch_token_source *ts =
      batch_token_new_custom(NULL, NULL, NULL, NULL);
  const char *src = cfg->gcp_token_source;
  bool other = strcmp(scope, BATCH_TOKEN_SCOPE) != 0;
  int n;

  if (!ts) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  n = snprintf(ts->scope, sizeof(ts->scope), "%s", scope);
  if (n < 0 || (size_t)n >= sizeof(ts->scope) || strpbrk(scope, "&?#% ")) {
    snprintf(err, errlen, "token scope: too long or not a URL");
    goto fail;
  }
  if (!strcmp(src, "none"))
    return ts;
  if (!strcmp(src, "metadata")) {
    const char *host =
        *cfg->metadata_host ? cfg->metadata_host : "metadata.google.internal";
    /* the default scope is the instance's; another is asked for */
    n = snprintf(ts->metadata_url, sizeof(ts->metadata_url),
                 "%s%s/computeMetadata/v1/instance/service-accounts/default/"
                 "token%s%s",
                 strstr(host, "://") ? "" : "http://", host,
                 other ? "?scopes=" : "", other ? scope : "");
    if (n < 0 || (size_t)n >= sizeof(ts->metadata_url)) {
      snprintf(err, errlen, "GCE_METADATA_HOST: too long");
      goto fail;
    }
    ts->kind = SRC_METADATA;
    ts->fetch = fetch_metadata;
  } else if (!strcmp(src, "key-file")) {
    char why[768];
    if (!*cfg->gcp_key_file) {
      snprintf(err, errlen,
               "GPUGATE_GCP_KEY_FILE: required when "
               "GPUGATE_GCP_TOKEN_SOURCE=key-file");
      goto fail;
    }
    if (batch_token_read_key(cfg->gcp_key_file, &ts->key, why, sizeof(why))) {
      snprintf(err, errlen, "GPUGATE_GCP_KEY_FILE: %s", why);
      goto fail;
    }
    ts->kind = SRC_KEY_FILE;
    ts->fetch = fetch_key_file;
  } else {
    snprintf(err, errlen,
             "GPUGATE_GCP_TOKEN_SOURCE: expected metadata, key-file or none");
    goto fail;
  }
  ts->fetch_ctx = ts;
  return ts;
fail:
  batch_token_free(ts);
  return NULL;
}

void batch_token_free(struct batch_token_source *ts)
{
  if (!ts)
    return;
  if (ts->curl)
    curl_easy_cleanup(ts->curl);
  batch_token_key_free(&ts->key);
  OPENSSL_cleanse(ts->token, sizeof(ts->token));
  pthread_mutex_destroy(&ts->mu);
  free(ts);
}

int batch_token_get(struct batch_token_source *ts, char *out, size_t outlen,
                    struct batch_error *e)
{
  char fresh[BATCH_TOKEN_MAX];
  long lifetime = 0;
  time_t now;
  int rc = -1, frc;

  if (outlen > 0)
    out[0] = '\0';
  memset(e, 0, sizeof(*e));
  if (ts->kind == SRC_NONE)
    return 1;
  pthread_mutex_lock(&ts->mu);
  now = ts->clock(ts->clock_ctx);
  if (!ts->have || now >= ts->refresh_at) {
    fresh[0] = '\0';
    frc = ts->fetch(ts->fetch_ctx, fresh, sizeof(fresh), &lifetime, e);
    if (frc == 0 && (!fresh[0] || lifetime <= 0 ||
                     strnlen(fresh, sizeof(fresh)) >= sizeof(fresh))) {
      batch_error_transport(e, "UNAUTHENTICATED",
                            "token: empty token or lifetime", true);
      frc = -1;
    }
    if (frc == 0) {
      memcpy(ts->token, fresh, sizeof(fresh));
      ts->have = true;
      ts->expires_at = now + lifetime;
      ts->refresh_at = ts->expires_at - batch_token_refresh_margin_s(lifetime);
    } else if (ts->have && now + STALE_GRACE_S < ts->expires_at) {
      /* keep serving the cached token; try again a little later, not on
       * every call (each try holds the mutex for up to a timeout) */
      ts->refresh_at = now + RETRY_FETCH_S;
    } else if (ts->have) {
      ts->have = false;
      OPENSSL_cleanse(ts->token, sizeof(ts->token));
    }
    OPENSSL_cleanse(fresh, sizeof(fresh));
  }
  if (ts->have) {
    size_t n = strlen(ts->token);
    if (n < outlen) {
      memcpy(out, ts->token, n + 1);
      memset(e, 0, sizeof(*e));
      rc = 0;
    } else {
      batch_error_transport(e, "INTERNAL", "token: buffer too small", false);
    }
  }
  pthread_mutex_unlock(&ts->mu);
  return rc;
}

void batch_token_invalidate(struct batch_token_source *ts)
{
  if (!ts || ts->kind == SRC_NONE)
    return;
  pthread_mutex_lock(&ts->mu);
  ts->have = false;
  OPENSSL_cleanse(ts->token, sizeof(ts->token));
  pthread_mutex_unlock(&ts->mu);
}
