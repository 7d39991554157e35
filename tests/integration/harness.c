/*
 * harness.c — processes, databases and HTTP for the integration tests.
 */
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "identity/auth.h"
#include "server/config.h"
#include "tests/integration/harness.h"

extern char **environ;

#define MAX_ENV 256

void h_sleep_ms(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

  nanosleep(&ts, NULL);
}

long long h_now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

unsigned h_next_rand(unsigned *s)
{
  unsigned x = *s;

  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *s = x;
}

const char *h_str(const json_t *o, const char *k)
{
  return json_string_value(json_object_get(o, k));
}

char *h_slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t got = 0;
  long n;

  if (!f)
    return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
      fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
    got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
  }
  fclose(f);
  if (len)
    *len = got;
  return buf;
}

/* environ plus overrides (NAME=value), as a new NULL-ended array. */
static char **build_env(const char *const *extra)
{
  char **env = calloc(MAX_ENV + 1, sizeof(char *));
  size_t n = 0, i, j;

  if (!env)
    return NULL;
  for (i = 0; environ[i] && n < MAX_ENV / 2; i++) {
    int overridden = 0;
    size_t klen = strcspn(environ[i], "=");
    /* the tests own every GPUGATE_ variable */
    if (!strncmp(environ[i], "GPUGATE_", 8) &&
        strncmp(environ[i], "GPUGATE_TEST_", 13) != 0)
      continue;
    for (j = 0; extra && extra[j]; j++)
      overridden |= !strncmp(extra[j], environ[i], klen + 1);
    if (!overridden)
      env[n++] = environ[i];
  }
  for (j = 0; extra && extra[j] && n < MAX_ENV; j++)
    env[n++] = (char *)extra[j];
  env[n] = NULL;
  return env;
}

static int spawn(const char *const *argv, const char *const *extra_env,
                 const char *out_path, pid_t *pid)
{
  posix_spawn_file_actions_t fa;
  char **env = build_env(extra_env);
  int rc;

  if (!env)
    return -1;
  posix_spawn_file_actions_init(&fa);
  if (out_path) {
    posix_spawn_file_actions_addopen(&fa, 1, out_path,
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  }
  rc = posix_spawn(pid, argv[0], &fa, NULL, (char *const *)argv, env);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  return rc == 0 ? 0 : -1;
}

static int wait_exit(pid_t pid, long timeout_ms)
{
  long waited = 0;
  int st;

  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid)
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (r < 0)
      return -1;
    if (timeout_ms >= 0 && waited >= timeout_ms)
      return -2;
    h_sleep_ms(20);
    waited += 20;
  }
}

static void quiet(void *arg, const char *message)
{
  (void)arg;
  (void)message;
}

int h_db_create(const char *name, char *url, size_t urllen)
{
  const char *base = getenv("GPUGATE_TEST_PG_URI");
  char sql[256];
  PGconn *pg;
  PGresult *res;
  size_t blen;
  const char *slash;

  if (!base) {
    fprintf(stderr, "harness: GPUGATE_TEST_PG_URI is not set (run via "
                    "tests/run.sh)\n");
    return -1;
  }
  pg = PQconnectdb(base);
  if (PQstatus(pg) != CONNECTION_OK) {
    fprintf(stderr, "harness: %s", PQerrorMessage(pg));
    PQfinish(pg);
    return -1;
  }
  PQsetNoticeProcessor(pg, quiet, NULL);
  snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS \"%s\" WITH (FORCE)",
           name);
  PQclear(PQexec(pg, sql));
  snprintf(sql, sizeof(sql), "CREATE DATABASE \"%s\"", name);
  res = PQexec(pg, sql);
  if (PQresultStatus(res) != PGRES_COMMAND_OK) {
    fprintf(stderr, "harness: %s", PQresultErrorMessage(res));
    PQclear(res);
    PQfinish(pg);
    return -1;
  }
  PQclear(res);
  PQfinish(pg);
  /* replace the database part of the URI */
  slash = strrchr(base, '/');
  blen = slash ? (size_t)(slash - base) : strlen(base);
  snprintf(url, urllen, "%.*s/%s", (int)blen, base, name);
  return 0;
}

