/*
 * it_jobs.c — the jobs API over HTTP against the reference architecture:
 * Idempotency-Key (replay, mismatch, concurrent duplicates, per team),
 * team isolation of every job route, a table of invalid submissions, the
 * shape of a job, list filters and paging, events, cancel and the queue
 * status counts.
 */
#include <check.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/integration/harness.h"

Suite *jobs_suite(void);

static struct h_server srv;
static char db_url[512];
static char *member_a, *member_b, *finance, *admin;
/* team-a's compact cluster queue (a100: 2 GPU, no borrowing) is filled by
 * this job in setup, so later compact jobs stay PENDING */
static char fill_id[32];

#define IMAGE "us-docker.pkg.dev/p/r/trainer:1.2"
#define TASK_OK                                                                \
  "\"image\": \"" IMAGE "\", \"cpu_milli\": 100, \"memory_mib\": 128"

/* A small job (no GPU) in queue q of team-a style, with extra top-level
 * fields (each ending in ", ") and extra task fields (each starting ", "). */
#define JOB_IN(q, name, top, task)                                             \
  "{\"name\": \"" name "\", \"queue\": \"" q "\", " top                        \
  "\"task\": {" TASK_OK task "}}"
#define JOB(top, task) JOB_IN("lp", "bad", top, task)

/* POST a job body as token to team's jobs; expects 201; writes the id. */
static void submit(const char *team, const char *token, const char *body,
                   char id[32])
{
  char path[96];
  struct h_resp r;

  snprintf(path, sizeof(path), "/v1/teams/%s/jobs", team);
  ck_assert_int_eq(h_request(&srv, "POST", path, token, body, NULL, &r), 0);
  ck_assert_msg(r.status == 201, "submit %s: %ld %s", body, r.status, r.body);
  snprintf(id, 32, "%s", h_str(r.json, "id"));
  h_resp_free(&r);
}

/* A small job named name in queue of team-a, labelled k=v (may be NULL). */
static void submit_small(const char *queue, const char *name, const char *lk,
                         const char *lv, char id[32])
{
  char body[512], labels[128] = "";

  if (lk)
    snprintf(labels, sizeof(labels), "\"labels\": {\"%s\": \"%s\"}, ", lk, lv);
  snprintf(body, sizeof(body),
           "{\"name\": \"%s\", \"queue\": \"%s\", %s\"task\": {" TASK_OK "}}",
           name, queue, labels);
  submit("team-a", member_a, body, id);
}

/* The raw body of GET team-a's job id (a new string). */
static char *get_text(const char *id)
{
  char path[160], *body;
  struct h_resp r;

  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%.31s", id);
  ck_assert_int_eq(h_request(&srv, "GET", path, member_a, NULL, NULL, &r), 0);
  ck_assert_msg(r.status == 200, "GET %s: %ld %s", path, r.status, r.body);
  body = strdup(r.body);
  h_resp_free(&r);
  return body;
}

/* GET one of team-a's jobs; a new reference. */
static json_t *get_job(const char *id)
{
  char *body = get_text(id);
  json_t *j = json_loads(body, 0, NULL);

  ck_assert_msg(j != NULL, "%s", body);
  free(body);
  return j;
}

/* Poll until team-a's job id is in state (up to ms); its last view. */
static json_t *wait_state(const char *id, const char *state, long ms)
{
  long waited;
  json_t *j = NULL;

  for (waited = 0;; waited += 100) {
    j = get_job(id);
    if (!strcmp(h_str(j, "state"), state) || waited >= ms)
      return j;
    json_decref(j);
    h_sleep_ms(100);
  }
}

/* GET path as token; returns the items array (new reference) of a 200 list
 * and the next cursor. */
static json_t *list(const char *path, const char *token, char *next,
                    size_t nextlen)
{
  struct h_resp r;
  json_t *items, *nc;

  ck_assert_int_eq(h_request(&srv, "GET", path, token, NULL, NULL, &r), 0);
  ck_assert_msg(r.status == 200, "GET %s: %ld %s", path, r.status, r.body);
  items = json_incref(json_object_get(r.json, "items"));
  ck_assert_msg(json_is_array(items), "%s", r.body);
  nc = json_object_get(r.json, "next_cursor");
  ck_assert_msg(nc && (json_is_null(nc) || json_is_string(nc)), "%s", r.body);
  if (next)
    snprintf(next, nextlen, "%s",
             json_is_string(nc) ? json_string_value(nc) : "");
  h_resp_free(&r);
  return items;
}

static void setup(void)
{
  static const char *const env[] = {"GPUGATE_RATE_LIMIT_RPS=100000",
                                    "GPUGATE_ADMISSION_INTERVAL_MS=200", NULL};
  json_t *j;

  h_db_apply("it_jobs", H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv, db_url, env), 0);
  member_a = h_token("team-a", "member", 3600);
  member_b = h_token("team-b", "member", 3600);
  finance = h_token("finance", "finance", 3600);
  admin = h_token("platform", "admin", 3600);
  ck_assert(member_a && member_b && finance && admin);
  submit("team-a", member_a,
         "{\"name\": \"compact-fill\", \"queue\": \"compact\", "
         "\"priority_class\": \"compact\", \"task\": {\"image\": \"" IMAGE
         "\", \"cpu_milli\": 2000, \"memory_mib\": 10240, \"gpu\": 2}}",
         fill_id);
  j = wait_state(fill_id, "ADMITTED", 10000);
  ck_assert_msg(!strcmp(h_str(j, "state"), "ADMITTED"), "fill job: %s",
                h_str(j, "state"));
  json_decref(j);
}

static void teardown(void)
{
  h_server_stop(&srv);
  free(member_a);
  free(member_b);
  free(finance);
  free(admin);
}

/* A job that stays PENDING: team-a's compact queue is full. */
static void submit_pending(const char *name, char id[32])
{
  char body[512];

  snprintf(body, sizeof(body),
           "{\"name\": \"%s\", \"queue\": \"compact\", \"priority_class\": "
           "\"compact\", \"task\": {\"image\": \"" IMAGE
           "\", \"cpu_milli\": 1000, \"memory_mib\": 1024, \"gpu\": 2}}",
           name);
  submit("team-a", member_a, body, id);
}

/* ---- idempotency ------------------------------------------------------- */

#define IDEM_BODY(name)                                                        \
  "{\"name\": \"" name "\", \"queue\": \"lp\", \"labels\": {\"idem\": \"" name \
  "\"}, \"task\": {" TASK_OK "}}"

static void post_keyed(const char *team, const char *token, const char *key,
                       const char *body, struct h_resp *r)
{
  char path[96], hdr[512];
  const char *headers[] = {hdr, NULL};

  snprintf(path, sizeof(path), "/v1/teams/%s/jobs", team);
  snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s", key);
  ck_assert_int_eq(h_request(&srv, "POST", path, token, body, headers, r), 0);
}

/* The number of team's jobs labelled idem=value. */
static size_t count_labelled(const char *team, const char *token, const char *k,
                             const char *v)
{
  char path[192];
  json_t *items;
  size_t n;

  snprintf(path, sizeof(path), "/v1/teams/%s/jobs?label=%s=%s&limit=500", team,
           k, v);
  items = list(path, token, NULL, 0);
  n = json_array_size(items);
  json_decref(items);
  return n;
}

