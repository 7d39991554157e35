/*
 * it_emulator.c — the Batch v1 emulator (build/batch_emulator) as a black
 * box: token endpoints (metadata server, RS256 JWT bearer), the Job,
 * ListJobsResponse, Operation and google.rpc.Status shapes, the life cycle
 * under capacity limits and FLEX_START waits, fault injection, request
 * recording and Pub/Sub push delivery.
 *
 * Each test starts its own emulator (EMU_EXIT_WITH_PARENT, so a failed
 * forked test leaves none behind) and drives it with h_request().
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"

Suite *emulator_suite(void);

extern char **environ;

#define EMU_BIN "build/batch_emulator"
#define KEY_RSA1 "tests/fixtures/keys/rsa1.pem"
#define KEY_RSA1_PUB "tests/fixtures/keys/rsa1.pub.pem"
#define KEY_RSA2 "tests/fixtures/keys/rsa2.pem"
#define JOBS "/v1/projects/test-project/locations/us-central1/jobs"
#define METADATA_TOKEN                                                         \
  "/computeMetadata/v1/instance/service-accounts/default/token"
#define JWT_GRANT "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
#define MAX_ENV 256

static const char *const metadata_hdr[] = {"Metadata-Flavor: Google", NULL};
static const char *const form_hdr[] = {
    "Content-Type: application/x-www-form-urlencoded", NULL};

/* ---- starting and stopping the emulator ---- */

/* The port in a port file, 0 while it is missing or incomplete. */
static unsigned short read_port(const char *path)
{
  char buf[16];
  FILE *f = fopen(path, "r");
  size_t n;
  unsigned long v;
  char *end;

  if (!f)
    return 0;
  n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  v = strtoul(buf, &end, 10);
  return end != buf && *end == '\n' && v <= 65535 ? (unsigned short)v : 0;
}

/*
 * Start build/batch_emulator (or $GPUGATE_TEST_EMULATOR, e.g. a sanitizer
 * build) with extra "EMU_X=v" entries (NULL-ended, may be NULL) and wait
 * for its port. The log goes to s->log.
 */
static void emu_start(struct h_server *s, const char *const *extra)
{
  char tmpl[sizeof(s->dir)], port_file[300], pf_env[320];
  const char *bin = getenv("GPUGATE_TEST_EMULATOR");
  const char *argv[] = {bin ? bin : EMU_BIN, NULL};
  const char *env[MAX_ENV + 1];
  posix_spawn_file_actions_t fa;
  size_t n = 0, i;
  long waited;

  memset(s, 0, sizeof(*s));
  snprintf(tmpl, sizeof(tmpl), "%s/gpugate-emu-XXXXXX", h_tmp_base());
  ck_assert_ptr_nonnull(mkdtemp(tmpl));
  snprintf(s->dir, sizeof(s->dir), "%s", tmpl);
  snprintf(s->log, sizeof(s->log), "%s/emulator.log", s->dir);
  snprintf(port_file, sizeof(port_file), "%s/port", s->dir);
  snprintf(pf_env, sizeof(pf_env), "EMU_PORT_FILE=%s", port_file);
  for (i = 0; environ[i] && n < MAX_ENV / 2; i++)
    if (strncmp(environ[i], "EMU_", 4) != 0)
      env[n++] = environ[i];
  env[n++] = pf_env;
  env[n++] = "EMU_EXIT_WITH_PARENT=true";
  for (i = 0; extra && extra[i] && n < MAX_ENV; i++)
    env[n++] = extra[i];
  env[n] = NULL;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, s->log,
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  ck_assert_int_eq(posix_spawn(&s->pid, argv[0], &fa, NULL, (char *const *)argv,
                               (char *const *)env),
                   0);
  posix_spawn_file_actions_destroy(&fa);
  for (waited = 0; waited < 10000; waited += 20) {
    s->port = read_port(port_file);
    if (s->port)
      return;
    ck_assert_msg(waitpid(s->pid, NULL, WNOHANG) != s->pid,
                  "the emulator exited; see %s", s->log);
    h_sleep_ms(20);
  }
  ck_abort_msg("the emulator did not start; see %s", s->log);
}

/* ---- HTTP helpers ---- */

/* Checks a google.rpc.Status error body and frees it. */
static void expect_status(json_t *body, long code, const char *status)
{
  json_t *err = json_object_get(body, "error");

  ck_assert_ptr_nonnull(err);
  ck_assert_int_eq(json_integer_value(json_object_get(err, "code")), code);
  ck_assert_str_eq(h_str(err, "status"), status);
  ck_assert_ptr_nonnull(h_str(err, "message"));
  json_decref(body);
}

/* An access token from the metadata server (malloc'd). */
static char *metadata_token(const struct h_server *s)
{
  struct h_resp r;
  char *tok;

  ck_assert_int_eq(
      h_request(s, "GET", METADATA_TOKEN, NULL, NULL, metadata_hdr, &r), 0);
  ck_assert_int_eq(r.status, 200);
  tok = strdup(h_str(r.json, "access_token"));
  h_resp_free(&r);
  return tok;
}

/*
 * A Job body (malloc'd): tasks × gpus on model (gpus 0: no accelerators),
 * with labels (team NULL: none) and extra environment variables env_json
 * ("" or `, "K": "V"`).
 */
static char *job_body(const char *model, int tasks, int gpus, const char *team,
                      const char *env_json)
{
  char *out = malloc(4096);
  char labels[256] = "", accel[128] = "";
  const char *reservation =
      !strcmp(model, "RESERVATION_BOUND") ? ", \"reservation\": \"res-1\"" : "";

  if (gpus > 0)
    snprintf(accel, sizeof(accel),
             ", \"accelerators\": [{\"type\": \"nvidia-tesla-a100\", "
             "\"count\": %d}]",
             gpus);
  if (team)
    snprintf(labels, sizeof(labels),
             ", \"labels\": {\"gpugate-team\": \"%s\", \"gpugate-job\": "
             "\"42\", \"cost-center\": \"cc-1\"}",
             team);
  snprintf(
      out, 4096,
      "{\"taskGroups\": [{\"taskCount\": %d, \"parallelism\": %d, "
      "\"taskSpec\": {\"runnables\": [{\"container\": {\"imageUri\": "
      "\"us-docker.pkg.dev/p/r/trainer:1\", \"commands\": [\"python\", "
      "\"train.py\"]}}], \"computeResource\": {\"cpuMilli\": 4000, "
      "\"memoryMib\": 16384}, \"maxRunDuration\": \"3600s\", "
      "\"maxRetryCount\": 0, \"environment\": {\"variables\": "
      "{\"GPUGATE_JOB_ID\": \"42\"%s}}}}], "
      "\"allocationPolicy\": {\"location\": {\"allowedLocations\": "
      "[\"regions/us-central1\"]}, \"instances\": [{\"policy\": "
      "{\"machineType\": \"a2-highgpu-1g\", \"provisioningModel\": \"%s\""
      "%s%s}, "
      "\"installGpuDrivers\": true}]%s}, \"logsPolicy\": {\"destination\": "
      "\"CLOUD_LOGGING\"}%s}",
      tasks, tasks, env_json, model, accel, reservation, labels, labels);
  return out;
}

