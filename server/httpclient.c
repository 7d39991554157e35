/*
 * httpclient.c — a request's client address and its limits (see
 * httpclient.h). The forwarded header is read only from a trusted peer;
 * its lines are handed to clientaddr_resolve() as libmicrohttpd keeps
 * them, the last CLIENTADDR_MAX_HOPS of them.
 */
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server/clientaddr.h"
#include "server/connlimit.h"
#include "server/httpclient.h"
#include "server/problem.h"

/* The last CLIENTADDR_MAX_HOPS lines of one header, in order. */
struct header_lines {
  const char *name;
  const char *ring[CLIENTADDR_MAX_HOPS];
  size_t count; /* lines seen */
};

static enum MHD_Result collect_line(void *cls, enum MHD_ValueKind kind,
                                    const char *key, const char *value)
{
  struct header_lines *h = cls;

  (void)kind;
  if (key && value && !strcasecmp(key, h->name))
    h->ring[h->count++ % CLIENTADDR_MAX_HOPS] = value;
  return MHD_YES;
}

void httpclient_identify(const struct config *cfg, struct gg_req *req)
{
  struct MHD_Connection *conn = req->conn;
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  const struct sockaddr *sa = ci ? ci->client_addr : NULL;
  struct header_lines h;
  const char *lines[CLIENTADDR_MAX_HOPS];
  struct clientaddr peer;
  size_t n, i;

  if (!sa || clientaddr_from_sockaddr(sa,
                                      sa->sa_family == AF_INET6
                                          ? sizeof(struct sockaddr_in6)
                                          : sizeof(struct sockaddr_in),
                                      &peer) != 0)
    return; /* not an IP peer: no client address */
  req->client = peer;
  if (clientaddr_in_nets(&peer, cfg->trusted_proxies, cfg->n_trusted_proxies)) {
    memset(&h, 0, sizeof(h));
    h.name = cfg->forwarded_header == CLIENTADDR_FORWARDED ? "Forwarded"
                                                           : "X-Forwarded-For";
    MHD_get_connection_values(conn, MHD_HEADER_KIND, collect_line, &h);
    n = h.count < CLIENTADDR_MAX_HOPS ? h.count : CLIENTADDR_MAX_HOPS;
    for (i = 0; i < n; i++) /* oldest first */
      lines[i] = h.ring[(h.count - n + i) % CLIENTADDR_MAX_HOPS];
    clientaddr_resolve(cfg->trusted_proxies, cfg->n_trusted_proxies, &peer,
                       (enum clientaddr_header)cfg->forwarded_header, lines, n,
                       h.count > n, &req->client);
    clientaddr_format(&peer, req->peer_text);
  }
  clientaddr_format(&req->client, req->client_text);
}

bool httpclient_admit(const struct config *cfg, struct ratelimit *per_client,
                      struct gg_req *req, long long now_us)
{
  long retry = 1;

  if (!req->client_text[0])
    return true;
  if (!ratelimit_take(per_client, req->client_text, now_us, &retry)) {
    char v[24];
    snprintf(v, sizeof(v), "%ld", retry);
    req_add_header(req, MHD_HTTP_HEADER_RETRY_AFTER, v);
    problem_fail(req, GG_TOO_MANY_REQUESTS,
                 "Client %s is over its request rate "
                 "(GPUGATE_RATE_LIMIT_PER_CLIENT_RPS); retry after %ld s.",
                 req->client_text, retry);
    return false;
  }
  if (!req->peer_text[0])
    return true; /* a direct connection: counted as it was accepted */
  if (!connlimit_request_take(req->conn, &req->client)) {
    req_add_header(req, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    problem_fail(req, GG_TOO_MANY_REQUESTS,
                 "Client %s has %ld requests in progress already "
                 "(GPUGATE_HTTP_MAX_CONNECTIONS_PER_CLIENT); retry after 1 s.",
                 req->client_text, cfg->http_max_connections_per_client);
    return false;
  }
  req->client_slot = true;
  return true;
}

void httpclient_release(struct gg_req *req)
{
  if (!req->client_slot)
    return;
  connlimit_request_release(req->conn);
  req->client_slot = false;
}
