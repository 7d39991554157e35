/*
 * jwks.c — the public keys that sign Pub/Sub push tokens: a JSON Web Key
 * Set (Google's https://www.googleapis.com/oauth2/v3/certs by default)
 * fetched with libcurl, turned into PEM public keys that libjwt 1.10
 * accepts, and cached for as long as the response's Cache-Control max-age
 * allows. A token signed with a kid the cache does not hold (Google rotated
 * its keys) triggers a refetch, at most one per JWKS_REFETCH_MIN_S so that
 * forged tokens cannot make gpugate hammer the key server. When a refetch
 * fails the keys already held stay in use.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include "batch/http.h"
#include "batch/jwks.h"
#include "server/b64url.h"
#include "server/log.h"

#define JWKS_MAX_RESPONSE ((size_t)256 * 1024)
#define JWKS_TOTAL_MS 5000L
#define JWKS_DEFAULT_MAX_AGE_S 300
#define JWKS_MAX_MAX_AGE_S 86400
#define JWKS_MIN_MAX_AGE_S 10

/* An RSA public key from its modulus and exponent as PEM (new, malloc'd). */
static char *rsa_pem(const char *n64, const char *e64, char *err, size_t errlen)
{
  unsigned char nb[1100], eb[16];
  size_t nlen = 0, elen = 0;
  BIGNUM *n = NULL, *e = NULL;
  OSSL_PARAM_BLD *bld = NULL;
  OSSL_PARAM *params = NULL;
  EVP_PKEY_CTX *ctx = NULL;
  EVP_PKEY *pkey = NULL;
  BIO *bio = NULL;
  char *data, *pem = NULL;
  long len;
  int bits;

  if (b64url_decode(n64, strlen(n64), nb, sizeof(nb), &nlen) || nlen == 0 ||
      b64url_decode(e64, strlen(e64), eb, sizeof(eb), &elen) || elen == 0 ||
      elen > 8) {
    snprintf(err, errlen, "n or e is not base64url of a plausible size");
    goto out;
  }
  n = BN_bin2bn(nb, (int)nlen, NULL);
  e = BN_bin2bn(eb, (int)elen, NULL);
  bld = OSSL_PARAM_BLD_new();
  if (!n || !e || !bld ||
      !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) ||
      !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e) ||
      !(params = OSSL_PARAM_BLD_to_param(bld)) ||
      !(ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) ||
      EVP_PKEY_fromdata_init(ctx) <= 0 ||
      EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0) {
    snprintf(err, errlen, "not an RSA public key");
    goto out;
  }
  bits = EVP_PKEY_get_bits(pkey);
  if (bits < 2048 || bits > 8192 || !BN_is_odd(e) || BN_is_one(e)) {
    snprintf(err, errlen, "RSA key of %d bits or exponent unfit", bits);
    goto out;
  }
  bio = BIO_new(BIO_s_mem());
  if (!bio || !PEM_write_bio_PUBKEY(bio, pkey)) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  len = BIO_get_mem_data(bio, &data);
  if (len <= 0 || !(pem = malloc((size_t)len + 1))) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  memcpy(pem, data, (size_t)len);
  pem[len] = '\0';
out:
  BIO_free(bio);
  EVP_PKEY_free(pkey);
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_free(params);
  OSSL_PARAM_BLD_free(bld);
  BN_free(n);
  BN_free(e);
  ERR_clear_error();
  return pem;
}

void jwks_set_free(struct jwks_set *s)
{
  int i;

  if (!s)
    return;
  for (i = 0; i < s->n; i++)
    free(s->keys[i].pem);
  memset(s, 0, sizeof(*s));
}

int jwks_parse(const char *json, size_t len, struct jwks_set *out, char *err,
               size_t errlen)
{
  json_t *doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, NULL); /* new */
  json_t *keys, *k; /* borrowed */
  size_t i;

  memset(out, 0, sizeof(*out));
  keys = json_object_get(doc, "keys");
  if (!json_is_array(keys)) {
    snprintf(err, errlen, "not a JWK set: no \"keys\" array");
    json_decref(doc);
    return -1;
  }
  json_array_foreach (keys, i, k) {
    const char *kty = json_string_value(json_object_get(k, "kty"));
    const char *alg = json_string_value(json_object_get(k, "alg"));
    const char *use = json_string_value(json_object_get(k, "use"));
    const char *kid = json_string_value(json_object_get(k, "kid"));
    const char *n = json_string_value(json_object_get(k, "n"));
    const char *e = json_string_value(json_object_get(k, "e"));
    char why[128];
    char *pem;

    if (out->n == JWKS_MAX_KEYS)
      break;
    if (!kty || strcmp(kty, "RSA") != 0 || (alg && strcmp(alg, "RS256") != 0) ||
        (use && strcmp(use, "sig") != 0) || !kid || !*kid ||
        strlen(kid) >= sizeof(out->keys[0].kid) || !n || !e)
      continue; /* not a key that can sign RS256 tokens for us */
    pem = rsa_pem(n, e, why, sizeof(why));
    if (!pem) {
      log_msg(LOG_WARN, "jwks: key \"%s\" skipped: %s", kid, why);
      continue;
    }
    snprintf(out->keys[out->n].kid, sizeof(out->keys[0].kid), "%s", kid);
    out->keys[out->n].pem = pem;
    out->n++;
  }
  json_decref(doc);
  if (out->n == 0) {
    snprintf(err, errlen, "the JWK set holds no usable RS256 key");
    return -1;
  }
  return 0;
}