START_TEST(idempotent_replay)
{
  struct h_resp r1, r2;
  char loc1[256], loc2[256], want[256];

  post_keyed("team-a", member_a, "key-replay", IDEM_BODY("idem-replay"), &r1);
  ck_assert_msg(r1.status == 201, "%ld %s", r1.status, r1.body);
  post_keyed("team-a", member_a, "key-replay", IDEM_BODY("idem-replay"), &r2);
  ck_assert_msg(r2.status == 201, "%ld %s", r2.status, r2.body);
  ck_assert_str_eq(h_str(r1.json, "id"), h_str(r2.json, "id"));
  ck_assert_ptr_nonnull(h_header(&r1, "Location", loc1, sizeof(loc1)));
  ck_assert_ptr_nonnull(h_header(&r2, "Location", loc2, sizeof(loc2)));
  snprintf(want, sizeof(want), "/v1/teams/team-a/jobs/%s",
           h_str(r1.json, "id"));
  ck_assert_str_eq(loc1, want);
  ck_assert_str_eq(loc2, want);
  h_resp_free(&r2);

  /* the same body with its keys in another order is the same body */
  post_keyed("team-a", member_a, "key-replay",
             "{\"task\": {\"memory_mib\": 128, \"cpu_milli\": 100, \"image\": "
             "\"" IMAGE "\"}, \"labels\": {\"idem\": \"idem-replay\"}, "
             "\"queue\": \"lp\", \"name\": \"idem-replay\"}",
             &r2);
  ck_assert_msg(r2.status == 201, "%ld %s", r2.status, r2.body);
  ck_assert_str_eq(h_str(r1.json, "id"), h_str(r2.json, "id"));
  h_resp_free(&r2);

  /* the same key with another body */
  post_keyed("team-a", member_a, "key-replay", IDEM_BODY("idem-other"), &r2);
  ck_assert_msg(h_is_problem(&r2, 422, "Idempotency-Key"), "%ld %s", r2.status,
                r2.body);
  h_resp_free(&r2);
  ck_assert_uint_eq(count_labelled("team-a", member_a, "idem", "idem-replay"),
                    1);
  ck_assert_uint_eq(count_labelled("team-a", member_a, "idem", "idem-other"),
                    0);
  h_resp_free(&r1);
}
END_TEST

#define N_RACERS 8
#define N_ROUNDS 3

struct racer {
  pthread_barrier_t *start;
  const char *key_header, *body;
  struct h_resp r;
  int rc;
};

static void *race(void *arg)
{
  struct racer *x = arg;
  const char *headers[] = {x->key_header, NULL};

  pthread_barrier_wait(x->start);
  x->rc = h_request(&srv, "POST", "/v1/teams/team-a/jobs", member_a, x->body,
                    headers, &x->r);
  return NULL;
}

/* N_RACERS clients POST one key and body at once, in a few rounds (the
 * in-flight window is short: not every round sees a 409). */
START_TEST(idempotent_concurrent_duplicates)
{
  int round;

  for (round = 0; round < N_ROUNDS; round++) {
    pthread_barrier_t start;
    pthread_t th[N_RACERS];
    struct racer x[N_RACERS];
    char id[32] = "", key[64], hdr[96], name[32], body[512];
    int i, created = 0, in_flight = 0;
    struct h_resp r;

    snprintf(key, sizeof(key), "key-concurrent-%d", round);
    snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s", key);
    snprintf(name, sizeof(name), "idem-concurrent-%d", round);
    snprintf(body, sizeof(body),
             "{\"name\": \"%s\", \"queue\": \"lp\", \"labels\": "
             "{\"idem\": \"%s\"}, \"task\": {" TASK_OK "}}",
             name, name);
    pthread_barrier_init(&start, NULL, N_RACERS);
    for (i = 0; i < N_RACERS; i++) {
      memset(&x[i], 0, sizeof(x[i]));
      x[i].start = &start;
      x[i].key_header = hdr;
      x[i].body = body;
      ck_assert_int_eq(pthread_create(&th[i], NULL, race, &x[i]), 0);
    }
    for (i = 0; i < N_RACERS; i++)
      pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    for (i = 0; i < N_RACERS; i++) {
      ck_assert_int_eq(x[i].rc, 0);
      if (x[i].r.status == 201) {
        const char *got = h_str(x[i].r.json, "id");
        char loc[256];
        ck_assert_ptr_nonnull(got);
        if (!id[0])
          snprintf(id, sizeof(id), "%s", got);
        ck_assert_str_eq(got, id);
        ck_assert_ptr_nonnull(h_header(&x[i].r, "Location", loc, sizeof(loc)));
        created++;
      } else {
        ck_assert_msg(h_is_problem(&x[i].r, 409, NULL), "racer %d: %ld %s", i,
                      x[i].r.status, x[i].r.body);
        in_flight++;
      }
      h_resp_free(&x[i].r);
    }
    ck_assert_int_eq(created + in_flight, N_RACERS);
    ck_assert_int_ge(created, 1);
    ck_assert_uint_eq(count_labelled("team-a", member_a, "idem", name), 1);

    /* a client told 409 retries and gets the first response */
    post_keyed("team-a", member_a, key, body, &r);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    ck_assert_str_eq(h_str(r.json, "id"), id);
    h_resp_free(&r);
    ck_assert_uint_eq(count_labelled("team-a", member_a, "idem", name), 1);
  }
}
END_TEST

START_TEST(idempotency_keys_are_per_team)
{
  struct h_resp ra, rb;

  post_keyed("team-a", member_a, "key-shared", IDEM_BODY("idem-shared"), &ra);
  ck_assert_msg(ra.status == 201, "%ld %s", ra.status, ra.body);
  post_keyed("team-b", member_b, "key-shared", IDEM_BODY("idem-shared"), &rb);
  ck_assert_msg(rb.status == 201, "%ld %s", rb.status, rb.body);
  ck_assert_str_ne(h_str(ra.json, "id"), h_str(rb.json, "id"));
  ck_assert_str_eq(h_str(rb.json, "team"), "team-b");
  ck_assert_uint_eq(count_labelled("team-a", member_a, "idem", "idem-shared"),
                    1);
  ck_assert_uint_eq(count_labelled("team-b", member_b, "idem", "idem-shared"),
                    1);
  h_resp_free(&ra);
  h_resp_free(&rb);

  /* and team-b's key does not replay team-a's body into team-b */
  post_keyed("team-b", member_b, "key-shared", IDEM_BODY("idem-shared"), &rb);
  ck_assert_int_eq(rb.status, 201);
  ck_assert_str_eq(h_str(rb.json, "team"), "team-b");
  h_resp_free(&rb);
}
END_TEST

START_TEST(idempotency_key_malformed)
{
  char key[301];
  struct h_resp r;

  memset(key, 'k', 300);
  key[300] = '\0';
  post_keyed("team-a", member_a, key, IDEM_BODY("idem-malformed"), &r);
  ck_assert_msg(h_is_problem(&r, 400, "Idempotency-Key"), "%ld %s", r.status,
                r.body);
  h_resp_free(&r);
  post_keyed("team-a", member_a, "two words", IDEM_BODY("idem-malformed"), &r);
  ck_assert_msg(h_is_problem(&r, 400, "Idempotency-Key"), "%ld %s", r.status,
                r.body);
  h_resp_free(&r);
  /* 255 characters is still fine */
  key[255] = '\0';
  post_keyed("team-a", member_a, key, IDEM_BODY("idem-malformed"), &r);
  ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
  h_resp_free(&r);
  ck_assert_uint_eq(
      count_labelled("team-a", member_a, "idem", "idem-malformed"), 1);
}
END_TEST

/* ---- team isolation -------------------------------------------------------
 */

