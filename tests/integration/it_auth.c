/*
 * it_auth.c — bearer-token authentication seen from outside: a table of
 * tokens, each built here with libjwt (or by splicing a token's parts) or
 * with auth_mint(), sent to GET /v1/flavors of a server that accepts HS256,
 * RS256 (keys rsa1, rsa2) and ES256 (key ec1). Every refused token must get
 * 401 problem+json with WWW-Authenticate: Bearer error="invalid_token" and
 * a body that repeats no part of the token.
 */
#include <check.h>
#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "identity/auth.h"
#include "lib/b64url.h"
#include "server/config.h"
#include "tests/integration/harness.h"

Suite *auth_suite(void);

#define KEYS "tests/fixtures/keys/"
#define WWW_AUTH "Bearer error=\"invalid_token\""

static struct h_server srv;

/* Keys by name: "hs256", "rsa1", "rsa2", "ec1" (private PEMs), "rsa1.pub"
 * (the configured public PEM, for the HMAC confusion attack) and "rogue"
 * (an RSA key made here that the server does not know). */
struct key {
  const char *name;
  unsigned char *data;
  size_t len;
};

static struct key keys[] = {{"hs256", NULL, 0},    {"rsa1", NULL, 0},
                            {"rsa2", NULL, 0},     {"ec1", NULL, 0},
                            {"rsa1.pub", NULL, 0}, {"rogue", NULL, 0}};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static const char *const key_files[] = {KEYS "hs256.secret", KEYS "rsa1.pem",
                                        KEYS "rsa2.pem",     KEYS "ec1.pem",
                                        KEYS "rsa1.pub.pem", NULL};

/* A fresh 2048-bit RSA private key as PEM (new malloc'd buffer). */
static unsigned char *rogue_rsa_pem(size_t *len)
{
  EVP_PKEY *pkey = EVP_RSA_gen(2048);
  BIO *bio = BIO_new(BIO_s_mem());
  unsigned char *out = NULL;
  char *p;
  long n;

  if (!pkey || !bio ||
      !PEM_write_bio_PrivateKey(bio, pkey, NULL, NULL, 0, NULL, NULL))
    goto done;
  n = BIO_get_mem_data(bio, &p);
  if (n <= 0)
    goto done;
  out = malloc((size_t)n + 1);
  if (!out)
    goto done;
  memcpy(out, p, (size_t)n);
  out[n] = '\0';
  *len = (size_t)n;
done:
  BIO_free(bio);
  EVP_PKEY_free(pkey);
  return out;
}

static const struct key *key_named(const char *name)
{
  size_t i;

  for (i = 0; i < N_KEYS; i++)
    if (!strcmp(keys[i].name, name))
      return &keys[i];
  ck_abort_msg("no key %s", name);
  return NULL;
}

static void setup(void)
{
  static const char *const env[] = {"GPUGATE_JWT_ALGORITHMS=HS256,RS256,ES256",
                                    "GPUGATE_JWT_PUBLIC_KEYS=rsa1=" KEYS
                                    "rsa1.pub.pem,rsa2=" KEYS
                                    "rsa2.pub.pem,ec1=" KEYS "ec1.pub.pem",
                                    "GPUGATE_JWT_MAX_LIFETIME_S=86400",
                                    "GPUGATE_RATE_LIMIT_RPS=100000", NULL};
  char url[512];
  size_t i;

  for (i = 0; key_files[i]; i++) {
    keys[i].data =
        (unsigned char *)file_read(key_files[i], 65536, &keys[i].len);
    ck_assert_msg(keys[i].data != NULL, "cannot read %s", key_files[i]);
  }
  keys[i].data = rogue_rsa_pem(&keys[i].len);
  ck_assert_msg(keys[i].data != NULL, "cannot generate an RSA key");
  ck_assert_int_eq(h_db_create("it_auth", url, sizeof(url)), 0);
  ck_assert_int_eq(h_server_start(&srv, url, env), 0);
}

static void teardown(void)
{
  size_t i;

  h_server_stop(&srv);
  for (i = 0; i < N_KEYS; i++) {
    free(keys[i].data);
    keys[i].data = NULL;
  }
}

/* base64url without padding of n bytes (new malloc'd string). */
static char *b64url(const void *in, size_t n)
{
  size_t cap = n / 3 * 4 + 5;
  char *out = malloc(cap);

  ck_assert_ptr_nonnull(out);
  ck_assert(b64url_encode(in, n, out, cap) > 0 || n == 0);
  if (n == 0)
    out[0] = '\0';
  return out;
}

