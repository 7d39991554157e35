/*
 * test_jwks.c — the one key-set cache and the one verifier as tables:
 * JWK sets through jose (which keys are kept, pinned to which algorithm),
 * Cache-Control, tokens of both configurations (Google's Pub/Sub push and
 * an OpenID Provider's ID and at+jwt access tokens, forgeries included)
 * at a fixed clock with the keys of tests/fixtures/keys/, and the cache's
 * single-flight fetch against a key server that stalls (issue 22: a fetch
 * must not hold the lock that verifications with cached keys need).
 */
#include <arpa/inet.h>
#include <check.h>
#include <jose/jose.h>
#include <jose/openssl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "identity/discovery.h"
#include "identity/jwks.h"
#include "lib/b64url.h"
#include "identity/oidc.h"

Suite *jwks_suite(void);

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define KEY_DIR "tests/fixtures/keys/"
#define NOW 1790000000L

/* The compact JSON (new string) of {"keys": keys}; steals keys. */
static char *set_json(json_t *keys)
{
  json_t *doc = json_pack("{s:o}", "keys", keys);
  char *s = json_dumps(doc, JSON_COMPACT);

  json_decref(doc);
  ck_assert_ptr_nonnull(s);
  return s;
}

/* The public JWK (new) of the key in path, with kid (NULL: none). */
static json_t *jwk_of(const char *path, const char *kid, bool private_too)
{
  FILE *f = fopen(path, "r");
  EVP_PKEY *k;
  json_t *jwk;

  ck_assert_msg(f != NULL, "cannot open %s", path);
  k = private_too ? PEM_read_PrivateKey(f, NULL, NULL, NULL)
                  : PEM_read_PUBKEY(f, NULL, NULL, NULL);
  fclose(f);
  ck_assert_ptr_nonnull(k);
  jwk = jose_openssl_jwk_from_EVP_PKEY(NULL, k);
  EVP_PKEY_free(k);
  ck_assert_ptr_nonnull(jwk);
  if (kid)
    json_object_set_new(jwk, "kid", json_string(kid));
  return jwk;
}

/* ------------------------------------------------------------ JWK sets */

/* Which keys a set keeps, in order, and the algorithm each is pinned to. */
START_TEST(jwks_keeps_signing_keys)
{
  json_t *keys = json_array(), *k;
  struct jwks_set set;
  char err[128], *doc;

  json_array_append_new(keys, jwk_of(KEY_DIR "rsa1.pub.pem", "r1", false));
  json_array_append_new(keys, jwk_of(KEY_DIR "ec1.pub.pem", "e1", false));
  k = jwk_of(KEY_DIR "rsa2.pub.pem", "r512", false);
  json_object_set_new(k, "alg", json_string("RS512"));
  json_array_append_new(keys, k);
  k = jwk_of(KEY_DIR "rsa2.pub.pem", "enc", false);
  json_object_set_new(k, "use", json_string("enc"));
  json_array_append_new(keys, k);
  k = jwk_of(KEY_DIR "ec1.pub.pem", "ec-as-rs", false);
  json_object_set_new(k, "alg", json_string("RS256"));
  json_array_append_new(keys, k);
  json_array_append_new(keys,
                        json_pack("{s:s, s:s, s:s, s:s}", "kty", "RSA", "kid",
                                  "small", "n", "AQAB", "e", "AQAB"));
  json_array_append_new(keys, json_pack("{s:s, s:s, s:s}", "kty", "oct", "kid",
                                        "hmac", "k", "c2VjcmV0"));
  /* a private key published by mistake is kept as its public half */
  json_array_append_new(keys, jwk_of(KEY_DIR "rsa2.pem", "r2", true));
  json_array_append_new(keys, jwk_of(KEY_DIR "rsa1.pub.pem", "r1", false));
  doc = set_json(keys);
  ck_assert_int_eq(jwks_parse(doc, strlen(doc), &set, err, sizeof(err)), 0);
  ck_assert_int_eq(set.n, 3);
  ck_assert_str_eq(set.keys[0].kid, "r1");
  ck_assert_int_eq(set.keys[0].alg, JWKS_ALG_RS256);
  ck_assert_str_eq(set.keys[1].kid, "e1");
  ck_assert_int_eq(set.keys[1].alg, JWKS_ALG_ES256);
  ck_assert_str_eq(json_string_value(json_object_get(set.keys[1].jwk, "alg")),
                   "ES256");
  ck_assert_str_eq(set.keys[2].kid, "r2");
  ck_assert_ptr_null(json_object_get(set.keys[2].jwk, "d"));
  jwks_set_free(&set);
  free(doc);
}
END_TEST

