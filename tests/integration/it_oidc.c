/*
 * it_oidc.c — the organisation's OpenID Provider through the real binary:
 * panva's certified oidc-provider (tests/oidc/provider.mjs, one RS256 and
 * one ES256 key) issues the tokens, gpugate discovers its keys, and access
 * bindings decide what each principal may do.
 *
 * Principals are the provider's client-credentials clients (a CI service
 * account with an email, machines in groups, an auditor, platform
 * administrators); their at+jwt access tokens carry the claims the
 * provider's mappers add. Forgeries are signed with the provider's own
 * private keys (read from the key file it writes), so each changes exactly
 * one thing: issuer, audience, expiry, hd, or key.
 */
#include <check.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <jose/jose.h>
#include <jose/openssl.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/b64url.h"
#include "tests/integration/harness.h"

Suite *oidc_suite(void);

#define KEY_STRANGER "tests/fixtures/keys/rsa2.pem"

static struct h_server srv, idp;
static pid_t idp_pid;
static char db_url[512], issuer[128], keys_file[64], bindings_file[64];
static char secret_file[64];

/* ---- the provider process ---- */

/* Start node tests/oidc/provider.mjs (port 0: any; its principals in the
 * hosted domain hd, NULL: example.com) and read its port. */
static pid_t provider_start(const char *keys, unsigned short port,
                            const char *hd, unsigned short *out_port)
{
  char port_arg[16], line[64] = "";
  int fds[2];
  size_t got = 0;
  pid_t pid;
  /* a readiness wait, not a timing: Node loading oidc-provider took over
   * 20 s while a fresh clone's suites shared the two cores */
  long long end = h_now_ms() + 120000;

  ck_assert_msg(
      access("deploy/tools/node_modules/oidc-provider/package.json", R_OK) == 0,
      "oidc-provider is not installed: npm ci --prefix deploy/tools "
      "(deploy/install-deps.sh does it)");
  snprintf(port_arg, sizeof(port_arg), "%u", port);
  ck_assert_int_eq(pipe(fds), 0);
  pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    char log[600];
    int fd;
    /* its log, kept: <h_tmp_base()>/gpugate-oidc-provider-<pid>.log */
    snprintf(log, sizeof(log), "%s/gpugate-oidc-provider-%d.log", h_tmp_base(),
             (int)getppid());
    fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(fds[1], 1);
    if (fd >= 0)
      dup2(fd, 2);
    close(fds[0]);
    execlp("node", "node", "tests/oidc/provider.mjs", "--keys", keys, "--port",
           port_arg, "--hd", hd ? hd : "example.com", (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  while (got < sizeof(line) - 1 && !strchr(line, '\n') && h_now_ms() < end) {
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    ssize_t r;
    if (poll(&p, 1, 200) <= 0)
      continue;
    r = read(fds[0], line + got, sizeof(line) - 1 - got);
    if (r <= 0)
      break;
    got += (size_t)r;
    line[got] = '\0';
  }
  close(fds[0]);
  ck_assert_msg(!strncmp(line, "port ", 5), "the provider did not start: %s",
                line);
  *out_port = (unsigned short)strtoul(line + 5, NULL, 10);
  return pid;
}

static void provider_stop(pid_t pid)
{
  if (pid <= 0)
    return;
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/* An access token of client for resource (NULL: the default, RS256) from
 * the provider at p. */
static char *token_at(const struct h_server *p, const char *client,
                      const char *resource)
{
  const char *hdr[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
  char body[512], *tok;
  struct h_resp r;

  snprintf(body, sizeof(body),
           "grant_type=client_credentials&client_id=%s&client_secret=%s-"
           "secret-0123456789abcdef&scope=api&resource=%s",
           client, client, resource ? resource : "https://gpugate.test/rs");
  ck_assert_int_eq(h_request(p, "POST", "/token", NULL, body, hdr, &r), 0);
  ck_assert_msg(r.status == 200, "token for %s: %ld %s", client, r.status,
                r.body);
  tok = strdup(h_str(r.json, "access_token"));
  h_resp_free(&r);
  return tok;
}

/* An access token of client from the suite's provider. */
static char *token_of(const char *client, const char *resource)
{
  return token_at(&idp, client, resource);
}

static long jwks_fetches(void)
{
  json_t *j = h_call(&idp, "GET", "/test/jwks-fetches", NULL, NULL, 200);
  long n = (long)json_integer_value(json_object_get(j, "fetches"));

  json_decref(j);
  return n;
}

/* The provider's private JWK for alg from its key file (new). */
static json_t *provider_key(const char *alg)
{
  json_t *set = json_load_file(keys_file, 0, NULL), *k, *out = NULL;
  size_t i;

  ck_assert_ptr_nonnull(set);
  json_array_foreach (json_object_get(set, "keys"), i, k)
    if (!strcmp(h_str(k, "alg"), alg))
      out = json_incref(k);
  json_decref(set);
  ck_assert_ptr_nonnull(out);
  return out;
}

/* ---- tokens signed here ---- */

static void b64(const void *in, size_t n, char *out, size_t cap)
{
  ck_assert(b64url_encode(in, n, out, cap) > 0 || n == 0);
}

/* header.claims.sig of claims (borrowed): signed by jose with jwk (private,
 * borrowed), or HMAC-SHA256 keyed with hmac (NUL-terminated), or unsigned
 * when both are NULL. New string. */
static char *sign_typ(const char *typ, const char *alg, const char *kid,
                      const json_t *claims, const json_t *jwk, const char *hmac)
{
  json_t *hdr =
      json_pack("{s:s, s:s, s:s}", "alg", alg, "typ", typ, "kid", kid);
  char *h = json_dumps(hdr, JSON_COMPACT), *c = json_dumps(claims, 0);
  char hb[512], cb[4096], sb[1024] = "", in[5000], *out = malloc(8192);

  b64(h, strlen(h), hb, sizeof(hb));
  b64(c, strlen(c), cb, sizeof(cb));
  if (jwk) {
    json_t *jws = json_pack("{s:s}", "payload", cb);
    json_t *sig = json_pack("{s:s}", "protected", hb);
    ck_assert_msg(jose_jws_sig(NULL, jws, sig, jwk), "jose cannot sign");
    snprintf(sb, sizeof(sb), "%s", h_str(jws, "signature"));
    json_decref(jws);
    json_decref(sig);
  } else if (hmac) {
    unsigned char mac[32];
    unsigned maclen = 0;
    snprintf(in, sizeof(in), "%s.%s", hb, cb);
    HMAC(EVP_sha256(), hmac, (int)strlen(hmac), (unsigned char *)in, strlen(in),
         mac, &maclen);
    b64(mac, maclen, sb, sizeof(sb));
  }
  snprintf(out, 8192, "%s.%s.%s", hb, cb, sb);
  json_decref(hdr);
  free(h);
  free(c);
  return out;
}

/* An at+jwt access token, as sign_typ. */
static char *sign(const char *alg, const char *kid, const json_t *claims,
                  const json_t *jwk, const char *hmac)
{
  return sign_typ("at+jwt", alg, kid, claims, jwk, hmac);
}

/* Claims as the provider gives team-a-bot, with iss, aud, hd and times
 * changeable. New reference. */
static json_t *claims(const char *iss, const char *aud, const char *hd,
                      long iat_ago, long exp_in)
{
  time_t now = time(NULL);

  return json_pack("{s:s, s:s, s:s, s:[s], s:s, s:I, s:I, s:s, s:s}", "iss",
                   iss, "aud", aud, "sub", "team-a-bot", "groups", "ml-team-a",
                   "hd", hd, "iat", (json_int_t)(now - iat_ago), "exp",
                   (json_int_t)(now + exp_in), "scope", "api", "client_id",
                   "team-a-bot");
}

/* The status of GET path with token. */
static long status_of(const char *path, const char *token)
{
  struct h_resp r;
  long s;

  ck_assert_int_eq(h_request(&srv, "GET", path, token, NULL, NULL, &r), 0);
  s = r.status;
  h_resp_free(&r);
  return s;
}

/* ---- the fixture ---- */

static const char bindings[] =
    "{\"access_bindings\": {"
    " \"team-a-members\": {\"subjects\": [{\"kind\": \"group\", \"name\": "
    "\"ml-team-a\"}], \"role\": \"member\", \"team\": \"team-a\"},"
    " \"team-b-members\": {\"subjects\": [{\"kind\": \"group\", \"name\": "
    "\"ml-team-b\"}, {\"kind\": \"email\", \"name\": "
    "\"trainer-ci@proj.iam.gserviceaccount.com\"}], \"role\": \"member\", "
    "\"team\": \"team-b\"},"
    " \"platform\": {\"subjects\": [{\"kind\": \"group\", \"name\": "
    "\"platform-admins\"}], \"role\": \"admin\"},"
    " \"finance\": {\"subjects\": [{\"kind\": \"email\", \"name\": "
    "\"auditor@example.com\"}], \"role\": \"finance\"}}}";

/* A gpugate replica on the suite's database, trusting the provider, its
 * sessions re-validated every refresh_s seconds. */
static int start_replica_of(struct h_server *s, const char *iss,
                            const char *refresh_s)
{
  char env_iss[200], env_secret[128], env_refresh[64];
  const char *env[12];
  int n = 0;

  snprintf(env_secret, sizeof(env_secret), "GPUGATE_OIDC_CLIENT_SECRET_FILE=%s",
           secret_file);
  env[n++] = env_secret;
  env[n++] = "GPUGATE_OIDC_CLIENT_ID=gpugate-console";
  env[n++] = "GPUGATE_PUBLIC_URL=https://gpugate.test";
  snprintf(env_iss, sizeof(env_iss), "GPUGATE_OIDC_ISSUERS=%s", iss);
  env[n++] = env_iss;
  env[n++] = "GPUGATE_OIDC_AUDIENCES=gpugate";
  env[n++] = "GPUGATE_OIDC_REQUIRED_CLAIMS=hd=example.com";
  env[n++] = "GPUGATE_OIDC_JWKS_COOLDOWN_S=2";
  env[n++] = "GPUGATE_RATE_LIMIT_RPS=100000";
  snprintf(env_refresh, sizeof(env_refresh), "GPUGATE_SESSION_REFRESH_S=%s",
           refresh_s);
  env[n++] = env_refresh;
  env[n] = NULL;
  return h_server_start(s, db_url, env);
}

/* A replica of the suite's provider. */
static int start_replica(struct h_server *s, const char *refresh_s)
{
  return start_replica_of(s, issuer, refresh_s);
}

/* A replica whose sessions are re-validated every second. */
static int start_gpugate(struct h_server *s)
{
  return start_replica(s, "1");
}

static void setup(void)
{
  char path[64], sub_binding[512], out[2048];
  const char *apply[] = {"apply", path, NULL};
  const char *apply2[] = {"apply", bindings_file, NULL};

  snprintf(keys_file, sizeof(keys_file), "/tmp/gpugate-oidc-keys-%d.json",
           (int)getpid());
  unlink(keys_file);
  idp_pid = provider_start(keys_file, 0, NULL, &idp.port);
  snprintf(issuer, sizeof(issuer), "http://127.0.0.1:%u", idp.port);
  h_db_apply("it_oidc", H_REFERENCE, db_url, sizeof(db_url));
  /* access_bindings in an apply file, one naming its subject's issuer */
  snprintf(sub_binding, sizeof(sub_binding),
           "{\"access_bindings\": {\"bare-subject\": {\"subjects\": "
           "[{\"kind\": \"subject\", \"name\": \"bare\", \"issuer\": \"%s\"}, "
           "{\"kind\": \"subject\", \"name\": \"nobody\", \"issuer\": "
           "\"https://elsewhere.example\"}], \"role\": \"member\", \"team\": "
           "\"team-c\"}}}",
           issuer);
  h_write_temp("oidc-bindings", bindings, bindings_file, sizeof(bindings_file));
  ck_assert_msg(h_gpugate(db_url, apply2, out, sizeof(out)) == 0,
                "apply bindings: %s", out);
  h_write_temp("oidc-subject", sub_binding, path, sizeof(path));
  ck_assert_msg(h_gpugate(db_url, apply, out, sizeof(out)) == 0,
                "apply subject binding: %s", out);
  unlink(path);
  h_write_temp("oidc-client", "console-secret-0123456789abcdef\n", secret_file,
               sizeof(secret_file));
  ck_assert_msg(start_gpugate(&srv) == 0, "gpugate did not start; see %s",
                srv.log);
}

static void teardown(void)
{
  h_server_stop(&srv);
  provider_stop(idp_pid);
  unlink(keys_file);
  unlink(bindings_file);
  unlink(secret_file);
}

/* ---- the cases ---- */

/* Group, email and subject bindings; a member of two teams; no binding;
 * administrator and finance by binding; gpugate's own tokens beside. */
START_TEST(bindings_decide)
{
  char *bot = token_of("team-a-bot", NULL);
  char *ci = token_of("ci-trainer", "https://gpugate.test/es");
  char *ops = token_of("ml-ops", NULL), *bare = token_of("bare", NULL);
  char *nobody = token_of("nobody", NULL);
  char *unverified = token_of("unverified", NULL);
  char *platform = token_of("platform", NULL);
  char *auditor = token_of("auditor", NULL);
  char *own = h_token("team-d", "member", 600);
  json_t *who, *teams;
  struct h_resp r;

  /* by group */
  ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", bot), 200);
  ck_assert_int_eq(status_of("/v1/teams/team-b/jobs", bot), 404);
  who = h_call(&srv, "GET", "/v1/whoami", bot, NULL, 200);
  ck_assert_str_eq(h_str(who, "issuer"), issuer);
  ck_assert_str_eq(h_str(who, "subject"), "team-a-bot");
  ck_assert(json_is_null(json_object_get(who, "email")));
  ck_assert_str_eq(h_str(who, "via"), "token");
  ck_assert_uint_eq(json_array_size(json_object_get(who, "grants")), 1);
  ck_assert_str_eq(
      h_str(json_array_get(json_object_get(who, "grants"), 0), "role"),
      "member");
  ck_assert_str_eq(
      h_str(json_array_get(json_object_get(who, "grants"), 0), "team"),
      "team-a");
  json_decref(who);

  /* by verified email, with an ES256 at+jwt token */
  ck_assert_int_eq(status_of("/v1/teams/team-b/jobs", ci), 200);
  ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", ci), 404);
  who = h_call(&srv, "GET", "/v1/whoami", ci, NULL, 200);
  ck_assert_str_eq(h_str(who, "email"),
                   "trainer-ci@proj.iam.gserviceaccount.com");
  json_decref(who);
  /* the same email, not verified: it matches nothing */
  ck_assert_int_eq(h_request(&srv, "GET", "/v1/teams/team-b/jobs", unverified,
                             NULL, NULL, &r),
                   0);
  ck_assert_int_eq(r.status, 403);
  ck_assert_msg(strstr(r.body, "matches no access binding"), "%s", r.body);
  h_resp_free(&r);

  /* by subject, for its issuer only */
  ck_assert_int_eq(status_of("/v1/teams/team-c/jobs", bare), 200);
  ck_assert_int_eq(status_of("/v1/teams/team-c/jobs", nobody), 403);

  /* a member of two teams reaches each, and lists both */
  ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", ops), 200);
  ck_assert_int_eq(status_of("/v1/teams/team-b/jobs", ops), 200);
  ck_assert_int_eq(status_of("/v1/teams/team-c/jobs", ops), 404);
  teams = h_call(&srv, "GET", "/v1/teams", ops, NULL, 200);
  ck_assert_uint_eq(json_array_size(json_object_get(teams, "items")), 2);
  json_decref(teams);
  who = h_call(&srv, "GET", "/v1/whoami", ops, NULL, 200);
  ck_assert_uint_eq(json_array_size(json_object_get(who, "grants")), 2);
  json_decref(who);

  /* administrator and finance by binding */
  ck_assert_int_eq(status_of("/v1/cluster-queues", platform), 200);
  ck_assert_int_eq(status_of("/v1/teams/team-d/jobs", platform), 200);
  ck_assert_int_eq(status_of("/v1/access-bindings", platform), 200);
  ck_assert_int_eq(
      status_of("/v1/costs?from=2026-10-01&to=2026-11-01", auditor), 200);
  ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", auditor), 403);
  ck_assert_int_eq(status_of("/v1/access-bindings", bot), 403);

  /* gpugate's own tokens keep working beside the provider's */
  ck_assert_int_eq(status_of("/v1/teams/team-d/jobs", own), 200);
  who = h_call(&srv, "GET", "/v1/whoami", own, NULL, 200);
  ck_assert_str_eq(h_str(who, "team"), "team-d");
  ck_assert_str_eq(h_str(who, "role"), "member");
  json_decref(who);

  free(bot);
  free(ci);
  free(ops);
  free(bare);
  free(nobody);
  free(unverified);
  free(platform);
  free(auditor);
  free(own);
}
END_TEST

/* Bindings are administrator objects: validated, versioned, and in force
 * on the next request once changed. */
START_TEST(bindings_managed)
{
  char *platform = token_of("platform", NULL);
  char *nobody = token_of("nobody", NULL);
  struct h_resp r;
  json_t *j;

  ck_assert_int_eq(status_of("/v1/teams/team-d/jobs", nobody), 403);
#define PUT_BINDING(name_, body_, want_, field_)                               \
  do {                                                                         \
    ck_assert_int_eq(h_request(&srv, "PUT", "/v1/access-bindings/" name_,      \
                               platform, body_, NULL, &r),                     \
                     0);                                                       \
    ck_assert_msg(want_ >= 400 ? h_is_problem(&r, want_, field_)               \
                               : r.status == want_,                            \
                  "%s: %ld %s", body_, r.status, r.body);                      \
    h_resp_free(&r);                                                           \
  } while (0)
  PUT_BINDING("x",
              "{\"subjects\": [{\"kind\": \"group\", \"name\": \"g\"}], "
              "\"role\": \"member\"}",
              400, "team");
  PUT_BINDING("x",
              "{\"subjects\": [{\"kind\": \"group\", \"name\": \"g\"}], "
              "\"role\": \"admin\", \"team\": \"team-a\"}",
              400, "team");
  PUT_BINDING("x",
              "{\"subjects\": [{\"kind\": \"user\", \"name\": \"g\"}], "
              "\"role\": \"admin\"}",
              400, "subjects[0].kind");
  PUT_BINDING("x", "{\"subjects\": [], \"role\": \"admin\"}", 400, "subjects");
  PUT_BINDING("x",
              "{\"subjects\": [{\"kind\": \"email\", \"name\": \"\"}], "
              "\"role\": \"finance\"}",
              400, "subjects[0].name");
  PUT_BINDING("x",
              "{\"subjects\": [{\"kind\": \"group\", \"name\": \"g\"}], "
              "\"role\": \"owner\"}",
              400, "role");
  PUT_BINDING("x",
              "{\"subjects\": [{\"kind\": \"group\", \"name\": \"g\"}], "
              "\"role\": \"member\", \"team\": \"team-zz\"}",
              422, "team");
  PUT_BINDING("nobody-d",
              "{\"subjects\": [{\"kind\": \"group\", \"name\": "
              "\"nobody\"}], \"role\": \"member\", \"team\": \"team-d\"}",
              201, NULL);
#undef PUT_BINDING
  /* in force at once on this replica, no restart, no re-login */
  ck_assert_int_eq(status_of("/v1/teams/team-d/jobs", nobody), 200);
  j = h_call(&srv, "GET", "/v1/access-bindings/nobody-d", platform, NULL, 200);
  ck_assert_str_eq(h_str(j, "team"), "team-d");
  json_decref(j);
  j = h_call(&srv, "GET", "/v1/access-bindings", platform, NULL, 200);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "items")), 6);
  json_decref(j);
  json_decref(h_call(&srv, "DELETE", "/v1/access-bindings/nobody-d", platform,
                     NULL, 204));
  ck_assert_int_eq(status_of("/v1/teams/team-d/jobs", nobody), 403);
  ck_assert_msg(h_log_count(&srv, "access binding \\\"nobody-d\\\" by") >= 2,
                "administrator changes are logged with their actor");
  free(platform);
  free(nobody);
}
END_TEST

/* The status of GET path with token at replica s. */
static long status_at(const struct h_server *s, const char *path,
                      const char *token)
{
  struct h_resp r;
  long st;

  ck_assert_int_eq(h_request(s, "GET", path, token, NULL, NULL, &r), 0);
  st = r.status;
  h_resp_free(&r);
  return st;
}

/* Wait (at most 10 s) until GET path with token answers want at s. */
static void eventually(const struct h_server *s, const char *path,
                       const char *token, long want)
{
  long long end = h_now_ms() + 10000;
  long st;

  while ((st = status_at(s, path, token)) != want && h_now_ms() < end)
    h_sleep_ms(20);
  ck_assert_msg(st == want, "%s: %ld after 10 s, want %ld", path, st, want);
}

/* A binding changed through one replica reaches another by the change's
 * notification, with no restart and no query per request. */
START_TEST(bindings_reach_every_replica)
{
  char *platform = token_of("platform", NULL);
  char *nobody = token_of("nobody", NULL);
  struct h_server other;

  ck_assert_msg(start_gpugate(&other) == 0,
                "the second replica did not "
                "start; see %s",
                other.log);
  ck_assert_int_eq(status_at(&other, "/v1/teams/team-d/jobs", nobody), 403);
  json_decref(h_call(&srv, "PUT", "/v1/access-bindings/nobody-d", platform,
                     "{\"subjects\": [{\"kind\": \"email\", \"name\": "
                     "\"nobody@example.com\"}], \"role\": \"member\", "
                     "\"team\": \"team-d\"}",
                     201));
  eventually(&other, "/v1/teams/team-d/jobs", nobody, 200);
  json_decref(h_call(&srv, "DELETE", "/v1/access-bindings/nobody-d", platform,
                     NULL, 204));
  eventually(&other, "/v1/teams/team-d/jobs", nobody, 403);
  h_server_stop(&other);
  free(platform);
  free(nobody);
}
END_TEST

/* Forgeries, each changing one thing of a genuine token: all 401. */
START_TEST(forgeries_refused)
{
  json_t *rs = provider_key("RS256"), *es = provider_key("ES256");
  json_t *stranger = NULL,
         *good = claims(issuer, "gpugate", "example.com", 0, 300);
  json_t *c;
  const char *rs_kid = h_str(rs, "kid");
  char *t, *pem_text;
  EVP_PKEY *pub;
  BIO *bio;
  FILE *f;
  long len;

  /* the genuine article: signed with the provider's key, accepted */
  t = sign("RS256", rs_kid, good, rs, NULL);
  ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", t), 200);
  free(t);
  t = sign("ES256", h_str(es, "kid"), good, es, NULL);
  ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", t), 200);
  free(t);

  /* alg none */
  t = sign("none", rs_kid, good, NULL, NULL);
  ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", t), 401);
  free(t);
  /* HS256 keyed with the provider's public key as PEM */
  pub = jose_openssl_jwk_to_EVP_PKEY(NULL, rs);
  bio = BIO_new(BIO_s_mem());
  ck_assert(pub && bio && PEM_write_bio_PUBKEY(bio, pub));
  len = BIO_get_mem_data(bio, &pem_text);
  pem_text = strndup(pem_text, (size_t)len);
  t = sign("HS256", rs_kid, good, NULL, pem_text);
  ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", t), 401);
  free(t);
  free(pem_text);
  BIO_free(bio);
  EVP_PKEY_free(pub);
  /* a stranger's key with the provider's kid */
  f = fopen(KEY_STRANGER, "r");
  ck_assert_ptr_nonnull(f);
  pub = PEM_read_PrivateKey(f, NULL, NULL, NULL);
  fclose(f);
  stranger = jose_openssl_jwk_from_EVP_PKEY(NULL, pub);
  EVP_PKEY_free(pub);
  t = sign("RS256", rs_kid, good, stranger, NULL);
  ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", t), 401);
  free(t);
  /* signed by the provider's key, one claim wrong */
#define WRONG(...)                                                             \
  do {                                                                         \
    c = claims(__VA_ARGS__);                                                   \
    t = sign("RS256", rs_kid, c, rs, NULL);                                    \
    ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", t), 401);              \
    free(t);                                                                   \
    json_decref(c);                                                            \
  } while (0)
  WRONG("http://127.0.0.1:1", "gpugate", "example.com", 0, 300); /* iss */
  WRONG(issuer, "other-api", "example.com", 0, 300);             /* aud */
  WRONG(issuer, "gpugate", "example.com", 700, -120);            /* expired */
  WRONG(issuer, "gpugate", "evil.example", 0, 300);              /* hd */
  /* longer than GPUGATE_OIDC_MAX_LIFETIME_S (a day by default) */
  WRONG(issuer, "gpugate", "example.com", 0, 86400 + 600);
#undef WRONG
  json_decref(rs);
  json_decref(es);
  json_decref(stranger);
  json_decref(good);
}
END_TEST

/* 60 tokens with random kids cost the provider at most 2 key-set fetches. */
START_TEST(random_kids_bounded)
{
  json_t *rs = provider_key("RS256"),
         *good = claims(issuer, "gpugate", "example.com", 0, 300);
  unsigned seed = (unsigned)getpid();
  long before;
  char kid[32], *t;
  int i;

  t = token_of("team-a-bot", NULL); /* keys cached */
  ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", t), 200);
  free(t);
  before = jwks_fetches();
  for (i = 0; i < 60; i++) {
    snprintf(kid, sizeof(kid), "forged-%08x", h_next_rand(&seed));
    t = sign("RS256", kid, good, rs, NULL);
    ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", t), 401);
    free(t);
  }
  ck_assert_int_le(jwks_fetches() - before, 2);
  json_decref(rs);
  json_decref(good);
}
END_TEST

/* The provider goes down: cached keys keep working, a new kid fails
 * closed; it comes back with new keys: they are picked up. */
START_TEST(outage_and_rotation)
{
  json_t *rs = provider_key("RS256"),
         *good = claims(issuer, "gpugate", "example.com", 0, 300);
  char *t, rotated[80];
  unsigned short port = idp.port;
  pid_t again;

  t = token_of("team-a-bot", NULL);
  ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", t), 200);
  free(t);
  provider_stop(idp_pid);
  idp_pid = -1;
  /* a token never seen before, signed by a cached key */
  t = sign("RS256", h_str(rs, "kid"), good, rs, NULL);
  ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", t), 200);
  free(t);
  h_sleep_ms(2100); /* past the refetch cooldown: the refetch fails */
  t = sign("RS256", "rotated-while-down", good, rs, NULL);
  ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", t), 401);
  free(t);

  /* back, on the same issuer, with new keys */
  snprintf(rotated, sizeof(rotated), "%s.rotated", keys_file);
  unlink(rotated);
  again = provider_start(rotated, port, NULL, &idp.port);
  ck_assert_uint_eq(idp.port, port);
  h_sleep_ms(2100);
  t = token_of("team-a-bot", NULL);
  ck_assert_int_eq(status_of("/v1/teams/team-a/jobs", t), 200);
  free(t);
  provider_stop(again);
  unlink(rotated);
  json_decref(rs);
  json_decref(good);
}
END_TEST

/* Job events carry who caused them: the verified email, else sub; null
 * for the system's own moves. */
START_TEST(events_name_their_actor)
{
  char *ci = token_of("ci-trainer", NULL), *bot = token_of("team-a-bot", NULL);
  char id[32], path[128];
  json_t *ev, *items, *e;
  size_t i;
  int saw_system = 0;

  h_submit_typical(&srv, "team-b", ci, "lp", "by-ci", "default", id);
  snprintf(path, sizeof(path), "/v1/teams/team-b/jobs/%s/cancel", id);
  json_decref(h_call(&srv, "POST", path, ci, NULL, 200));
  snprintf(path, sizeof(path), "/v1/teams/team-b/jobs/%s/events", id);
  ev = h_call(&srv, "GET", path, ci, NULL, 200);
  items = json_object_get(ev, "items");
  json_array_foreach (items, i, e) {
    const char *reason = h_str(e, "reason");
    if (!strcmp(reason, "Submitted") || !strcmp(reason, "CancelledByUser"))
      ck_assert_str_eq(h_str(e, "actor"),
                       "trainer-ci@proj.iam.gserviceaccount.com");
    else {
      ck_assert(json_is_null(json_object_get(e, "actor")));
      saw_system++;
    }
  }
  ck_assert_uint_ge(json_array_size(items), 2);
  json_decref(ev);
  /* no email: the sub */
  h_submit_typical(&srv, "team-a", bot, "lp", "by-bot", "default", id);
  snprintf(path, sizeof(path), "/v1/teams/team-a/jobs/%s/events", id);
  ev = h_call(&srv, "GET", path, bot, NULL, 200);
  ck_assert_str_eq(
      h_str(json_array_get(json_object_get(ev, "items"), 0), "actor"),
      "team-a-bot");
  json_decref(ev);
  (void)saw_system;
  free(ci);
  free(bot);
}
END_TEST

/* Two issuers of one organisation: the company's IdP (the suite's
 * provider) and a second oidc-provider standing in for Google (hosted
 * domain google.test), whose principals have the same sub and the same
 * group names. A binding subject without an issuer is the first issuer's
 * only; required claims are per issuer (GPUGATE_OIDC_PROVIDERS_FILE). */
START_TEST(two_issuers_apart)
{
  char keys_b[80], iss_b[128], env_iss[300], env_file[128], file[64];
  char providers[600], body[512];
  const char *env[8];
  struct h_server two, b = {0};
  json_t *rs = provider_key("RS256"), *c, *j, *subj;
  char *platform_a, *platform_b, *bot_a, *bot_b, *ci_b, *admin, *t;
  pid_t b_pid;
  size_t i;

  snprintf(keys_b, sizeof(keys_b), "/tmp/gpugate-oidc-keys-b-%d.json",
           (int)getpid());
  unlink(keys_b);
  b_pid = provider_start(keys_b, 0, "google.test", &b.port);
  snprintf(iss_b, sizeof(iss_b), "http://127.0.0.1:%u", b.port);
  /* hd=example.com is the company's rule, hd=google.test Google's */
  snprintf(providers, sizeof(providers),
           "[{\"issuer\": \"%s\", \"required_claims\": [\"hd=example.com\"]},"
           " {\"issuer\": \"%s\", \"required_claims\": [\"hd=google.test\"],"
           " \"audiences\": [\"gpugate\"], \"algs\": [\"RS256\", \"ES256\"],"
           " \"groups_claim\": \"groups\"}]",
           issuer, iss_b);
  h_write_temp("oidc-providers", providers, file, sizeof(file));
  snprintf(env_iss, sizeof(env_iss), "GPUGATE_OIDC_ISSUERS=%s,%s", issuer,
           iss_b);
  snprintf(env_file, sizeof(env_file), "GPUGATE_OIDC_PROVIDERS_FILE=%s", file);
  env[0] = env_iss;
  env[1] = env_file;
  env[2] = "GPUGATE_OIDC_AUDIENCES=gpugate";
  env[3] = "GPUGATE_RATE_LIMIT_RPS=100000";
  env[4] = NULL;
  ck_assert_msg(h_server_start(&two, db_url, env) == 0,
                "gpugate with two issuers did not start; see %s", two.log);

  platform_a = token_of("platform", NULL);
  platform_b = token_at(&b, "platform", NULL);
  bot_a = token_of("team-a-bot", NULL);
  bot_b = token_at(&b, "team-a-bot", NULL);
  ci_b = token_at(&b, "ci-trainer", NULL);
  admin = h_token(NULL, "admin", 600);

  /* the same group name at the second issuer grants nothing */
  ck_assert_int_eq(status_at(&two, "/v1/access-bindings", platform_a), 200);
  ck_assert_int_eq(status_at(&two, "/v1/access-bindings", platform_b), 403);
  ck_assert_int_eq(status_at(&two, "/v1/teams/team-a/jobs", bot_a), 200);
  ck_assert_int_eq(status_at(&two, "/v1/teams/team-a/jobs", bot_b), 403);
  /* nor the same verified email */
  ck_assert_int_eq(status_at(&two, "/v1/teams/team-b/jobs", ci_b), 403);

  /* the same sub: a binding without an issuer is the first issuer's */
  json_decref(h_call(&two, "PUT", "/v1/access-bindings/bot-sub", admin,
                     "{\"subjects\": [{\"kind\": \"subject\", \"name\": "
                     "\"team-a-bot\"}], \"role\": \"member\", \"team\": "
                     "\"team-d\"}",
                     201));
  ck_assert_int_eq(status_at(&two, "/v1/teams/team-d/jobs", bot_a), 200);
  ck_assert_int_eq(status_at(&two, "/v1/teams/team-d/jobs", bot_b), 403);
  /* and GET says which issuer it matches */
  j = h_call(&two, "GET", "/v1/access-bindings/bot-sub", admin, NULL, 200);
  subj = json_array_get(json_object_get(j, "subjects"), 0);
  ck_assert_str_eq(h_str(subj, "issuer"), issuer);
  json_decref(j);
  j = h_call(&two, "GET", "/v1/access-bindings", admin, NULL, 200);
  json_array_foreach (json_object_get(j, "items"), i, c)
    if (!strcmp(h_str(c, "name"), "bot-sub"))
      ck_assert_str_eq(
          h_str(json_array_get(json_object_get(c, "subjects"), 0), "issuer"),
          issuer);
  json_decref(j);

  /* a binding naming the second issuer grants its principals only */
  snprintf(body, sizeof(body),
           "{\"subjects\": [{\"kind\": \"group\", \"name\": \"ml-team-a\", "
           "\"issuer\": \"%s\"}], \"role\": \"member\", \"team\": \"team-c\"}",
           iss_b);
  json_decref(
      h_call(&two, "PUT", "/v1/access-bindings/google-a", admin, body, 201));
  ck_assert_int_eq(status_at(&two, "/v1/teams/team-c/jobs", bot_b), 200);
  ck_assert_int_eq(status_at(&two, "/v1/teams/team-c/jobs", bot_a), 404);
  j = h_call(&two, "GET", "/v1/whoami", bot_b, NULL, 200);
  ck_assert_str_eq(h_str(j, "issuer"), iss_b);
  json_decref(j);

  /* required claims per issuer: Google's hd rule is not the company's */
  c = claims(issuer, "gpugate", "google.test", 0, 300);
  t = sign("RS256", h_str(rs, "kid"), c, rs, NULL);
  ck_assert_int_eq(status_at(&two, "/v1/teams/team-a/jobs", t), 401);
  free(t);
  json_decref(c);

  json_decref(
      h_call(&two, "DELETE", "/v1/access-bindings/bot-sub", admin, NULL, 204));
  json_decref(
      h_call(&two, "DELETE", "/v1/access-bindings/google-a", admin, NULL, 204));
  h_server_stop(&two);
  provider_stop(b_pid);
  unlink(keys_b);
  unlink(file);
  json_decref(rs);
  free(platform_a);
  free(platform_b);
  free(bot_a);
  free(bot_b);
  free(ci_b);
  free(admin);
}
END_TEST

/* ---- console sign-in, driven as a browser would ---- */

/* One request of the browser at the provider (cookies kept in c): GET
 * url, or POST form when non-NULL; the redirect it answers (new string). */
static char *browse(CURL *c, const char *url, const char *form)
{
  char *next = NULL;
  long status = 0;

  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  if (form)
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, form);
  ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &next);
  ck_assert_msg(status / 100 == 3 && next, "%s answered %ld, no redirect", url,
                status);
  return strdup(next);
}

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
  (void)p;
  (void)ud;
  return size * n;
}

