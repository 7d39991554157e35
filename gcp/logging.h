/*
 * logging.h — a Cloud Logging v2 REST client for a job's task logs: the
 * filter gpugate asks with (pure), the reading of one LogEntry into what
 * the API shows (pure), and one entries:list call (POST
 * {endpoint}/v2/entries:list) with a token of scope LOGGING_READ_SCOPE
 * from the same sources as Cloud Batch's (gcp/auth.h).
 *
 * Which entries are a job's: Batch copies a Job's labels onto every
 * LogEntry it writes (Job.labels in the Batch v1 reference), and gpugate
 * labels each Batch job it creates gpugate-job=<id> (gcp/batch_job.c) — so one
 * clause on that label covers every attempt and race copy of the job. The
 * attempt comes from the entry's labels.task_group_name (…/jobs/gpugate-
 * <id>-a<n>[-r<k>]/taskGroups/group0), the task index from labels.task_id
 * (task/<uid>-group0-<index>/…); tests/emulator/README.md cites the sources.
 *
 * entries:list costs Cloud Logging read quota (60 a minute per project by
 * default): the client never retries on its own; the caller decides.
 */
#ifndef GPUGATE_BATCH_LOGGING_H
#define GPUGATE_BATCH_LOGGING_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct batch_token_source;
struct logging_client;

#define LOGGING_READ_SCOPE "https://www.googleapis.com/auth/logging.read"
#define LOGGING_FILTER_MAX 20000 /* characters, Logging's own limit */
#define LOGGING_PAGE_MAX 1000    /* pageSize gpugate asks for at most */

/* What one entries:list asks for. Strings are borrowed. */
struct logging_query {
  const char *project;     /* the Batch jobs' project */
  const char *deployment;  /* gpugate-deployment label; "" or NULL: none */
  const char *const *jobs; /* gpugate job ids (n_jobs >= 1) */
  size_t n_jobs;
  const char *since;    /* RFC 3339: entries at or after; "" or NULL: all */
  int task;             /* task index; < 0: every task */
  const char *severity; /* at or above (a LogSeverity name); "" or NULL */
};

/*
 * The rank of a LogSeverity name (DEFAULT 0, DEBUG 100 … EMERGENCY 800, as
 * the enum's numbers), case-insensitive; -1 for anything else. Pure.
 */
int logging_severity_rank(const char *name);

/*
 * Write q's filter into buf (cap bytes with its NUL). Values are written
 * as quoted strings with '"' and '\' escaped. Returns 0, or -1 when q is
 * invalid (no project or job, an unknown severity) or the filter does not
 * fit. Pure.
 */
int logging_filter(const struct logging_query *q, char *buf, size_t cap);

/*
 * The instant of an RFC 3339 timestamp in nanoseconds since the epoch
 * (any offset, 0 to 9 fractional digits). Returns 0, or -1 when malformed.
 * Pure.
 */
int logging_time_ns(const char *s, int64_t *ns);

/*
 * What the API shows of one LogEntry (borrowed): a new object {"time",
 * "severity", "task", "attempt", "retry", "text"} (attempt: gpugate's, of
 * the Batch job's name; retry: Batch's run of the task within it, 0 its
 * first, from labels.task_id; each null when the entry does not say), or
 * NULL when it is not an object. The text is
 * textPayload, else jsonPayload.message, else the jsonPayload as JSON.
 * *job (may be NULL) gets the entry's gpugate-job label (borrowed from e,
 * NULL when absent). Pure.
 */
json_t *logging_entry_view(const json_t *e, const char **job);

/* A client of endpoint (no trailing slash needed); ts borrowed (NULL: no
 * Authorization). NULL when out of memory. One thread at a time. */
struct logging_client *logging_client_new(const char *endpoint,
                                          struct batch_token_source *ts);
void logging_client_free(struct logging_client *c); /* accepts NULL */

/* The outcome of one call. */
struct logging_result {
  long status;          /* HTTP status; 0: no answer (transport, token) */
  char retry_after[64]; /* Retry-After of a 429/503, "" when absent */
  json_t *doc;          /* new: the ListLogEntriesResponse on 2xx */
  char err[256];        /* one line on failure, never a token */
};

/*
 * One entries:list of filter over resourceNames ["projects/<project>"],
 * orderBy "timestamp asc", pageSize page_size, pageToken page_token (NULL
 * or "": the first page). Fills *r (r->doc to json_decref). Returns 0 on a
 * 2xx answer, -1 otherwise (r->status says which).
 */
int logging_list(struct logging_client *c, const char *project,
                 const char *filter, int page_size, const char *page_token,
                 struct logging_result *r);

/* Calls made so far. */
long logging_client_calls(const struct logging_client *c);

#endif