static const char *const bad_sets[] = {
    "",
    "[]",
    "{}",
    "{\"keys\": {}}",
    "{\"keys\": []}",
    "{\"keys\": [1, \"x\", null]}",
    "{\"keys\": [{\"kty\": \"RSA\", \"kid\": \"a\", \"n\": \"!!\", \"e\": "
    "\"AQAB\"}]}",
    "{\"keys\": [{\"kty\": \"RSA\", \"n\": \"AQAB\", \"e\": \"AQAB\"}]}",
    "{\"keys\": [{\"kty\": \"EC\", \"kid\": \"a\", \"crv\": \"P-256\"}]}",
    "{\"keys\": [{\"kty\": \"oct\", \"kid\": \"a\", \"k\": \"AAAA\"}]}",
    "{\"keys\": [], \"keys\": []}",
};

START_TEST(jwks_rejects)
{
  struct jwks_set set;
  char err[128] = "";

  ck_assert_int_eq(
      jwks_parse(bad_sets[_i], strlen(bad_sets[_i]), &set, err, sizeof(err)),
      -1);
  ck_assert_int_eq(set.n, 0);
  ck_assert(err[0] != '\0');
}
END_TEST

static const struct {
  const char *cc;
  long age;
} age_cases[] = {
    {NULL, -1},
    {"", -1},
    {"public, max-age=19204, must-revalidate, no-transform", 19204},
    {"max-age=0", 0},
    {"Max-Age=60", 60},
    {"no-store", 0},
    {"private, no-cache", 0},
    {"max-age=abc", -1},
    {"max-age=-5", -1},
    {"public", -1},
};

START_TEST(cache_control)
{
  ck_assert_msg(jwks_max_age(age_cases[_i].cc) == age_cases[_i].age,
                "\"%s\": %ld, want %ld",
                age_cases[_i].cc ? age_cases[_i].cc : "(null)",
                jwks_max_age(age_cases[_i].cc), age_cases[_i].age);
}
END_TEST

/* --------------------------------------------------------------- tokens */

#define IDP "https://idp.example.com"
#define AUD "gpugate"
#define G "https://accounts.google.com"
#define SA "push@p.iam.gserviceaccount.com"

/* The verifier's keys: "rs" is rsa1, "es" is ec1, both of every issuer. */
static json_t *key_for(const char *iss, const char *kid, void *ud,
                       enum jwks_alg *alg, char *err, size_t errlen)
{
  struct jwks_set set;
  json_t *keys = json_array(), *out = NULL;
  char *doc;
  int i;

  (void)iss;
  (void)ud;
  json_array_append_new(keys, jwk_of(KEY_DIR "rsa1.pub.pem", "rs", false));
  json_array_append_new(keys, jwk_of(KEY_DIR "ec1.pub.pem", "es", false));
  doc = set_json(keys);
  ck_assert_int_eq(jwks_parse(doc, strlen(doc), &set, err, errlen), 0);
  free(doc);
  for (i = 0; i < set.n; i++)
    if (!strcmp(set.keys[i].kid, kid)) {
      out = json_incref(set.keys[i].jwk);
      *alg = set.keys[i].alg;
    }
  jwks_set_free(&set);
  if (!out)
    snprintf(err, errlen, "unknown key id");
  return out;
}

static void b64(const void *in, size_t n, char *out, size_t cap)
{
  ck_assert(b64url_encode(in, n, out, cap) > 0 || n == 0);
}

/*
 * A compact JWS of claims (borrowed) with header hdr (borrowed), signed
 * with the private key in key_file by jose, or HMAC-keyed with the bytes
 * of hmac_file, or unsigned when both are NULL. New string.
 */
static char *sign(const json_t *hdr, const json_t *claims, const char *key_file,
                  const char *hmac_file)
{
  char *h = json_dumps(hdr, JSON_COMPACT), *c = json_dumps(claims, 0);
  char hb[1024], cb[4096], sb[1024] = "", *out = malloc(8192);

  b64(h, strlen(h), hb, sizeof(hb));
  b64(c, strlen(c), cb, sizeof(cb));
  if (key_file) {
    json_t *jwk = jwk_of(key_file, NULL, true);
    json_t *jws = json_pack("{s:s}", "payload", cb);
    json_t *sig = json_pack("{s:s}", "protected", hb);

    ck_assert_msg(jose_jws_sig(NULL, jws, sig, jwk), "jose cannot sign");
    snprintf(sb, sizeof(sb), "%s",
             json_string_value(json_object_get(jws, "signature")));
    json_decref(jwk);
    json_decref(jws);
    json_decref(sig);
  } else if (hmac_file) {
    size_t klen = 0;
    FILE *f = fopen(hmac_file, "rb");
    unsigned char key[8192], mac[32];
    char input[6000];
    unsigned maclen = 0;

    ck_assert_ptr_nonnull(f);
    klen = fread(key, 1, sizeof(key), f);
    fclose(f);
    snprintf(input, sizeof(input), "%s.%s", hb, cb);
    HMAC(EVP_sha256(), key, (int)klen, (unsigned char *)input, strlen(input),
         mac, &maclen);
    b64(mac, maclen, sb, sizeof(sb));
  }
  snprintf(out, 8192, "%s.%s.%s", hb, cb, sb);
  free(h);
  free(c);
  return out;
}

