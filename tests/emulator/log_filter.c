/*
 * log_filter.c — parsing and matching the emulator's filter subset (see
 * log_filter.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tests/emulator/log_filter.h"

#define MAX_VALUES 512
#define MAX_CMPS 512
#define MAX_CLAUSES 32

enum field { F_LOGNAME, F_TIMESTAMP, F_SEVERITY, F_LABEL };
enum op { OP_EQ, OP_GE, OP_HAS };

struct cmp {
  enum field field;
  char *key; /* the label's key */
  enum op op;
  char *values[MAX_VALUES]; /* any of them */
  size_t n;
};

struct clause {
  struct cmp *cmps[MAX_CMPS]; /* any of them */
  size_t n;
};

struct log_filter {
  struct clause clauses[MAX_CLAUSES]; /* all of them */
  size_t n;
};

static const char *const sev_names[] = {"DEFAULT",  "DEBUG",   "INFO",
                                        "NOTICE",   "WARNING", "ERROR",
                                        "CRITICAL", "ALERT",   "EMERGENCY"};

int log_severity_rank(const char *name)
{
  size_t i;

  for (i = 0; name && i < sizeof(sev_names) / sizeof(sev_names[0]); i++)
    if (!strcasecmp(name, sev_names[i]))
      return (int)i * 100;
  return -1;
}

int log_time_ns(const char *s, int64_t *ns)
{
  struct tm tm;
  int y, mo, d, h, mi, sec, oh = 0, om = 0, n = 0, used = 0;
  int64_t frac = 0, scale = 1000000000;
  char sign = 'Z';
  const char *p;

  if (!s ||
      sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec,
             &used) != 6 ||
      used != 19)
    return -1;
  p = s + used;
  if (*p == '.') {
    for (p++; isdigit((unsigned char)*p); p++, n++)
      if (n < 9) {
        frac = frac * 10 + (*p - '0');
        scale /= 10;
      }
    if (!n)
      return -1;
  }
  if (*p == 'Z') {
    p++;
  } else if ((*p == '+' || *p == '-') &&
             sscanf(p + 1, "%2d:%2d%n", &oh, &om, &used) == 2 && used == 5) {
    sign = *p;
    p += 6;
  } else {
    return -1;
  }
  if (*p)
    return -1;
  memset(&tm, 0, sizeof(tm));
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  *ns = ((int64_t)timegm(&tm) - (sign == '+'   ? 1
                                 : sign == '-' ? -1
                                               : 0) *
                                    (oh * 3600 + om * 60)) *
            1000000000 +
        frac * scale;
  return 0;
}

/* ---- the parser ---------------------------------------------------------- */

struct parser {
  const char *p;
  char *err;
  size_t errlen;
  bool failed;
};

static void fail(struct parser *ps, const char *what)
{
  if (!ps->failed)
    snprintf(ps->err, ps->errlen, "Unparseable filter: %s at \"%.20s\"", what,
             ps->p);
  ps->failed = true;
}

static void skip(struct parser *ps)
{
  while (isspace((unsigned char)*ps->p))
    ps->p++;
}

static bool word(struct parser *ps, const char *w)
{
  size_t n = strlen(w);

  skip(ps);
  if (strncmp(ps->p, w, n) || isalnum((unsigned char)ps->p[n]))
    return false;
  ps->p += n;
  return true;
}

/* A quoted string (escapes \" and \\) or a bare word; new, NULL on error. */
static char *value(struct parser *ps)
{
  char *out;
  size_t n = 0;

  skip(ps);
  out = malloc(strlen(ps->p) + 1);
  if (!out)
    return NULL;
  if (*ps->p == '"') {
    for (ps->p++; *ps->p && *ps->p != '"'; ps->p++) {
      if (*ps->p == '\\' && ps->p[1])
        ps->p++;
      out[n++] = *ps->p;
    }
    if (*ps->p != '"') {
      free(out);
      fail(ps, "unterminated string");
      return NULL;
    }
    ps->p++;
  } else {
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_' || *ps->p == '-' ||
           *ps->p == '.')
      out[n++] = *ps->p++;
    if (!n) {
      free(out);
      fail(ps, "expected a value");
      return NULL;
    }
  }
  out[n] = '\0';
  return out;
}

static void cmp_free(struct cmp *c)
{
  size_t i;

  if (!c)
    return;
  for (i = 0; i < c->n; i++)
    free(c->values[i]);
  free(c->key);
  free(c);
}

static struct cmp *comparison(struct parser *ps)
{
  struct cmp *c = calloc(1, sizeof(*c));