/* The Cookie header of the session in the Set-Cookie of r, into out. */
static void session_cookie(const struct h_resp *r, char *out, size_t len)
{
  char set[512];
  const char *v = strstr(r->headers, "Set-Cookie: __Host-gpugate_session=");

  ck_assert_msg(v, "no session cookie: %s", r->headers);
  v += strlen("Set-Cookie: ");
  snprintf(set, sizeof(set), "%.*s", (int)strcspn(v, "\r\n"), v);
  v = set;
  ck_assert_msg(strstr(v, "HttpOnly") && strstr(v, "Secure") &&
                    strstr(v, "SameSite=Strict") && strstr(v, "Path=/"),
                "cookie attributes: %s", v);
  snprintf(out, len, "Cookie: %.*s", (int)strcspn(v, ";"), v);
}

/* The Cookie header of the sign-in's flow cookie in the Set-Cookie of r
 * (a /auth/login answer), into out; its attributes checked. */
static void flow_cookie(const struct h_resp *r, char *out, size_t len)
{
  char set[512];
  const char *v = h_header(r, "Set-Cookie", set, sizeof(set));

  ck_assert_ptr_nonnull(v);
  ck_assert_msg(strstr(v, "__Host-gpugate_flow=") == v, "%s", v);
  ck_assert_msg(strstr(v, "HttpOnly") && strstr(v, "Secure") &&
                    strstr(v, "SameSite=Lax") && strstr(v, "Path=/") &&
                    strstr(v, "Max-Age=600"),
                "flow cookie attributes: %s", v);
  snprintf(out, len, "Cookie: %.*s", (int)strcspn(v, ";"), v);
}