START_TEST(other_team_sees_nothing)
{
  char id[32], path[11][200], *body;
  static const char *const methods[11] = {"GET",  "POST", "GET", "POST",
                                          "GET",  "GET",  "GET", "GET",
                                          "POST", "GET",  "GET"};
  struct h_resp r;
  json_t *j, *items;
  int i;

  submit_pending("isolated", id);
  body = strdup(JOB_IN("lp", "intruder", "", ""));
  snprintf(path[0], 200, "/v1/teams/team-a/jobs");
  snprintf(path[1], 200, "/v1/teams/team-a/jobs");
  snprintf(path[2], 200, "/v1/teams/team-a/jobs/%.31s", id);
  snprintf(path[3], 200, "/v1/teams/team-a/jobs/%.31s/cancel", id);
  snprintf(path[4], 200, "/v1/teams/team-a/jobs/%.31s/events", id);
  snprintf(path[5], 200, "/v1/teams/team-a/queues/lp/pending");
  snprintf(path[6], 200, "/v1/teams/team-a/queues/lp");
  /* team-b's own routes with team-a's id: scoped in SQL */
  snprintf(path[7], 200, "/v1/teams/team-b/jobs/%.31s", id);
  snprintf(path[8], 200, "/v1/teams/team-b/jobs/%.31s/cancel", id);
  snprintf(path[9], 200, "/v1/teams/team-b/jobs/%.31s/events", id);
  snprintf(path[10], 200, "/v1/teams/team-a/queues/compact/pending");

  for (i = 0; i < 11; i++) {
    h_request(&srv, methods[i], path[i], member_b,
              !strcmp(methods[i], "POST") && i == 1 ? body : NULL, NULL, &r);
    ck_assert_msg(h_is_problem(&r, 404, NULL), "team-b %s %s: %ld %s",
                  methods[i], path[i], r.status, r.body);
    ck_assert_msg(!strstr(r.body, "isolated"), "%s leaks: %s", path[i], r.body);
    h_resp_free(&r);
  }
  /* an administrator through team-b's path: still no such job */
  for (i = 7; i < 10; i++) {
    h_request(&srv, methods[i], path[i], admin, NULL, NULL, &r);
    ck_assert_msg(h_is_problem(&r, 404, NULL), "admin %s %s: %ld %s",
                  methods[i], path[i], r.status, r.body);
    h_resp_free(&r);
  }
  /* finance may not use the jobs API at all */
  for (i = 0; i < 11; i++) {
    h_request(&srv, methods[i], path[i], finance, i == 1 ? body : NULL, NULL,
              &r);
    ck_assert_msg(h_is_problem(&r, 403, NULL), "finance %s %s: %ld %s",
                  methods[i], path[i], r.status, r.body);
    h_resp_free(&r);
  }

  /* nothing changed: still pending, no cancel event, no intruder job */
  j = get_job(id);
  ck_assert_str_eq(h_str(j, "state"), "PENDING");
  json_decref(j);
  snprintf(path[0], 200, "/v1/teams/team-a/jobs/%.31s/events", id);
  items = list(path[0], member_a, NULL, 0);
  ck_assert_uint_eq(json_array_size(items), 1);
  json_decref(items);
  items = list("/v1/teams/team-a/jobs?limit=500", member_a, NULL, 0);
  {
    size_t k;
    json_array_foreach (items, k, j)
      ck_assert_str_ne(h_str(j, "name"), "intruder");
  }
  json_decref(items);
  items = list("/v1/teams/team-b/jobs?limit=500", member_b, NULL, 0);
  {
    size_t k;
    json_array_foreach (items, k, j) {
      ck_assert_str_ne(h_str(j, "name"), "intruder");
      ck_assert_str_ne(h_str(j, "id"), id);
    }
  }
  json_decref(items);
  free(body);
}
END_TEST

/* ---- invalid submissions ---------------------------------------------- */

enum gen { G_NONE, G_COMMANDS65, G_ENV101, G_LABELS33, G_HUGE };

struct bad {
  const char *what;
  const char *body; /* NULL: generated */
  enum gen gen;
  const char *content_type; /* NULL: application/json */
  long status;
  const char *field; /* NULL: any (413, 415) */
};

#define TASK_NO_IMAGE "\"cpu_milli\": 100, \"memory_mib\": 128"

static const struct bad bad[] = {
    {"unknown top-level field", JOB("\"colour\": \"red\", ", ""), G_NONE, NULL,
     400, "colour"},
    {"unknown task field", JOB("", ", \"gpus\": 1"), G_NONE, NULL, 400,
     "task.gpus"},
    {"missing task", "{\"name\": \"bad\", \"queue\": \"lp\"}", G_NONE, NULL,
     400, "task"},
    {"missing task.image",
     "{\"name\": \"bad\", \"queue\": \"lp\", \"task\": {" TASK_NO_IMAGE "}}",
     G_NONE, NULL, 400, "task.image"},
    {"missing task.memory_mib",
     "{\"name\": \"bad\", \"queue\": \"lp\", \"task\": {\"image\": \"i\", "
     "\"cpu_milli\": 1}}",
     G_NONE, NULL, 400, "task.memory_mib"},
    {"cpu_milli 0",
     "{\"name\": \"bad\", \"queue\": \"lp\", \"task\": {\"image\": \"i\", "
     "\"cpu_milli\": 0, \"memory_mib\": 128}}",
     G_NONE, NULL, 400, "task.cpu_milli"},
    {"task gpu 65", JOB("", ", \"gpu\": 65"), G_NONE, NULL, 400, "task.gpu"},
    {"task gpu negative", JOB("", ", \"gpu\": -1"), G_NONE, NULL, 400,
     "task.gpu"},
    {"task_count 0", JOB("\"task_count\": 0, ", ""), G_NONE, NULL, 400,
     "task_count"},
    {"task_count 5001", JOB("\"task_count\": 5001, ", ""), G_NONE, NULL, 400,
     "task_count"},
    {"task_count a string", JOB("\"task_count\": \"2\", ", ""), G_NONE, NULL,
     400, "task_count"},
    {"task_count 2.5", JOB("\"task_count\": 2.5, ", ""), G_NONE, NULL, 400,
     "task_count"},
    {"parallelism > task_count",
     JOB("\"task_count\": 2, \"parallelism\": 3, ", ""), G_NONE, NULL, 400,
     "parallelism"},
    {"parallelism 0", JOB("\"parallelism\": 0, ", ""), G_NONE, NULL, 400,
     "parallelism"},
    {"65 commands", NULL, G_COMMANDS65, NULL, 400, "task.commands"},
    {"command not a string", JOB("", ", \"commands\": [\"a\", 1]"), G_NONE,
     NULL, 400, "task.commands[1]"},
    {"env with 101 keys", NULL, G_ENV101, NULL, 400, "task.env"},
    {"env key 1BAD", JOB("", ", \"env\": {\"1BAD\": \"x\"}"), G_NONE, NULL, 400,
     "task.env.1BAD"},
    {"env key GPUGATE_X", JOB("", ", \"env\": {\"GPUGATE_X\": \"x\"}"), G_NONE,
     NULL, 400, "task.env.GPUGATE_X"},
    {"env value a number", JOB("", ", \"env\": {\"N\": 1}"), G_NONE, NULL, 400,
     "task.env.N"},
    {"33 labels", NULL, G_LABELS33, NULL, 400, "labels"},
    {"label key gpugate-team",
     JOB("\"labels\": {\"gpugate-team\": \"x\"}, ", ""), G_NONE, NULL, 400,
     "labels.gpugate-team"},
    {"label key Upper", JOB("\"labels\": {\"Upper\": \"x\"}, ", ""), G_NONE,
     NULL, 400, "labels.Upper"},
    {"label value Upper", JOB("\"labels\": {\"k\": \"Upper\"}, ", ""), G_NONE,
     NULL, 400, "labels.k"},
    {"checkpoint_uri http", JOB("\"checkpoint_uri\": \"http://x\", ", ""),
     G_NONE, NULL, 400, "checkpoint_uri"},
    {"name with uppercase", JOB_IN("lp", "Bad", "", ""), G_NONE, NULL, 400,
     "name"},
    {"name missing", "{\"queue\": \"lp\", \"task\": {" TASK_OK "}}", G_NONE,
     NULL, 400, "name"},
    {"queue missing", "{\"name\": \"bad\", \"task\": {" TASK_OK "}}", G_NONE,
     NULL, 400, "queue"},
    {"queue not a name", JOB_IN("L P", "bad", "", ""), G_NONE, NULL, 400,
     "queue"},
    {"queue nope", JOB_IN("nope", "bad", "", ""), G_NONE, NULL, 422, "queue"},
    {"queue of no team", JOB_IN("lp2", "bad", "", ""), G_NONE, NULL, 422,
     "queue"},
    {"priority_class nope", JOB("\"priority_class\": \"nope\", ", ""), G_NONE,
     NULL, 422, "priority_class"},
    {"task gpu 40: could never fit", JOB("", ", \"gpu\": 40"), G_NONE, NULL,
     422, "task"},
    {"request larger than every flavor",
     JOB("\"task_count\": 50, ", ", \"gpu\": 2"), G_NONE, NULL, 422, "task"},
    {"max_run_duration_s over the FLEX_START limit",
     JOB_IN("dws", "bad", "\"max_run_duration_s\": 700000, ", ", \"gpu\": 2"),
     G_NONE, NULL, 422, "max_run_duration_s"},
    {"max_run_duration_s 0", JOB("\"max_run_duration_s\": 0, ", ""), G_NONE,
     NULL, 400, "max_run_duration_s"},
    {"max_retry_count 11", JOB("\"max_retry_count\": 11, ", ""), G_NONE, NULL,
     400, "max_retry_count"},
    {"locations Mars", JOB("\"locations\": [\"Mars\"], ", ""), G_NONE, NULL,
     400, "locations[0]"},
    {"no flavor of the queue in the allowed regions",
     JOB("\"locations\": [\"europe-west4\"], ", ""), G_NONE, NULL, 422,
     "locations"},
    {"locations not a list", JOB("\"locations\": \"us-central1\", ", ""),
     G_NONE, NULL, 400, "locations"},
    {"body not JSON", "{\"name\": ", G_NONE, NULL, 400, "body"},
    {"body an array", "[1, 2]", G_NONE, NULL, 400, "body"},
    {"duplicate key",
     "{\"name\": \"bad\", \"name\": \"bad2\", \"queue\": \"lp\", \"task\": "
     "{" TASK_OK "}}",
     G_NONE, NULL, 400, "body"},
    {"image an SQL injection",
     "{\"name\": \"bad\", \"queue\": \"lp\", \"task\": {\"image\": "
     "\"'; DROP TABLE jobs;--\", \"cpu_milli\": 100, \"memory_mib\": 128}}",
     G_NONE, NULL, 422, "task.image"},
    {"image a path traversal",
     "{\"name\": \"bad\", \"queue\": \"lp\", \"task\": {\"image\": "
     "\"../../etc/passwd\", \"cpu_milli\": 100, \"memory_mib\": 128}}",
     G_NONE, NULL, 422, "task.image"},
    {"image markup",
     "{\"name\": \"bad\", \"queue\": \"lp\", \"task\": {\"image\": "
     "\"<script>\", \"cpu_milli\": 100, \"memory_mib\": 128}}",
     G_NONE, NULL, 422, "task.image"},
    {"body over 1 MiB", NULL, G_HUGE, NULL, 413, NULL},
    {"wrong content type", JOB("", ""), G_NONE, "Content-Type: text/plain", 415,
     NULL},
};

