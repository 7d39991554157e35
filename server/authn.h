/*
 * authn.h — authentication and authorisation of one request (authn.c).
 */
#ifndef GPUGATE_SERVER_AUTHN_H
#define GPUGATE_SERVER_AUTHN_H

#include "identity/auth.h"
#include "server/ratelimit.h"
#include "server/req.h"

/*
 * Authenticate req's caller (bearer token, else the console's session
 * cookie), pick the grant that lets it call req->route (the route's
 * {team} for a member) as req->principal's role and team, and take one
 * request from its team's (or role's) budget in limiter at now_us.
 * GG_OK, or the problem recorded in req: 401 without a valid credential,
 * 403 without a binding or a role the route allows, 404 for another
 * team's path, 429 over the rate (with Retry-After).
 */
enum gg_code authn_request(const struct auth_ctx *auth,
                           struct ratelimit *limiter, struct gg_req *req,
                           long long now_us);

#endif
