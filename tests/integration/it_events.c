/*
 * it_events.c — the live event stream (SPEC §10, issue 36): Server-Sent
 * Events of a team's job events over raw sockets against two replicas on
 * one database. Events arrive in order with the same objects as a job's
 * event list; a stream resumed with Last-Event-ID on the other replica
 * after kill -9 of the serving one loses and repeats nothing; a client
 * that does not read is dropped while the others get everything; team
 * scoping; a job's follow replays its history and ends with the job; the
 * keep-alive comment.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *events_suite(void);

#define IMAGE "us-docker.pkg.dev/p/r/trainer:1.2"
#define NOISE 4000
#define WAIT_MS 30000

static struct h_server one, two;
static char db_url[512];
static char *member_a, *member_b, *finance, *admin;

static void setup(void)
{
  static const char *const env[] = {
      "GPUGATE_RATE_LIMIT_RPS=100000", "GPUGATE_ADMISSION_INTERVAL_MS=200",
      "GPUGATE_EVENTS_HEARTBEAT_MS=300", "GPUGATE_EVENTS_POLL_MS=200", NULL};

  signal(SIGPIPE, SIG_IGN);
  h_db_apply("it_events", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&one, db_url, env), 0);
  ck_assert_int_eq(h_server_start(&two, db_url, env), 0);
  member_a = h_token("team-a", "member", 3600);
  member_b = h_token("team-b", "member", 3600);
  finance = h_token("finance", "finance", 3600);
  admin = h_token("platform", "admin", 3600);
  ck_assert(member_a && member_b && finance && admin);
}

static void teardown(void)
{
  h_server_stop(&one);
  h_server_stop(&two);
  free(member_a);
  free(member_b);
  free(finance);
  free(admin);
}

/* ---- a raw SSE client ------------------------------------------------- */

struct sse {
  int fd;
  char *buf; /* received, not yet parsed (from off) */
  size_t len, cap, off;
  bool eof;
  long status;
};

struct sse_event {
  char id[64];
  char event[32];
  char *data; /* owned */
  bool comment;
};

/* Read what is there within ms; false on EOF or timeout with nothing. */
static bool sse_fill(struct sse *c, long ms)
{
  struct pollfd p = {.fd = c->fd, .events = POLLIN};
  ssize_t n;

  if (c->eof || poll(&p, 1, (int)ms) <= 0)
    return false;
  if (c->off > 0) { /* drop the blocks parsed already */
    memmove(c->buf, c->buf + c->off, c->len - c->off + 1);
    c->len -= c->off;
    c->off = 0;
  }
  if (c->len + 65536 + 1 > c->cap) {
    c->cap = c->len + 65536 + 1;
    c->buf = realloc(c->buf, c->cap);
    ck_assert(c->buf != NULL);
  }
  n = read(c->fd, c->buf + c->len, 65536);
  if (n <= 0) {
    c->eof = true;
    return false;
  }
  c->len += (size_t)n;
  c->buf[c->len] = '\0';
  return true;
}

/*
 * Open GET path as token (NULL: none) with Last-Event-ID last (may be
 * NULL), over HTTP/1.0 so that the body is the raw stream. rcvbuf > 0
 * shrinks the socket's receive buffer (a client that reads slowly).
 * Fails the test unless the status line and headers arrive.
 */
static void sse_open(const struct h_server *s, const char *path,
                     const char *token, const char *last, int rcvbuf,
                     struct sse *c)
{
  struct sockaddr_in a = {.sin_family = AF_INET};
  char req[2048], *end;
  long long until = h_now_ms() + WAIT_MS;
  size_t hl;