#define N_BAD ((int)(sizeof(bad) / sizeof(bad[0])))

/* Grow *b by the formatted text (b has room: callers size it). */
static char *gen_body(enum gen g)
{
  size_t cap = g == G_HUGE ? 1200000 : 16384, len = 0;
  char *b = malloc(cap);
  int i;

  ck_assert_ptr_nonnull(b);
#define ADD(...) len += (size_t)snprintf(b + len, cap - len, __VA_ARGS__)
  switch (g) {
  case G_COMMANDS65:
    ADD("{\"name\": \"bad\", \"queue\": \"lp\", \"task\": {" TASK_OK
        ", \"commands\": [");
    for (i = 0; i < 65; i++)
      ADD("%s\"c%d\"", i ? ", " : "", i);
    ADD("]}}");
    break;
  case G_ENV101:
    ADD("{\"name\": \"bad\", \"queue\": \"lp\", \"task\": {" TASK_OK
        ", \"env\": {");
    for (i = 0; i < 101; i++)
      ADD("%s\"E%d\": \"v\"", i ? ", " : "", i);
    ADD("}}}");
    break;
  case G_LABELS33:
    ADD("{\"name\": \"bad\", \"queue\": \"lp\", \"labels\": {");
    for (i = 0; i < 33; i++)
      ADD("%s\"l%d\": \"v\"", i ? ", " : "", i);
    ADD("}, \"task\": {" TASK_OK "}}");
    break;
  case G_HUGE:
    ADD("{\"name\": \"bad\", \"queue\": \"lp\", \"task\": {" TASK_OK
        ", \"commands\": [\"");
    memset(b + len, 'x', 1100000);
    len += 1100000;
    b[len] = '\0';
    ADD("\"]}}");
    break;
  default:
    break;
  }
#undef ADD
  ck_assert_uint_lt(len, cap - 1);
  return b;
}

START_TEST(invalid_submission)
{
  const struct bad *t = &bad[_i];
  const char *headers[] = {t->content_type, NULL};
  char *body = t->body ? strdup(t->body) : gen_body(t->gen);
  struct h_resp r;

  ck_assert_int_eq(h_request(&srv, "POST", "/v1/teams/team-a/jobs", member_a,
                             body, headers, &r),
                   0);
  ck_assert_msg(r.status < 500, "%s: %ld %s", t->what, r.status, r.body);
  ck_assert_msg(h_is_problem(&r, t->status, t->field),
                "%s: want %ld naming %s, got %ld %s", t->what, t->status,
                t->field ? t->field : "-", r.status, r.body);
  h_resp_free(&r);
  free(body);
}
END_TEST

START_TEST(invalid_submissions_created_nothing)
{
  json_t *items = list("/v1/teams/team-a/jobs?limit=500", member_a, NULL, 0);
  json_t *j;
  size_t k;

  json_array_foreach (items, k, j)
    ck_assert_msg(strcmp(h_str(j, "name"), "bad") &&
                      strcmp(h_str(j, "name"), "bad2"),
                  "invalid submission created %s", h_str(j, "id"));
  json_decref(items);
}
END_TEST

START_TEST(all_mistakes_at_once)
{
  struct h_resp r;

  h_request(&srv, "POST", "/v1/teams/team-a/jobs", member_a,
            "{\"name\": \"Bad\", \"queue\": \"lp\", \"task_count\": 0, "
            "\"extra\": 1, \"task\": {\"cpu_milli\": 0, \"memory_mib\": 1}}",
            NULL, &r);
  ck_assert(h_is_problem(&r, 400, "name"));
  ck_assert(h_is_problem(&r, 400, "task_count"));
  ck_assert(h_is_problem(&r, 400, "extra"));
  ck_assert(h_is_problem(&r, 400, "task.image"));
  ck_assert(h_is_problem(&r, 400, "task.cpu_milli"));
  h_resp_free(&r);
}
END_TEST

/* ---- a job's shape, events, admission ------------------------------------ */

#define FULL_JOB                                                               \
  "{\"name\": \"finetune-gemma-2b\", \"queue\": \"lp\", \"priority_class\": "  \
  "\"default\", \"task_count\": 3, \"parallelism\": 2, \"task\": {\"image\": " \
  "\"" IMAGE "\", \"commands\": [\"python\", \"train.py\", "                   \
  "\"--epochs=8\"], \"env\": {\"EPOCHS\": \"8\"}, \"cpu_milli\": 500, "        \
  "\"memory_mib\": 1024, \"gpu\": 1}, \"max_run_duration_s\": 3600, "          \
  "\"max_retry_count\": 2, \"locations\": [\"us-central1\", "                  \
  "\"europe-west4\"], \"labels\": {\"experiment\": \"sql-tune\"}, "            \
  "\"checkpoint_uri\": \"gs://bucket/ckpt/finetune-gemma-2b/\"}"

static void check_shape(json_t *j, const char *id)
{
  static const char *const keys[] = {"id",
                                     "team",
                                     "name",
                                     "queue",
                                     "cluster_queue",
                                     "priority_class",
                                     "priority",
                                     "state",
                                     "reason",
                                     "attempt",
                                     "created_at",
                                     "updated_at",
                                     "request",
                                     "admission",
                                     "batch_job",
                                     "position_in_queue",
                                     "estimated_cost_usd",
                                     "accrued_cost_usd",
                                     "spec",
                                     NULL};
  json_t *req = json_object_get(j, "request"), *spec, *sub;
  regex_t ts;
  int i;

  for (i = 0; keys[i]; i++)
    ck_assert_msg(json_object_get(j, keys[i]) != NULL, "no %s", keys[i]);
  ck_assert_str_eq(h_str(j, "id"), id);
  ck_assert_str_eq(h_str(j, "team"), "team-a");
  ck_assert_str_eq(h_str(j, "name"), "finetune-gemma-2b");
  ck_assert_str_eq(h_str(j, "queue"), "lp");
  ck_assert_str_eq(h_str(j, "cluster_queue"), "cq-team-a-lp");
  ck_assert_str_eq(h_str(j, "priority_class"), "default");
  ck_assert_int_eq(json_integer_value(json_object_get(j, "priority")), 10);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "attempt")), 1);
  ck_assert_int_eq(regcomp(&ts,
                           "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:"
                           "[0-9]{2}(\\.[0-9]+)?Z$",
                           REG_EXTENDED | REG_NOSUB),
                   0);
  ck_assert(regexec(&ts, h_str(j, "created_at"), 0, NULL, 0) == 0);
  ck_assert(regexec(&ts, h_str(j, "updated_at"), 0, NULL, 0) == 0);
  regfree(&ts);
  /* parallelism × the task */
  ck_assert_int_eq(json_integer_value(json_object_get(req, "gpu")), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(req, "cpu_milli")), 1000);
  ck_assert_int_eq(json_integer_value(json_object_get(req, "memory_mib")),
                   2048);
  ck_assert(json_is_number(json_object_get(j, "accrued_cost_usd")));
  /* spec echoes the submission */
  spec = json_object_get(j, "spec");
  sub = json_loads(FULL_JOB, 0, NULL);
  ck_assert_ptr_nonnull(sub);
  {
    const char *k;
    json_t *v;
    json_object_foreach (sub, k, v)
      ck_assert_msg(json_equal(v, json_object_get(spec, k)), "spec.%s differs",
                    k);
  }
  json_decref(sub);
}