/* The same body for another region (allowedLocations rewritten). */
static char *job_body_in(const char *region, const char *model, int gpus)
{
  char *b = job_body(model, 1, gpus, "ml", ""), *out = malloc(4200);
  const char *p = strstr(b, "regions/us-central1");

  snprintf(out, 4200, "%.*sregions/%s%s", (int)(p - b), b, region,
           p + strlen("regions/us-central1"));
  free(b);
  return out;
}

/* POST a job; expects status; returns the body (new). */
static json_t *create(const struct h_server *s, const char *tok,
                      const char *location, const char *id, const char *body,
                      long status)
{
  char path[256];

  snprintf(path, sizeof(path),
           "/v1/projects/test-project/locations/%s/jobs?job_id=%s", location,
           id);
  return h_call(s, "POST", path, tok, body, status);
}

/* The job's state into buf, "GONE" on 404. */
static const char *state_of(const struct h_server *s, const char *tok,
                            const char *location, const char *id, char *buf,
                            size_t len)
{
  char path[256];
  struct h_resp r;

  snprintf(path, sizeof(path), "/v1/projects/test-project/locations/%s/jobs/%s",
           location, id);
  ck_assert_int_eq(h_request(s, "GET", path, tok, NULL, NULL, &r), 0);
  if (r.status == 404)
    snprintf(buf, len, "GONE");
  else {
    ck_assert_msg(r.status == 200, "GET %s: %ld %s", path, r.status, r.body);
    snprintf(buf, len, "%s", h_str(json_object_get(r.json, "status"), "state"));
  }
  h_resp_free(&r);
  return buf;
}

/* Poll until the job is in state (or "GONE"); false after timeout_ms. */
static bool wait_state(const struct h_server *s, const char *tok,
                       const char *location, const char *id, const char *want,
                       long timeout_ms)
{
  long long end = h_now_ms() + timeout_ms;
  char st[64];

  do {
    if (!strcmp(state_of(s, tok, location, id, st, sizeof(st)), want))
      return true;
    h_sleep_ms(20);
  } while (h_now_ms() < end);
  return false;
}

/* eventTime of the job's status event naming "to <state>". */
static char *event_time(const struct h_server *s, const char *tok,
                        const char *id, const char *state, char *buf,
                        size_t len)
{
  char path[256], needle[64];
  json_t *job, *events, *e;
  size_t i;

  snprintf(path, sizeof(path), JOBS "/%s", id);
  snprintf(needle, sizeof(needle), "to %s for job", state);
  job = h_call(s, "GET", path, tok, NULL, 200);
  events = json_object_get(json_object_get(job, "status"), "statusEvents");
  buf[0] = '\0';
  json_array_foreach (events, i, e) {
    if (strstr(h_str(e, "description"), needle))
      snprintf(buf, len, "%s", h_str(e, "eventTime"));
  }
  json_decref(job);
  ck_assert_msg(buf[0], "job %s has no event to %s", id, state);
  return buf;
}

/* createCount of name in GET /emulator/jobs (0 when never created). */
static long long create_count(const struct h_server *s, const char *id)
{
  char name[256];
  json_t *d = h_call(s, "GET", "/emulator/jobs", NULL, NULL, 200);
  long long n;

  snprintf(name, sizeof(name),
           "projects/test-project/locations/us-central1/jobs/%s", id);
  n = json_integer_value(json_object_get(json_object_get(d, "creates"), name));
  json_decref(d);
  return n;
}

static void set_faults(const struct h_server *s, const char *spec)
{
  json_decref(h_call(s, "POST", "/emulator/faults", NULL, spec, 200));
}

/* ---- JWT bearer assertions, signed with OpenSSL ---- */

static char *b64url(const unsigned char *in, size_t len)
{
  char *out = malloc(len / 3 * 4 + 8);
  int n = EVP_EncodeBlock((unsigned char *)out, in, (int)len);
  int i;

  while (n > 0 && out[n - 1] == '=')
    n--;
  out[n] = '\0';
  for (i = 0; i < n; i++)
    out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
  return out;
}

/* An RS256 assertion signed by keyfile (malloc'd). */
static char *make_jwt(const char *keyfile, const char *aud, long long iat,
                      long long exp)
{
  const char *header = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";
  char claims[1024], *h64, *c64, *sig64, *input, *jwt;
  unsigned char *sig;
  size_t siglen = 0, inlen;
  FILE *f = fopen(keyfile, "r");
  EVP_PKEY *key;
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();

  ck_assert_ptr_nonnull(f);
  key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
  fclose(f);
  ck_assert_ptr_nonnull(key);
  snprintf(claims, sizeof(claims),
           "{\"iss\":\"gpugate@test-project.iam.gserviceaccount.com\","
           "\"scope\":\"https://www.googleapis.com/auth/cloud-platform\","
           "\"aud\":\"%s\",\"iat\":%lld,\"exp\":%lld}",
           aud, iat, exp);
  h64 = b64url((const unsigned char *)header, strlen(header));
  c64 = b64url((const unsigned char *)claims, strlen(claims));
  inlen = strlen(h64) + 1 + strlen(c64);
  input = malloc(inlen + 1);
  snprintf(input, inlen + 1, "%s.%s", h64, c64);
  ck_assert_int_eq(EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key), 1);
  ck_assert_int_eq(
      EVP_DigestSign(ctx, NULL, &siglen, (const unsigned char *)input, inlen),
      1);
  sig = malloc(siglen);
  ck_assert_int_eq(
      EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)input, inlen),
      1);
  sig64 = b64url(sig, siglen);
  jwt = malloc(inlen + strlen(sig64) + 2);
  snprintf(jwt, inlen + strlen(sig64) + 2, "%s.%s", input, sig64);
  free(h64);
  free(c64);
  free(input);
  free(sig);
  free(sig64);
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(key);
  return jwt;
}

/* POST /token with the assertion; returns the response (caller frees). */
static void token_grant(const struct h_server *s, const char *grant,
                        const char *jwt, struct h_resp *r)
{
  size_t len = strlen(jwt) + 256;
  char *body = malloc(len);

  snprintf(body, len, "grant_type=%s&assertion=%s", grant, jwt);
  ck_assert_int_eq(h_request(s, "POST", "/token", NULL, body, form_hdr, r), 0);
  free(body);
}

