/*
 * job_logs.c — GET /v1/teams/{team}/jobs/{id}/logs: the job's task and
 * agent logs from Cloud Logging, oldest first (SPEC §10 "Live views").
 *
 * gpugate keeps no copy: a page is one entries:list call (server/
 * logpoll.h, within the deployment's read budget, 429 with Retry-After
 * when it is spent); page_token is the call's nextPageToken wrapped with
 * the filters it belongs to (base64url of a small JSON object), so that a
 * next page asks exactly what the first did. follow=true answers a stream
 * fed by the process's one poller (NDJSON objects, or lines for
 * text/plain) that ends when the job has ended and its last entries are
 * sent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcp/logging.h"
#include "db/job_logs.h"
#include "handlers/handlers.h"
#include "handlers/validate.h"
#include "lib/b64url.h"
#include "lib/log.h"
#include "control/logpoll.h"
#include "server/problem.h"
#include "lib/rfc3339.h"

#define PAGE_DEFAULT 100
#define TOKEN_MAX 4096 /* characters of page_token */

/* The request's filters. */
struct params {
  char since[64];
  int task;
  char severity[16];
  int page_size;
  char google[2048]; /* Logging's page token, "" for the first page */
  bool follow, text;
};

/* Whether the client asked for text/plain (not JSON). */
static bool wants_text(const char *accept)
{
  return accept && strstr(accept, "text/plain") &&
         !strstr(accept, "application/json");
}

static bool parse_int(const char *s, long min, long max, int *out)
{
  char *end;
  long v;

  if (!s || !*s)
    return false;
  v = strtol(s, &end, 10);
  if (*end || v < min || v > max)
    return false;
  *out = (int)v;
  return true;
}

/* Decode a page_token into p; false when it is not one of ours. */
static bool open_token(const char *t, struct params *p)
{
  unsigned char raw[TOKEN_MAX];
  size_t n = 0;
  json_t *doc;
  const char *g, *s, *v;
  json_int_t task, size;
  bool ok;

  if (strlen(t) > TOKEN_MAX ||
      b64url_decode(t, strlen(t), raw, sizeof(raw) - 1, &n) != 0)
    return false;
  doc = json_loadb((const char *)raw, n, JSON_REJECT_DUPLICATES, NULL);
  ok = doc &&
       json_unpack(doc, "{s:s, s:s, s:I, s:s, s:I}", "g", &g, "s", &s, "t",
                   &task, "v", &v, "n", &size) == 0 &&
       strlen(g) < sizeof(p->google) && strlen(s) < sizeof(p->since) &&
       strlen(v) < sizeof(p->severity) && task >= -1 && task <= 100000 &&
       size >= 1 && size <= LOGGING_PAGE_MAX &&
       (!*v || logging_severity_rank(v) >= 0);
  if (ok) {
    snprintf(p->google, sizeof(p->google), "%s", g);
    snprintf(p->since, sizeof(p->since), "%s", s);
    snprintf(p->severity, sizeof(p->severity), "%s", v);
    p->task = (int)task;
    p->page_size = (int)size;
  }
  json_decref(doc);
  return ok;
}

/* Our page_token for Logging's next (new string, NULL when out of memory). */
static char *seal_token(const struct params *p, const char *next)
{
  json_t *doc = json_pack("{s:s, s:s, s:i, s:s, s:i}", "g", next, "s", p->since,
                          "t", p->task, "v", p->severity, "n", p->page_size);
  char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL, *out = NULL;
  size_t n = text ? strlen(text) : 0, cap = n * 4 / 3 + 4;

  if (text && (out = malloc(cap)) &&
      b64url_encode((unsigned char *)text, n, out, cap) == 0) {
    free(out);
    out = NULL;
  }
  free(text);
  json_decref(doc);
  return out;
}

/* Read and check the query into p; the problem is recorded when false. */
static bool read_params(struct gg_req *req, struct params *p)
{
  const char *since = req_query(req, "since"), *task = req_query(req, "task"),
             *sev = req_query(req, "severity"),
             *tok = req_query(req, "page_token"),
             *size = req_query(req, "page_size"),
             *follow = req_query(req, "follow");
  int64_t us;

  memset(p, 0, sizeof(*p));
  p->task = -1;
  p->page_size = PAGE_DEFAULT;
  p->text = wants_text(req_header(req, "Accept"));
  if (since &&
      (strlen(since) >= sizeof(p->since) || rfc3339_parse_us(since, &us) != 0))
    problem_field(req, "since", "must be an RFC 3339 date-time");
  else if (since)
    snprintf(p->since, sizeof(p->since), "%s", since);
  if (task && !parse_int(task, 0, 100000, &p->task))
    problem_field(req, "task", "must be a task index (0 to 100000)");
  if (sev && logging_severity_rank(sev) < 0)
    problem_field(req, "severity",
                  "must be one of DEFAULT, DEBUG, INFO, NOTICE, WARNING, "
                  "ERROR, CRITICAL, ALERT, EMERGENCY");
  else if (sev)
    snprintf(p->severity, sizeof(p->severity), "%s", sev);
  if (size && !parse_int(size, 1, LOGGING_PAGE_MAX, &p->page_size))
    problem_field(req, "page_size", "must be 1 to %d", LOGGING_PAGE_MAX);
  if (follow && strcmp(follow, "true") != 0 && strcmp(follow, "false") != 0)
    problem_field(req, "follow", "must be true or false");
  p->follow = follow && !strcmp(follow, "true");
  if (tok && p->follow)
    problem_field(req, "page_token", "cannot be given with follow=true");
  else if (tok && !open_token(tok, p))
    problem_field(req, "page_token", "is not a page token of this list");
  if (problem_nfields(req)) {
    problem_fail(req, GG_BAD_REQUEST,
                 "The log query's parameters are invalid; see errors.");
    return false;
  }
  return true;
}

