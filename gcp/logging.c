/*
 * logging.c — Cloud Logging entries:list, its filter and its entries (see
 * logging.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gcp/auth.h"
#include "gcp/http.h"
#include "gcp/batch_job.h"
#include "gcp/gcall.h"
#include "gcp/logging.h"

#define LOGGING_TOTAL_MS 30000L
#define LOGGING_MAX_RESPONSE ((size_t)16 * 1024 * 1024)

struct logging_client {
  char endpoint[512];
  struct batch_token_source *ts; /* borrowed */
  CURL *h;
  long calls;
};

/* LogSeverity, in the order and with the numbers of logging_v2_messages.py
 * LogEntry.SeverityValueValuesEnum (and google.logging.type.LogSeverity). */
static const struct {
  const char *name;
  int rank;
} severities[] = {{"DEFAULT", 0},    {"DEBUG", 100},   {"INFO", 200},
                  {"NOTICE", 300},   {"WARNING", 400}, {"ERROR", 500},
                  {"CRITICAL", 600}, {"ALERT", 700},   {"EMERGENCY", 800}};

int logging_severity_rank(const char *name)
{
  size_t i;

  if (!name)
    return -1;
  for (i = 0; i < sizeof(severities) / sizeof(severities[0]); i++)
    if (!strcasecmp(name, severities[i].name))
      return severities[i].rank;
  return -1;
}

static const char *severity_name(const char *name)
{
  size_t i;

  for (i = 0; i < sizeof(severities) / sizeof(severities[0]); i++)
    if (!strcasecmp(name, severities[i].name))
      return severities[i].name;
  return NULL;
}

/* A bounded writer: every put appends or marks the buffer full. */
struct out {
  char *buf;
  size_t cap, n;
  bool full;
};

static void put(struct out *o, const char *s)
{
  size_t len = strlen(s);

  if (o->full || o->n + len >= o->cap) {
    o->full = true;
    return;
  }
  memcpy(o->buf + o->n, s, len + 1);
  o->n += len;
}

/* s as a filter string literal: quoted, '"' and '\' escaped. */
static void put_quoted(struct out *o, const char *s)
{
  char c[2] = {0, 0};

  put(o, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      put(o, "\\");
    c[0] = *s;
    put(o, c);
  }
  put(o, "\"");
}

int logging_filter(const struct logging_query *q, char *buf, size_t cap)
{
  struct out o = {buf, cap, 0, false};
  char v[BATCH_LABEL_MAX + 1], num[32], name[256];
  const char *sev = NULL;
  size_t i;

  if (!q->project || !*q->project || strlen(q->project) > 128 ||
      q->n_jobs == 0 || cap == 0)
    return -1;
  if (q->severity && *q->severity && !(sev = severity_name(q->severity)))
    return -1;
  buf[0] = '\0';
  snprintf(name, sizeof(name), "projects/%s/logs/batch_task_logs", q->project);
  put(&o, "logName=(");
  put_quoted(&o, name);
  snprintf(name, sizeof(name), "projects/%s/logs/batch_agent_logs", q->project);
  put(&o, " OR ");
  put_quoted(&o, name);
  put(&o, ")");
  /* the label values as gcp/batch_job.c wrote them */
  put(&o, " AND (");
  for (i = 0; i < q->n_jobs; i++) {
    batch_label_sanitize(q->jobs[i], v, sizeof(v));
    if (!*v)
      return -1;
    if (i)
      put(&o, " OR ");
    put(&o, "labels.\"gpugate-job\"=");
    put_quoted(&o, v);
  }
  put(&o, ")");
  if (q->deployment && *q->deployment) {
    batch_label_sanitize(q->deployment, v, sizeof(v));
    put(&o, " AND labels.\"gpugate-deployment\"=");
    put_quoted(&o, v);
  }
  if (q->since && *q->since) {
    put(&o, " AND timestamp>=");
    put_quoted(&o, q->since);
  }
  if (q->task >= 0) {
    /* task/<uid>-group0-<index>/<retry>/0: the index ends at the '/' */
    snprintf(num, sizeof(num), "-group0-%d/", q->task);
    put(&o, " AND labels.task_id:");
    put_quoted(&o, num);
  }
  if (sev) {
    put(&o, " AND severity>=");
    put(&o, sev);
  }
  return o.full ? -1 : 0;
}