static void expect_invalid_grant(const struct h_server *s, const char *jwt,
                                 const char *error)
{
  struct h_resp r;

  token_grant(s, JWT_GRANT, jwt, &r);
  ck_assert_msg(r.status == 400, "want 400, got %ld %s", r.status, r.body);
  ck_assert_str_eq(h_str(r.json, "error"), error);
  ck_assert_ptr_nonnull(h_str(r.json, "error_description"));
  h_resp_free(&r);
}

/* ---- tests ---- */

START_TEST(tokens_metadata_and_jwt_bearer)
{
  const char *env[] = {"EMU_SA_PUBLIC_KEY=" KEY_RSA1_PUB, NULL};
  struct h_server s;
  struct h_resp r;
  char aud[128], hdr[256], *tok, *jwt;
  long long now = (long long)time(NULL);
  json_t *j, *reqs, *e;
  size_t i;
  bool seen_grant = false;

  emu_start(&s, env);
  snprintf(aud, sizeof(aud), "http://127.0.0.1:%u/token", s.port);

  /* the metadata server wants its flavor header */
  ck_assert_int_eq(h_request(&s, "GET", METADATA_TOKEN, NULL, NULL, NULL, &r),
                   0);
  ck_assert_int_eq(r.status, 403);
  h_resp_free(&r);
  ck_assert_int_eq(
      h_request(&s, "GET", METADATA_TOKEN, NULL, NULL, metadata_hdr, &r), 0);
  ck_assert_int_eq(r.status, 200);
  ck_assert_ptr_nonnull(h_str(r.json, "access_token"));
  ck_assert_int_eq(json_integer_value(json_object_get(r.json, "expires_in")),
                   3600);
  ck_assert_str_eq(h_str(r.json, "token_type"), "Bearer");
  tok = strdup(h_str(r.json, "access_token"));
  h_resp_free(&r);

  /* Batch calls need a token the emulator issued */
  ck_assert_int_eq(h_request(&s, "GET", JOBS, NULL, NULL, NULL, &r), 0);
  ck_assert_int_eq(r.status, 401);
  ck_assert_ptr_nonnull(h_header(&r, "WWW-Authenticate", hdr, sizeof(hdr)));
  expect_status(json_incref(r.json), 401, "UNAUTHENTICATED");
  h_resp_free(&r);
  expect_status(h_call(&s, "GET", JOBS, "ya29.not-issued", NULL, 401), 401,
                "UNAUTHENTICATED");
  json_decref(h_call(&s, "GET", JOBS, tok, NULL, 200));
  free(tok);

  /* a JWT signed by the service account's key gets a working token */
  jwt = make_jwt(KEY_RSA1, aud, now, now + 3600);
  token_grant(&s, JWT_GRANT, jwt, &r);
  ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
  ck_assert_str_eq(h_str(r.json, "token_type"), "Bearer");
  ck_assert_int_eq(json_integer_value(json_object_get(r.json, "expires_in")),
                   3600);
  json_decref(
      h_call(&s, "GET", JOBS, h_str(r.json, "access_token"), NULL, 200));
  h_resp_free(&r);
  free(jwt);

  /* another key, a too-long lifetime, an expired one, the wrong audience */
  jwt = make_jwt(KEY_RSA2, aud, now, now + 3600);
  expect_invalid_grant(&s, jwt, "invalid_grant");
  free(jwt);
  jwt = make_jwt(KEY_RSA1, aud, now, now + 7200);
  expect_invalid_grant(&s, jwt, "invalid_grant");
  free(jwt);
  jwt = make_jwt(KEY_RSA1, aud, now - 4000, now - 400);
  expect_invalid_grant(&s, jwt, "invalid_grant");
  free(jwt);
  jwt = make_jwt(KEY_RSA1, "https://oauth2.googleapis.com/token", now,
                 now + 3600);
  expect_invalid_grant(&s, jwt, "invalid_grant");
  expect_invalid_grant(&s, "not-a-jwt", "invalid_grant");
  /* the wrong grant type */
  token_grant(&s, "client_credentials", jwt, &r);
  ck_assert_int_eq(r.status, 400);
  ck_assert_str_eq(h_str(r.json, "error"), "unsupported_grant_type");
  h_resp_free(&r);
  free(jwt);

  /* the log shows the claims but never the assertion itself */
  j = h_call(&s, "GET", "/emulator/requests", NULL, NULL, 200);
  reqs = json_object_get(j, "requests");
  json_array_foreach (reqs, i, e) {
    json_t *body = json_object_get(e, "body");
    if (strcmp(h_str(e, "path"), "/token") != 0 ||
        json_integer_value(json_object_get(e, "status")) != 200)
      continue;
    seen_grant = true;
    ck_assert_str_eq(h_str(body, "assertion"), "[redacted]");
    ck_assert_str_eq(h_str(json_object_get(body, "assertion_claims"), "aud"),
                     aud);
  }
  ck_assert(seen_grant);
  json_decref(j);
  h_server_stop(&s);
}
END_TEST

START_TEST(tokens_expire_and_can_be_revoked)
{
  const char *env[] = {"EMU_TOKEN_TTL_S=1", NULL};
  struct h_server s;
  char *tok;

  emu_start(&s, env);
  tok = metadata_token(&s);
  json_decref(h_call(&s, "GET", JOBS, tok, NULL, 200));
  h_sleep_ms(1200);
  expect_status(h_call(&s, "GET", JOBS, tok, NULL, 401), 401,
                "UNAUTHENTICATED");
  free(tok);

  tok = metadata_token(&s);
  json_decref(h_call(&s, "GET", JOBS, tok, NULL, 200));
  json_decref(h_call(&s, "DELETE", "/emulator/tokens", NULL, NULL, 200));
  expect_status(h_call(&s, "GET", JOBS, tok, NULL, 401), 401,
                "UNAUTHENTICATED");
  free(tok);
  h_server_stop(&s);
}
END_TEST

START_TEST(auth_can_be_turned_off)
{
  const char *env[] = {"EMU_REQUIRE_AUTH=false", NULL};
  struct h_server s;

  emu_start(&s, env);
  json_decref(h_call(&s, "GET", JOBS, NULL, NULL, 200));
  h_server_stop(&s);
}
END_TEST

