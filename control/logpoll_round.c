/*
 * logpoll_round.c — the poll of the replica holding the project's lease
 * (see logpoll_round.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db/job_logs.h"
#include "lib/log.h"
#include "control/logpoll_round.h"

#define POLL_JOBS_MAX 200 /* jobs in one filter (≈ 40 characters each) */
#define POLL_PAGE 1000

static void format_ns(int64_t ns, char *out, size_t len)
{
  time_t t = (time_t)(ns / 1000000000);
  struct tm tm;

  gmtime_r(&t, &tm);
  snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
           (long long)(ns % 1000000000));
}

/* One poll of the lease holder: the new entries of every job some
 * replica's followers follow, in one call, published as a round
 * (db_log_round_put) for every replica to hand on. Returns how long to
 * wait before the next (ms). */
long logpoll_round(struct db_conn *c, struct logpoll_poller *p)
{
  const char *jobs[POLL_JOBS_MAX];
  char since[64] = "", err[512];
  bool live[POLL_JOBS_MAX];
  struct logging_query q;
  struct logging_result r;
  struct db_log_round round;
  PGresult *w = NULL;
  json_t *asked = NULL, *ended = NULL, *entries, *e;
  char *asked_s = NULL, *ended_s = NULL, *entries_s = NULL, *filter = NULL;
  size_t n = 0, i, skip, rows;
  int64_t min_ns = -1, last_ns = -1;
  const char *last_id = "", *next;
  long wait_ms = 0, interval = p->cfg->logging_poll_ms, ret = interval;
  int took;
  bool complete;

  memset(&r, 0, sizeof(r));
  if (!(w = db_log_wants(c, p->ttl_ms, err, sizeof(err)))) {
    log_msg(LOG_WARN, "logs: followed jobs: %s", err);
    return interval;
  }
  rows = (size_t)PQntuples(w);
  if (rows == 0)
    goto out;
  /* the followed jobs, from a rotating start when there are many */
  skip = rows > POLL_JOBS_MAX ? p->rotate % rows : 0;
  for (i = 0; i < rows && n < POLL_JOBS_MAX; i++) {
    int row = (int)((skip + i) % rows);
    int64_t ns = strtoll(PQgetvalue(w, row, 1), NULL, 10);
    jobs[n++] = PQgetvalue(w, row, 0);
    if (min_ns < 0 || ns < min_ns)
      min_ns = ns;
  }
  p->rotate += n;
  if (db_jobs_live(c, jobs, n, p->cfg->logging_end_grace_ms, live, err,
                   sizeof(err)) != 0) {
    log_msg(LOG_WARN, "logs: job states: %s", err);
    goto out;
  }
  /* a job seen ended (past the grace for Logging's ingestion lag) before
   * the call: its followers end with this round when it is complete */
  asked = json_array();
  ended = json_array();
  for (i = 0; i < n; i++) {
    json_array_append_new(asked, json_string(jobs[i]));
    if (!live[i])
      json_array_append_new(ended, json_string(jobs[i]));
  }
  took = p->take(c, &wait_ms, err, sizeof(err));
  if (took < 0)
    log_msg(LOG_WARN, "logs: read budget: %s", err);
  if (took <= 0) {
    ret = wait_ms > interval ? wait_ms : interval;
    goto out;
  }
  if (min_ns > 0)
    format_ns(min_ns, since, sizeof(since));
  memset(&q, 0, sizeof(q));
  q.project = p->cfg->gcp.gcp_project;
  q.deployment = p->cfg->deployment;
  q.jobs = jobs;
  q.n_jobs = n;
  q.since = since;
  q.task = -1;
  filter = malloc(LOGGING_FILTER_MAX + 1);
  if (!filter || logging_filter(&q, filter, LOGGING_FILTER_MAX + 1) != 0) {
    log_msg(LOG_WARN, "logs: the followers' filter cannot be written");
    goto out;
  }
  if (p->call(filter, POLL_PAGE, NULL, &r) != 0) {
    log_msg(LOG_WARN, "logs: %s", r.err);
    ret = r.status == 429 ? 60000 : interval;
    goto out;
  }
  entries = json_object_get(r.doc, "entries");
  next = json_string_value(json_object_get(r.doc, "nextPageToken"));
  complete = !next || !*next;
  json_array_foreach (entries, i, e) {
    const char *ts = json_string_value(json_object_get(e, "timestamp"));
    const char *id = json_string_value(json_object_get(e, "insertId"));
    int64_t ns;
    if (ts && logging_time_ns(ts, &ns) == 0) {
      last_ns = ns;
      last_id = id ? id : "";
    }
  }
  asked_s = json_dumps(asked, JSON_COMPACT);
  ended_s = json_dumps(ended, JSON_COMPACT);
  entries_s =
      json_dumps(json_is_array(entries) ? entries : json_array(), JSON_COMPACT);
  if (!asked_s || !ended_s || !entries_s) {
    log_msg(LOG_WARN, "logs: out of memory");
    goto out;
  }
  memset(&round, 0, sizeof(round));
  round.project = p->cfg->gcp.gcp_project;
  round.since_ns = min_ns < 0 ? 0 : min_ns;
  round.jobs = asked_s;
  round.ended = ended_s;
  round.complete = complete;
  round.last_ns = last_ns;
  round.last_id = last_id;
  round.entries = entries_s;
  if (db_log_round_put(c, &round, err, sizeof(err)) != 0)
    log_msg(LOG_WARN, "logs: publishing a poll: %s", err);
  ret = complete ? interval : 0;
out:
  free(asked_s);
  free(ended_s);
  free(entries_s);
  free(filter);
  json_decref(asked);
  json_decref(ended);
  json_decref(r.doc);
  PQclear(w);
  return ret;
}
