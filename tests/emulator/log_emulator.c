/*
 * log_emulator.c — build/logging_emulator: a local stand-in for the two
 * Cloud Logging v2 REST calls around a Batch job's logs, in Logging's JSON
 * shapes (LogEntry, ListLogEntriesResponse, google.rpc.Status errors):
 *
 *   POST /v2/entries:write  WriteLogEntriesRequest (the Batch emulator
 *        writes its jobs' output here, tests/emulator/emu_logs.c)
 *   POST /v2/entries:list   ListLogEntriesRequest: resourceNames
 *        (projects/P), filter (the subset of log_filter.h), orderBy
 *        ("timestamp asc" default, "timestamp desc"), pageSize (default 50,
 *        at most 1000), pageToken; 429 RESOURCE_EXHAUSTED past the read
 *        quota (LOG_EMU_READS_PER_MINUTE calls in any 60 s per project).
 * Unknown request fields are refused with 400, as Google's JSON mapping
 * does ("Unknown name ...").
 *
 * Control endpoints (never counted against the quota):
 *   GET  /emulator/calls    {"calls": [{"ms", "project", "status", "body"}]}
 *        every entries:list, its request body as sent (DELETE empties it)
 *   POST /emulator/config   {"reads_per_minute": n, "ingest_delay_ms": n}
 *   GET  /emulator/entries  {"entries": [...]} everything stored
 *
 * Environment: LOG_EMU_LISTEN (127.0.0.1:0), LOG_EMU_PORT_FILE,
 * LOG_EMU_READS_PER_MINUTE (60, Logging's default read quota),
 * LOG_EMU_INGEST_DELAY_MS (0: an entry written is listed that much later,
 * as Logging's ingestion lags behind a job's writes). SIGTERM or
 * SIGINT stops it; it also exits when its parent dies.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "tests/emulator/emu_serve.h"
#include "tests/emulator/log_filter.h"

#define BODY_MAX ((size_t)4 << 20)
#define PAGE_DEFAULT 50
#define PAGE_MAX 1000
#define WINDOW_MS 60000LL
#define MAX_READS 100000

struct stored {
  int64_t ns;
  char insert_id[64];
  long long visible_ms; /* listed from then on (the ingestion delay) */
  json_t *e;            /* owned */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct stored *entries;
static size_t n_entries, cap_entries;
static unsigned long long next_id;
static long reads_per_minute = 60;
static long ingest_delay_ms;          /* written, then listed this much later */
static json_t *calls;                 /* the entries:list log */
static long long reads_ms[MAX_READS]; /* admitted reads, a ring */
static char reads_project[MAX_READS][64];
static size_t reads_head, reads_n;

struct body {
  char *p;
  size_t len;
  bool too_large;
};

