/*
 * jwks.c — the one key-set cache (see jwks.h): JWK sets fetched with
 * libcurl, keys checked through latchset/jose and pinned to one algorithm,
 * cached per Cache-Control max-age (clamped to [10 s, 1 day]; 5 min when
 * the response says nothing).
 *
 * Locking: one mutex guards the slots; it is never held across a fetch.
 * Fetches run off the callers (request workers): each on a detached
 * thread of its own (bgfetch.h, shared with the discovery cache). A slot's
 * `fetching` flag makes its fetch single-flight, and `done` wakes the callers
 * that wait for a fetch in flight (only those whose kid the cache does not
 * hold, and for at most JWKS_WAIT_MS). A failed fetch keeps the keys already
 * held.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <jose/jose.h>
#include <jose/openssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "gcp/http.h"
#include "identity/bgfetch.h"
#include "identity/jwks.h"
#include "lib/log.h"

#define JWKS_MAX_RESPONSE ((size_t)256 * 1024)
#define JWKS_TOTAL_MS 5000L
#define JWKS_DEFAULT_MAX_AGE_S 300
#define JWKS_MAX_MAX_AGE_S 86400
#define JWKS_MIN_MAX_AGE_S 10
#define RSA_MIN_BITS 2048
#define RSA_MAX_BITS 8192

enum jwks_alg jwks_alg_parse(const char *name)
{
  if (name && !strcmp(name, "RS256"))
    return JWKS_ALG_RS256;
  if (name && !strcmp(name, "ES256"))
    return JWKS_ALG_ES256;
  return JWKS_ALG_NONE;
}

const char *jwks_alg_name(enum jwks_alg alg)
{
  switch (alg) {
  case JWKS_ALG_RS256:
    return "RS256";
  case JWKS_ALG_ES256:
    return "ES256";
  case JWKS_ALG_NONE:
  default:
    return "";
  }
}

/*
 * The algorithm the public key jwk (borrowed) verifies, decided by what
 * jose makes of it: RS256 for RSA of RSA_MIN_BITS..RSA_MAX_BITS, ES256 for
 * EC P-256; JWKS_ALG_NONE (with why) otherwise.
 */
static enum jwks_alg key_alg(const json_t *jwk, const char **why)
{
  EVP_PKEY *pkey = jose_openssl_jwk_to_EVP_PKEY(NULL, jwk);
  enum jwks_alg alg = JWKS_ALG_NONE;
  char group[64];
  int bits;

  *why = "not a public key jose can read";
  if (!pkey)
    goto out;
  switch (EVP_PKEY_get_base_id(pkey)) {
  case EVP_PKEY_RSA:
    bits = EVP_PKEY_get_bits(pkey);
    *why = "RSA key size out of range";
    if (bits >= RSA_MIN_BITS && bits <= RSA_MAX_BITS)
      alg = JWKS_ALG_RS256;
    break;
  case EVP_PKEY_EC:
    *why = "EC key not on P-256";
    if (EVP_PKEY_get_group_name(pkey, group, sizeof(group), NULL) == 1 &&
        !strcmp(group, "prime256v1"))
      alg = JWKS_ALG_ES256;
    break;
  default:
    *why = "neither RSA nor EC";
    break;
  }
out:
  EVP_PKEY_free(pkey);
  ERR_clear_error();
  return alg;
}

void jwks_set_free(struct jwks_set *s)
{
  int i;

  if (!s)
    return;
  for (i = 0; i < s->n; i++)
    json_decref(s->keys[i].jwk);
  memset(s, 0, sizeof(*s));
}

