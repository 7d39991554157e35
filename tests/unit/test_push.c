/*
 * test_push.c — Pub/Sub push authentication and parsing as tables:
 * push bodies (handlers/notifications_parse.c), gpugate's Batch job names,
 * JWK sets and Cache-Control (batch/jwks.c), and Google OIDC tokens
 * checked at a fixed clock (server/oidc.c) with the keys of
 * tests/fixtures/keys/ (opened relative to the repository root).
 */
#include <check.h>
#include <jwt.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch/jwks.h"
#include "handlers/notifications_parse.h"
#include "server/b64url.h"
#include "server/oidc.h"

Suite *push_suite(void);

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define KEY_DIR "tests/fixtures/keys/"

/* ---------------------------------------------------------- push bodies */

#define ENV(attrs)                                                             \
  "{\"message\": {\"attributes\": {" attrs "}, \"data\": \"e30=\", "           \
  "\"messageId\": \"1\"}, \"subscription\": \"s\"}"

static const struct {
  const char *body;
  enum push_kind kind;
  const char *name, *state; /* PUSH_JOB_STATE only */
} body_cases[] = {
    {ENV("\"Type\": \"JOB_STATE_CHANGED\", \"JobName\": \"projects/p/"
         "locations/us-central1/jobs/gpugate-j-0a1b-a1\", \"NewJobState\": "
         "\"RUNNING\""),
     PUSH_JOB_STATE, "projects/p/locations/us-central1/jobs/gpugate-j-0a1b-a1",
     "RUNNING"},
    {ENV("\"JobName\": \"gpugate-j-1-a12-r2\", \"NewJobState\": "
         "\"SUCCEEDED\""),
     PUSH_JOB_STATE, "gpugate-j-1-a12-r2", "SUCCEEDED"},
    /* the poison of issue 11: a user's job named with gpugate's prefix */
    {ENV("\"JobName\": \"projects/p/locations/l/jobs/gpugate-x-abar\", "
         "\"NewJobState\": \"RUNNING\""),
     PUSH_FOREIGN, NULL, NULL},
    {ENV("\"JobName\": \"gpugate-x-a9999999999\", \"NewJobState\": "
         "\"RUNNING\""),
     PUSH_FOREIGN, NULL, NULL},
    {ENV("\"JobName\": \"my-training\", \"NewJobState\": \"RUNNING\""),
     PUSH_FOREIGN, NULL, NULL},
    {ENV("\"Type\": \"TASK_STATE_CHANGED\", \"JobName\": \"gpugate-j-a1\""),
     PUSH_IGNORED, NULL, NULL},
    {ENV("\"JobName\": \"gpugate-j-1-a1\""), PUSH_IGNORED, NULL, NULL},
    {"{\"message\": {\"data\": \"e30=\"}}", PUSH_IGNORED, NULL, NULL},
    {ENV("\"JobName\": 1, \"NewJobState\": \"RUNNING\""), PUSH_MALFORMED, NULL,
     NULL},
    {ENV("\"Type\": null, \"JobName\": \"gpugate-j-1-a1\", \"NewJobState\": "
         "\"RUNNING\""),
     PUSH_MALFORMED, NULL, NULL},
    {ENV("\"JobName\": \"gpugate-j-1-a1\", \"NewJobState\": \"running\""),
     PUSH_MALFORMED, NULL, NULL},
    {ENV("\"JobName\": \"gpugate-j-1-a1\", \"NewJobState\": \"\""),
     PUSH_MALFORMED, NULL, NULL},
    {ENV("\"JobName\": \"gpugate-j-1\\u0000-a1\", \"NewJobState\": \"X\""),
     PUSH_MALFORMED, NULL, NULL},
    {"{\"message\": {\"attributes\": [1]}}", PUSH_MALFORMED, NULL, NULL},
    {"{\"message\": 1}", PUSH_MALFORMED, NULL, NULL},
    {"{\"subscription\": \"x\"}", PUSH_MALFORMED, NULL, NULL},
    {"[]", PUSH_MALFORMED, NULL, NULL},
    {"", PUSH_MALFORMED, NULL, NULL},
    {"{\"message\": ", PUSH_MALFORMED, NULL, NULL},
    {"{\"message\": {}, \"message\": {}}", PUSH_MALFORMED, NULL, NULL},
};