enum policy { PUSH, PROVIDER };

struct tok {
  const char *what;
  enum policy pol;
  const char *alg, *kid, *typ;
  const char *key;  /* private key file; NULL: see hmac */
  const char *hmac; /* HMAC key file; both NULL: unsigned */
  const char *iss, *aud, *email, *hd;
  int verified; /* 1 true, 0 false, -1 absent */
  long iat, exp;
  const char *reason; /* NULL: accepted */
  const char *aud2;   /* a second audience (aud an array), or NULL */
  const char *azp;    /* NULL: absent */
};

#define RSA1 KEY_DIR "rsa1.pem"
#define RSA2 KEY_DIR "rsa2.pem"
#define EC1 KEY_DIR "ec1.pem"
#define PUBPEM KEY_DIR "rsa1.pub.pem"
#define OK NULL

static const struct tok tok_cases[] = {
    /* Pub/Sub push: Google's RS256 ID token for a service account */
    {"push", PUSH, "RS256", "rs", NULL, RSA1, NULL, G, AUD, SA, NULL, 1,
     NOW - 10, NOW + 3590, OK, NULL, NULL},
    {"push, iss without https", PUSH, "RS256", "rs", NULL, RSA1, NULL,
     "accounts.google.com", AUD, SA, NULL, 1, NOW, NOW + 3600, OK, NULL, NULL},
    {"push within leeway (exp)", PUSH, "RS256", "rs", NULL, RSA1, NULL, G, AUD,
     SA, NULL, 1, NOW - 3650, NOW - 50, OK, NULL, NULL},
    {"push within leeway (iat)", PUSH, "RS256", "rs", NULL, RSA1, NULL, G, AUD,
     SA, NULL, 1, NOW + 50, NOW + 3650, OK, NULL, NULL},
    {"push ES256 (push is RS256 only)", PUSH, "ES256", "es", NULL, EC1, NULL, G,
     AUD, SA, NULL, 1, NOW, NOW + 3600, "algorithm not allowed", NULL, NULL},
    {"push signed by another key", PUSH, "RS256", "rs", NULL, RSA2, NULL, G,
     AUD, SA, NULL, 1, NOW, NOW + 3600, "bad signature", NULL, NULL},
    {"push unknown kid", PUSH, "RS256", "other", NULL, RSA1, NULL, G, AUD, SA,
     NULL, 1, NOW, NOW + 3600, "signing key unknown or unavailable", NULL,
     NULL},
    {"push no kid", PUSH, "RS256", NULL, NULL, RSA1, NULL, G, AUD, SA, NULL, 1,
     NOW, NOW + 3600, "no key id", NULL, NULL},
    {"push another issuer", PUSH, "RS256", "rs", NULL, RSA1, NULL,
     "https://evil.example", AUD, SA, NULL, 1, NOW, NOW + 3600,
     "issuer not trusted", NULL, NULL},
    {"push another audience", PUSH, "RS256", "rs", NULL, RSA1, NULL, G,
     "https://other/push", SA, NULL, 1, NOW, NOW + 3600, "wrong audience", NULL,
     NULL},
    {"push another account", PUSH, "RS256", "rs", NULL, RSA1, NULL, G, AUD,
     "x@evil.iam.gserviceaccount.com", NULL, 1, NOW, NOW + 3600,
     "wrong service account", NULL, NULL},
    {"push email not verified", PUSH, "RS256", "rs", NULL, RSA1, NULL, G, AUD,
     SA, NULL, 0, NOW, NOW + 3600, "email not verified", NULL, NULL},
    {"push email_verified absent", PUSH, "RS256", "rs", NULL, RSA1, NULL, G,
     AUD, SA, NULL, -1, NOW, NOW + 3600, "email not verified", NULL, NULL},
    {"push expired", PUSH, "RS256", "rs", NULL, RSA1, NULL, G, AUD, SA, NULL, 1,
     NOW - 3700, NOW - 61, "token expired", NULL, NULL},
    {"push from the future", PUSH, "RS256", "rs", NULL, RSA1, NULL, G, AUD, SA,
     NULL, 1, NOW + 61, NOW + 3661, "token issued in the future", NULL, NULL},
    {"push living a day", PUSH, "RS256", "rs", NULL, RSA1, NULL, G, AUD, SA,
     NULL, 1, NOW - 10, NOW + 86400, "token lifetime out of range", NULL, NULL},

    /* an OpenID Provider: RS256 and ES256 ID tokens, at+jwt access tokens */
    {"provider RS256", PROVIDER, "RS256", "rs", "JWT", RSA1, NULL, IDP, AUD,
     "ann@example.com", "example.com", 1, NOW, NOW + 600, OK, NULL, NULL},
    {"provider ES256", PROVIDER, "ES256", "es", NULL, EC1, NULL, IDP, AUD,
     "ann@example.com", "example.com", 1, NOW, NOW + 600, OK, NULL, NULL},
    {"provider at+jwt", PROVIDER, "ES256", "es", "at+jwt", EC1, NULL, IDP, AUD,
     NULL, "example.com", -1, NOW, NOW + 600, OK, NULL, NULL},
    {"provider application/at+jwt", PROVIDER, "RS256", "rs",
     "application/at+jwt", RSA1, NULL, IDP, AUD, NULL, "example.com", -1, NOW,
     NOW + 600, OK, NULL, NULL},
    {"provider typ dpop+jwt", PROVIDER, "RS256", "rs", "dpop+jwt", RSA1, NULL,
     IDP, AUD, NULL, "example.com", -1, NOW, NOW + 600,
     "unsupported token type", NULL, NULL},
    {"alg none", PROVIDER, "none", "rs", NULL, NULL, NULL, IDP, AUD, NULL,
     "example.com", -1, NOW, NOW + 600, "malformed token", NULL, NULL},
    {"HS256 keyed with the public PEM", PROVIDER, "HS256", "rs", NULL, NULL,
     PUBPEM, IDP, AUD, NULL, "example.com", -1, NOW, NOW + 600,
     "algorithm not allowed", NULL, NULL},
    {"RS256 header on the EC key", PROVIDER, "RS256", "es", NULL, RSA1, NULL,
     IDP, AUD, NULL, "example.com", -1, NOW, NOW + 600,
     "algorithm does not match the key", NULL, NULL},
    {"ES256 header on the RSA key", PROVIDER, "ES256", "rs", NULL, EC1, NULL,
     IDP, AUD, NULL, "example.com", -1, NOW, NOW + 600,
     "algorithm does not match the key", NULL, NULL},
    {"a stranger's key with a known kid", PROVIDER, "RS256", "rs", NULL, RSA2,
     NULL, IDP, AUD, NULL, "example.com", -1, NOW, NOW + 600, "bad signature",
     NULL, NULL},
    {"wrong iss", PROVIDER, "RS256", "rs", NULL, RSA1, NULL, IDP "/", AUD, NULL,
     "example.com", -1, NOW, NOW + 600, "issuer not trusted", NULL, NULL},
    {"wrong aud", PROVIDER, "RS256", "rs", NULL, RSA1, NULL, IDP, "account",
     NULL, "example.com", -1, NOW, NOW + 600, "wrong audience", NULL, NULL},
    {"expired", PROVIDER, "RS256", "rs", NULL, RSA1, NULL, IDP, AUD, NULL,
     "example.com", -1, NOW - 700, NOW - 61, "token expired", NULL, NULL},
    {"hd mismatch", PROVIDER, "RS256", "rs", NULL, RSA1, NULL, IDP, AUD, NULL,
     "evil.com", -1, NOW, NOW + 600, "a required claim does not hold", NULL,
     NULL},
    {"hd absent", PROVIDER, "RS256", "rs", NULL, RSA1, NULL, IDP, AUD, NULL,
     NULL, -1, NOW, NOW + 600, "a required claim does not hold", NULL, NULL},
    /* provider tokens live at most GPUGATE_OIDC_MAX_LIFETIME_S */
    {"provider living two days", PROVIDER, "RS256", "rs", NULL, RSA1, NULL, IDP,
     AUD, NULL, "example.com", -1, NOW, NOW + 2 * 86400,
     "token lifetime out of range", NULL, NULL},
    {"provider living a day", PROVIDER, "RS256", "rs", NULL, RSA1, NULL, IDP,
     AUD, NULL, "example.com", -1, NOW, NOW + 86400, OK, NULL, NULL},
    /* several audiences: azp must be ours (OIDC Core §3.1.3.7) */
    {"two audiences, no azp", PROVIDER, "RS256", "rs", NULL, RSA1, NULL, IDP,
     AUD, NULL, "example.com", -1, NOW, NOW + 600,
     "several audiences and azp is not one of ours", "https://other.example",
     NULL},
    {"two audiences, azp another's", PROVIDER, "RS256", "rs", NULL, RSA1, NULL,
     IDP, AUD, NULL, "example.com", -1, NOW, NOW + 600,
     "several audiences and azp is not one of ours", "https://other.example",
     "https://other.example"},
    {"two audiences, azp ours", PROVIDER, "RS256", "rs", NULL, RSA1, NULL, IDP,
     AUD, NULL, "example.com", -1, NOW, NOW + 600, OK, "https://other.example",
     AUD},
    {"one audience, any azp", PROVIDER, "RS256", "rs", NULL, RSA1, NULL, IDP,
     AUD, NULL, "example.com", -1, NOW, NOW + 600, OK, NULL, "some-client"},
};

