/*
 * etag.h — entity tags for GET replies, so a client that polls a list
 * (the console refreshes every few seconds) pays a 304 with no body when
 * nothing changed.
 */
#ifndef GPUGATE_ETAG_H
#define GPUGATE_ETAG_H

#include <stdbool.h>
#include <stddef.h>

#include "server/req.h"

/*
 * For a successful GET whose handler set no ETag of its own: tag body
 * (len bytes) with a weak ETag of its content, add the ETag and
 * Cache-Control headers to req, and return true when the request's
 * If-None-Match names that tag (the reply is then 304 with no body).
 * Thread-safe.
 */
bool etag_not_modified(struct gg_req *req, const char *body, size_t len);

/* Whether the If-None-Match header value inm names tag ("*" names any). */
bool etag_matches(const char *inm, const char *tag);

#endif
