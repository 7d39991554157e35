/*
 * test_config.c — server/config.c (GPUGATE_* environment variables) and
 * server/problem.c (the code → status → problem table and the problem+json
 * builder) as tables of cases.
 *
 * A loaded configuration is compared as one line of "key=value" tokens
 * (describe()): the defaults line exactly, and each good override as that
 * line with the case's tokens replaced, so a case also proves that nothing
 * else moved. A bad value must fail config_load() with a one-line message
 * that names the variable.
 *
 * Every case starts from an environment without GPUGATE_* (and
 * GCE_METADATA_HOST): with CK_FORK=no all cases share one process. Files
 * the cases read are the key fixtures (run from the repository root) and a
 * few written to a temporary directory, named "@file" in the tables.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include "server/config.h"
#include "server/connlimit.h"
#include "server/problem.h"
#include "server/req.h"

Suite *config_suite(void);

extern char **environ;

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define KEYS "tests/fixtures/keys/"

#define X16 "xxxxxxxxxxxxxxxx"
#define X64 X16 X16 X16 X16
#define X256 X64 X64 X64 X64

/* ------------------------------------------------------------ fixtures */

static char tmpdir[64];

/* Files written for the cases; "@name" in a table is tmpdir/name. */
static const struct {
  const char *name;
  const char *text; /* NULL: BIG_SIZE bytes of 'x' */
} tmp_files[] = {
    {"secret-crlf", "0123456789abcdef0123456789abcdef\r\n"},
    {"push-secret", "push-secret\n"},
    {"big", NULL},
};

#define BIG_SIZE (64 * 1024 + 1) /* one byte over the secret limit */

static void tmp_path(char *out, size_t outlen, const char *name)
{
  int w = snprintf(out, outlen, "%s/%s", tmpdir, name);

  ck_assert(w > 0 && (size_t)w < outlen);
}