long jwks_max_age(const char *cache_control)
{
  const char *p = cache_control;
  long v = -1;

  while (p && *p) {
    while (*p == ' ' || *p == ',' || *p == '\t')
      p++;
    if (!strncasecmp(p, "no-store", 8) || !strncasecmp(p, "no-cache", 8))
      return 0;
    if (!strncasecmp(p, "max-age=", 8)) {
      char *end;
      v = strtol(p + 8, &end, 10);
      if (end == p + 8 || v < 0)
        v = -1;
    }
    p = strchr(p, ',');
  }
  return v;
}

/* ---- the process's cache ---------------------------------------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char url[512];
  struct jwks_set set;
  time_t expires;    /* refetch at or after */
  time_t last_fetch; /* last attempt, for the refetch rate limit */
  bool fetched;
} cache;

/* Fetch the set at url into cache (mu held). */
static int fetch(const char *url, time_t now, char *err, size_t errlen)
{
  struct batch_http_req rq = {.method = "GET",
                              .url = url,
                              .total_ms = JWKS_TOTAL_MS,
                              .max_response = JWKS_MAX_RESPONSE};
  struct batch_http_resp rs;
  struct jwks_set set = {0};
  struct curl_header *h = NULL;
  CURL *c = curl_easy_init();
  long age = -1;
  int rc = -1;

  cache.last_fetch = now;
  if (!c) {
    snprintf(err, errlen, "no curl handle");
    return -1;
  }
  if (batch_http_perform(c, &rq, &rs) != 0) {
    snprintf(err, errlen, "fetch failed: %.200s",
             rs.too_large ? "response too large"
                          : (rs.curl_err[0] ? rs.curl_err
                                            : curl_easy_strerror(rs.code)));
    goto out;
  }
  if (rs.status != 200) {
    snprintf(err, errlen, "fetch answered HTTP %ld", rs.status);
    goto out;
  }
  if (curl_easy_header(c, "Cache-Control", 0, CURLH_HEADER, -1, &h) ==
      CURLHE_OK)
    age = jwks_max_age(h->value);
  if (jwks_parse(rs.body ? rs.body : "", rs.len, &set, err, errlen) != 0)
    goto out;
  if (age < 0)
    age = JWKS_DEFAULT_MAX_AGE_S;
  if (age < JWKS_MIN_MAX_AGE_S)
    age = JWKS_MIN_MAX_AGE_S;
  if (age > JWKS_MAX_MAX_AGE_S)
    age = JWKS_MAX_MAX_AGE_S;
  jwks_set_free(&cache.set);
  cache.set = set;
  memset(&set, 0, sizeof(set)); /* now the cache's */
  cache.expires = now + age;
  cache.fetched = true;
  rc = 0;
out:
  jwks_set_free(&set);
  batch_http_resp_free(&rs);
  curl_easy_cleanup(c);
  return rc;
}

static const char *find(const char *kid)
{
  int i;

  for (i = 0; i < cache.set.n; i++)
    if (!strcmp(cache.set.keys[i].kid, kid))
      return cache.set.keys[i].pem;
  return NULL;
}

/* Whether a fetch is allowed now: one per JWKS_REFETCH_MIN_S (mu held). */
static bool may_fetch(time_t now)
{
  return cache.last_fetch == 0 || now < cache.last_fetch ||
         now - cache.last_fetch >= JWKS_REFETCH_MIN_S;
}

char *jwks_key_pem(const char *url, const char *kid, time_t now, char *err,
                   size_t errlen)
{
  const char *pem;
  char *copy = NULL;
  char why[256] = "";

  pthread_mutex_lock(&mu);
  if (strcmp(cache.url, url) != 0) {
    jwks_set_free(&cache.set);
    memset(&cache, 0, sizeof(cache));
    snprintf(cache.url, sizeof(cache.url), "%s", url);
  }
  if ((!cache.fetched || now >= cache.expires) && may_fetch(now) &&
      fetch(url, now, why, sizeof(why)) != 0)
    log_msg(LOG_WARN, "jwks: %s", why);
  pem = find(kid);
  if (!pem && may_fetch(now)) {
    /* an unknown kid: the keys may have rotated */
    if (fetch(url, now, why, sizeof(why)) != 0)
      log_msg(LOG_WARN, "jwks: %s", why);
    pem = find(kid);
  }
  if (pem)
    copy = strdup(pem);
  else
    snprintf(err, errlen, "%s",
             cache.set.n ? "unknown key id" : "no signing keys available");
  pthread_mutex_unlock(&mu);
  return copy;
}

void jwks_reset(void)
{
  pthread_mutex_lock(&mu);
  jwks_set_free(&cache.set);
  memset(&cache, 0, sizeof(cache));
  pthread_mutex_unlock(&mu);
}