/* GET /v1/whoami by the session of cookie at s: its status. */
static long session_status(const struct h_server *s, const char *cookie)
{
  const char *with[3] = {cookie, "X-GPUGate-CSRF: 1", NULL};
  struct h_resp r;
  long st;

  ck_assert_int_eq(h_request(s, "GET", "/v1/whoami", NULL, NULL, with, &r), 0);
  st = r.status;
  h_resp_free(&r);
  return st;
}

/* Wait (at most 30 s, polling) until the session of cookie answers want
 * at s: another replica refuses an ended session once it reads the
 * sessions' stamp (at most a second later). Its status. */
static long session_eventually(const struct h_server *s, const char *cookie,
                               long want)
{
  long long end = h_now_ms() + 30000;
  long st;

  while ((st = session_status(s, cookie)) != want && h_now_ms() < end)
    h_sleep_ms(20);
  return st;
}

/* A sample of s's /metrics (0 when absent). */
static double metric_at(const struct h_server *s, const char *series)
{
  char *admin = h_token(NULL, "admin", 600);
  struct h_resp r;
  double v;

  ck_assert_int_eq(h_request(s, "GET", "/metrics", admin, NULL, NULL, &r), 0);
  ck_assert_int_eq(r.status, 200);
  v = h_sample(r.body, series);
  h_resp_free(&r);
  free(admin);
  return v < 0 ? 0 : v;
}

