/*
 * session.c — the cookie side of console sign-in (see session.h). A
 * session costs one indexed lookup per request; its grants are bound from
 * the replica's access-binding cache like a token's, so a binding change
 * applies to open sessions at once.
 */
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

#include "db/sessions.h"
#include "server/idp.h"
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
  rc = db_session_get(req, hash, &s);
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