/* What is done to a correctly signed token before it is sent. */
enum surgery {
  S_NONE,
  S_ALG_NONE_HDR,   /* header replaced by {"alg":"none"}, signature kept */
  S_TAMPER_PAYLOAD, /* payload replaced by one with role admin */
  S_TAMPER_SIG,     /* one character of the signature changed */
  S_STD_B64,        /* a '+' (standard, not url-safe, base64) in payload */
  S_PADDED,         /* '=' padding after the header */
  S_BAD_LENGTH,     /* payload cut to a length no base64 has (4k + 1) */
  S_TWO_PARTS,      /* signature and its dot removed */
  S_FOUR_PARTS,     /* ".e30" appended */
  S_PAD_TO_LIMIT,   /* claim "pad" grown until the token is at most 8192 */
  S_PAD_OVER_LIMIT  /* claim "pad" grown until the token is just over */
};

#define ABSENT 1L /* an nbf offset of 1 s means "no nbf claim" */

struct tcase {
  const char *name;
  const char *header; /* Authorization value format, %s = token; NULL: none */
  const char *alg;    /* "HS256", "RS256", "ES256", "HS512", "none" */
  const char *key;    /* keys[] name */
  const char *kid;    /* NULL: no kid header */
  long iat, exp, nbf; /* offsets from now; nbf ABSENT: no claim */
  const char *claims; /* JSON merged over the defaults; null deletes */
  enum surgery surgery;
  bool mint;   /* built with auth_mint() instead of libjwt */
  long status; /* 200 or 401 */
};

#define B "Bearer %s"