/* The whole sign-in: gpugate's /auth/login, the provider's login and
 * consent pages (devInteractions, user bob: groups ml-team-a and
 * ml-team-b), gpugate's /auth/callback; then the session at work, its
 * CSRF header, one use per state, and logout. */
START_TEST(console_sign_in)
{
  CURL *c = curl_easy_init();
  char cookie[256], *url, *next, cb[1024], flow[256], other_flow[256];
  const char *with[3] = {cookie, "X-GPUGate-CSRF: 1", NULL};
  const char *with_flow[2] = {flow, NULL};
  const char *with_other[2] = {other_flow, NULL};
  const char *without[2] = {cookie, NULL};
  struct h_resp r;
  char loc[2048];
  int hops;

  ck_assert_int_eq(h_request(&srv, "GET", "/auth/login", NULL, NULL, NULL, &r),
                   0);
  ck_assert_int_eq(r.status, 302);
  url = strdup(h_header(&r, "Location", loc, sizeof(loc)));
  flow_cookie(&r, flow, sizeof(flow));
  h_resp_free(&r);
  /* another sign-in started in another browser: its own flow cookie */
  ck_assert_int_eq(h_request(&srv, "GET", "/auth/login", NULL, NULL, NULL, &r),
                   0);
  flow_cookie(&r, other_flow, sizeof(other_flow));
  h_resp_free(&r);
  ck_assert_msg(!strncmp(url, issuer, strlen(issuer)) &&
                    strstr(url, "code_challenge_method=S256") &&
                    strstr(url, "&state=") && strstr(url, "&nonce=") &&
                    strstr(url, "redirect_uri=https%3A%2F%2Fgpugate.test") &&
                    !strstr(url, "prompt="),
                "%s", url);
  /* the console's silent return: prompt=none, and no other prompt; the
   * provider's login_required to it goes to the console's sign-in page */
  ck_assert_int_eq(
      h_request(&srv, "GET", "/auth/login?prompt=none", NULL, NULL, NULL, &r),
      0);
  ck_assert_int_eq(r.status, 302);
  ck_assert_msg(
      strstr(h_header(&r, "Location", loc, sizeof(loc)), "&prompt=none"), "%s",
      loc);
  h_resp_free(&r);
  ck_assert_int_eq(
      h_request(&srv, "GET", "/auth/login?prompt=login", NULL, NULL, NULL, &r),
      0);
  ck_assert_msg(h_is_problem(&r, 400, "prompt"), "%ld %s", r.status, r.body);
  h_resp_free(&r);
  ck_assert_int_eq(h_request(&srv, "GET",
                             "/auth/callback?error=login_required&state=s",
                             NULL, NULL, NULL, &r),
                   0);
  ck_assert_int_eq(r.status, 302);
  ck_assert_str_eq(h_header(&r, "Location", loc, sizeof(loc)), "/#/signin");
  h_resp_free(&r);

  /* at the provider, with its cookies, until it sends the browser back */
  curl_easy_setopt(c, CURLOPT_COOKIEFILE, "");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  for (hops = 0; hops < 10 && strncmp(url, "https://gpugate.test/", 21);
       hops++) {
    const char *form = NULL;
    if (strstr(url, "/interaction/"))
      form =
          hops < 3 ? "prompt=login&login=bob&password=any" : "prompt=consent";
    if (form) {
      /* the page first, as a browser shows it; then its form */
      curl_easy_setopt(c, CURLOPT_URL, url);
      curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
      ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
    }
    next = browse(c, url, form);
    free(url);
    url = next;
  }
  curl_easy_cleanup(c);
  ck_assert_msg(strstr(url, "/auth/callback?code="), "ended at %s", url);
  snprintf(cb, sizeof(cb), "%s", url + strlen("https://gpugate.test"));
  free(url);

  /* the callback URL opened by another client (login CSRF: the attacker
   * sends his own to a victim): without the flow cookie, or with another
   * sign-in's, it is refused with a page saying so, and opens nothing */
  ck_assert_int_eq(h_request(&srv, "GET", cb, NULL, NULL, NULL, &r), 0);
  ck_assert_msg(r.status == 400 &&
                    strstr(r.body, "not started in this browser"),
                "%ld %s", r.status, r.body);
  ck_assert_str_eq(h_header(&r, "Content-Type", loc, sizeof(loc)),
                   "text/html; charset=utf-8");
  ck_assert_msg(!strstr(r.headers, "gpugate_session="), "%s", r.headers);
  h_resp_free(&r);
  ck_assert_int_eq(h_request(&srv, "GET", cb, NULL, NULL, with_other, &r), 0);
  ck_assert_msg(r.status == 400, "%ld %s", r.status, r.body);
  ck_assert_msg(!strstr(r.headers, "gpugate_session="), "%s", r.headers);
  h_resp_free(&r);

  /* back at gpugate in the browser that started it: a session, a cookie,
   * the flow cookie cleared, and a redirect to the console */
  ck_assert_int_eq(h_request(&srv, "GET", cb, NULL, NULL, with_flow, &r), 0);
  ck_assert_msg(r.status == 302, "%ld %s", r.status, r.body);
  ck_assert_str_eq(h_header(&r, "Location", loc, sizeof(loc)), "/");
  session_cookie(&r, cookie, sizeof(cookie));
  ck_assert_msg(strstr(r.headers, "__Host-gpugate_flow=; Path=/; Max-Age=0"),
                "%s", r.headers);
  h_resp_free(&r);

  /* the session at work, with the CSRF header only */
  ck_assert_int_eq(h_request(&srv, "GET", "/v1/whoami", NULL, NULL, with, &r),
                   0);
  ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
  ck_assert_str_eq(h_str(r.json, "via"), "session");
  ck_assert_str_eq(h_str(r.json, "email"), "bob@example.com");
  ck_assert_str_eq(h_str(r.json, "subject"), "bob");
  ck_assert_uint_eq(json_array_size(json_object_get(r.json, "grants")), 2);
  h_resp_free(&r);
  ck_assert_int_eq(
      h_request(&srv, "GET", "/v1/teams/team-b/jobs", NULL, NULL, with, &r), 0);
  ck_assert_int_eq(r.status, 200);
  h_resp_free(&r);
  ck_assert_int_eq(
      h_request(&srv, "GET", "/v1/teams/team-b/jobs", NULL, NULL, without, &r),
      0);
  ck_assert_msg(r.status == 403 && strstr(r.body, "X-GPUGate-CSRF"), "%ld %s",
                r.status, r.body);
  h_resp_free(&r);

  /* sessions expire (GPUGATE_SESSION_TTL_S): past expires_at, 401 (an
   * expiry brought forward reaches the replica's cache with the sessions'
   * stamp, within a second) */
  {
    PGconn *pg = h_db_connect(db_url);
    ck_assert_int_eq(PQstatus(pg), CONNECTION_OK);
    h_db_int(pg, "WITH s AS (UPDATE sessions SET expires_at = now() - "
                 "interval '1 s' RETURNING 1) SELECT count(*) FROM s");
    ck_assert_int_eq(session_eventually(&srv, cookie, 401), 401);
    ck_assert_int_eq(h_db_int(pg, "WITH s AS (UPDATE sessions SET "
                                  "expires_at = now() + interval '1 h' "
                                  "RETURNING 1) SELECT count(*) FROM s"),
                     1);
    PQfinish(pg);
  }
  ck_assert_int_eq(h_request(&srv, "GET", "/v1/whoami", NULL, NULL, with, &r),
                   0);
  ck_assert_int_eq(r.status, 200);
  h_resp_free(&r);

  /* a state is used once */
  ck_assert_int_eq(h_request(&srv, "GET", cb, NULL, NULL, with_flow, &r), 0);
  ck_assert_msg(h_is_problem(&r, 400, "state"), "%ld %s", r.status, r.body);
  h_resp_free(&r);

  /* logout: refused without the header (a cross-site form), then done */
  ck_assert_int_eq(
      h_request(&srv, "POST", "/auth/logout", NULL, NULL, without, &r), 0);
  ck_assert_int_eq(r.status, 403);
  h_resp_free(&r);
  ck_assert_int_eq(
      h_request(&srv, "POST", "/auth/logout", NULL, NULL, with, &r), 0);
  ck_assert_int_eq(r.status, 204);
  ck_assert_ptr_nonnull(
      strstr(h_header(&r, "Set-Cookie", loc, sizeof(loc)), "Max-Age=0"));
  h_resp_free(&r);
  ck_assert_int_eq(h_request(&srv, "GET", "/v1/whoami", NULL, NULL, with, &r),
                   0);
  ck_assert_int_eq(r.status, 401);
  h_resp_free(&r);
}
END_TEST