  memset(c, 0, sizeof(*c));
  c->fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert(c->fd >= 0);
  if (rcvbuf > 0)
    setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  a.sin_port = htons(s->port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(c->fd, (struct sockaddr *)&a, sizeof(a)), 0);
  snprintf(req, sizeof(req),
           "GET %s HTTP/1.0\r\nHost: localhost\r\nAccept: "
           "text/event-stream\r\n%s%s%s%s%s%s\r\n",
           path, token ? "Authorization: Bearer " : "", token ? token : "",
           token ? "\r\n" : "", last ? "Last-Event-ID: " : "", last ? last : "",
           last ? "\r\n" : "");
  ck_assert(write(c->fd, req, strlen(req)) == (ssize_t)strlen(req));
  while (!(end = c->buf ? strstr(c->buf, "\r\n\r\n") : NULL)) {
    ck_assert_msg(h_now_ms() < until, "no response headers for %s", path);
    if (!sse_fill(c, 1000))
      ck_assert_msg(!c->eof, "connection closed before headers: %s", path);
  }
  ck_assert(sscanf(c->buf, "HTTP/%*s %ld", &c->status) == 1);
  hl = (size_t)(end + 4 - c->buf);
  memmove(c->buf, c->buf + hl, c->len - hl + 1);
  c->len -= hl;
}

static void sse_close(struct sse *c)
{
  if (c->fd >= 0)
    close(c->fd);
  free(c->buf);
  memset(c, 0, sizeof(*c));
  c->fd = -1;
}

/* The next event or comment block within ms: true, or false on EOF or
 * timeout. */
static bool sse_next(struct sse *c, long ms, struct sse_event *ev)
{
  long long until = h_now_ms() + ms;
  char *end, *line, *next;

  memset(ev, 0, sizeof(*ev));
  while (!(end = c->buf ? strstr(c->buf + c->off, "\n\n") : NULL)) {
    long left = (long)(until - h_now_ms());
    if (left <= 0 || c->eof || (!sse_fill(c, left) && c->eof))
      return false;
  }
  *end = '\0';
  for (line = c->buf + c->off; line; line = next) {
    next = strchr(line, '\n');
    if (next)
      *next++ = '\0';
    if (line[0] == ':')
      ev->comment = true;
    else if (!strncmp(line, "id: ", 4))
      snprintf(ev->id, sizeof(ev->id), "%s", line + 4);
    else if (!strncmp(line, "event: ", 7))
      snprintf(ev->event, sizeof(ev->event), "%s", line + 7);
    else if (!strncmp(line, "data: ", 6))
      ev->data = strdup(line + 6);
  }
  c->off = (size_t)(end + 2 - c->buf);
  return true;
}

/* The next job event (comments and positions skipped) within ms; its
 * data parsed (new reference) or NULL on EOF or timeout. */
static json_t *next_job_event(struct sse *c, long ms, char id[64])
{
  long long until = h_now_ms() + ms;
  struct sse_event ev;

  while (h_now_ms() < until) {
    json_t *j;
    if (!sse_next(c, (long)(until - h_now_ms()), &ev))
      return NULL;
    if (ev.comment || strcmp(ev.event, "job_event") != 0) {
      free(ev.data);
      continue;
    }
    j = json_loads(ev.data ? ev.data : "", 0, NULL);
    ck_assert_msg(j != NULL, "data is not JSON: %s", ev.data);
    free(ev.data);
    snprintf(id, 64, "%s", ev.id);
    return j;
  }
  return NULL;
}

/* "xid.id" cursors compare as number pairs. */
static int cursor_cmp(const char *a, const char *b)
{
  unsigned long long ax = 0, ai = 0, bx = 0, bi = 0;

  ck_assert(sscanf(a, "%llu.%llu", &ax, &ai) == 2);
  ck_assert(sscanf(b, "%llu.%llu", &bx, &bi) == 2);
  if (ax != bx)
    return ax < bx ? -1 : 1;
  return ai < bi ? -1 : ai > bi;
}

/* ---- HTTP ------------------------------------------------------------- */

static void submit(const struct h_server *s, const char *team,
                   const char *token, const char *name, char id[32])
{
  char path[96], body[512];
  json_t *j;

  snprintf(path, sizeof(path), "/v1/teams/%s/jobs", team);
  snprintf(body, sizeof(body),
           "{\"name\": \"%s\", \"queue\": \"lp\", \"task\": {\"image\": "
           "\"" IMAGE "\", \"cpu_milli\": 100, \"memory_mib\": 128}}",
           name);
  j = h_call(s, "POST", path, token, body, 201);
  snprintf(id, 32, "%s", h_str(j, "id") ? h_str(j, "id") : "");
  json_decref(j);
  ck_assert(id[0]);
}