  if (!c)
    return NULL;
  skip(ps);
  if (word(ps, "logName")) {
    c->field = F_LOGNAME;
  } else if (word(ps, "timestamp")) {
    c->field = F_TIMESTAMP;
  } else if (word(ps, "severity")) {
    c->field = F_SEVERITY;
  } else if (!strncmp(ps->p, "labels.", 7)) {
    ps->p += 7;
    c->field = F_LABEL;
    c->key = value(ps);
    if (!c->key)
      goto bad;
  } else {
    fail(ps, "unsupported field");
    goto bad;
  }
  skip(ps);
  if (!strncmp(ps->p, ">=", 2)) {
    c->op = OP_GE;
    ps->p += 2;
  } else if (*ps->p == '=') {
    c->op = OP_EQ;
    ps->p++;
  } else if (*ps->p == ':') {
    c->op = OP_HAS;
    ps->p++;
  } else {
    fail(ps, "unsupported operator");
    goto bad;
  }
  skip(ps);
  if (*ps->p == '(') {
    ps->p++;
    do {
      if (c->n == MAX_VALUES || !(c->values[c->n] = value(ps)))
        goto bad;
      c->n++;
    } while (word(ps, "OR"));
    skip(ps);
    if (*ps->p != ')') {
      fail(ps, "expected )");
      goto bad;
    }
    ps->p++;
  } else {
    if (!(c->values[0] = value(ps)))
      goto bad;
    c->n = 1;
  }
  if (c->field == F_SEVERITY && log_severity_rank(c->values[0]) < 0) {
    fail(ps, "unknown severity");
    goto bad;
  }
  if (c->field == F_TIMESTAMP) {
    int64_t t;
    if (log_time_ns(c->values[0], &t) != 0) {
      fail(ps, "malformed timestamp");
      goto bad;
    }
  }
  return c;
bad:
  fail(ps, "bad comparison");
  cmp_free(c);
  return NULL;
}

void log_filter_free(struct log_filter *f)
{
  size_t i, j;

  if (!f)
    return;
  for (i = 0; i < f->n; i++)
    for (j = 0; j < f->clauses[i].n; j++)
      cmp_free(f->clauses[i].cmps[j]);
  free(f);
}

struct log_filter *log_filter_parse(const char *text, char *err, size_t errlen)
{
  struct parser ps = {text ? text : "", err, errlen, false};
  struct log_filter *f = calloc(1, sizeof(*f));

  if (!f)
    return NULL;
  skip(&ps);
  while (*ps.p && !ps.failed) {
    struct clause *cl;
    bool group;
    if (f->n == MAX_CLAUSES) {
      fail(&ps, "too many clauses");
      break;
    }
    cl = &f->clauses[f->n++];
    skip(&ps);
    group = *ps.p == '(';
    if (group)
      ps.p++;
    do {
      struct cmp *c = cl->n < MAX_CMPS ? comparison(&ps) : NULL;
      if (!c) {
        fail(&ps, "bad clause");
        break;
      }
      cl->cmps[cl->n++] = c;
    } while (group && word(&ps, "OR"));
    if (ps.failed)
      break;
    skip(&ps);
    if (group) {
      if (*ps.p != ')') {
        fail(&ps, "expected )");
        break;
      }
      ps.p++;
      skip(&ps);
    }
    if (*ps.p && !word(&ps, "AND"))
      fail(&ps, "expected AND");
  }
  if (ps.failed) {
    log_filter_free(f);
    return NULL;
  }
  return f;
}

/* ---- matching ------------------------------------------------------------ */

static bool one(const struct cmp *c, const char *have, const char *want)
{
  int64_t a, b;

  if (!have)
    return false;
  switch (c->field) {
  case F_SEVERITY:
    return c->op == OP_GE ? log_severity_rank(have) >= log_severity_rank(want)
                          : log_severity_rank(have) == log_severity_rank(want);
  case F_TIMESTAMP:
    if (log_time_ns(have, &a) || log_time_ns(want, &b))
      return false;
    return c->op == OP_GE ? a >= b : a == b;
  default:
    if (c->op == OP_HAS)
      return strstr(have, want) != NULL;
    if (c->op == OP_GE)
      return strcmp(have, want) >= 0;
    return !strcmp(have, want);
  }
}

static bool cmp_match(const struct cmp *c, const json_t *e)
{
  const char *have;
  size_t i;

  switch (c->field) {
  case F_LOGNAME:
    have = json_string_value(json_object_get(e, "logName"));
    break;
  case F_TIMESTAMP:
    have = json_string_value(json_object_get(e, "timestamp"));
    break;
  case F_SEVERITY:
    have = json_string_value(json_object_get(e, "severity"));
    if (!have)
      have = "DEFAULT";
    break;
  default:
    have = json_string_value(
        json_object_get(json_object_get(e, "labels"), c->key));
  }
  for (i = 0; i < c->n; i++)
    if (one(c, have, c->values[i]))
      return true;
  return false;
}

bool log_filter_match(const struct log_filter *f, const json_t *entry)
{
  size_t i, j;

  for (i = 0; i < f->n; i++) {
    bool any = false;
    for (j = 0; j < f->clauses[i].n && !any; j++)
      any = cmp_match(f->clauses[i].cmps[j], entry);
    if (!any)
      return false;
  }
  return true;
}
