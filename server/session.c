/*
 * session.c — the cookie side of console sign-in (see session.h). A
 * session is read from PostgreSQL once and then answered from the
 * replica's cache (identity/sesscache.h) until it ends, is due for a refresh
 * or any replica ends a session (the stamp the cache reads at most once a
 * second); its grants are bound from the replica's access-binding cache
 * like a token's, so a binding change applies to open sessions at once. A
 * session holding the provider's refresh token is re-validated once its claims
 * are older than GPUGATE_SESSION_REFRESH_S: the one request (on any replica)
 * that claims the refresh asks the provider, re-reads email and groups from the
 * refreshed ID token, and ends the session when the provider refuses.
 */
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "identity/code_exchange.h"
#include "identity/discovery.h"
#include "db/sessions.h"
#include "identity/bindings.h"
#include "identity/idp.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "server/problem.h"
#include "lib/seal.h"
#include "identity/sesscache.h"
#include "server/session.h"

_Static_assert(
    sizeof(((struct db_session *)0)->refresh_sealed) >=
        SEAL_TEXT_MAX(sizeof(((struct db_session *)0)->refresh_token)),
    "a sealed refresh token fits db_session.refresh_sealed");

void session_hash(const char *sid, char hash[SESSION_HASH_HEX])
{
  unsigned char d[SHA256_DIGEST_LENGTH];
  size_t i;

  SHA256((const unsigned char *)sid, strlen(sid), d);
  for (i = 0; i < sizeof(d); i++)
    snprintf(hash + 2 * i, 3, "%02x", d[i]);
}

bool session_csrf_ok(const struct gg_req *req)
{
  const char *v = req_header(req, "X-GPUGate-CSRF");

  return v && !strcmp(v, "1");
}

/* The key that seals refresh tokens, from the HS256 secret every replica
 * shares, else the console's client secret. 0, or -1 when neither is
 * configured. */
static int seal_key(const struct config *cfg, unsigned char key[SEAL_KEY_LEN])
{
  if (cfg->identity.hs256_secret && cfg->identity.hs256_secret_len > 0)
    return seal_derive_key(cfg->identity.hs256_secret,
                           cfg->identity.hs256_secret_len, SESSION_SEAL_INFO,
                           key);
  if (cfg->identity.oidc.client_secret[0])
    return seal_derive_key(
        (const unsigned char *)cfg->identity.oidc.client_secret,
        strlen(cfg->identity.oidc.client_secret), SESSION_SEAL_INFO, key);
  return -1;
}

/* f (seal_text or seal_open) of in for the session of hash, under the key
 * of cfg (wiped after). */
static int with_key(const struct config *cfg,
                    int (*f)(const unsigned char *, const char *, const char *,
                             char *, size_t),
                    const char *hash, const char *in, char *out, size_t outlen)
{
  unsigned char key[SEAL_KEY_LEN];
  int rc = -1;

  if (seal_key(cfg, key) == 0)
    rc = f(key, hash, in, out, outlen);
  OPENSSL_cleanse(key, sizeof(key));
  return rc;
}

int session_seal_refresh(const struct config *cfg, const char *hash,
                         const char *token, char *out, size_t outlen)
{
  return with_key(cfg, seal_text, hash, token, out, outlen);
}

int session_open_refresh(const struct config *cfg, const char *hash,
                         const char *sealed, char *out, size_t outlen)
{
  return with_key(cfg, seal_open, hash, sealed, out, outlen);
}

/* Verify a refreshed ID token (borrowed) against the session s: same
 * issuer and subject. Its email and groups into s (groups replaced). */
static int revalidate(const struct gg_req *req, const char *id_token,
                      const char *nonce, struct db_session *s, const char **why)
{
  struct idp *idp =
      idp_new(&req->cfg->identity.oidc, req->cfg->identity.jwt_leeway_s);
  struct auth_principal p;
  json_t *groups = NULL; /* new */
  char sid[256];
  int rc = -1;

  *why = "out of memory";
  if (!idp ||
      idp_verify_id_token(idp, id_token, nonce[0] ? nonce : NULL, true,
                          time(NULL), &p, &groups, sid, sizeof(sid), why) != 0)
    goto out;
  if (strcmp(p.issuer, s->issuer) != 0 || strcmp(p.subject, s->subject) != 0) {
    *why = "its issuer or subject is not the session's";
    goto out;
  }
  snprintf(s->email, sizeof(s->email), "%s", p.email);
  json_decref(s->groups);
  s->groups = groups;
  groups = NULL;
  rc = 0;
out:
  json_decref(groups);
  idp_free(idp);
  return rc;
}

/*
 * The session of hash (s, its claims: updated in place) is due for a
 * refresh. GG_OK when refreshed, or left as it is (the refresh is in
 * flight elsewhere, or the provider could not be asked: the claim lapses
 * and a later request tries again); GG_NOT_FOUND when the provider refused
 * and the session has ended; else the problem recorded.
 */
static enum gg_code refresh(struct gg_req *req, const char *hash,
                            struct db_session *s)
{
  const struct config_oidc *o = &req->cfg->identity.oidc;
  struct db_session claim = {0};
  struct discovery_doc doc;
  struct code_exchange x;
  char err[256] = "", *id_token = NULL;
  const char *why = NULL;
  bool refused = false;
  enum gg_code rc;