/* team-a's job's events as the list shows them (new reference). */
static json_t *listed_events(const struct h_server *s, const char *id)
{
  char path[160];
  json_t *j, *items;

  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%.31s/events?limit=100",
           id);
  j = h_call(s, "GET", path, member_a, NULL, 200);
  items = json_incref(json_object_get(j, "items"));
  json_decref(j);
  return items;
}

/* The received events of job id (from got, an array of {id, data}). */
static json_t *received_of(const json_t *got, const char *id)
{
  json_t *out = json_array(), *e;
  size_t i;

  json_array_foreach (got, i, e) {
    json_t *d = json_object_get(e, "data");
    if (!strcmp(h_str(d, "job_id"), id)) {
      json_t *copy = json_deep_copy(d);
      json_object_del(copy, "job_id");
      json_array_append_new(out, copy);
    }
  }
  return out;
}

/* Read from c until every listed event of each of the n jobs has arrived
 * (listed after skip[i] events of job i), appending {id, data} to got;
 * fails the test after WAIT_MS. */
static void read_until_listed(struct sse *c, json_t *got, char ids[][32],
                              const int *skip, int n)
{
  long long until = h_now_ms() + WAIT_MS;

  for (;;) {
    int i, complete = 0;
    char eid[64];
    json_t *d;
    for (i = 0; i < n; i++) {
      json_t *listed = listed_events(&two, ids[i]);
      json_t *mine = received_of(got, ids[i]);
      if (json_array_size(mine) + (size_t)skip[i] >= json_array_size(listed))
        complete++;
      json_decref(listed);
      json_decref(mine);
    }
    if (complete == n)
      return;
    ck_assert_msg(h_now_ms() < until, "only %d of %d jobs complete", complete,
                  n);
    d = next_job_event(c, 500, eid);
    if (d)
      json_array_append_new(got, json_pack("{s:s, s:o}", "id", eid, "data", d));
    ck_assert_msg(!c->eof, "the stream ended");
  }
}

/* The listed events of job id after its first skip ones, in the listed
 * order and with the listed content. read_until_listed saw every event
 * listed then arrive; the job may have moved on since (an admission, a
 * dispatch), so the list now may be longer than what was read, never
 * shorter: the stream sent nothing the list lacks. */
static void assert_same(const json_t *got, const char *id, int skip)
{
  json_t *listed = listed_events(&two, id), *mine = received_of(got, id);
  size_t i;

  ck_assert_msg(json_array_size(mine) + (size_t)skip <= json_array_size(listed),
                "job %s: %zu received + %d before the cursor, %zu listed", id,
                json_array_size(mine), skip, json_array_size(listed));
  for (i = 0; i < json_array_size(mine); i++) {
    char *a = json_dumps(json_array_get(mine, i), JSON_SORT_KEYS);
    char *b =
        json_dumps(json_array_get(listed, i + (size_t)skip), JSON_SORT_KEYS);
    ck_assert_msg(!strcmp(a, b), "job %s event %zu: got %s, listed %s", id, i,
                  a, b);
    free(a);
    free(b);
  }
  json_decref(listed);
  json_decref(mine);
}

/* Every id in got after the one before it. */
static void assert_ids_increase(const json_t *got, const char *after)
{
  const char *prev = after;
  json_t *e;
  size_t i;

  json_array_foreach (got, i, e) {
    const char *id = h_str(e, "id");
    ck_assert_msg(id && id[0], "an event without id");
    if (prev)
      ck_assert_msg(cursor_cmp(prev, id) < 0, "id %s after %s", id, prev);
    prev = id;
  }
}

/* ---- tests ------------------------------------------------------------ */