static enum gg_code follow_reply(struct gg_req *req, const struct params *p)
{
  struct logpoll_follow w;
  void *f;

  memset(&w, 0, sizeof(w));
  w.job = req_param(req, "id");
  w.since = p->since;
  w.task = p->task;
  w.min_severity = *p->severity ? logging_severity_rank(p->severity) : 0;
  w.text = p->text;
  w.conn = req->conn;
  f = logpoll_follow(&w);
  if (!f)
    return problem_fail(req, GG_UNAVAILABLE,
                        "The log reader is not running; try again later.");
  req_add_header(req, "Cache-Control", "no-store");
  req_reply_stream(
      req, 200, p->text ? "text/plain; charset=utf-8" : "application/x-ndjson",
      logpoll_stream_read, f, logpoll_unfollow);
  return GG_OK;
}

/* The page as text/plain lines. */
static enum gg_code text_reply(struct gg_req *req, json_t *views,
                               const char *next)
{
  size_t i, len = 0, cap = 1024;
  char *out = malloc(cap);
  json_t *v;
  enum gg_code code;

  if (!out)
    return problem_fail(req, GG_INTERNAL, "Out of memory.");
  json_array_foreach (views, i, v) {
    const char *t = json_string_value(json_object_get(v, "text"));
    size_t k = strlen(t ? t : "");
    if (len + k + 2 > cap) {
      char *g;
      cap = (len + k + 2) * 2;
      if (!(g = realloc(out, cap))) {
        free(out);
        return problem_fail(req, GG_INTERNAL, "Out of memory.");
      }
      out = g;
    }
    memcpy(out + len, t ? t : "", k);
    len += k;
    out[len++] = '\n';
  }
  if (next)
    req_add_header(req, "X-Next-Page-Token", next);
  code = req_reply_text(req, 200, "text/plain; charset=utf-8", out, len);
  free(out);
  return code;
}

enum gg_code job_logs(struct gg_req *req)
{
  const char *team = req_param(req, "team"), *id = req_param(req, "id");
  const char *jobs[1], *google_next;
  struct logging_query q;
  struct params p;
  json_t *doc = NULL, *views = NULL, *e;
  char err[512], retry[24], *next = NULL;
  enum logpoll_rc rc;
  enum gg_code code;
  long retry_s = 0;
  bool live;
  size_t i;

  if (!v_path_name(req, "team") || !id || !v_is_name(id))
    return problem_fail(req, GG_NOT_FOUND, "No such job.");
  if (!read_params(req, &p))
    return req->err.code;
  code = db_job_log_target(req_db(req), &req->err, team, id, &live);
  if (code != GG_OK)
    return code;
  if (p.follow)
    return follow_reply(req, &p);
  jobs[0] = id;
  memset(&q, 0, sizeof(q));
  q.project = logpoll_project();
  q.deployment = logpoll_deployment();
  q.jobs = jobs;
  q.n_jobs = 1;
  q.since = p.since;
  q.task = p.task;
  q.severity = p.severity;
  rc = logpoll_read(req_db(req), &q, p.page_size, p.google, &doc, &retry_s, err,
                    sizeof(err));
  switch (rc) {
  case LOGPOLL_OK:
    break;
  case LOGPOLL_SPENT:
    snprintf(retry, sizeof(retry), "%ld", retry_s > 0 ? retry_s : 1);
    req_add_header(req, "Retry-After", retry);
    return problem_fail(req, GG_TOO_MANY_REQUESTS,
                        "The deployment's Cloud Logging read budget is spent; "
                        "try again in %ld s.",
                        retry_s > 0 ? retry_s : 1);
  case LOGPOLL_REFUSED:
    log_msg(LOG_WARN, "logs of job %s: %s", id, err);
    if (*p.google) {
      problem_field(req, "page_token", "was refused by Cloud Logging");
      return problem_fail(req, GG_BAD_REQUEST,
                          "The page token is no longer valid; start again "
                          "without it.");
    }
    return problem_fail(req, GG_UNAVAILABLE,
                        "Cloud Logging refused the read; try again later.");
  default:
    log_msg(LOG_WARN, "logs of job %s: %s", id, err);
    return problem_fail(req, GG_UNAVAILABLE,
                        "Cloud Logging cannot be read now; try again later.");
  }
  views = json_array();
  json_array_foreach (json_object_get(doc, "entries"), i, e) {
    json_array_append_new(views, logging_entry_view(e, NULL));
  }
  google_next = json_string_value(json_object_get(doc, "nextPageToken"));
  if (google_next && *google_next && !(next = seal_token(&p, google_next))) {
    code = problem_fail(req, GG_INTERNAL, "Out of memory.");
    goto out;
  }
  if (p.text) {
    code = text_reply(req, views, next);
    goto out;
  }
  req_reply(req, 200,
            json_pack("{s:O, s:o}", "entries", views, "next_page_token",
                      next ? json_string(next) : json_null()));
  code = GG_OK;
out:
  (void)live;
  free(next);
  json_decref(views);
  json_decref(doc);
  return code;
}