static const struct tcase cases[] = {
    /* controls: the builder itself makes acceptable tokens */
    {"control HS256", B, "HS256", "hs256", NULL, 0, 600, ABSENT, NULL, S_NONE,
     false, 200},
    {"control RS256 kid rsa1", B, "RS256", "rsa1", "rsa1", 0, 600, ABSENT, NULL,
     S_NONE, false, 200},
    {"control ES256 kid ec1", B, "ES256", "ec1", "ec1", 0, 600, ABSENT, NULL,
     S_NONE, false, 200},
    {"control aud array", B, "HS256", "hs256", NULL, 0, 600, ABSENT,
     "{\"aud\": [\"other\", \"gpugate\"]}", S_NONE, false, 200},
    {"control expired within leeway", B, "HS256", "hs256", NULL, -600, -30,
     ABSENT, NULL, S_NONE, false, 200},
    {"control lifetime exactly the maximum", B, "HS256", "hs256", NULL, 0,
     86400, ABSENT, NULL, S_NONE, false, 200},
    {"control nbf in the past", B, "HS256", "hs256", NULL, 0, 600, -60, NULL,
     S_NONE, false, 200},
    {"control token of at most 8192 bytes", B, "HS256", "hs256", NULL, 0, 600,
     ABSENT, NULL, S_PAD_TO_LIMIT, false, 200},
    /* auth_mint, as operators mint tokens */
    {"mint HS256", B, "HS256", "hs256", NULL, 0, 600, ABSENT, NULL, S_NONE,
     true, 200},
    {"mint RS256 kid rsa1", B, "RS256", "rsa1", "rsa1", 0, 600, ABSENT, NULL,
     S_NONE, true, 200},
    {"mint RS256 kid rsa2", B, "RS256", "rsa2", "rsa2", 0, 600, ABSENT, NULL,
     S_NONE, true, 200},
    {"mint ES256 kid ec1", B, "ES256", "ec1", "ec1", 0, 600, ABSENT, NULL,
     S_NONE, true, 200},

    /* no usable credentials */
    {"no Authorization header", NULL, "HS256", "hs256", NULL, 0, 600, ABSENT,
     NULL, S_NONE, false, 401},
    {"Basic scheme", "Basic dXNlcjpwYXNzd29yZA==", "HS256", "hs256", NULL, 0,
     600, ABSENT, NULL, S_NONE, false, 401},
    {"Token scheme with a valid token", "Token %s", "HS256", "hs256", NULL, 0,
     600, ABSENT, NULL, S_NONE, false, 401},
    {"valid token without a scheme", "%s", "HS256", "hs256", NULL, 0, 600,
     ABSENT, NULL, S_NONE, false, 401},
    {"Bearer without a token", "Bearer", "HS256", "hs256", NULL, 0, 600, ABSENT,
     NULL, S_NONE, false, 401},
    /* algorithm attacks */
    {"alg none (libjwt, empty signature)", B, "none", "hs256", NULL, 0, 600,
     ABSENT, NULL, S_NONE, false, 401},
    {"alg none header with a real signature", B, "HS256", "hs256", NULL, 0, 600,
     ABSENT, NULL, S_ALG_NONE_HDR, false, 401},
    {"HS256 keyed with the RSA public PEM, kid rsa1", B, "HS256", "rsa1.pub",
     "rsa1", 0, 600, ABSENT, NULL, S_NONE, false, 401},
    {"HS256 keyed with the RSA public PEM, no kid", B, "HS256", "rsa1.pub",
     NULL, 0, 600, ABSENT, NULL, S_NONE, false, 401},
    {"HS512 is not allowed", B, "HS512", "hs256", NULL, 0, 600, ABSENT, NULL,
     S_NONE, false, 401},
    {"RS256 with the kid of the EC key", B, "RS256", "rsa1", "ec1", 0, 600,
     ABSENT, NULL, S_NONE, false, 401},
    {"ES256 with the kid of an RSA key", B, "ES256", "ec1", "rsa1", 0, 600,
     ABSENT, NULL, S_NONE, false, 401},
    /* keys */
    {"unknown kid", B, "RS256", "rsa1", "rsa9", 0, 600, ABSENT, NULL, S_NONE,
     false, 401},
    {"RS256 by an unknown key, kid rsa1", B, "RS256", "rogue", "rsa1", 0, 600,
     ABSENT, NULL, S_NONE, false, 401},
    {"RS256 by an unknown key, no kid", B, "RS256", "rogue", NULL, 0, 600,
     ABSENT, NULL, S_NONE, false, 401},
    {"RS256 by rsa2 claiming kid rsa1", B, "RS256", "rsa2", "rsa1", 0, 600,
     ABSENT, NULL, S_NONE, false, 401},
    /* time */
    {"expired", B, "HS256", "hs256", NULL, -7200, -3600, ABSENT, NULL, S_NONE,
     false, 401},
    {"nbf in the future", B, "HS256", "hs256", NULL, 0, 7200, 3600, NULL,
     S_NONE, false, 401},
    {"iat in the future", B, "HS256", "hs256", NULL, 3600, 7200, ABSENT, NULL,
     S_NONE, false, 401},
    {"lifetime over the maximum", B, "HS256", "hs256", NULL, 0, 86400 + 120,
     ABSENT, NULL, S_NONE, false, 401},
    {"exp missing", B, "HS256", "hs256", NULL, 0, 600, ABSENT,
     "{\"exp\": null}", S_NONE, false, 401},
    {"exp as a string", B, "HS256", "hs256", NULL, 0, 600, ABSENT,
     "{\"exp\": \"4102444800\"}", S_NONE, false, 401},
    /* claims */
    {"wrong iss", B, "HS256", "hs256", NULL, 0, 600, ABSENT,
     "{\"iss\": \"someone-else\"}", S_NONE, false, 401},
    {"missing iss", B, "HS256", "hs256", NULL, 0, 600, ABSENT,
     "{\"iss\": null}", S_NONE, false, 401},
    {"wrong aud", B, "HS256", "hs256", NULL, 0, 600, ABSENT,
     "{\"aud\": \"another-api\"}", S_NONE, false, 401},
    {"missing team", B, "HS256", "hs256", NULL, 0, 600, ABSENT,
     "{\"team\": null}", S_NONE, false, 401},
    {"team not a name", B, "HS256", "hs256", NULL, 0, 600, ABSENT,
     "{\"team\": \"Team A\"}", S_NONE, false, 401},
    {"missing role", B, "HS256", "hs256", NULL, 0, 600, ABSENT,
     "{\"role\": null}", S_NONE, false, 401},
    {"bad role", B, "HS256", "hs256", NULL, 0, 600, ABSENT,
     "{\"role\": \"superuser\"}", S_NONE, false, 401},
    {"role as an array", B, "HS256", "hs256", NULL, 0, 600, ABSENT,
     "{\"role\": [\"admin\"]}", S_NONE, false, 401},
    /* integrity */
    {"tampered payload (member made admin)", B, "HS256", "hs256", NULL, 0, 600,
     ABSENT, NULL, S_TAMPER_PAYLOAD, false, 401},
    {"tampered payload, RS256", B, "RS256", "rsa1", "rsa1", 0, 600, ABSENT,
     NULL, S_TAMPER_PAYLOAD, false, 401},
    {"tampered signature", B, "HS256", "hs256", NULL, 0, 600, ABSENT, NULL,
     S_TAMPER_SIG, false, 401},
    {"tampered signature, ES256", B, "ES256", "ec1", "ec1", 0, 600, ABSENT,
     NULL, S_TAMPER_SIG, false, 401},
    /* encoding */
    {"token over 8 KiB", B, "HS256", "hs256", NULL, 0, 600, ABSENT, NULL,
     S_PAD_OVER_LIMIT, false, 401},
    {"standard base64 character in payload", B, "HS256", "hs256", NULL, 0, 600,
     ABSENT, NULL, S_STD_B64, false, 401},
    {"padded base64", B, "HS256", "hs256", NULL, 0, 600, ABSENT, NULL, S_PADDED,
     false, 401},
    {"impossible base64 length", B, "HS256", "hs256", NULL, 0, 600, ABSENT,
     NULL, S_BAD_LENGTH, false, 401},
    {"two parts", B, "HS256", "hs256", NULL, 0, 600, ABSENT, NULL, S_TWO_PARTS,
     false, 401},
    {"four parts", B, "HS256", "hs256", NULL, 0, 600, ABSENT, NULL,
     S_FOUR_PARTS, false, 401},
    {"garbage", "Bearer not-a-jwt-at-all", "HS256", "hs256", NULL, 0, 600,
     ABSENT, NULL, S_NONE, false, 401},
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

static jwt_alg_t alg_of(const char *name)
{
  if (!strcmp(name, "none"))
    return JWT_ALG_NONE;
  if (!strcmp(name, "HS256"))
    return JWT_ALG_HS256;
  if (!strcmp(name, "HS512"))
    return JWT_ALG_HS512;
  if (!strcmp(name, "RS256"))
    return JWT_ALG_RS256;
  if (!strcmp(name, "ES256"))
    return JWT_ALG_ES256;
  ck_abort_msg("no alg %s", name);
  return JWT_ALG_INVAL;
}

/* The claims of a case as JSON text (new malloc'd string). */
static char *claims_of(const struct tcase *c, time_t now, const char *role,
                       size_t pad)
{
  json_t *cl = json_pack(
      "{s:s, s:s, s:s, s:s, s:s, s:I, s:I}", "iss", "gpugate", "aud", "gpugate",
      "sub", "it-auth", "team", "team-a", "role", role, "iat",
      (json_int_t)(now + c->iat), "exp", (json_int_t)(now + c->exp));
  const char *k;
  json_t *v;
  char *text;

  ck_assert_ptr_nonnull(cl);
  if (c->nbf != ABSENT)
    json_object_set_new(cl, "nbf", json_integer((json_int_t)(now + c->nbf)));
  if (c->claims) {
    json_t *over = json_loads(c->claims, 0, NULL);
    ck_assert_msg(over != NULL, "%s: bad claims", c->name);
    json_object_foreach (over, k, v) {
      if (json_is_null(v))
        json_object_del(cl, k);
      else
        json_object_set(cl, k, v);
    }
    json_decref(over);
  }
  if (pad) {
    char *p = malloc(pad + 1);
    ck_assert_ptr_nonnull(p);
    memset(p, 'x', pad);
    p[pad] = '\0';
    json_object_set_new(cl, "pad", json_string(p));
    free(p);
  }
  text = json_dumps(cl, JSON_COMPACT);
  json_decref(cl);
  ck_assert_ptr_nonnull(text);
  return text;
}

/* Sign claims with libjwt: the token as libjwt makes it (malloc'd). */
static char *sign(const struct tcase *c, const char *claims)
{
  const struct key *k = key_named(c->key);
  jwt_alg_t alg = alg_of(c->alg);
  jwt_t *jwt = NULL;
  char *tok;

  ck_assert_int_eq(jwt_new(&jwt), 0);
  ck_assert_int_eq(jwt_add_grants_json(jwt, claims), 0);
  if (c->kid)
    ck_assert_int_eq(jwt_add_header(jwt, "kid", c->kid), 0);
  if (alg == JWT_ALG_NONE)
    ck_assert_int_eq(jwt_set_alg(jwt, alg, NULL, 0), 0);
  else
    ck_assert_int_eq(jwt_set_alg(jwt, alg, k->data, (int)k->len), 0);
  tok = jwt_encode_str(jwt);
  jwt_free(jwt);
  ck_assert_msg(tok != NULL, "%s: libjwt cannot sign", c->name);
  return tok;
}

static char *mint(const struct tcase *c, time_t now)
{
  const struct key *k = key_named(c->key);
  struct identity_config cfg;
  char err[256], *tok;

  memset(&cfg, 0, sizeof(cfg));
  snprintf(cfg.jwt_issuer, sizeof(cfg.jwt_issuer), "gpugate");
  snprintf(cfg.jwt_audience, sizeof(cfg.jwt_audience), "gpugate");
  cfg.jwt_max_lifetime_s = 86400;
  tok = auth_mint(&cfg, c->alg, k->data, k->len, c->kid, "team-a", "member",
                  c->exp - c->iat, now + c->iat, err, sizeof(err));
  ck_assert_msg(tok != NULL, "%s: auth_mint: %s", c->name, err);
  return tok;
}

/* A new string: a's first n bytes, then b. */
static char *splice(const char *a, size_t n, const char *b)
{
  size_t bl = strlen(b);
  char *out = malloc(n + bl + 1);

  ck_assert_ptr_nonnull(out);
  memcpy(out, a, n);
  memcpy(out + n, b, bl + 1);
  return out;
}

/* Token padded so that its length is within [lo, hi]. */
static char *padded(const struct tcase *c, time_t now, size_t lo, size_t hi)
{
  size_t pad = 6000, tries;

  for (tries = 0; tries < 64; tries++) {
    char *claims = claims_of(c, now, "member", pad);
    char *tok = sign(c, claims);
    size_t len = strlen(tok);
    free(claims);
    if (len >= lo && len <= hi)
      return tok;
    free(tok);
    /* base64 grows by 4 characters per 3 bytes */
    if (len < lo)
      pad += (lo - len) * 3 / 4 + 1;
    else
      pad -= (len - hi) * 3 / 4 + 1;
  }
  ck_abort_msg("%s: cannot reach a token length in [%zu, %zu]", c->name, lo,
               hi);
  return NULL;
}

/* The token a case sends (malloc'd). */
static char *build(const struct tcase *c, time_t now)
{
  char *claims, *tok, *out, *seg, *d1, *d2;

  if (c->mint)
    return mint(c, now);
  if (c->surgery == S_PAD_TO_LIMIT)
    return padded(c, now, AUTH_MAX_TOKEN - 40, AUTH_MAX_TOKEN);
  if (c->surgery == S_PAD_OVER_LIMIT)
    return padded(c, now, AUTH_MAX_TOKEN + 1, AUTH_MAX_TOKEN + 40);
  claims = claims_of(c, now, "member", 0);
  tok = sign(c, claims);
  free(claims);
  d1 = strchr(tok, '.');
  d2 = d1 ? strchr(d1 + 1, '.') : NULL;
  ck_assert_msg(d1 && d2, "%s: libjwt made no JWS", c->name);
  switch (c->surgery) {
  case S_ALG_NONE_HDR: {
    static const char hdr[] = "{\"alg\":\"none\",\"typ\":\"JWT\"}";
    seg = b64url(hdr, strlen(hdr));
    out = splice(seg, strlen(seg), d1);
    free(seg);
    break;
  }
  case S_TAMPER_PAYLOAD: {
    char *admin = claims_of(c, now, "admin", 0), *tail;
    seg = b64url(admin, strlen(admin));
    free(admin);
    tail = splice(seg, strlen(seg), d2);
    out = splice(tok, (size_t)(d1 + 1 - tok), tail);
    free(tail);
    free(seg);
    break;
  }
  case S_TAMPER_SIG: {
    /* a character in the middle: every bit of it is significant */
    char *p;
    out = strdup(tok);
    ck_assert_ptr_nonnull(out);
    p = out + (d2 - tok) + (strlen(d2) / 2);
    *p = *p == 'A' ? 'B' : 'A';
    break;
  }
  case S_STD_B64:
    out = strdup(tok);
    ck_assert_ptr_nonnull(out);
    out[(d1 - tok) + 3] = '+';
    break;
  case S_PADDED:
    out = splice(tok, (size_t)(d1 - tok), "=");
    seg = out;
    out = splice(seg, strlen(seg), d1);
    free(seg);
    break;
  case S_BAD_LENGTH: {
    /* cut the payload to 4k + 1 characters */
    size_t plen = (size_t)(d2 - d1 - 1), keep = plen - (plen % 4) + 1;
    if (keep > plen)
      keep -= 4;
    seg = splice(tok, (size_t)(d1 + 1 - tok) + keep, "");
    out = splice(seg, strlen(seg), d2);
    free(seg);
    break;
  }
  case S_TWO_PARTS:
    out = splice(tok, (size_t)(d2 - tok), "");
    break;
  case S_FOUR_PARTS:
    out = splice(tok, strlen(tok), ".e30");
    break;
  default:
    out = strdup(tok);
    ck_assert_ptr_nonnull(out);
    break;
  }
  free(tok);
  return out;
}

/* True when text holds the token or any 8+ character part of it. */
static bool leaks(const char *text, const char *tok)
{
  const char *p = tok;

  if (strstr(text, tok))
    return true;
  while (*p) {
    size_t n = strcspn(p, ".");
    if (n >= 8) {
      char *part = strndup(p, n);
      bool found = part && strstr(text, part) != NULL;
      free(part);
      if (found)
        return true;
    }
    p += n;
    if (*p)
      p++;
  }
  return false;
}

START_TEST(token_table)
{
  const struct tcase *c = &cases[_i];
  time_t now = time(NULL);
  char *tok = build(c, now);
  char *auth = NULL, www[128];
  const char *hdrs[2] = {NULL, NULL};
  struct h_resp r;

  if (c->header) {
    /* "Authorization: " + header with its "%s" replaced by the token */
    const char *at = strstr(c->header, "%s");
    size_t pre = at ? (size_t)(at - c->header) : strlen(c->header);
    size_t n = strlen(c->header) + strlen(tok) + 32;
    auth = malloc(n);
    ck_assert_ptr_nonnull(auth);
    snprintf(auth, n, "Authorization: %.*s%s%s", (int)pre, c->header,
             at ? tok : "", at ? at + 2 : "");
    hdrs[0] = auth;
  }
  ck_assert_int_eq(h_request(&srv, "GET", "/v1/flavors", NULL, NULL, hdrs, &r),
                   0);
  ck_assert_msg(r.status == c->status, "%s: status %ld, want %ld: %s", c->name,
                r.status, c->status, r.body);
  if (c->status == 200) {
    ck_assert_msg(json_is_array(json_object_get(r.json, "items")), "%s: %s",
                  c->name, r.body);
  } else {
    ck_assert_msg(h_is_problem(&r, 401, NULL), "%s: not a 401 problem: %s",
                  c->name, r.body);
    ck_assert_msg(h_header(&r, "WWW-Authenticate", www, sizeof(www)) != NULL,
                  "%s: no WWW-Authenticate", c->name);
    ck_assert_msg(!strcmp(www, WWW_AUTH), "%s: WWW-Authenticate: %s", c->name,
                  www);
    ck_assert_msg(!leaks(r.body, tok), "%s: the body repeats the token: %s",
                  c->name, r.body);
    ck_assert_msg(!leaks(r.headers, tok), "%s: a header repeats the token",
                  c->name);
  }
  h_resp_free(&r);
  free(auth);
  free(tok);
}
END_TEST

/* A refused token on a route only admins may call is still 401, not 403. */
START_TEST(invalid_token_beats_role_check)
{
  const struct tcase *c = &cases[0];
  char *claims = claims_of(c, time(NULL), "admin", 0), *tok, *bad;
  struct h_resp r;

  tok = sign(c, claims);
  free(claims);
  bad = strdup(tok);
  ck_assert_ptr_nonnull(bad);
  bad[strlen(bad) - 10] = bad[strlen(bad) - 10] == 'A' ? 'B' : 'A';
  h_request(&srv, "GET", "/v1/cohorts", bad, NULL, NULL, &r);
  ck_assert_msg(h_is_problem(&r, 401, NULL), "%s", r.body);
  h_resp_free(&r);
  h_request(&srv, "GET", "/v1/cohorts", tok, NULL, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  h_resp_free(&r);
  free(bad);
  free(tok);
}
END_TEST

/* Public routes need no token, and a bad one does not break them. */
START_TEST(public_routes_ignore_tokens)
{
  struct h_resp r;

  h_request(&srv, "GET", "/healthz", "garbage.token.here", NULL, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  h_resp_free(&r);
}
END_TEST

Suite *auth_suite(void)
{
  Suite *s = suite_create("auth");
  TCase *tc = tcase_create("tokens");

  tcase_add_unchecked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, token_table, 0, (int)N_CASES);
  tcase_add_test(tc, invalid_token_beats_role_check);
  tcase_add_test(tc, public_routes_ignore_tokens);
  suite_add_tcase(s, tc);
  return s;
}
