/*
 * emu_http.h — the emulator's HTTP side: a libmicrohttpd daemon (one
 * thread per connection, so an injected stall blocks only its caller), the
 * route table in routes.def, and the pipeline every request goes through:
 * fault injection, bearer-token check, JSON parsing, handler, recording,
 * reply. Handlers see only struct emu_req.
 */
#ifndef GPUGATE_EMU_HTTP_H
#define GPUGATE_EMU_HTTP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define EMU_MAX_PARAMS 4
#define EMU_PARAM_MAX 128
#define EMU_BODY_MAX ((size_t)1024 * 1024)

/* Which pipeline steps a route gets. */
enum emu_route_kind {
  EMU_API,    /* Batch v1: faults, bearer token, JSON body, recorded */
  EMU_TOKEN,  /* token endpoints: recorded, faults only with "tokens" */
  EMU_CONTROL /* /emulator/ endpoints: JSON body, never faulted nor recorded */
};

/* One request, owned by the HTTP layer from first byte to completion. */
struct emu_req {
  const char *method;
  char path[1024];
  char params[EMU_MAX_PARAMS][EMU_PARAM_MAX]; /* the route's {} captures */
  int n_params;
  char *body; /* raw body, NUL-terminated, owned; NULL when empty */
  size_t body_len;
  bool body_too_large;
  json_t *json; /* parsed JSON body (owned), NULL when none */
  void *conn;   /* the MHD connection: for emu_req_query/emu_req_header */

  /* the reply, set by the handler */
  unsigned status;
  char *reply_text;         /* owned */
  const char *content_type; /* static string */
  char retry_after[24];     /* "" = none */
  char allow[128];          /* 405: the methods the path allows */
  bool www_authenticate;
  const char *cache_control; /* static string; NULL = none */

  /* for the request log */
  long long started_ms;
  char time[40];
  json_t *record_body; /* owned; overrides the logged body when set */
};

typedef void (*emu_handler)(struct emu_req *r);

/* A decoded query argument, NULL when absent. The string is borrowed. */
const char *emu_req_query(const struct emu_req *r, const char *key);

/* A request header (case-insensitive), NULL when absent. Borrowed. */
const char *emu_req_header(const struct emu_req *r, const char *name);

/* Reply with body (stolen; NULL for an empty body) as application/json. */
void emu_reply_json(struct emu_req *r, unsigned status, json_t *body);

/* Reply with text (copied) and a static content type. */
void emu_reply_text(struct emu_req *r, unsigned status, const char *ctype,
                    const char *text);

/*
 * Reply with a google.rpc.Status error: {"error": {"code", "message",
 * "status"[, "details"]}}. details is stolen and may be NULL. rpc_status
 * NULL derives the name from the HTTP status.
 */
void emu_reply_error(struct emu_req *r, unsigned status, const char *rpc_status,
                     json_t *details, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/*
 * Start listening on host:port (port 0 = any) and write the bound port to
 * *bound. Returns 0, or -1 after logging why.
 */
int emu_http_start(const char *host, unsigned short port,
                   unsigned short *bound);

/*
 * The Batch calls under way and the most under way at once, per kind of
 * call: {"inFlight": {"create": n, …}, "maxInFlight": {…}} (new object).
 */
json_t *emu_http_in_flight(void);

/* Start counting the most at once afresh (from the calls under way). */
void emu_http_reset_in_flight(void);

/* Stop the daemon; waits for connection threads. */
void emu_http_stop(void);

#endif