START_TEST(create_get_and_errors)
{
  const char *env[] = {"EMU_RUN_MS=60000", NULL};
  struct h_server s;
  char *tok, *body, path[256];
  json_t *job, *again, *tg, *pol, *status;
  char uid[128];

  emu_start(&s, env);
  tok = metadata_token(&s);
  body = job_body("SPOT", 2, 1, "ml", "");

  snprintf(path, sizeof(path),
           JOBS "?job_id=gpugate-7-a1&request_id="
                "1b4e28ba-2fa1-4d3b-a3f5-ef19b5a7633b");
  job = h_call(&s, "POST", path, tok, body, 200);
  ck_assert_str_eq(h_str(job, "name"), "projects/test-project/locations/"
                                       "us-central1/jobs/gpugate-7-a1");
  ck_assert_ptr_nonnull(h_str(job, "uid"));
  snprintf(uid, sizeof(uid), "%s", h_str(job, "uid"));
  ck_assert_ptr_nonnull(h_str(job, "createTime"));
  ck_assert_ptr_nonnull(h_str(job, "updateTime"));
  status = json_object_get(job, "status");
  ck_assert_str_eq(h_str(status, "state"), "QUEUED");
  ck_assert_uint_ge(json_array_size(json_object_get(status, "statusEvents")),
                    1);
  tg = json_array_get(json_object_get(job, "taskGroups"), 0);
  /* int64 fields come back as strings, as in Google's JSON */
  ck_assert_str_eq(h_str(tg, "taskCount"), "2");
  ck_assert_str_eq(h_str(tg, "parallelism"), "2");
  ck_assert_str_eq(h_str(json_object_get(tg, "taskSpec"), "maxRunDuration"),
                   "3600s");
  pol = json_object_get(
      json_array_get(json_object_get(json_object_get(job, "allocationPolicy"),
                                     "instances"),
                     0),
      "policy");
  ck_assert_str_eq(h_str(pol, "provisioningModel"), "SPOT");
  ck_assert_str_eq(
      h_str(json_array_get(json_object_get(pol, "accelerators"), 0), "count"),
      "1");
  ck_assert_str_eq(h_str(json_object_get(job, "labels"), "gpugate-team"), "ml");
  ck_assert_str_eq(
      h_str(json_object_get(json_object_get(job, "allocationPolicy"), "labels"),
            "cost-center"),
      "cc-1");
  ck_assert_str_eq(h_str(json_object_get(job, "logsPolicy"), "destination"),
                   "CLOUD_LOGGING");
  json_decref(job);

  /* a retry with the same request_id is the same job; any other is a 409 */
  again = h_call(&s, "POST", path, tok, body, 200);
  ck_assert_str_eq(h_str(again, "uid"), uid);
  json_decref(again);
  expect_status(create(&s, tok, "us-central1", "gpugate-7-a1", body, 409), 409,
                "ALREADY_EXISTS");
  ck_assert_int_eq(create_count(&s, "gpugate-7-a1"), 1);

  /* GET */
  snprintf(path, sizeof(path), JOBS "/gpugate-7-a1");
  job = h_call(&s, "GET", path, tok, NULL, 200);
  ck_assert_str_eq(h_str(job, "uid"), uid);
  json_decref(job);
  expect_status(h_call(&s, "GET", JOBS "/gpugate-nope", tok, NULL, 404), 404,
                "NOT_FOUND");

  /* validation */
  expect_status(create(&s, tok, "us-central1", "Gpugate-1", body, 400), 400,
                "INVALID_ARGUMENT");
  expect_status(create(&s, tok, "us-central1", "gpugate-1-", body, 400), 400,
                "INVALID_ARGUMENT");
  expect_status(create(&s, tok, "us-central1", "x",
                       "{\"taskGroups\": [{\"taskSpec\": {\"runnables\": "
                       "[]}}]}",
                       400),
                400, "INVALID_ARGUMENT");
  expect_status(
      create(&s, tok, "us-central1", "x", "{\"taskGroups\": []}", 400), 400,
      "INVALID_ARGUMENT");
  expect_status(create(&s, tok, "us-central1", "x", "{not json", 400), 400,
                "INVALID_ARGUMENT");
  expect_status(create(&s, tok, "europe-west4", "x", body, 400), 400,
                "INVALID_ARGUMENT"); /* allowedLocations in another region */
  expect_status(h_call(&s, "POST", JOBS "?job_id=x&request_id=not-a-uuid", tok,
                       body, 400),
                400, "INVALID_ARGUMENT");
  free(body);
  body = job_body("RESERVATION_BOUND", 1, 1, "Not-A-Label", "");
  expect_status(create(&s, tok, "us-central1", "x", body, 400), 400,
                "INVALID_ARGUMENT");
  free(body);
  body = job_body("SPOT", 1, 1, "ml", "");
  expect_status(h_call(&s, "POST",
                       "/v1/projects/other-project/locations/us-central1/jobs"
                       "?job_id=x",
                       tok, body, 403),
                403, "PERMISSION_DENIED");
  ck_assert_int_eq(create_count(&s, "x"), 0);
  free(body);
  free(tok);
  h_server_stop(&s);
}
END_TEST

START_TEST(list_filters_and_pages)
{
  const char *env[] = {"EMU_RUN_MS=60000", NULL};
  struct h_server s;
  char *tok, *mine, *other, path[512];
  json_t *page, *jobs;
  const char *next;
  int i;

  emu_start(&s, env);
  tok = metadata_token(&s);
  mine = job_body("STANDARD", 1, 0, "ml", "");
  other = job_body("STANDARD", 1, 0, NULL, "");
  for (i = 0; i < 3; i++) {
    char id[32];
    snprintf(id, sizeof(id), "gpugate-%d-a1", i);
    json_decref(create(&s, tok, "us-central1", id, mine, 200));
  }
  json_decref(create(&s, tok, "us-central1", "not-ours", other, 200));

  /* everything, no filter */
  page = h_call(&s, "GET", JOBS, tok, NULL, 200);
  ck_assert_uint_eq(json_array_size(json_object_get(page, "jobs")), 4);
  ck_assert_ptr_null(json_object_get(page, "nextPageToken"));
  json_decref(page);

  /* labels.gpugate-team:* in pages of 2 */
  page = h_call(&s, "GET", JOBS "?filter=labels.gpugate-team%3A*&pageSize=2",
                tok, NULL, 200);
  jobs = json_object_get(page, "jobs");
  ck_assert_uint_eq(json_array_size(jobs), 2);
  ck_assert_str_eq(h_str(json_array_get(jobs, 0), "name"),
                   "projects/test-project/locations/us-central1/jobs/"
                   "gpugate-0-a1");
  next = h_str(page, "nextPageToken");
  ck_assert_ptr_nonnull(next);
  snprintf(path, sizeof(path),
           JOBS "?filter=labels.gpugate-team%%3A*&pageSize=2&pageToken=%s",
           next);
  json_decref(page);
  page = h_call(&s, "GET", path, tok, NULL, 200);
  jobs = json_object_get(page, "jobs");
  ck_assert_uint_eq(json_array_size(jobs), 1);
  ck_assert_str_eq(h_str(json_array_get(jobs, 0), "name"),
                   "projects/test-project/locations/us-central1/jobs/"
                   "gpugate-2-a1");
  ck_assert_ptr_null(json_object_get(page, "nextPageToken"));
  json_decref(page);

  /* equality, quoted key, the all-locations wildcard, an empty result */
  page = h_call(&s, "GET",
                "/v1/projects/test-project/locations/-/jobs?filter=labels."
                "%22cost-center%22%3D%22cc-1%22",
                tok, NULL, 200);
  ck_assert_uint_eq(json_array_size(json_object_get(page, "jobs")), 3);
  json_decref(page);
  page = h_call(&s, "GET", JOBS "?filter=labels.gpugate-team%3D%22nobody%22",
                tok, NULL, 200);
  ck_assert_ptr_null(json_object_get(page, "jobs")); /* proto3: omitted */
  json_decref(page);
  expect_status(h_call(&s, "GET", JOBS "?filter=size%3E3", tok, NULL, 400), 400,
                "INVALID_ARGUMENT");
  expect_status(h_call(&s, "GET", JOBS "?pageToken=bogus", tok, NULL, 400), 400,
                "INVALID_ARGUMENT");
  free(mine);
  free(other);
  free(tok);
  h_server_stop(&s);
}
END_TEST