START_TEST(job_shape_events_admission)
{
  regex_t idre;
  struct h_resp r;
  char id[32], path[160], loc[256];
  json_t *j, *items, *ev, *adm;

  h_request(&srv, "POST", "/v1/teams/team-a/jobs", member_a, FULL_JOB, NULL,
            &r);
  ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
  snprintf(id, sizeof(id), "%s", h_str(r.json, "id"));
  ck_assert_int_eq(regcomp(&idre, "^j-[0-9a-z]{14}$", REG_EXTENDED | REG_NOSUB),
                   0);
  ck_assert_msg(regexec(&idre, id, 0, NULL, 0) == 0, "id %s", id);
  regfree(&idre);
  ck_assert_ptr_nonnull(h_header(&r, "Location", loc, sizeof(loc)));
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%.31s", id);
  ck_assert_str_eq(loc, path);
  check_shape(r.json, id);
  if (!strcmp(h_str(r.json, "state"), "PENDING"))
    ck_assert(json_is_null(json_object_get(r.json, "admission")));
  h_resp_free(&r);

  j = get_job(id);
  check_shape(j, id);
  json_decref(j);

  /* the first event: submitted, pending */
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%.31s/events", id);
  items = list(path, member_a, NULL, 0);
  ck_assert_uint_ge(json_array_size(items), 1);
  ev = json_array_get(items, 0);
  ck_assert_str_eq(h_str(ev, "to"), "PENDING");
  ck_assert_str_eq(h_str(ev, "reason"), "Submitted");
  ck_assert(json_is_null(json_object_get(ev, "from")));
  ck_assert_int_eq(json_integer_value(json_object_get(ev, "attempt")), 1);
  ck_assert(json_is_string(json_object_get(ev, "at")));
  json_decref(items);

  /* admitted: a flavor and an estimate */
  j = wait_state(id, "ADMITTED", 10000);
  ck_assert_msg(!strcmp(h_str(j, "state"), "ADMITTED"), "state %s reason %s",
                h_str(j, "state"), h_str(j, "reason"));
  check_shape(j, id);
  adm = json_object_get(j, "admission");
  ck_assert(json_is_object(adm));
  ck_assert(!strcmp(h_str(adm, "flavor"), "l4-reserved") ||
            !strcmp(h_str(adm, "flavor"), "l4-spot"));
  ck_assert_str_eq(h_str(adm, "location"), "us-central1");
  ck_assert(json_is_boolean(json_object_get(adm, "borrowed")));
  ck_assert(json_is_string(json_object_get(adm, "admitted_at")));
  ck_assert(json_is_null(json_object_get(j, "position_in_queue")));
  ck_assert_msg(json_number_value(json_object_get(j, "estimated_cost_usd")) > 0,
                "%s", json_dumps(j, 0));
  json_decref(j);
  items = list(path, member_a, NULL, 0);
  ck_assert_uint_ge(json_array_size(items), 2);
  ev = json_array_get(items, 1);
  ck_assert_str_eq(h_str(ev, "from"), "PENDING");
  ck_assert_str_eq(h_str(ev, "to"), "ADMITTED");
  json_decref(items);
}
END_TEST

/* The job id as team-a's list shows it, written by Jansson as the API
 * writes a job (compact, 15-digit reals); NULL when not listed. */
static char *listed_text(const char *id)
{
  json_t *items = list("/v1/teams/team-a/jobs?limit=500", member_a, NULL, 0);
  char *text = NULL;
  size_t i;

  for (i = 0; i < json_array_size(items) && !text; i++)
    if (!strcmp(h_str(json_array_get(items, i), "id"), id))
      text = json_dumps(json_array_get(items, i),
                        JSON_COMPACT | JSON_REAL_PRECISION(15));
  json_decref(items);
  return text;
}

/*
 * A job's GET and its submission's 201 are written straight from the row
 * (db/jobs.c), the lists through Jansson: the same job must come out byte
 * for byte the same, in every shape (pending with its place and the GPUs
 * ahead, admitted with an admission and costs, cancelled), strings with
 * characters JSON escapes included.
 */
START_TEST(get_text_is_the_list_item)
{
  static const char *const odd =
      "{\"name\": \"esc\", \"queue\": \"lp\", \"task\": {" TASK_OK
      ", \"env\": {\"X\": \"q\\\"b\\\\s/\\u00e9 tab\\tnl\\nctl\\u0001\"}}}";
  char ids[4][32], *got = NULL, *listed = NULL, *again = NULL;
  struct h_resp r;
  json_t *j, *item, *reparsed;
  const char *k1, *k2;
  void *it1, *it2;
  int i, tries;

  /* the 201: compact Jansson text, members in the list's order */
  ck_assert_int_eq(
      h_request(&srv, "POST", "/v1/teams/team-a/jobs", member_a, odd, NULL, &r),
      0);
  ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
  snprintf(ids[0], sizeof(ids[0]), "%s", h_str(r.json, "id"));
  reparsed = json_loads(r.body, 0, NULL);
  got = json_dumps(reparsed, JSON_COMPACT | JSON_REAL_PRECISION(15));
  ck_assert_str_eq(r.body, got);
  free(got);
  got = NULL;
  json_decref(reparsed);
  listed = listed_text(ids[0]);
  ck_assert_ptr_nonnull(listed);
  item = json_loads(listed, 0, NULL);
  it1 = json_object_iter(r.json);
  it2 = json_object_iter(item);
  for (; it1 && it2; it1 = json_object_iter_next(r.json, it1),
                     it2 = json_object_iter_next(item, it2)) {
    k1 = json_object_iter_key(it1);
    k2 = json_object_iter_key(it2);
    ck_assert_str_eq(k1, k2);
  }
  ck_assert(!it1 && !it2);
  json_decref(item);
  free(listed);
  listed = NULL;
  h_resp_free(&r);

  submit_pending("text-pending", ids[1]);
  submit("team-a", member_a, FULL_JOB, ids[2]);
  j = wait_state(ids[2], "ADMITTED", 10000);
  ck_assert_str_eq(h_str(j, "state"), "ADMITTED");
  json_decref(j);
  submit_pending("text-cancelled", ids[3]);
  {
    char path[160];
    snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%.31s/cancel", ids[3]);
    ck_assert_int_eq(h_request(&srv, "POST", path, member_a, NULL, NULL, &r),
                     0);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    h_resp_free(&r);
  }
  /* the pending job's place comes with the next admission cycle */
  for (tries = 0; tries < 50; tries++) {
    j = get_job(ids[1]);
    i = json_is_integer(json_object_get(j, "position_in_cluster_queue"));
    json_decref(j);
    if (i)
      break;
    h_sleep_ms(100);
  }
  for (i = 0; i < 4; i++) {
    /* the same job read twice around the list: nothing moved between */
    for (tries = 0; tries < 5; tries++) {
      free(got);
      free(listed);
      free(again);
      got = get_text(ids[i]);
      listed = listed_text(ids[i]);
      again = get_text(ids[i]);
      if (!strcmp(got, again))
        break;
    }
    ck_assert_ptr_nonnull(listed);
    ck_assert_msg(!strcmp(got, listed), "job %d\nGET:  %s\nlist: %s", i, got,
                  listed);
  }
  j = json_loads(got, 0, NULL);
  ck_assert_str_eq(h_str(j, "state"), "CANCELLED");
  json_decref(j);
  j = get_job(ids[1]);
  ck_assert(json_is_object(json_object_get(j, "ahead")));
  json_decref(j);
  free(got);
  free(listed);
  free(again);
}
END_TEST

