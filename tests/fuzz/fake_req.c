/*
 * fake_req.c — the harnesses' request context (see fake_req.h).
 */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tests/fuzz/fake_req.h"

#define FUZZ_MAX_VALUES 32

struct fuzz_value {
  enum MHD_ValueKind kind;
  char *name, *value; /* owned */
};

static struct fuzz_value values[FUZZ_MAX_VALUES];
static size_t n_values;
static char fake_connection; /* req->conn only needs to be non-NULL */

static void clear_values(void)
{
  size_t i;

  for (i = 0; i < n_values; i++) {
    free(values[i].name);
    free(values[i].value);
  }
  n_values = 0;
}

static void add_value(enum MHD_ValueKind kind, char *name, char *value)
{
  if (!name || !value || n_values == FUZZ_MAX_VALUES) {
    free(name);
    free(value);
    return;
  }
  values[n_values].kind = kind;
  values[n_values].name = name;
  values[n_values].value = value;
  n_values++;
}

void fuzz_req_init(struct gg_req *req)
{
  static struct config cfg;

  if (!cfg.cursor_key_set) {
    memset(cfg.cursor_key, 0x42, sizeof(cfg.cursor_key));
    cfg.cursor_key_set = true;
  }
  clear_values();
  req_init(req, NULL);
  req->conn = &fake_connection;
  req->cfg = &cfg;
  req->method = "GET";
}

void fuzz_req_header(const char *name, const char *value)
{
  add_value(MHD_HEADER_KIND, strdup(name), strdup(value));
}

static int hexval(char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Percent-decode s[0..n) into a new string. */
static char *decode(const char *s, size_t n)
{
  char *out = malloc(n + 1);
  size_t i, o = 0;

  if (!out)
    return NULL;
  for (i = 0; i < n; i++) {
    if (s[i] == '+') {
      out[o++] = ' ';
    } else if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 &&
               hexval(s[i + 2]) >= 0) {
      out[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
      i += 2;
    } else {
      out[o++] = s[i];
    }
  }
  out[o] = '\0';
  return out;
}

void fuzz_req_query(const char *q, size_t n)
{
  size_t i = 0;

  while (i < n) {
    size_t end = i, eq;
    while (end < n && q[end] != '&')
      end++;
    for (eq = i; eq < end && q[eq] != '='; eq++)
      ;
    if (end > i)
      add_value(MHD_GET_ARGUMENT_KIND, decode(q + i, eq - i),
                eq < end ? decode(q + eq + 1, end - eq - 1) : strdup(""));
    i = end + 1;
  }
}

char *fuzz_strndup(const uint8_t *data, size_t n)
{
  char *s = malloc(n + 1);

  if (!s)
    return NULL;
  if (n)
    memcpy(s, data, n);
  s[n] = '\0';
  return s;
}

void fuzz_split(const uint8_t *data, size_t n, uint8_t sep, char **head,
                const uint8_t **tail, size_t *tail_n)
{
  const uint8_t *at = n ? memchr(data, sep, n) : NULL;
  size_t h = at ? (size_t)(at - data) : n;

  *head = fuzz_strndup(data, h);
  *tail = at ? at + 1 : data + n;
  *tail_n = at ? n - h - 1 : 0;
}

/* libmicrohttpd's lookup, answered from the values above. */
const char *MHD_lookup_connection_value(struct MHD_Connection *connection,
                                        enum MHD_ValueKind kind,
                                        const char *key)
{
  size_t i;

  if ((void *)connection != (void *)&fake_connection || !key)
    return NULL;
  for (i = 0; i < n_values; i++) {
    if (values[i].kind != kind)
      continue;
    if (kind == MHD_HEADER_KIND ? !strcasecmp(values[i].name, key)
                                : !strcmp(values[i].name, key))
      return values[i].value;
  }
  return NULL;
}

/* libmicrohttpd's iteration over a kind of values, from the values above
 * in the order they were set; the count visited. */
int MHD_get_connection_values(struct MHD_Connection *connection,
                              enum MHD_ValueKind kind,
                              MHD_KeyValueIterator iterator, void *iterator_cls)
{
  size_t i;
  int n = 0;

  if ((void *)connection != (void *)&fake_connection)
    return -1;
  for (i = 0; i < n_values; i++) {
    if (!(values[i].kind & kind))
      continue;
    n++;
    if (iterator && iterator(iterator_cls, values[i].kind, values[i].name,
                             values[i].value) != MHD_YES)
      break;
  }
  return n;
}