/* A whole sign-in of user (devInteractions: any password) in a browser of
 * its own (a fresh provider session): the Cookie header of its gpugate
 * session into cookie. */
static void sign_in(const char *user, char *cookie, size_t len)
{
  CURL *c = curl_easy_init();
  char loc[2048], flow[256], login[128], *url, *next;
  const char *with_flow[2] = {flow, NULL};
  struct h_resp r;
  int hops;

  ck_assert_int_eq(h_request(&srv, "GET", "/auth/login", NULL, NULL, NULL, &r),
                   0);
  ck_assert_int_eq(r.status, 302);
  url = strdup(h_header(&r, "Location", loc, sizeof(loc)));
  flow_cookie(&r, flow, sizeof(flow));
  h_resp_free(&r);
  snprintf(login, sizeof(login), "prompt=login&login=%s&password=any", user);
  curl_easy_setopt(c, CURLOPT_COOKIEFILE, "");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  for (hops = 0; hops < 10 && strncmp(url, "https://gpugate.test/", 21);
       hops++) {
    const char *form = NULL;
    if (strstr(url, "/interaction/"))
      form = hops < 3 ? login : "prompt=consent";
    if (form) {
      curl_easy_setopt(c, CURLOPT_URL, url);
      curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
      ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
    }
    next = browse(c, url, form);
    free(url);
    url = next;
  }
  curl_easy_cleanup(c);
  ck_assert_msg(strstr(url, "/auth/callback?code="), "ended at %s", url);
  ck_assert_int_eq(h_request(&srv, "GET", url + strlen("https://gpugate.test"),
                             NULL, NULL, with_flow, &r),
                   0);
  free(url);
  ck_assert_msg(r.status == 302, "%ld %s", r.status, r.body);
  session_cookie(&r, cookie, len);
  h_resp_free(&r);
}