START_TEST(cancel_and_delete_operations)
{
  const char *env[] = {"EMU_RUN_MS=60000", "EMU_CANCEL_MS=200",
                       "EMU_DELETE_MS=200", NULL};
  struct h_server s;
  char *tok, *body, path[512], st[64];
  json_t *op, *meta;

  emu_start(&s, env);
  tok = metadata_token(&s);
  body = job_body("SPOT", 1, 1, "ml", "");
  json_decref(create(&s, tok, "us-central1", "gpugate-1-a1", body, 200));
  json_decref(create(&s, tok, "us-central1", "gpugate-2-a1", body, 200));
  ck_assert(
      wait_state(&s, tok, "us-central1", "gpugate-1-a1", "RUNNING", 30000));

  op = h_call(&s, "POST", JOBS "/gpugate-1-a1:cancel", tok, "{}", 200);
  ck_assert_ptr_nonnull(strstr(h_str(op, "name"),
                               "projects/test-project/locations/us-central1/"
                               "operations/"));
  ck_assert(json_is_false(json_object_get(op, "done")));
  meta = json_object_get(op, "metadata");
  ck_assert_str_eq(h_str(meta, "verb"), "cancel");
  ck_assert_str_eq(h_str(meta, "target"), "projects/test-project/locations/"
                                          "us-central1/jobs/gpugate-1-a1");
  ck_assert_str_eq(
      state_of(&s, tok, "us-central1", "gpugate-1-a1", st, sizeof(st)),
      "CANCELLATION_IN_PROGRESS");
  ck_assert(
      wait_state(&s, tok, "us-central1", "gpugate-1-a1", "CANCELLED", 30000));
  snprintf(path, sizeof(path), "/v1/%s", h_str(op, "name"));
  json_decref(op);
  op = h_call(&s, "GET", path, tok, NULL, 200);
  ck_assert(json_is_true(json_object_get(op, "done")));
  json_decref(op);
  /* a terminal job cannot be cancelled; an unknown one is not found */
  expect_status(h_call(&s, "POST", JOBS "/gpugate-1-a1:cancel", tok, NULL, 400),
                400, "FAILED_PRECONDITION");
  expect_status(h_call(&s, "POST", JOBS "/gpugate-9-a1:cancel", tok, NULL, 404),
                404, "NOT_FOUND");

  /* DELETE: DELETION_IN_PROGRESS, then gone */
  op = h_call(&s, "DELETE", JOBS "/gpugate-2-a1", tok, NULL, 200);
  ck_assert_str_eq(h_str(json_object_get(op, "metadata"), "verb"), "delete");
  ck_assert(json_is_false(json_object_get(op, "done")));
  json_decref(op);
  ck_assert_str_eq(
      state_of(&s, tok, "us-central1", "gpugate-2-a1", st, sizeof(st)),
      "DELETION_IN_PROGRESS");
  ck_assert(wait_state(&s, tok, "us-central1", "gpugate-2-a1", "GONE", 30000));
  expect_status(h_call(&s, "DELETE", JOBS "/gpugate-2-a1", tok, NULL, 404), 404,
                "NOT_FOUND");
  /* after the delete the name can be created again, and that counts */
  json_decref(create(&s, tok, "us-central1", "gpugate-2-a1", body, 200));
  ck_assert_int_eq(create_count(&s, "gpugate-2-a1"), 2);
  free(body);
  free(tok);
  h_server_stop(&s);
}
END_TEST

START_TEST(lifecycle_with_capacity)
{
  const char *env[] = {"EMU_CAPACITY=us-central1/SPOT=8", "EMU_RUN_MS=1200",
                       NULL};
  struct h_server s;
  char *tok, *big, *huge, *fails, st[64], a_done[64], b_sched[64];

  emu_start(&s, env);
  tok = metadata_token(&s);
  big = job_body("SPOT", 2, 4, "ml", ""); /* 2 tasks × 4 GPUs = 8 */
  huge = job_body("SPOT", 4, 4, "ml", "");
  fails = job_body("STANDARD", 1, 8, "ml",
                   ", \"EMU_OUTCOME\": \"FAILED\", \"EMU_RUN_MS\": "
                   "\"100\"");

  json_decref(create(&s, tok, "us-central1", "job-a", big, 200));
  ck_assert(wait_state(&s, tok, "us-central1", "job-a", "RUNNING", 30000));
  json_decref(create(&s, tok, "us-central1", "job-b", big, 200));
  json_decref(create(&s, tok, "us-central1", "job-huge", huge, 200));
  /* STANDARD has no limit here, and its per-job override fails it fast */
  json_decref(create(&s, tok, "us-central1", "job-f", fails, 200));
  ck_assert(wait_state(&s, tok, "us-central1", "job-f", "FAILED", 30000));

  /* while A runs, B cannot have been scheduled: A holds all 8 GPUs */
  h_sleep_ms(200);
  state_of(&s, tok, "us-central1", "job-a", st, sizeof(st));
  if (!strcmp(st, "RUNNING")) {
    ck_assert_str_eq(state_of(&s, tok, "us-central1", "job-b", st, sizeof(st)),
                     "QUEUED");
  }
  ck_assert(wait_state(&s, tok, "us-central1", "job-a", "SUCCEEDED", 10000));
  ck_assert(wait_state(&s, tok, "us-central1", "job-b", "SUCCEEDED", 10000));
  /* B was scheduled no earlier than A finished */
  event_time(&s, tok, "job-a", "SUCCEEDED", a_done, sizeof(a_done));
  event_time(&s, tok, "job-b", "SCHEDULED", b_sched, sizeof(b_sched));
  ck_assert_msg(strcmp(a_done, b_sched) <= 0, "A done %s, B scheduled %s",
                a_done, b_sched);

  /* 16 GPUs never fit in 8 ... until the capacity changes at run time */
  ck_assert_str_eq(state_of(&s, tok, "us-central1", "job-huge", st, sizeof(st)),
                   "QUEUED");
  json_decref(h_call(&s, "POST", "/emulator/config", NULL,
                     "{\"EMU_CAPACITY\": \"us-central1/SPOT=16\", "
                     "\"EMU_RUN_MS\": 100}",
                     200));
  ck_assert(wait_state(&s, tok, "us-central1", "job-huge", "SUCCEEDED", 30000));
  expect_status(h_call(&s, "POST", "/emulator/config", NULL,
                       "{\"EMU_LISTEN\": \"127.0.0.1:1\"}", 400),
                400, "INVALID_ARGUMENT");
  free(big);
  free(huge);
  free(fails);
  free(tok);
  h_server_stop(&s);
}
END_TEST