START_TEST(parse_body)
{
  struct push_msg m;
  enum push_kind k = notifications_parse_push(body_cases[_i].body,
                                              strlen(body_cases[_i].body), &m);

  ck_assert_msg(k == body_cases[_i].kind && m.kind == k,
                "%s: kind %d, want %d (%s)", body_cases[_i].body, (int)k,
                (int)body_cases[_i].kind, m.why ? m.why : "");
  if (k == PUSH_JOB_STATE) {
    ck_assert_str_eq(m.job_name, body_cases[_i].name);
    ck_assert_str_eq(m.state, body_cases[_i].state);
  } else {
    ck_assert_ptr_nonnull(m.why);
  }
}
END_TEST

static const struct {
  const char *base;
  bool ours;
} name_cases[] = {
    {"gpugate-j-0a1b-a1", true},
    {"gpugate-nosuchjob-a1", true},
    {"gpugate-x-a123456789", true},
    {"gpugate-j-1-a2-r1", true},
    {"gpugate-j-1-a2-r9999", true},
    {"gpugate-x-abar", false},
    {"gpugate-x-a", false},
    {"gpugate-x-a1234567890", false}, /* past int range */
    {"gpugate-x-a1-r", false},
    {"gpugate-x-a1-r12345", false},
    {"gpugate-x-r1", false},
    {"gpugate--a1", false},
    {"gpugate-x--a1", false},
    {"gpugate-a1", false},
    {"gpugate-X-a1", false},
    {"gpugate-x_y-a1", false},
    {"other-x-a1", false},
    {"", false},
    {"gpugate-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-a1",
     false}, /* 64 characters */
};

START_TEST(gpugate_job_names)
{
  ck_assert_msg(notifications_is_gpugate_job(name_cases[_i].base) ==
                    name_cases[_i].ours,
                "\"%s\": want %d", name_cases[_i].base, name_cases[_i].ours);
}
END_TEST

/* ------------------------------------------------------------ JWK sets */

static char *slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;

  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(buf);
  ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  if (len)
    *len = (size_t)n;
  return buf;
}

static void b64url(const unsigned char *in, size_t n, char *out)
{
  ck_assert(b64url_encode(in, n, out, 4 * ((n + 2) / 3) + 1) > 0 || n == 0);
}

/* The "n" and "e" of a fixture's public key, base64url. */
static void key_ne(const char *pub, char *n64, char *e64)
{
  FILE *f = fopen(pub, "r");
  EVP_PKEY *k;
  BIGNUM *n = NULL, *e = NULL;
  unsigned char nb[1024], eb[16];
  int nl, el;

  ck_assert_ptr_nonnull(f);
  k = PEM_read_PUBKEY(f, NULL, NULL, NULL);
  fclose(f);
  ck_assert_ptr_nonnull(k);
  ck_assert(EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_N, &n));
  ck_assert(EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_E, &e));
  nl = BN_bn2bin(n, nb);
  el = BN_bn2bin(e, eb);
  b64url(nb, (size_t)nl, n64);
  b64url(eb, (size_t)el, e64);
  BN_free(n);
  BN_free(e);
  EVP_PKEY_free(k);
}