/* Run the statement on the test database (no result expected). */
static void sql(PGconn *pg, const char *stmt, const char *p1, const char *p2)
{
  const char *params[2] = {p1, p2};
  PGresult *res = PQexecParams(pg, stmt, 2, NULL, params, NULL, NULL, 0);

  ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "%s: %s", stmt,
                PQresultErrorMessage(res));
  PQclear(res);
}

/* accrued_cost_usd of job id as the GET and the list show it */
static void accrued(const char *id, double *get, double *listed)
{
  json_t *j = get_job(id), *items;
  size_t i;

  *get = json_number_value(json_object_get(j, "accrued_cost_usd"));
  json_decref(j);
  items = list("/v1/teams/team-a/jobs?label=experiment=sql-tune&limit=500",
               member_a, NULL, 0);
  *listed = -1;
  for (i = 0; i < json_array_size(items); i++)
    if (!strcmp(h_str(json_array_get(items, i), "id"), id))
      *listed = json_number_value(
          json_object_get(json_array_get(items, i), "accrued_cost_usd"));
  json_decref(items);
}

/*
 * The accrued cost is the flavor's price × GPUs × hours run, with the price
 * as the flavors table holds it now: a GET prices the job from the
 * replica's copy of the prices (db/prices.h), which follows a change of
 * the flavor (the configuration notification) as the list's join does.
 */
START_TEST(accrued_cost_follows_the_flavor_price)
{
  PGconn *pg = PQconnectdb(db_url);
  char id[32], flavor[64], old[64];
  double get = 0, listed = 0, gpus;
  json_t *j;
  long long t0;
  PGresult *res;

  ck_assert_int_eq(PQstatus(pg), CONNECTION_OK);
  submit("team-a", member_a, FULL_JOB, id);
  j = wait_state(id, "ADMITTED", 10000);
  ck_assert_str_eq(h_str(j, "state"), "ADMITTED");
  snprintf(flavor, sizeof(flavor), "%s",
           h_str(json_object_get(j, "admission"), "flavor"));
  gpus = (double)json_integer_value(
      json_object_get(json_object_get(j, "request"), "gpu"));
  json_decref(j);
  /* it ran for exactly an hour */
  sql(pg,
      "UPDATE jobs SET run_started_at = now() - interval '2 hours', "
      "finished_at = now() - interval '1 hour' WHERE id = $1 AND $2 = $2",
      id, "");
  res = PQexecParams(pg,
                     "SELECT spec->>'price_per_gpu_hour_usd' FROM flavors "
                     "WHERE name = $1",
                     1, NULL, (const char *const[]){flavor}, NULL, NULL, 0);
  ck_assert_int_eq(PQntuples(res), 1);
  snprintf(old, sizeof(old), "%s", PQgetvalue(res, 0, 0));
  PQclear(res);
  accrued(id, &get, &listed);
  ck_assert_msg(get > 0 && get == listed, "get %g list %g", get, listed);
  ck_assert_double_eq_tol(get, strtod(old, NULL) * gpus, 1e-4);

  sql(pg,
      "UPDATE flavors SET spec = (spec::jsonb || jsonb_build_object("
      "'price_per_gpu_hour_usd', $2::numeric))::json WHERE name = $1",
      flavor, "7.25");
  t0 = h_now_ms();
  do {
    accrued(id, &get, &listed);
    if (get == 7.25 * gpus)
      break;
    h_sleep_ms(50);
  } while (h_now_ms() - t0 < 30000);
  ck_assert_msg(get == 7.25 * gpus && listed == get, "get %g list %g", get,
                listed);

  sql(pg,
      "UPDATE flavors SET spec = (spec::jsonb || jsonb_build_object("
      "'price_per_gpu_hour_usd', $2::numeric))::json WHERE name = $1",
      flavor, old);
  PQfinish(pg);
}
END_TEST

/* A job restricted to a region is placed there (dws offers three). */
START_TEST(admitted_in_an_allowed_location)
{
  char id[32];
  json_t *j;

  submit("team-a", member_a,
         JOB_IN("dws", "eu-only", "\"locations\": [\"europe-west4\"], ",
                ", \"gpu\": 2"),
         id);
  j = wait_state(id, "ADMITTED", 10000);
  ck_assert_str_eq(h_str(j, "state"), "ADMITTED");
  ck_assert_str_eq(h_str(json_object_get(j, "admission"), "flavor"), "dws");
  ck_assert_str_eq(h_str(json_object_get(j, "admission"), "location"),
                   "europe-west4");
  ck_assert_str_eq(h_str(j, "cluster_queue"), "cq-dws");
  /* no run duration given: the FLEX_START flavor's limit applies */
  ck_assert_double_gt(
      json_number_value(json_object_get(j, "estimated_cost_usd")), 0);
  json_decref(j);
}
END_TEST

/* cq-dws with its stop_policy set to policy (GET, then PUT it back). */
static void dws_stop_policy(const char *policy)
{
  json_t *cq =
      h_call(&srv, "GET", "/v1/cluster-queues/cq-dws", admin, NULL, 200);
  char *body;

  ck_assert_ptr_nonnull(cq);
  json_object_del(cq, "name");
  json_object_del(cq, "created_at");
  json_object_del(cq, "updated_at");
  json_object_del(cq, "status");
  json_object_set_new(cq, "stop_policy", json_string(policy));
  body = json_dumps(cq, 0);
  json_decref(
      h_call(&srv, "PUT", "/v1/cluster-queues/cq-dws", admin, body, 200));
  free(body);
  json_decref(cq);
}

/* Jobs with and without locations, pending side by side in one cycle:
 * each keeps its own (the admission loop loads them together). */
START_TEST(pending_jobs_keep_their_own_locations)
{
  char any[32], eu[32];
  json_t *j;

  dws_stop_policy("Hold");
  submit("team-a", member_a, JOB_IN("dws", "anywhere", "", ", \"gpu\": 2"),
         any);
  submit("team-a", member_a,
         JOB_IN("dws", "eu-too", "\"locations\": [\"europe-west4\"], ",
                ", \"gpu\": 2"),
         eu);
  j = wait_state(eu, "PENDING", 30000);
  ck_assert_str_eq(h_str(j, "state"), "PENDING");
  json_decref(j);
  dws_stop_policy("None");
  json_decref(wait_state(any, "ADMITTED", 10000));
  j = wait_state(eu, "ADMITTED", 10000);
  ck_assert_str_eq(h_str(j, "state"), "ADMITTED");
  ck_assert_str_eq(h_str(json_object_get(j, "admission"), "location"),
                   "europe-west4");
  json_decref(j);
}
END_TEST

START_TEST(parallelism_defaults_to_task_count)
{
  char id[32];
  json_t *j;

  submit("team-a", member_a,
         JOB_IN("lp", "defaults", "\"task_count\": 3, ", ", \"gpu\": 0"), id);
  j = get_job(id);
  ck_assert_int_eq(json_integer_value(json_object_get(
                       json_object_get(j, "request"), "cpu_milli")),
                   300);
  ck_assert_int_eq(json_integer_value(json_object_get(
                       json_object_get(j, "spec"), "parallelism")),
                   3);
  /* priority class: the default one */
  ck_assert_str_eq(h_str(j, "priority_class"), "default");
  json_decref(j);
}
END_TEST

/* ---- lists ----------------------------------------------------------------
 */

