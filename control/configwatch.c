/*
 * configwatch.c — flushes the submission-target cache when any replica
 * changes the administrator's configuration (see configwatch.h).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "db/db.h"
#include "db/targets.h"
#include "identity/bindings.h"
#include "control/configwatch.h"
#include "lib/log.h"

#define RETRY_MS 1000

struct configwatch {
  const struct control_config *cfg;
  pthread_t thread;
  atomic_bool stop;
  int wake[2]; /* pipe: configwatch_stop() wakes the poll */
  PGconn *pg;  /* own session: LISTEN lives as long as it */
};

/* Reload the access bindings into this replica's cache (identity/bindings.c)
 * on the watch's own session: requests never query them. */
static void load_bindings(struct configwatch *w)
{
  char err[256];

  if (bindings_reload(w->pg, err, sizeof(err)) != 0)
    log_msg(LOG_WARN, "configuration watch: %s", err);
}

/* Connect, LISTEN and load what the notifications keep current; false
 * (err filled, no connection) on failure. */
static bool connect_watch(struct configwatch *w, char *err, size_t errlen)
{
  w->pg = db_connect(w->cfg->direct_database_url, err, errlen);
  if (w->pg && db_targets_listen(w->pg, err, errlen) != 0) {
    PQfinish(w->pg);
    w->pg = NULL;
  }
  if (!w->pg)
    return false;
  /* changes made while nobody listened */
  db_targets_flush();
  load_bindings(w);
  return true;
}

/* Wait up to ms for a notification or a stop; false when the connection
 * broke. */
static bool wait_for(struct configwatch *w, int ms)
{
  struct pollfd fds[2];
  nfds_t n = 1;
  PGnotify *note;
  char drain[16];
  bool changed = false;

  fds[0].fd = w->wake[0];
  fds[0].events = POLLIN;
  if (w->pg) {
    fds[1].fd = PQsocket(w->pg);
    fds[1].events = POLLIN;
    n = 2;
  }
  if (poll(fds, n, ms) < 0 && errno != EINTR)
    return true;
  if ((fds[0].revents & POLLIN) && read(w->wake[0], drain, sizeof(drain)) < 0) {
    /* nothing to do: the stop flag is what matters */
  }
  if (n < 2 || !(fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
    return true;
  if (!PQconsumeInput(w->pg) || PQstatus(w->pg) != CONNECTION_OK)
    return false;
  while ((note = PQnotifies(w->pg)) != NULL) {
    changed = true;
    PQfreemem(note);
  }
  if (changed) {
    db_targets_flush();
    load_bindings(w);
  }
  return true;
}

static void *run(void *arg)
{
  struct configwatch *w = arg;
  char err[256];

  while (!atomic_load(&w->stop)) {
    if (!w->pg && !connect_watch(w, err, sizeof(err))) {
      log_msg(LOG_WARN, "configuration watch: %s", err);
      wait_for(w, RETRY_MS);
      continue;
    }
    if (!wait_for(w, 60000)) {
      log_msg(LOG_WARN, "configuration watch: connection lost");
      PQfinish(w->pg);
      w->pg = NULL;
      db_targets_flush();
    }
  }
  PQfinish(w->pg);
  w->pg = NULL;
  return NULL;
}

struct configwatch *configwatch_start(const struct control_config *cfg)
{
  struct configwatch *w = calloc(1, sizeof(*w));
  char err[256];

  if (!w)
    return NULL;
  w->cfg = cfg;
  atomic_init(&w->stop, false);
  if (pipe(w->wake) != 0) {
    free(w);
    return NULL;
  }
  /* the access bindings are in place before the first request; when the
   * database is not reachable yet, the thread keeps trying */
  if (!connect_watch(w, err, sizeof(err)))
    log_msg(LOG_WARN, "configuration watch: %s", err);
  if (pthread_create(&w->thread, NULL, run, w) != 0) {
    close(w->wake[0]);
    close(w->wake[1]);
    free(w);
    return NULL;
  }
  return w;
}

void configwatch_stop(struct configwatch *w)
{
  if (!w)
    return;
  atomic_store(&w->stop, true);
  if (write(w->wake[1], "x", 1) < 0) {
    /* the poll times out within a minute anyway */
  }
  pthread_join(w->thread, NULL);
  close(w->wake[0]);
  close(w->wake[1]);
  free(w);
}