/* Add the JWK k (borrowed) to out when it is a usable signing key. */
static void add_key(struct jwks_set *out, const json_t *k)
{
  const char *kty = json_string_value(json_object_get(k, "kty"));
  const char *alg = json_string_value(json_object_get(k, "alg"));
  const char *use = json_string_value(json_object_get(k, "use"));
  const char *kid = json_string_value(json_object_get(k, "kid"));
  const char *why = NULL;
  enum jwks_alg pinned;
  json_t *pub; /* new */
  int i;

  if (!kty || (use && strcmp(use, "sig") != 0) || !kid || !*kid ||
      strlen(kid) >= sizeof(out->keys[0].kid))
    return; /* not a signing key we could name */
  for (i = 0; i < out->n; i++)
    if (!strcmp(out->keys[i].kid, kid))
      return; /* the first of a repeated kid wins */
  pinned = key_alg(k, &why);
  if (pinned == JWKS_ALG_NONE) {
    log_msg(LOG_WARN, "jwks: key \"%.64s\" skipped: %s", kid, why);
    return;
  }
  if (alg && jwks_alg_parse(alg) != pinned)
    return; /* RS512, PS256, …: not an algorithm gpugate verifies */
  pub = json_deep_copy(k);
  if (!pub || !jose_jwk_pub(NULL, pub) ||
      json_object_set_new(pub, "alg", json_string(jwks_alg_name(pinned)))) {
    json_decref(pub);
    return;
  }
  /* jose honours key_ops; certificates play no part in verifying */
  json_object_del(pub, "key_ops");
  json_object_del(pub, "x5c");
  snprintf(out->keys[out->n].kid, sizeof(out->keys[0].kid), "%s", kid);
  out->keys[out->n].alg = pinned;
  out->keys[out->n].jwk = pub;
  out->n++;
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
    if (out->n == JWKS_MAX_KEYS)
      break;
    if (json_is_object(k))
      add_key(out, k);
  }
  json_decref(doc);
  if (out->n == 0) {
    snprintf(err, errlen, "the JWK set holds no usable RS256 or ES256 key");
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

struct slot {
  char url[512];
  struct jwks_set set;
  time_t expires;    /* refetch at or after */
  time_t last_fetch; /* last attempt, for the cooldown */
  time_t last_used;  /* for replacing the least recently used slot */
  unsigned long fetches;
  bool fetched;  /* set holds a fetched set (possibly stale) */
  bool fetching; /* a fetch is in flight, outside the lock */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static struct slot slots[JWKS_MAX_SETS];
static unsigned long epoch; /* bumped by jwks_reset: stale fetches drop */
/* the last fetch of sets no longer cached: a slot taken over and given
 * back to its URL keeps its cooldown (a ring, oldest overwritten) */
static struct {
  char url[512];
  time_t last_fetch;
} recent[JWKS_RECENT];
static unsigned n_recent;

/*
 * Fetch the set at url (no lock held): a new set in *out and its max-age
 * in *age. no_cache asks caches on the way for a fresh copy (a refetch for
 * an unknown kid). Returns 0, or -1 with err filled.
 */
static int fetch(const char *url, bool no_cache, struct jwks_set *out,
                 long *age, char *err, size_t errlen)
{
  struct curl_slist *hdrs = NULL;
  struct batch_http_req rq = {.method = "GET",
                              .url = url,
                              .total_ms = JWKS_TOTAL_MS,
                              .max_response = JWKS_MAX_RESPONSE};
  struct batch_http_resp rs = {0};
  struct curl_header *h = NULL;
  CURL *c = curl_easy_init();
  int rc = -1;

  *age = -1;
  memset(out, 0, sizeof(*out));
  if (!c) {
    snprintf(err, errlen, "no curl handle");
    return -1;
  }
  if (no_cache) {
    hdrs = curl_slist_append(NULL, "Cache-Control: no-cache");
    rq.headers = hdrs;
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
    *age = jwks_max_age(h->value);
  if (jwks_parse(rs.body ? rs.body : "", rs.len, out, err, errlen) != 0)
    goto out;
  if (*age < 0)
    *age = JWKS_DEFAULT_MAX_AGE_S;
  if (*age < JWKS_MIN_MAX_AGE_S)
    *age = JWKS_MIN_MAX_AGE_S;
  if (*age > JWKS_MAX_MAX_AGE_S)
    *age = JWKS_MAX_MAX_AGE_S;
  rc = 0;
out:
  batch_http_resp_free(&rs);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(c);
  return rc;
}

/* The slot of url, taken over from the least recently used one when new
 * (mu held). NULL when every slot is busy fetching. */
static struct slot *slot_for(const char *url, time_t now)
{
  struct slot *s, *lru = NULL;
  int i;

  for (i = 0; i < JWKS_MAX_SETS; i++) {
    s = &slots[i];
    if (s->url[0] && !strcmp(s->url, url)) {
      s->last_used = now;
      return s;
    }
    if (!s->fetching &&
        (!lru || !s->url[0] || (lru->url[0] && s->last_used < lru->last_used)))
      lru = s;
  }
  if (!lru || strlen(url) >= sizeof(lru->url))
    return NULL;
  if (lru->url[0] && lru->last_fetch) {
    i = (int)(n_recent++ % JWKS_RECENT);
    snprintf(recent[i].url, sizeof(recent[i].url), "%s", lru->url);
    recent[i].last_fetch = lru->last_fetch;
  }
  jwks_set_free(&lru->set);
  memset(lru, 0, sizeof(*lru));
  snprintf(lru->url, sizeof(lru->url), "%s", url);
  lru->last_used = now;
  for (i = 0; i < JWKS_RECENT; i++)
    if (recent[i].url[0] && !strcmp(recent[i].url, url) &&
        recent[i].last_fetch > lru->last_fetch)
      lru->last_fetch = recent[i].last_fetch;
  return lru;
}

static const struct jwks_key *find(const struct slot *s, const char *kid)
{
  int i;

  for (i = 0; i < s->set.n; i++)
    if (!strcmp(s->set.keys[i].kid, kid))
      return &s->set.keys[i];
  return NULL;
}

/* Whether the cooldown allows a fetch of s now (mu held). */
static bool may_fetch(const struct slot *s, time_t now, long cooldown_s)
{
  return s->last_fetch == 0 || now < s->last_fetch ||
         now - s->last_fetch >= cooldown_s;
}

/* A fetch handed to a thread of its own. */
struct job {
  char url[512];
  bool no_cache;
  time_t now;
  unsigned long epoch;
};

/* Fetch j's set (no lock held on entry or exit: run by bgfetch_start) and
 * store it in the slot of its URL when that is still the one fetching (it
 * may have been replaced, or the cache reset); wake the callers waiting.
 * Frees j. */
static void *finish(void *arg)
{
  struct job *j = arg;
  struct jwks_set set = {0};
  char why[256] = "";
  long age = 0;
  struct slot *s;
  int rc, i;

  rc = fetch(j->url, j->no_cache, &set, &age, why, sizeof(why));
  pthread_mutex_lock(&mu);
  if (rc != 0)
    log_msg(LOG_WARN, "jwks: %s: %s", j->url, why);
  for (i = 0; i < JWKS_MAX_SETS; i++) {
    s = &slots[i];
    if (!s->fetching || strcmp(s->url, j->url) != 0)
      continue;
    s->fetching = false;
    if (rc == 0 && j->epoch == epoch) {
      jwks_set_free(&s->set);
      s->set = set;
      memset(&set, 0, sizeof(set)); /* now the slot's */
      s->expires = j->now + age;
      s->fetched = true;
    }
    break;
  }
  pthread_cond_broadcast(&done);
  pthread_mutex_unlock(&mu);
  jwks_set_free(&set);
  free(j);
  return NULL;
}

/*
 * Start a fetch of s's set (mu held): marked in flight (single-flight, and
 * the cooldown counts from now), run off the caller by bgfetch_start (the
 * slot may have been replaced when it returns).
 */
static void start(struct slot *s, bool no_cache, time_t now)
{
  struct job *j = calloc(1, sizeof(*j)); /* new: finish() frees it */

  s->fetching = true;
  s->last_fetch = now;
  s->fetches++;
  if (!j) {
    s->fetching = false;
    return;
  }
  snprintf(j->url, sizeof(j->url), "%s", s->url);
  j->no_cache = no_cache;
  j->now = now;
  j->epoch = epoch;
  bgfetch_start(&mu, finish, j);
}

/* Whether a fetch of url is in flight (mu held). */
static bool in_flight(const char *url)
{
  int i;

  for (i = 0; i < JWKS_MAX_SETS; i++)
    if (slots[i].fetching && !strcmp(slots[i].url, url))
      return true;
  return false;
}

json_t *jwks_key(const char *url, const char *kid, long cooldown_s, time_t now,
                 enum jwks_alg *alg, char *err, size_t errlen)
{
  const struct jwks_key *k;
  struct slot *s;
  json_t *jwk = NULL;
  bool stale;

  if (cooldown_s <= 0)
    cooldown_s = JWKS_COOLDOWN_S;
  pthread_mutex_lock(&mu);
  s = slot_for(url, now);
  if (!s) {
    snprintf(err, errlen, "too many key sets in use");
    goto out;
  }
  k = find(s, kid);
  stale = !s->fetched || now >= s->expires;
  if ((stale || !k) && !s->fetching && may_fetch(s, now, cooldown_s)) {
    /* the set is due or the keys may have rotated: fetched behind this
     * caller, asking past caches only when an unknown kid is the reason */
    start(s, !k && s->fetched, now);
    s = slot_for(url, now);
    k = s ? find(s, kid) : NULL;
  }
  if (s && !k && s->fetching) {
    /* the fetch under way may bring this kid: wait for it, briefly (a
     * cached kid never waits) */
    bgfetch_await(&mu, &done, JWKS_WAIT_MS, in_flight, url);
    s = slot_for(url, now);
    k = s ? find(s, kid) : NULL;
    if (!k && s && s->fetching) {
      snprintf(err, errlen, "%s", JWKS_ERR_FETCHING);
      goto out;
    }
  }
  if (!k) {
    snprintf(err, errlen, "%s",
             s && s->set.n ? "unknown key id" : "no signing keys available");
    goto out;
  }
  jwk = json_deep_copy(k->jwk);
  if (!jwk) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  *alg = k->alg;
out:
  pthread_mutex_unlock(&mu);
  return jwk;
}

unsigned long jwks_fetches(const char *url)
{
  unsigned long n = 0;
  int i;

  pthread_mutex_lock(&mu);
  for (i = 0; i < JWKS_MAX_SETS; i++)
    if (slots[i].url[0] && !strcmp(slots[i].url, url))
      n = slots[i].fetches;
  pthread_mutex_unlock(&mu);
  return n;
}

void jwks_reset(void)
{
  int i;

  pthread_mutex_lock(&mu);
  epoch++;
  memset(recent, 0, sizeof(recent));
  n_recent = 0;
  for (i = 0; i < JWKS_MAX_SETS; i++) {
    jwks_set_free(&slots[i].set);
    if (slots[i].fetching) {
      /* its fetcher still finds the slot by URL and clears the flag; the
       * epoch keeps the old set it brings out */
      slots[i].fetched = false;
      slots[i].expires = slots[i].last_fetch = 0;
      continue;
    }
    memset(&slots[i], 0, sizeof(slots[i]));
  }
  pthread_mutex_unlock(&mu);
}
