/*
 * it_submit.c — submissions against a cached configuration and
 * Idempotency-Key expiry, with two replicas on one database:
 *
 * - an administrator's change made through replica A (shrinking a cluster
 *   queue's quota, deleting a queue, changing a priority class and the
 *   default class) is seen by the very next submission through replica B,
 *   whose cache held the old configuration — no waiting for the
 *   notification;
 * - a key aged past 24 h is reclaimed by the first retry (201 and a new
 *   job, not 409), and an in-flight claim whose request died is taken
 *   over after 15 s, but not before.
 */
#include <check.h>
#include <libpq-fe.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/harness.h"

Suite *submit_suite(void);

#define CONFIG "tests/fixtures/submit-config.json"
#define IMAGE "us-docker.pkg.dev/p/r/trainer:1.2"

static struct h_server srv[2]; /* A: administrator changes; B: submits */
static char db_url[512];
static char *member, *admin;

/* cq-sub as in CONFIG, with gpu quota nominal */
#define CQ_BODY(nominal)                                                       \
  "{\"flavors\": [{\"name\": \"l4\", \"resources\": {\"gpu\": "                \
  "{\"nominal\": " nominal                                                     \
  "}, \"cpu_milli\": {\"nominal\": 64000}, \"memory_mib\": "                   \
  "{\"nominal\": 262144}}}]}"

static void setup(void)
{
  static const char *const env[] = {"GPUGATE_RATE_LIMIT_RPS=100000",
                                    "GPUGATE_ADMISSION_INTERVAL_MS=200", NULL};

  h_db_apply("it_submit", CONFIG, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv[0], db_url, env), 0);
  ck_assert_int_eq(h_server_start(&srv[1], db_url, env), 0);
  member = h_token("team-s", "member", 3600);
  admin = h_token("platform", "admin", 3600);
  ck_assert(member && admin);
}

static void teardown(void)
{
  h_server_stop(&srv[0]);
  h_server_stop(&srv[1]);
  free(member);
  free(admin);
}

/* The body post_job() sends. */
static void job_body(char *body, size_t len, const char *queue, int gpu,
                     const char *pc, const char *name)
{
  char pcs[64] = "";

  if (pc)
    snprintf(pcs, sizeof(pcs), "\"priority_class\": \"%s\", ", pc);
  snprintf(body, len,
           "{\"name\": \"%s\", \"queue\": \"%s\", %s\"labels\": "
           "{\"run\": \"%s\"}, \"task\": {\"image\": \"" IMAGE "\", "
           "\"cpu_milli\": 100, \"memory_mib\": 128, \"gpu\": %d}}",
           name, queue, pcs, name, gpu);
}

/* The hash gpugate keeps for a body: SHA-256 of its sorted compact JSON,
 * in hex. */
static void body_hash(const char *body, char out[65])
{
  json_t *j = json_loads(body, 0, NULL);
  char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned n = 0, i;

  ck_assert(text && EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL));
  for (i = 0; i < n && i < 32; i++)
    snprintf(out + 2 * i, 3, "%02x", md[i]);
  free(text);
  json_decref(j);
}

/* POST a job of gpu GPUs (one task) to queue through s, with priority
 * class pc (NULL: none given) and Idempotency-Key key (NULL: none). */
static void post_job(const struct h_server *s, const char *queue, int gpu,
                     const char *pc, const char *key, const char *name,
                     struct h_resp *r)
{
  char body[512], hdr[300];
  const char *headers[] = {hdr, NULL};

  job_body(body, sizeof(body), queue, gpu, pc, name);
  snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s", key ? key : "");
  ck_assert_int_eq(h_request(s, "POST", "/v1/teams/team-s/jobs", member, body,
                             key ? headers : NULL, r),
                   0);
}

/* POST through B; expects want; returns the body (new reference). */
static json_t *submit_b(const char *queue, int gpu, const char *pc, long want)
{
  struct h_resp r;
  json_t *j;

  post_job(&srv[1], queue, gpu, pc, NULL, "cached", &r);
  ck_assert_msg(r.status == want, "%s %d GPU via B: want %ld, got %ld %s",
                queue, gpu, want, r.status, r.body);
  j = json_incref(r.json);
  h_resp_free(&r);
  return j;
}

static void admin_a(const char *method, const char *path, const char *body,
                    long want)
{
  json_decref(h_call(&srv[0], method, path, admin, body, want));
}