/* A logout token of the suite's provider for the console: sid and sub
 * (NULL: absent), the events member unless no_events, a nonce when given;
 * typ logout+jwt. New string. */
static char *logout_token(const char *sid, const char *sub, bool no_events,
                          const char *nonce, const char *aud)
{
  json_t *rs = provider_key("RS256");
  time_t now = time(NULL);
  json_t *c =
      json_pack("{s:s, s:s, s:I, s:I, s:s}", "iss", issuer, "aud", aud, "iat",
                (json_int_t)now, "exp", (json_int_t)(now + 120), "jti", "j-1");
  char *t;

  if (sid)
    json_object_set_new(c, "sid", json_string(sid));
  if (sub)
    json_object_set_new(c, "sub", json_string(sub));
  if (!no_events)
    json_object_set_new(
        c, "events",
        json_pack("{s:{}}",
                  "http://schemas.openid.net/event/backchannel-logout"));
  if (nonce)
    json_object_set_new(c, "nonce", json_string(nonce));
  t = sign_typ("logout+jwt", "RS256", h_str(rs, "kid"), c, rs, NULL);
  json_decref(c);
  json_decref(rs);
  return t;
}

/* POST /auth/backchannel-logout with token as the provider does: status. */
static long backchannel(const char *token)
{
  const char *hdr[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
  char body[8300];
  struct h_resp r;
  long st;

  snprintf(body, sizeof(body), "logout_token=%s", token);
  ck_assert_int_eq(
      h_request(&srv, "POST", "/auth/backchannel-logout", NULL, body, hdr, &r),
      0);
  st = r.status;
  ck_assert_msg(st == 200 || h_is_problem(&r, 400, "logout_token"), "%ld %s",
                st, r.body);
  h_resp_free(&r);
  return st;
}

/* Sessions follow the provider: an administrator lists and ends a
 * principal's sessions; the provider's Back-Channel Logout ends the
 * session of its sid (or every session of its sub) on every replica;
 * forged or malformed logout tokens end nothing. */
START_TEST(sessions_follow_provider)
{
  char one[256], two[256], three[256], path[300], *t;
  char *admin = h_token(NULL, "admin", 600);
  char *member = h_token("team-a", "member", 600);
  const char *sid;
  struct h_server other;
  json_t *j;
  struct h_resp r;

  ck_assert_msg(start_gpugate(&other) == 0, "second replica: see %s",
                other.log);
  sign_in("bob", one, sizeof(one));
  sign_in("bob", two, sizeof(two));
  ck_assert_int_eq(session_status(&other, one), 200);

  /* an administrator sees bob's two sessions, with the provider's sid */
  snprintf(path, sizeof(path), "/v1/sessions?issuer=%s&subject=bob", issuer);
  j = h_call(&srv, "GET", path, admin, NULL, 200);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "items")), 2);
  sid = h_str(json_array_get(json_object_get(j, "items"), 0), "sid");
  ck_assert_msg(sid && sid[0], "no sid: %s", json_dumps(j, 0));
  ck_assert_str_eq(
      h_str(json_array_get(json_object_get(j, "items"), 0), "email"),
      "bob@example.com");
  ck_assert_int_eq(
      h_request(&srv, "GET", "/v1/sessions?subject=bob", admin, NULL, NULL, &r),
      0);
  ck_assert_msg(h_is_problem(&r, 400, "issuer"), "%ld %s", r.status, r.body);
  h_resp_free(&r);
  ck_assert_int_eq(status_of(path, member), 403);

  /* forged or malformed logout tokens end nothing */
  t = logout_token(sid, "bob", false, "n-1", "gpugate-console"); /* nonce */
  ck_assert_int_eq(backchannel(t), 400);
  free(t);
  t = logout_token(sid, "bob", true, NULL, "gpugate-console"); /* no events */
  ck_assert_int_eq(backchannel(t), 400);
  free(t);
  t = logout_token(sid, "bob", false, NULL, "gpugate"); /* another aud */
  ck_assert_int_eq(backchannel(t), 400);
  free(t);
  t = logout_token(NULL, NULL, false, NULL, "gpugate-console"); /* nobody */
  ck_assert_int_eq(backchannel(t), 400);
  free(t);
  ck_assert_int_eq(backchannel("not.a.token"), 400);
  ck_assert_int_eq(session_status(&srv, one), 200);
  ck_assert_int_eq(session_status(&srv, two), 200);

  /* the provider ends the newest session by its sid: that one only, on
   * every replica */
  t = logout_token(sid, "bob", false, NULL, "gpugate-console");
  ck_assert_int_eq(backchannel(t), 200);
  free(t);
  json_decref(j);
  ck_assert_int_eq(session_status(&srv, two), 401);
  ck_assert_int_eq(session_eventually(&other, two, 401), 401);
  ck_assert_int_eq(session_status(&other, one), 200);

  /* an administrator ends the rest */
  j = h_call(&srv, "DELETE", path, admin, NULL, 200);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "ended")), 1);
  json_decref(j);
  ck_assert_int_eq(session_eventually(&other, one, 401), 401);
  j = h_call(&srv, "GET", path, admin, NULL, 200);
  ck_assert_uint_eq(json_array_size(json_object_get(j, "items")), 0);
  json_decref(j);

  /* a logout token naming only sub ends all of that principal's */
  sign_in("bob", three, sizeof(three));
  ck_assert_int_eq(session_status(&srv, three), 200);
  t = logout_token(NULL, "bob", false, NULL, "gpugate-console");
  ck_assert_int_eq(backchannel(t), 200);
  free(t);
  ck_assert_int_eq(session_eventually(&other, three, 401), 401);
  h_server_stop(&other);
  free(admin);
  free(member);
}
END_TEST

