/*
 * req.c — accessors for the request context, so handlers never call
 * libmicrohttpd themselves.
 */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <openssl/rand.h>

#include "db/db.h"
#include "lib/cursor.h"
#include "server/req.h"

void req_init(struct gg_req *req, struct db_pool *pool)
{
  memset(req, 0, sizeof(*req));
  req->pool = pool;
}

void req_cleanup(struct gg_req *req)
{
  int i;

  if (req->db) {
    db_rollback(req->db);
    db_release(req->pool, req->db);
    req->db = NULL;
  }
  if (req->stream && req->stream_free)
    req->stream_free(req->stream);
  req->stream = NULL;
  if (req->inflate) {
    inflateEnd(req->inflate);
    free(req->inflate);
    req->inflate = NULL;
  }
  free(req->body);
  req->body = NULL;
  json_decref(req->json);
  req->json = NULL;
  json_decref(req->reply);
  req->reply = NULL;
  free(req->reply_text);
  req->reply_text = NULL;
  if (req->reply_read_cls && req->reply_read_free)
    req->reply_read_free(req->reply_read_cls);
  req->reply_read_cls = NULL;
  req->reply_read = NULL;
  for (i = 0; i < req->n_hdrs; i++)
    free(req->hdr_values[i]);
  req->n_hdrs = 0;
  json_decref(req->err.fields);
  req->err.fields = NULL;
}

const char *req_param(const struct gg_req *req, const char *name)
{
  int i;

  for (i = 0; i < req->n_params; i++)
    if (!strcmp(req->param_names[i], name))
      return req->param_values[i];
  return NULL;
}

const char *req_query(const struct gg_req *req, const char *name)
{
  if (!req->conn)
    return NULL;
  return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *req_header(const struct gg_req *req, const char *name)
{
  if (!req->conn)
    return NULL;
  return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

void req_reply_stream(struct gg_req *req, unsigned status,
                      const char *content_type, req_stream_read read, void *cls,
                      void (*cls_free)(void *cls))
{
  if (req->reply_read_cls && req->reply_read_free)
    req->reply_read_free(req->reply_read_cls);
  req->status = status;
  req->reply_content_type = content_type;
  req->reply_read = read;
  req->reply_read_cls = cls;
  req->reply_read_free = cls_free;
}

const char *req_cookie(const struct gg_req *req, const char *name)
{
  if (!req->conn)
    return NULL;
  return MHD_lookup_connection_value(req->conn, MHD_COOKIE_KIND, name);
}

void req_reply(struct gg_req *req, unsigned status, json_t *body)
{
  json_decref(req->reply);
  req->status = status;
  req->reply = body;
}

enum gg_code req_reply_text(struct gg_req *req, unsigned status,
                            const char *content_type, const char *text,
                            size_t len)
{
  char *copy = malloc(len + 1);

  if (!copy)
    return GG_INTERNAL;
  memcpy(copy, text, len);
  copy[len] = '\0';
  free(req->reply_text);
  req->reply_text = copy;
  req->reply_text_len = len;
  req->reply_text_json = false;
  req->reply_content_type = content_type;
  req->status = status;
  return GG_OK;
}

void req_reply_json_text(struct gg_req *req, unsigned status, char *text,
                         size_t len)
{
  free(req->reply_text);
  req->reply_text = text;
  req->reply_text_len = len;
  req->reply_text_json = true;
  req->reply_content_type = "application/json";
  req->status = status;
}

void req_add_header(struct gg_req *req, const char *name, const char *value)
{
  char *copy;

  if (req->n_hdrs == REQ_MAX_HEADERS)
    return;
  copy = strdup(value);
  if (!copy)
    return;
  req->hdr_names[req->n_hdrs] = name;
  req->hdr_values[req->n_hdrs++] = copy;
}

struct db_conn *req_db(struct gg_req *req)
{
  if (!req->db && req->pool)
    req->db = db_acquire(req->pool, 5000);
  return req->db;
}

const char *req_actor(const struct gg_req *req)
{
  const struct auth_principal *p = &req->principal;

  if (p->email[0])
    return p->email;
  return p->subject[0] ? p->subject : NULL;
}

bool req_is_member(const struct gg_req *req)
{
  return req->principal.role == AUTH_ROLE_MEMBER;
}

/* ---- list cursors (lib/cursor.h) bound to the request's list ---------- */

struct args {
  char *items[32];
  int n;
  bool overflow;
};

static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind,
                               const char *key, const char *value)
{
  struct args *a = cls;
  size_t n;
  char *s;

  (void)kind;
  if (!strcmp(key, "cursor") || !strcmp(key, "limit"))
    return MHD_YES;
  if (a->n == (int)(sizeof(a->items) / sizeof(a->items[0]))) {
    a->overflow = true;
    return MHD_NO;
  }
  n = strlen(key) + (value ? strlen(value) : 0) + 2;
  s = malloc(n);
  if (!s) {
    a->overflow = true;
    return MHD_NO;
  }
  snprintf(s, n, "%s=%s", key, value ? value : "");
  a->items[a->n++] = s;
  return MHD_YES;
}

static int cmp(const void *x, const void *y)
{
  return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The request's list as text: "path?k=v&k=v" (sorted); -1 when too long. */
static int scope_of(const struct gg_req *req, char *out, size_t cap)
{
  struct args a;
  size_t used;
  int i, rc = 0;

  memset(&a, 0, sizeof(a));
  used = (size_t)snprintf(out, cap, "%s?", req->path);
  if (used >= cap)
    return -1;
  if (req->conn)
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, collect, &a);
  if (a.overflow)
    rc = -1;
  qsort(a.items, (size_t)a.n, sizeof(a.items[0]), cmp);
  for (i = 0; i < a.n; i++) {
    size_t k = strlen(a.items[i]);
    if (rc == 0 && used + k + 2 <= cap) {
      memcpy(out + used, a.items[i], k);
      used += k;
      out[used++] = '&';
      out[used] = '\0';
    } else {
      rc = -1;
    }
    free(a.items[i]);
  }
  return rc;
}

int req_cursor_for(const struct gg_req *req, const char *position, char *out,
                   size_t outlen)
{
  char scope[CURSOR_SCOPE_MAX];
  unsigned char iv[12];

  if (!req->cfg || !req->cfg->cursor_key_set ||
      scope_of(req, scope, sizeof(scope)) != 0 ||
      RAND_bytes(iv, sizeof(iv)) != 1)
    return -1;
  return cursor_seal(req->cfg->cursor_key, scope, position, iv, out, outlen);
}

int req_cursor_read(const struct gg_req *req, const char *cursor,
                    char *position, size_t poslen)
{
  char scope[CURSOR_SCOPE_MAX];

  if (!req->cfg || !req->cfg->cursor_key_set ||
      scope_of(req, scope, sizeof(scope)) != 0)
    return -1;
  return cursor_open(req->cfg->cursor_key, scope, cursor, position, poslen);
}
