/*
 * httpclient.h — who sent an HTTP request, and that client's limits.
 *
 * A request's client is its peer, or — when the peer is a trusted proxy
 * (GPUGATE_HTTP_TRUSTED_PROXIES) — the last untrusted hop of the proxy's
 * forwarded header (server/clientaddr.h). That address is what the
 * per-client request rate (GPUGATE_RATE_LIMIT_PER_CLIENT_RPS), the
 * per-client cap on a proxied client's requests in flight
 * (GPUGATE_HTTP_MAX_CONNECTIONS_PER_CLIENT, server/connlimit.h) and the
 * access log's "client" use.
 */
#ifndef GPUGATE_HTTPCLIENT_H
#define GPUGATE_HTTPCLIENT_H

#include <stdbool.h>

#include "server/config.h"
#include "server/ratelimit.h"
#include "server/req.h"

/*
 * Fill req->client, req->client_text and (for a trusted proxy)
 * req->peer_text from req->conn's peer and, only when that peer is a
 * trusted proxy, its forwarded header. A peer that is not an IP address
 * leaves them empty. On the request's first call, its headers in.
 */
void httpclient_identify(const struct config *cfg, struct gg_req *req);

/*
 * The client's limits, before anything else of the request: a token of
 * its request rate from per_client at now_us, and — through a trusted
 * proxy, whose connections were not counted per client — one of its
 * per-client slots until httpclient_release(). False (with a 429 problem
 * and Retry-After recorded in req) to refuse.
 */
bool httpclient_admit(const struct config *cfg, struct ratelimit *per_client,
                      struct gg_req *req, long long now_us);

/* Give back the slot httpclient_admit() took, if any. From the request's
 * completion. */
void httpclient_release(struct gg_req *req);

#endif
