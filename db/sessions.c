/*
 * sessions.c — the SQL of console sign-in: flows taken with DELETE …
 * RETURNING (so a state is used once, even by two replicas at once) and
 * sessions looked up by the hash of their id, never by the id itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/sessions.h"

/* sign-ins never finished go with the next one started (an index range);
 * at most DB_FLOWS_MAX in flight: counting stops past the bound, so a
 * full table costs a bounded scan, and a sign-in then waits (none stored) */
static const char sql_flow_put[] =
    "WITH old AS (DELETE FROM auth_flows WHERE created_at < now() - "
    "make_interval(secs => $4::int)) "
    "INSERT INTO auth_flows (state, nonce, code_verifier, flow_hash) "
    "SELECT $1, $2, $3, $5 WHERE (SELECT count(*) FROM (SELECT 1 FROM "
    "auth_flows LIMIT $6::int) f) < $6::int";

/* the old ones go with it: a flow is never needed after its TTL; only the
 * browser holding the flow cookie takes it (another's leaves it be) */
static const char sql_flow_take[] =
    "WITH old AS (DELETE FROM auth_flows WHERE created_at < now() - "
    "make_interval(secs => $2::int)) "
    "DELETE FROM auth_flows WHERE state = $1 AND flow_hash = $3 AND "
    "created_at >= now() - make_interval(secs => $2::int) "
    "RETURNING nonce, code_verifier";

/* expired sessions go with each new one (an index range) */
static const char sql_session_put[] =
    "WITH old AS (DELETE FROM sessions WHERE expires_at < now()) "
    "INSERT INTO sessions (id_hash, issuer, subject, email, groups, "
    "expires_at, sid, refresh_sealed, nonce) VALUES ($1, $2, $3, NULLIF($4, "
    "''), $5::json, now() + make_interval(secs => $6::int), NULLIF($7, ''), "
    "NULLIF($8, ''), NULLIF($9, ''))";

/* a principal's live sessions, newest first (never their id hashes) */
static const char sql_session_list[] =
    "SELECT coalesce(email, ''), coalesce(sid, ''), "
    "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
    "to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') "
    "FROM sessions WHERE issuer = $1 AND subject = $2 AND expires_at > now() "
    "ORDER BY created_at DESC, id_hash LIMIT 1000";

static const char sql_session_end_principal[] =
    "DELETE FROM sessions WHERE issuer = $1 AND subject = $2";

/* Back-Channel Logout: by sid (and sub when given), or all of sub's */
static const char sql_session_end_logout[] =
    "DELETE FROM sessions WHERE issuer = $1 AND "
    "CASE WHEN $2 <> '' THEN sid = $2 AND ($3 = '' OR subject = $3) "
    "ELSE subject = $3 END";

/* with the sessions' stamp of the same snapshot (0040) and the last
 * second the claims may be used without asking the provider again */
static const char sql_session_get[] =
    "SELECT issuer, subject, coalesce(email, ''), groups, "
    "extract(epoch FROM expires_at)::bigint, refresh_sealed IS NOT NULL AND "
    "refreshed_at < now() - make_interval(secs => $2::int), "
    "(SELECT n FROM session_stamp), floor(extract(epoch FROM "
    "LEAST(expires_at, CASE WHEN refresh_sealed IS NOT NULL THEN refreshed_at "
    "+ make_interval(secs => $2::int) END)))::bigint FROM sessions "
    "WHERE id_hash = $1 AND expires_at > now()";

static const char sql_session_stamp[] = "SELECT n FROM session_stamp";

/* one refresh in flight per session, whichever replica claims it first */
static const char sql_session_claim[] =
    "UPDATE sessions SET refreshing_until = now() + make_interval(secs => "
    "$3::int) WHERE id_hash = $1 AND expires_at > now() AND refresh_sealed "
    "IS NOT NULL AND refreshed_at < now() - make_interval(secs => $2::int) "
    "AND (refreshing_until IS NULL OR refreshing_until < now()) "
    "RETURNING refresh_sealed, coalesce(nonce, '')";

static const char sql_session_refreshed[] =
    "UPDATE sessions SET email = NULLIF($2, ''), groups = $3::json, "
    "refresh_sealed = coalesce(NULLIF($4, ''), refresh_sealed), "
    "refreshed_at = now(), refreshing_until = NULL WHERE id_hash = $1";

static const char sql_session_delete[] =
    "DELETE FROM sessions WHERE id_hash = $1 OR expires_at < now()";