START_TEST(tokens)
{
  const struct tok *t = &tok_cases[_i];
  struct oidc_policy push = {.issuers = {G, "accounts.google.com"},
                             .n_issuers = 2,
                             .audiences = {AUD},
                             .n_audiences = 1,
                             .algs = JWKS_ALG_RS256,
                             .leeway_s = 60,
                             .max_lifetime_s = 7200,
                             .email = SA};
  struct oidc_policy idp = {.issuers = {"https://other.example", IDP},
                            .n_issuers = 2,
                            .audiences = {"x", AUD},
                            .n_audiences = 2,
                            .algs = JWKS_ALG_RS256 | JWKS_ALG_ES256,
                            .leeway_s = 60,
                            .max_lifetime_s = 86400,
                            .required = {{"hd", "example.com"}},
                            .n_required = 1,
                            .access_tokens = true};
  json_t *hdr = json_pack("{s:s}", "alg", t->alg);
  json_t *claims = json_pack("{s:s, s:s, s:I, s:I, s:s}", "iss", t->iss, "aud",
                             t->aud, "iat", (json_int_t)t->iat, "exp",
                             (json_int_t)t->exp, "sub", "00u1");
  json_t *got = NULL;
  const char *reason = "unset";
  char *tok;
  int rc;

  if (t->aud2)
    json_object_set_new(claims, "aud", json_pack("[s, s]", t->aud, t->aud2));
  if (t->azp)
    json_object_set_new(claims, "azp", json_string(t->azp));
  if (t->kid)
    json_object_set_new(hdr, "kid", json_string(t->kid));
  if (t->typ)
    json_object_set_new(hdr, "typ", json_string(t->typ));
  if (t->email)
    json_object_set_new(claims, "email", json_string(t->email));
  if (t->hd)
    json_object_set_new(claims, "hd", json_string(t->hd));
  if (t->verified >= 0)
    json_object_set_new(claims, "email_verified",
                        json_boolean(t->verified == 1));
  tok = sign(hdr, claims, t->key, t->hmac);
  rc = oidc_verify(tok, t->pol == PUSH ? &push : &idp, NOW, key_for, NULL, &got,
                   &reason);
  if (!t->reason) {
    ck_assert_msg(rc == 0, "%s: refused: %s", t->what, reason);
    ck_assert_str_eq(json_string_value(json_object_get(got, "sub")), "00u1");
  } else {
    ck_assert_msg(rc == -1 && reason && !strcmp(reason, t->reason),
                  "%s: rc %d reason \"%s\", want \"%s\"", t->what, rc,
                  reason ? reason : "(null)", t->reason);
    ck_assert_ptr_null(got);
  }
  json_decref(got);
  json_decref(hdr);
  json_decref(claims);
  free(tok);
}
END_TEST

