/*
 * etag.c — weak ETags over a reply's bytes. The tag is W/"<FNV-1a 64 hex>"
 * of the body as sent, so two replies with the same tag are the same
 * bytes for the same caller; If-None-Match with that tag gets 304. A
 * reply's body depends on the caller's team, so the replies are marked
 * private: no shared cache keeps them.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "server/etag.h"

static uint64_t fnv1a64(const char *p, size_t n)
{
  uint64_t h = 14695981039346656037ULL;
  size_t i;

  for (i = 0; i < n; i++) {
    h ^= (unsigned char)p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

/* Compare one entity tag of a list, weakly (W/ ignored on both sides). */
static bool same_tag(const char *a, size_t alen, const char *tag)
{
  if (alen >= 2 && a[0] == 'W' && a[1] == '/') {
    a += 2;
    alen -= 2;
  }
  if (tag[0] == 'W' && tag[1] == '/')
    tag += 2;
  return alen == strlen(tag) && memcmp(a, tag, alen) == 0;
}

bool etag_matches(const char *inm, const char *tag)
{
  const char *p = inm;

  if (!inm || !tag)
    return false;
  while (*p) {
    size_t n;
    while (*p == ' ' || *p == '\t' || *p == ',')
      p++;
    n = strcspn(p, ",");
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
      n--;
    if (n == 1 && p[0] == '*')
      return true;
    if (n > 0 && same_tag(p, n, tag))
      return true;
    p += n;
    while (*p && *p != ',')
      p++;
  }
  return false;
}

bool etag_not_modified(struct gg_req *req, const char *body, size_t len)
{
  char tag[32];
  int i;

  if (!req->method || strcmp(req->method, "GET") != 0 || !body)
    return false;
  for (i = 0; i < req->n_hdrs; i++)
    if (!strcmp(req->hdr_names[i], "ETag"))
      return false; /* the handler's own (a version) */
  snprintf(tag, sizeof(tag), "W/\"%016llx\"",
           (unsigned long long)fnv1a64(body, len));
  req_add_header(req, "ETag", tag);
  req_add_header(req, "Cache-Control", "private, no-cache");
  return etag_matches(req_header(req, "If-None-Match"), tag);
}