START_TEST(events_arrive_in_order)
{
  struct sse c;
  char ids[3][32], other[32];
  int skip[3] = {0, 0, 0};
  json_t *got = json_array(), *e;
  size_t i;

  sse_open(&one, "/v1/teams/team-a/events", member_a, NULL, 0, &c);
  ck_assert_int_eq(c.status, 200);
  submit(&one, "team-a", member_a, "live-1", ids[0]);
  submit(&two, "team-b", member_b, "elsewhere", other);
  submit(&two, "team-a", member_a, "live-2", ids[1]);
  submit(&one, "team-a", member_a, "live-3", ids[2]);
  read_until_listed(&c, got, ids, skip, 3);
  for (i = 0; i < 3; i++)
    assert_same(got, ids[i], 0);
  assert_ids_increase(got, NULL);
  json_array_foreach (got, i, e) {
    json_t *d = json_object_get(e, "data");
    ck_assert_msg(strcmp(h_str(d, "job_id"), other) != 0,
                  "team-b's job in team-a's stream");
  }
  /* a submission names who made it */
  e = received_of(got, ids[0]);
  ck_assert_str_eq(h_str(json_array_get(e, 0), "to"), "PENDING");
  ck_assert_msg(h_str(json_array_get(e, 0), "actor") != NULL, "no actor");
  json_decref(e);
  json_decref(got);
  sse_close(&c);
}
END_TEST

START_TEST(resume_after_kill9_on_other_replica)
{
  struct sse c;
  char ids[4][32], last[64] = "", eid[64];
  int skip[4] = {1, 0, 0, 0};
  json_t *got = json_array(), *d;
  size_t i;

  sse_open(&one, "/v1/teams/team-a/events", member_a, NULL, 0, &c);
  ck_assert_int_eq(c.status, 200);
  submit(&one, "team-a", member_a, "before-kill", ids[0]);
  /* the submission's event, then kill the replica at once */
  while ((d = next_job_event(&c, WAIT_MS, eid))) {
    bool mine = !strcmp(h_str(d, "job_id"), ids[0]);
    json_decref(d);
    if (mine)
      break;
  }
  ck_assert_msg(eid[0], "no event before the kill");
  snprintf(last, sizeof(last), "%s", eid);
  ck_assert_int_eq(h_server_kill(&one, SIGKILL), 0);
  sse_close(&c);
  /* meanwhile, on the other replica */
  submit(&two, "team-a", member_a, "after-kill-1", ids[1]);
  submit(&two, "team-a", member_a, "after-kill-2", ids[2]);
  submit(&two, "team-a", member_a, "after-kill-3", ids[3]);
  sse_open(&two, "/v1/teams/team-a/events", member_a, last, 0, &c);
  ck_assert_int_eq(c.status, 200);
  read_until_listed(&c, got, ids, skip, 4);
  /* nothing twice, nothing at or before the cursor, nothing missing */
  assert_ids_increase(got, last);
  for (i = 0; i < 4; i++)
    assert_same(got, ids[i], skip[i]);
  json_decref(got);
  sse_close(&c);
}
END_TEST

