/*
 * req.h — the one request context (struct gg_req). The result codes every
 * handler returns (enum gg_code) are lib/err.h's.
 *
 * The context is allocated on the first access-handler call of a connection's
 * request and freed only in the completion callback. The server fills it in
 * (route, path parameters, principal, parsed body) before the handler runs;
 * the handler reads it, calls db_ / sched_ / batch_ functions (db/ fills the
 * request's struct gg_err, lib/err.h), and sets the reply with req_reply() or
 * fails with problem_*().
 */
#ifndef GPUGATE_REQ_H
#define GPUGATE_REQ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "identity/auth.h"
#include "lib/err.h"
#include "lib/jsonx.h"
#include "lib/stream.h"
#include "server/config.h"

#define REQ_MAX_PARAMS 4
#define REQ_MAX_HEADERS 8

struct route;
struct db_conn;
struct db_pool;

struct gg_req {
  /* filled by the server before the handler runs */
  const struct route *route;
  const char *method; /* borrowed from libmicrohttpd */
  char path[512];
  const char *param_names[REQ_MAX_PARAMS];
  char param_values[REQ_MAX_PARAMS][64];
  int n_params;
  struct auth_principal principal; /* role AUTH_ROLE_NONE on public routes */
  char request_id[64];
  void *conn; /* the MHD connection, for lookups */

  bool streaming; /* the body goes to the route's chunk handler */
  void *inflate;  /* owned z_stream while a gzip body streams in */
  void *stream;   /* owned by the chunk handler: its parsing state */
  void (*stream_free)(void *stream); /* frees stream at the end */
  char *body;                        /* owned; NUL-terminated */
  size_t body_len;
  bool body_too_large;
  json_t *json;         /* owned; parsed body or NULL */
  bool replied;         /* refused on the first call: answered then, or at the
                           last call when there is no body */
  unsigned upload_role; /* role bit holding an upload slot, 0 = none */

  const struct config *cfg; /* borrowed: the process's settings */
  struct db_pool *pool;     /* where req_db() checks out from */
  struct db_conn *db;       /* checked out lazily by req_db() */

  /* set by the handler */
  unsigned status;  /* HTTP status; 0 = from the code */
  json_t *reply;    /* owned; body to send */
  char *reply_text; /* owned; non-JSON body, or JSON already written */
  size_t reply_text_len;
  bool reply_text_json; /* reply_text is JSON: ETag and 304 as for reply */
  const char *reply_content_type; /* static string */
  req_stream_read reply_read;     /* a streamed body, when set */
  void *reply_read_cls;           /* owned until handed to the server */
  void (*reply_read_free)(void *cls);
  size_t reply_read_block; /* bytes per read; 0: 64 KiB */
  const char *hdr_names[REQ_MAX_HEADERS];
  char *hdr_values[REQ_MAX_HEADERS]; /* owned */
  int n_hdrs;

  /* the failure being recorded (problem_*(), or db/ through &req->err);
   * problem_from_err() renders it */
  struct gg_err err;

  /* bookkeeping for the access log */
  long long started_us;
  char team_for_log[64];

  /* who sent it (server/clientaddr.h): the peer, or the client a trusted
   * proxy's forwarded header names */
  struct clientaddr client;
  char client_text[CLIENTADDR_TEXT];
  char peer_text[CLIENTADDR_TEXT]; /* "" unless a trusted proxy's */
  bool client_slot; /* holds a per-client slot (connlimit_request_take) */
};

/* The value of path parameter name, or NULL. Borrowed from req. */
const char *req_param(const struct gg_req *req, const char *name);

/* A query-string argument or NULL. Borrowed from libmicrohttpd. */
const char *req_query(const struct gg_req *req, const char *name);

/* A request header or NULL. Borrowed from libmicrohttpd. */
const char *req_header(const struct gg_req *req, const char *name);

/* A cookie of the request or NULL. Borrowed from libmicrohttpd. */
const char *req_cookie(const struct gg_req *req, const char *name);

/* Set a 2xx reply; steals body (may be NULL for an empty body). */
void req_reply(struct gg_req *req, unsigned status, json_t *body);

/* Set a non-JSON reply; copies text. Returns GG_OK or GG_INTERNAL. */
enum gg_code req_reply_text(struct gg_req *req, unsigned status,
                            const char *content_type, const char *text,
                            size_t len);

/* Set a 2xx reply whose JSON is already written (GG_JSON_DUMP); steals
 * text (malloc()ed, len bytes, NUL-terminated). ETag and 304 as
 * req_reply(). */
void req_reply_json_text(struct gg_req *req, unsigned status, char *text,
                         size_t len);

/*
 * Set a 2xx reply whose body is streamed from read (see req_stream_read)
 * in chunked transfer encoding; cls is stolen and released with cls_free
 * once the body is sent or the request ends.
 */
void req_reply_stream(struct gg_req *req, unsigned status,
                      const char *content_type, req_stream_read read, void *cls,
                      void (*cls_free)(void *cls));

/* Add a response header; value is copied. */
void req_add_header(struct gg_req *req, const char *name, const char *value);

/*
 * The request's database connection, checked out from the pool on first use
 * and returned when the request completes. NULL when the database is
 * unreachable: the caller returns problem_fail(req, GG_UNAVAILABLE, ...).
 */
struct db_conn *req_db(struct gg_req *req);

/* Who the caller is for events and logs: the verified email of a provider
 * token, else its sub; NULL without a principal. Borrowed from req. */
const char *req_actor(const struct gg_req *req);

/* True when the caller is a member of a team (not admin or finance). */
bool req_is_member(const struct gg_req *req);

/*
 * cursor_seal()/cursor_open() (lib/cursor.h) for the list req pages: its
 * path and its query parameters but limit and cursor, sorted; the key from
 * req->cfg. req_cursor_for() draws a random iv. 0 or -1.
 */
int req_cursor_for(const struct gg_req *req, const char *position, char *out,
                   size_t outlen);
int req_cursor_read(const struct gg_req *req, const char *cursor,
                    char *position, size_t poslen);

/* Initialise a context (for the server and for `gpugate apply`). */
void req_init(struct gg_req *req, struct db_pool *pool);

/* Release everything req owns (not req itself); returns the connection. */
void req_cleanup(struct gg_req *req);

#endif
