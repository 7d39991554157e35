/*
 * it_push.c — Pub/Sub push authenticated as Google does it, end to end:
 * the emulator signs every push with its own RSA key (EMU_OIDC_KEY) and
 * serves the key as a JWK set; gpugate fetches that set
 * (GPUGATE_PUBSUB_JWKS_URL) and checks iss, aud, email and lifetimes. A
 * job moves by push alone (the sync is off). Tokens forged here — another
 * key, another audience or service account, expired, unverified email —
 * are refused with 401; poison messages (a user's Batch job named like
 * gpugate's, malformed attributes) are acknowledged and counted.
 */
#include <check.h>
#include <jwt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *push_suite(void);

#define AUDIENCE "https://gpugate.example.com/v1/batch/notifications"
#define PUSH_SA "batch-push@test-project.iam.gserviceaccount.com"
#define PUSH_SECRET "push-secret-0b9e2c4d7a1f"
#define GOOGLE "https://accounts.google.com"
#define KEY_GOOD "tests/fixtures/keys/rsa1.pem"
#define KEY_OTHER "tests/fixtures/keys/rsa2.pem"

static struct h_server emu, srv;
static char db_url[512];
static char secret_file[64];
static char kid[128];
static char *member, *admin;
static int fetches_before; /* GET /oauth2/v3/certs seen after setup */

static void setup(void)
{
  const char *emu_env[] = {"EMU_OIDC_KEY=" KEY_GOOD, "EMU_RUN_MS=1500",
                           "EMU_START_MS=300", NULL};
  char gcp[H_GCP_ENV][128], jwks[256], secret[128];
  const char *env[16];
  size_t n = 0, i;
  json_t *certs;

  ck_assert_msg(h_emulator_start(&emu, emu_env) == 0,
                "the emulator did not start; see %s", emu.log);
  h_gcp_env(&emu, gcp);
  h_db_apply("it_push", "tests/fixtures/dispatch-models.json", db_url,
             sizeof(db_url));
  h_write_temp("push", PUSH_SECRET "\n", secret_file, sizeof(secret_file));
  snprintf(jwks, sizeof(jwks),
           "GPUGATE_PUBSUB_JWKS_URL=http://127.0.0.1:%u/oauth2/v3/certs",
           emu.port);
  snprintf(secret, sizeof(secret), "GPUGATE_PUBSUB_PUSH_SECRET_FILE=%s",
           secret_file);
  for (i = 0; i < H_GCP_ENV; i++)
    env[n++] = gcp[i];
  env[n++] = "GPUGATE_SYNC_INTERVAL_MS=600000"; /* states come by push */
  env[n++] = "GPUGATE_RATE_LIMIT_RPS=100000";
  env[n++] = "GPUGATE_ADMISSION_INTERVAL_MS=200";
  env[n++] = "GPUGATE_PUBSUB_AUDIENCE=" AUDIENCE;
  env[n++] = "GPUGATE_PUBSUB_SERVICE_ACCOUNT=" PUSH_SA;
  env[n++] = jwks;
  env[n++] = secret;
  env[n] = NULL;
  ck_assert_msg(h_server_start(&srv, db_url, env) == 0,
                "gpugate did not start; see %s", srv.log);
  member = h_token("team-x", "member", 3600);
  admin = h_token("platform", "admin", 3600);
  certs = h_call(&emu, "GET", "/oauth2/v3/certs", NULL, NULL, 200);
  snprintf(kid, sizeof(kid), "%s",
           h_str(json_array_get(json_object_get(certs, "keys"), 0), "kid"));
  json_decref(certs);
  ck_assert_msg(kid[0], "the emulator's JWK set has no kid");
  fetches_before = -1;
}

static void teardown(void)
{
  h_server_stop(&srv);
  h_server_stop(&emu);
  free(member);
  free(admin);
  member = admin = NULL;
  if (secret_file[0])
    unlink(secret_file);
  secret_file[0] = '\0';
}

/* ---- tokens as Google would sign them, or not ---- */

struct claims {
  const char *key_file, *kid, *iss, *aud, *email;
  int email_verified;
  long iat_ago, exp_in; /* seconds before / after now */
};

