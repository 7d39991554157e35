/*
 * discovery.h — OpenID Provider metadata (OpenID Connect Discovery 1.0):
 * `<issuer>/.well-known/openid-configuration`, fetched with libcurl and
 * cached per issuer for an hour; a failed fetch keeps what was cached and
 * is retried at most every 30 s. The document's `issuer` must equal the
 * configured issuer exactly (trailing slash included), or it is refused.
 * Fetches run off the request workers, on a thread of their own
 * (identity/bgfetch.h, as the key sets' do): a caller that has a document
 * cached, even a stale one, never waits (a stale one is refetched behind
 * it); a caller with none waits for the one fetch in flight at most
 * BGFETCH_WAIT_MS (2 s), then fails with DISCOVERY_ERR_FETCHING.
 */
#ifndef GPUGATE_DISCOVERY_H
#define GPUGATE_DISCOVERY_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* What gpugate uses of a provider's metadata. */
struct discovery_doc {
  char jwks_uri[512];
  char authorization_endpoint[512];
  char token_endpoint[512];
  bool groups_scope; /* scopes_supported lists "groups" */
};

/*
 * The metadata of issuer (borrowed) into *out, from the cache; a missing
 * or stale document is fetched on a thread of its own (one fetch per
 * issuer at a time, never under the cache's lock). now is the caller's
 * clock. Returns 0, or -1 with a reason in err: DISCOVERY_ERR_FETCHING
 * when nothing is cached and the fetch in flight outlasted the caller's
 * wait (a later call finds what it brought), else why the last fetch
 * failed. Thread-safe.
 */
int discovery_get(const char *issuer, time_t now, struct discovery_doc *out,
                  char *err, size_t errlen);

/* err of discovery_get() when its wait ended before the fetch did */
#define DISCOVERY_ERR_FETCHING "the provider's metadata is still being fetched"

/*
 * Parse a discovery document (json: len bytes, borrowed) for issuer into
 * *out. Returns 0, or -1 with a reason in err. Pure.
 */
int discovery_parse(const char *issuer, const char *json, size_t len,
                    struct discovery_doc *out, char *err, size_t errlen);

/*
 * Whether url (may be NULL) may be an issuer, a jwks_uri or an endpoint:
 * https://, or http:// to this machine only (localhost, 127.0.0.0/8,
 * [::1]; tests and a provider beside gpugate), never with user info in
 * its authority. Pure.
 */
bool discovery_url_ok(const char *url);

/* Forget every cached document (tests). */
void discovery_reset(void);

#endif