START_TEST(flex_start_waits_and_zero_capacity_never_schedules)
{
  const char *env[] = {"EMU_FLEX_WAIT_MS=1500", "EMU_RUN_MS=200",
                       "EMU_CAPACITY=europe-west4/FLEX_START=0,"
                       "us-central1/FLEX_START=20",
                       NULL};
  struct h_server s;
  char *tok, *flex, *flex_eu, *std, st[64];
  long long t0, elapsed;

  emu_start(&s, env);
  tok = metadata_token(&s);
  flex = job_body("FLEX_START", 1, 8, "ml", "");
  flex_eu = job_body_in("europe-west4", "FLEX_START", 8);
  std = job_body("STANDARD", 1, 8, "ml", "");

  t0 = h_now_ms();
  json_decref(create(&s, tok, "us-central1", "flex-1", flex, 200));
  json_decref(create(&s, tok, "us-central1", "std-1", std, 200));
  json_decref(create(&s, tok, "europe-west4", "flex-eu", flex_eu, 200));
  /* the STANDARD job does not wait */
  ck_assert(wait_state(&s, tok, "us-central1", "std-1", "RUNNING", 30000));
  state_of(&s, tok, "us-central1", "flex-1", st, sizeof(st));
  if (h_now_ms() - t0 < 1400)
    ck_assert_str_eq(st, "QUEUED");
  ck_assert(wait_state(&s, tok, "us-central1", "flex-1", "RUNNING", 30000));
  elapsed = h_now_ms() - t0;
  ck_assert_int_ge(elapsed, 1500);
  ck_assert(wait_state(&s, tok, "us-central1", "flex-1", "SUCCEEDED", 30000));

  /* europe-west4 has no FLEX_START capacity at all */
  ck_assert_str_eq(state_of(&s, tok, "europe-west4", "flex-eu", st, sizeof(st)),
                   "QUEUED");
  h_sleep_ms(500);
  ck_assert_str_eq(state_of(&s, tok, "europe-west4", "flex-eu", st, sizeof(st)),
                   "QUEUED");
  free(flex);
  free(flex_eu);
  free(std);
  free(tok);
  h_server_stop(&s);
}
END_TEST

START_TEST(faults_at_the_configured_rate)
{
  struct h_server s;
  struct h_resp r;
  char *tok, hdr[64];
  int i, errors = 0, n429 = 0, n503 = 0;
  const int n = 400;
  json_t *d;

  emu_start(&s, NULL);
  tok = metadata_token(&s);
  set_faults(&s, "{\"error_rate\": 0.25, \"codes\": [429, 503], "
                 "\"retry_after_s\": 2}");
  for (i = 0; i < n; i++) {
    ck_assert_int_eq(h_request(&s, "GET", JOBS, tok, NULL, NULL, &r), 0);
    if (r.status == 429) {
      json_t *det = json_array_get(
          json_object_get(json_object_get(r.json, "error"), "details"), 0);
      n429++;
      ck_assert_str_eq(h_header(&r, "Retry-After", hdr, sizeof(hdr)), "2");
      ck_assert_str_eq(h_str(json_object_get(r.json, "error"), "status"),
                       "RESOURCE_EXHAUSTED");
      ck_assert_str_eq(h_str(det, "@type"),
                       "type.googleapis.com/google.rpc.RetryInfo");
      ck_assert_str_eq(h_str(det, "retryDelay"), "2s");
    } else if (r.status == 503) {
      n503++;
      ck_assert_str_eq(h_str(json_object_get(r.json, "error"), "status"),
                       "UNAVAILABLE");
    } else {
      ck_assert_int_eq(r.status, 200);
    }
    h_resp_free(&r);
  }
  errors = n429 + n503;
  ck_assert_msg(errors > n * 15 / 100 && errors < n * 35 / 100,
                "%d errors in %d calls at rate 0.25", errors, n);
  ck_assert_int_gt(n429, 0);
  ck_assert_int_gt(n503, 0);
  d = h_call(&s, "GET", "/emulator/faults", NULL, NULL, 200);
  ck_assert_int_eq(json_integer_value(json_object_get(
                       json_object_get(d, "injected"), "error")),
                   errors);
  json_decref(d);
  /* neither control nor token endpoints are faulted by default */
  for (i = 0; i < 40; i++) {
    json_decref(h_call(&s, "GET", "/emulator/healthz", NULL, NULL, 200));
    free(metadata_token(&s));
  }
  json_decref(h_call(&s, "DELETE", "/emulator/faults", NULL, NULL, 200));
  free(tok);
  h_server_stop(&s);
}
END_TEST

