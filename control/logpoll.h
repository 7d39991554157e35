/*
 * logpoll.h — a job's logs from Cloud Logging, within the deployment's read
 * budget (SPEC §10 "Live views").
 *
 * Cloud Logging allows 60 entries:list calls a minute per project by
 * default. Every call gpugate makes — a plain read of a page or a poll for
 * the followers — first takes a token from one bucket for the whole
 * deployment, GPUGATE_LOGGING_READS_PER_MINUTE a minute (a row of the
 * shared token buckets, db/budget.h, leased one token per call): a plain
 * read finds it spent and is answered 429; the poller waits.
 *
 * Followers (?follow=true) never cause a call of their own, and one
 * replica polls for the followers of all (migration 0035): each replica's
 * thread registers, every GPUGATE_LOGGING_POLL_MS, the jobs its followers
 * follow (each from the earliest position one of them has not seen); the
 * replica holding the project's lease (a row it renews; another takes it
 * three intervals after its holder died) asks, once per interval, for the
 * new entries of every registered job in one filter and publishes the
 * answer as a round (a row of log_rounds, NOTIFY gpugate_logs); every
 * replica reads the rounds in order and hands each follower the entries
 * after its own position, filtered by its own task and severity. So the
 * calls per minute stay one poller's, whatever the number of replicas and
 * followers, and a line reaches a follower one poll and one NOTIFY after
 * Logging has it. A follower whose job ended GPUGATE_LOGGING_END_GRACE_MS
 * ago (Logging's ingestion lag: lines written before the end may be
 * listed seconds later) gets what was written up to a complete poll made
 * after that, then its stream ends. A
 * follower's stream suspends its connection while it has nothing to send
 * (so a thousand idle followers hold no server thread); the poller resumes
 * it. A follower whose unsent text passes LOGPOLL_FOLLOWER_MAX is dropped.
 *
 * One instance per process (like the admission waker): start it once the
 * HTTP server runs, stop it before the HTTP server stops (suspended
 * connections must be resumed before libmicrohttpd stops).
 */
#ifndef GPUGATE_SERVER_LOGPOLL_H
#define GPUGATE_SERVER_LOGPOLL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "gcp/logging.h"
#include "control/control_config.h"

struct db_conn;

#define LOGPOLL_FOLLOWER_MAX ((size_t)1 << 20) /* unsent bytes a follower */

/* Start the poller for cfg (borrowed; must outlive it). 0, or -1. */
int logpoll_start(const struct control_config *cfg, char *err, size_t errlen);
void logpoll_stop(void); /* ends every follower; accepts not started */

/* What a plain read came to. */
enum logpoll_rc {
  LOGPOLL_OK = 0,
  LOGPOLL_SPENT,   /* the deployment's read budget (or Logging's quota) */
  LOGPOLL_REFUSED, /* Logging refused the request (400: e.g. page token) */
  LOGPOLL_FAILED,  /* Logging or the database failed */
  LOGPOLL_OFF      /* not started */
};

/*
 * One page of q (borrowed) through c (the request's connection, no
 * transaction open): *doc gets the ListLogEntriesResponse (new). On
 * LOGPOLL_SPENT *retry_s says when to ask again. err gets a one-line
 * reason for the log.
 */
enum logpoll_rc logpoll_read(struct db_conn *c, const struct logging_query *q,
                             int page_size, const char *page_token,
                             json_t **doc, long *retry_s, char *err,
                             size_t errlen);

/* The project and deployment label the reads are for (borrowed), "" when
 * not started. */
const char *logpoll_project(void);
const char *logpoll_deployment(void);

/* A follower's wishes. */
struct logpoll_follow {
  const char *job;   /* gpugate job id (copied) */
  const char *since; /* RFC 3339 or NULL */
  int task;          /* < 0: every task */
  int min_severity;  /* rank (logging_severity_rank), 0: all */
  bool text;         /* text/plain lines, else NDJSON objects */
  void *conn;        /* the MHD connection, suspended while idle */
};

/*
 * A new follower (to hand to req_reply_stream with logpoll_stream_read and
 * logpoll_unfollow), or NULL when not started or out of memory.
 */
void *logpoll_follow(const struct logpoll_follow *w);

/* req_stream_read of a follower: its text, REQ_STREAM_WAIT (suspended)
 * when none yet, 0 when its job has ended and all is sent, -1 dropped. */
long logpoll_stream_read(void *follower, char *buf, size_t max);

/* Forget a follower (the stream's cls_free). */
void logpoll_unfollow(void *follower);

/* Calls to Cloud Logging so far, and followers now (for tests, metrics). */
long logpoll_calls(void);
size_t logpoll_followers(void);

#endif
