/*
 * console.c — GET / and GET /ui/{file}: the web console, a single page of
 * plain ES modules (web/) compiled into the binary (Makefile EMBED), like
 * the /docs page. The page holds no data: it calls /v1 with the user's
 * token or console session, so these routes are public. With console
 * sign-in configured, the page names the provider it offers.
 *
 * Every reply carries a strict Content-Security-Policy (this origin only,
 * no inline script or style, no eval), nosniff and no-referrer. The files
 * are revalidated on each visit with a strong ETag of their content, so a
 * new build is picked up at once and an unchanged file costs a 304.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "handlers/handlers.h"
#include "lib/embedded.h"
#include "server/etag.h"
#include "server/problem.h"

#define CONSOLE_DIR "web/"
#define CONSOLE_CSP                                                            \
  "default-src 'none'; script-src 'self'; style-src 'self'; "                  \
  "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "                \
  "form-action 'none'; frame-ancestors 'none'"

static uint64_t fnv1a64(const unsigned char *p, size_t n)
{
  uint64_t h = 14695981039346656037ULL;
  size_t i;

  for (i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

static const char *content_type(const char *file)
{
  static const struct {
    const char *ext, *type;
  } types[] = {{".js", "text/javascript; charset=utf-8"},
               {".css", "text/css; charset=utf-8"},
               {".html", "text/html; charset=utf-8"},
               {".svg", "image/svg+xml"},
               {".txt", "text/plain; charset=utf-8"}};
  const char *dot = strrchr(file, '.');
  size_t i;

  for (i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
    if (!strcmp(dot, types[i].ext))
      return types[i].type;
  return NULL;
}

/*
 * The page names the provider it offers sign-in with (the first issuer's
 * host) in <meta name="gpugate-sign-in">, after the referrer meta, when
 * console sign-in is configured; otherwise the page as built. Returns the
 * text to send: data itself, or buf (cap bytes) with the meta added.
 */
static const unsigned char *with_sign_in(struct gg_req *req,
                                         const unsigned char *data, size_t *len,
                                         char *buf, size_t cap)
{
  static const char anchor[] =
      "<meta name=\"referrer\" content=\"no-referrer\">";
  const struct config_oidc *o = req->cfg ? &req->cfg->identity.oidc : NULL;
  const char *iss, *host, *at;
  size_t head, hl, i, n;
  char meta[400];

  if (!o || !o->client_id[0] || !o->n_issuers)
    return data;
  iss = o->issuers[0];
  host = strstr(iss, "://") ? strstr(iss, "://") + 3 : iss;
  hl = strcspn(host, "/?#");
  n = (size_t)snprintf(meta, sizeof(meta),
                       "\n    <meta name=\"gpugate-sign-in\" content=\"");
  for (i = 0; i < hl && n < sizeof(meta) - 4; i++) /* a host: no quoting */
    if (host[i] != '"' && host[i] != '<' && host[i] != '>' && host[i] != '&')
      meta[n++] = host[i];
  n += (size_t)snprintf(meta + n, sizeof(meta) - n, "\">");
  at = memmem(data, *len, anchor, sizeof(anchor) - 1);
  if (!at || *len + n >= cap)
    return data;
  head = (size_t)(at - (const char *)data) + sizeof(anchor) - 1;
  memcpy(buf, data, head);
  memcpy(buf + head, meta, n);
  memcpy(buf + head + n, data + head, *len - head);
  *len += n;
  return (const unsigned char *)buf;
}

static enum gg_code send_file(struct gg_req *req, const char *file)
{
  char path[96], tag[24], page[8192];
  const struct embedded_file *f;
  const char *type = content_type(file);
  const unsigned char *data;
  size_t len;

  if (!type || strlen(file) > 48 || strchr(file, '/'))
    return problem_fail(req, GG_NOT_FOUND, "No such console file.");
  snprintf(path, sizeof(path), CONSOLE_DIR "%s", file);
  if (!(f = embedded_find(path)))
    return problem_fail(req, GG_NOT_FOUND, "No such console file.");
  data = f->data;
  len = f->len;
  if (!strcmp(file, "index.html"))
    data = with_sign_in(req, data, &len, page, sizeof(page));
  snprintf(tag, sizeof(tag), "\"%016llx\"",
           (unsigned long long)fnv1a64(data, len));
  req_add_header(req, "ETag", tag);
  req_add_header(req, "Cache-Control", "no-cache");
  req_add_header(req, "Content-Security-Policy", CONSOLE_CSP);
  req_add_header(req, "X-Content-Type-Options", "nosniff");
  req_add_header(req, "Referrer-Policy", "no-referrer");
  if (etag_matches(req_header(req, "If-None-Match"), tag))
    return req_reply_text(req, 304, type, "", 0);
  return req_reply_text(req, 200, type, (const char *)data, len);
}

enum gg_code console_page(struct gg_req *req)
{
  return send_file(req, "index.html");
}

enum gg_code console_asset(struct gg_req *req)
{
  const char *file = req_param(req, "file");

  if (!file || !strcmp(file, "index.html"))
    return problem_fail(req, GG_NOT_FOUND, "No such console file.");
  return send_file(req, file);
}