static int digits(const char **p, int n, int *out)
{
  int v = 0, i;

  for (i = 0; i < n; i++) {
    if (!isdigit((unsigned char)(*p)[i]))
      return -1;
    v = v * 10 + ((*p)[i] - '0');
  }
  *p += n;
  *out = v;
  return 0;
}

int logging_time_ns(const char *s, int64_t *ns)
{
  struct tm tm;
  int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
  int64_t frac = 0, scale = 1000000000;
  const char *p = s;
  time_t t;

  if (!s || digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) ||
      *p++ != '-' || digits(&p, 2, &d) || (*p != 'T' && *p != 't'))
    return -1;
  p++;
  if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' ||
      digits(&p, 2, &sec))
    return -1;
  if (*p == '.') {
    int n = 0;
    p++;
    while (isdigit((unsigned char)*p)) {
      if (n < 9) {
        frac = frac * 10 + (*p - '0');
        scale /= 10;
      }
      n++;
      p++;
    }
    if (n == 0)
      return -1;
    frac *= scale;
  }
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    sign = *p++ == '+' ? 1 : -1;
    if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om))
      return -1;
  } else {
    return -1;
  }
  if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
      sec > 60 || oh > 23 || om > 59)
    return -1;
  memset(&tm, 0, sizeof(tm));
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  t = timegm(&tm);
  *ns =
      ((int64_t)t - sign * (int64_t)(oh * 3600 + om * 60)) * 1000000000 + frac;
  return 0;
}

/* The n after "-a" in the Batch job segment of a task group name
 * (…/jobs/gpugate-<id>-a<n>[-r<k>]/taskGroups/…); 0 when none. */
static long attempt_of(const char *group)
{
  const char *seg = group ? strstr(group, "/jobs/") : NULL, *end, *p;
  long best = 0;

  if (!seg)
    return 0;
  seg += 6;
  end = strchr(seg, '/');
  if (!end)
    end = seg + strlen(seg);
  for (p = seg; p + 2 < end; p++) {
    const char *q = p + 2;
    long n = 0;
    if (p[0] != '-' || p[1] != 'a' || !isdigit((unsigned char)*q))
      continue;
    while (q < end && isdigit((unsigned char)*q) && n < 1000000)
      n = n * 10 + (*q++ - '0');
    if (q == end || (q[0] == '-' && q + 1 < end && q[1] == 'r'))
      best = n;
  }
  return best;
}

/* The index after "-group0-" in a task id (task/<uid>-group0-<i>/…); -1
 * when none. */
static long task_of(const char *task_id)
{
  const char *p = task_id ? strstr(task_id, "-group0-") : NULL;
  long n = 0;

  if (!p)
    return -1;
  p += 8;
  if (!isdigit((unsigned char)*p))
    return -1;
  while (isdigit((unsigned char)*p) && n < 1000000)
    n = n * 10 + (*p++ - '0');
  return *p == '/' || *p == '\0' ? n : -1;
}

/* The retry after the task index in a task id (task/<uid>-group0-<i>/<r>/…:
 * Batch's run of the task, 0 its first); -1 when none. */
static long retry_of(const char *task_id)
{
  const char *p = task_id && task_of(task_id) >= 0
                      ? strchr(strstr(task_id, "-group0-"), '/')
                      : NULL;
  long n = 0;

  if (!p || !isdigit((unsigned char)p[1]))
    return -1;
  for (p++; isdigit((unsigned char)*p) && n < 1000000; p++)
    n = n * 10 + (*p - '0');
  return *p == '/' || *p == '\0' ? n : -1;
}

