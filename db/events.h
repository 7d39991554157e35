/*
 * events.h — reading the live event stream (migration 0041): a team's or
 * a job's job events and queue position changes after a cursor, in the
 * stream's (xid, id) order and only below the horizon of transactions
 * still running, so that nothing can later appear behind a cursor.
 */
#ifndef GPUGATE_DB_EVENTS_H
#define GPUGATE_DB_EVENTS_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/evcursor.h"

/* One row of the stream; every pointer is borrowed for the callback. */
struct db_event {
  struct evcursor at;
  const char *team;
  const char *job_id;
  bool position;    /* a queue position change, else a job event */
  bool terminal;    /* a job event into SUCCEEDED, FAILED or CANCELLED */
  const char *data; /* the event's JSON object as text */
};

typedef void (*db_event_fn)(void *cls, const struct db_event *ev);

/*
 * The stream's horizon now: the oldest transaction still running
 * (pg_snapshot_xmin). Rows of transactions below it are final. Returns 0,
 * or -1 with the reason in err.
 */
int db_events_horizon(PGconn *pg, uint64_t *xmin, char *err, size_t errlen);

/*
 * Call each(cls, row) for up to limit rows after cursor `after` whose
 * transaction is below horizon, in order: of team (NULL: every team) and,
 * when job is set, of that job only (then rows written before migration
 * 0041 count as xid 0). Returns the number of rows, or -1 with the reason
 * in err. Any thread with its own connection.
 */
int db_events_read(PGconn *pg, const char *team, const char *job,
                   const struct evcursor *after, uint64_t horizon, int limit,
                   db_event_fn each, void *cls, char *err, size_t errlen);

/*
 * Whether job of team exists (*exists) and, if so, whether it has ended
 * with no event after cursor `after` (*done): a follow from there has
 * nothing left to send. Returns 0, or -1 with the reason in err.
 */
int db_events_job_state(PGconn *pg, const char *team, const char *job,
                        const struct evcursor *after, bool *exists, bool *done,
                        char *err, size_t errlen);

/* Whether team exists: 1, 0, or -1 with the reason in err. */
int db_events_team_exists(PGconn *pg, const char *team, char *err,
                          size_t errlen);

#endif