/* The set's PEM for kid is the fixture's public key, byte for byte. */
START_TEST(jwks_from_fixture_keys)
{
  char n1[1400], e1[32], n2[1400], e2[32], doc[8192], err[128];
  char *pem1 = slurp(KEY_DIR "rsa1.pub.pem", NULL);
  char *pem2 = slurp(KEY_DIR "rsa2.pub.pem", NULL);
  struct jwks_set set;

  key_ne(KEY_DIR "rsa1.pub.pem", n1, e1);
  key_ne(KEY_DIR "rsa2.pub.pem", n2, e2);
  snprintf(doc, sizeof(doc),
           "{\"keys\": [{\"kty\": \"RSA\", \"alg\": \"RS256\", \"use\": "
           "\"sig\", \"kid\": \"k1\", \"n\": \"%s\", \"e\": \"%s\"}, "
           "{\"kty\": \"EC\", \"kid\": \"ec\", \"crv\": \"P-256\"}, "
           "{\"kty\": \"RSA\", \"alg\": \"RS512\", \"kid\": \"k512\", \"n\": "
           "\"%s\", \"e\": \"%s\"}, "
           "{\"kty\": \"RSA\", \"use\": \"enc\", \"kid\": \"kenc\", \"n\": "
           "\"%s\", \"e\": \"%s\"}, "
           "{\"kty\": \"RSA\", \"kid\": \"small\", \"n\": \"AQAB\", \"e\": "
           "\"AQAB\"}, "
           "{\"kty\": \"RSA\", \"kid\": \"k2\", \"n\": \"%s\", \"e\": "
           "\"%s\"}]}",
           n1, e1, n2, e2, n2, e2, n2, e2);
  ck_assert_int_eq(jwks_parse(doc, strlen(doc), &set, err, sizeof(err)), 0);
  ck_assert_int_eq(set.n, 2);
  ck_assert_str_eq(set.keys[0].kid, "k1");
  ck_assert_str_eq(set.keys[0].pem, pem1);
  ck_assert_str_eq(set.keys[1].kid, "k2");
  ck_assert_str_eq(set.keys[1].pem, pem2);
  jwks_set_free(&set);
  free(pem1);
  free(pem2);
}
END_TEST

