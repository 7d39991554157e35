/*
 * session.c — the cookie side of console sign-in (see session.h). A
 * session costs one indexed lookup per request; its grants are bound from
 * the replica's access-binding cache like a token's, so a binding change
 * applies to open sessions at once. A session holding the provider's
 * refresh token is re-validated once its claims are older than
 * GPUGATE_SESSION_REFRESH_S: the one request (on any replica) that claims
 * the refresh asks the provider, re-reads email and groups from the
 * refreshed ID token, and ends the session when the provider refuses.
 */
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batch/code_exchange.h"
#include "batch/discovery.h"
#include "db/sessions.h"
#include "server/idp.h"
#include "server/log.h"
#include "server/problem.h"
#include "server/session.h"

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

/* Verify a refreshed ID token (borrowed) against the session s: same
 * issuer and subject. Its email and groups into s (groups replaced). */
static int revalidate(const struct gg_req *req, const char *id_token,
                      const char *nonce, struct db_session *s, const char **why)
{
  struct idp *idp = idp_new(&req->cfg->oidc, req->cfg->jwt_leeway_s);
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
  const struct config_oidc *o = &req->cfg->oidc;
  struct db_session claim = {0};
  struct discovery_doc doc;
  struct code_exchange x;
  char err[256] = "", *id_token = NULL;
  const char *why = NULL;
  bool refused = false;
  enum gg_code rc;

  rc = db_session_claim_refresh(req, hash, o->session_refresh_s, &claim);
  if (rc != GG_OK)
    return rc == GG_NOT_FOUND ? GG_OK : rc;
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
  if (!id_token || revalidate(req, id_token, claim.nonce, s, &why) != 0) {
    log_msg(LOG_INFO, "session refresh: session of %s ended: %s", s->subject,
            id_token ? why : err);
    rc = db_session_delete(req, hash);
    rc = rc == GG_OK ? GG_NOT_FOUND : rc;
    goto out;
  }
  rc = db_session_refreshed(req, hash, s);
out:
  free(id_token);
  explicit_bzero(claim.refresh_token, sizeof(claim.refresh_token));
  explicit_bzero(s->refresh_token, sizeof(s->refresh_token));
  return rc;
}

enum gg_code session_authenticate(struct gg_req *req, const char *sid)
{
  struct auth_principal *p = &req->principal;
  const char *groups[IDP_MAX_GROUPS];
  char hash[SESSION_HASH_HEX];
  struct db_session s;
  enum gg_code rc;
  json_t *g; /* borrowed */
  size_t n = 0, i;

  if (!session_csrf_ok(req))
    return problem_fail(req, GG_FORBIDDEN,
                        "A request authenticated by the session cookie must "
                        "carry the header X-GPUGate-CSRF: 1.");
  session_hash(sid, hash);
  rc = db_session_get(req, hash, req->cfg->oidc.session_refresh_s, &s);
  if (rc == GG_OK && s.refresh_due)
    rc = refresh(req, hash, &s);
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
  return GG_OK;
}