START_TEST(failed_creates_leave_no_job)
{
  struct h_server s;
  struct h_resp r;
  char *tok, *body;
  long long t0;

  emu_start(&s, NULL);
  tok = metadata_token(&s);
  body = job_body("SPOT", 1, 1, "ml", "");

  /* an injected error */
  set_faults(&s, "{\"error_rate\": 1, \"codes\": [503]}");
  expect_status(create(&s, tok, "us-central1", "gpugate-5-a1", body, 503), 503,
                "UNAVAILABLE");
  /* a reset: no response at all */
  set_faults(&s, "{\"reset_rate\": 1}");
  ck_assert_int_eq(
      h_request(&s, "POST", JOBS "?job_id=gpugate-5-a1", tok, body, NULL, &r),
      -1);
  h_resp_free(&r);
  /* a stall answered 503 */
  set_faults(&s, "{\"timeout_rate\": 1, \"timeout_ms\": 300}");
  t0 = h_now_ms();
  expect_status(create(&s, tok, "us-central1", "gpugate-5-a1", body, 503), 503,
                "UNAVAILABLE");
  ck_assert_int_ge(h_now_ms() - t0, 300);
  json_decref(h_call(&s, "DELETE", "/emulator/faults", NULL, NULL, 200));
  ck_assert_int_eq(create_count(&s, "gpugate-5-a1"), 0);
  expect_status(h_call(&s, "GET", JOBS "/gpugate-5-a1", tok, NULL, 404), 404,
                "NOT_FOUND");

  /* a lost response: the job exists, the retry gets 409, created once */
  set_faults(&s, "{\"lost_response_rate\": 1, \"methods\": [\"POST\"]}");
  ck_assert_int_eq(
      h_request(&s, "POST", JOBS "?job_id=gpugate-6-a1", tok, body, NULL, &r),
      -1);
  h_resp_free(&r);
  json_decref(h_call(&s, "DELETE", "/emulator/faults", NULL, NULL, 200));
  expect_status(create(&s, tok, "us-central1", "gpugate-6-a1", body, 409), 409,
                "ALREADY_EXISTS");
  ck_assert_int_eq(create_count(&s, "gpugate-6-a1"), 1);

  /* max_faults: exactly one failure, then through */
  set_faults(&s, "{\"error_rate\": 1, \"codes\": [429], \"max_faults\": 1}");
  expect_status(create(&s, tok, "us-central1", "gpugate-8-a1", body, 429), 429,
                "RESOURCE_EXHAUSTED");
  json_decref(create(&s, tok, "us-central1", "gpugate-8-a1", body, 200));
  ck_assert_int_eq(create_count(&s, "gpugate-8-a1"), 1);

  /* token endpoints only with "tokens": true */
  set_faults(&s, "{\"error_rate\": 1, \"codes\": [500], \"tokens\": true}");
  ck_assert_int_eq(
      h_request(&s, "GET", METADATA_TOKEN, NULL, NULL, metadata_hdr, &r), 0);
  ck_assert_int_eq(r.status, 500);
  h_resp_free(&r);
  expect_status(
      h_call(&s, "POST", "/emulator/faults", NULL, "{\"error_rate\": 2}", 400),
      400, "INVALID_ARGUMENT");
  free(body);
  free(tok);
  h_server_stop(&s);
}
END_TEST

START_TEST(requests_are_recorded_without_tokens)
{
  struct h_server s;
  struct h_resp r;
  char *tok, *body;
  json_t *log, *reqs, *e;
  long long next;

  emu_start(&s, NULL);
  tok = metadata_token(&s);
  body = job_body("SPOT", 1, 1, "ml", "");
  json_decref(h_call(&s, "DELETE", "/emulator/requests", NULL, NULL, 200));
  json_decref(h_call(&s, "GET", JOBS "?pageSize=5", tok, NULL, 200));
  json_decref(create(&s, tok, "us-central1", "gpugate-3-a1", body, 200));
  json_decref(h_call(&s, "GET", JOBS "/gpugate-3-a1", NULL, NULL, 401));
  json_decref(h_call(&s, "GET", "/emulator/jobs", NULL, NULL, 200));

  ck_assert_int_eq(
      h_request(&s, "GET", "/emulator/requests", NULL, NULL, NULL, &r), 0);
  ck_assert_int_eq(r.status, 200);
  ck_assert_ptr_null(strstr(r.body, tok)); /* never the token itself */
  log = json_incref(r.json);
  h_resp_free(&r);
  reqs = json_object_get(log, "requests");
  ck_assert_uint_eq(json_array_size(reqs), 3); /* control calls not logged */

  e = json_array_get(reqs, 0);
  ck_assert_str_eq(h_str(e, "method"), "GET");
  ck_assert_str_eq(h_str(e, "path"), JOBS);
  ck_assert_str_eq(h_str(json_object_get(e, "query"), "pageSize"), "5");
  ck_assert(json_is_true(json_object_get(e, "authorization")));
  ck_assert_int_eq(json_integer_value(json_object_get(e, "status")), 200);
  ck_assert_ptr_nonnull(h_str(e, "time"));

  e = json_array_get(reqs, 1);
  ck_assert_str_eq(h_str(e, "method"), "POST");
  ck_assert_str_eq(h_str(json_object_get(e, "query"), "job_id"),
                   "gpugate-3-a1");
  ck_assert_str_eq(h_str(json_object_get(json_object_get(e, "body"), "labels"),
                         "gpugate-team"),
                   "ml");
  ck_assert_int_eq(json_integer_value(json_object_get(e, "status")), 200);
  ck_assert(json_is_null(json_object_get(e, "fault")));

  e = json_array_get(reqs, 2);
  ck_assert(json_is_false(json_object_get(e, "authorization")));
  ck_assert_int_eq(json_integer_value(json_object_get(e, "status")), 401);

  /* ?since= returns only what came later */
  next = json_integer_value(json_object_get(log, "next"));
  json_decref(log);
  json_decref(h_call(&s, "GET", JOBS, tok, NULL, 200));
  {
    char path[64];
    snprintf(path, sizeof(path), "/emulator/requests?since=%lld", next);
    log = h_call(&s, "GET", path, NULL, NULL, 200);
  }
  ck_assert_uint_eq(json_array_size(json_object_get(log, "requests")), 1);
  json_decref(log);
  free(body);
  free(tok);
  h_server_stop(&s);
}
END_TEST

START_TEST(jobs_can_disappear)
{
  struct h_server s;
  char *tok, *body;

  emu_start(&s, NULL);
  tok = metadata_token(&s);
  body = job_body("SPOT", 1, 1, "ml", "");
  json_decref(create(&s, tok, "us-central1", "gpugate-4-a1", body, 200));
  json_decref(h_call(&s, "POST", "/emulator/jobs/gpugate-4-a1:disappear", NULL,
                     NULL, 200));
  expect_status(h_call(&s, "GET", JOBS "/gpugate-4-a1", tok, NULL, 404), 404,
                "NOT_FOUND");
  ck_assert_int_eq(create_count(&s, "gpugate-4-a1"), 1);
  expect_status(h_call(&s, "POST", "/emulator/jobs/gpugate-4-a1:disappear",
                       NULL, NULL, 404),
                404, "NOT_FOUND");
  free(body);
  free(tok);
  h_server_stop(&s);
}
END_TEST

/* ---- a tiny Pub/Sub push receiver ---- */

struct sink {
  pthread_mutex_t mu;
  json_t *messages; /* envelopes received, in order */
  int fail_first;   /* answer 500 to this many deliveries first */
  int bad_type;     /* deliveries without application/json */
};

struct sink_req {
  char *data;
  size_t len;
};

