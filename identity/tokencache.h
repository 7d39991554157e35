/*
 * tokencache.h — a bounded cache of verified bearer tokens, so that a
 * client reusing its token is not verified again (signature, base64 and
 * JSON of header and claims) on every request.
 *
 * Keyed by the SHA-256 of the whole token (the token itself is not kept),
 * an entry holds the principal its verification produced, the time it was
 * verified at and the token's exp: it is used only from that time (every
 * other time check only gets easier to pass as time goes on) and never at
 * or after exp, even where the verifier's leeway would still accept the
 * token (that case is verified in full).
 * Only tokens that passed every check are put in. The cache belongs to
 * one auth context: keys that reload make a new context, hence an empty
 * cache, and tokencache_flush() empties it explicitly.
 *
 * Capacity is fixed at creation; a full set evicts its oldest entry.
 * Thread-safe (striped locks).
 */
#ifndef GPUGATE_TOKENCACHE_H
#define GPUGATE_TOKENCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "identity/principal.h"

#define TOKENCACHE_KEY_LEN 32 /* SHA-256 */

struct tokencache;

/* A cache of at most capacity entries (rounded up to a multiple of the
 * set size). NULL on allocation failure. */
struct tokencache *tokencache_new(size_t capacity);
void tokencache_free(struct tokencache *c); /* accepts NULL */

/* The key of token[0..len). 0, or -1 when hashing failed. */
int tokencache_key(const struct tokencache *c, const char *token, size_t len,
                   unsigned char key[TOKENCACHE_KEY_LEN]);

/* Copy the principal of key into *out when cached and verified_at <= now
 * < exp. */
bool tokencache_get(struct tokencache *c,
                    const unsigned char key[TOKENCACHE_KEY_LEN], time_t now,
                    struct auth_principal *out);

/* Remember the principal p (copied) of a token that passed every check
 * at verified_at and expires at exp. */
void tokencache_put(struct tokencache *c,
                    const unsigned char key[TOKENCACHE_KEY_LEN],
                    time_t verified_at, long long exp,
                    const struct auth_principal *p);

/* Forget every entry. */
void tokencache_flush(struct tokencache *c);

/* Entries held (expired ones included until replaced). */
size_t tokencache_count(struct tokencache *c);

#endif