START_TEST(list_filters)
{
  char id_lp[32], id_pend[32], next[256];
  json_t *items, *j;
  size_t k;
  int found;
  struct h_resp r;
  static const char *const bad_q[][2] = {
      {"/v1/teams/team-a/jobs?state=BOGUS", "state"},
      {"/v1/teams/team-a/jobs?state=PENDING,nope", "state"},
      {"/v1/teams/team-a/jobs?label=novalue", "label"},
      {"/v1/teams/team-a/jobs?label==v", "label"},
      {"/v1/teams/team-a/jobs?label=k=Upper", "label"},
      {"/v1/teams/team-a/jobs?queue=Not_A_Queue", "queue"},
      {"/v1/teams/team-a/jobs?limit=0", "limit"},
      {"/v1/teams/team-a/jobs?limit=501", "limit"},
      {"/v1/teams/team-a/jobs?cursor=%21%21", "cursor"},
  };

  submit_small("lp", "filter-lp", "filter", "yes", id_lp);
  submit_pending("filter-pending", id_pend);

  /* state= */
  items = list("/v1/teams/team-a/jobs?state=PENDING&limit=500", member_a, next,
               sizeof(next));
  found = 0;
  json_array_foreach (items, k, j) {
    ck_assert_str_eq(h_str(j, "state"), "PENDING");
    found += !strcmp(h_str(j, "id"), id_pend);
  }
  ck_assert_int_eq(found, 1);
  json_decref(items);
  items = list("/v1/teams/team-a/jobs?state=ADMITTED,RUNNING&limit=500",
               member_a, NULL, 0);
  found = 0;
  json_array_foreach (items, k, j) {
    ck_assert(!strcmp(h_str(j, "state"), "ADMITTED") ||
              !strcmp(h_str(j, "state"), "RUNNING"));
    found += !strcmp(h_str(j, "id"), fill_id);
  }
  ck_assert_int_eq(found, 1);
  json_decref(items);

  /* queue= */
  items =
      list("/v1/teams/team-a/jobs?queue=compact&limit=500", member_a, NULL, 0);
  found = 0;
  json_array_foreach (items, k, j) {
    ck_assert_str_eq(h_str(j, "queue"), "compact");
    found +=
        !strcmp(h_str(j, "id"), id_pend) + !strcmp(h_str(j, "id"), fill_id);
  }
  ck_assert_int_eq(found, 2);
  json_decref(items);
  items = list("/v1/teams/team-a/jobs?queue=hp", member_a, NULL, 0);
  ck_assert_uint_eq(json_array_size(items), 0);
  json_decref(items);

  /* label= */
  items = list("/v1/teams/team-a/jobs?label=filter=yes", member_a, NULL, 0);
  ck_assert_uint_eq(json_array_size(items), 1);
  ck_assert_str_eq(h_str(json_array_get(items, 0), "id"), id_lp);
  json_decref(items);
  items = list("/v1/teams/team-a/jobs?label=filter=no", member_a, NULL, 0);
  ck_assert_uint_eq(json_array_size(items), 0);
  json_decref(items);

  /* combined */
  items = list("/v1/teams/team-a/jobs?label=filter=yes&queue=compact", member_a,
               NULL, 0);
  ck_assert_uint_eq(json_array_size(items), 0);
  json_decref(items);

  for (k = 0; k < sizeof(bad_q) / sizeof(bad_q[0]); k++) {
    h_request(&srv, "GET", bad_q[k][0], member_a, NULL, NULL, &r);
    ck_assert_msg(h_is_problem(&r, 400, bad_q[k][1]), "%s: %ld %s", bad_q[k][0],
                  r.status, r.body);
    h_resp_free(&r);
  }
}
END_TEST

START_TEST(cursor_pagination)
{
  char ids[7][32], next[256] = "", path[400];
  int seen[7] = {0}, pages = 0, total = 0, i;
  json_t *items, *j;
  size_t k;

  for (i = 0; i < 7; i++) {
    char name[32];
    snprintf(name, sizeof(name), "page-%d", i);
    submit_small("lp", name, "paging", "p1", ids[i]);
  }
  do {
    snprintf(path, sizeof(path),
             "/v1/teams/team-a/jobs?label=paging=p1&limit=2%s%s",
             next[0] ? "&cursor=" : "", next);
    items = list(path, member_a, next, sizeof(next));
    ck_assert_uint_le(json_array_size(items), 2);
    if (next[0])
      ck_assert_uint_eq(json_array_size(items), 2);
    json_array_foreach (items, k, j) {
      int hit = -1;
      for (i = 0; i < 7; i++)
        if (!strcmp(h_str(j, "id"), ids[i]))
          hit = i;
      ck_assert_msg(hit >= 0, "foreign job %s", h_str(j, "id"));
      ck_assert_msg(seen[hit] == 0, "job %s seen twice", ids[hit]);
      seen[hit]++;
      total++;
    }
    json_decref(items);
    ck_assert_int_lt(++pages, 10);
  } while (next[0]);
  ck_assert_int_eq(total, 7);
  ck_assert_int_eq(pages, 4);

  /* events page the same way */
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%.31s/events?limit=1",
           ids[0]);
  items = list(path, member_a, next, sizeof(next));
  ck_assert_uint_eq(json_array_size(items), 1);
  json_decref(items);
}
END_TEST

/* GET path as token must be 400 naming cursor. */
static void bad_cursor(const char *path, const char *token)
{
  struct h_resp r;

  ck_assert_int_eq(h_request(&srv, "GET", path, token, NULL, NULL, &r), 0);
  ck_assert_msg(h_is_problem(&r, 400, "cursor"), "GET %s: %ld %s", path,
                r.status, r.body ? r.body : "");
  h_resp_free(&r);
}

/*
 * Cursors reveal nothing and only page the list they came from: not the
 * global job sequence (the old cursors were its base64), not another
 * team's list, not other filters; a tampered or hand-made one is 400.
 */