static long long now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
                             json_t *doc)
{
  char *text = json_dumps(doc, JSON_COMPACT);
  struct MHD_Response *r;
  enum MHD_Result ret;

  json_decref(doc);
  if (!text)
    return MHD_NO;
  r = MHD_create_response_from_buffer(strlen(text), text,
                                      MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", "application/json");
  ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static const char *rpc_of(int status)
{
  switch (status) {
  case 400:
    return "INVALID_ARGUMENT";
  case 404:
    return "NOT_FOUND";
  case 429:
    return "RESOURCE_EXHAUSTED";
  default:
    return "INTERNAL";
  }
}

/* A google.rpc.Status error, as every Google REST API answers one. */
static enum MHD_Result error_reply(struct MHD_Connection *c, int status,
                                   const char *msg)
{
  return reply(c, (unsigned)status,
               json_pack("{s:{s:i, s:s, s:s}}", "error", "code", status,
                         "message", msg, "status", rpc_of(status)));
}

/* The first member of doc not in allowed (NULL-terminated), or NULL. */
static const char *unknown_field(const json_t *doc, const char *const *allowed)
{
  const char *k;
  json_t *v;

  json_object_foreach ((json_t *)doc, k, v) {
    size_t i;
    bool ok = false;
    (void)v;
    for (i = 0; allowed[i] && !ok; i++)
      ok = !strcmp(k, allowed[i]);
    if (!ok)
      return k;
  }
  return NULL;
}

static int before(int64_t ns, const char *id, const struct stored *s)
{
  return ns < s->ns || (ns == s->ns && strcmp(id, s->insert_id) < 0);
}

/* ---- entries:write ------------------------------------------------------- */

static const char *const write_fields[] = {
    "logName",        "resource", "labels", "entries",
    "partialSuccess", "dryRun",   NULL};
static const char *const entry_fields[] = {
    "logName",     "resource",     "timestamp",      "receiveTimestamp",
    "severity",    "insertId",     "labels",         "textPayload",
    "jsonPayload", "httpRequest",  "operation",      "trace",
    "spanId",      "traceSampled", "sourceLocation", "split",
    NULL};

static void rfc3339_now(char *out, size_t len)
{
  struct timespec ts;
  struct tm tm;

  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
           ts.tv_nsec);
}

static enum MHD_Result on_write(struct MHD_Connection *c, const char *body,
                                size_t len)
{
  json_t *doc = json_loadb(body ? body : "", len, 0, NULL), *list, *e;
  const char *bad, *log_name;
  char msg[256], now[64];
  size_t i;

  if (!json_is_object(doc)) {
    json_decref(doc);
    return error_reply(c, 400, "Invalid JSON payload received.");
  }
  list = json_object_get(doc, "entries");
  if ((bad = unknown_field(doc, write_fields))) {
    snprintf(msg, sizeof(msg),
             "Invalid JSON payload received. Unknown name \"%.64s\": Cannot "
             "find field.",
             bad);
    json_decref(doc);
    return error_reply(c, 400, msg);
  }
  if (!json_is_array(list) || json_array_size(list) == 0) {
    json_decref(doc);
    return error_reply(c, 400, "At least one log entry is required.");
  }
  json_array_foreach (list, i, e) {
    if (!json_is_object(e) || (bad = unknown_field(e, entry_fields))) {
      json_decref(doc);
      return error_reply(c, 400, "Invalid JSON payload received.");
    }
  }
  rfc3339_now(now, sizeof(now));
  pthread_mutex_lock(&mu);
  json_array_foreach (list, i, e) {
    json_t *x = json_deep_copy(e), *labels;
    struct stored s;
    size_t lo = 0, hi = n_entries;
    const char *ts;
    if (!json_object_get(x, "logName") &&
        (log_name = json_string_value(json_object_get(doc, "logName"))))
      json_object_set_new(x, "logName", json_string(log_name));
    if (!json_object_get(x, "resource") && json_object_get(doc, "resource"))
      json_object_set(x, "resource", json_object_get(doc, "resource"));
    labels = json_object_get(doc, "labels");
    if (labels) { /* the request's labels under the entry's own */
      json_t *merged = json_deep_copy(labels);
      json_object_update(merged, json_object_get(x, "labels"));
      json_object_set_new(x, "labels", merged);
    }
    if (!json_object_get(x, "timestamp"))
      json_object_set_new(x, "timestamp", json_string(now));
    json_object_set_new(x, "receiveTimestamp", json_string(now));
    if (!json_object_get(x, "insertId")) {
      char id[32];
      snprintf(id, sizeof(id), "emu%016llx", ++next_id);
      json_object_set_new(x, "insertId", json_string(id));
    }
    ts = json_string_value(json_object_get(x, "timestamp"));
    if (log_time_ns(ts, &s.ns) != 0) {
      json_decref(x);
      continue;
    }
    snprintf(s.insert_id, sizeof(s.insert_id), "%s",
             json_string_value(json_object_get(x, "insertId")));
    s.e = x;
    s.visible_ms = now_ms() + ingest_delay_ms;
    if (n_entries == cap_entries) {
      size_t nc = cap_entries ? cap_entries * 2 : 1024;
      struct stored *g = realloc(entries, nc * sizeof(*g));
      if (!g) {
        json_decref(x);
        break;
      }
      entries = g;
      cap_entries = nc;
    }
    while (lo < hi) { /* the first stored after s */
      size_t mid = (lo + hi) / 2;
      if (before(s.ns, s.insert_id, &entries[mid]))
        hi = mid;
      else
        lo = mid + 1;
    }
    memmove(entries + lo + 1, entries + lo, (n_entries - lo) * sizeof(s));
    entries[lo] = s;
    n_entries++;
  }
  pthread_mutex_unlock(&mu);
  json_decref(doc);
  return reply(c, 200, json_object());
}

/* ---- entries:list -------------------------------------------------------- */

static const char *const list_fields[] = {
    "filter",     "orderBy",       "pageSize", "pageToken",
    "projectIds", "resourceNames", NULL};

/* Under mu: whether project may read now; counts the read when so. */
static bool take_read(const char *project, long long now)
{
  size_t i, k, used = 0;

  for (i = 0; i < reads_n; i++) {
    k = (reads_head + MAX_READS - 1 - i) % MAX_READS;
    if (now - reads_ms[k] >= WINDOW_MS)
      break;
    if (!strcmp(reads_project[k], project))
      used++;
  }
  if ((long)used >= reads_per_minute)
    return false;
  reads_ms[reads_head] = now;
  snprintf(reads_project[reads_head], sizeof(reads_project[0]), "%s", project);
  reads_head = (reads_head + 1) % MAX_READS;
  if (reads_n < MAX_READS)
    reads_n++;
  return true;
}

/* A page token: where the last page ended (ns and insertId), in hex. */
static void token_of(const struct stored *s, char *out, size_t len)
{
  char raw[128];
  size_t i, n;

  n = (size_t)snprintf(raw, sizeof(raw), "%lld/%s", (long long)s->ns,
                       s->insert_id);
  for (i = 0; i < n && 2 * i + 2 < len; i++)
    snprintf(out + 2 * i, 3, "%02x", (unsigned char)raw[i]);
}

static int token_parse(const char *t, int64_t *ns, char *id, size_t idlen)
{
  char raw[128];
  size_t i, n = strlen(t);
  long long v;
  int used = 0;

  if (n % 2 || n / 2 >= sizeof(raw))
    return -1;
  for (i = 0; i < n / 2; i++) {
    unsigned x;
    if (sscanf(t + 2 * i, "%2x", &x) != 1)
      return -1;
    raw[i] = (char)x;
  }
  raw[n / 2] = '\0';
  if (sscanf(raw, "%lld/%n", &v, &used) != 1 || used == 0)
    return -1;
  *ns = v;
  snprintf(id, idlen, "%s", raw + used);
  return 0;
}

static enum MHD_Result on_list(struct MHD_Connection *c, const char *body,
                               size_t len)
{
  json_t *doc = json_loadb(body ? body : "", len, 0, NULL), *names, *out, *arr;
  const char *bad, *order, *token, *res;
  char msg[512], project[64] = "", prefix[128], next[300] = "";
  struct stored tok = {0, "", 0, NULL};
  const struct stored *last = NULL;
  struct log_filter *f = NULL;
  long long size = PAGE_DEFAULT;
  bool desc = false, ok;
  size_t i, taken = 0;

  if (!json_is_object(doc)) {
    json_decref(doc);
    return error_reply(c, 400, "Invalid JSON payload received.");
  }
  pthread_mutex_lock(&mu);
  json_array_append_new(calls,
                        json_pack("{s:I, s:s, s:i, s:s#}", "ms",
                                  (json_int_t)now_ms(), "project", "", "status",
                                  0, "body", body ? body : "", (int)len));
  pthread_mutex_unlock(&mu);
  if ((bad = unknown_field(doc, list_fields))) {
    snprintf(msg, sizeof(msg),
             "Invalid JSON payload received. Unknown name \"%.64s\": Cannot "
             "find field.",
             bad);
    goto refuse;
  }
  names = json_object_get(doc, "resourceNames");
  res = json_string_value(json_array_get(names, 0));
  if (!res || json_array_size(names) != 1 || strncmp(res, "projects/", 9) ||
      strchr(res + 9, '/') || strlen(res + 9) >= sizeof(project)) {
    snprintf(msg, sizeof(msg),
             "resourceNames: one projects/PROJECT_ID is "
             "required (the emulator's subset).");
    goto refuse;
  }
  snprintf(project, sizeof(project), "%s", res + 9);
  order = json_string_value(json_object_get(doc, "orderBy"));
  if (order && strcmp(order, "timestamp asc") != 0 &&
      !(desc = !strcmp(order, "timestamp desc"))) {
    snprintf(msg, sizeof(msg), "Invalid orderBy: \"%.64s\".", order);
    goto refuse;
  }
  if (json_object_get(doc, "pageSize")) {
    json_t *ps = json_object_get(doc, "pageSize");
    size = json_is_integer(ps) ? json_integer_value(ps) : -1;
    if (!json_is_integer(ps) || size < 0) {
      snprintf(msg, sizeof(msg), "pageSize must not be negative.");
      goto refuse;
    }
    if (size == 0)
      size = PAGE_DEFAULT;
    if (size > PAGE_MAX)
      size = PAGE_MAX;
  }
  token = json_string_value(json_object_get(doc, "pageToken"));
  if (token && *token &&
      token_parse(token, &tok.ns, tok.insert_id, sizeof(tok.insert_id)) != 0) {
    snprintf(msg, sizeof(msg), "Invalid page token.");
    goto refuse;
  }
  f = log_filter_parse(json_string_value(json_object_get(doc, "filter")), msg,
                       sizeof(msg));
  if (!f)
    goto refuse;
  snprintf(prefix, sizeof(prefix), "projects/%s/logs/", project);
  out = json_object();
  arr = json_array();
  pthread_mutex_lock(&mu);
  ok = take_read(project, now_ms());
  json_object_set_new(json_array_get(calls, json_array_size(calls) - 1),
                      "project", json_string(project));
  json_object_set_new(json_array_get(calls, json_array_size(calls) - 1),
                      "status", json_integer(ok ? 200 : 429));
  for (i = 0; ok && i < n_entries; i++) {
    const struct stored *s = &entries[desc ? n_entries - 1 - i : i];
    const char *ln = json_string_value(json_object_get(s->e, "logName"));
    if (s->visible_ms > now_ms())
      continue; /* not yet ingested */
    if (token && *token &&
        !(desc ? before(s->ns, s->insert_id, &tok)
               : before(tok.ns, tok.insert_id, s)))
      continue;
    if (!ln || strncmp(ln, prefix, strlen(prefix)) ||
        !log_filter_match(f, s->e))
      continue;
    if ((long long)taken == size) {
      token_of(last, next, sizeof(next));
      break;
    }
    last = s;
    json_array_append(arr, s->e);
    taken++;
  }
  pthread_mutex_unlock(&mu);
  log_filter_free(f);
  json_decref(doc);
  if (!ok) {
    json_decref(arr);
    json_decref(out);
    return error_reply(c, 429,
                       "Quota exceeded for quota metric 'Read requests' and "
                       "limit 'Read requests per minute' of service "
                       "'logging.googleapis.com'.");
  }
  if (taken)
    json_object_set_new(out, "entries", arr);
  else
    json_decref(arr);
  if (*next)
    json_object_set_new(out, "nextPageToken", json_string(next));
  return reply(c, 200, out);
refuse:
  pthread_mutex_lock(&mu);
  json_object_set_new(json_array_get(calls, json_array_size(calls) - 1),
                      "status", json_integer(400));
  pthread_mutex_unlock(&mu);
  json_decref(doc);
  return error_reply(c, 400, msg);
}

/* ---- control ------------------------------------------------------------- */

static enum MHD_Result on_control(struct MHD_Connection *c, const char *method,
                                  const char *url, const char *body, size_t len)
{
  json_t *doc;
  size_t i;

  if (!strcmp(url, "/emulator/calls") && !strcmp(method, "GET")) {
    pthread_mutex_lock(&mu);
    doc = json_pack("{s:O}", "calls", calls);
    pthread_mutex_unlock(&mu);
    return reply(c, 200, doc);
  }
  if (!strcmp(url, "/emulator/calls") && !strcmp(method, "DELETE")) {
    pthread_mutex_lock(&mu);
    json_array_clear(calls);
    pthread_mutex_unlock(&mu);
    return reply(c, 200, json_object());
  }
  if (!strcmp(url, "/emulator/entries") && !strcmp(method, "GET")) {
    json_t *arr = json_array();
    pthread_mutex_lock(&mu);
    for (i = 0; i < n_entries; i++)
      json_array_append(arr, entries[i].e);
    pthread_mutex_unlock(&mu);
    return reply(c, 200, json_pack("{s:o}", "entries", arr));
  }
  if (!strcmp(url, "/emulator/config") && !strcmp(method, "POST")) {
    json_t *v, *d;
    doc = json_loadb(body ? body : "", len, 0, NULL);
    v = json_object_get(doc, "reads_per_minute");
    d = json_object_get(doc, "ingest_delay_ms");
    if ((v && (!json_is_integer(v) || json_integer_value(v) < 0)) ||
        (d && (!json_is_integer(d) || json_integer_value(d) < 0)) ||
        (!v && !d)) {
      json_decref(doc);
      return error_reply(c, 400,
                         "reads_per_minute or ingest_delay_ms: a count is "
                         "required.");
    }
    pthread_mutex_lock(&mu);
    if (v)
      reads_per_minute = (long)json_integer_value(v);
    if (d)
      ingest_delay_ms = (long)json_integer_value(d);
    pthread_mutex_unlock(&mu);
    json_decref(doc);
    return reply(c, 200, json_object());
  }
  return error_reply(c, 404, "Not found");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
                              const char *url, const char *method,
                              const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
  struct body *b = *con_cls;

  (void)cls;
  (void)version;
  if (!b) {
    b = calloc(1, sizeof(*b));
    if (!b)
      return MHD_NO;
    *con_cls = b;
    return MHD_YES;
  }
  if (*upload_size > 0) {
    if (b->len + *upload_size > BODY_MAX) {
      b->too_large = true;
    } else {
      char *g = realloc(b->p, b->len + *upload_size + 1);
      if (!g)
        return MHD_NO;
      b->p = g;
      memcpy(b->p + b->len, upload, *upload_size);
      b->len += *upload_size;
      b->p[b->len] = '\0';
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (b->too_large)
    return error_reply(c, 413, "request too large");
  if (!strncmp(url, "/emulator/", 10))
    return on_control(c, method, url, b->p, b->len);
  if (!strcmp(url, "/v2/entries:list") && !strcmp(method, "POST"))
    return on_list(c, b->p, b->len);
  if (!strcmp(url, "/v2/entries:write") && !strcmp(method, "POST"))
    return on_write(c, b->p, b->len);
  return error_reply(c, 404, "Not found");
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls,
                 enum MHD_RequestTerminationCode toe)
{
  struct body *b = *con_cls;

  (void)cls;
  (void)c;
  (void)toe;
  if (b) {
    free(b->p);
    free(b);
  }
  *con_cls = NULL;
}

int main(void)
{
  const char *rpm = getenv("LOG_EMU_READS_PER_MINUTE"),
             *delay = getenv("LOG_EMU_INGEST_DELAY_MS");
  char about[64];
  size_t i;
  int rc;

  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (rpm && *rpm)
    reads_per_minute = strtol(rpm, NULL, 10);
  if (delay && *delay)
    ingest_delay_ms = strtol(delay, NULL, 10);
  calls = json_array();
  snprintf(about, sizeof(about), "%ld reads a minute", reads_per_minute);
  rc = emu_serve("logging_emulator", "LOG_EMU_LISTEN", "LOG_EMU_PORT_FILE",
                 handle, done, about);
  if (rc != 0)
    return rc;
  for (i = 0; i < n_entries; i++)
    json_decref(entries[i].e);
  free(entries);
  json_decref(calls);
  return 0;
}
