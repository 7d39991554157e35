/*
 * docs.c — GET /docs: the OpenAPI document rendered in the browser by Redoc
 * (no auth). Both files are compiled into the binary (Makefile EMBED):
 *
 *   /docs                      openapi/docs.html, revalidated on every visit
 *   /docs/redoc.standalone.js  the Redoc bundle from the pinned npm package,
 *                              cached for a year
 *
 * The page names the bundle by a content fingerprint (FNV-1a, 64 bits),
 * /docs/redoc.standalone.js?v=<hash>, so a new bundle in a new build is a new
 * URL and the year-long cache is never stale. The page's
 * Content-Security-Policy allows this origin only: no CDN, no web fonts, no
 * inline script (Redoc initialises the <redoc> element itself).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/handlers.h"
#include "lib/embedded.h"
#include "server/problem.h"

#define DOCS_HTML "openapi/docs.html"
#define DOCS_JS "deploy/tools/node_modules/redoc/bundles/redoc.standalone.js"
#define DOCS_JS_URL "/docs/redoc.standalone.js"

/* styled-components injects <style> elements; Redoc's search index runs in a
 * Worker made from a blob: URL. Everything else comes from this origin. */
#define DOCS_CSP                                                               \
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "  \
  "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; "          \
  "worker-src blob:; base-uri 'none'; form-action 'none'; "                    \
  "frame-ancestors 'none'"

/* Built once: the page with the fingerprinted bundle URL. */
static pthread_once_t docs_once = PTHREAD_ONCE_INIT;
static char *page; /* NUL-terminated, lives as long as the process */
static size_t page_len;

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

static void docs_init(void)
{
  const struct embedded_file *js = embedded_find(DOCS_JS);
  const struct embedded_file *html = embedded_find(DOCS_HTML);
  const char *src = html ? (const char *)html->data : NULL;
  const char *at;
  char query[24];
  size_t head, qlen;

  if (!js || !src)
    return; /* serve the page as it is */
  snprintf(query, sizeof query, "?v=%016llx",
           (unsigned long long)fnv1a64(js->data, js->len));
  qlen = strlen(query);
  at = strstr(src, "\"" DOCS_JS_URL "\"");
  if (!at)
    return; /* serve the page as it is */
  head = (size_t)(at - src) + 1 + strlen(DOCS_JS_URL);
  page = malloc(html->len + qlen + 1);
  if (!page)
    return;
  memcpy(page, src, head);
  memcpy(page + head, query, qlen);
  memcpy(page + head + qlen, src + head, html->len - head + 1);
  page_len = html->len + qlen;
}

enum gg_code docs_page(struct gg_req *req)
{
  const struct embedded_file *html;

  pthread_once(&docs_once, docs_init);
  req_add_header(req, "Cache-Control", "no-cache");
  req_add_header(req, "Content-Security-Policy", DOCS_CSP);
  req_add_header(req, "X-Content-Type-Options", "nosniff");
  req_add_header(req, "Referrer-Policy", "no-referrer");
  if (page)
    return req_reply_text(req, 200, "text/html; charset=utf-8", page, page_len);
  html = embedded_find(DOCS_HTML);
  if (!html)
    return problem_fail(req, GG_NOT_FOUND, "The docs page is not built in.");
  return req_reply_text(req, 200, "text/html; charset=utf-8",
                        (const char *)html->data, html->len);
}

enum gg_code docs_asset(struct gg_req *req)
{
  const struct embedded_file *js = embedded_find(DOCS_JS);

  if (!js)
    return problem_fail(req, GG_NOT_FOUND, "The Redoc bundle is not built in.");
  req_add_header(req, "Cache-Control", "public, max-age=31536000, immutable");
  req_add_header(req, "X-Content-Type-Options", "nosniff");
  return req_reply_text(req, 200, "application/javascript; charset=utf-8",
                        (const char *)js->data, js->len);
}