static const struct claims google = {KEY_GOOD, NULL, GOOGLE, AUDIENCE,
                                     PUSH_SA,  1,    0,      3600};

/* A new token (free() it) signed RS256 with c's key and kid (NULL: the
 * emulator's). */
static char *sign(const struct claims *c)
{
  size_t len = 0;
  char *pem = h_slurp(c->key_file, &len), *out = NULL;
  time_t now = time(NULL);
  jwt_t *jwt = NULL;

  ck_assert_ptr_nonnull(pem);
  ck_assert_int_eq(jwt_new(&jwt), 0);
  ck_assert_int_eq(
      jwt_set_alg(jwt, JWT_ALG_RS256, (unsigned char *)pem, (int)len), 0);
  ck_assert_int_eq(jwt_add_header(jwt, "kid", c->kid ? c->kid : kid), 0);
  jwt_add_grant(jwt, "iss", c->iss);
  jwt_add_grant(jwt, "aud", c->aud);
  jwt_add_grant(jwt, "email", c->email);
  jwt_add_grant(jwt, "sub", "104680173952345678901");
  jwt_add_grant_bool(jwt, "email_verified", c->email_verified);
  jwt_add_grant_int(jwt, "iat", (long)now - c->iat_ago);
  jwt_add_grant_int(jwt, "exp", (long)now + c->exp_in);
  out = jwt_encode_str(jwt);
  jwt_free(jwt);
  free(pem);
  ck_assert_ptr_nonnull(out);
  return out;
}

static const char envelope_unknown[] =
    "{\"message\": {\"attributes\": {\"Type\": \"JOB_STATE_CHANGED\", "
    "\"JobName\": \"projects/test-project/locations/us-east4/jobs/"
    "gpugate-nosuchjob-a1\", \"JobUID\": \"u-1\", "
    "\"NewJobState\": \"RUNNING\"}, \"data\": \"e30=\", \"messageId\": \"1\", "
    "\"publishTime\": \"2026-01-01T00:00:00Z\"}, "
    "\"subscription\": \"projects/test-project/subscriptions/gpugate\"}";

/* POST body to the push endpoint (query appended) with bearer (NULL:
 * none); the status must be want. */
static void push(const char *query, const char *bearer, const char *body,
                 long want, const char *what)
{
  char path[160], *hdr = NULL;
  const char *headers[] = {NULL, NULL};
  struct h_resp r;

  snprintf(path, sizeof(path), "/v1/batch/notifications%s", query);
  if (bearer) {
    size_t n = strlen(bearer) + 32;
    hdr = malloc(n);
    ck_assert_ptr_nonnull(hdr);
    snprintf(hdr, n, "Authorization: Bearer %s", bearer);
    headers[0] = hdr;
  }
  ck_assert_int_eq(
      h_request(&srv, "POST", path, NULL, body, bearer ? headers : NULL, &r),
      0);
  ck_assert_msg(r.status == want, "%s: %ld, want %ld: %s", what, r.status, want,
                r.body ? r.body : "");
  if (want == 401)
    ck_assert_msg(h_is_problem(&r, 401, NULL), "%s: not problem+json: %s", what,
                  r.body ? r.body : "");
  h_resp_free(&r);
  free(hdr);
}

/* The value of gpugate_pubsub_pushes_total{outcome="..."} (0 when absent). */
static long pushes(const char *outcome)
{
  char needle[128];
  struct h_resp r;
  const char *p;
  long v = 0;

  ck_assert_int_eq(h_request(&srv, "GET", "/metrics", admin, NULL, NULL, &r),
                   0);
  ck_assert_msg(r.status == 200, "/metrics: %ld", r.status);
  snprintf(needle, sizeof(needle),
           "gpugate_pubsub_pushes_total{outcome=\"%s\"} ", outcome);
  p = r.body ? strstr(r.body, needle) : NULL;
  if (p)
    v = strtol(p + strlen(needle), NULL, 10);
  h_resp_free(&r);
  return v;
}