static const char *const bad_sets[] = {
    "",
    "[]",
    "{}",
    "{\"keys\": {}}",
    "{\"keys\": []}",
    "{\"keys\": [{\"kty\": \"RSA\", \"kid\": \"a\", \"n\": \"!!\", \"e\": "
    "\"AQAB\"}]}",
    "{\"keys\": [{\"kty\": \"RSA\", \"n\": \"AQAB\", \"e\": \"AQAB\"}]}",
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

/* --------------------------------------------------------- OIDC tokens */

#define NOW 1790000000L
#define AUD "https://gpugate.example.com/push"
#define SA "push@p.iam.gserviceaccount.com"

/* The verifier's keys: kid "good" is rsa1's public key. */
static char *key_for(const char *kid, void *ud, char *err, size_t errlen)
{
  (void)ud;
  if (strcmp(kid, "good") != 0) {
    snprintf(err, errlen, "unknown key id");
    return NULL;
  }
  return slurp(KEY_DIR "rsa1.pub.pem", NULL);
}

struct tok {
  const char *key, *alg_kid, *iss, *aud, *email;
  int verified; /* 1 true, 0 false, -1 absent, 2 the string "true" */
  long iat, exp;
  const char *reason; /* NULL: accepted */
};

#define T(key, kid, iss, aud, email, verified, iat, exp, reason)               \
  {                                                                            \
    key, kid, iss, aud, email, verified, iat, exp, reason                      \
  }
#define G "https://accounts.google.com"

static const struct tok tok_cases[] = {
    T("rsa1", "good", G, AUD, SA, 1, NOW - 10, NOW + 3590, NULL),
    T("rsa1", "good", "accounts.google.com", AUD, SA, 1, NOW, NOW + 3600, NULL),
    /* within the 60 s leeway */
    T("rsa1", "good", G, AUD, SA, 1, NOW - 3650, NOW - 50, NULL),
    T("rsa1", "good", G, AUD, SA, 1, NOW + 50, NOW + 3650, NULL),
    /* forged or wrong */
    T("rsa2", "good", G, AUD, SA, 1, NOW, NOW + 3600, "bad signature"),
    T("rsa1", "other", G, AUD, SA, 1, NOW, NOW + 3600,
      "signing key unknown or unavailable"),
    T("rsa1", NULL, G, AUD, SA, 1, NOW, NOW + 3600, "no key id"),
    T("rsa1", "good", "https://evil.example", AUD, SA, 1, NOW, NOW + 3600,
      "issuer is not google"),
    T("rsa1", "good", G, "https://other/push", SA, 1, NOW, NOW + 3600,
      "wrong audience"),
    T("rsa1", "good", G, AUD, "x@evil.iam.gserviceaccount.com", 1, NOW,
      NOW + 3600, "wrong service account"),
    T("rsa1", "good", G, AUD, SA, 0, NOW, NOW + 3600, "email not verified"),
    T("rsa1", "good", G, AUD, SA, -1, NOW, NOW + 3600, "email not verified"),
    T("rsa1", "good", G, AUD, SA, 2, NOW, NOW + 3600, "email not verified"),
    T("rsa1", "good", G, AUD, SA, 1, NOW - 3700, NOW - 61, "token expired"),
    T("rsa1", "good", G, AUD, SA, 1, NOW + 61, NOW + 3661,
      "token issued in the future"),
    T("rsa1", "good", G, AUD, SA, 1, NOW - 10, NOW + 86400,
      "token lifetime out of range"),
};

static char *make(const struct tok *t)
{
  char path[128], *pem, *out;
  size_t len = 0;
  jwt_t *jwt = NULL;

  snprintf(path, sizeof(path), KEY_DIR "%s.pem", t->key);
  pem = slurp(path, &len);
  ck_assert_int_eq(jwt_new(&jwt), 0);
  ck_assert_int_eq(
      jwt_set_alg(jwt, JWT_ALG_RS256, (unsigned char *)pem, (int)len), 0);
  if (t->alg_kid)
    jwt_add_header(jwt, "kid", t->alg_kid);
  jwt_add_grant(jwt, "iss", t->iss);
  jwt_add_grant(jwt, "aud", t->aud);
  jwt_add_grant(jwt, "email", t->email);
  if (t->verified == 0 || t->verified == 1)
    jwt_add_grant_bool(jwt, "email_verified", t->verified);
  else if (t->verified == 2)
    jwt_add_grant(jwt, "email_verified", "true");
  jwt_add_grant_int(jwt, "iat", t->iat);
  jwt_add_grant_int(jwt, "exp", t->exp);
  out = jwt_encode_str(jwt);
  jwt_free(jwt);
  free(pem);
  ck_assert_ptr_nonnull(out);
  return out;
}

START_TEST(oidc_tokens)
{
  const struct oidc_want want = {AUD, SA, 60};
  const char *reason = "unset";
  char *t = make(&tok_cases[_i]);
  int rc = oidc_verify(t, &want, NOW, key_for, NULL, &reason);

  if (!tok_cases[_i].reason)
    ck_assert_msg(rc == 0, "case %d refused: %s", _i, reason);
  else
    ck_assert_msg(rc == -1 && reason && !strcmp(reason, tok_cases[_i].reason),
                  "case %d: rc %d reason \"%s\", want \"%s\"", _i, rc,
                  reason ? reason : "(null)", tok_cases[_i].reason);
  free(t);
}
END_TEST

/* Not RS256 or not a JWS at all. */
static const char *const junk_tokens[] = {
    "",
    "a.b",
    "a.b.c.d",
    "eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.",
    /* {"alg":"HS256","kid":"good"} . {} . sig */
    "eyJhbGciOiJIUzI1NiIsImtpZCI6Imdvb2QifQ.e30.c2ln",
    "!!!.e30.c2ln",
};

START_TEST(oidc_junk)
{
  const struct oidc_want want = {AUD, SA, 60};
  const char *reason = NULL;

  ck_assert_int_eq(
      oidc_verify(junk_tokens[_i], &want, NOW, key_for, NULL, &reason), -1);
  ck_assert_ptr_nonnull(reason);
}
END_TEST

Suite *push_suite(void)
{
  Suite *s = suite_create("push");
  TCase *tc = tcase_create("push");

  tcase_add_loop_test(tc, parse_body, 0, N_OF(body_cases));
  tcase_add_loop_test(tc, gpugate_job_names, 0, N_OF(name_cases));
  tcase_add_test(tc, jwks_from_fixture_keys);
  tcase_add_loop_test(tc, jwks_rejects, 0, N_OF(bad_sets));
  tcase_add_loop_test(tc, cache_control, 0, N_OF(age_cases));
  tcase_add_loop_test(tc, oidc_tokens, 0, N_OF(tok_cases));
  tcase_add_loop_test(tc, oidc_junk, 0, N_OF(junk_tokens));
  suite_add_tcase(s, tc);
  return s;
}
