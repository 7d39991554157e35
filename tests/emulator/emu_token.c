/*
 * emu_token.c — metadata-server and OAuth2 JWT-bearer token issuance.
 *
 * The JWT check follows Google's rules for service-account assertions:
 * RS256 only, signature by the configured public key (when one is set),
 * iss and scope present, aud equal to the token URI, exp after now and at
 * most one hour after iat. Failures answer RFC 6749 errors
 * {"error": "invalid_grant", "error_description": ...} with 400.
 */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tests/emulator/emu_config.h"
#include "tests/emulator/emu_token.h"
#include "tests/emulator/emu_util.h"

#define TOKEN_LEN 64
#define MAX_TOKENS 100000
#define JWT_BEARER "urn:ietf:params:oauth:grant-type:jwt-bearer"
#define IAT_SKEW_S 300

struct token {
  char value[TOKEN_LEN];
  long long expires_ms; /* CLOCK_MONOTONIC */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct token *tokens;
static size_t n_tokens, cap_tokens;
static EVP_PKEY *sa_key;

int emu_token_init(const char *pem_path, char *err, size_t errlen)
{
  FILE *f;

  if (!pem_path || !*pem_path)
    return 0;
  f = fopen(pem_path, "r");
  if (!f) {
    snprintf(err, errlen, "EMU_SA_PUBLIC_KEY: cannot open \"%s\"", pem_path);
    return -1;
  }
  sa_key = PEM_read_PUBKEY(f, NULL, NULL, NULL);
  fclose(f);
  if (!sa_key || EVP_PKEY_get_base_id(sa_key) != EVP_PKEY_RSA) {
    snprintf(err, errlen, "EMU_SA_PUBLIC_KEY: \"%s\" is not an RSA public key",
             pem_path);
    EVP_PKEY_free(sa_key);
    sa_key = NULL;
    return -1;
  }
  return 0;
}

void emu_token_shutdown(void)
{
  pthread_mutex_lock(&mu);
  free(tokens);
  tokens = NULL;
  n_tokens = cap_tokens = 0;
  pthread_mutex_unlock(&mu);
  EVP_PKEY_free(sa_key);
  sa_key = NULL;
}

/* Caller holds mu. */
static void prune(long long now)
{
  size_t i, w = 0;

  for (i = 0; i < n_tokens; i++)
    if (tokens[i].expires_ms > now)
      tokens[w++] = tokens[i];
  n_tokens = w;
}

/* Issue a new token valid ttl_s seconds into out. Returns 0 or -1. */
static int issue(long long ttl_s, char *out, size_t outlen)
{
  char hex[41];
  long long now = emu_now_ms();
  int rc = -1;

  emu_random_hex(hex, 20);
  snprintf(out, outlen, "ya29.emu-%s", hex);
  pthread_mutex_lock(&mu);
  prune(now);
  if (n_tokens == cap_tokens && cap_tokens < MAX_TOKENS) {
    size_t cap = cap_tokens ? cap_tokens * 2 : 64;
    struct token *t = realloc(tokens, cap * sizeof(*t));
    if (t) {
      tokens = t;
      cap_tokens = cap;
    }
  }
  if (n_tokens < cap_tokens) {
    snprintf(tokens[n_tokens].value, TOKEN_LEN, "%s", out);
    tokens[n_tokens].expires_ms = now + ttl_s * 1000;
    n_tokens++;
    rc = 0;
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

bool emu_token_valid(const char *token)
{
  long long now = emu_now_ms();
  bool ok = false;
  size_t i;

  pthread_mutex_lock(&mu);
  for (i = 0; i < n_tokens && !ok; i++)
    ok = tokens[i].expires_ms > now && !strcmp(tokens[i].value, token);
  pthread_mutex_unlock(&mu);
  return ok;
}

size_t emu_token_revoke_all(void)
{
  size_t n;

  pthread_mutex_lock(&mu);
  prune(emu_now_ms());
  n = n_tokens;
  n_tokens = 0;
  pthread_mutex_unlock(&mu);
  return n;
}

size_t emu_token_count(void)
{
  size_t n;

  pthread_mutex_lock(&mu);
  prune(emu_now_ms());
  n = n_tokens;
  pthread_mutex_unlock(&mu);
  return n;
}

static void reply_token(struct emu_req *r)
{
  struct emu_config c;
  char tok[TOKEN_LEN];

  emu_config_get(&c);
  if (issue(c.token_ttl_s, tok, sizeof(tok)) != 0) {
    emu_reply_text(r, 503, "text/plain", "token store full\n");
    return;
  }
  emu_reply_json(r, 200,
                 json_pack("{s:s, s:I, s:s}", "access_token", tok, "expires_in",
                           (json_int_t)c.token_ttl_s, "token_type", "Bearer"));
}

/* Shared checks of the metadata server: its flavor header, no proxies. */
static bool metadata_request_ok(struct emu_req *r)
{
  const char *flavor = emu_req_header(r, "Metadata-Flavor");

  if (emu_req_header(r, "X-Forwarded-For")) {
    emu_reply_text(r, 403, "text/plain",
                   "Requests with X-Forwarded-For are refused.\n");
    return false;
  }
  if (!flavor || strcmp(flavor, "Google") != 0) {
    emu_reply_text(r, 403, "text/plain",
                   "Missing required header: \"Metadata-Flavor: Google\".\n");
    return false;
  }
  return true;
}

void emu_token_metadata(struct emu_req *r)
{
  if (metadata_request_ok(r))
    reply_token(r);
}

void emu_token_project_id(struct emu_req *r)
{
  struct emu_config c;

  if (!metadata_request_ok(r))
    return;
  emu_config_get(&c);
  emu_reply_text(r, 200, "application/text", c.project);
}

static void oauth_error(struct emu_req *r, const char *error,
                        const char *description)
{
  emu_reply_json(r, 400,
                 json_pack("{s:s, s:s}", "error", error, "error_description",
                           description));
}

/* The value of name in a form body, decoded, into out; false if absent. */
static bool form_value(const char *body, const char *name, char *out,
                       size_t outlen)
{
  size_t nlen = strlen(name);
  const char *p = body;

  while (p && *p) {
    const char *amp = strchr(p, '&');
    size_t len = amp ? (size_t)(amp - p) : strlen(p);
    if (len > nlen && !strncmp(p, name, nlen) && p[nlen] == '=') {
      size_t vlen = len - nlen - 1;
      if (vlen >= outlen)
        return false;
      memcpy(out, p + nlen + 1, vlen);
      out[vlen] = '\0';
      return emu_form_decode(out);
    }
    p = amp ? amp + 1 : NULL;
  }
  return false;
}

/* Decode one JWT segment as a JSON object (new) or NULL. */
static json_t *segment_json(const char *seg, size_t len)
{
  size_t n;
  unsigned char *raw = emu_b64url_decode(seg, len, &n);
  json_t *v = raw ? json_loadb((const char *)raw, n, 0, NULL) : NULL;

  free(raw);
  if (v && !json_is_object(v)) {
    json_decref(v);
    return NULL;
  }
  return v;
}

/* Split "h.c.s": lengths of the first two parts; false if not 3 parts. */
static bool jwt_split(const char *jwt, size_t *hlen, size_t *clen)
{
  const char *d1 = strchr(jwt, '.'), *d2;

  if (!d1 || !(d2 = strchr(d1 + 1, '.')) || strchr(d2 + 1, '.'))
    return false;
  *hlen = (size_t)(d1 - jwt);
  *clen = (size_t)(d2 - d1 - 1);
  return true;
}

json_t *emu_token_redacted_form(const char *body)
{
  json_t *o = json_object();
  char *copy = strdup(body), *p, *next;

  if (!o || !copy) {
    free(copy);
    return o;
  }
  for (p = copy; p && *p; p = next) {
    char *eq;
    next = strchr(p, '&');
    if (next)
      *next++ = '\0';
    eq = strchr(p, '=');
    if (eq)
      *eq++ = '\0';
    if (!emu_form_decode(p) || (eq && !emu_form_decode(eq)))
      continue;
    if (!strcmp(p, "assertion") && eq) {
      size_t hlen, clen;
      if (jwt_split(eq, &hlen, &clen)) {
        json_t *h = segment_json(eq, hlen),
               *c = segment_json(eq + hlen + 1, clen);
        json_object_set_new(o, "assertion_header", h ? h : json_null());
        json_object_set_new(o, "assertion_claims", c ? c : json_null());
      }
      json_object_set_new(o, "assertion", json_string("[redacted]"));
    } else {
      json_object_set_new(o, p, eq ? json_string(eq) : json_null());
    }
  }
  free(copy);
  return o;
}

static bool verify_rs256(const char *jwt, size_t signed_len, const char *sig64)
{
  size_t siglen;
  unsigned char *sig = emu_b64url_decode(sig64, strlen(sig64), &siglen);
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  bool ok = false;

  if (sig && ctx &&
      EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, sa_key) == 1)
    ok = EVP_DigestVerify(ctx, sig, siglen, (const unsigned char *)jwt,
                          signed_len) == 1;
  EVP_MD_CTX_free(ctx);
  free(sig);
  return ok;
}

/* Check an assertion; NULL when good, else the error description. */
static const char *check_assertion(struct emu_req *r, const char *jwt)
{
  static const char *const bad_time =
      "Invalid JWT: Token must be a short-lived token (60 minutes) and in a "
      "reasonable timeframe. Check your iat and exp values in the JWT claim.";
  struct emu_config c;
  size_t hlen, clen;
  json_t *h = NULL, *claims = NULL;
  const char *why = NULL, *alg, *iss, *scope, *aud;
  char expected_aud[600];
  long long now = (long long)time(NULL), iat, exp;

  emu_config_get(&c);
  if (!jwt_split(jwt, &hlen, &clen) || !(h = segment_json(jwt, hlen)) ||
      !(claims = segment_json(jwt + hlen + 1, clen))) {
    why = "Invalid JWT: the assertion is not a signed JWT.";
    goto out;
  }
  alg = json_string_value(json_object_get(h, "alg"));
  if (!alg || strcmp(alg, "RS256") != 0) {
    why = "Invalid JWT: the signing algorithm must be RS256.";
    goto out;
  }
  if (sa_key &&
      !verify_rs256(jwt, hlen + 1 + clen, jwt + hlen + 1 + clen + 1)) {
    why = "Invalid JWT Signature.";
    goto out;
  }
  iss = json_string_value(json_object_get(claims, "iss"));
  scope = json_string_value(json_object_get(claims, "scope"));
  aud = json_string_value(json_object_get(claims, "aud"));
  if (!iss || !*iss || (c.sa_email[0] && strcmp(iss, c.sa_email) != 0)) {
    why = "Invalid JWT: the iss claim is missing or names another account.";
    goto out;
  }
  if (!scope || !*scope) {
    why = "Invalid JWT: the scope claim is missing.";
    goto out;
  }
  if (c.token_uri[0])
    snprintf(expected_aud, sizeof(expected_aud), "%s", c.token_uri);
  else
    snprintf(expected_aud, sizeof(expected_aud), "http://%s/token",
             emu_req_header(r, "Host") ? emu_req_header(r, "Host") : "");
  if (!aud || strcmp(aud, expected_aud) != 0) {
    why = "Invalid JWT: the aud claim must be the token URI.";
    goto out;
  }
  if (!json_is_integer(json_object_get(claims, "iat")) ||
      !json_is_integer(json_object_get(claims, "exp"))) {
    why = bad_time;
    goto out;
  }
  iat = json_integer_value(json_object_get(claims, "iat"));
  exp = json_integer_value(json_object_get(claims, "exp"));
  if (exp <= now || exp <= iat || exp > iat + 3600 || iat > now + IAT_SKEW_S)
    why = bad_time;
out:
  json_decref(h);
  json_decref(claims);
  return why;
}

void emu_token_oauth(struct emu_req *r)
{
  const char *ctype = emu_req_header(r, "Content-Type");
  char grant[128], *assertion = NULL;
  const char *why;
  size_t alen = r->body_len + 1;

  if (!ctype ||
      strncasecmp(ctype, "application/x-www-form-urlencoded", 33) != 0) {
    oauth_error(r, "invalid_request",
                "The body must be application/x-www-form-urlencoded.");
    return;
  }
  if (!r->body || !form_value(r->body, "grant_type", grant, sizeof(grant))) {
    oauth_error(r, "invalid_request", "Missing required parameter: grant_type");
    return;
  }
  if (strcmp(grant, JWT_BEARER) != 0) {
    oauth_error(r, "unsupported_grant_type", "Invalid grant_type.");
    return;
  }
  assertion = malloc(alen);
  if (!assertion || !form_value(r->body, "assertion", assertion, alen)) {
    oauth_error(r, "invalid_request", "Missing required parameter: assertion");
    free(assertion);
    return;
  }
  why = check_assertion(r, assertion);
  free(assertion);
  if (why) {
    oauth_error(r, "invalid_grant", why);
    return;
  }
  reply_token(r);
}