START_TEST(cursors_opaque_and_bound)
{
  char ids[3][32], next[256] = "", other[256] = "", path[600], t[256];
  char seq_b64[64];
  json_t *items;
  size_t n;
  int i;

  for (i = 0; i < 3; i++) {
    char name[32];
    snprintf(name, sizeof(name), "opaque-%d", i);
    submit_small("lp", name, "paging", "p2", ids[i]);
  }
  items = list("/v1/teams/team-a/jobs?label=paging=p2&limit=1", member_a, next,
               sizeof(next));
  json_decref(items);
  ck_assert_msg(next[0], "no next_cursor");
  /* two cursors for the same position differ: nothing to compare */
  items = list("/v1/teams/team-a/jobs?label=paging=p2&limit=1", member_a, other,
               sizeof(other));
  json_decref(items);
  ck_assert_str_ne(next, other);
  /* the sequence numbers of the old cursors are nowhere in it */
  for (i = 1; i < 100000; i *= 7) {
    static const char tab[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char num[16];
    size_t k, o = 0, m;
    snprintf(num, sizeof(num), "%d", i);
    m = strlen(num);
    for (k = 0; k < m; k += 3) {
      unsigned v = (unsigned)num[k] << 16;
      if (k + 1 < m)
        v |= (unsigned)num[k + 1] << 8;
      if (k + 2 < m)
        v |= (unsigned)num[k + 2];
      seq_b64[o++] = tab[(v >> 18) & 63];
      seq_b64[o++] = tab[(v >> 12) & 63];
      if (k + 1 < m)
        seq_b64[o++] = tab[(v >> 6) & 63];
      if (k + 2 < m)
        seq_b64[o++] = tab[v & 63];
    }
    seq_b64[o] = '\0';
    snprintf(path, sizeof(path),
             "/v1/teams/team-a/jobs?label=paging=p2&limit=1&cursor=%s",
             seq_b64);
    bad_cursor(path, member_a); /* a hand-made cursor of the old form */
  }
  /* it pages its own list */
  snprintf(path, sizeof(path),
           "/v1/teams/team-a/jobs?label=paging=p2&limit=1&cursor=%s", next);
  items = list(path, member_a, NULL, 0);
  ck_assert_uint_eq(json_array_size(items), 1);
  json_decref(items);
  /* the same filters in another order are the same list */
  snprintf(path, sizeof(path),
           "/v1/teams/team-a/jobs?limit=1&cursor=%s&label=paging=p2", next);
  items = list(path, member_a, NULL, 0);
  ck_assert_uint_eq(json_array_size(items), 1);
  json_decref(items);
  /* other filters, another team (as admin, who may read both), another
   * list */
  snprintf(path, sizeof(path),
           "/v1/teams/team-a/jobs?label=paging=p1&limit=1&cursor=%s", next);
  bad_cursor(path, member_a);
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs?limit=1&cursor=%s", next);
  bad_cursor(path, member_a);
  snprintf(path, sizeof(path),
           "/v1/teams/team-b/jobs?label=paging=p2&limit=1&cursor=%s", next);
  bad_cursor(path, admin);
  snprintf(path, sizeof(path), "/v1/teams/team-a/queues?cursor=%s", next);
  bad_cursor(path, member_a);
  /* tampered: one character changed, cut short */
  n = strlen(next);
  snprintf(t, sizeof(t), "%s", next);
  t[n / 2] = t[n / 2] == 'A' ? 'B' : 'A';
  snprintf(path, sizeof(path),
           "/v1/teams/team-a/jobs?label=paging=p2&limit=1&cursor=%s", t);
  bad_cursor(path, member_a);
  snprintf(path, sizeof(path),
           "/v1/teams/team-a/jobs?label=paging=p2&limit=1&cursor=%.*s",
           (int)(n - 4), next);
  bad_cursor(path, member_a);
}
END_TEST

/* ---- cancel ----------------------------------------------------------- */

START_TEST(cancel_pending)
{
  char id[32], path[160];
  struct h_resp r;
  json_t *items, *last, *j;
  size_t n;

  submit_pending("to-cancel", id);
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%.31s/cancel", id);
  h_request(&srv, "POST", path, member_a, NULL, NULL, &r);
  ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
  ck_assert_str_eq(h_str(r.json, "state"), "CANCELLED");
  ck_assert_str_eq(h_str(r.json, "id"), id);
  h_resp_free(&r);

  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%.31s/events", id);
  items = list(path, member_a, NULL, 0);
  n = json_array_size(items);
  ck_assert_uint_ge(n, 2);
  last = json_array_get(items, n - 1);
  ck_assert_str_eq(h_str(last, "from"), "PENDING");
  ck_assert_str_eq(h_str(last, "to"), "CANCELLED");
  json_decref(items);

  /* twice: 200 again, no second event */
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%.31s/cancel", id);
  h_request(&srv, "POST", path, member_a, NULL, NULL, &r);
  ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
  ck_assert_str_eq(h_str(r.json, "state"), "CANCELLED");
  h_resp_free(&r);
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%.31s/events", id);
  items = list(path, member_a, NULL, 0);
  ck_assert_uint_eq(json_array_size(items), n);
  json_decref(items);

  /* still cancelled after a few admission cycles */
  h_sleep_ms(500);
  j = get_job(id);
  ck_assert_str_eq(h_str(j, "state"), "CANCELLED");
  ck_assert(json_is_null(json_object_get(j, "admission")));
  json_decref(j);

  /* an unknown id */
  h_request(&srv, "POST", "/v1/teams/team-a/jobs/j-00000000000000/cancel",
            member_a, NULL, NULL, &r);
  ck_assert_msg(h_is_problem(&r, 404, NULL), "%ld %s", r.status, r.body);
  h_resp_free(&r);
  h_request(&srv, "GET", "/v1/teams/team-a/jobs/NOT_AN_ID", member_a, NULL,
            NULL, &r);
  ck_assert_msg(h_is_problem(&r, 404, NULL), "%ld %s", r.status, r.body);
  h_resp_free(&r);
}
END_TEST

/* ---- queue status ----------------------------------------------------- */

/* Count team-a's jobs in queue among states. */
static json_int_t count_jobs(const char *queue, const char *states)
{
  char path[200];
  json_t *items;
  json_int_t n;

  snprintf(path, sizeof(path),
           "/v1/teams/team-a/jobs?queue=%s&state=%s&limit=500", queue, states);
  items = list(path, member_a, NULL, 0);
  n = (json_int_t)json_array_size(items);
  json_decref(items);
  return n;
}

static void check_queue_counts(const char *queue)
{
  char path[128];
  int tries;
  json_int_t last_p = -1, last_a = -1, last_p0 = -1, last_a0 = -1;

  snprintf(path, sizeof(path), "/v1/teams/team-a/queues/%s", queue);
  for (tries = 0; tries < 30; tries++) {
    struct h_resp r;
    json_t *st;
    json_int_t p0, a0, p, a;

    p0 = count_jobs(queue, "PENDING");
    a0 = count_jobs(queue, "ADMITTED,QUEUED,RUNNING,EVICTING");
    h_request(&srv, "GET", path, member_a, NULL, NULL, &r);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    st = json_object_get(r.json, "status");
    p = json_integer_value(json_object_get(st, "pending"));
    a = json_integer_value(json_object_get(st, "admitted"));
    ck_assert_msg(json_is_integer(json_object_get(st, "pending")) &&
                      json_is_integer(json_object_get(st, "admitted")),
                  "%s", r.body);
    h_resp_free(&r);
    /* stable across the three requests and published by the admission
     * leader (after its next cycle): equal */
    if (p0 == count_jobs(queue, "PENDING") &&
        a0 == count_jobs(queue, "ADMITTED,QUEUED,RUNNING,EVICTING") &&
        p == p0 && a == a0)
      return;
    last_p = p;
    last_a = a;
    last_p0 = p0;
    last_a0 = a0;
    h_sleep_ms(100);
  }
  ck_abort_msg("queue %s never settled: status %lld/%lld, jobs %lld/%lld",
               queue, (long long)last_p, (long long)last_a, (long long)last_p0,
               (long long)last_a0);
}

START_TEST(queue_status_counts)
{
  char id[32];
  struct h_resp r;
  json_t *items, *j;
  size_t k;

  submit_pending("status-1", id);
  submit_pending("status-2", id);
  submit_small("lp", "status-lp", NULL, NULL, id);
  j = wait_state(id, "ADMITTED", 10000);
  json_decref(j);
  check_queue_counts("compact");
  check_queue_counts("lp");
  ck_assert_int_ge(count_jobs("compact", "PENDING"), 2);
  ck_assert_int_eq(count_jobs("compact", "ADMITTED,QUEUED,RUNNING,EVICTING"),
                   1);

  /* the pending list of the queue, in order with positions */
  items = list("/v1/teams/team-a/queues/compact/pending", member_a, NULL, 0);
  ck_assert_uint_ge(json_array_size(items), 2);
  json_array_foreach (items, k, j) {
    ck_assert_str_eq(h_str(j, "state"), "PENDING");
    ck_assert_int_eq(
        json_integer_value(json_object_get(j, "position_in_queue")),
        (json_int_t)k + 1);
  }
  json_decref(items);

  h_request(&srv, "GET", "/v1/teams/team-a/queues/nope/pending", member_a, NULL,
            NULL, &r);
  ck_assert_msg(h_is_problem(&r, 404, NULL), "%ld %s", r.status, r.body);
  h_resp_free(&r);
}
END_TEST

Suite *jobs_suite(void)
{
  Suite *s = suite_create("jobs");
  TCase *tc = tcase_create("jobs");

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, idempotent_replay);
  tcase_add_test(tc, idempotent_concurrent_duplicates);
  tcase_add_test(tc, idempotency_keys_are_per_team);
  tcase_add_test(tc, idempotency_key_malformed);
  tcase_add_test(tc, other_team_sees_nothing);
  tcase_add_loop_test(tc, invalid_submission, 0, N_BAD);
  tcase_add_test(tc, invalid_submissions_created_nothing);
  tcase_add_test(tc, all_mistakes_at_once);
  tcase_add_test(tc, job_shape_events_admission);
  tcase_add_test(tc, get_text_is_the_list_item);
  tcase_add_test(tc, accrued_cost_follows_the_flavor_price);
  tcase_add_test(tc, admitted_in_an_allowed_location);
  tcase_add_test(tc, pending_jobs_keep_their_own_locations);
  tcase_add_test(tc, parallelism_defaults_to_task_count);
  tcase_add_test(tc, list_filters);
  tcase_add_test(tc, cursor_pagination);
  tcase_add_test(tc, cursors_opaque_and_bound);
  tcase_add_test(tc, cancel_pending);
  tcase_add_test(tc, queue_status_counts);
  suite_add_tcase(s, tc);
  return s;
}
