/*
 * client.h — the Cloud Batch v1 REST client (SPEC §4): create, get, list,
 * cancel and delete jobs of one project.
 *
 * One client per thread: it owns one libcurl easy handle, reused across
 * calls so connections stay open. Its token source is its own or one
 * shared by the process (thread-safe). The client never sleeps and never
 * retries on its own — the dispatcher's outbox schedules retries (with
 * batch_backoff_ms()) — except that a GET whose connection was reset is
 * repeated once at once. Nothing here logs.
 *
 * batch_client_create() and the others wait for their answer. A
 * batch_multi runs many calls at once on one libcurl multi handle (HTTP/1.1
 * connections kept open for reuse, or HTTP/2 streams on one connection to
 * an https endpoint): start calls, poll, take the ended ones with their
 * results, which are exactly what the waiting form would have returned.
 */
#ifndef GPUGATE_BATCH_CLIENT_H
#define GPUGATE_BATCH_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "gcp/auth.h"
#include "gcp/batch_job.h"
#include "gcp/gcp_config.h"

struct batch_client;

/* The outcome of one call. */
struct batch_result {
  long http_status; /* of the last HTTP exchange, for metrics; 0 = none */
  json_t *json;     /* new reference: the 2xx body (NULL when empty) */
  struct batch_error error; /* filled when the call returned -1 */
  long elapsed_ms;          /* wall time of the call */
};

/*
 * curl_global_init(CURL_GLOBAL_DEFAULT), once per process whoever calls
 * it (pthread_once). Call it at start-up, before any thread makes a client.
 */
void batch_global_init(void);

/*
 * A client for cfg->batch_endpoint and cfg->gcp_project with its own token
 * source (cfg->gcp_token_source). Returns NULL with a one-line message in
 * err on bad configuration (no project, unreadable key file). Free with
 * batch_client_free(). cfg is only read during the call.
 */
struct batch_client *batch_client_new(const struct gcp_config *cfg, char *err,
                                      size_t errlen);

/*
 * The same with a shared token source ts (borrowed: it must outlive the
 * client), so that all threads use one cached token.
 */
struct batch_client *batch_client_new_shared(const struct gcp_config *cfg,
                                             struct batch_token_source *ts,
                                             char *err, size_t errlen);

/* Free a client, its handle and its own token source; NULL is fine. */
void batch_client_free(struct batch_client *c);

/* Override the connect and total timeouts (ms; <= 0 keeps the default). */
void batch_client_set_timeouts(struct batch_client *c, long connect_ms,
                               long total_ms);

/*
 * The calls. Each fills *r (zeroed first; release with batch_result_clear())
 * and returns 0 on success, -1 on failure with r->error set: HTTP errors
 * parsed by batch_parse_error(); transport failures (connect, timeout,
 * reset) retryable with http_status 0; a token failure retryable with
 * http_status 0 and status UNAUTHENTICATED; a 401 invalidates the token and
 * is retryable. Names are full resource names
 * "projects/<p>/locations/<r>/jobs/<id>".
 */

/*
 * POST {endpoint}/v1/projects/{project}/locations/{region}/jobs
 *   ?job_id={job_id}&request_id={request_id}
 * body (borrowed) is the Job, e.g. from batch_job_body(); request_id (a
 * UUID) may be NULL. A 409 ALREADY_EXISTS counts as success: returns 0 with
 * r->json NULL and r->error.already_exists set (SPEC §4); the job's name
 * is then batch_job_name(project, region, job_id).
 */
int batch_client_create(struct batch_client *c, const char *region,
                        const char *job_id, const char *request_id,
                        json_t *body, struct batch_result *r);

/* GET {endpoint}/v1/{name}: r->json is the Job. 404 → error.not_found. */
int batch_client_get(struct batch_client *c, const char *name,
                     struct batch_result *r);

/*
 * GET {endpoint}/v1/projects/{project}/locations/{region}/jobs
 *   ?filter=&pageSize=&pageToken= (each only when given: filter/page_token
 * non-NULL and non-empty, page_size > 0). r->json is {"jobs": [...],
 * "nextPageToken": "..."} with "jobs" always present.
 */
int batch_client_list(struct batch_client *c, const char *region,
                      const char *filter, int page_size, const char *page_token,
                      struct batch_result *r);

/* POST {endpoint}/v1/{name}:cancel with {}: r->json is the Operation. */
int batch_client_cancel(struct batch_client *c, const char *name,
                        struct batch_result *r);

/* DELETE {endpoint}/v1/{name}: r->json is the Operation. */
int batch_client_delete(struct batch_client *c, const char *name,
                        struct batch_result *r);

/* ---- many calls at once ---- */

#define BATCH_MULTI_MAX_FDS 4 /* other descriptors batch_multi_poll watches */

/* Calls in flight on one libcurl multi handle: one thread's at a time. */
struct batch_multi;

/* A multi for the calls of c (borrowed: it must outlive the multi); NULL
 * when out of memory. */
struct batch_multi *batch_multi_new(struct batch_client *c);

/* Abort every call under way, drop the ended ones not taken, free. The
 * tags are the caller's to free. Accepts NULL. */
void batch_multi_free(struct batch_multi *m);

/*
 * Start one call, as the waiting form of the same name would make it,
 * with tag (the caller's, handed back when it ends). Strings and body are
 * copied. Returns 0: the call will end exactly once (at once, when it
 * cannot even be sent: bad name, no token); -1 when out of memory, with
 * nothing started.
 */
int batch_multi_create(struct batch_multi *m, const char *region,
                       const char *job_id, const char *request_id, json_t *body,
                       void *tag);
int batch_multi_get(struct batch_multi *m, const char *name, void *tag);
int batch_multi_list(struct batch_multi *m, const char *region,
                     const char *filter, int page_size, const char *page_token,
                     void *tag);
int batch_multi_cancel(struct batch_multi *m, const char *name, void *tag);
int batch_multi_delete(struct batch_multi *m, const char *name, void *tag);

/*
 * Move the calls along: wait up to timeout_ms (0 when an ended call is
 * waiting to be taken) for transfer activity or for one of the n_fds
 * (at most BATCH_MULTI_MAX_FDS) descriptors fds to become readable;
 * ready[i] says which did. Returns 0, or -1 when polling failed.
 */
int batch_multi_poll(struct batch_multi *m, const int *fds, bool *ready,
                     unsigned n_fds, int timeout_ms);

/*
 * Take one ended call: true with its tag, its return value in *rc and its
 * result in *r (as the waiting form's: release with batch_result_clear());
 * false when none has ended.
 */
bool batch_multi_next(struct batch_multi *m, void **tag, int *rc,
                      struct batch_result *r);

/* Calls started and not yet taken. */
size_t batch_multi_count(const struct batch_multi *m);

/* Release r->json and zero *r; accepts a zeroed struct. */
void batch_result_clear(struct batch_result *r);

/* The project the client creates jobs in (borrowed from the client). */
const char *batch_client_project(const struct batch_client *c);

#endif