/* How many times gpugate fetched the emulator's JWK set. */
static int jwks_fetches(void)
{
  json_t *all = h_call(&emu, "GET", "/emulator/requests", NULL, NULL, 200);
  json_t *e;
  size_t i;
  int n = 0;

  json_array_foreach (json_object_get(all, "requests"), i, e) {
    const char *m = h_str(e, "method"), *p = h_str(e, "path");
    if (m && p && !strcmp(m, "GET") && !strcmp(p, "/oauth2/v3/certs"))
      n++;
  }
  json_decref(all);
  return n;
}

/* ---- the cases ---- */

/* Submit body to team-x as its member; id gets the new job's id. */
static void submit(const char *body, char id[32])
{
  json_t *j = h_call(&srv, "POST", "/v1/teams/team-x/jobs", member, body, 201);

  snprintf(id, 32, "%s", h_str(j, "id"));
  json_decref(j);
}

START_TEST(google_oidc_push_moves_a_job)
{
  char cfg[512], id[32], path[128];
  long long end;
  json_t *j = NULL, *health;
  bool saw_running = false;
  long applied = pushes("applied"), refused = pushes("unauthorized");

  snprintf(cfg, sizeof(cfg),
           "{\"EMU_PUSH_URL\": \"http://127.0.0.1:%u/v1/batch/"
           "notifications\", \"EMU_PUSH_AUDIENCE\": \"" AUDIENCE "\"}",
           srv.port);
  json_decref(h_call(&emu, "POST", "/emulator/config", NULL, cfg, 200));
  submit("{\"name\": \"pushed\", \"queue\": \"standard\", \"task_count\": "
         "2, \"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\", "
         "\"cpu_milli\": 2000, \"memory_mib\": 10240, \"gpu\": 2}}",
         id);
  snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%s", id);
  end = h_now_ms() + 15000;
  for (;;) {
    const char *st;
    j = h_call(&srv, "GET", path, member, NULL, 200);
    st = h_str(j, "state");
    if (st && !strcmp(st, "RUNNING"))
      saw_running = true;
    if (st && (!strcmp(st, "SUCCEEDED") || !strcmp(st, "FAILED") ||
               !strcmp(st, "CANCELLED")))
      break;
    ck_assert_msg(h_now_ms() < end, "still %s after 15 s (sync is off)", st);
    json_decref(j);
    h_sleep_ms(50);
  }
  ck_assert_str_eq(h_str(j, "state"), "SUCCEEDED");
  json_decref(j);
  ck_assert_msg(saw_running, "RUNNING was never visible");
  health = h_call(&emu, "GET", "/emulator/healthz", NULL, NULL, 200);
  ck_assert_int_eq(json_integer_value(json_object_get(
                       json_object_get(health, "pushes"), "failed")),
                   0);
  json_decref(health);
  /* every push the emulator signed was accepted */
  ck_assert_int_ge(pushes("applied") - applied, 3);
  ck_assert_int_eq(pushes("unauthorized") - refused, 0);
}
END_TEST

START_TEST(forged_pushes_refused)
{
  struct claims c;
  char *t;
  long before = pushes("unauthorized");

  if (fetches_before < 0)
    fetches_before = jwks_fetches();

  /* the genuine article first: what each forgery changes is all that
   * makes it fail */
  t = sign(&google);
  push("", t, envelope_unknown, 204, "a Google-signed token");
  free(t);

#define FORGED(what, field, value)                                             \
  do {                                                                         \
    c = google;                                                                \
    c.field = value;                                                           \
    t = sign(&c);                                                              \
    push("", t, envelope_unknown, 401, what);                                  \
    free(t);                                                                   \
  } while (0)
  FORGED("another key with Google's kid", key_file, KEY_OTHER);
  FORGED("an unknown kid", kid, "0123456789abcdef");
  FORGED("another audience", aud, "https://elsewhere.example.com/push");
  FORGED("another service account", email,
         "attacker@evil-project.iam.gserviceaccount.com");
  FORGED("another issuer", iss, "https://evil.example.com");
  FORGED("an unverified email", email_verified, 0);
  FORGED("expired an hour ago", exp_in, -3600);
  FORGED("issued in an hour", iat_ago, -3600);
#undef FORGED
  c = google;
  c.iat_ago = 7200;
  c.exp_in = -3600;
  t = sign(&c);
  push("", t, envelope_unknown, 401, "issued and expired in the past");
  free(t);

  /* no token, junk, the shared secret as a bearer, a wrong ?token= */
  push("", NULL, envelope_unknown, 401, "no credentials");
  push("", "not.a.jwt", envelope_unknown, 401, "junk bearer");
  push("", PUSH_SECRET, envelope_unknown, 401, "the secret as a bearer");
  push("?token=wrong", NULL, envelope_unknown, 401, "a wrong ?token=");
  /* the URL secret still works for local use */
  push("?token=" PUSH_SECRET, NULL, envelope_unknown, 204, "?token= secret");
  ck_assert_int_eq(pushes("unauthorized") - before, 13);
  /* gpugate fetched the key set once (besides setup's own read): cached
   * per max-age, and the unknown kid's refetch waits out the 30 s rate
   * limit instead of following every forged token */
  ck_assert_int_eq(jwks_fetches() - fetches_before, 1);
}
END_TEST

