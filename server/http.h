/*
 * http.h — the HTTP server: libmicrohttpd with a pool of worker threads,
 * running the central pipeline of http.c for every request.
 */
#ifndef GPUGATE_HTTP_H
#define GPUGATE_HTTP_H

#include <stddef.h>

#include "identity/auth.h"
#include "server/config.h"

struct db_pool;
struct http_server;

/*
 * Start serving on cfg's address. cfg, auth and pool are borrowed and must
 * outlive the server. Returns NULL with a one-line reason in err.
 */
struct http_server *http_start(const struct config *cfg,
                               const struct auth_ctx *auth,
                               struct db_pool *pool, char *err, size_t errlen);

/* The port actually bound (useful with port 0). */
unsigned short http_port(const struct http_server *s);

/* Finish in-flight requests and stop. Accepts NULL. */
void http_stop(struct http_server *s);

#endif