START_TEST(slow_client_dropped_others_served)
{
  struct sse fast, slow;
  PGconn *pg = h_db_connect(db_url);
  char id[32], eid[64], sql[512];
  int batch, seen = 0, slow_seen = 0;
  long long until;
  json_t *d;

  ck_assert_int_eq(PQstatus(pg), CONNECTION_OK);
  submit(&two, "team-a", member_a, "chatty", id);
  sse_open(&two, "/v1/teams/team-a/events", member_a, NULL, 0, &fast);
  sse_open(&two, "/v1/teams/team-a/events", member_a, NULL, 2048, &slow);
  ck_assert_int_eq(fast.status, 200);
  ck_assert_int_eq(slow.status, 200);
  /* 4,000 events of 300 bytes, 100 per transaction, each transaction
   * once the reading client has the one before: 1.2 MB, far past the
   * slow client's bound (the default 256 KiB) and its socket buffers,
   * while the reading client never falls behind by more than one */
  until = h_now_ms() + 4 * WAIT_MS;
  for (batch = 0; batch < NOISE / 100; batch++) {
    PGresult *res;
    snprintf(sql, sizeof(sql),
             "INSERT INTO job_events (job_id, team, from_state, to_state, "
             "attempt, message) SELECT '%s', 'team-a', 'PENDING', 'PENDING', "
             "1, 'noise-' || g || '-' || repeat('x', 200) "
             "FROM generate_series(%d, %d) g",
             id, batch * 100 + 1, batch * 100 + 100);
    res = PQexec(pg, sql);
    ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "%s",
                  PQerrorMessage(pg));
    PQclear(res);
    /* the client that reads gets every one, in order */
    while (seen < (batch + 1) * 100 && h_now_ms() < until &&
           (d = next_job_event(&fast, 5000, eid))) {
      const char *m = h_str(d, "message");
      if (m && !strncmp(m, "noise-", 6)) {
        ck_assert_int_eq(strtol(m + 6, NULL, 10), seen + 1);
        seen++;
      }
      json_decref(d);
    }
    ck_assert_int_eq(seen, (batch + 1) * 100);
  }
  /* the one that did not was dropped: what it reads now ends early */
  until = h_now_ms() + WAIT_MS;
  while (h_log_count(&two, "fell behind") < 1 && h_now_ms() < until)
    h_sleep_ms(100);
  ck_assert_int_ge(h_log_count(&two, "fell behind"), 1);
  {
    struct h_resp r;
    ck_assert_int_eq(h_request(&two, "GET", "/metrics", admin, NULL, NULL, &r),
                     0);
    ck_assert_msg(h_sample(r.body, "gpugate_events_clients_dropped_total") >= 1,
                  "no drop counted");
    ck_assert_msg(h_sample(r.body, "gpugate_events_clients") >= 1,
                  "no clients counted");
    h_resp_free(&r);
  }
  while ((d = next_job_event(&slow, WAIT_MS, eid))) {
    const char *m = h_str(d, "message");
    if (m && !strncmp(m, "noise-", 6))
      slow_seen++;
    json_decref(d);
  }
  ck_assert_msg(slow.eof, "the slow client's stream was not closed");
  ck_assert_msg(slow_seen < NOISE, "the slow client got all %d", slow_seen);
  sse_close(&fast);
  sse_close(&slow);
  PQfinish(pg);
}
END_TEST

/* Run sql on pg with $1 = param (NULL: no parameter); the first column of
 * its first row (static buffer) or "" when it returns none. Fails the test
 * when it fails. */
static const char *sql1p(PGconn *pg, const char *sql, const char *param)
{
  static char out[64];
  PGresult *res =
      PQexecParams(pg, sql, param ? 1 : 0, NULL, &param, NULL, NULL, 0);

  ck_assert_msg(PQresultStatus(res) == PGRES_TUPLES_OK ||
                    PQresultStatus(res) == PGRES_COMMAND_OK,
                "%s: %s", sql, PQerrorMessage(pg));
  snprintf(out, sizeof(out), "%s",
           PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "");
  PQclear(res);
  return out;
}

/*
 * Sequence values commit out of order: transaction A takes an event id,
 * B takes the next one and commits first. A stream that sent B's event
 * with a cursor after A's id would lose A's on resume; this one holds
 * B's back until A has ended, then sends A's first. (B arriving first
 * is what an id-ordered stream does as soon as it reads; the keep-alive
 * comments below only give it the chance to.)
 */
START_TEST(cursor_safe_against_out_of_order_commits)
{
  struct sse c;
  struct sse_event ev;
  PGconn *a = h_db_connect(db_url), *b = h_db_connect(db_url);
  char id[32], first[64] = "";
  int beats = 0, got = 0;
  long long until = h_now_ms() + WAIT_MS;
  json_t *d;

  ck_assert_int_eq(PQstatus(a), CONNECTION_OK);
  ck_assert_int_eq(PQstatus(b), CONNECTION_OK);
  submit(&two, "team-a", member_a, "out-of-order", id);
  sse_open(&two, "/v1/teams/team-a/events", member_a, NULL, 0, &c);
  ck_assert_int_eq(c.status, 200);
  sql1p(a, "BEGIN", NULL);
#define INSERT_MARK(m)                                                         \
  "INSERT INTO job_events (job_id, team, from_state, to_state, attempt, "      \
  "message) VALUES ($1, 'team-a', 'PENDING', 'PENDING', 1, '" m "') "          \
  "RETURNING id"
  snprintf(first, sizeof(first), "%s", sql1p(a, INSERT_MARK("mark-a"), id));
  ck_assert_msg(strtoll(sql1p(b, INSERT_MARK("mark-b"), id), NULL, 10) >
                    strtoll(first, NULL, 10),
                "B's id is not after A's");
  /* B is committed, A is not: several reads of the hub go by */
  while (beats < 3 && h_now_ms() < until && sse_next(&c, WAIT_MS, &ev)) {
    if (ev.comment)
      beats++;
    ck_assert_msg(!ev.data || !strstr(ev.data, "mark-b"),
                  "B's event was sent while A's could still commit");
    free(ev.data);
  }
  ck_assert_int_eq(beats, 3);
  sql1p(a, "COMMIT", NULL);
  while (got < 2 && (d = next_job_event(&c, WAIT_MS, first))) {
    const char *m = h_str(d, "message");
    if (m && !strcmp(m, got == 0 ? "mark-a" : "mark-b"))
      got++;
    else
      ck_assert_msg(!m || strncmp(m, "mark-", 5) != 0, "%s out of order", m);
    json_decref(d);
  }
  ck_assert_int_eq(got, 2);
  sse_close(&c);
  PQfinish(a);
  PQfinish(b);
}
END_TEST