static enum gg_code run(struct db_conn *db, struct gg_err *err, const char *sql,
                        int n, const char *const *params, PGresult **out)
{
  PGresult *res;

  if (!db)
    return db_fail(err, GG_UNAVAILABLE);
  res = db_err_exec(db, err, sql, n, params);
  if (!res)
    return err->code;
  if (out)
    *out = res;
  else
    PQclear(res);
  return GG_OK;
}

enum gg_code db_flow_put(struct db_conn *db, struct gg_err *err,
                         const char *state, const char *nonce,
                         const char *verifier, const char *flow_hash)
{
  char ttl[16], max[16];
  const char *params[6] = {state, nonce, verifier, ttl, flow_hash, max};
  PGresult *res = NULL;
  enum gg_code code;

  snprintf(ttl, sizeof(ttl), "%d", DB_FLOW_TTL_S);
  snprintf(max, sizeof(max), "%d", DB_FLOWS_MAX);
  if ((code = run(db, err, sql_flow_put, 6, params, &res)) != GG_OK)
    return code;
  code = strtol(PQcmdTuples(res), NULL, 10) == 1 ? GG_OK : GG_UNAVAILABLE;
  PQclear(res);
  return code;
}

enum gg_code db_flow_take(struct db_conn *db, struct gg_err *err,
                          const char *state, const char *flow_hash, char *nonce,
                          size_t nonce_len, char *verifier, size_t verifier_len)
{
  char ttl[16];
  const char *params[3] = {state, ttl, flow_hash};
  PGresult *res = NULL;
  enum gg_code code;

  snprintf(ttl, sizeof(ttl), "%d", DB_FLOW_TTL_S);
  if ((code = run(db, err, sql_flow_take, 3, params, &res)) != GG_OK)
    return code;
  if (PQntuples(res) != 1) {
    PQclear(res);
    return GG_NOT_FOUND;
  }
  snprintf(nonce, nonce_len, "%s", PQgetvalue(res, 0, 0));
  snprintf(verifier, verifier_len, "%s", PQgetvalue(res, 0, 1));
  PQclear(res);
  return GG_OK;
}

enum gg_code db_session_put(struct db_conn *db, struct gg_err *err,
                            const char *id_hash, const struct db_session *s,
                            long ttl_s)
{
  char ttl[24], *groups = json_dumps(s->groups, JSON_COMPACT);
  const char *params[9] = {id_hash, s->issuer, s->subject, s->email,
                           groups,  ttl,       s->sid,     s->refresh_sealed,
                           s->nonce};
  enum gg_code code;

  if (!groups)
    return db_fail(err, GG_INTERNAL);
  snprintf(ttl, sizeof(ttl), "%ld", ttl_s);
  code = run(db, err, sql_session_put, 9, params, NULL);
  free(groups);
  return code;
}

enum gg_code db_session_get(struct db_conn *db, struct gg_err *err,
                            const char *id_hash, long refresh_s,
                            struct db_session *out)
{
  char every[24];
  const char *params[2] = {id_hash, every};
  PGresult *res = NULL;
  enum gg_code code;

  memset(out, 0, sizeof(*out));
  snprintf(every, sizeof(every), "%ld", refresh_s);
  if ((code = run(db, err, sql_session_get, 2, params, &res)) != GG_OK)
    return code;
  if (PQntuples(res) != 1) {
    PQclear(res);
    return GG_NOT_FOUND;
  }
  snprintf(out->issuer, sizeof(out->issuer), "%s", PQgetvalue(res, 0, 0));
  snprintf(out->subject, sizeof(out->subject), "%s", PQgetvalue(res, 0, 1));
  snprintf(out->email, sizeof(out->email), "%s", PQgetvalue(res, 0, 2));
  out->groups = json_loads(PQgetvalue(res, 0, 3), 0, NULL);
  if (!json_is_array(out->groups)) {
    json_decref(out->groups);
    out->groups = json_array();
  }
  out->exp = strtoll(PQgetvalue(res, 0, 4), NULL, 10);
  out->refresh_due = PQgetvalue(res, 0, 5)[0] == 't';
  out->stamp = strtoll(PQgetvalue(res, 0, 6), NULL, 10);
  out->until = strtoll(PQgetvalue(res, 0, 7), NULL, 10);
  PQclear(res);
  return GG_OK;
}