  rc = db_session_claim_refresh(req_db(req), &req->err, hash,
                                o->session_refresh_s, &claim);
  if (rc != GG_OK)
    return rc == GG_NOT_FOUND ? GG_OK : rc;
  if (session_open_refresh(req->cfg, hash, claim.refresh_sealed,
                           claim.refresh_token,
                           sizeof(claim.refresh_token)) != 0) {
    /* sealed under another key (the secret changed): it cannot be used */
    snprintf(err, sizeof(err), "its refresh token cannot be opened");
    goto ended;
  }
  if (discovery_get(o->issuers[0], time(NULL), &doc, err, sizeof(err)) != 0 ||
      !doc.token_endpoint[0]) {
    log_msg(LOG_WARN, "session refresh: %s",
            err[0] ? err : "the discovery document has no token_endpoint");
    rc = GG_OK;
    goto out;
  }
  x = (struct code_exchange){
      doc.token_endpoint,  o->client_id, o->client_secret,
      claim.refresh_token, "",           ""};
  id_token =
      code_exchange_refresh(&x, s->refresh_token, sizeof(s->refresh_token),
                            &refused, err, sizeof(err));
  if (!id_token && !refused) {
    log_msg(LOG_WARN, "session refresh: %s", err);
    rc = GG_OK;
    goto out;
  }
  if (!id_token || revalidate(req, id_token, claim.nonce, s, &why) != 0)
    goto ended;
  /* a rotated refresh token replaces the old one, sealed like it */
  if (s->refresh_token[0] &&
      session_seal_refresh(req->cfg, hash, s->refresh_token, s->refresh_sealed,
                           sizeof(s->refresh_sealed)) != 0) {
    snprintf(err, sizeof(err), "its rotated refresh token cannot be sealed");
    goto ended;
  }
  rc = db_session_refreshed(req_db(req), &req->err, hash, s);
  goto out;
ended:
  log_msg(LOG_INFO, "session refresh: session of %s ended: %s", s->subject,
          id_token && why ? why : err);
  rc = db_session_delete(req_db(req), &req->err, hash);
  session_forget();
  rc = rc == GG_OK ? GG_NOT_FOUND : rc;
out:
  free(id_token);
  explicit_bzero(claim.refresh_token, sizeof(claim.refresh_token));
  explicit_bzero(s->refresh_token, sizeof(s->refresh_token));
  return rc;
}

/* The replica's cache of verified sessions, made on first use (NULL when
 * it could not be: every request then reads PostgreSQL). */
static struct sesscache *cache;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void cache_make(void)
{
  cache = sesscache_new(SESSION_CACHE);
}

static struct sesscache *cache_get(void)
{
  pthread_once(&cache_once, cache_make);
  return cache;
}

static long long mono_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void session_forget(void)
{
  struct sesscache *c = cache_get();

  if (c)
    sesscache_forget(c);
}

/* Read the sessions' stamp when the cache c needs it before use; GG_OK or
 * the problem recorded. */
static enum gg_code check_stamp(struct gg_req *req, struct sesscache *c,
                                long long now_ms)
{
  long long stamp = -1;
  enum gg_code rc;

  if (!sesscache_check_begin(c, now_ms))
    return GG_OK;
  rc = db_session_stamp(req_db(req), &req->err, &stamp);
  if (sesscache_check_end(c, now_ms, rc == GG_OK, stamp))
    metrics_session_cache_flush();
  return rc;
}

enum gg_code session_authenticate(struct gg_req *req, const char *sid)
{
  struct auth_principal *p = &req->principal;
  const char *groups[IDP_MAX_GROUPS];
  unsigned char key[TOKENCACHE_KEY_LEN];
  char hash[SESSION_HASH_HEX];
  struct sesscache *c = cache_get();
  struct db_session s;
  time_t now = time(NULL);
  long long now_ms = mono_ms();
  bool keyed, refreshed = false;
  enum gg_code rc;
  json_t *g; /* borrowed */
  size_t n = 0, i;

  if (!session_csrf_ok(req))
    return problem_fail(req, GG_FORBIDDEN,
                        "A request authenticated by the session cookie must "
                        "carry the header X-GPUGate-CSRF: 1.");
  keyed = c && sesscache_key(c, sid, key) == 0;
  if (keyed && (rc = check_stamp(req, c, now_ms)) != GG_OK)
    return rc;
  if (keyed && sesscache_get(c, key, now, now_ms, p) &&
      p->bindings_gen == bindings_generation()) {
    metrics_session_cache_hit();
    return GG_OK;
  }
  session_hash(sid, hash);
  rc = db_session_get(req_db(req), &req->err, hash,
                      req->cfg->identity.oidc.session_refresh_s, &s);
  if (rc == GG_OK && s.refresh_due) {
    rc = refresh(req, hash, &s);
    refreshed = true;
  }
  if (rc != GG_OK)
    json_decref(s.groups);
  if (rc == GG_NOT_FOUND)
    return problem_fail(req, GG_UNAUTHORIZED,
                        "The session has ended; sign in again.");
  if (rc != GG_OK)
    return rc;
  memset(p, 0, sizeof(*p));
  p->provider = true;
  p->session = true;
  p->exp = s.exp;
  snprintf(p->issuer, sizeof(p->issuer), "%s", s.issuer);
  snprintf(p->subject, sizeof(p->subject), "%s", s.subject);
  snprintf(p->email, sizeof(p->email), "%s", s.email);
  json_array_foreach (s.groups, i, g)
    if (n < IDP_MAX_GROUPS && json_is_string(g))
      groups[n++] = json_string_value(g);
  idp_bind(p, groups, n);
  json_decref(s.groups);
  /* a refreshed session's row has moved on: the next request reads it */
  if (keyed && !refreshed)
    sesscache_put(c, key, s.stamp, now, s.until, p);
  return GG_OK;
}
