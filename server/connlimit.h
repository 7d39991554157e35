/*
 * connlimit.h — connection hygiene for the HTTP listeners: a total and a
 * per-client-address cap on open connections, absolute deadlines for a
 * request's headers and body, and a per-role limit on concurrent streamed
 * uploads.
 *
 * The caps are enforced as libmicrohttpd accepts a connection (its accept
 * policy callback): over a cap the socket is closed before anything is
 * allocated for it. Deadlines are absolute — counted from the connection's
 * start (or the previous reply on a kept-alive connection) to the end of the
 * headers, and from there to the end of the body — so a client that
 * trickles one byte at a time gains nothing. A sweeper thread closes
 * (shutdown(2)) connections past their deadline; libmicrohttpd then sees
 * the end of the stream and cleans up as for a client that went away.
 *
 * Behind a load balancer every connection comes from a proxy. A peer inside
 * the trusted proxies' networks (GPUGATE_HTTP_TRUSTED_PROXIES) is therefore
 * not held to the per-client cap as it connects — only to the total cap —
 * and each of its requests is counted instead, once its headers name the
 * client (server/clientaddr.h): from the end of the headers to the end of
 * the reply the request holds one of that client address's slots, the same
 * slots its direct connections hold. A proxy keeps a request in flight on
 * one upstream connection, so a client's requests in flight through it are
 * the connections it holds; idle pooled connections belong to no client.
 */
#ifndef GPUGATE_CONNLIMIT_H
#define GPUGATE_CONNLIMIT_H

#include <microhttpd.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "server/clientaddr.h"

/* Descriptors kept back from the fd limit for everything that is not an
 * HTTP connection: listeners, worker wake-up pipes and epoll sets, the
 * database pool and the loops' sessions, Batch/OAuth curl handles, logs. */
#define CONNLIMIT_FD_RESERVE 128

struct connlimit_cfg {
  long max_connections;  /* > 0 */
  long per_client;       /* 0 = no per-client cap */
  long header_timeout_s; /* > 0 */
  long idle_timeout_s;   /* > 0: a kept-alive connection's next request line */
  long max_uploads_per_role; /* > 0 */
  /* peers whose connections count per request, on the forwarded client
   * (borrowed; n_trusted 0: none) */
  const struct clientaddr_net *trusted;
  int n_trusted;
};

/* Where a connection is: what its deadline is for. */
enum connlimit_phase {
  CONNLIMIT_HEADERS, /* reading a request line and headers */
  CONNLIMIT_BODY,    /* reading the body */
  CONNLIMIT_BUSY,    /* handling and replying: no deadline */
  CONNLIMIT_IDLE     /* kept alive, waiting for the next request */
};

struct connlimit;

/*
 * The default total cap for an fd limit of nofile with a database pool of
 * pool connections and threads HTTP workers: nofile less
 * CONNLIMIT_FD_RESERVE, 2 per pool connection and 4 per worker; at least
 * 16. Pure.
 */
long connlimit_default_total(long nofile, long pool, long threads);

/*
 * The total cap to use: configured (> 0) or derived from nofile as above.
 * A configured cap above what nofile allows is refused: returns -1 with a
 * one-line reason naming GPUGATE_HTTP_MAX_CONNECTIONS in err. Pure.
 */
long connlimit_total(long configured, long nofile, long pool, long threads,
                     char *err, size_t errlen);

/*
 * Raise the soft RLIMIT_NOFILE to the hard limit; returns the soft limit
 * now in force (-1 when it cannot be read).
 */
long connlimit_raise_nofile(void);

/* Start the limiter and its sweeper thread; NULL on failure. */
struct connlimit *connlimit_new(const struct connlimit_cfg *cfg);

/* Stop the sweeper and free; only after every daemon using it stopped. */
void connlimit_free(struct connlimit *cl);

/* libmicrohttpd callbacks; cls is the struct connlimit. */
enum MHD_Result connlimit_accept(void *cls, const struct sockaddr *addr,
                                 socklen_t addrlen);
void connlimit_notify(void *cls, struct MHD_Connection *conn,
                      void **socket_context,
                      enum MHD_ConnectionNotificationCode code);
/* MHD_OPTION_URI_LOG_CALLBACK: a request line arrived. Returns NULL (the
 * request's initial context). */
void *connlimit_request_line(void *cls, const char *uri,
                             struct MHD_Connection *conn);

/*
 * Move conn to phase with a deadline timeout_s from now (0: none). From
 * the access handler's thread. Returns false when the connection's
 * previous deadline has passed already (the caller closes it).
 */
bool connlimit_phase(struct MHD_Connection *conn, enum connlimit_phase phase,
                     long timeout_s);

/* The connection's current deadline has passed (counted as timed out the
 * first time it is seen; the caller closes the connection). */
bool connlimit_expired(struct MHD_Connection *conn);

/*
 * Count conn's current request against client's per-client cap: for a
 * connection from a trusted proxy, whose connections were accepted without
 * it. Returns false (and takes nothing) when client holds the cap already;
 * true otherwise, also when there is no cap or conn is unknown. The slot
 * is given back by connlimit_request_release() or when conn closes.
 * Thread-safe.
 */
bool connlimit_request_take(struct MHD_Connection *conn,
                            const struct clientaddr *client);

/* Give back the slot conn's request took, if any. Thread-safe. */
void connlimit_request_release(struct MHD_Connection *conn);

/*
 * Take one of role_bit's upload slots (role_bit a single bit < 32); false
 * when all are taken. Release each taken slot once. Thread-safe.
 */
bool connlimit_upload_take(struct connlimit *cl, unsigned role_bit);
void connlimit_upload_release(struct connlimit *cl, unsigned role_bit);

#endif