json_t *logging_entry_view(const json_t *e, const char **job)
{
  const json_t *labels = json_object_get(e, "labels");
  const json_t *jp = json_object_get(e, "jsonPayload");
  const char *ts = json_string_value(json_object_get(e, "timestamp"));
  const char *sev = json_string_value(json_object_get(e, "severity"));
  const char *text = json_string_value(json_object_get(e, "textPayload"));
  long task, attempt, retry;
  char *dumped = NULL;
  json_t *v;

  if (job)
    *job = json_string_value(json_object_get(labels, "gpugate-job"));
  if (!json_is_object(e))
    return NULL;
  if (!text && jp)
    text = json_string_value(json_object_get(jp, "message"));
  if (!text && jp)
    text = dumped = json_dumps(jp, JSON_COMPACT | JSON_SORT_KEYS);
  task = task_of(json_string_value(json_object_get(labels, "task_id")));
  retry = retry_of(json_string_value(json_object_get(labels, "task_id")));
  attempt =
      attempt_of(json_string_value(json_object_get(labels, "task_group_name")));
  v = json_pack("{s:s, s:s, s:o, s:o, s:o, s:s}", "time", ts ? ts : "",
                "severity", sev ? sev : "DEFAULT", "task",
                task >= 0 ? json_integer(task) : json_null(), "attempt",
                attempt > 0 ? json_integer(attempt) : json_null(), "retry",
                retry >= 0 ? json_integer(retry) : json_null(), "text",
                text ? text : "");
  free(dumped);
  return v;
}

struct logging_client *logging_client_new(const char *endpoint,
                                          struct batch_token_source *ts)
{
  struct logging_client *c = calloc(1, sizeof(*c));

  if (!c)
    return NULL;
  gcall_endpoint(c->endpoint, sizeof(c->endpoint), endpoint);
  c->ts = ts;
  c->h = curl_easy_init();
  if (!c->h) {
    free(c);
    return NULL;
  }
  return c;
}

void logging_client_free(struct logging_client *c)
{
  if (!c)
    return;
  curl_easy_cleanup(c->h);
  free(c);
}

long logging_client_calls(const struct logging_client *c)
{
  return c->calls;
}

int logging_list(struct logging_client *c, const char *project,
                 const char *filter, int page_size, const char *page_token,
                 struct logging_result *r)
{
  char url[600], res[200], msg[256];
  struct gcall gc = {"entries:list",       "POST", url, NULL, LOGGING_TOTAL_MS,
                     LOGGING_MAX_RESPONSE, NULL,   0};
  struct batch_http_resp resp;
  struct batch_error e;
  enum gcall_outcome got;
  json_t *body = NULL;
  char *text = NULL;
  int rc = -1;

  memset(r, 0, sizeof(*r));
  memset(&resp, 0, sizeof(resp));
  snprintf(res, sizeof(res), "projects/%s", project);
  body = json_pack("{s:[s], s:s, s:s, s:i}", "resourceNames", res, "filter",
                   filter, "orderBy", "timestamp asc", "pageSize", page_size);
  if (body && page_token && *page_token)
    json_object_set_new(body, "pageToken", json_string(page_token));
  text = body ? json_dumps(body, JSON_COMPACT) : NULL;
  if (!text) {
    snprintf(r->err, sizeof(r->err), "entries:list: out of memory");
    goto out;
  }
  snprintf(url, sizeof(url), "%s/v2/entries:list", c->endpoint);
  gc.body = text;
  got = gcall_once(c->h, c->ts, &gc, &resp, &e);
  if (got == GCALL_TOKEN) {
    snprintf(r->err, sizeof(r->err), "entries:list: token: %.200s", e.message);
    goto out;
  }
  c->calls++;
  if (got == GCALL_TRANSPORT) {
    snprintf(r->err, sizeof(r->err), "entries:list: %.200s", e.message);
    goto out;
  }
  r->status = resp.status;
  snprintf(r->retry_after, sizeof(r->retry_after), "%s", resp.retry_after);
  if (resp.status < 200 || resp.status >= 300) {
    batch_http_status_message(&resp, msg, sizeof(msg));
    if (resp.status == 401 && c->ts)
      batch_token_invalidate(c->ts);
    snprintf(r->err, sizeof(r->err), "entries:list: HTTP %ld: %.200s",
             resp.status, msg);
    goto out;
  }
  r->doc = resp.body ? json_loadb(resp.body, resp.len, 0, NULL) : json_object();
  if (!json_is_object(r->doc)) {
    json_decref(r->doc);
    r->doc = NULL;
    snprintf(r->err, sizeof(r->err), "entries:list: the reply is not JSON");
    goto out;
  }
  rc = 0;
out:
  batch_http_resp_free(&resp);
  json_decref(body);
  free(text);
  return rc;
}