START_TEST(scoped_to_the_team)
{
  struct sse c;
  char id[32], path[160];
  struct h_resp r;
  static const char *const bad_last[] = {"Last-Event-ID: 12", NULL};

  submit(&two, "team-a", member_a, "scoped", id);
  sse_open(&two, "/v1/teams/team-a/events", member_b, NULL, 0, &c);
  ck_assert_int_eq(c.status, 404);
  sse_close(&c);
  sse_open(&two, "/v1/teams/team-a/events", finance, NULL, 0, &c);
  ck_assert_int_eq(c.status, 403);
  sse_close(&c);
  sse_open(&two, "/v1/teams/team-a/events", NULL, NULL, 0, &c);
  ck_assert_int_eq(c.status, 401);
  sse_close(&c);
  sse_open(&two, "/v1/teams/no-such-team/events", admin, NULL, 0, &c);
  ck_assert_int_eq(c.status, 404);
  sse_close(&c);
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s/events?follow=true",
           id);
  sse_open(&two, path, member_b, NULL, 0, &c);
  ck_assert_int_eq(c.status, 404);
  sse_close(&c);
  snprintf(path, sizeof(path), "/v1/teams/team-b/jobs/%s/events?follow=true",
           id);
  sse_open(&two, path, member_b, NULL, 0, &c);
  ck_assert_int_eq(c.status, 404);
  sse_close(&c);
  /* bad input names its field */
  ck_assert_int_eq(h_request(&two, "GET", "/v1/teams/team-a/events", member_a,
                             NULL, bad_last, &r),
                   0);
  ck_assert_msg(h_is_problem(&r, 400, "Last-Event-ID"), "%ld %s", r.status,
                r.body);
  h_resp_free(&r);
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s/events?follow=yes",
           id);
  ck_assert_int_eq(h_request(&two, "GET", path, member_a, NULL, NULL, &r), 0);
  ck_assert_msg(h_is_problem(&r, 400, "follow"), "%ld %s", r.status, r.body);
  h_resp_free(&r);
}
END_TEST

START_TEST(follow_ends_with_the_job)
{
  struct sse c;
  char id[32], path[160], eid[64], last[64] = "";
  json_t *d, *seen = json_array(), *listed;
  char *a, *b;
  size_t i;

  submit(&two, "team-a", member_a, "followed", id);
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s/events?follow=true",
           id);
  sse_open(&one, path, member_a, NULL, 0, &c);
  ck_assert_int_eq(c.status, 200);
  /* its history first: the submission */
  d = next_job_event(&c, WAIT_MS, eid);
  ck_assert_msg(d != NULL, "no first event");
  ck_assert_str_eq(h_str(d, "to"), "PENDING");
  json_array_append_new(seen, d);
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s/cancel", id);
  json_decref(h_call(&two, "POST", path, member_a, NULL, 200));
  while ((d = next_job_event(&c, WAIT_MS, eid))) {
    snprintf(last, sizeof(last), "%s", eid);
    json_array_append_new(seen, d);
  }
  ck_assert_msg(c.eof, "the follow did not end");
  ck_assert_str_eq(h_str(json_array_get(seen, json_array_size(seen) - 1), "to"),
                   "CANCELLED");
  /* the same events as the list */
  listed = listed_events(&two, id);
  json_array_foreach (seen, i, d)
    json_object_del(d, "job_id");
  a = json_dumps(seen, JSON_SORT_KEYS);
  b = json_dumps(listed, JSON_SORT_KEYS);
  ck_assert_msg(!strcmp(a, b), "followed %s, listed %s", a, b);
  free(a);
  free(b);
  json_decref(listed);
  json_decref(seen);
  sse_close(&c);
  /* resumed after its last event: ends at once, with nothing */
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s/events?follow=true",
           id);
  sse_open(&two, path, member_a, last, 0, &c);
  ck_assert_int_eq(c.status, 200);
  ck_assert_ptr_null(next_job_event(&c, WAIT_MS, eid));
  ck_assert(c.eof);
  sse_close(&c);
}
END_TEST

