/*
 * billing_pull.c — the leader's periodic BigQuery pull (see
 * billing_pull.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gcp/auth.h"
#include "gcp/bigquery.h"
#include "db/db.h"
#include "control/billing_pull.h"
#include "control/billing_sync.h"
#include "control/control_config.h"
#include "lib/log.h"

#define CHECK_MS 10000LL   /* the leader asks whether a sync is due (at most) */
#define RETRY_AFTER_S 300L /* after a failed sync */

struct billing_pull {
  const struct control_config *cfg;
  struct batch_token_source *ts;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool kicked, stop;
  atomic_bool cancel;   /* set by stop: a sync in progress ends early */
  long long checked_ms; /* the last kick (loop thread only) */
};

static long long now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether the last sync is old enough for another. */
static bool due(struct db_conn *c, long interval_s)
{
  char i[24], r[24];
  const char *params[2] = {i, r};
  enum gg_code code;
  PGresult *res;
  bool yes;

  snprintf(i, sizeof(i), "%ld", interval_s);
  snprintf(r, sizeof(r), "%ld",
           interval_s < RETRY_AFTER_S ? interval_s : RETRY_AFTER_S);
  res = db_exec(c,
                "SELECT last_sync_at IS NULL OR last_sync_at <= now() - "
                "make_interval(secs => CASE last_outcome WHEN 'failed' "
                "THEN $2::int ELSE $1::int END) FROM billing_sync_state",
                2, params, &code);
  yes = res && PQntuples(res) == 1 && *PQgetvalue(res, 0, 0) == 't';
  PQclear(res);
  return yes;
}

static void *run(void *arg)
{
  struct billing_pull *p = arg;
  struct db_conn conn;
  char err[512];

  memset(&conn, 0, sizeof(conn));
  pthread_mutex_lock(&p->mu);
  for (;;) {
    struct billing_sync_report rep;
    while (!p->kicked && !p->stop)
      pthread_cond_wait(&p->cv, &p->mu);
    if (p->stop)
      break;
    p->kicked = false;
    pthread_mutex_unlock(&p->mu);
    if (conn.pg && PQstatus(conn.pg) != CONNECTION_OK) {
      PQfinish(conn.pg);
      memset(&conn, 0, sizeof(conn));
    }
    if (!conn.pg)
      conn.pg = db_connect(p->cfg->database_url, err, sizeof(err));
    if (conn.pg) {
      billing_sync_publish(&conn);
      if (due(&conn, p->cfg->billing_sync_interval_s)) {
        log_msg(LOG_INFO, "billing sync: pulling %s", p->cfg->billing_bq_table);
        if (billing_sync_run(p->cfg, &conn, p->ts, false, &p->cancel, &rep, err,
                             sizeof(err)) == 0)
          log_msg(LOG_INFO,
                  "billing sync: %ld days in the window, %ld read, %ld rows",
                  rep.days_remote, rep.days_read, rep.rows_read);
      }
    }
    pthread_mutex_lock(&p->mu);
  }
  pthread_mutex_unlock(&p->mu);
  PQfinish(conn.pg);
  return NULL;
}

struct billing_pull *billing_pull_start(const struct control_config *cfg)
{
  struct billing_pull *p;
  char err[512];

  if (!*cfg->billing_bq_table || cfg->billing_sync_interval_s <= 0)
    return NULL;
  p = calloc(1, sizeof(*p));
  if (!p)
    return NULL;
  p->cfg = cfg;
  p->ts = batch_token_new_scoped(&cfg->gcp, BQ_TOKEN_SCOPE, err, sizeof(err));
  if (!p->ts) {
    log_msg(LOG_ERROR, "billing sync: off: %s", err);
    free(p);
    return NULL;
  }
  p->checked_ms = -CHECK_MS;
  atomic_init(&p->cancel, false);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  if (pthread_create(&p->thread, NULL, run, p) != 0) {
    batch_token_free(p->ts);
    free(p);
    return NULL;
  }
  return p;
}

void billing_pull_tick(struct billing_pull *p, bool leader)
{
  long long every;

  if (!p || !leader)
    return;
  every = p->cfg->billing_sync_interval_s * 1000LL < CHECK_MS
              ? p->cfg->billing_sync_interval_s * 1000LL
              : CHECK_MS;
  if (now_ms() - p->checked_ms < every)
    return;
  p->checked_ms = now_ms();
  pthread_mutex_lock(&p->mu);
  p->kicked = true;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

void billing_pull_stop(struct billing_pull *p)
{
  if (!p)
    return;
  atomic_store(&p->cancel, true);
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
  pthread_join(p->thread, NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  batch_token_free(p->ts);
  free(p);
}
