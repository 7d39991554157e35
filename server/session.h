/*
 * session.h — requests authenticated by the console's session cookie
 * (`__Host-gpugate_session`) instead of a bearer token: the cookie's id is
 * looked up by its SHA-256 in PostgreSQL (db/sessions.h), then in the
 * replica's cache of verified sessions (identity/sesscache.h), its principal
 * bound like a provider token's, and every such request must carry
 * `X-GPUGate-CSRF: 1`, which a cross-site form cannot send.
 */
#ifndef GPUGATE_SESSION_H
#define GPUGATE_SESSION_H

#include <stdbool.h>

#include "server/req.h"

#define SESSION_COOKIE "__Host-gpugate_session"
#define SESSION_HASH_HEX 65 /* SHA-256 as hex, and its NUL */

/* Sessions cached per replica (identity/sesscache.h). */
#define SESSION_CACHE 4096

/* The hex SHA-256 of the session id sid into hash. */
void session_hash(const char *sid, char hash[SESSION_HASH_HEX]);

/* Whether req carries X-GPUGate-CSRF: 1. */
bool session_csrf_ok(const struct gg_req *req);

/*
 * Authenticate req by its session cookie (sid, borrowed) into
 * req->principal. GG_OK, or the problem recorded: 403 without the CSRF
 * header, 401 for an unknown or expired session, 503 without the
 * database.
 */
enum gg_code session_authenticate(struct gg_req *req, const char *sid);

/* The HKDF label of the key sealing refresh tokens (lib/seal.h). */
#define SESSION_SEAL_INFO "gpugate/refresh-token/v1"

/*
 * Seal the provider's refresh token (borrowed) of the session of hash (hex,
 * the associated data: a sealed token opens only for its own session) into
 * out, under the key derived from cfg's HS256 secret, else the console's
 * client secret; open it again. 0, or -1 (no secret to derive the key
 * from, out too small; open: anything not sealed so for this session).
 */
int session_seal_refresh(const struct config *cfg, const char *hash,
                         const char *token, char *out, size_t outlen);
int session_open_refresh(const struct config *cfg, const char *hash,
                         const char *sealed, char *out, size_t outlen);

/* This replica ended sessions: its cache reads the sessions' stamp before
 * its next use, so they are refused here at once (other replicas within
 * SESSCACHE_CHECK_MS). Thread-safe. */
void session_forget(void);

#endif