/* Not a compact JWS, or headers the verifier must refuse before keys. */
static const char *const junk_tokens[] = {
    "",
    "a.b",
    "a.b.c.d",
    "eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.",
    /* {"alg":"RS256","kid":"rs","crit":["exp"]} . {} . sig */
    "eyJhbGciOiJSUzI1NiIsImtpZCI6InJzIiwiY3JpdCI6WyJleHAiXX0.e30.c2ln",
    /* {"alg":"RS256","kid":"rs","b64":false} . {} . sig */
    "eyJhbGciOiJSUzI1NiIsImtpZCI6InJzIiwiYjY0IjpmYWxzZX0.e30.c2ln",
    "!!!.e30.c2ln",
    "eyJhbGciOiJSUzI1NiJ9 .e30.c2ln",
};

START_TEST(junk)
{
  struct oidc_policy p = {.issuers = {IDP},
                          .n_issuers = 1,
                          .audiences = {AUD},
                          .n_audiences = 1,
                          .algs = JWKS_ALG_RS256};
  const char *reason = NULL;

  ck_assert_int_eq(
      oidc_verify(junk_tokens[_i], &p, NOW, key_for, NULL, NULL, &reason), -1);
  ck_assert_ptr_nonnull(reason);
}
END_TEST

/* ------------------------------------- the cache against a stalling server */