static void files_setup(void)
{
  char path[128];
  int i;

  snprintf(tmpdir, sizeof(tmpdir), "/tmp/gg-config-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
  for (i = 0; i < N_OF(tmp_files); i++) {
    FILE *f;
    tmp_path(path, sizeof(path), tmp_files[i].name);
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    if (tmp_files[i].text) {
      fputs(tmp_files[i].text, f);
    } else {
      int n;
      for (n = 0; n < BIG_SIZE; n++)
        fputc('x', f);
    }
    ck_assert_int_eq(fclose(f), 0);
  }
}

static void clear_env(void);

/* The temporary files go, and no GPUGATE_* is left behind for the suites
 * after this one (with CK_FORK=no, as the ASan run has it, they share this
 * process's environment). */
static void files_teardown(void)
{
  char path[128];
  int i;

  for (i = 0; i < N_OF(tmp_files); i++) {
    tmp_path(path, sizeof(path), tmp_files[i].name);
    unlink(path);
  }
  rmdir(tmpdir);
  clear_env();
}

/* Remove every GPUGATE_* variable and GCE_METADATA_HOST. */
static void clear_env(void)
{
  char names[64][128];
  int n = 0, i;
  char **e;

  for (e = environ; *e; e++) {
    size_t len = strcspn(*e, "=");
    if ((strncmp(*e, "GPUGATE_", 8) && strncmp(*e, "GCE_METADATA_HOST=", 18)) ||
        len >= sizeof(names[0]))
      continue;
    ck_assert_int_lt(n, N_OF(names));
    memcpy(names[n], *e, len);
    names[n++][len] = '\0';
  }
  for (i = 0; i < n; i++)
    ck_assert_int_eq(unsetenv(names[i]), 0);
}

/* Set "NAME=value" ("@file" values name a temporary file). */
static void set_env(const char *assignment)
{
  char name[128], value[4096];
  size_t len = strcspn(assignment, "=");
  const char *v = assignment + len + 1;

  ck_assert(assignment[len] == '=' && len < sizeof(name));
  memcpy(name, assignment, len);
  name[len] = '\0';
  if (*v == '@')
    tmp_path(value, sizeof(value), v + 1);
  else
    snprintf(value, sizeof(value), "%s", v);
  ck_assert_int_eq(setenv(name, value, 1), 0);
}

/* ---------------------------------------------------------- description */

#define CAT(...)                                                               \
  do {                                                                         \
    int w_ = snprintf(out + used, outlen - used, __VA_ARGS__);                 \
    ck_assert(w_ >= 0 && (size_t)w_ < outlen - used);                          \
    used += (size_t)w_;                                                        \
  } while (0)

/* cfg as one line of space-separated key=value tokens. */
static void describe(const struct config *c, char *out, size_t outlen)
{
  size_t used = 0;
  int i;

  out[0] = '\0';
  CAT("listen=%s:%u", c->listen_host, (unsigned)c->listen_port);
  CAT(" db=%s migrate=%d", c->database_url, (int)c->migrate_on_start);
  CAT(" algs=%s%s%s",
      c->identity.jwt_algorithms & CONFIG_ALG_HS256 ? "HS256," : "",
      c->identity.jwt_algorithms & CONFIG_ALG_RS256 ? "RS256," : "",
      c->identity.jwt_algorithms & CONFIG_ALG_ES256 ? "ES256," : "");
  if (c->identity.hs256_secret)
    CAT(" hs=%zu", c->identity.hs256_secret_len);
  else
    CAT(" hs=-");
  CAT(" keys=");
  for (i = 0; i < c->identity.n_pubkeys; i++) {
    ck_assert_uint_eq(strlen(c->identity.pubkeys[i].pem),
                      c->identity.pubkeys[i].pem_len);
    CAT("%s%s:%zu", i ? "," : "",
        *c->identity.pubkeys[i].kid ? c->identity.pubkeys[i].kid : "-",
        c->identity.pubkeys[i].pem_len);
  }
  CAT(" iss=%s aud=%s leeway=%ld maxlife=%ld", c->identity.jwt_issuer,
      c->identity.jwt_audience, c->identity.jwt_leeway_s,
      c->identity.jwt_max_lifetime_s);
  CAT(" backend=%s endpoint=%s project=%s tokens=%s keyfile=%s metadata=%s",
      c->control.batch_backend, c->gcp.batch_endpoint, c->gcp.gcp_project,
      c->gcp.gcp_token_source, c->gcp.gcp_key_file, c->gcp.metadata_host);
  if (c->pubsub_push_secret)
    CAT(" pubsub=%s", c->pubsub_push_secret);
  else
    CAT(" pubsub=-");
  CAT(" admission=%ld sync=%ld origins=", c->control.admission_interval_ms,
      c->control.sync_interval_ms);
  for (i = 0; i < c->n_cors_origins; i++)
    CAT("%s%s", i ? "|" : "", c->cors_origins[i]);
  CAT(" rate=%ld log=%d threads=%d pool=%d timeout=%ld portfile=%s",
      c->rate_limit_rps, c->log_level, c->http_threads, c->db_pool_size,
      c->http_timeout_s, c->port_file);
}

#define DEFAULTS                                                               \
  "listen=127.0.0.1:8080 db=postgresql:///gpugate migrate=1 algs=HS256, "      \
  "hs=- keys= iss=gpugate aud=gpugate leeway=60 maxlife=86400 "                \
  "backend=none endpoint=https://batch.googleapis.com project= "               \
  "tokens=metadata keyfile= metadata=metadata.google.internal pubsub=- "       \
  "admission=1000 sync=10000 origins= rate=200 log=1 threads=8 pool=8 "        \
  "timeout=30 portfile="

/*
 * The defaults line with each "key=value" token of changes replacing the
 * token of the same key.
 */
static void expected_line(const char *changes, char *out, size_t outlen)
{
  char base[2048], *tok, *save = NULL;
  size_t used = 0;

  snprintf(base, sizeof(base), "%s", DEFAULTS);
  out[0] = '\0';
  for (tok = strtok_r(base, " ", &save); tok;
       tok = strtok_r(NULL, " ", &save)) {
    size_t klen = strcspn(tok, "=") + 1;
    const char *c = changes, *hit = NULL;
    while (*c) {
      size_t n = strcspn(c, " ");
      if (n >= klen && !strncmp(c, tok, klen))
        hit = c;
      c += n;
      c += *c == ' ';
    }
    if (hit)
      CAT("%s%.*s", used ? " " : "", (int)strcspn(hit, " "), hit);
    else
      CAT("%s%s", used ? " " : "", tok);
  }
}

/* --------------------------------------------------------------- config */

START_TEST(defaults)
{
  struct config cfg;
  char err[256] = "", line[2048];

  clear_env();
  ck_assert_msg(config_load(&cfg, err, sizeof(err)) == 0, "%s", err);
  describe(&cfg, line, sizeof(line));
  ck_assert_str_eq(line, DEFAULTS);
  config_free(&cfg);
}
END_TEST

/* Set-but-empty is the same as unset, for every variable. */
START_TEST(empty_is_default)
{
  static const char *const vars[] = {"GPUGATE_LISTEN",
                                     "GPUGATE_DATABASE_URL",
                                     "GPUGATE_MIGRATE_ON_START",
                                     "GPUGATE_JWT_ALGORITHMS",
                                     "GPUGATE_JWT_HS256_SECRET_FILE",
                                     "GPUGATE_JWT_PUBLIC_KEYS",
                                     "GPUGATE_JWT_ISSUER",
                                     "GPUGATE_JWT_AUDIENCE",
                                     "GPUGATE_JWT_LEEWAY_S",
                                     "GPUGATE_JWT_MAX_LIFETIME_S",
                                     "GPUGATE_BATCH_BACKEND",
                                     "GPUGATE_BATCH_ENDPOINT",
                                     "GPUGATE_GCP_PROJECT",
                                     "GPUGATE_GCP_TOKEN_SOURCE",
                                     "GPUGATE_GCP_KEY_FILE",
                                     "GCE_METADATA_HOST",
                                     "GPUGATE_PUBSUB_PUSH_SECRET_FILE",
                                     "GPUGATE_ADMISSION_INTERVAL_MS",
                                     "GPUGATE_SYNC_INTERVAL_MS",
                                     "GPUGATE_CORS_ORIGINS",
                                     "GPUGATE_RATE_LIMIT_RPS",
                                     "GPUGATE_LOG_LEVEL",
                                     "GPUGATE_HTTP_THREADS",
                                     "GPUGATE_DB_POOL_SIZE",
                                     "GPUGATE_HTTP_TIMEOUT_S",
                                     "GPUGATE_PORT_FILE"};
  struct config cfg;
  char err[256] = "", line[2048];
  int i;

  clear_env();
  for (i = 0; i < N_OF(vars); i++)
    ck_assert_int_eq(setenv(vars[i], "", 1), 0);
  ck_assert_msg(config_load(&cfg, err, sizeof(err)) == 0, "%s", err);
  describe(&cfg, line, sizeof(line));
  ck_assert_str_eq(line, DEFAULTS);
  config_free(&cfg);
}
END_TEST

static const struct {
  const char *env[3]; /* "NAME=value" */
  const char *want;   /* tokens that differ from DEFAULTS */
} good_cases[] = {
    {{"GPUGATE_LISTEN=0.0.0.0:9000"}, "listen=0.0.0.0:9000"},
    {{"GPUGATE_LISTEN=localhost:0"}, "listen=localhost:0"},
    {{"GPUGATE_LISTEN=127.0.0.1:65535"}, "listen=127.0.0.1:65535"},
    {{"GPUGATE_LISTEN=[::1]:8080"}, "listen=[::1]:8080"},
    {{"GPUGATE_LISTEN=[::]:0"}, "listen=[::]:0"},
    {{"GPUGATE_DATABASE_URL=postgresql://u@db:5433/gg"},
     "db=postgresql://u@db:5433/gg"},
    {{"GPUGATE_MIGRATE_ON_START=false"}, "migrate=0"},
    {{"GPUGATE_MIGRATE_ON_START=0"}, "migrate=0"},
    {{"GPUGATE_MIGRATE_ON_START=no"}, "migrate=0"},
    {{"GPUGATE_MIGRATE_ON_START=true"}, "migrate=1"},
    {{"GPUGATE_MIGRATE_ON_START=1"}, "migrate=1"},
    {{"GPUGATE_MIGRATE_ON_START=yes"}, "migrate=1"},
    {{"GPUGATE_JWT_ALGORITHMS=RS256"}, "algs=RS256,"},
    {{"GPUGATE_JWT_ALGORITHMS=ES256,RS256"}, "algs=RS256,ES256,"},
    {{"GPUGATE_JWT_ALGORITHMS=HS256,RS256,ES256"}, "algs=HS256,RS256,ES256,"},
    {{"GPUGATE_JWT_ALGORITHMS=RS256,RS256"}, "algs=RS256,"},
    {{"GPUGATE_JWT_ALGORITHMS=ES256,"}, "algs=ES256,"}, /* trailing comma */
    {{"GPUGATE_JWT_HS256_SECRET_FILE=" KEYS "hs256.secret"}, "hs=48"},
    {{"GPUGATE_JWT_HS256_SECRET_FILE=@secret-crlf"}, "hs=32"}, /* chomped */
    {{"GPUGATE_JWT_PUBLIC_KEYS=" KEYS "rsa1.pub.pem"}, "keys=-:451"},
    {{"GPUGATE_JWT_PUBLIC_KEYS=rsa1=" KEYS "rsa1.pub.pem,ec1=" KEYS
      "ec1.pub.pem," KEYS "rsa2.pub.pem"},
     "keys=rsa1:451,ec1:178,-:451"},
    {{"GPUGATE_JWT_ISSUER=https://issuer.example", "GPUGATE_JWT_AUDIENCE=api"},
     "iss=https://issuer.example aud=api"},
    {{"GPUGATE_JWT_LEEWAY_S=0", "GPUGATE_JWT_MAX_LIFETIME_S=60"},
     "leeway=0 maxlife=60"},
    {{"GPUGATE_JWT_LEEWAY_S=3600", "GPUGATE_JWT_MAX_LIFETIME_S=2678400"},
     "leeway=3600 maxlife=2678400"},
    {{"GPUGATE_BATCH_BACKEND=gcp", "GPUGATE_GCP_PROJECT=proj-1"},
     "backend=gcp project=proj-1"},
    {{"GPUGATE_BATCH_BACKEND=none", "GPUGATE_GCP_PROJECT=proj-1"},
     "project=proj-1"},
    {{"GPUGATE_BATCH_ENDPOINT=http://127.0.0.1:9999",
      "GPUGATE_GCP_TOKEN_SOURCE=none"},
     "endpoint=http://127.0.0.1:9999 tokens=none"},
    {{"GPUGATE_GCP_TOKEN_SOURCE=key-file", "GPUGATE_GCP_KEY_FILE=/k.json"},
     "tokens=key-file keyfile=/k.json"},
    {{"GCE_METADATA_HOST=127.0.0.1:8181"}, "metadata=127.0.0.1:8181"},
    {{"GPUGATE_PUBSUB_PUSH_SECRET_FILE=@push-secret"}, "pubsub=push-secret"},
    {{"GPUGATE_ADMISSION_INTERVAL_MS=10", "GPUGATE_SYNC_INTERVAL_MS=100"},
     "admission=10 sync=100"},
    {{"GPUGATE_CORS_ORIGINS=a,b"}, "origins=a|b"},
    {{"GPUGATE_CORS_ORIGINS=*"}, "origins=*"},
    {{"GPUGATE_CORS_ORIGINS=https://x.example"}, "origins=https://x.example"},
    {{"GPUGATE_CORS_ORIGINS=,a,,b,"}, "origins=a|b"}, /* empties skipped */
    {{"GPUGATE_CORS_ORIGINS=" X64 X64 X64 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
     "origins=" X64 X64 X64 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}, /* 255 bytes */
    {{"GPUGATE_RATE_LIMIT_RPS=0"}, "rate=0"},
    {{"GPUGATE_RATE_LIMIT_RPS=1000000"}, "rate=1000000"},
    {{"GPUGATE_LOG_LEVEL=debug"}, "log=0"},
    {{"GPUGATE_LOG_LEVEL=warn"}, "log=2"},
    {{"GPUGATE_LOG_LEVEL=error"}, "log=3"},
    {{"GPUGATE_HTTP_THREADS=4"}, "threads=4 pool=4"}, /* pool follows */
    {{"GPUGATE_HTTP_THREADS=4", "GPUGATE_DB_POOL_SIZE=2"}, "threads=4 pool=2"},
    {{"GPUGATE_HTTP_TIMEOUT_S=3600", "GPUGATE_PORT_FILE=/tmp/port"},
     "timeout=3600 portfile=/tmp/port"},
};

START_TEST(good)
{
  struct config cfg;
  char err[256] = "", line[2048], want[2048];
  int i;

  clear_env();
  for (i = 0; i < 3 && good_cases[_i].env[i]; i++)
    set_env(good_cases[_i].env[i]);
  ck_assert_msg(config_load(&cfg, err, sizeof(err)) == 0, "case %d (%s): %s",
                _i, good_cases[_i].env[0], err);
  describe(&cfg, line, sizeof(line));
  expected_line(good_cases[_i].want, want, sizeof(want));
  ck_assert_msg(!strcmp(line, want), "case %d (%s):\n  got  %s\n  want %s", _i,
                good_cases[_i].env[0], line, want);
  config_free(&cfg);
}
END_TEST

static const struct {
  const char *env[2]; /* "NAME=value" */
  const char *var;    /* the variable the error must name */
} bad_cases[] = {
    {{"GPUGATE_LISTEN=nohost"}, "GPUGATE_LISTEN"},
    {{"GPUGATE_LISTEN=1.2.3.4:99999"}, "GPUGATE_LISTEN"},
    {{"GPUGATE_LISTEN=:80"}, "GPUGATE_LISTEN"},
    {{"GPUGATE_LISTEN=h:"}, "GPUGATE_LISTEN"},
    {{"GPUGATE_LISTEN=h:80x"}, "GPUGATE_LISTEN"},
    {{"GPUGATE_LISTEN=h:-1"}, "GPUGATE_LISTEN"},
    {{"GPUGATE_LISTEN=h:65536"}, "GPUGATE_LISTEN"},
    {{"GPUGATE_LISTEN=h:99999999999999999999"}, "GPUGATE_LISTEN"},
    {{"GPUGATE_LISTEN=" X64 ":80"}, "GPUGATE_LISTEN"}, /* host too long */
    {{"GPUGATE_MIGRATE_ON_START=maybe"}, "GPUGATE_MIGRATE_ON_START"},
    {{"GPUGATE_MIGRATE_ON_START=TRUE"}, "GPUGATE_MIGRATE_ON_START"},
    {{"GPUGATE_JWT_ALGORITHMS=none"}, "GPUGATE_JWT_ALGORITHMS"},
    {{"GPUGATE_JWT_ALGORITHMS=HS512"}, "GPUGATE_JWT_ALGORITHMS"},
    {{"GPUGATE_JWT_ALGORITHMS=hs256"}, "GPUGATE_JWT_ALGORITHMS"},
    {{"GPUGATE_JWT_ALGORITHMS=,"}, "GPUGATE_JWT_ALGORITHMS"}, /* empty list */
    {{"GPUGATE_JWT_ALGORITHMS=HS256,,RS256"}, "GPUGATE_JWT_ALGORITHMS"},
    {{"GPUGATE_JWT_ALGORITHMS=HS256, RS256"}, "GPUGATE_JWT_ALGORITHMS"},
    {{"GPUGATE_JWT_HS256_SECRET_FILE=/nonexistent"},
     "GPUGATE_JWT_HS256_SECRET_FILE"},
    {{"GPUGATE_JWT_HS256_SECRET_FILE=/tmp"}, /* a directory */
     "GPUGATE_JWT_HS256_SECRET_FILE"},
    {{"GPUGATE_JWT_HS256_SECRET_FILE=@big"}, "GPUGATE_JWT_HS256_SECRET_FILE"},
    {{"GPUGATE_JWT_PUBLIC_KEYS=/nonexistent.pem"}, "GPUGATE_JWT_PUBLIC_KEYS"},
    {{"GPUGATE_JWT_PUBLIC_KEYS=k=/nonexistent.pem"}, "GPUGATE_JWT_PUBLIC_KEYS"},
    {{"GPUGATE_JWT_PUBLIC_KEYS==" KEYS "rsa1.pub.pem"}, /* empty kid */
     "GPUGATE_JWT_PUBLIC_KEYS"},
    {{"GPUGATE_JWT_PUBLIC_KEYS=" X64 "=" KEYS "rsa1.pub.pem"}, /* long kid */
     "GPUGATE_JWT_PUBLIC_KEYS"},
    {{"GPUGATE_JWT_PUBLIC_KEYS=" KEYS "rsa1.pub.pem,," KEYS "rsa2.pub.pem"},
     "GPUGATE_JWT_PUBLIC_KEYS"},
    {{"GPUGATE_JWT_PUBLIC_KEYS=" KEYS "ec1.pub.pem," KEYS "ec1.pub.pem," KEYS
      "ec1.pub.pem," KEYS "ec1.pub.pem," KEYS "ec1.pub.pem," KEYS
      "ec1.pub.pem," KEYS "ec1.pub.pem," KEYS "ec1.pub.pem," KEYS
      "ec1.pub.pem"}, /* 9 > CONFIG_MAX_KEYS */
     "GPUGATE_JWT_PUBLIC_KEYS"},
    {{"GPUGATE_JWT_ISSUER=" X256}, "GPUGATE_JWT_ISSUER"},
    {{"GPUGATE_JWT_AUDIENCE=" X256}, "GPUGATE_JWT_AUDIENCE"},
    {{"GPUGATE_JWT_LEEWAY_S=-1"}, "GPUGATE_JWT_LEEWAY_S"},
    {{"GPUGATE_JWT_LEEWAY_S=abc"}, "GPUGATE_JWT_LEEWAY_S"},
    {{"GPUGATE_JWT_LEEWAY_S=60s"}, "GPUGATE_JWT_LEEWAY_S"},
    {{"GPUGATE_JWT_LEEWAY_S=3601"}, "GPUGATE_JWT_LEEWAY_S"},
    {{"GPUGATE_JWT_LEEWAY_S=99999999999999999999"}, "GPUGATE_JWT_LEEWAY_S"},
    {{"GPUGATE_JWT_MAX_LIFETIME_S=59"}, "GPUGATE_JWT_MAX_LIFETIME_S"},
    {{"GPUGATE_BATCH_BACKEND=aws"}, "GPUGATE_BATCH_BACKEND"},
    {{"GPUGATE_BATCH_BACKEND=GCP", "GPUGATE_GCP_PROJECT=p"},
     "GPUGATE_BATCH_BACKEND"},
    {{"GPUGATE_BATCH_BACKEND=gcp"}, "GPUGATE_GCP_PROJECT"},
    {{"GPUGATE_BATCH_ENDPOINT=" X256 X256}, "GPUGATE_BATCH_ENDPOINT"},
    {{"GPUGATE_GCP_TOKEN_SOURCE=x"}, "GPUGATE_GCP_TOKEN_SOURCE"},
    {{"GCE_METADATA_HOST=" X256}, "GCE_METADATA_HOST"},
    {{"GPUGATE_PUBSUB_PUSH_SECRET_FILE=/nonexistent"},
     "GPUGATE_PUBSUB_PUSH_SECRET_FILE"},
    {{"GPUGATE_ADMISSION_INTERVAL_MS=9"}, "GPUGATE_ADMISSION_INTERVAL_MS"},
    {{"GPUGATE_SYNC_INTERVAL_MS=99"}, "GPUGATE_SYNC_INTERVAL_MS"},
    {{"GPUGATE_CORS_ORIGINS=" X256}, "GPUGATE_CORS_ORIGINS"}, /* 256 bytes */
    {{"GPUGATE_CORS_ORIGINS=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"},
     "GPUGATE_CORS_ORIGINS"},
    {{"GPUGATE_RATE_LIMIT_RPS=-5"}, "GPUGATE_RATE_LIMIT_RPS"},
    {{"GPUGATE_RATE_LIMIT_RPS=1000001"}, "GPUGATE_RATE_LIMIT_RPS"},
    {{"GPUGATE_LOG_LEVEL=loud"}, "GPUGATE_LOG_LEVEL"},
    {{"GPUGATE_LOG_LEVEL=INFO"}, "GPUGATE_LOG_LEVEL"},
    {{"GPUGATE_HTTP_THREADS=0"}, "GPUGATE_HTTP_THREADS"},
    {{"GPUGATE_DB_POOL_SIZE=257"}, "GPUGATE_DB_POOL_SIZE"},
    {{"GPUGATE_HTTP_TIMEOUT_S=0"}, "GPUGATE_HTTP_TIMEOUT_S"},
    {{"GPUGATE_PORT_FILE=" X256 X256}, "GPUGATE_PORT_FILE"},
    {{"GPUGATE_OIDC_ISSUERS=idp.example.com", "GPUGATE_OIDC_AUDIENCES=a"},
     "GPUGATE_OIDC_ISSUERS"},
    {{"GPUGATE_OIDC_ISSUERS=https://a,,https://b", "GPUGATE_OIDC_AUDIENCES=a"},
     "GPUGATE_OIDC_ISSUERS"},
    {{"GPUGATE_OIDC_ISSUERS=https://1,https://2,https://3,https://4,https://"
      "5,https://6,https://7,https://8,https://9",
      "GPUGATE_OIDC_AUDIENCES=a"},
     "GPUGATE_OIDC_ISSUERS"},
    {{"GPUGATE_OIDC_ISSUERS=https://idp.example.com"},
     "GPUGATE_OIDC_AUDIENCES"},
    {{"GPUGATE_OIDC_ISSUERS=gpugate", "GPUGATE_OIDC_AUDIENCES=a"},
     "GPUGATE_OIDC_ISSUERS"},
    {{"GPUGATE_OIDC_ISSUERS=http://idp.example.com",
      "GPUGATE_OIDC_AUDIENCES=a"},
     "GPUGATE_OIDC_ISSUERS"}, /* http:// only on loopback */
    {{"GPUGATE_OIDC_ISSUERS=http://127.0.0.1@idp.example.com",
      "GPUGATE_OIDC_AUDIENCES=a"},
     "GPUGATE_OIDC_ISSUERS"},
    {{"GPUGATE_OIDC_MAX_LIFETIME_S=59"}, "GPUGATE_OIDC_MAX_LIFETIME_S"},
    {{"GPUGATE_OIDC_MAX_LIFETIME_S=1d"}, "GPUGATE_OIDC_MAX_LIFETIME_S"},
    {{"GPUGATE_JWT_ISSUER=https://idp.example.com",
      "GPUGATE_OIDC_ISSUERS=https://idp.example.com"},
     "GPUGATE_OIDC_ISSUERS"}, /* gpugate's own issuer */
    {{"GPUGATE_OIDC_ALGS=none"}, "GPUGATE_OIDC_ALGS"},
    {{"GPUGATE_OIDC_ALGS=RS256,HS256"}, "GPUGATE_OIDC_ALGS"},
    {{"GPUGATE_OIDC_ALGS=rs256"}, "GPUGATE_OIDC_ALGS"},
    {{"GPUGATE_OIDC_ALGS=PS256"}, "GPUGATE_OIDC_ALGS"},
    {{"GPUGATE_OIDC_JWKS_COOLDOWN_S=0"}, "GPUGATE_OIDC_JWKS_COOLDOWN_S"},
    {{"GPUGATE_OIDC_JWKS_COOLDOWN_S=30s"}, "GPUGATE_OIDC_JWKS_COOLDOWN_S"},
    {{"GPUGATE_OIDC_REQUIRED_CLAIMS=hd"}, "GPUGATE_OIDC_REQUIRED_CLAIMS"},
    {{"GPUGATE_OIDC_REQUIRED_CLAIMS==example.com"},
     "GPUGATE_OIDC_REQUIRED_CLAIMS"},
    {{"GPUGATE_OIDC_REQUIRED_CLAIMS=hd="}, "GPUGATE_OIDC_REQUIRED_CLAIMS"},
    {{"GPUGATE_OIDC_GROUPS_CLAIM=realm_access..roles"},
     "GPUGATE_OIDC_GROUPS_CLAIM"},
    {{"GPUGATE_OIDC_GROUPS_CLAIM=groups."}, "GPUGATE_OIDC_GROUPS_CLAIM"},
    {{"GPUGATE_OIDC_GROUPS_CLAIM=$.groups[*]"}, "GPUGATE_OIDC_GROUPS_CLAIM"},
    {{"GPUGATE_OIDC_CLIENT_ID=gpugate"}, "GPUGATE_OIDC_CLIENT_ID"},
    {{"GPUGATE_SESSION_TTL_S=59"}, "GPUGATE_SESSION_TTL_S"},
    {{"GPUGATE_SESSION_REFRESH_S=0"}, "GPUGATE_SESSION_REFRESH_S"},
    {{"GPUGATE_SESSION_REFRESH_S=15m"}, "GPUGATE_SESSION_REFRESH_S"},
    {{"GPUGATE_PUBLIC_URL=gpugate.example.com"}, "GPUGATE_PUBLIC_URL"},
    {{"GPUGATE_LOGGING_END_GRACE_MS=-1"}, "GPUGATE_LOGGING_END_GRACE_MS"},
    {{"GPUGATE_LOGGING_END_GRACE_MS=600001"}, "GPUGATE_LOGGING_END_GRACE_MS"},
    {{"GPUGATE_LOGGING_END_GRACE_MS=10s"}, "GPUGATE_LOGGING_END_GRACE_MS"},
};

START_TEST(bad)
{
  struct config cfg;
  char err[256] = "";
  int i, rc;

  clear_env();
  for (i = 0; i < 2 && bad_cases[_i].env[i]; i++)
    set_env(bad_cases[_i].env[i]);
  rc = config_load(&cfg, err, sizeof(err));
  ck_assert_msg(rc == -1, "case %d (%.60s): accepted", _i,
                bad_cases[_i].env[0]);
  ck_assert_msg(strstr(err, bad_cases[_i].var) != NULL,
                "case %d (%.60s): \"%s\" does not name %s", _i,
                bad_cases[_i].env[0], err, bad_cases[_i].var);
  ck_assert_msg(strchr(err, '\n') == NULL, "case %d: \"%s\"", _i, err);
  config_free(&cfg);
}
END_TEST

/* GPUGATE_OIDC_*: off by default; several issuers and audiences, the
 * algorithms, cooldown, groups claim and required claims as given. */
START_TEST(oidc_settings)
{
  struct config cfg;
  char err[256] = "";

  clear_env();
  ck_assert_int_eq(config_load(&cfg, err, sizeof(err)), 0);
  ck_assert_int_eq(cfg.identity.oidc.n_issuers, 0);
  ck_assert_uint_eq(cfg.identity.oidc.algs, 3); /* RS256 | ES256 */
  ck_assert_int_eq(cfg.identity.oidc.jwks_cooldown_s, 30);
  ck_assert_str_eq(cfg.identity.oidc.groups_claim, "groups");
  config_free(&cfg);
  set_env("GPUGATE_OIDC_ISSUERS=https://idp.example.com/, "
          "https://accounts.google.com");
  set_env("GPUGATE_OIDC_AUDIENCES=gpugate,api://gpugate");
  set_env("GPUGATE_OIDC_ALGS=ES256");
  set_env("GPUGATE_OIDC_JWKS_COOLDOWN_S=5");
  set_env("GPUGATE_OIDC_GROUPS_CLAIM=realm_access.roles");
  set_env("GPUGATE_OIDC_REQUIRED_CLAIMS=hd=example.com,tid=a=b");
  ck_assert_msg(config_load(&cfg, err, sizeof(err)) == 0, "%s", err);
  ck_assert_int_eq(cfg.identity.oidc.n_issuers, 2);
  ck_assert_str_eq(cfg.identity.oidc.issuers[0], "https://idp.example.com/");
  ck_assert_str_eq(cfg.identity.oidc.issuers[1], "https://accounts.google.com");
  ck_assert_int_eq(cfg.identity.oidc.n_audiences, 2);
  ck_assert_str_eq(cfg.identity.oidc.audiences[1], "api://gpugate");
  ck_assert_uint_eq(cfg.identity.oidc.algs, 2); /* ES256 */
  ck_assert_int_eq(cfg.identity.oidc.jwks_cooldown_s, 5);
  ck_assert_str_eq(cfg.identity.oidc.groups_claim, "realm_access.roles");
  ck_assert_int_eq(cfg.identity.oidc.n_required, 2);
  ck_assert_str_eq(cfg.identity.oidc.required_claim[0], "hd");
  ck_assert_str_eq(cfg.identity.oidc.required_value[0], "example.com");
  ck_assert_str_eq(cfg.identity.oidc.required_claim[1], "tid");
  ck_assert_str_eq(cfg.identity.oidc.required_value[1], "a=b");
  config_free(&cfg);
  clear_env();
}
END_TEST

/* GPUGATE_OIDC_PROVIDERS_FILE: each issuer's audiences, algorithms,
 * groups claim and required claims, the rest from GPUGATE_OIDC_*; strict,
 * with the entry and field named. */
static const struct {
  const char *file; /* NULL: the variable names a missing file */
  const char *want; /* "" accepted, else what the error names */
} provider_files[] = {
    {"[]", ""},
    {"[{\"issuer\": \"https://accounts.google.com\", \"required_claims\": "
     "[\"hd=example.com\"], \"groups_claim\": \"roles\", \"audiences\": "
     "[\"g1\"], \"algs\": [\"RS256\"]}]",
     ""},
    {NULL, "GPUGATE_OIDC_PROVIDERS_FILE"},
    {"{}", "expected a JSON array"},
    {"[{\"issuer\": \"https://a\", \"issuer\": \"https://a\"}]", "line 1"},
    {"[{}]", "[0].issuer"},
    {"[\"https://idp.example.com/\"]", "[0].issuer"},
    {"[{\"issuer\": \"https://other.example\"}]", "not one of"},
    {"[{\"issuer\": \"https://idp.example.com/\"}, {\"issuer\": "
     "\"https://idp.example.com/\"}]",
     "[1].issuer: \"https://idp.example.com/\" is listed twice"},
    {"[{\"issuer\": \"https://idp.example.com/\", \"audience\": [\"a\"]}]",
     "[0].audience: unknown field"},
    {"[{\"issuer\": \"https://idp.example.com/\", \"audiences\": []}]",
     "[0].audiences"},
    {"[{\"issuer\": \"https://idp.example.com/\", \"audiences\": \"a\"}]",
     "[0].audiences"},
    {"[{\"issuer\": \"https://idp.example.com/\", \"audiences\": [\"\"]}]",
     "[0].audiences"},
    {"[{\"issuer\": \"https://idp.example.com/\", \"algs\": [\"HS256\"]}]",
     "[0].algs[0]"},
    {"[{\"issuer\": \"https://idp.example.com/\", \"algs\": [\"none\"]}]",
     "[0].algs[0]"},
    {"[{\"issuer\": \"https://idp.example.com/\", \"groups_claim\": "
     "\"a..b\"}]",
     "[0].groups_claim"},
    {"[{\"issuer\": \"https://idp.example.com/\", \"groups_claim\": 1}]",
     "[0].groups_claim"},
    {"[{\"issuer\": \"https://idp.example.com/\", \"required_claims\": "
     "[\"hd\"]}]",
     "[0].required_claims[0]"},
    {"[{\"issuer\": \"https://idp.example.com/\", \"required_claims\": "
     "\"hd=x\"}]",
     "[0].required_claims"},
};

START_TEST(oidc_providers_file)
{
  struct config cfg;
  char err[256] = "", path[] = "/tmp/gpugate-providers-XXXXXX", env[80];
  int fd, rc;

  clear_env();
  set_env("GPUGATE_OIDC_ISSUERS=https://idp.example.com/,"
          "https://accounts.google.com");
  set_env("GPUGATE_OIDC_AUDIENCES=gpugate");
  set_env("GPUGATE_OIDC_REQUIRED_CLAIMS=tid=t1");
  fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  if (provider_files[_i].file)
    ck_assert(write(fd, provider_files[_i].file,
                    strlen(provider_files[_i].file)) > 0);
  close(fd);
  if (!provider_files[_i].file)
    unlink(path);
  snprintf(env, sizeof(env), "GPUGATE_OIDC_PROVIDERS_FILE=%s", path);
  set_env(env);
  rc = config_load(&cfg, err, sizeof(err));
  unlink(path);
  if (!provider_files[_i].want[0]) {
    ck_assert_msg(rc == 0, "case %d: %s", _i, err);
    /* the first issuer keeps the GPUGATE_OIDC_* values */
    ck_assert_int_eq(cfg.identity.oidc.providers[0].n_required, 1);
    ck_assert_str_eq(cfg.identity.oidc.providers[0].required_claim[0], "tid");
    ck_assert_str_eq(cfg.identity.oidc.providers[0].groups_claim, "groups");
    ck_assert_str_eq(cfg.identity.oidc.providers[0].audiences[0], "gpugate");
    ck_assert_uint_eq(cfg.identity.oidc.providers[0].algs, 3);
    if (_i == 1) { /* the second its own */
      ck_assert_int_eq(cfg.identity.oidc.providers[1].n_required, 1);
      ck_assert_str_eq(cfg.identity.oidc.providers[1].required_claim[0], "hd");
      ck_assert_str_eq(cfg.identity.oidc.providers[1].required_value[0],
                       "example.com");
      ck_assert_str_eq(cfg.identity.oidc.providers[1].groups_claim, "roles");
      ck_assert_int_eq(cfg.identity.oidc.providers[1].n_audiences, 1);
      ck_assert_str_eq(cfg.identity.oidc.providers[1].audiences[0], "g1");
      ck_assert_uint_eq(cfg.identity.oidc.providers[1].algs, 1); /* RS256 */
    }
    config_free(&cfg);
  } else {
    ck_assert_msg(rc == -1, "case %d: accepted", _i);
    ck_assert_msg(strstr(err, "GPUGATE_OIDC_PROVIDERS_FILE") &&
                      strstr(err, provider_files[_i].want),
                  "case %d: \"%s\" does not name %s", _i, err,
                  provider_files[_i].want);
    ck_assert_msg(strchr(err, '\n') == NULL, "case %d: \"%s\"", _i, err);
    config_free(&cfg); /* the caller's whatever the result */
  }
  clear_env();
}
END_TEST

/* GPUGATE_CAPACITY_WINDOW_GRACE_S: 600 by default, 0 to 90 days, else a
 * start-up error naming it. */
START_TEST(capacity_window_grace)
{
  static const struct {
    const char *value;
    long want; /* -1: rejected */
  } cases[] = {{NULL, 600},          {"", 600},  {"0", 0},        {"30", 30},
               {"7776000", 7776000}, {"-1", -1}, {"7776001", -1}, {"10m", -1},
               {"1e3", -1}};
  struct config cfg;
  char err[256];
  int i, rc;

  for (i = 0; i < N_OF(cases); i++) {
    clear_env();
    if (cases[i].value)
      ck_assert_int_eq(
          setenv("GPUGATE_CAPACITY_WINDOW_GRACE_S", cases[i].value, 1), 0);
    err[0] = '\0';
    rc = config_load(&cfg, err, sizeof(err));
    if (cases[i].want < 0) {
      ck_assert_msg(rc == -1, "\"%s\": accepted", cases[i].value);
      ck_assert_msg(strstr(err, "GPUGATE_CAPACITY_WINDOW_GRACE_S") != NULL,
                    "\"%s\": %s", cases[i].value, err);
    } else {
      ck_assert_msg(rc == 0, "\"%s\": %s", cases[i].value, err);
      ck_assert_int_eq(cfg.control.capacity_window_grace_s, cases[i].want);
    }
    config_free(&cfg);
  }
  clear_env();
}
END_TEST

/*
 * config_control hands the loops of control/ every setting of theirs as
 * config_load read it: each variable set to a value unlike its default, and
 * each field of struct control_config compared with the variable's value.
 */
START_TEST(control_settings)
{
  static const char *const env[] = {
      "GPUGATE_DATABASE_URL=postgresql:///pooled",
      "GPUGATE_DIRECT_DATABASE_URL=postgresql:///direct",
      "GPUGATE_GCP_PROJECT=proj-7",
      "GPUGATE_BATCH_ENDPOINT=http://127.0.0.1:9/batch",
      "GPUGATE_ADMISSION_INTERVAL_MS=250",
      "GPUGATE_ADMISSION_RECONCILE_S=17",
      "GPUGATE_SYNC_INTERVAL_MS=3333",
      "GPUGATE_CAPACITY_WINDOW_GRACE_S=42",
      "GPUGATE_DEPLOYMENT=blue",
      "GPUGATE_BATCH_PUBSUB_TOPIC=projects/p/topics/t",
      "GPUGATE_BATCH_SERVICE_ACCOUNT=runner@p.iam.gserviceaccount.com",
      "GPUGATE_BATCH_MUTATIONS_PER_S=7",
      "GPUGATE_BATCH_MUTATIONS_BURST=11",
      "GPUGATE_BILLING_BIGQUERY_TABLE=billp.ds.export",
      "GPUGATE_BILLING_BIGQUERY_PROJECT=runq",
      "GPUGATE_BILLING_BIGQUERY_LOCATION=EU",
      "GPUGATE_BIGQUERY_ENDPOINT=http://127.0.0.1:9/bq",
      "GPUGATE_BILLING_SYNC_INTERVAL_S=900",
      "GPUGATE_BILLING_REREAD_DAYS=3",
      "GPUGATE_BILLING_MAX_BYTES_BILLED=12345",
      "GPUGATE_LOGGING_ENDPOINT=http://127.0.0.1:9/log",
      "GPUGATE_LOGGING_READS_PER_MINUTE=13",
      "GPUGATE_LOGGING_POLL_MS=700",
      "GPUGATE_LOGGING_END_GRACE_MS=1900",
  };
  struct config cfg;
  struct control_config cc;
  char err[256] = "";
  int i;

  clear_env();
  for (i = 0; i < N_OF(env); i++)
    set_env(env[i]);
  ck_assert_msg(config_load(&cfg, err, sizeof(err)) == 0, "%s", err);
  memset(&cc, 0xa5, sizeof(cc));
  config_control(&cfg, &cc);
  ck_assert_str_eq(cc.database_url, "postgresql:///pooled");
  ck_assert_str_eq(cc.direct_database_url, "postgresql:///direct");
  ck_assert_str_eq(cc.gcp.gcp_project, "proj-7");
  ck_assert_str_eq(cc.gcp.batch_endpoint, "http://127.0.0.1:9/batch");
  ck_assert_str_eq(cc.batch_backend, "none");
  ck_assert_int_eq(cc.admission_interval_ms, 250);
  ck_assert_int_eq(cc.admission_reconcile_s, 17);
  ck_assert_int_eq(cc.sync_interval_ms, 3333);
  ck_assert_int_eq(cc.capacity_window_grace_s, 42);
  ck_assert_str_eq(cc.deployment, "blue");
  ck_assert_str_eq(cc.batch_pubsub_topic, "projects/p/topics/t");
  ck_assert_str_eq(cc.batch_service_account,
                   "runner@p.iam.gserviceaccount.com");
  ck_assert_int_eq(cc.batch_mutations_per_s, 7);
  ck_assert_int_eq(cc.batch_mutations_burst, 11);
  ck_assert_str_eq(cc.billing_bq_table, "billp.ds.export");
  ck_assert_str_eq(cc.billing_bq_project, "runq");
  ck_assert_str_eq(cc.billing_bq_location, "EU");
  ck_assert_str_eq(cc.bigquery_endpoint, "http://127.0.0.1:9/bq");
  ck_assert_int_eq(cc.billing_sync_interval_s, 900);
  ck_assert_int_eq(cc.billing_reread_days, 3);
  ck_assert_int_eq(cc.billing_max_bytes_billed, 12345);
  ck_assert_str_eq(cc.logging_endpoint, "http://127.0.0.1:9/log");
  ck_assert_int_eq(cc.logging_reads_per_minute, 13);
  ck_assert_int_eq(cc.logging_poll_ms, 700);
  ck_assert_int_eq(cc.logging_end_grace_ms, 1900);
  config_free(&cfg);
  clear_env();
}
END_TEST

/* The message is bounded by errlen and still NUL-terminated. */
START_TEST(error_bounded)
{
  struct config cfg;
  char err[32];

  clear_env();
  set_env("GPUGATE_JWT_LEEWAY_S=" X256);
  memset(err, '#', sizeof(err));
  ck_assert_int_eq(config_load(&cfg, err, 16), -1);
  ck_assert_str_eq(err, "GPUGATE_JWT_LEE");
  ck_assert_int_eq(err[16], '#');
  config_free(&cfg);
}
END_TEST

/* file_read: the limit is inclusive; a missing file is NULL. */
START_TEST(read_file)
{
  char path[128];
  size_t len = 0;
  char *s;

  tmp_path(path, sizeof(path), "push-secret");
  s = file_read(path, 12, &len);
  ck_assert_ptr_nonnull(s);
  ck_assert_uint_eq(len, 12);
  ck_assert_str_eq(s, "push-secret\n");
  free(s);
  ck_assert_ptr_null(file_read(path, 11, &len));
  tmp_path(path, sizeof(path), "big");
  s = file_read(path, BIG_SIZE, &len);
  ck_assert_ptr_nonnull(s);
  ck_assert_uint_eq(len, BIG_SIZE);
  ck_assert_uint_eq(strlen(s), BIG_SIZE);
  free(s);
  ck_assert_ptr_null(file_read("/nonexistent", 100, &len));
}
END_TEST

/* The Batch footprint: GPUGATE_DEPLOYMENT and the shared mutation budget
 * (which must stay within Batch's 6,000 a minute per region). */
static const struct {
  const char *env[2]; /* "NAME=value" */
  const char *deployment;
  long rate, burst;
  const char *bad_var; /* NULL: accepted */
} footprint_cases[] = {
    {{NULL}, "default", 98, 30, NULL},
    {{"GPUGATE_DEPLOYMENT=staging"}, "staging", 98, 30, NULL},
    {{"GPUGATE_DEPLOYMENT=prod_eu-1"}, "prod_eu-1", 98, 30, NULL},
    {{"GPUGATE_DEPLOYMENT=" X16 X16 X16 "xxxxxxxxxxxxxxx"}, /* 63 */
     X16 X16 X16 "xxxxxxxxxxxxxxx",
     98,
     30,
     NULL},
    {{"GPUGATE_BATCH_MUTATIONS_PER_S=10", "GPUGATE_BATCH_MUTATIONS_BURST=100"},
     "default",
     10,
     100,
     NULL},
    {{"GPUGATE_BATCH_MUTATIONS_PER_S=1", "GPUGATE_BATCH_MUTATIONS_BURST=5940"},
     NULL,
     0,
     0,
     "GPUGATE_BATCH_MUTATIONS_BURST"},
    {{"GPUGATE_BATCH_MUTATIONS_PER_S=1", "GPUGATE_BATCH_MUTATIONS_BURST=5939"},
     "default",
     1,
     5939,
     NULL}, /* 5,939 + 60.75 = 5,999.75 */
    {{"GPUGATE_DEPLOYMENT=Staging"}, NULL, 0, 0, "GPUGATE_DEPLOYMENT"},
    {{"GPUGATE_DEPLOYMENT=a b"}, NULL, 0, 0, "GPUGATE_DEPLOYMENT"},
    {{"GPUGATE_DEPLOYMENT=a=b"}, NULL, 0, 0, "GPUGATE_DEPLOYMENT"},
    {{"GPUGATE_DEPLOYMENT=" X64}, NULL, 0, 0, "GPUGATE_DEPLOYMENT"},
    {{"GPUGATE_BATCH_MUTATIONS_PER_S=99"},
     NULL,
     0,
     0,
     "GPUGATE_BATCH_MUTATIONS_PER_S"}, /* 99 × 60.75 > 6,000 */
    {{"GPUGATE_BATCH_MUTATIONS_PER_S=0"},
     NULL,
     0,
     0,
     "GPUGATE_BATCH_MUTATIONS_PER_S"},
    {{"GPUGATE_BATCH_MUTATIONS_BURST=0"},
     NULL,
     0,
     0,
     "GPUGATE_BATCH_MUTATIONS_BURST"},
    {{"GPUGATE_BATCH_MUTATIONS_BURST=60"},
     NULL,
     0,
     0,
     "GPUGATE_BATCH_MUTATIONS_BURST"}, /* 60 + 98 × 60.75 > 6,000 */
};

START_TEST(footprint)
{
  struct config cfg;
  char err[256] = "";
  int i, rc;

  clear_env();
  for (i = 0; i < 2 && footprint_cases[_i].env[i]; i++)
    set_env(footprint_cases[_i].env[i]);
  rc = config_load(&cfg, err, sizeof(err));
  if (footprint_cases[_i].bad_var) {
    ck_assert_msg(rc == -1, "case %d: accepted", _i);
    ck_assert_msg(strstr(err, footprint_cases[_i].bad_var) != NULL,
                  "case %d: \"%s\" does not name %s", _i, err,
                  footprint_cases[_i].bad_var);
  } else {
    ck_assert_msg(rc == 0, "case %d: %s", _i, err);
    ck_assert_str_eq(cfg.control.deployment, footprint_cases[_i].deployment);
    ck_assert_int_eq(cfg.control.batch_mutations_per_s,
                     footprint_cases[_i].rate);
    ck_assert_int_eq(cfg.control.batch_mutations_burst,
                     footprint_cases[_i].burst);
  }
  config_free(&cfg);
}
END_TEST

/* -------------------------------------------------------------- problem */

static const struct {
  enum gg_code code;
  unsigned status;
  const char *title;
  const char *slug; /* of the type problem_build() writes */
} code_cases[] = {
    {GG_OK, 200, "ok", "internal"},
    {GG_BAD_REQUEST, 400, "invalid request", "invalid-request"},
    {GG_UNAUTHORIZED, 401, "authentication required", "unauthorized"},
    {GG_FORBIDDEN, 403, "not allowed", "forbidden"},
    {GG_NOT_FOUND, 404, "not found", "not-found"},
    {GG_METHOD_NOT_ALLOWED, 405, "method not allowed", "method-not-allowed"},
    {GG_NOT_ACCEPTABLE, 406, "not acceptable", "not-acceptable"},
    {GG_CONFLICT, 409, "conflict", "conflict"},
    {GG_PRECONDITION_FAILED, 412, "precondition failed", "precondition-failed"},
    {GG_PAYLOAD_TOO_LARGE, 413, "payload too large", "payload-too-large"},
    {GG_UNSUPPORTED_MEDIA, 415, "unsupported media type",
     "unsupported-media-type"},
    {GG_UNPROCESSABLE, 422, "unprocessable content", "unprocessable"},
    {GG_TOO_MANY_REQUESTS, 429, "too many requests", "rate-limited"},
    {GG_INTERNAL, 500, "internal error", "internal"},
    {GG_UNAVAILABLE, 503, "service unavailable", "unavailable"},
    /* out of range: treated as internal */
    {GG_CODE_COUNT, 500, "internal error", "internal"},
    {(enum gg_code)99, 500, "internal error", "internal"},
};

START_TEST(codes)
{
  enum gg_code code = code_cases[_i].code;
  char type[128];
  json_t *p;

  ck_assert_msg(problem_status(code) == code_cases[_i].status,
                "code %d: status %u, want %u", (int)code, problem_status(code),
                code_cases[_i].status);
  ck_assert_msg(!strcmp(problem_title(code), code_cases[_i].title),
                "code %d: title \"%s\", want \"%s\"", (int)code,
                problem_title(code), code_cases[_i].title);
  snprintf(type, sizeof(type), "https://gpugate.dev/problems/%s",
           code_cases[_i].slug);
  p = problem_build(code, NULL, NULL, NULL, NULL);
  ck_assert_ptr_nonnull(p);
  ck_assert_msg(!strcmp(json_string_value(json_object_get(p, "type")), type),
                "code %d: type %s, want %s", (int)code,
                json_string_value(json_object_get(p, "type")), type);
  /* the document's status and title agree with the table, except for
   * GG_OK, which is not a problem and is built as an internal error */
  if (code != GG_OK) {
    ck_assert_int_eq(json_integer_value(json_object_get(p, "status")),
                     code_cases[_i].status);
    ck_assert_str_eq(json_string_value(json_object_get(p, "title")),
                     code_cases[_i].title);
  }
  json_decref(p);
}
END_TEST

#define PT "\"type\":\"https://gpugate.dev/problems/"

static const struct {
  enum gg_code code;
  const char *detail, *errors, *instance, *request_id; /* errors: JSON */
  const char *want;                                    /* compact */
} build_cases[] = {
    {GG_NOT_FOUND, "Team \"x\" was not found.", NULL, "/v1/teams/x", "req-1",
     "{" PT "not-found\",\"title\":\"not found\",\"status\":404,"
     "\"detail\":\"Team \\\"x\\\" was not found.\","
     "\"instance\":\"/v1/teams/x\",\"request_id\":\"req-1\",\"errors\":[]}"},
    {GG_BAD_REQUEST, "The request body is invalid.",
     "[{\"field\":\"name\",\"message\":\"is required\"},"
     "{\"field\":\"xs[2]\",\"message\":\"must be between 0 and 9\"}]",
     NULL, "",
     "{" PT "invalid-request\",\"title\":\"invalid request\",\"status\":400,"
     "\"detail\":\"The request body is invalid.\",\"errors\":["
     "{\"field\":\"name\",\"message\":\"is required\"},"
     "{\"field\":\"xs[2]\",\"message\":\"must be between 0 and 9\"}]}"},
    {GG_UNPROCESSABLE, NULL, "[]", "/v1/flavors/a", NULL,
     "{" PT "unprocessable\",\"title\":\"unprocessable content\","
     "\"status\":422,\"detail\":\"unprocessable content\","
     "\"instance\":\"/v1/flavors/a\",\"errors\":[]}"},
    {GG_CONFLICT, "", NULL, NULL, NULL,
     "{" PT "conflict\",\"title\":\"conflict\",\"status\":409,"
     "\"detail\":\"conflict\",\"errors\":[]}"},
    {GG_OK, "fine", NULL, NULL, NULL,
     "{" PT "internal\",\"title\":\"internal error\",\"status\":500,"
     "\"detail\":\"fine\",\"errors\":[]}"},
    {GG_CODE_COUNT, NULL, NULL, "", "r",
     "{" PT "internal\",\"title\":\"internal error\",\"status\":500,"
     "\"detail\":\"internal error\",\"instance\":\"\",\"request_id\":\"r\","
     "\"errors\":[]}"},
    {GG_TOO_MANY_REQUESTS, "Slow down.", NULL, NULL, "abc",
     "{" PT "rate-limited\",\"title\":\"too many requests\",\"status\":429,"
     "\"detail\":\"Slow down.\",\"request_id\":\"abc\",\"errors\":[]}"},
};

START_TEST(build)
{
  json_t *errors = NULL, *p;
  char *dump;

  if (build_cases[_i].errors) {
    errors = json_loads(build_cases[_i].errors, 0, NULL);
    ck_assert_ptr_nonnull(errors);
  }
  p = problem_build(build_cases[_i].code, build_cases[_i].detail, errors,
                    build_cases[_i].instance, build_cases[_i].request_id);
  ck_assert_ptr_nonnull(p);
  dump = json_dumps(p, GG_JSON_DUMP);
  ck_assert_msg(!strcmp(dump, build_cases[_i].want),
                "case %d:\n  got  %s\n  want %s", _i, dump,
                build_cases[_i].want);
  free(dump);
  if (errors) {
    /* errors is borrowed and copied: changing it later changes nothing */
    size_t n = json_array_size(errors);
    ck_assert_uint_eq(errors->refcount, 1);
    ck_assert_ptr_ne(json_object_get(p, "errors"), errors);
    json_array_clear(errors);
    ck_assert_uint_eq(json_array_size(json_object_get(p, "errors")), n);
  }
  json_decref(errors);
  json_decref(p);
}
END_TEST

/* problem_field / problem_fail / problem_clear on one request. */
START_TEST(record)
{
  struct gg_req req;
  char longmsg[400];
  json_t *e;

  req_init(&req, NULL);
  ck_assert_uint_eq(problem_nfields(&req), 0);
  problem_field(&req, "a.b[1]", "must be %s %d", "at most", 5);
  ck_assert_uint_eq(problem_nfields(&req), 1);
  e = json_array_get(req.err.fields, 0);
  ck_assert_str_eq(json_string_value(json_object_get(e, "field")), "a.b[1]");
  ck_assert_str_eq(json_string_value(json_object_get(e, "message")),
                   "must be at most 5");

  /* the first failure wins */
  ck_assert_int_eq(problem_fail(&req, GG_NOT_FOUND, "No %s.", "x"),
                   GG_NOT_FOUND);
  ck_assert_int_eq(problem_fail(&req, GG_CONFLICT, "Other."), GG_NOT_FOUND);
  ck_assert_int_eq(req.err.code, GG_NOT_FOUND);
  ck_assert_str_eq(req.err.detail, "No x.");

  /* cleared, the request can fail afresh */
  problem_clear(&req);
  ck_assert_int_eq(req.err.code, GG_OK);
  ck_assert_str_eq(req.err.detail, "");
  ck_assert_uint_eq(problem_nfields(&req), 0);
  ck_assert_int_eq(problem_fail(&req, GG_CONFLICT, "Other."), GG_CONFLICT);

  /* messages are cut at 255 bytes; at most 100 fields are kept */
  memset(longmsg, 'm', sizeof(longmsg) - 1);
  longmsg[sizeof(longmsg) - 1] = '\0';
  problem_field(&req, "long", "%s", longmsg);
  ck_assert_uint_eq(strlen(json_string_value(json_object_get(
                        json_array_get(req.err.fields, 0), "message"))),
                    255);
  while (problem_nfields(&req) < 100)
    problem_field(&req, "f", "x");
  problem_field(&req, "one-too-many", "x");
  ck_assert_uint_eq(problem_nfields(&req), 100);
  ck_assert_str_eq(json_string_value(json_object_get(
                       json_array_get(req.err.fields, 99), "field")),
                   "f");
  req_cleanup(&req);
}
END_TEST

/* A struct gg_err filled deep (as db/ fills it: err_fail, err_field) is
 * rendered at the edge by problem_from_err exactly as problem_build
 * renders its code, detail and fields; the first failure wins. */
START_TEST(err_rendered)
{
  struct gg_err err;
  json_t *p;
  char *dump;

  err_init(&err);
  ck_assert_uint_eq(err_nfields(&err), 0);
  err_field(&err, "queue", "team \"%s\" has no queue \"%s\"", "t", "q");
  ck_assert_int_eq(err_fail(&err, GG_UNPROCESSABLE, "The job refers to %s.",
                            "objects that do not exist"),
                   GG_UNPROCESSABLE);
  ck_assert_int_eq(err_fail(&err, GG_INTERNAL, "Later."), GG_UNPROCESSABLE);
  p = problem_from_err(&err, "/v1/teams/t/jobs", "rid");
  ck_assert_ptr_nonnull(p);
  dump = json_dumps(p, GG_JSON_DUMP);
  ck_assert_str_eq(
      dump, "{" PT "unprocessable\",\"title\":\"unprocessable content\","
            "\"status\":422,\"detail\":\"The job refers to objects that do "
            "not exist.\",\"instance\":\"/v1/teams/t/jobs\",\"request_id\":"
            "\"rid\",\"errors\":[{\"field\":\"queue\",\"message\":\"team "
            "\\\"t\\\" has no queue \\\"q\\\"\"}]}");
  free(dump);
  json_decref(p);
  err_clear(&err);
  ck_assert_int_eq(err.code, GG_OK);
  ck_assert_ptr_null(err.fields);
}
END_TEST

/* ------------------------------------------------- connections (§8) */

/* The connection settings of cfg as one line. */
static void describe_conn(const struct config *c, char *out, size_t outlen)
{
  size_t used = 0;

  out[0] = '\0';
  CAT("max=%ld per_client=%ld header=%ld body=%ld upload=%ld uploads=%ld "
      "metrics=%s:%u",
      c->http_max_connections, c->http_max_connections_per_client,
      c->http_header_timeout_s, c->http_body_timeout_s,
      c->http_upload_timeout_s, c->http_max_uploads_per_role,
      c->metrics_listen_host, (unsigned)c->metrics_listen_port);
}

#define CONN_DEFAULTS                                                          \
  "max=0 per_client=256 header=10 body=30 upload=600 uploads=2 metrics=:0"

static const struct {
  const char *env[3]; /* "NAME=value" */
  const char *want;   /* the whole describe_conn() line */
} conn_good[] = {
    {{NULL}, CONN_DEFAULTS},
    {{"GPUGATE_HTTP_MAX_CONNECTIONS="}, CONN_DEFAULTS}, /* empty: default */
    {{"GPUGATE_HTTP_MAX_CONNECTIONS=5000"},
     "max=5000 per_client=256 header=10 body=30 upload=600 uploads=2 "
     "metrics=:0"},
    {{"GPUGATE_HTTP_MAX_CONNECTIONS=0"}, CONN_DEFAULTS}, /* 0: fd limit */
    {{"GPUGATE_HTTP_MAX_CONNECTIONS_PER_CLIENT=0"},      /* no per-client cap */
     "max=0 per_client=0 header=10 body=30 upload=600 uploads=2 metrics=:0"},
    {{"GPUGATE_HTTP_MAX_CONNECTIONS_PER_CLIENT=16777216"},
     "max=0 per_client=16777216 header=10 body=30 upload=600 uploads=2 "
     "metrics=:0"},
    {{"GPUGATE_HTTP_HEADER_TIMEOUT_S=1", "GPUGATE_HTTP_BODY_TIMEOUT_S=3600"},
     "max=0 per_client=256 header=1 body=3600 upload=600 uploads=2 "
     "metrics=:0"},
    {{"GPUGATE_HTTP_UPLOAD_TIMEOUT_S=86400",
      "GPUGATE_HTTP_MAX_UPLOADS_PER_ROLE=256"},
     "max=0 per_client=256 header=10 body=30 upload=86400 uploads=256 "
     "metrics=:0"},
    {{"GPUGATE_METRICS_LISTEN=0.0.0.0:9090"},
     "max=0 per_client=256 header=10 body=30 upload=600 uploads=2 "
     "metrics=0.0.0.0:9090"},
    {{"GPUGATE_METRICS_LISTEN=localhost:0"},
     "max=0 per_client=256 header=10 body=30 upload=600 uploads=2 "
     "metrics=localhost:0"},
    {{"GPUGATE_METRICS_LISTEN="}, CONN_DEFAULTS},
};

START_TEST(conn_good_case)
{
  struct config cfg;
  char err[256] = "", line[512];
  int i;

  clear_env();
  for (i = 0; i < 3 && conn_good[_i].env[i]; i++)
    set_env(conn_good[_i].env[i]);
  ck_assert_msg(config_load(&cfg, err, sizeof(err)) == 0, "case %d: %s", _i,
                err);
  describe_conn(&cfg, line, sizeof(line));
  ck_assert_msg(!strcmp(line, conn_good[_i].want),
                "case %d:\n  got  %s\n  want %s", _i, line, conn_good[_i].want);
  config_free(&cfg);
}
END_TEST

static const struct {
  const char *env; /* "NAME=value"; the error must name NAME */
} conn_bad[] = {
    {"GPUGATE_HTTP_MAX_CONNECTIONS=-1"},
    {"GPUGATE_HTTP_MAX_CONNECTIONS=16777217"},
    {"GPUGATE_HTTP_MAX_CONNECTIONS=lots"},
    {"GPUGATE_HTTP_MAX_CONNECTIONS=10k"},
    {"GPUGATE_HTTP_MAX_CONNECTIONS_PER_CLIENT=-5"},
    {"GPUGATE_HTTP_MAX_CONNECTIONS_PER_CLIENT=1.5"},
    {"GPUGATE_HTTP_HEADER_TIMEOUT_S=0"},
    {"GPUGATE_HTTP_HEADER_TIMEOUT_S=3601"},
    {"GPUGATE_HTTP_HEADER_TIMEOUT_S=10s"},
    {"GPUGATE_HTTP_BODY_TIMEOUT_S=0"},
    {"GPUGATE_HTTP_BODY_TIMEOUT_S=99999999999999999999"},
    {"GPUGATE_HTTP_UPLOAD_TIMEOUT_S=0"},
    {"GPUGATE_HTTP_UPLOAD_TIMEOUT_S=86401"},
    {"GPUGATE_HTTP_MAX_UPLOADS_PER_ROLE=0"},
    {"GPUGATE_HTTP_MAX_UPLOADS_PER_ROLE=257"},
    {"GPUGATE_METRICS_LISTEN=9090"},
    {"GPUGATE_METRICS_LISTEN=:9090"},
    {"GPUGATE_METRICS_LISTEN=0.0.0.0:"},
    {"GPUGATE_METRICS_LISTEN=0.0.0.0:65536"},
    {"GPUGATE_METRICS_LISTEN=" X64 ":9090"},
};

START_TEST(conn_bad_case)
{
  struct config cfg;
  char err[256] = "", name[64];

  snprintf(name, sizeof(name), "%.*s", (int)strcspn(conn_bad[_i].env, "="),
           conn_bad[_i].env);
  clear_env();
  set_env(conn_bad[_i].env);
  ck_assert_msg(config_load(&cfg, err, sizeof(err)) == -1,
                "case %d (%s): accepted", _i, conn_bad[_i].env);
  ck_assert_msg(strstr(err, name) != NULL, "case %d: \"%s\" does not name %s",
                _i, err, name);
  ck_assert_msg(strchr(err, '\n') == NULL, "case %d: \"%s\"", _i, err);
  config_free(&cfg);
}
END_TEST

/* ------------------------------------- clients behind a load balancer */

/* The proxy settings of cfg as one line. */
static void describe_proxies(const struct config *c, char *out, size_t outlen)
{
  size_t used = 0;
  int i;

  out[0] = '\0';
  CAT("trusted=");
  for (i = 0; i < c->n_trusted_proxies; i++) {
    char text[CLIENTADDR_TEXT];
    clientaddr_format(&c->trusted_proxies[i].base, text);
    CAT("%s%s/%u", i ? "," : "", text, c->trusted_proxies[i].prefix);
  }
  CAT(" header=%s per_client_rps=%ld",
      c->forwarded_header == CLIENTADDR_FORWARDED ? "Forwarded" : "XFF",
      c->rate_limit_per_client_rps);
}

static const struct {
  const char *env[3]; /* "NAME=value" */
  const char *want;   /* the whole describe_proxies() line */
} proxies_good[] = {
    {{NULL}, "trusted= header=XFF per_client_rps=0"},
    {{"GPUGATE_HTTP_TRUSTED_PROXIES="}, "trusted= header=XFF per_client_rps=0"},
    {{"GPUGATE_HTTP_TRUSTED_PROXIES=10.0.0.0/8, ::1,35.191.0.0/16"},
     "trusted=10.0.0.0/8,::1/128,35.191.0.0/16 header=XFF per_client_rps=0"},
    {{"GPUGATE_HTTP_TRUSTED_PROXIES=2001:db8::/32",
      "GPUGATE_HTTP_FORWARDED_HEADER=Forwarded",
      "GPUGATE_RATE_LIMIT_PER_CLIENT_RPS=50"},
     "trusted=2001:db8::/32 header=Forwarded per_client_rps=50"},
    {{"GPUGATE_HTTP_FORWARDED_HEADER=x-forwarded-for"},
     "trusted= header=XFF per_client_rps=0"},
    {{"GPUGATE_HTTP_FORWARDED_HEADER=forwarded"},
     "trusted= header=Forwarded per_client_rps=0"},
};

START_TEST(proxies_good_case)
{
  struct config cfg;
  char err[256] = "", line[512];
  int i;

  clear_env();
  for (i = 0; i < 3 && proxies_good[_i].env[i]; i++)
    set_env(proxies_good[_i].env[i]);
  ck_assert_msg(config_load(&cfg, err, sizeof(err)) == 0, "case %d: %s", _i,
                err);
  describe_proxies(&cfg, line, sizeof(line));
  ck_assert_msg(!strcmp(line, proxies_good[_i].want),
                "case %d:\n  got  %s\n  want %s", _i, line,
                proxies_good[_i].want);
  config_free(&cfg);
}
END_TEST

static const struct {
  const char *env;  /* "NAME=value" */
  const char *want; /* the whole message */
} proxies_bad[] = {
    {"GPUGATE_HTTP_TRUSTED_PROXIES=10.0.0.0/33",
     "GPUGATE_HTTP_TRUSTED_PROXIES: \"10.0.0.0/33\": the prefix length must "
     "be a number from 0 to 32"},
    {"GPUGATE_HTTP_TRUSTED_PROXIES=10.0.0.0/8,lb.internal",
     "GPUGATE_HTTP_TRUSTED_PROXIES: \"lb.internal\" is not an IPv4 or IPv6 "
     "network (expected addresses or CIDRs such as 10.0.0.0/8 or "
     "2001:db8::/32, comma-separated)"},
    {"GPUGATE_HTTP_TRUSTED_PROXIES=192.168.1.1/24",
     "GPUGATE_HTTP_TRUSTED_PROXIES: \"192.168.1.1/24\" has bits set after "
     "the first 24 (did you mean 192.168.1.0/24?)"},
    {"GPUGATE_HTTP_TRUSTED_PROXIES=10.0.0.0/8;192.168.0.0/16",
     "GPUGATE_HTTP_TRUSTED_PROXIES: \"10.0.0.0/8;192.168.0.0/16\": the "
     "prefix length must be a number from 0 to 32"},
    {"GPUGATE_HTTP_TRUSTED_PROXIES=,",
     "GPUGATE_HTTP_TRUSTED_PROXIES: an empty entry in \",\""},
    {"GPUGATE_HTTP_FORWARDED_HEADER=X-Real-IP",
     "GPUGATE_HTTP_FORWARDED_HEADER: expected X-Forwarded-For or Forwarded, "
     "got \"X-Real-IP\""},
    {"GPUGATE_RATE_LIMIT_PER_CLIENT_RPS=-1",
     "GPUGATE_RATE_LIMIT_PER_CLIENT_RPS: expected an integer in [0, 1000000], "
     "got \"-1\""},
};

START_TEST(proxies_bad_case)
{
  struct config cfg;
  char err[256] = "";

  clear_env();
  set_env(proxies_bad[_i].env);
  ck_assert_msg(config_load(&cfg, err, sizeof(err)) == -1,
                "case %d (%s): accepted", _i, proxies_bad[_i].env);
  ck_assert_msg(!strcmp(err, proxies_bad[_i].want),
                "case %d:\n  got  %s\n  want %s", _i, err,
                proxies_bad[_i].want);
  config_free(&cfg);
}
END_TEST

/* The total cap: configured, or the fd limit less what the process needs
 * besides connections; a configured cap the fd limit cannot hold is an
 * error naming the variable. */
static const struct {
  long configured, nofile, pool, threads;
  long want; /* -1: refused */
} total_cases[] = {
    {0, 20000, 8, 8, 20000 - CONNLIMIT_FD_RESERVE - 16 - 32},
    {0, 1048576, 8, 8, 1048576 - CONNLIMIT_FD_RESERVE - 48},
    {0, 1024, 8, 8, 1024 - CONNLIMIT_FD_RESERVE - 48},
    {0, 1024, 256, 256, 16}, /* nothing left: the floor */
    {0, 100, 1, 1, 16},
    {5000, 20000, 8, 8, 5000},
    {19824, 20000, 8, 8, 19824}, /* exactly what fits */
    {19825, 20000, 8, 8, -1},    /* one more does not */
    {5000, 1024, 8, 8, -1},
};

START_TEST(total_case)
{
  char err[256] = "";
  long got = connlimit_total(total_cases[_i].configured, total_cases[_i].nofile,
                             total_cases[_i].pool, total_cases[_i].threads, err,
                             sizeof(err));

  ck_assert_msg(got == total_cases[_i].want, "case %d: %ld, want %ld (%s)", _i,
                got, total_cases[_i].want, err);
  if (got < 0)
    ck_assert_msg(strstr(err, "GPUGATE_HTTP_MAX_CONNECTIONS") != NULL,
                  "case %d: \"%s\"", _i, err);
}
END_TEST

/* The config suite: GPUGATE_* variables, and the problem module. */
Suite *config_suite(void)
{
  Suite *s = suite_create("config");
  TCase *tc;

  tc = tcase_create("config");
  tcase_add_unchecked_fixture(tc, files_setup, files_teardown);
  tcase_add_test(tc, defaults);
  tcase_add_test(tc, empty_is_default);
  tcase_add_loop_test(tc, good, 0, N_OF(good_cases));
  tcase_add_loop_test(tc, bad, 0, N_OF(bad_cases));
  tcase_add_test(tc, error_bounded);
  tcase_add_test(tc, capacity_window_grace);
  tcase_add_test(tc, control_settings);
  tcase_add_test(tc, oidc_settings);
  tcase_add_loop_test(tc, oidc_providers_file, 0, N_OF(provider_files));
  tcase_add_test(tc, read_file);
  tcase_add_loop_test(tc, footprint, 0, N_OF(footprint_cases));
  suite_add_tcase(s, tc);

  tc = tcase_create("connections");
  tcase_add_unchecked_fixture(tc, NULL, clear_env);
  tcase_add_loop_test(tc, conn_good_case, 0, N_OF(conn_good));
  tcase_add_loop_test(tc, conn_bad_case, 0, N_OF(conn_bad));
  tcase_add_loop_test(tc, proxies_good_case, 0, N_OF(proxies_good));
  tcase_add_loop_test(tc, proxies_bad_case, 0, N_OF(proxies_bad));
  tcase_add_loop_test(tc, total_case, 0, N_OF(total_cases));
  suite_add_tcase(s, tc);

  tc = tcase_create("problem");
  tcase_add_unchecked_fixture(tc, NULL, clear_env);
  tcase_add_loop_test(tc, codes, 0, N_OF(code_cases));
  tcase_add_loop_test(tc, build, 0, N_OF(build_cases));
  tcase_add_test(tc, record);
  tcase_add_test(tc, err_rendered);
  suite_add_tcase(s, tc);
  return s;
}
