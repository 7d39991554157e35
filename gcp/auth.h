/*
 * auth.h — OAuth 2.0 access tokens for Cloud Batch (SPEC §4): from the GCE
 * metadata server, from a service-account key file (an RS256 JWT-bearer
 * grant, RFC 7523, signed with OpenSSL), or none at all (local emulator).
 *
 * A token source caches its token until shortly before expiry: 5 minutes,
 * or 10 % of the lifetime for tokens that live under 50 minutes. It is
 * thread-safe (one mutex; one fetch at a time, so a burst of callers makes
 * one request), may be shared by every Batch client of the process, and
 * never logs a token.
 */
#ifndef GPUGATE_BATCH_AUTH_H
#define GPUGATE_BATCH_AUTH_H

#include <stddef.h>
#include <time.h>

#include "gcp/batch_job.h"
#include "gcp/gcp_config.h"

#define BATCH_TOKEN_MAX 4096 /* bytes of an access token, NUL included */
#define BATCH_TOKEN_SCOPE "https://www.googleapis.com/auth/cloud-platform"
#define BATCH_TOKEN_DEFAULT_URI "https://oauth2.googleapis.com/token"

struct batch_token_source;

/*
 * Fetch a fresh token into token (toklen bytes) and its lifetime in seconds
 * into *expires_in_s. Returns 0, or -1 with *e filled. Called with the
 * source's mutex held.
 */
typedef int (*batch_token_fetch_fn)(void *ctx, char *token, size_t toklen,
                                    long *expires_in_s, struct batch_error *e);

/* A clock in seconds; only differences matter (default: CLOCK_MONOTONIC). */
typedef time_t (*batch_clock_fn)(void *ctx);

/* A service-account key file's fields (the JSON Google issues). */
struct batch_sa_key {
  char client_email[256];
  char private_key_id[128]; /* "" when absent: no "kid" in the JWT */
  char token_uri[512];      /* BATCH_TOKEN_DEFAULT_URI when absent */
  char *private_key;        /* owned PEM; wiped and freed by _key_free */
};

/*
 * A token source as cfg->gcp_token_source says: "metadata" (cfg->
 * metadata_host), "key-file" (cfg->gcp_key_file, read and checked now) or
 * "none". Returns a new source to free with batch_token_free(), or NULL
 * with a one-line message in err. cfg is only read during the call.
 */
struct batch_token_source *batch_token_new(const struct gcp_config *cfg,
                                           char *err, size_t errlen);

/*
 * The same for tokens of another scope (the BigQuery pull's): the key
 * file's assertion names it, the metadata server is asked for it
 * (…/token?scopes=scope). scope is a URL without '&', '?', '#', '%' or
 * spaces, at most 255 bytes.
 */
struct batch_token_source *batch_token_new_scoped(const struct gcp_config *cfg,
                                                  const char *scope, char *err,
                                                  size_t errlen);

/*
 * A token source over any fetch function and clock (tests, tools). clock
 * NULL = the monotonic clock. fetch_ctx and clock_ctx are borrowed and must
 * outlive the source. Returns NULL when out of memory.
 */
struct batch_token_source *batch_token_new_custom(batch_token_fetch_fn fetch,
                                                  void *fetch_ctx,
                                                  batch_clock_fn clock,
                                                  void *clock_ctx);

/* Free a source (NULL is fine); wipes the cached token. */
void batch_token_free(struct batch_token_source *ts);

/*
 * The current access token, fetched or refreshed when due, copied into out.
 * Returns 0 (token in out), 1 when the source is "none" (out = "", send no
 * Authorization header), or -1 with *e filled (e.g. the metadata server is
 * unreachable: retryable). When a refresh fails while the cached token is
 * still valid for 10 s more, that token is returned. Thread-safe.
 */
int batch_token_get(struct batch_token_source *ts, char *out, size_t outlen,
                    struct batch_error *e);

/* Forget the cached token (after a 401), so the next get fetches. */
void batch_token_invalidate(struct batch_token_source *ts);

/* Seconds before expiry at which a token of this lifetime is refreshed. */
long batch_token_refresh_margin_s(long lifetime_s);

/*
 * Read a service-account key JSON file into *key (zeroed first): needs
 * client_email and private_key (a PEM that OpenSSL can load); token_uri and
 * private_key_id are optional. Returns 0, or -1 with a message in err (never
 * the key). Free with batch_token_key_free() whatever the result.
 */
int batch_token_read_key(const char *path, struct batch_sa_key *key, char *err,
                         size_t errlen);

/* Wipe and free what batch_token_read_key() allocated; NULL is fine. */
void batch_token_key_free(struct batch_sa_key *key);

/*
 * The signed JWT-bearer assertion for key at time iat: header
 * {"alg":"RS256","typ":"JWT","kid":private_key_id}, claims {iss:
 * client_email, scope: cloud-platform, aud: token_uri, iat, exp: iat+3600},
 * base64url without padding, RS256 (EVP, SHA-256, PKCS#1 v1.5). Returns a
 * new string in *out (caller frees) and 0, or -1 with a message in err.
 */
int batch_token_assertion(const struct batch_sa_key *key, time_t iat,
                          char **out, char *err, size_t errlen);

/* The same assertion for another scope. */
int batch_token_assertion_scoped(const struct batch_sa_key *key,
                                 const char *scope, time_t iat, char **out,
                                 char *err, size_t errlen);

#endif
