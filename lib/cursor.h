/*
 * cursor.h — opaque, authenticated list cursors: the position a page ends
 * at, sealed (AES-256-GCM) under the deployment's cursor key and bound to
 * the list it pages (path, team, filters). See cursor.c; server/req.h
 * (req_cursor_for, req_cursor_read) binds them to a request's list.
 */
#ifndef GPUGATE_CURSOR_H
#define GPUGATE_CURSOR_H

#include <stdbool.h>
#include <stddef.h>

#define CURSOR_KEY_LEN 32
#define CURSOR_POSITION_MAX 128 /* bytes of the sealed position */
#define CURSOR_SCOPE_MAX 2048   /* bytes of path and filters bound to it */
#define CURSOR_MAX 220          /* characters of a cursor */

/*
 * The cursor key from a secret (borrowed, len bytes): HMAC-SHA256 with the
 * domain separator "gpugate/cursor/v1", so that a key shared for another
 * purpose (the HS256 JWT secret) yields an unrelated key. 0 or -1.
 */
int cursor_derive_key(const unsigned char *secret, size_t len,
                      unsigned char key[CURSOR_KEY_LEN]);

/*
 * Seal position (1 to CURSOR_POSITION_MAX bytes) for scope under key with
 * the 12-byte iv into out (base64url, NUL-terminated). Pure. 0 or -1 (too
 * long, out too small).
 */
int cursor_seal(const unsigned char key[CURSOR_KEY_LEN], const char *scope,
                const char *position, const unsigned char iv[12], char *out,
                size_t outlen);

/*
 * Open cursor (borrowed) for scope under key: the position into
 * position (poslen bytes with its NUL). Pure, for fuzzing too: any input
 * gives 0 or -1, -1 for anything not sealed by cursor_seal() with this key
 * and scope (tampered, truncated, foreign, another list).
 */
int cursor_open(const unsigned char key[CURSOR_KEY_LEN], const char *scope,
                const char *cursor, char *position, size_t poslen);

#endif
