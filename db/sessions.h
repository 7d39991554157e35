/*
 * sessions.h — the console's sign-in state in PostgreSQL: sign-ins in
 * flight (state → nonce, PKCE verifier; taken once) and sessions (by the
 * SHA-256 of their id), so that every replica honours them and a logout
 * ends one everywhere.
 */
#ifndef GPUGATE_DB_SESSIONS_H
#define GPUGATE_DB_SESSIONS_H

#include <jansson.h>
#include <stdbool.h>

#include "lib/err.h"

struct db_conn;

/* A sign-in in flight lives this long. */
#define DB_FLOW_TTL_S 600
/* Sign-ins in flight at most (every replica together). */
#define DB_FLOWS_MAX 100000

/* Record a sign-in in flight, bound to the browser whose flow cookie
 * hashes to flow_hash (hex SHA-256). Strings borrowed. GG_UNAVAILABLE
 * (nothing recorded on req) when DB_FLOWS_MAX are in flight already. */
enum gg_code db_flow_put(struct db_conn *db, struct gg_err *err,
                         const char *state, const char *nonce,
                         const char *verifier, const char *flow_hash);

/*
 * Take (and delete) the sign-in of state started by the browser of
 * flow_hash when it is younger than DB_FLOW_TTL_S: nonce and verifier
 * copied out. GG_NOT_FOUND (nothing recorded on req) when there is none.
 */
enum gg_code db_flow_take(struct db_conn *db, struct gg_err *err,
                          const char *state, const char *flow_hash, char *nonce,
                          size_t nonce_len, char *verifier,
                          size_t verifier_len);

/* Who a session is for. */
struct db_session {
  char issuer[256];
  char subject[128];
  char email[256]; /* "" when none was verified */
  json_t *groups;  /* owned array of strings */
  long long exp;   /* Unix seconds */
  char sid[256];   /* the provider's session id (ID token sid), "" = none */
  char refresh_token[2048]; /* the provider's; "" = none (never logged,
                               never stored: only sealed) */
  /* refresh_token sealed (lib/seal.h) for the database, "" = none */
  char refresh_sealed[2800];
  char nonce[64];   /* the sign-in's nonce (refreshed ID tokens) */
  bool refresh_due; /* get: a refresh token older than the interval */
  long long stamp;  /* get: the sessions' stamp (0040) read with it */
  long long until;  /* get: its claims usable until (Unix s, exclusive) */
};

/* Open a session with id_hash (hex) for s (borrowed) lasting ttl_s. */
enum gg_code db_session_put(struct db_conn *db, struct gg_err *err,
                            const char *id_hash, const struct db_session *s,
                            long ttl_s);

/* The live session of id_hash into *out (free out->groups). GG_NOT_FOUND
 * (nothing recorded) when none or expired. */
enum gg_code db_session_get(struct db_conn *db, struct gg_err *err,
                            const char *id_hash, long refresh_s,
                            struct db_session *out);

/* The sessions' stamp (0040), which moves whenever a session ends early
 * or its claims change, into *stamp. */
enum gg_code db_session_stamp(struct db_conn *db, struct gg_err *err,
                              long long *stamp);

/*
 * Claim the one refresh in flight of id_hash when it is due (its claims
 * older than refresh_s) and unclaimed (a claim lapses after
 * DB_REFRESH_CLAIM_S): its sealed refresh token and nonce into out.
 * GG_NOT_FOUND (nothing recorded) when not due or claimed elsewhere.
 */
#define DB_REFRESH_CLAIM_S 30
enum gg_code db_session_claim_refresh(struct db_conn *db, struct gg_err *err,
                                      const char *id_hash, long refresh_s,
                                      struct db_session *out);

/* A refresh of id_hash succeeded: s's email and groups (borrowed), its
 * sealed refresh token when the provider rotated it (else kept); claim
 * released. */
enum gg_code db_session_refreshed(struct db_conn *db, struct gg_err *err,
                                  const char *id_hash,
                                  const struct db_session *s);

/* End the session of id_hash (and any expired ones); absent is fine. */
enum gg_code db_session_delete(struct db_conn *db, struct gg_err *err,
                               const char *id_hash);

/* The live sessions of (issuer, subject), newest first, as a new array of
 * {"issuer", "subject", "email", "sid", "created_at", "expires_at"} in
 * *out. */
enum gg_code db_sessions_list(struct db_conn *db, struct gg_err *err,
                              const char *issuer, const char *subject,
                              json_t **out);

/* End every session of (issuer, subject); how many in *n. */
enum gg_code db_sessions_end(struct db_conn *db, struct gg_err *err,
                             const char *issuer, const char *subject, long *n);

/*
 * End the sessions a Back-Channel Logout names: those of issuer with the
 * provider session id sid (and subject, when not NULL or ""), or, without
 * a sid, every session of subject. How many in *n.
 */
enum gg_code db_sessions_logout(struct db_conn *db, struct gg_err *err,
                                const char *issuer, const char *sid,
                                const char *subject, long *n);

#endif