START_TEST(admin_change_on_a_seen_at_once_on_b)
{
  json_t *j;

  /* B caches main, spare and the classes */
  json_decref(submit_b("main", 4, NULL, 201));
  json_decref(submit_b("spare", 4, NULL, 201));
  j = submit_b("main", 1, "urgent", 201);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "priority")), 20);
  json_decref(j);

  /* a quota shrunk below the request: could never run */
  admin_a("PUT", "/v1/cluster-queues/cq-sub", CQ_BODY("2"), 200);
  j = submit_b("main", 4, NULL, 422);
  ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(j, "detail")),
                               "could never run"));
  json_decref(j);
  json_decref(submit_b("main", 2, NULL, 201));
  admin_a("PUT", "/v1/cluster-queues/cq-sub", CQ_BODY("8"), 200);
  json_decref(submit_b("main", 4, NULL, 201));

  /* a queue deleted (it has no active jobs: cancel spare's) */
  {
    PGconn *pg = h_db_connect(db_url);
    ck_assert_int_eq(PQstatus(pg), CONNECTION_OK);
    PQclear(PQexec(pg, "UPDATE jobs SET state = 'CANCELLED' "
                       "WHERE team = 'team-s' AND queue = 'spare'"));
    PQfinish(pg);
  }
  admin_a("DELETE", "/v1/teams/team-s/queues/spare", NULL, 204);
  {
    struct h_resp r;
    post_job(&srv[1], "spare", 1, NULL, NULL, "gone", &r);
    ck_assert_msg(h_is_problem(&r, 422, "queue"), "%ld %s", r.status, r.body);
    h_resp_free(&r);
  }

  /* a priority class's value changed */
  admin_a("PUT", "/v1/priority-classes/urgent",
          "{\"value\": 30, \"preemption_policy\": \"PreemptLowerPriority\", "
          "\"default\": false}",
          200);
  j = submit_b("main", 1, "urgent", 201);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "priority")), 30);
  json_decref(j);

  /* and made the default: a job naming no class gets it */
  admin_a("PUT", "/v1/priority-classes/urgent",
          "{\"value\": 30, \"preemption_policy\": \"PreemptLowerPriority\", "
          "\"default\": true}",
          200);
  j = submit_b("main", 1, NULL, 201);
  ck_assert_str_eq(h_str(j, "priority_class"), "urgent");
  json_decref(j);

  /* the default moved back */
  admin_a("PUT", "/v1/priority-classes/default",
          "{\"value\": 10, \"preemption_policy\": \"Never\", "
          "\"default\": false}",
          200);
  j = submit_b("main", 1, "default", 201);
  ck_assert_str_eq(h_str(j, "priority_class"), "default");
  json_decref(j);
}
END_TEST

/* Run sql (an UPDATE or INSERT) on the test database. */
static void sql(const char *text)
{
  PGconn *pg = h_db_connect(db_url);
  PGresult *res;

  ck_assert_int_eq(PQstatus(pg), CONNECTION_OK);
  res = PQexec(pg, text);
  ck_assert_msg(PQresultStatus(res) == PGRES_COMMAND_OK, "%s: %s", text,
                PQerrorMessage(pg));
  PQclear(res);
  PQfinish(pg);
}

static long long jobs_named(const char *name)
{
  PGconn *pg = h_db_connect(db_url);
  char q[256];
  long long n;

  ck_assert_int_eq(PQstatus(pg), CONNECTION_OK);
  snprintf(q, sizeof(q),
           "SELECT count(*) FROM jobs WHERE team = 'team-s' AND name = '%s'",
           name);
  n = h_db_int(pg, q);
  PQfinish(pg);
  return n;
}

/* A change whose notification never arrives: the configuration version
 * alone makes B's next submission see it. */
START_TEST(stale_cache_caught_by_version_without_notification)
{
  json_t *j;

  j = submit_b("main", 1, "urgent", 201);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "priority")), 20);
  json_decref(j);
  sql("BEGIN; ALTER TABLE priority_classes DISABLE TRIGGER USER; "
      "UPDATE priority_classes SET value = 40, spec = json_build_object("
      "'value', 40, 'preemption_policy', 'PreemptLowerPriority', "
      "'default', false) WHERE name = 'urgent'; "
      "ALTER TABLE priority_classes ENABLE TRIGGER USER; "
      "UPDATE config_version SET v = v + 1; COMMIT");
  j = submit_b("main", 1, "urgent", 201);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "priority")), 40);
  json_decref(j);
}
END_TEST

START_TEST(expired_key_reclaimed_on_first_retry)
{
  struct h_resp r1, r2, r3;

  post_job(&srv[1], "main", 1, NULL, "key-expiry", "expiry", &r1);
  ck_assert_msg(r1.status == 201, "%ld %s", r1.status, r1.body);
  sql("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' "
      "WHERE team = 'team-s' AND key = 'key-expiry'");
  /* the first retry after expiry is a new request */
  post_job(&srv[1], "main", 1, NULL, "key-expiry", "expiry", &r2);
  ck_assert_msg(r2.status == 201, "first retry after expiry: %ld %s", r2.status,
                r2.body);
  ck_assert_str_ne(h_str(r1.json, "id"), h_str(r2.json, "id"));
  ck_assert_int_eq(jobs_named("expiry"), 2);
  /* and its key now replays the new job, through either replica */
  post_job(&srv[0], "main", 1, NULL, "key-expiry", "expiry", &r3);
  ck_assert_msg(r3.status == 201, "%ld %s", r3.status, r3.body);
  ck_assert_str_eq(h_str(r2.json, "id"), h_str(r3.json, "id"));
  ck_assert_int_eq(jobs_named("expiry"), 2);
  h_resp_free(&r1);
  h_resp_free(&r2);
  h_resp_free(&r3);

  /* an expired key used with another body is a new request too */
  post_job(&srv[1], "main", 1, NULL, "key-expiry-2", "expiry-a", &r1);
  ck_assert_msg(r1.status == 201, "%ld %s", r1.status, r1.body);
  sql("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' "
      "WHERE team = 'team-s' AND key = 'key-expiry-2'");
  post_job(&srv[1], "main", 1, NULL, "key-expiry-2", "expiry-b", &r2);
  ck_assert_msg(r2.status == 201, "%ld %s", r2.status, r2.body);
  ck_assert_int_eq(jobs_named("expiry-b"), 1);
  h_resp_free(&r1);
  h_resp_free(&r2);
}
END_TEST