static enum MHD_Result sink_handler(void *cls, struct MHD_Connection *conn,
                                    const char *url, const char *method,
                                    const char *version,
                                    const char *upload_data,
                                    size_t *upload_size, void **con_cls)
{
  struct sink *k = cls;
  struct sink_req *q = *con_cls;
  struct MHD_Response *resp;
  const char *ct;
  unsigned status = 204;
  enum MHD_Result ret;

  (void)url;
  (void)method;
  (void)version;
  if (!q) {
    *con_cls = calloc(1, sizeof(struct sink_req));
    return *con_cls ? MHD_YES : MHD_NO;
  }
  if (*upload_size) {
    char *d = realloc(q->data, q->len + *upload_size + 1);
    if (!d)
      return MHD_NO;
    memcpy(d + q->len, upload_data, *upload_size);
    q->data = d;
    q->len += *upload_size;
    q->data[q->len] = '\0';
    *upload_size = 0;
    return MHD_YES;
  }
  ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
  pthread_mutex_lock(&k->mu);
  if (k->fail_first > 0) {
    k->fail_first--;
    status = 500;
  } else {
    json_t *env = q->data ? json_loads(q->data, 0, NULL) : NULL;
    if (!ct || strncmp(ct, "application/json", 16) != 0)
      k->bad_type++;
    json_array_append_new(k->messages, env ? env : json_null());
  }
  pthread_mutex_unlock(&k->mu);
  resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  ret = MHD_queue_response(conn, status, resp);
  MHD_destroy_response(resp);
  return ret;
}

static void sink_done(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
  struct sink_req *q = *con_cls;

  (void)cls;
  (void)conn;
  (void)toe;
  if (q)
    free(q->data);
  free(q);
  *con_cls = NULL;
}

/* States pushed for JobName name, in order, joined by spaces. */
static void pushed_states(struct sink *k, const char *name, char *out,
                          size_t len)
{
  json_t *m;
  size_t i, used = 0;

  out[0] = '\0';
  pthread_mutex_lock(&k->mu);
  json_array_foreach (k->messages, i, m) {
    json_t *a = json_object_get(json_object_get(m, "message"), "attributes");
    if (h_str(a, "JobName") && !strcmp(h_str(a, "JobName"), name) && used < len)
      used += (size_t)snprintf(out + used, len - used, "%s%s", used ? " " : "",
                               h_str(a, "NewJobState"));
  }
  pthread_mutex_unlock(&k->mu);
}

START_TEST(push_notifications_on_every_state_change)
{
  struct sink k = {PTHREAD_MUTEX_INITIALIZER, json_array(), 1, 0};
  struct MHD_Daemon *d = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL,
      NULL, sink_handler, &k, MHD_OPTION_NOTIFY_COMPLETED, sink_done, NULL,
      MHD_OPTION_END);
  const union MHD_DaemonInfo *info;
  char push_env[128], states[512], uid[128];
  const char *env[] = {push_env, "EMU_RUN_MS=200", NULL};
  const char *name = "projects/test-project/locations/us-central1/jobs/"
                     "gpugate-9-a1";
  struct h_server s;
  char *tok, *body;
  json_t *job, *m, *msg, *attrs;
  long long end;

  ck_assert_ptr_nonnull(d);
  info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  snprintf(push_env, sizeof(push_env),
           "EMU_PUSH_URL=http://127.0.0.1:%u/push?token=s3cret", info->port);
  emu_start(&s, env);
  tok = metadata_token(&s);
  body = job_body("SPOT", 1, 1, "ml", "");
  job = create(&s, tok, "us-central1", "gpugate-9-a1", body, 200);
  snprintf(uid, sizeof(uid), "%s", h_str(job, "uid"));
  json_decref(job);
  ck_assert(
      wait_state(&s, tok, "us-central1", "gpugate-9-a1", "SUCCEEDED", 30000));
  /* the first delivery was refused with 500 and is retried in order */
  end = h_now_ms() + 30000;
  do {
    pushed_states(&k, name, states, sizeof(states));
    if (!strcmp(states, "QUEUED SCHEDULED RUNNING SUCCEEDED"))
      break;
    h_sleep_ms(20);
  } while (h_now_ms() < end);
  ck_assert_str_eq(states, "QUEUED SCHEDULED RUNNING SUCCEEDED");

  pthread_mutex_lock(&k.mu);
  ck_assert_int_eq(k.bad_type, 0);
  m = json_array_get(k.messages, 0);
  msg = json_object_get(m, "message");
  attrs = json_object_get(msg, "attributes");
  ck_assert_str_eq(h_str(attrs, "Type"), "JOB_STATE_CHANGED");
  ck_assert_str_eq(h_str(attrs, "JobUID"), uid);
  ck_assert_ptr_nonnull(h_str(attrs, "Origin"));
  ck_assert_str_eq(h_str(msg, "data"), "e30=");
  ck_assert_ptr_nonnull(h_str(msg, "messageId"));
  ck_assert_ptr_nonnull(h_str(msg, "publishTime"));
  ck_assert_str_eq(h_str(m, "subscription"),
                   "projects/test-project/subscriptions/gpugate");
  pthread_mutex_unlock(&k.mu);

  h_server_stop(&s);
  MHD_stop_daemon(d);
  json_decref(k.messages);
  free(body);
  free(tok);
}
END_TEST

START_TEST(healthz_and_unknown_routes)
{
  struct h_server s;
  struct h_resp r;
  char allow[64];
  json_t *h;

  emu_start(&s, NULL);
  h = h_call(&s, "GET", "/emulator/healthz", NULL, NULL, 200);
  ck_assert_str_eq(h_str(h, "status"), "ok");
  json_decref(h);
  expect_status(
      h_call(&s, "GET", "/v1/projects/test-project/nothing", NULL, NULL, 404),
      404, "NOT_FOUND");
  ck_assert_int_eq(
      h_request(&s, "PUT", "/emulator/faults", NULL, "{}", NULL, &r), 0);
  ck_assert_int_eq(r.status, 405);
  ck_assert_str_eq(h_header(&r, "Allow", allow, sizeof(allow)),
                   "GET, POST, DELETE");
  h_resp_free(&r);
  h_server_stop(&s);
}
END_TEST

Suite *emulator_suite(void)
{
  Suite *s = suite_create("emulator");
  TCase *tc = tcase_create("emulator");

  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, healthz_and_unknown_routes);
  tcase_add_test(tc, tokens_metadata_and_jwt_bearer);
  tcase_add_test(tc, tokens_expire_and_can_be_revoked);
  tcase_add_test(tc, auth_can_be_turned_off);
  tcase_add_test(tc, create_get_and_errors);
  tcase_add_test(tc, list_filters_and_pages);
  tcase_add_test(tc, cancel_and_delete_operations);
  tcase_add_test(tc, lifecycle_with_capacity);
  tcase_add_test(tc, flex_start_waits_and_zero_capacity_never_schedules);
  tcase_add_test(tc, faults_at_the_configured_rate);
  tcase_add_test(tc, failed_creates_leave_no_job);
  tcase_add_test(tc, requests_are_recorded_without_tokens);
  tcase_add_test(tc, jobs_can_disappear);
  tcase_add_test(tc, push_notifications_on_every_state_change);
  suite_add_tcase(s, tc);
  return s;
}