/* A replica answers a session it has verified from its cache (no read of
 * PostgreSQL per request), and refuses it once another replica ends it:
 * the DELETE moves the sessions' stamp, which the replica reads at most
 * once a second, and the move empties its cache. Polled with a generous
 * bound; the mechanism is asserted by the replica's counters. */
START_TEST(sessions_cached_per_replica)
{
  char cookie[256], path[300];
  char *admin = h_token(NULL, "admin", 600);
  struct h_server b;
  double hits, flushes;
  json_t *j;
  int i;

  /* claims re-validated every 900 s: the cache holds them that long */
  ck_assert_msg(start_replica(&b, "900") == 0, "replica: see %s", b.log);
  sign_in("ann", cookie, sizeof(cookie));
  hits = metric_at(&b, "gpugate_session_cache_hits_total");
  for (i = 0; i < 20; i++)
    ck_assert_int_eq(session_status(&b, cookie), 200);
  /* the first read PostgreSQL, the other 19 the cache */
  ck_assert_msg(metric_at(&b, "gpugate_session_cache_hits_total") - hits >= 19,
                "%.0f of 20 requests answered from the cache",
                metric_at(&b, "gpugate_session_cache_hits_total") - hits);

  /* ended through the other replica */
  flushes = metric_at(&b, "gpugate_session_cache_flushes_total");
  snprintf(path, sizeof(path), "/v1/sessions?issuer=%s&subject=ann", issuer);
  j = h_call(&srv, "DELETE", path, admin, NULL, 200);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "ended")), 1);
  json_decref(j);
  ck_assert_int_eq(session_eventually(&b, cookie, 401), 401);
  ck_assert_msg(metric_at(&b, "gpugate_session_cache_flushes_total") >=
                    flushes + 1,
                "the replica refused the session without seeing the stamp "
                "move");
  h_server_stop(&b);
  free(admin);
}
END_TEST

/* ---- a provider that holds one of its answers ---- */

/* A provider whose answer to GET hold (the key set, "/jwks", or the
 * discovery document, "/.well-known/openid-configuration") is held until
 * the test releases it, the other answered at once: one connection at a
 * time, on a thread of the test. */
struct held_keys {
  int listener;
  unsigned short port;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool release, stop;
  const char *hold; /* static: the path held */
  int held;         /* the connection being held, -1: none */
  int held_served;  /* answers to hold given */
  char *jwks;       /* owned: the key set's body */
  char issuer[64];
};

static void reply(int fd, const char *body)
{
  char head[256];
  int n = snprintf(head, sizeof(head),
                   "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                   "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                   strlen(body));

  if (write(fd, head, (size_t)n) < 0 || write(fd, body, strlen(body)) < 0) {
    /* the client went: nothing to do */
  }
}

static void *held_keys_run(void *arg)
{
  struct held_keys *k = arg;
  char req[4096], doc[1024], line[128];

  snprintf(line, sizeof(line), "GET %s ", k->hold);
  for (;;) {
    struct pollfd p = {.fd = k->listener, .events = POLLIN};
    ssize_t n;
    int fd;

    pthread_mutex_lock(&k->mu);
    if (k->stop) {
      pthread_mutex_unlock(&k->mu);
      return NULL;
    }
    pthread_mutex_unlock(&k->mu);
    if (poll(&p, 1, 100) <= 0 || (fd = accept(k->listener, NULL, NULL)) < 0)
      continue;
    n = read(fd, req, sizeof(req) - 1);
    req[n > 0 ? n : 0] = '\0';
    if (strstr(req, line)) {
      pthread_mutex_lock(&k->mu);
      k->held = fd;
      pthread_cond_broadcast(&k->cv);
      while (!k->release && !k->stop)
        pthread_cond_wait(&k->cv, &k->mu);
      k->held = -1;
      k->held_served++;
      pthread_mutex_unlock(&k->mu);
    }
    if (strstr(req, "GET /jwks ")) {
      reply(fd, k->jwks);
    } else {
      snprintf(doc, sizeof(doc),
               "{\"issuer\": \"%s\", \"jwks_uri\": \"%s/jwks\", "
               "\"authorization_endpoint\": \"%s/auth\", "
               "\"token_endpoint\": \"%s/token\"}",
               k->issuer, k->issuer, k->issuer, k->issuer);
      reply(fd, doc);
    }
    close(fd);
  }
}

/* Start the provider with its public RS256 key, holding GET hold
 * (static). */
static void held_keys_start(struct held_keys *k, const char *hold)
{
  json_t *jwk = provider_key("RS256"), *set;
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t len = sizeof(a);
  const char *priv[] = {"d", "p", "q", "dp", "dq", "qi"};
  size_t i;

  memset(k, 0, sizeof(*k));
  k->hold = hold;
  k->held = -1;
  for (i = 0; i < sizeof(priv) / sizeof(priv[0]); i++)
    json_object_del(jwk, priv[i]);
  set = json_pack("{s:[o]}", "keys", jwk);
  k->jwks = json_dumps(set, JSON_COMPACT);
  json_decref(set);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  k->listener = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(k->listener, 0);
  ck_assert_int_eq(bind(k->listener, (struct sockaddr *)&a, sizeof(a)), 0);
  ck_assert_int_eq(listen(k->listener, 8), 0);
  ck_assert_int_eq(getsockname(k->listener, (struct sockaddr *)&a, &len), 0);
  k->port = ntohs(a.sin_port);
  snprintf(k->issuer, sizeof(k->issuer), "http://127.0.0.1:%u", k->port);
  pthread_mutex_init(&k->mu, NULL);
  pthread_cond_init(&k->cv, NULL);
  ck_assert_int_eq(pthread_create(&k->thread, NULL, held_keys_run, k), 0);
}

static void held_keys_stop(struct held_keys *k)
{
  pthread_mutex_lock(&k->mu);
  k->stop = true;
  pthread_cond_broadcast(&k->cv);
  pthread_mutex_unlock(&k->mu);
  pthread_join(k->thread, NULL);
  close(k->listener);
  pthread_mutex_destroy(&k->mu);
  pthread_cond_destroy(&k->cv);
  free(k->jwks);
}

/* Hold the provider's answer to GET hold and show the fetch it belongs to
 * runs off the request worker: a provider token is refused (401, its
 * detail naming want) while the provider still holds that answer, and so
 * is a sign-in (503) when signin; once released, the fetch in flight
 * brings what the token needs (polled) and the sign-in starts. Ordered by
 * the held answer, not timed. */
struct login_arg {
  struct h_server *c;
  struct h_resp r;
  int rc;
};

static void *login_thread(void *p)
{
  struct login_arg *a = p;

  a->rc = h_request(a->c, "GET", "/auth/login", NULL, NULL, NULL, &a->r);
  return NULL;
}

static void held_fetch_off_workers(const char *hold, const char *want,
                                   bool signin)
{
  struct held_keys k;
  struct h_server c;
  json_t *rs = provider_key("RS256"), *cl;
  struct h_resp r;
  struct login_arg la;
  pthread_t lt;
  char *tok;
  long st;
  long long end;

  held_keys_start(&k, hold);
  ck_assert_msg(start_replica_of(&c, k.issuer, "900") == 0, "replica: see %s",
                c.log);
  cl = claims(k.issuer, "gpugate", "example.com", 0, 300);
  tok = sign("RS256", h_str(rs, "kid"), cl, rs, NULL);

  /* the first use: refused, saying so, while the provider still holds
   * the answer (the request did not wait for the fetch to end); a
   * sign-in at the same time (not after: the two bounded waits in a row
   * could outlast the fetch's own timeout on a loaded host) gets the
   * existing 503, saying so */
  memset(&la, 0, sizeof(la));
  la.c = &c;
  la.rc = -1;
  if (signin)
    ck_assert_int_eq(pthread_create(&lt, NULL, login_thread, &la), 0);
  ck_assert_int_eq(h_request(&c, "GET", "/v1/whoami", tok, NULL, NULL, &r), 0);
  if (signin)
    ck_assert_int_eq(pthread_join(lt, NULL), 0);
  pthread_mutex_lock(&k.mu);
  ck_assert_int_eq(k.held_served, 0);
  pthread_mutex_unlock(&k.mu);
  ck_assert_msg(h_is_problem(&r, 401, NULL) && strstr(r.body, want), "%ld %s",
                r.status, r.body);
  h_resp_free(&r);
  if (signin) {
    ck_assert_int_eq(la.rc, 0);
    ck_assert_msg(h_is_problem(&la.r, 503, NULL) &&
                      strstr(la.r.body, "still being fetched; retry"),
                  "%ld %s", la.r.status, la.r.body);
    h_resp_free(&la.r);
  }

  /* released: the fetch in flight brings the answer; polled */
  pthread_mutex_lock(&k.mu);
  k.release = true;
  pthread_cond_broadcast(&k.cv);
  pthread_mutex_unlock(&k.mu);
  end = h_now_ms() + 30000;
  while ((st = status_at(&c, "/v1/whoami", tok)) == 401 && h_now_ms() < end)
    h_sleep_ms(50);
  ck_assert_int_eq(st, 200);
  pthread_mutex_lock(&k.mu);
  ck_assert_int_ge(k.held_served, 1);
  pthread_mutex_unlock(&k.mu);
  if (signin) {
    ck_assert_int_eq(h_request(&c, "GET", "/auth/login", NULL, NULL, NULL, &r),
                     0);
    ck_assert_msg(r.status == 302, "%ld %s", r.status, r.body);
    h_resp_free(&r);
  }

  h_server_stop(&c);
  held_keys_stop(&k);
  json_decref(cl);
  json_decref(rs);
  free(tok);
}