enum gg_code db_session_stamp(struct db_conn *db, struct gg_err *err,
                              long long *stamp)
{
  PGresult *res = NULL;
  enum gg_code code;

  if ((code = run(db, err, sql_session_stamp, 0, NULL, &res)) != GG_OK)
    return code;
  if (PQntuples(res) != 1) {
    PQclear(res);
    return db_fail(err, GG_INTERNAL);
  }
  *stamp = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
  PQclear(res);
  return GG_OK;
}

enum gg_code db_session_claim_refresh(struct db_conn *db, struct gg_err *err,
                                      const char *id_hash, long refresh_s,
                                      struct db_session *out)
{
  char every[24], claim[24];
  const char *params[3] = {id_hash, every, claim};
  PGresult *res = NULL;
  enum gg_code code;

  snprintf(every, sizeof(every), "%ld", refresh_s);
  snprintf(claim, sizeof(claim), "%d", DB_REFRESH_CLAIM_S);
  if ((code = run(db, err, sql_session_claim, 3, params, &res)) != GG_OK)
    return code;
  if (PQntuples(res) != 1 ||
      (size_t)PQgetlength(res, 0, 0) >= sizeof(out->refresh_sealed)) {
    PQclear(res);
    return GG_NOT_FOUND;
  }
  snprintf(out->refresh_sealed, sizeof(out->refresh_sealed), "%s",
           PQgetvalue(res, 0, 0));
  snprintf(out->nonce, sizeof(out->nonce), "%s", PQgetvalue(res, 0, 1));
  PQclear(res);
  return GG_OK;
}

enum gg_code db_session_refreshed(struct db_conn *db, struct gg_err *err,
                                  const char *id_hash,
                                  const struct db_session *s)
{
  char *groups = json_dumps(s->groups, JSON_COMPACT);
  const char *params[4] = {id_hash, s->email, groups, s->refresh_sealed};
  enum gg_code code;

  if (!groups)
    return db_fail(err, GG_INTERNAL);
  code = run(db, err, sql_session_refreshed, 4, params, NULL);
  free(groups);
  return code;
}

enum gg_code db_session_delete(struct db_conn *db, struct gg_err *err,
                               const char *id_hash)
{
  const char *params[1] = {id_hash};

  return run(db, err, sql_session_delete, 1, params, NULL);
}

enum gg_code db_sessions_list(struct db_conn *db, struct gg_err *err,
                              const char *issuer, const char *subject,
                              json_t **out)
{
  const char *params[2] = {issuer, subject};
  PGresult *res = NULL;
  enum gg_code code;
  json_t *items; /* new */
  int i;

  *out = NULL;
  if ((code = run(db, err, sql_session_list, 2, params, &res)) != GG_OK)
    return code;
  items = json_array();
  for (i = 0; items && i < PQntuples(res); i++) {
    const char *email = PQgetvalue(res, i, 0), *sid = PQgetvalue(res, i, 1);
    json_array_append_new(
        items,
        json_pack("{s:s, s:s, s:o, s:o, s:s, s:s}", "issuer", issuer, "subject",
                  subject, "email", email[0] ? json_string(email) : json_null(),
                  "sid", sid[0] ? json_string(sid) : json_null(), "created_at",
                  PQgetvalue(res, i, 2), "expires_at", PQgetvalue(res, i, 3)));
  }
  PQclear(res);
  if (!items)
    return db_fail(err, GG_INTERNAL);
  *out = items;
  return GG_OK;
}

/* Run a DELETE of sessions; how many rows went into *n. */
static enum gg_code end_sessions(struct db_conn *db, struct gg_err *err,
                                 const char *sql, int np,
                                 const char *const *params, long *n)
{
  PGresult *res = NULL;
  enum gg_code code;

  *n = 0;
  if ((code = run(db, err, sql, np, params, &res)) != GG_OK)
    return code;
  *n = strtol(PQcmdTuples(res), NULL, 10);
  PQclear(res);
  return GG_OK;
}

enum gg_code db_sessions_end(struct db_conn *db, struct gg_err *err,
                             const char *issuer, const char *subject, long *n)
{
  const char *params[2] = {issuer, subject};

  return end_sessions(db, err, sql_session_end_principal, 2, params, n);
}

enum gg_code db_sessions_logout(struct db_conn *db, struct gg_err *err,
                                const char *issuer, const char *sid,
                                const char *subject, long *n)
{
  const char *params[3] = {issuer, sid ? sid : "", subject ? subject : ""};

  return end_sessions(db, err, sql_session_end_logout, 3, params, n);
}
