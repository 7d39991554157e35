/*
 * stream.h — the contract between a streamed reply and its source (the
 * live event streams of server/events_hub.c, a job's followed logs in
 * control/logpoll.c): how the source hands the HTTP server its bytes, ends
 * the body, fails, or has nothing yet. The request pipeline
 * (server/http_reply.c) is its one caller; it lives here so that a source
 * below server/ need not include the request.
 */
#ifndef GPUGATE_STREAM_H
#define GPUGATE_STREAM_H

#include <stddef.h>

/*
 * A streamed reply body's source: writes up to max bytes into buf and
 * returns how many (> 0), 0 at the end of the body, or -1 on a failure
 * (the connection is then closed, so the client sees a truncated body).
 * REQ_STREAM_WAIT: nothing yet — the source has suspended the connection
 * (MHD_suspend_connection) and resumes it when it has more.
 * Called on the server's thread after the handler has returned.
 */
#define REQ_STREAM_WAIT (-2L)

typedef long (*req_stream_read)(void *cls, char *buf, size_t max);

#endif