/* A one-thread HTTP server answering every GET with doc; from request
 * number stall_from on, it holds each request until released. */
static struct {
  int fd;
  unsigned short port;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  char doc[8192];
  int requests, stall_from;
  bool released, stop;
} ks = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *serve(void *arg)
{
  (void)arg;
  for (;;) {
    char req[4096], head[256];
    size_t got = 0;
    ssize_t r;
    int c = accept(ks.fd, NULL, NULL), n;

    if (c < 0)
      break;
    while (got < sizeof(req) - 1 &&
           (r = read(c, req + got, sizeof(req) - 1 - got)) > 0) {
      got += (size_t)r;
      req[got] = '\0';
      if (strstr(req, "\r\n\r\n"))
        break;
    }
    pthread_mutex_lock(&ks.mu);
    n = ++ks.requests;
    pthread_cond_broadcast(&ks.cv);
    while (ks.stall_from && n >= ks.stall_from && !ks.released && !ks.stop)
      pthread_cond_wait(&ks.cv, &ks.mu);
    snprintf(head, sizeof(head),
             "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
             "Cache-Control: public, max-age=3600\r\nContent-Length: %zu\r\n"
             "Connection: close\r\n\r\n",
             strlen(ks.doc));
    if (write(c, head, strlen(head)) < 0 ||
        write(c, ks.doc, strlen(ks.doc)) < 0)
      (void)0; /* the client gave up; nothing to tell */
    pthread_mutex_unlock(&ks.mu);
    close(c);
    if (ks.stop)
      break;
  }
  return NULL;
}

static void set_doc(const char *const *kids, int n)
{
  json_t *keys = json_array();
  char *doc;
  int i;

  for (i = 0; i < n; i++)
    json_array_append_new(keys, jwk_of(KEY_DIR "rsa1.pub.pem", kids[i], false));
  doc = set_json(keys);
  pthread_mutex_lock(&ks.mu);
  snprintf(ks.doc, sizeof(ks.doc), "%s", doc);
  pthread_mutex_unlock(&ks.mu);
  free(doc);
}

static void ks_start(void)
{
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t len = sizeof(a);

  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ks.fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(ks.fd, 0);
  ck_assert_int_eq(bind(ks.fd, (struct sockaddr *)&a, sizeof(a)), 0);
  ck_assert_int_eq(listen(ks.fd, 8), 0);
  ck_assert_int_eq(getsockname(ks.fd, (struct sockaddr *)&a, &len), 0);
  ks.port = ntohs(a.sin_port);
  ks.requests = ks.stall_from = 0;
  ks.released = ks.stop = false;
  ck_assert_int_eq(pthread_create(&ks.thread, NULL, serve, NULL), 0);
}

static void ks_stop(void)
{
  pthread_mutex_lock(&ks.mu);
  ks.stop = true;
  pthread_cond_broadcast(&ks.cv);
  pthread_mutex_unlock(&ks.mu);
  shutdown(ks.fd, SHUT_RDWR);
  close(ks.fd);
  pthread_join(ks.thread, NULL);
}

struct lookup {
  char url[128];
  const char *kid;
  time_t now;
  json_t *jwk;
  atomic_bool done;
};

static void *look_up(void *arg)
{
  struct lookup *l = arg;
  enum jwks_alg alg;
  char err[128];

  l->jwk = jwks_key(l->url, l->kid, 1, l->now, &alg, err, sizeof(err));
  atomic_store(&l->done, true);
  return NULL;
}

/*
 * Issue 22: while a refetch (an unknown kid) waits on a stalled key server,
 * a verification whose kid is cached completes, and a second caller with
 * the unknown kid waits for the same fetch instead of starting another.
 */