/* A job that waits gets its queue position as an event: team-a's
 * compact cluster queue (2 A100s, no borrowing) is filled first. */
START_TEST(position_changes_arrive)
{
  struct sse c;
  struct sse_event ev;
  char fill[32], waiting[32], path[96], body[512];
  long long until = h_now_ms() + WAIT_MS;
  json_t *j, *pos = NULL;

  sse_open(&two, "/v1/teams/team-a/events", member_a, NULL, 0, &c);
  ck_assert_int_eq(c.status, 200);
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs");
  snprintf(body, sizeof(body),
           "{\"name\": \"compact-fill\", \"queue\": \"compact\", "
           "\"priority_class\": \"compact\", \"task\": {\"image\": \"" IMAGE
           "\", \"cpu_milli\": 2000, \"memory_mib\": 10240, \"gpu\": 2}}");
  j = h_call(&two, "POST", path, member_a, body, 201);
  snprintf(fill, sizeof(fill), "%s", h_str(j, "id"));
  json_decref(j);
  body[strlen("{\"name\": \"compact-")] = 'w'; /* compact-will */
  j = h_call(&two, "POST", path, member_a, body, 201);
  snprintf(waiting, sizeof(waiting), "%s", h_str(j, "id"));
  json_decref(j);
  while (!pos && h_now_ms() < until &&
         sse_next(&c, (long)(until - h_now_ms()), &ev)) {
    if (!strcmp(ev.event, "position") && ev.data) {
      json_t *d = json_loads(ev.data, 0, NULL);
      if (d && !strcmp(h_str(d, "job_id"), waiting))
        pos = d;
      else
        json_decref(d);
    }
    free(ev.data);
  }
  ck_assert_msg(pos != NULL, "no position event for %s (fill %s)", waiting,
                fill);
  ck_assert(json_is_integer(json_object_get(pos, "position_in_queue")));
  ck_assert(json_is_integer(json_object_get(pos, "position_in_cluster_queue")));
  ck_assert(json_is_integer(json_object_get(pos, "ahead_gpus")));
  json_decref(pos);
  sse_close(&c);
}
END_TEST

START_TEST(keepalive_comment)
{
  struct sse c;
  struct sse_event ev;
  long long until = h_now_ms() + WAIT_MS;
  bool comment = false;

  sse_open(&two, "/v1/teams/team-b/events", member_b, NULL, 0, &c);
  ck_assert_int_eq(c.status, 200);
  while (!comment && h_now_ms() < until && sse_next(&c, 1000, &ev)) {
    comment = ev.comment;
    free(ev.data);
  }
  ck_assert_msg(comment, "no keep-alive comment");
  sse_close(&c);
}
END_TEST

Suite *events_suite(void)
{
  Suite *s = suite_create("events");
  TCase *tc = tcase_create("events");

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, events_arrive_in_order);
  tcase_add_test(tc, cursor_safe_against_out_of_order_commits);
  tcase_add_test(tc, scoped_to_the_team);
  tcase_add_test(tc, follow_ends_with_the_job);
  tcase_add_test(tc, position_changes_arrive);
  tcase_add_test(tc, keepalive_comment);
  tcase_add_test(tc, slow_client_dropped_others_served);
  /* last: replica one is gone afterwards */
  tcase_add_test(tc, resume_after_kill9_on_other_replica);
  suite_add_tcase(s, tc);
  return s;
}