START_TEST(poison_pushes_acknowledged)
{
  static const struct {
    const char *what, *attrs, *outcome;
  } poison[] = {
      {"a user's Batch job named like gpugate's",
       "\"Type\": \"JOB_STATE_CHANGED\", \"JobName\": \"projects/test-project/"
       "locations/us-central1/jobs/gpugate-x-abar\", \"NewJobState\": "
       "\"RUNNING\"",
       "foreign"},
      {"an attempt past int range",
       "\"JobName\": \"gpugate-x-a99999999999999999\", \"NewJobState\": "
       "\"RUNNING\"",
       "foreign"},
      {"someone else's job",
       "\"JobName\": \"training-run-7\", \"NewJobState\": \"FAILED\"",
       "foreign"},
      {"JobName a number", "\"JobName\": 7, \"NewJobState\": \"RUNNING\"",
       "malformed"},
      {"a state that is no state",
       "\"JobName\": \"gpugate-j-1-a1\", \"NewJobState\": \"'; DROP--\"",
       "malformed"},
      {"a task state change",
       "\"Type\": \"TASK_STATE_CHANGED\", \"JobName\": \"gpugate-j-1-a1\", "
       "\"NewTaskState\": \"FAILED\"",
       "ignored"},
  };
  char body[1024], *t = sign(&google);
  long foreign = pushes("foreign"), malformed = pushes("malformed");
  long ignored = pushes("ignored");
  size_t i;

  for (i = 0; i < sizeof(poison) / sizeof(poison[0]); i++) {
    snprintf(body, sizeof(body),
             "{\"message\": {\"attributes\": {%s}, \"data\": \"e30=\", "
             "\"messageId\": \"%zu\"}, \"subscription\": \"s\"}",
             poison[i].attrs, i + 100);
    push("", t, body, 204, poison[i].what);
  }
  push("", t, "{\"subscription\": \"x\"}", 204, "no message");
  push("", t, "{\"message\": {\"attributes\": [1]}}", 204,
       "attributes an array");
  free(t);
  ck_assert_int_eq(pushes("foreign") - foreign, 3);
  ck_assert_int_eq(pushes("malformed") - malformed, 4);
  ck_assert_int_eq(pushes("ignored") - ignored, 1);
}
END_TEST

/*
 * A push that reports a job before the dispatcher has recorded Batch's
 * answer to its create (here the create stalls 2 s at Batch, then goes
 * through) adopts the job: it is recorded as the create would have recorded
 * it, with one BatchJobCreated, the dispatcher's late answer records nothing
 * more, and every event starts where the one before it ended.
 */
