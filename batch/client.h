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
 */
#ifndef GPUGATE_BATCH_CLIENT_H
#define GPUGATE_BATCH_CLIENT_H

#include <stddef.h>

#include <jansson.h>

#include "batch/auth.h"
#include "batch/job.h"
#include "server/config.h"

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
struct batch_client *batch_client_new(const struct config *cfg, char *err,
                                      size_t errlen);

/*
 * The same with a shared token source ts (borrowed: it must outlive the
 * client), so that all threads use one cached token.
 */
struct batch_client *batch_client_new_shared(const struct config *cfg,
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

/* Release r->json and zero *r; accepts a zeroed struct. */
void batch_result_clear(struct batch_result *r);

/* The project the client creates jobs in (borrowed from the client). */
const char *batch_client_project(const struct batch_client *c);

#endif