START_TEST(dead_in_flight_claim_taken_over)
{
  struct h_resp r;
  char body[512], hash[65], q[512];

  /* a first request that claimed its key 20 s ago and died before it
   * stored anything (as gpugate before 0008 left them) */
  sql("INSERT INTO idempotency_keys (team, key, request_hash, created_at) "
      "VALUES ('team-s', 'key-dead', 'whatever', "
      "now() - interval '20 seconds')");
  post_job(&srv[1], "main", 1, NULL, "key-dead", "dead", &r);
  ck_assert_msg(r.status == 201, "takeover: %ld %s", r.status, r.body);
  h_resp_free(&r);
  ck_assert_int_eq(jobs_named("dead"), 1);
  post_job(&srv[1], "main", 1, NULL, "key-dead", "dead", &r);
  ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
  h_resp_free(&r);
  ck_assert_int_eq(jobs_named("dead"), 1);

  /* one claimed 2 s ago may still be running: 409, nothing stored */
  job_body(body, sizeof(body), "main", 1, NULL, "busy");
  body_hash(body, hash);
  snprintf(q, sizeof(q),
           "INSERT INTO idempotency_keys (team, key, request_hash, "
           "created_at) VALUES ('team-s', 'key-busy', '%s', "
           "now() - interval '2 seconds')",
           hash);
  sql(q);
  post_job(&srv[1], "main", 1, NULL, "key-busy", "busy", &r);
  ck_assert_msg(h_is_problem(&r, 409, NULL), "%ld %s", r.status, r.body);
  h_resp_free(&r);
  ck_assert_int_eq(jobs_named("busy"), 0);

  /* its age past 15 s: taken over */
  sql("UPDATE idempotency_keys SET created_at = now() - interval '16 seconds' "
      "WHERE team = 'team-s' AND key = 'key-busy'");
  post_job(&srv[1], "main", 1, NULL, "key-busy", "busy", &r);
  ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
  h_resp_free(&r);
  ck_assert_int_eq(jobs_named("busy"), 1);
}
END_TEST

START_TEST(replayed_key_wins_over_a_changed_configuration)
{
  struct h_resp r1, r2;

  /* a key whose first request succeeded keeps its answer even when the
   * configuration would now refuse the body */
  post_job(&srv[1], "main", 4, NULL, "key-before", "before", &r1);
  ck_assert_msg(r1.status == 201, "%ld %s", r1.status, r1.body);
  admin_a("PUT", "/v1/cluster-queues/cq-sub", CQ_BODY("2"), 200);
  post_job(&srv[1], "main", 4, NULL, "key-before", "before", &r2);
  ck_assert_msg(r2.status == 201, "replay: %ld %s", r2.status, r2.body);
  ck_assert_str_eq(h_str(r1.json, "id"), h_str(r2.json, "id"));
  h_resp_free(&r2);
  /* another body under that key: 422 naming the key */
  post_job(&srv[1], "main", 4, NULL, "key-before", "other", &r2);
  ck_assert_msg(h_is_problem(&r2, 422, "Idempotency-Key"), "%ld %s", r2.status,
                r2.body);
  h_resp_free(&r2);
  /* a new key with the refused body: the quota error */
  post_job(&srv[1], "main", 4, NULL, "key-after", "after", &r2);
  ck_assert_msg(h_is_problem(&r2, 422, "task"), "%ld %s", r2.status, r2.body);
  h_resp_free(&r2);
  ck_assert_int_eq(jobs_named("after"), 0);
  h_resp_free(&r1);
}
END_TEST

Suite *submit_suite(void)
{
  Suite *s = suite_create("submit");
  TCase *tc = tcase_create("submit");

  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, admin_change_on_a_seen_at_once_on_b);
  tcase_add_test(tc, stale_cache_caught_by_version_without_notification);
  tcase_add_test(tc, expired_key_reclaimed_on_first_retry);
  tcase_add_test(tc, dead_in_flight_claim_taken_over);
  tcase_add_test(tc, replayed_key_wins_over_a_changed_configuration);
  suite_add_tcase(s, tc);
  return s;
}