START_TEST(push_before_the_create_is_recorded)
{
  char id[32], path[160], body[1024], name[64], *t = sign(&google);
  const char *prev = NULL;
  json_t *j, *events, *ev;
  long long end;
  size_t i;
  int created = 0;
  struct h_resp r;

  json_decref(h_call(&emu, "POST", "/emulator/faults", NULL,
                     "{\"timeout_rate\": 1, \"timeout_mode\": \"slow\", "
                     "\"timeout_ms\": 2000, \"methods\": [\"POST\"], "
                     "\"max_faults\": 1}",
                     200));
  submit("{\"name\": \"early-report\", \"queue\": \"standard\", "
         "\"task\": {\"image\": \"us-docker.pkg.dev/p/r/trainer:1.2\", "
         "\"cpu_milli\": 1000, \"memory_mib\": 1024, \"gpu\": 1}}",
         id);
  snprintf(name, sizeof(name), "gpugate-%s-a1", id);
  snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%s", id);
  j = NULL;
  end = h_now_ms() + 10000;
  for (;;) { /* admitted: its create is on its way to Batch */
    json_decref(j);
    j = h_call(&srv, "GET", path, member, NULL, 200);
    if (!strcmp(h_str(j, "state"), "ADMITTED"))
      break;
    ck_assert_msg(h_now_ms() < end, "%s is %s after 10 s", id,
                  h_str(j, "state"));
    h_sleep_ms(20);
  }
  json_decref(j);
  h_sleep_ms(300);
  snprintf(body, sizeof(body),
           "{\"message\": {\"attributes\": {\"Type\": \"JOB_STATE_CHANGED\", "
           "\"JobName\": \"projects/test-project/locations/us-central1/jobs/"
           "%s\", \"JobUID\": \"u-early\", \"NewJobState\": "
           "\"RUNNING\"}, \"data\": \"e30=\", \"messageId\": \"900\"}, "
           "\"subscription\": \"projects/test-project/subscriptions/gpugate\"}",
           name);
  push("", t, body, 204, "a report before the create's answer");
  free(t);
  j = h_call(&srv, "GET", path, member, NULL, 200);
  ck_assert_str_eq(h_str(j, "state"), "RUNNING");
  json_decref(j);

  /* Batch answers the create after its stall; give the dispatcher time to
   * record the answer */
  end = h_now_ms() + 15000;
  for (;;) {
    json_t *log = h_emu_get(&emu, "/emulator/requests"), *e;
    bool answered = false;
    json_array_foreach (json_object_get(log, "requests"), i, e) {
      const char *q = h_str(json_object_get(e, "query"), "job_id");
      if (q && !strcmp(q, name) &&
          json_integer_value(json_object_get(e, "status")) == 200)
        answered = true;
    }
    json_decref(log);
    if (answered)
      break;
    ck_assert_msg(h_now_ms() < end, "Batch never answered the create of %s",
                  name);
    h_sleep_ms(100);
  }
  h_sleep_ms(1000);
  json_decref(h_call(&emu, "POST", "/emulator/faults", NULL, "{}", 200));
  snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%s/events", id);
  events = h_call(&srv, "GET", path, member, NULL, 200);
  json_array_foreach (json_object_get(events, "items"), i, ev) {
    const char *from = h_str(ev, "from"), *to = h_str(ev, "to");
    if (!strcmp(h_str(ev, "reason"), "BatchJobCreated")) {
      created++;
      ck_assert_str_eq(from, "ADMITTED");
      ck_assert_str_eq(to, "QUEUED");
    }
    if (prev)
      ck_assert_msg(from && !strcmp(from, prev),
                    "event %zu starts at %s, the one before ended at %s", i,
                    from ? from : "null", prev);
    prev = to;
  }
  ck_assert_msg(created == 1, "%d BatchJobCreated events", created);
  json_decref(events);
  /* done with it (it may have finished meanwhile: any answer will do) */
  snprintf(path, sizeof(path), "/v1/teams/team-x/jobs/%s/cancel", id);
  ck_assert_int_eq(h_request(&srv, "POST", path, member, NULL, NULL, &r), 0);
  h_resp_free(&r);
}
END_TEST

Suite *push_suite(void)
{
  Suite *s = suite_create("push");
  TCase *tc = tcase_create("oidc");

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, forged_pushes_refused);
  tcase_add_test(tc, poison_pushes_acknowledged);
  tcase_add_test(tc, google_oidc_push_moves_a_job);
  tcase_add_test(tc, push_before_the_create_is_recorded);
  suite_add_tcase(s, tc);
  return s;
}