void h_db_apply(const char *name, const char *config, char *url, size_t urllen)
{
  const char *args[] = {"apply", config, NULL};
  char out[4096];

  ck_assert_msg(h_db_create(name, url, urllen) == 0, "database %s", name);
  ck_assert_msg(h_gpugate(url, args, out, sizeof(out)) == 0, "apply %s: %s",
                config, out);
}

static void test_env(char store[][600], const char *db_url)
{
  snprintf(store[0], 600, "GPUGATE_DATABASE_URL=%s", db_url);
  snprintf(store[1], 600, "GPUGATE_JWT_HS256_SECRET_FILE=%s", H_SECRET_FILE);
  snprintf(store[2], 600, "GPUGATE_LOG_LEVEL=%s",
           getenv("GPUGATE_TEST_LOG_LEVEL") ? getenv("GPUGATE_TEST_LOG_LEVEL")
                                            : "info");
}

/* Spawn argv with env into a fresh temp dir and wait for its port file. */
static int start_process(struct h_server *s, const char *const *argv,
                         const char *const *env, const char *what)
{
  char port_file[300];
  long waited;

  if (spawn(argv, env, s->log, &s->pid) != 0)
    return -1;
  snprintf(port_file, sizeof(port_file), "%s/port", s->dir);
  for (waited = 0; waited < 20000; waited += 50) {
    FILE *f = fopen(port_file, "r");
    unsigned port = 0;
    if (f) {
      if (fscanf(f, "%u", &port) != 1)
        port = 0;
      fclose(f);
    }
    if (port) {
      s->port = (unsigned short)port;
      return 0;
    }
    if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
      fprintf(stderr, "harness: %s exited; see %s\n", what, s->log);
      s->pid = 0;
      return -1;
    }
    h_sleep_ms(50);
  }
  fprintf(stderr, "harness: %s did not start; see %s\n", what, s->log);
  h_server_stop(s);
  return -1;
}

const char *h_tmp_base(void)
{
  const char *d = getenv("GPUGATE_TEST_TMPDIR");

  return d && *d ? d : "/tmp";
}

static int make_dir(struct h_server *s, const char *log)
{
  char tmpl[sizeof(s->dir)];

  memset(s, 0, sizeof(*s));
  snprintf(tmpl, sizeof(tmpl), "%s/gpugate-it-XXXXXX", h_tmp_base());
  if (!mkdtemp(tmpl))
    return -1;
  snprintf(s->dir, sizeof(s->dir), "%s", tmpl);
  snprintf(s->log, sizeof(s->log), "%s/%s", s->dir, log);
  return 0;
}

int h_server_start(struct h_server *s, const char *db_url,
                   const char *const *extra_env)
{
  char store[4][600];
  const char *env[64];
  const char *argv[] = {"build/gpugate", "serve", NULL};
  size_t n = 0, i;
  bool listen_given = false;

  if (make_dir(s, "server.log") != 0)
    return -1;
  snprintf(s->db_url, sizeof(s->db_url), "%s", db_url);
  test_env(store, db_url);
  snprintf(store[3], 600, "GPUGATE_PORT_FILE=%s/port", s->dir);
  for (i = 0; extra_env && extra_env[i]; i++)
    listen_given |= !strncmp(extra_env[i], "GPUGATE_LISTEN=", 15);
  for (i = 0; i < 4; i++)
    env[n++] = store[i];
  if (!listen_given) /* the first of a name is the one getenv() finds */
    env[n++] = "GPUGATE_LISTEN=127.0.0.1:0";
  env[n++] = "GPUGATE_HTTP_THREADS=4";
  for (i = 0; extra_env && extra_env[i] && n < 62; i++)
    env[n++] = extra_env[i];
  env[n] = NULL;
  return start_process(s, argv, env, "gpugate");
}

