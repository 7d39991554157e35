/*
 * events_hub.h — the live event stream's fan-out (SPEC §10): one
 * listener per replica, whatever its number of clients.
 *
 * A thread with its own PostgreSQL session LISTENs on gpugate_events and
 * gpugate_admission (migration 0041), and on each notice — and on a timer,
 * for moves that send none — reads the rows committed since its head
 * from the stream (db/events.h) once, renders each as one SSE frame and
 * appends it to the buffer of every client it concerns. A client first
 * catches up from its own cursor with its request's connection, then
 * joins the hub; its connection is suspended in libmicrohttpd while its
 * buffer is empty and resumed when a frame arrives, so an idle client
 * costs no thread. A client whose buffer passes the bound
 * (GPUGATE_EVENTS_CLIENT_BUFFER) is dropped: its connection is closed and
 * it reconnects with Last-Event-ID, losing nothing.
 */
#ifndef GPUGATE_EVENTS_HUB_H
#define GPUGATE_EVENTS_HUB_H

#include <stdbool.h>

#include "db/db.h"
#include "server/config.h"
#include "lib/evcursor.h"

struct events_sub;

/* Start the listener thread. Returns 0 or -1. */
int events_hub_start(const struct config *cfg);

/*
 * End every stream (each ends after what it holds), refuse new ones and
 * stop the thread. Call before the HTTP listener stops: libmicrohttpd may
 * not stop with suspended connections. Safe when never started.
 */
void events_hub_stop(void);

/* How a stream could not be opened. */
enum events_open {
  EVENTS_OPEN_OK,
  EVENTS_OPEN_UNAVAILABLE, /* the database failed, or the hub is stopped */
  EVENTS_OPEN_BUSY,        /* the stream moved faster than the catch-up */
  EVENTS_OPEN_NO_MEMORY
};

/*
 * Open a stream of team's events (job NULL) or of one job's, after
 * cursor from, for the libmicrohttpd connection conn (borrowed): catch
 * up from the database with db (borrowed, the request's), then join the
 * hub. A job's stream ends after the job's last event; one that has
 * nothing left (done) is opened ended. On EVENTS_OPEN_OK *sub is new: hand
 * it to req_reply_stream() with events_hub_read and events_hub_release.
 */
enum events_open events_hub_open(struct db_conn *db, const char *team,
                                 const char *job, const struct evcursor *from,
                                 bool done, void *conn,
                                 struct events_sub **sub);

/* The stream's horizon as a starting cursor: what commits from now on.
 * Returns 0, or -1 when the database failed. */
int events_hub_now(struct db_conn *db, struct evcursor *now);

/* req_stream_read of a stream (cls: its events_sub). */
long events_hub_read(void *cls, char *buf, size_t max);

/* Frees a stream (cls: its events_sub), leaving the hub. */
void events_hub_release(void *cls);

#endif