START_TEST(fetch_outside_the_lock)
{
  static const char *const first[] = {"a"}, *const rotated[] = {"a", "b"};
  struct lookup rotate = {.kid = "b", .now = NOW + 5};
  struct lookup again = {.kid = "b", .now = NOW + 5};
  struct lookup cached = {.kid = "a", .now = NOW + 5};
  pthread_t t1, t2;
  enum jwks_alg alg;
  char url[128], err[128];
  json_t *jwk;

  jwks_reset();
  ks_start();
  set_doc(first, 1);
  snprintf(url, sizeof(url), "http://127.0.0.1:%u/certs", ks.port);
  jwk = jwks_key(url, "a", 1, NOW, &alg, err, sizeof(err));
  ck_assert_msg(jwk != NULL, "%s", err);
  json_decref(jwk);
  ck_assert_int_eq(ks.requests, 1);

  /* the keys rotate; the next fetch stalls until released */
  set_doc(rotated, 2);
  pthread_mutex_lock(&ks.mu);
  ks.stall_from = 2;
  pthread_mutex_unlock(&ks.mu);
  snprintf(rotate.url, sizeof(rotate.url), "%s", url);
  snprintf(again.url, sizeof(again.url), "%s", url);
  snprintf(cached.url, sizeof(cached.url), "%s", url);
  ck_assert_int_eq(pthread_create(&t1, NULL, look_up, &rotate), 0);
  pthread_mutex_lock(&ks.mu);
  while (ks.requests < 2)
    pthread_cond_wait(&ks.cv, &ks.mu);
  pthread_mutex_unlock(&ks.mu);
  ck_assert_int_eq(pthread_create(&t2, NULL, look_up, &again), 0);

  /* the refetch is in flight: a cached kid is answered meanwhile */
  look_up(&cached);
  ck_assert_msg(cached.jwk != NULL, "the cached key was not served");
  ck_assert_msg(!atomic_load(&rotate.done),
                "the cached kid was answered only after the stalled fetch "
                "ended: the fetch held the lock");

  pthread_mutex_lock(&ks.mu);
  ks.released = true;
  pthread_cond_broadcast(&ks.cv);
  pthread_mutex_unlock(&ks.mu);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  ck_assert_msg(rotate.jwk != NULL, "the rotated key was not fetched");
  ck_assert_msg(again.jwk != NULL,
                "the second caller did not get the fetched key");
  /* single flight: two callers, one fetch */
  ck_assert_int_eq(ks.requests, 2);
  ck_assert_uint_eq(jwks_fetches(url), 2);
  json_decref(rotate.jwk);
  json_decref(again.jwk);
  json_decref(cached.jwk);
  ks_stop();
  jwks_reset();
}
END_TEST

/* Unknown kids refetch at most once per cooldown; a set past max-age is
 * refetched; a key server that is down leaves the cached keys in use. */
START_TEST(cooldown_and_outage)
{
  static const char *const first[] = {"a"};
  enum jwks_alg alg;
  char url[128], err[128], kid[32];
  json_t *jwk;
  int i;

  jwks_reset();
  ks_start();
  set_doc(first, 1);
  snprintf(url, sizeof(url), "http://127.0.0.1:%u/certs", ks.port);
  jwk = jwks_key(url, "a", 30, NOW, &alg, err, sizeof(err));
  ck_assert_ptr_nonnull(jwk);
  json_decref(jwk);
  for (i = 0; i < 60; i++) { /* random kids within the cooldown */
    snprintf(kid, sizeof(kid), "forged-%d", i);
    ck_assert_ptr_null(
        jwks_key(url, kid, 30, NOW + 1 + i / 10, &alg, err, sizeof(err)));
  }
  ck_assert_int_eq(ks.requests, 1);
  ck_assert_ptr_null(jwks_key(url, "x", 30, NOW + 30, &alg, err, sizeof(err)));
  ck_assert_int_eq(ks.requests, 2); /* the cooldown passed: one refetch */
  ck_assert_str_eq(err, "unknown key id");
  ks_stop(); /* the key server goes away */
  jwk = jwks_key(url, "a", 30, NOW + 3700, &alg, err, sizeof(err));
  ck_assert_msg(jwk != NULL, "a cached key was dropped when a refetch failed");
  json_decref(jwk);
  ck_assert_ptr_null(
      jwks_key(url, "new", 30, NOW + 3800, &alg, err, sizeof(err)));
  jwks_reset();
}
END_TEST

/* A key set pushed out of the cache by others keeps its cooldown: once
 * back, an unknown kid does not refetch it before the cooldown ends. */
START_TEST(cooldown_survives_eviction)
{
  static const char *const first[] = {"a"};
  enum jwks_alg alg;
  char url[128], other[128], err[128];
  json_t *jwk;
  int i, before;

  jwks_reset();
  ks_start();
  set_doc(first, 1);
  snprintf(url, sizeof(url), "http://127.0.0.1:%u/certs", ks.port);
  jwk = jwks_key(url, "a", 30, NOW, &alg, err, sizeof(err));
  ck_assert_msg(jwk != NULL, "%s", err);
  json_decref(jwk);
  /* as many other sets as the cache holds: url's slot is taken over */
  for (i = 0; i < JWKS_MAX_SETS; i++) {
    snprintf(other, sizeof(other), "http://127.0.0.1:%u/other-%d", ks.port, i);
    jwk = jwks_key(other, "a", 30, NOW + 1, &alg, err, sizeof(err));
    ck_assert_msg(jwk != NULL, "%s", err);
    json_decref(jwk);
  }
  ck_assert_uint_eq(jwks_fetches(url), 0); /* no longer cached */
  before = ks.requests;
  /* back within the cooldown, with made-up kids: no fetch */
  for (i = 0; i < 20; i++) {
    char kid[32];
    snprintf(kid, sizeof(kid), "forged-%d", i);
    ck_assert_ptr_null(jwks_key(url, kid, 30, NOW + 2, &alg, err, sizeof(err)));
  }
  ck_assert_int_eq(ks.requests, before);
  /* after it, one */
  jwk = jwks_key(url, "a", 30, NOW + 30, &alg, err, sizeof(err));
  ck_assert_msg(jwk != NULL, "%s", err);
  json_decref(jwk);
  ck_assert_int_eq(ks.requests, before + 1);
  ks_stop();
  jwks_reset();
}
END_TEST