int h_emulator_start(struct h_server *emu, const char *const *extra_env)
{
  char port_file[600];
  const char *env[64];
  const char *argv[] = {"build/batch_emulator", NULL};
  size_t n = 0, i;

  if (make_dir(emu, "emulator.log") != 0)
    return -1;
  snprintf(port_file, sizeof(port_file), "EMU_PORT_FILE=%s/port", emu->dir);
  env[n++] = port_file;
  env[n++] = "EMU_LISTEN=127.0.0.1:0";
  env[n++] = "EMU_EXIT_WITH_PARENT=true";
  for (i = 0; extra_env && extra_env[i] && n < 62; i++)
    env[n++] = extra_env[i];
  env[n] = NULL;
  return start_process(emu, argv, env, "batch_emulator");
}

int h_bq_emulator_start(struct h_server *emu, const char *const *extra_env)
{
  char port_file[600];
  const char *env[64];
  const char *argv[] = {"build/bigquery_emulator", NULL};
  size_t n = 0, i;

  if (make_dir(emu, "bigquery_emulator.log") != 0)
    return -1;
  snprintf(port_file, sizeof(port_file), "BQ_EMU_PORT_FILE=%s/port", emu->dir);
  env[n++] = port_file;
  env[n++] = "BQ_EMU_LISTEN=127.0.0.1:0";
  for (i = 0; extra_env && extra_env[i] && n < 62; i++)
    env[n++] = extra_env[i];
  env[n] = NULL;
  return start_process(emu, argv, env, "bigquery_emulator");
}

int h_log_emulator_start(struct h_server *emu, const char *const *extra_env)
{
  char port_file[600];
  const char *env[64];
  const char *argv[] = {"build/logging_emulator", NULL};
  size_t n = 0, i;

  if (make_dir(emu, "logging_emulator.log") != 0)
    return -1;
  snprintf(port_file, sizeof(port_file), "LOG_EMU_PORT_FILE=%s/port", emu->dir);
  env[n++] = port_file;
  env[n++] = "LOG_EMU_LISTEN=127.0.0.1:0";
  for (i = 0; extra_env && extra_env[i] && n < 62; i++)
    env[n++] = extra_env[i];
  env[n] = NULL;
  return start_process(emu, argv, env, "logging_emulator");
}

void h_gcp_env(const struct h_server *emu, char store[H_GCP_ENV][128])
{
  snprintf(store[0], 128, "GPUGATE_BATCH_BACKEND=gcp");
  snprintf(store[1], 128, "GPUGATE_GCP_PROJECT=test-project");
  snprintf(store[2], 128, "GPUGATE_BATCH_ENDPOINT=http://127.0.0.1:%u",
           emu->port);
  snprintf(store[3], 128, "GCE_METADATA_HOST=127.0.0.1:%u", emu->port);
}

void h_server_stop(struct h_server *s)
{
  if (s->pid <= 0)
    return;
  kill(s->pid, SIGTERM);
  if (wait_exit(s->pid, 10000) == -2) {
    kill(s->pid, SIGKILL);
    wait_exit(s->pid, -1);
  }
  s->pid = 0;
}

/* 'Z' or gone: the process no longer runs. */
static bool proc_dead(pid_t pid)
{
  char path[64], stat[512];
  FILE *f;
  size_t n;
  const char *paren;

  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  f = fopen(path, "r");
  if (!f)
    return true;
  n = fread(stat, 1, sizeof(stat) - 1, f);
  fclose(f);
  stat[n] = '\0';
  paren = strrchr(stat, ')');
  return !paren || paren[1] == '\0' || paren[2] == 'Z' || paren[2] == 'X';
}

int h_server_kill(struct h_server *s, int sig)
{
  long waited;

  if (s->pid <= 0)
    return -1;
  if (kill(s->pid, sig) != 0)
    return -1;
  for (waited = 0; waited < 10000; waited += 10) {
    int st;
    pid_t r = waitpid(s->pid, &st, WNOHANG);
    if (r == s->pid) {
      s->pid = 0;
      return 0;
    }
    if (r < 0 && errno == ECHILD && proc_dead(s->pid))
      return 0; /* not ours to reap: the parent does in h_server_stop() */
    h_sleep_ms(10);
  }
  return -1;
}