/* A key fetch runs off the request worker: a token whose key gpugate does
 * not hold yet is refused (401) while the key server still holds the
 * fetch open, instead of the request waiting for the network; once the
 * key server answers, the fetch brings the key for the token. */
START_TEST(key_fetch_off_request_workers)
{
  held_fetch_off_workers("/jwks", "still being fetched", false);
}
END_TEST

/* The discovery document is fetched off the request worker too: while
 * the provider holds it, a provider token and /auth/login get their
 * failure (401, 503) saying it is still being fetched, instead of waiting
 * for the network; once the provider answers, the fetch in flight brings
 * it (and then the key set) for the token, and the sign-in starts. */
START_TEST(discovery_fetch_off_request_workers)
{
  held_fetch_off_workers("/.well-known/openid-configuration",
                         "discovery document is still being fetched; retry",
                         true);
}
END_TEST

/* /auth/login and /auth/callback are limited per client address by
 * default, and the sign-ins in flight are bounded. */
START_TEST(signin_bounded)
{
  struct h_server other;
  struct h_resp r;
  char v[64];
  PGconn *pg;
  long long before;
  int i, allowed = 0, limited = 0;

  /* a replica of its own: its limiter starts full */
  ck_assert_msg(start_gpugate(&other) == 0, "replica: see %s", other.log);
  for (i = 0; i < 1000 && !limited; i++) {
    ck_assert_int_eq(
        h_request(&other, "GET", "/auth/login", NULL, NULL, NULL, &r), 0);
    if (r.status == 302)
      allowed++;
    else {
      ck_assert_msg(h_is_problem(&r, 429, NULL), "%ld %s", r.status, r.body);
      ck_assert_ptr_nonnull(h_header(&r, "Retry-After", v, sizeof(v)));
      limited++;
    }
    h_resp_free(&r);
  }
  ck_assert_msg(limited == 1 && allowed >= 30, "allowed %d, limited %d",
                allowed, limited);
  /* the callback too */
  ck_assert_int_eq(h_request(&other, "GET", "/auth/callback?state=x&code=y",
                             NULL, NULL, NULL, &r),
                   0);
  ck_assert_msg(r.status == 429, "%ld %s", r.status, r.body);
  h_resp_free(&r);
  h_server_stop(&other);

  /* auth_flows full: a new sign-in waits, nothing is stored */
  pg = h_db_connect(db_url);
  ck_assert_int_eq(PQstatus(pg), CONNECTION_OK);
  h_db_int(pg, "WITH f AS (INSERT INTO auth_flows (state, nonce, "
               "code_verifier, flow_hash) SELECT 'fill-' || g, 'n', 'v', 'h' "
               "FROM generate_series(1, 100000) g RETURNING 1) "
               "SELECT count(*) FROM f");
  before = h_db_int(pg, "SELECT count(*) FROM auth_flows");
  ck_assert_int_eq(h_request(&srv, "GET", "/auth/login", NULL, NULL, NULL, &r),
                   0);
  ck_assert_msg(h_is_problem(&r, 503, NULL) && strstr(r.body, "in flight"),
                "%ld %s", r.status, r.body);
  h_resp_free(&r);
  ck_assert_int_eq(h_db_int(pg, "SELECT count(*) FROM auth_flows"), before);
  h_db_int(pg, "WITH d AS (DELETE FROM auth_flows RETURNING 1) "
               "SELECT count(*) FROM d");
  PQfinish(pg);
  ck_assert_int_eq(h_request(&srv, "GET", "/auth/login", NULL, NULL, NULL, &r),
                   0);
  ck_assert_int_eq(r.status, 302);
  h_resp_free(&r);
}
END_TEST

/* GET /v1/whoami by the session of cookie at srv: its status, and the
 * number of its grants in *grants (0 unless 200). */
static long session_grants(const char *cookie, size_t *grants)
{
  const char *with[3] = {cookie, "X-GPUGate-CSRF: 1", NULL};
  struct h_resp r;
  long st;

  ck_assert_int_eq(h_request(&srv, "GET", "/v1/whoami", NULL, NULL, with, &r),
                   0);
  st = r.status;
  *grants = st == 200 ? json_array_size(json_object_get(r.json, "grants")) : 0;
  h_resp_free(&r);
  return st;
}

/* Sessions follow the provider with its refresh token (refreshed every
 * GPUGATE_SESSION_REFRESH_S, 1 s here): a person who loses a group at the
 * provider loses that grant; one the provider no longer refreshes (removed)
 * is signed out. Polled with a generous bound, never timed. */
START_TEST(sessions_refresh)
{
  PGconn *pg = h_db_connect(db_url);
  char cookie[256];
  size_t grants = 0;
  long st = 0;
  int i;

  ck_assert_int_eq(PQstatus(pg), CONNECTION_OK);
  json_decref(h_call(&idp, "PUT", "/test/accounts/cat", NULL,
                     "{\"groups\": [\"ml-team-a\", \"ml-team-b\"]}", 204));
  sign_in("cat", cookie, sizeof(cookie));
  ck_assert_int_eq(session_grants(cookie, &grants), 200);
  ck_assert_uint_eq(grants, 2);
  /* the provider gave a refresh token: kept with the session, sealed
   * (AES-256-GCM, 12-byte IV and 16-byte tag around it; nothing of the
   * provider's token in the clear in the table) */
  ck_assert_int_eq(
      h_db_int(pg, "SELECT count(*) FROM sessions WHERE subject = 'cat' AND "
                   "refresh_sealed ~ '^v1\\.[A-Za-z0-9_-]{40,}$'"),
      1);
  ck_assert_int_eq(h_db_int(pg, "SELECT count(*) FROM information_schema."
                                "columns WHERE table_name = 'sessions' AND "
                                "column_name = 'refresh_token'"),
                   0);

  /* cat leaves ml-team-b at the provider: team-b's grant goes */
  json_decref(h_call(&idp, "PUT", "/test/accounts/cat", NULL,
                     "{\"groups\": [\"ml-team-a\"]}", 204));
  for (i = 0; i < 200; i++) {
    if ((st = session_grants(cookie, &grants)) != 200 || grants != 2)
      break;
    usleep(100000);
  }
  ck_assert_msg(st == 200 && grants == 1, "after 20 s: %ld, %zu grants", st,
                grants);

  /* cat is removed at the provider: the refresh is refused, the session
   * ends */
  json_decref(h_call(&idp, "DELETE", "/test/accounts/cat", NULL, NULL, 204));
  for (i = 0; i < 200; i++) {
    if ((st = session_grants(cookie, &grants)) != 200)
      break;
    usleep(100000);
  }
  ck_assert_msg(st == 401, "after 20 s: %ld", st);
  ck_assert_int_eq(
      h_db_int(pg, "SELECT count(*) FROM sessions WHERE subject = 'cat'"), 0);
  json_decref(h_call(&idp, "PUT", "/test/accounts/cat", NULL,
                     "{\"groups\": [\"ml-team-a\", \"ml-team-b\"]}", 204));
  PQfinish(pg);
}
END_TEST

Suite *oidc_suite(void)
{
  Suite *s = suite_create("oidc");
  TCase *tc = tcase_create("oidc");

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(
      tc, 300); /* its providers may take long to start on a busy host */
  tcase_add_test(tc, bindings_decide);
  tcase_add_test(tc, bindings_managed);
  tcase_add_test(tc, bindings_reach_every_replica);
  tcase_add_test(tc, two_issuers_apart);
  tcase_add_test(tc, events_name_their_actor);
  tcase_add_test(tc, forgeries_refused);
  tcase_add_test(tc, console_sign_in);
  tcase_add_test(tc, sessions_follow_provider);
  tcase_add_test(tc, sessions_cached_per_replica);
  tcase_add_test(tc, key_fetch_off_request_workers);
  tcase_add_test(tc, discovery_fetch_off_request_workers);
  tcase_add_test(tc, sessions_refresh);
  tcase_add_test(tc, signin_bounded);
  tcase_add_test(tc, random_kids_bounded);
  tcase_add_test(tc, outage_and_rotation);
  suite_add_tcase(s, tc);
  return s;
}