/* Set the stub's answer to a discovery document for iss whose jwks_uri
 * is iss/path. */
static void set_discovery(const char *iss, const char *path)
{
  pthread_mutex_lock(&ks.mu);
  snprintf(ks.doc, sizeof(ks.doc),
           "{\"issuer\": \"%s\", \"jwks_uri\": \"%s/%s\"}", iss, iss, path);
  pthread_mutex_unlock(&ks.mu);
}

/* discovery_get at now until its jwks_uri ends with want (polled, at most
 * 20 s: the first fetch runs on a thread of its own). */
static void discovery_until(const char *iss, time_t now, const char *want)
{
  time_t end = time(NULL) + 20;
  struct discovery_doc d = {0};
  char err[128] = "";
  size_t n;

  for (;;) {
    if (discovery_get(iss, now, &d, err, sizeof(err)) == 0 &&
        (n = strlen(d.jwks_uri)) >= strlen(want) &&
        !strcmp(d.jwks_uri + n - strlen(want), want))
      return;
    ck_assert_msg(time(NULL) < end, "jwks_uri %s (%s), want …%s", d.jwks_uri,
                  err, want);
    usleep(20000);
  }
}

/* A stale discovery document is served while its refetch is held open
 * behind the caller, and replaced once that fetch answers; a refetch that
 * fails keeps it. */
START_TEST(discovery_stale_served)
{
  struct discovery_doc d;
  char iss[64], err[128];
  time_t end;

  signal(SIGPIPE, SIG_IGN); /* a client gone while its answer was held */
  discovery_reset();
  ks_start();
  snprintf(iss, sizeof(iss), "http://127.0.0.1:%u", ks.port);
  set_discovery(iss, "a");
  discovery_until(iss, NOW, "/a");
  ck_assert_int_eq(ks.requests, 1);

  /* an hour on: stale; its refetch is held, the cached one served */
  set_discovery(iss, "b");
  pthread_mutex_lock(&ks.mu);
  ks.stall_from = 2;
  pthread_mutex_unlock(&ks.mu);
  ck_assert_int_eq(discovery_get(iss, NOW + 3600, &d, err, sizeof(err)), 0);
  ck_assert_msg(strstr(d.jwks_uri, "/a"), "%s", d.jwks_uri);
  end = time(NULL) + 20;
  pthread_mutex_lock(&ks.mu);
  while (ks.requests < 2 && time(NULL) < end) {
    pthread_mutex_unlock(&ks.mu);
    usleep(20000);
    pthread_mutex_lock(&ks.mu);
  }
  ck_assert_int_eq(ks.requests, 2); /* the refetch, behind the caller */
  ks.released = true;
  pthread_cond_broadcast(&ks.cv);
  pthread_mutex_unlock(&ks.mu);
  discovery_until(iss, NOW + 3601, "/b");
  ck_assert_int_eq(ks.requests, 2); /* single flight */

  /* the provider goes away: the refetch fails, the document stays */
  ks_stop();
  ck_assert_int_eq(discovery_get(iss, NOW + 7300, &d, err, sizeof(err)), 0);
  ck_assert_msg(strstr(d.jwks_uri, "/b"), "%s", d.jwks_uri);
  discovery_until(iss, NOW + 7301, "/b");
  discovery_reset();
}
END_TEST

Suite *jwks_suite(void)
{
  Suite *s = suite_create("jwks");
  TCase *tc = tcase_create("jwks");

  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, jwks_keeps_signing_keys);
  tcase_add_loop_test(tc, jwks_rejects, 0, N_OF(bad_sets));
  tcase_add_loop_test(tc, cache_control, 0, N_OF(age_cases));
  tcase_add_loop_test(tc, tokens, 0, N_OF(tok_cases));
  tcase_add_loop_test(tc, junk, 0, N_OF(junk_tokens));
  tcase_add_test(tc, fetch_outside_the_lock);
  tcase_add_test(tc, cooldown_and_outage);
  tcase_add_test(tc, cooldown_survives_eviction);
  tcase_add_test(tc, discovery_stale_served);
  suite_add_tcase(s, tc);
  return s;
}