size_t h_curl_write(char *p, size_t size, size_t n, void *ud)
{
  struct h_buf *b = ud;
  size_t len = size * n;

  if (b->len + len + 1 > b->cap) {
    size_t cap = (b->len + len + 1) * 2;
    char *d = realloc(b->data, cap);
    if (!d)
      return 0;
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, len);
  b->len += len;
  b->data[b->len] = '\0';
  return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
  struct h_resp *r = ud;
  size_t len = size * n, used = strlen(r->headers);

  if (used + len + 1 < sizeof(r->headers)) {
    memcpy(r->headers + used, p, len);
    r->headers[used + len] = '\0';
  }
  return len;
}

/*
 * The request behind h_request() and h_request_raw(): a body of len bytes
 * goes out when body is set or always_body (then "" when body is NULL),
 * with Content-Type: application/json unless headers name one.
 */
static int request(const struct h_server *s, const char *method,
                   const char *path, const char *token, const void *body,
                   size_t len, bool always_body, long timeout_s,
                   const char *const *headers, struct h_resp *out)
{
  CURL *c = curl_easy_init();
  struct curl_slist *hl = NULL;
  struct h_buf b = {NULL, 0, 0};
  char url[2048], auth[AUTH_MAX_TOKEN + 64];
  int has_ct = 0, i;
  CURLcode rc;

  memset(out, 0, sizeof(*out));
  if (!c)
    return -1;
  snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", s->port, path);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, h_curl_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
  if (!strcmp(method, "HEAD"))
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (token) {
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
    hl = curl_slist_append(hl, auth);
  }
  for (i = 0; headers && headers[i]; i++) {
    has_ct |= !strncasecmp(headers[i], "Content-Type:", 13);
    hl = curl_slist_append(hl, headers[i]);
  }
  if (body || always_body) {
    if (!has_ct)
      hl = curl_slist_append(hl, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                     (curl_off_t)(body ? len : 0));
  }
  hl = curl_slist_append(hl, "Expect:");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  rc = curl_easy_perform(c);
  if (rc == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
  curl_slist_free_all(hl);
  curl_easy_cleanup(c);
  out->body = b.data ? b.data : strdup("");
  out->body_len = b.len;
  if (out->body_len)
    out->json = json_loads(out->body, JSON_REJECT_DUPLICATES, NULL);
  return rc == CURLE_OK ? 0 : -1;
}

int h_request(const struct h_server *s, const char *method, const char *path,
              const char *token, const char *body, const char *const *headers,
              struct h_resp *out)
{
  return request(s, method, path, token, body, body ? strlen(body) : 0, false,
                 30L, headers, out);
}

int h_request_raw(const struct h_server *s, const char *method,
                  const char *path, const char *token, const void *body,
                  size_t len, const char *const *headers, struct h_resp *out)
{
  return request(s, method, path, token, body, len, true, 120L, headers, out);
}

const char *h_header(const struct h_resp *r, const char *name, char *buf,
                     size_t buflen)
{
  const char *p = r->headers;
  size_t nlen = strlen(name);

  while (*p) {
    const char *eol = strstr(p, "\r\n");
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    if (len > nlen && !strncasecmp(p, name, nlen) && p[nlen] == ':') {
      const char *v = p + nlen + 1;
      size_t vlen;
      while (*v == ' ')
        v++;
      vlen = len - (size_t)(v - p);
      snprintf(buf, buflen, "%.*s", (int)vlen, v);
      return buf;
    }
    if (!eol)
      break;
    p = eol + 2;
  }
  return NULL;
}

void h_resp_free(struct h_resp *r)
{
  free(r->body);
  json_decref(r->json);
  memset(r, 0, sizeof(*r));
}

char *h_token(const char *team, const char *role, long ttl_s)
{
  struct identity_config cfg;
  char err[256], *tok;
  size_t len;
  unsigned char *secret = (unsigned char *)file_read(H_SECRET_FILE, 4096, &len);

  if (!secret)
    return NULL;
  memset(&cfg, 0, sizeof(cfg));
  snprintf(cfg.jwt_issuer, sizeof(cfg.jwt_issuer), "gpugate");
  snprintf(cfg.jwt_audience, sizeof(cfg.jwt_audience), "gpugate");
  cfg.jwt_max_lifetime_s = 86400;
  tok = auth_mint(&cfg, "HS256", secret, len, NULL, team, role, ttl_s,
                  time(NULL), err, sizeof(err));
  if (!tok)
    fprintf(stderr, "harness: auth_mint: %s\n", err);
  free(secret);
  return tok;
}

int h_run(const char *const *argv, const char *const *extra_env,
          long timeout_ms, const char *log, char *out, size_t outlen)
{
  char tmp[] = "/tmp/gpugate-run-XXXXXX";
  const char *path = log;
  int st;
  pid_t pid;

  if (out && outlen)
    out[0] = '\0';
  if (!log) {
    int fd = mkstemp(tmp);
    if (fd < 0)
      return -1;
    close(fd);
    path = tmp;
  }
  st =
      spawn(argv, extra_env, path, &pid) == 0 ? wait_exit(pid, timeout_ms) : -1;
  if (st != -1 && out && outlen) {
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(out, 1, outlen - 1, f) : 0;
    out[n] = '\0';
    if (f)
      fclose(f);
  }
  if (!log)
    unlink(path);
  return st;
}

int h_gpugate(const char *db_url, const char *const *args, char *out,
              size_t outlen)
{
  char store[4][600];
  const char *env[] = {store[0], store[1], store[2], NULL};
  const char *argv[16];
  int i;

  test_env(store, db_url);
  argv[0] = "build/gpugate";
  for (i = 0; args[i] && i < 14; i++)
    argv[i + 1] = args[i];
  argv[i + 1] = NULL;
  return h_run(argv, env, 60000, NULL, out, outlen);
}

/* tests/pg.sh cmd dir; the URI it prints (the line that starts with
 * postgresql://) goes to uri (may be NULL). Returns its exit status. */
static int pg_sh(const char *cmd, const char *dir, char *uri, size_t urilen)
{
  const char *argv[] = {"tests/pg.sh", cmd, dir, NULL};
  char out[8192];
  const char *line, *next;
  int st = h_run(argv, NULL, 120000, NULL, out, sizeof(out));

  if (!uri || !urilen)
    return st;
  uri[0] = '\0';
  for (line = out; *line; line = next) {
    size_t len = strcspn(line, "\n");
    next = line + len + (line[len] == '\n');
    if (!strncmp(line, "postgresql://", 13))
      snprintf(uri, urilen, "%.*s", (int)len, line);
  }
  return st;
}

int h_pg_start(const char *dir, char *uri, size_t urilen)
{
  return pg_sh("start", dir, uri, urilen) == 0 && uri[0] ? 0 : -1;
}

int h_pg_stop(const char *dir)
{
  return pg_sh("stop", dir, NULL, 0);
}

bool h_is_problem(const struct h_resp *r, long status, const char *field)
{
  char ct[128];
  json_t *e;
  size_t i;

  if (r->status != status || !r->json)
    return false;
  if (!h_header(r, "Content-Type", ct, sizeof(ct)) ||
      strcmp(ct, "application/problem+json") != 0)
    return false;
  if (json_integer_value(json_object_get(r->json, "status")) != status ||
      !json_is_string(json_object_get(r->json, "type")) ||
      !json_is_string(json_object_get(r->json, "title")) ||
      !json_is_string(json_object_get(r->json, "detail")))
    return false;
  if (!field)
    return true;
  json_array_foreach (json_object_get(r->json, "errors"), i, e) {
    const char *f = json_string_value(json_object_get(e, "field"));
    if (f && !strcmp(f, field))
      return true;
  }
  return false;
}

json_t *h_call(const struct h_server *s, const char *method, const char *path,
               const char *token, const char *body, long want)
{
  struct h_resp r;
  json_t *j;

  ck_assert_msg(h_request(s, method, path, token, body, NULL, &r) == 0,
                "%s %s: no response", method, path);
  ck_assert_msg(r.status == want, "%s %s: %ld (want %ld) %s", method, path,
                r.status, want, r.body);
  j = json_incref(r.json);
  h_resp_free(&r);
  return j;
}

json_t *h_emu_get(const struct h_server *emu, const char *path)
{
  json_t *j = h_call(emu, "GET", path, NULL, NULL, 200);

  ck_assert_msg(j != NULL, "GET %s: no JSON body", path);
  return j;
}

void h_submit_typical(const struct h_server *s, const char *team,
                      const char *token, const char *queue, const char *name,
                      const char *klass, char id[32])
{
  char path[128], body[512];
  struct h_resp r;

  snprintf(path, sizeof(path), "/v1/teams/%s/jobs", team);
  snprintf(body, sizeof(body),
           "{\"name\": \"%s\", \"queue\": \"%s\", \"priority_class\": "
           "\"%s\", \"task_count\": 2, \"task\": {\"image\": "
           "\"us-docker.pkg.dev/p/r/trainer:1.2\", \"commands\": "
           "[\"python\", \"train.py\"], \"cpu_milli\": 2000, \"memory_mib\": "
           "10240, \"gpu\": 2}}",
           name, queue, klass);
  ck_assert_int_eq(h_request(s, "POST", path, token, body, NULL, &r), 0);
  ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
  if (id)
    snprintf(id, 32, "%s", h_str(r.json, "id"));
  h_resp_free(&r);
}

void h_write_temp(const char *what, const char *text, char *path,
                  size_t pathlen)
{
  FILE *f;
  int fd;

  snprintf(path, pathlen, "/tmp/gpugate-%s-XXXXXX", what);
  fd = mkstemp(path);
  ck_assert_msg(fd >= 0, "mkstemp %s: %s", path, strerror(errno));
  f = fdopen(fd, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_ge(fputs(text, f), 0);
  ck_assert_int_eq(fclose(f), 0);
}

long h_drift_total(const struct h_server *s)
{
  struct h_resp r;
  double v;

  ck_assert_int_eq(h_request(s, "GET", "/metrics", NULL, NULL, NULL, &r), 0);
  ck_assert_int_eq(r.status, 200);
  v = h_sample(r.body, "gpugate_admission_state_drift_total");
  h_resp_free(&r);
  return (long)v;
}

double h_sample(const char *text, const char *series)
{
  const char *p = text;
  size_t len = strlen(series);

  while ((p = strstr(p, series)) != NULL) {
    if ((p == text || p[-1] == '\n') && p[len] == ' ')
      return strtod(p + len + 1, NULL);
    p++;
  }
  return -1;
}

int h_log_count(const struct h_server *s, const char *needle)
{
  char *text = h_slurp(s->log, NULL);
  const char *p;
  int n = 0;

  for (p = text; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n++;
  free(text);
  return n;
}

PGconn *h_db_connect(const char *url)
{
  PGconn *pg = PQconnectdb(url);

  if (PQstatus(pg) == CONNECTION_OK)
    PQclear(PQexec(pg, "SET jit = off"));
  return pg;
}

long long h_db_int(PGconn *pg, const char *sql)
{
  PGresult *res = PQexec(pg, sql);
  long long v;

  ck_assert_msg(PQresultStatus(res) == PGRES_TUPLES_OK, "%s: %s", sql,
                PQresultErrorMessage(res));
  v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
  PQclear(res);
  return v;
}

void h_db_state_summary(PGconn *pg, char *out, size_t outlen)
{
  PGresult *res = PQexec(pg, "SELECT state, count(*) FROM jobs GROUP BY 1 "
                             "ORDER BY 1");
  size_t used = 0;
  int i;

  out[0] = '\0';
  for (i = 0; PQresultStatus(res) == PGRES_TUPLES_OK && i < PQntuples(res);
       i++) {
    int n = snprintf(out + used, outlen - used, "%s%s=%s", i ? " " : "",
                     PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
    if (n < 0 || (size_t)n >= outlen - used)
      break;
    used += (size_t)n;
  }
  PQclear(res);
}

int h_db_violations(PGconn *pg, const char *stmt, char *first, size_t len)
{
  PGresult *res = stmt ? PQexecPrepared(pg, stmt, 0, NULL, NULL, NULL, 0)
                       : PQexec(pg, h_sql_quota_violations);
  int n;

  if (PQresultStatus(res) != PGRES_TUPLES_OK) {
    snprintf(first, len, "query failed: %s", PQresultErrorMessage(res));
    PQclear(res);
    return -1;
  }
  n = PQntuples(res);
  if (n > 0)
    snprintf(first, len, "%s", PQgetvalue(res, 0, 0));
  PQclear(res);
  return n;
}

#define HOLDING "('ADMITTED', 'QUEUED', 'RUNNING', 'EVICTING')"

/* The quota invariants, one row per violation, in one statement (one
 * snapshot). */
const char h_sql_quota_violations[] =
    "WITH usage AS ("
    "  SELECT j.cluster_queue cq, j.flavor, x.res, sum(x.amt) used"
    "  FROM jobs j CROSS JOIN LATERAL (VALUES ('gpu', j.gpu), "
    "    ('cpu_milli', j.cpu_milli), ('memory_mib', j.memory_mib)) x(res, amt)"
    "  WHERE j.state IN " HOLDING " AND j.flavor IS NOT NULL"
    "  GROUP BY 1, 2, 3), "
    "quota AS ("
    "  SELECT c.name cq, c.cohort, f->>'name' flavor, r.key res,"
    "    (r.value->>'nominal')::bigint nominal,"
    "    (r.value->>'borrowing_limit')::bigint bl"
    "  FROM cluster_queues c"
    "  CROSS JOIN LATERAL json_array_elements(c.spec->'flavors') f"
    "  CROSS JOIN LATERAL json_each(f->'resources') r) "
    "SELECT format('cluster queue %s, flavor %s, %s: usage %s > nominal %s + "
    "borrowing_limit %s', u.cq, u.flavor, u.res, u.used, q.nominal, q.bl)"
    "  FROM usage u JOIN quota q USING (cq, flavor, res)"
    "  WHERE q.bl IS NOT NULL AND u.used > q.nominal + q.bl "
    "UNION ALL "
    "SELECT format('cluster queue %s (no cohort), flavor %s, %s: usage %s > "
    "nominal %s', u.cq, u.flavor, u.res, u.used, q.nominal)"
    "  FROM usage u JOIN quota q USING (cq, flavor, res)"
    "  WHERE q.cohort IS NULL AND u.used > q.nominal "
    "UNION ALL "
    "SELECT format('cluster queue %s uses %s %s of flavor %s, which it has no "
    "quota for', u.cq, u.used, u.res, u.flavor)"
    "  FROM usage u LEFT JOIN quota q USING (cq, flavor, res)"
    "  WHERE q.cq IS NULL AND u.used > 0 "
    "UNION ALL "
    "SELECT format('cohort %s, flavor %s, %s: usage %s > total nominal %s',"
    "  cohort, flavor, res, used, nominal) FROM ("
    "  SELECT q.cohort, q.flavor, q.res, sum(coalesce(u.used, 0)) used,"
    "    sum(q.nominal) nominal"
    "  FROM quota q LEFT JOIN usage u USING (cq, flavor, res)"
    "  WHERE q.cohort IS NOT NULL GROUP BY 1, 2, 3) c WHERE used > nominal "
    "UNION ALL "
    "SELECT format('job %s is PENDING with flavor %s', id, flavor) FROM jobs"
    "  WHERE state = 'PENDING' AND flavor IS NOT NULL "
    "UNION ALL "
    "SELECT format('job %s is %s without a flavor', id, state) FROM jobs"
    "  WHERE state IN " HOLDING " AND flavor IS NULL";
#undef HOLDING
