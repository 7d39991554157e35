/*
 * auth.c — bearer-token verification and minting on top of libjwt 1.10.
 *
 * libjwt 1.10 has two traps this module exists to avoid: jwt_decode() without
 * a key accepts any token (an "alg":"none" token, or an HS256 token whose
 * signature is simply not checked), and it verifies HS256 with whatever bytes
 * it is handed, so a PEM public key passed as the key turns into a public
 * HMAC secret. So the JOSE header is read here first: alg is checked against
 * the allow-list, the key is chosen by alg family (the HS256 secret, or a
 * public key of the matching type selected by kid), and only then does
 * jwt_decode() run, always with that key, after which jwt_get_alg() must
 * still name the same alg.
 *
 * Header and payload are decoded here strictly (canonical unpadded
 * base64url, no duplicate JSON keys, no trailing bytes) so that this module
 * and libjwt cannot read different values from one token, and every claim is
 * checked here against the caller's clock. Reasons given back to callers are
 * short, lower-case, and never contain any part of the token.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "identity/auth.h"
#include "lib/b64url.h"
#include "identity/bindings.h"
#include "identity/idp.h"
#include "identity/tokencache.h"

#define HS256_MIN_SECRET 32 /* bytes, RFC 7518 §3.2 */
#define HS256_SIG_LEN 32
#define ES256_SIG_LEN 64 /* R || S, 32 bytes each */
#define RSA_MIN_BITS 2048
#define LEEWAY_MAX_S 86400L
#define TIME_CLAIM_MAX 253402300799LL /* 9999-12-31T23:59:59Z */
#define TEAM_MAX 63

enum key_type { KEY_NONE = 0, KEY_RSA, KEY_EC_P256 };

/* One usable public key, classified once at start-up. */
struct auth_key {
  char kid[64];       /* "" when the key has no id */
  enum key_type type; /* what the PEM holds */
  unsigned char *pem; /* owned copy of the PEM text */
  int pem_len;        /* without the terminating NUL */
};

/* Immutable after auth_new(), hence shareable between threads. */
struct auth_ctx {
  unsigned algs;         /* enum config_alg bits */
  unsigned char *secret; /* owned; NULL unless HS256 is allowed */
  int secret_len;
  struct auth_key keys[CONFIG_MAX_KEYS];
  int n_keys;
  char issuer[256];   /* "" = not checked */
  char audience[256]; /* "" = not checked */
  long leeway_s;
  long max_lifetime_s;
  /* verified tokens; internally synchronised, so a may stay const */
  struct tokencache *cache;
  struct idp *idp; /* the organisation's OpenID Provider, or NULL */
};

/* The algorithms gpugate accepts, by JOSE name, libjwt id and config bit. */
static const struct {
  const char *name;
  jwt_alg_t jwt;
  unsigned bit;
  enum key_type key; /* KEY_NONE: the HS256 secret */
} algs[] = {
    {"HS256", JWT_ALG_HS256, CONFIG_ALG_HS256, KEY_NONE},
    {"RS256", JWT_ALG_RS256, CONFIG_ALG_RS256, KEY_RSA},
    {"ES256", JWT_ALG_ES256, CONFIG_ALG_ES256, KEY_EC_P256},
};

#define N_ALGS ((int)(sizeof(algs) / sizeof(algs[0])))
#define ALL_ALG_BITS (CONFIG_ALG_HS256 | CONFIG_ALG_RS256 | CONFIG_ALG_ES256)

/* Index into algs[] of the JOSE name s (case-sensitive), or -1. */
static int find_alg(const char *s)
{
  int i;

  for (i = 0; i < N_ALGS; i++)
    if (strcmp(s, algs[i].name) == 0)
      return i;
  return -1;
}

/* A team name: [a-z0-9-]{1,63}. */
static int valid_team(const char *s)
{
  size_t i, n = strnlen(s, TEAM_MAX + 1);

  if (n == 0 || n > TEAM_MAX)
    return 0;
  for (i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '-'))
      return 0;
  return 1;
}

/*
 * Decode n characters of canonical unpadded base64url (RFC 7515 §2): no
 * padding, no whitespace, unused trailing bits zero, so every byte string
 * has exactly one accepted encoding. Returns a new buffer (caller frees)
 * with one spare NUL byte, or NULL.
 */
static unsigned char *b64url_decode_new(const char *s, size_t n, size_t *outlen)
{
  size_t cap = n / 4 * 3 + 3;
  unsigned char *buf;

  if (n == 0 || !(buf = malloc(cap + 1)))
    return NULL;
  if (b64url_decode(s, n, buf, cap, outlen)) {
    free(buf);
    return NULL;
  }
  buf[*outlen] = '\0';
  return buf;
}

/*
 * Parse a PEM public key and say whether it is usable here: RSA of at least
 * RSA_MIN_BITS, or EC on P-256. Returns 0 and sets *type, -1 when the PEM
 * does not parse, -2 when it is another kind of key.
 */
static int classify_pem(const unsigned char *pem, int len, enum key_type *type)
{
  BIO *bio = NULL;
  EVP_PKEY *pkey = NULL;
  char group[64];
  int rc = -1;

  bio = BIO_new_mem_buf(pem, len);
  if (!bio)
    goto out;
  pkey = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
  if (!pkey)
    goto out;
  rc = -2;
  switch (EVP_PKEY_get_base_id(pkey)) {
  case EVP_PKEY_RSA:
    if (EVP_PKEY_get_bits(pkey) < RSA_MIN_BITS)
      goto out;
    *type = KEY_RSA;
    break;
  case EVP_PKEY_EC:
    if (EVP_PKEY_get_group_name(pkey, group, sizeof(group), NULL) != 1 ||
        strcmp(group, "prime256v1") != 0)
      goto out;
    *type = KEY_EC_P256;
    break;
  default:
    goto out;
  }
  rc = 0;
out:
  EVP_PKEY_free(pkey);
  BIO_free(bio);
  ERR_clear_error();
  return rc;
}

/* Copy one configured public key into k; -1 with err filled on failure. */
static int load_key(struct auth_key *k, const struct config_pubkey *src,
                    int idx, char *err, size_t errlen)
{
  char label[80];
  size_t kid_len = strnlen(src->kid, sizeof(src->kid));
  int rc;

  if (kid_len == sizeof(src->kid)) {
    snprintf(err, errlen, "GPUGATE_JWT_PUBLIC_KEYS: key id of key %d too long",
             idx + 1);
    return -1;
  }
  if (kid_len)
    snprintf(label, sizeof(label), "\"%s\"", src->kid);
  else
    snprintf(label, sizeof(label), "%d (no key id)", idx + 1);
  if (!src->pem || src->pem_len == 0 || src->pem_len > INT_MAX) {
    snprintf(err, errlen, "GPUGATE_JWT_PUBLIC_KEYS: key %s is empty", label);
    return -1;
  }
  memcpy(k->kid, src->kid, kid_len + 1);
  k->pem = malloc(src->pem_len + 1);
  if (!k->pem) {
    snprintf(err, errlen, "GPUGATE_JWT_PUBLIC_KEYS: out of memory");
    return -1;
  }
  memcpy(k->pem, src->pem, src->pem_len);
  k->pem[src->pem_len] = '\0';
  k->pem_len = (int)src->pem_len;
  rc = classify_pem(k->pem, k->pem_len, &k->type);
  if (rc == -1) {
    snprintf(err, errlen,
             "GPUGATE_JWT_PUBLIC_KEYS: key %s is not a PEM public key", label);
    return -1;
  }
  if (rc == -2) {
    snprintf(err, errlen,
             "GPUGATE_JWT_PUBLIC_KEYS: key %s is neither RSA (at least %d "
             "bits) nor EC P-256",
             label, RSA_MIN_BITS);
    return -1;
  }
  return 0;
}

/* Copy a NUL-terminated string of at most size-1 bytes; -1 when longer. */
static int copy_bounded(char *dst, size_t size, const char *src)
{
  size_t n = strnlen(src, size);

  if (n == size)
    return -1;
  memcpy(dst, src, n + 1);
  return 0;
}

/*
 * Build the verifier: copies the allowed algorithms, the HS256 secret, every
 * public key (each classified by type now, so a verify never parses a PEM to
 * decide), issuer, audience, leeway and maximum lifetime. Returns a new
 * context (free with auth_free) or NULL with a one-line reason naming the
 * responsible GPUGATE_* variable in err.
 */
struct auth_ctx *auth_new(const struct config *cfg, char *err, size_t errlen)
{
  struct auth_ctx *a = NULL, *ret = NULL;
  int i, j, n_rsa = 0, n_ec = 0;

  if (!cfg) {
    snprintf(err, errlen, "auth: no configuration");
    goto out;
  }
  a = calloc(1, sizeof(*a));
  if (!a) {
    snprintf(err, errlen, "auth: out of memory");
    goto out;
  }
  if (!cfg->jwt_algorithms || (cfg->jwt_algorithms & ~(unsigned)ALL_ALG_BITS)) {
    snprintf(err, errlen,
             "GPUGATE_JWT_ALGORITHMS: expected a non-empty subset of HS256, "
             "RS256, ES256");
    goto out;
  }
  a->algs = cfg->jwt_algorithms;

  if (a->algs & CONFIG_ALG_HS256) {
    if (!cfg->hs256_secret || cfg->hs256_secret_len < HS256_MIN_SECRET ||
        cfg->hs256_secret_len > INT_MAX) {
      snprintf(err, errlen,
               "GPUGATE_JWT_HS256_SECRET_FILE: HS256 is allowed but the "
               "secret is missing or shorter than %d bytes",
               HS256_MIN_SECRET);
      goto out;
    }
    a->secret = malloc(cfg->hs256_secret_len);
    if (!a->secret) {
      snprintf(err, errlen, "auth: out of memory");
      goto out;
    }
    memcpy(a->secret, cfg->hs256_secret, cfg->hs256_secret_len);
    a->secret_len = (int)cfg->hs256_secret_len;
  }

  if (cfg->n_pubkeys < 0 || cfg->n_pubkeys > CONFIG_MAX_KEYS) {
    snprintf(err, errlen, "GPUGATE_JWT_PUBLIC_KEYS: at most %d keys",
             CONFIG_MAX_KEYS);
    goto out;
  }
  for (i = 0; i < cfg->n_pubkeys; i++) {
    a->n_keys = i + 1; /* so that auth_free() frees a half-loaded key */
    if (load_key(&a->keys[i], &cfg->pubkeys[i], i, err, errlen))
      goto out;
    for (j = 0; j < i; j++)
      if (a->keys[i].kid[0] && strcmp(a->keys[i].kid, a->keys[j].kid) == 0) {
        snprintf(err, errlen,
                 "GPUGATE_JWT_PUBLIC_KEYS: key id \"%s\" used twice",
                 a->keys[i].kid);
        goto out;
      }
    if (a->keys[i].type == KEY_RSA)
      n_rsa++;
    else
      n_ec++;
  }
  if ((a->algs & CONFIG_ALG_RS256) && n_rsa == 0) {
    snprintf(err, errlen,
             "GPUGATE_JWT_PUBLIC_KEYS: RS256 is allowed but no RSA public key "
             "is configured");
    goto out;
  }
  if ((a->algs & CONFIG_ALG_ES256) && n_ec == 0) {
    snprintf(err, errlen,
             "GPUGATE_JWT_PUBLIC_KEYS: ES256 is allowed but no EC P-256 "
             "public key is configured");
    goto out;
  }

  if (copy_bounded(a->issuer, sizeof(a->issuer), cfg->jwt_issuer)) {
    snprintf(err, errlen, "GPUGATE_JWT_ISSUER: too long");
    goto out;
  }
  if (copy_bounded(a->audience, sizeof(a->audience), cfg->jwt_audience)) {
    snprintf(err, errlen, "GPUGATE_JWT_AUDIENCE: too long");
    goto out;
  }
  if (cfg->jwt_leeway_s < 0 || cfg->jwt_leeway_s > LEEWAY_MAX_S) {
    snprintf(err, errlen, "GPUGATE_JWT_LEEWAY_S: expected [0, %ld] seconds",
             LEEWAY_MAX_S);
    goto out;
  }
  a->leeway_s = cfg->jwt_leeway_s;
  if (cfg->jwt_max_lifetime_s <= 0) {
    snprintf(err, errlen, "GPUGATE_JWT_MAX_LIFETIME_S: must be positive");
    goto out;
  }
  a->max_lifetime_s = cfg->jwt_max_lifetime_s;
  a->cache = tokencache_new(AUTH_TOKEN_CACHE);
  if (!a->cache) {
    snprintf(err, errlen, "auth: out of memory");
    goto out;
  }
  if (cfg->oidc.n_issuers > 0 &&
      !(a->idp = idp_new(&cfg->oidc, cfg->jwt_leeway_s))) {
    snprintf(err, errlen, "auth: out of memory");
    goto out;
  }
  bindings_set_first_issuer(cfg->oidc.n_issuers ? cfg->oidc.issuers[0] : NULL);

  ret = a;
  a = NULL;
out:
  auth_free(a);
  return ret;
}

/* Free a context from auth_new(); accepts NULL. */
void auth_free(struct auth_ctx *a)
{
  int i;

  if (!a)
    return;
  for (i = 0; i < a->n_keys; i++)
    free(a->keys[i].pem);
  tokencache_free(a->cache);
  idp_free(a->idp);
  if (a->secret)
    OPENSSL_cleanse(a->secret, (size_t)a->secret_len);
  free(a->secret);
  free(a);
}

/*
 * Check the JOSE header (borrowed). Sets *alg_i to the index into algs[] and
 * *kid to the header's kid (borrowed from header; NULL when absent).
 */
static int check_header(const struct auth_ctx *a, const json_t *header,
                        int *alg_i, const char **kid, const char **reason)
{
  const json_t *v; /* borrowed */

  v = json_object_get(header, "alg");
  if (!json_is_string(v)) {
    *reason = "missing token algorithm";
    return -1;
  }
  *alg_i = find_alg(json_string_value(v));
  if (*alg_i < 0 || !(a->algs & algs[*alg_i].bit)) {
    *reason = "algorithm not allowed";
    return -1;
  }
  v = json_object_get(header, "typ");
  if (v &&
      (!json_is_string(v) || strcasecmp(json_string_value(v), "JWT") != 0)) {
    *reason = "unsupported token type";
    return -1;
  }
  if (json_object_get(header, "crit")) {
    *reason = "unsupported critical header";
    return -1;
  }
  *kid = NULL;
  v = json_object_get(header, "kid");
  if (v) {
    if (!json_is_string(v) || !json_string_value(v)[0]) {
      *reason = "invalid key id";
      return -1;
    }
    *kid = json_string_value(v);
  }
  return 0;
}

/* 0 when libjwt verifies token with key and reports the expected alg. */
static int decode_with(const char *token, const unsigned char *key, int key_len,
                       jwt_alg_t want)
{
  jwt_t *jwt = NULL; /* new */
  int rc = -1;

  if (jwt_decode(&jwt, token, key, key_len) != 0 || !jwt)
    goto out;
  if (jwt_get_alg(jwt) != want)
    goto out;
  rc = 0;
out:
  if (jwt)
    jwt_free(jwt);
  ERR_clear_error();
  return rc;
}

/*
 * Verify the signature with the key the header selects. HS256 uses only the
 * configured secret (a kid is ignored: there is one secret). RS256/ES256 use
 * the public key named by kid, which must be of the alg's type; without a
 * kid, every key without an id of the right type is tried, or else the only
 * key of that type.
 */
static int verify_signature(const struct auth_ctx *a, const char *token,
                            int alg_i, const char *kid, const char **reason)
{
  enum key_type want = algs[alg_i].key;
  int i, n_typed = 0, last_typed = -1, tried = 0;

  *reason = "invalid signature";
  if (want == KEY_NONE)
    return decode_with(token, a->secret, a->secret_len, algs[alg_i].jwt);

  if (kid) {
    for (i = 0; i < a->n_keys; i++)
      if (strcmp(a->keys[i].kid, kid) == 0)
        break;
    if (i == a->n_keys) {
      *reason = "unknown key id";
      return -1;
    }
    if (a->keys[i].type != want) {
      *reason = "key id does not match algorithm";
      return -1;
    }
    return decode_with(token, a->keys[i].pem, a->keys[i].pem_len,
                       algs[alg_i].jwt);
  }

  for (i = 0; i < a->n_keys; i++) {
    if (a->keys[i].type != want)
      continue;
    n_typed++;
    last_typed = i;
    if (a->keys[i].kid[0])
      continue;
    tried++;
    if (decode_with(token, a->keys[i].pem, a->keys[i].pem_len,
                    algs[alg_i].jwt) == 0)
      return 0;
  }
  if (tried)
    return -1;
  if (n_typed == 1)
    return decode_with(token, a->keys[last_typed].pem,
                       a->keys[last_typed].pem_len, algs[alg_i].jwt);
  *reason = "key id required";
  return -1;
}

/*
 * Read an integer NumericDate claim from payload (borrowed). Returns 1 when
 * present and within [0, TIME_CLAIM_MAX], 0 when absent, -1 otherwise.
 */
static int time_claim(const json_t *payload, const char *name, long long *v)
{
  const json_t *j = json_object_get(payload, name); /* borrowed */

  if (!j)
    return 0;
  if (!json_is_integer(j))
    return -1;
  *v = (long long)json_integer_value(j);
  return *v >= 0 && *v <= TIME_CLAIM_MAX ? 1 : -1;
}

/* aud (borrowed, may be NULL) is want, or an array containing want. */
static int audience_matches(const json_t *aud, const char *want)
{
  size_t i;
  const json_t *v; /* borrowed */

  if (json_is_string(aud))
    return strcmp(json_string_value(aud), want) == 0;
  if (!json_is_array(aud))
    return 0;
  json_array_foreach (aud, i, v) {
    if (json_is_string(v) && strcmp(json_string_value(v), want) == 0)
      return 1;
  }
  return 0;
}

/* Check the claims in payload (borrowed) at now and fill *p. */
static int check_claims(const struct auth_ctx *a, const json_t *payload,
                        time_t now, struct auth_principal *p,
                        const char **reason)
{
  const json_t *v; /* borrowed */
  long long exp = 0, iat = 0, nbf = 0, t = (long long)now;
  int has_nbf;
  const char *s;
  size_t n;

  if (time_claim(payload, "exp", &exp) != 1) {
    *reason = "missing or invalid exp claim";
    return -1;
  }
  if (time_claim(payload, "iat", &iat) != 1) {
    *reason = "missing or invalid iat claim";
    return -1;
  }
  has_nbf = time_claim(payload, "nbf", &nbf);
  if (has_nbf < 0) {
    *reason = "invalid nbf claim";
    return -1;
  }
  if (t - a->leeway_s > exp) {
    *reason = "token expired";
    return -1;
  }
  if (has_nbf && t + a->leeway_s < nbf) {
    *reason = "token not yet valid";
    return -1;
  }
  if (iat > t + a->leeway_s) {
    *reason = "token issued in the future";
    return -1;
  }
  if (exp < iat) {
    *reason = "token expires before it was issued";
    return -1;
  }
  if (exp - iat > a->max_lifetime_s) {
    *reason = "token lifetime too long";
    return -1;
  }
  if (a->issuer[0]) {
    v = json_object_get(payload, "iss");
    if (!json_is_string(v) || strcmp(json_string_value(v), a->issuer) != 0) {
      *reason = "invalid issuer";
      return -1;
    }
  }
  if (a->audience[0] &&
      !audience_matches(json_object_get(payload, "aud"), a->audience)) {
    *reason = "invalid audience";
    return -1;
  }

  memset(p, 0, sizeof(*p));
  p->exp = exp;
  v = json_object_get(payload, "iss");
  if (json_is_string(v) && strlen(json_string_value(v)) < sizeof(p->issuer))
    memcpy(p->issuer, json_string_value(v), strlen(json_string_value(v)) + 1);
  v = json_object_get(payload, "role");
  p->role = json_is_string(v) ? auth_role_parse(json_string_value(v))
                              : AUTH_ROLE_NONE;
  if (p->role == AUTH_ROLE_NONE) {
    *reason = "missing or invalid role claim";
    return -1;
  }

  /* a member belongs to one team; an administrator, a finance analyst or
   * a metrics scraper need not belong to any, but a team they do carry
   * must still be a valid name */
  v = json_object_get(payload, "team");
  if (v || p->role == AUTH_ROLE_MEMBER) {
    if (!json_is_string(v) || !valid_team(json_string_value(v))) {
      *reason = "missing or invalid team claim";
      return -1;
    }
    s = json_string_value(v);
    memcpy(p->team, s, strlen(s) + 1);
  }

  v = json_object_get(payload, "sub");
  if (v) {
    if (!json_is_string(v)) {
      *reason = "invalid sub claim";
      return -1;
    }
    s = json_string_value(v);
    n = strnlen(s, sizeof(p->subject));
    if (n == sizeof(p->subject)) {
      *reason = "sub claim too long";
      return -1;
    }
    memcpy(p->subject, s, n + 1);
  }
  /* gpugate's own token grants exactly what it says */
  p->grants[0].role = p->role;
  memcpy(p->grants[0].team, p->team, sizeof(p->team));
  p->n_grants = 1;
  return 0;
}

/*
 * Find the two dots of a compact JWS in token[0..len): only base64url
 * characters and exactly two dots, every part non-empty.
 */
static int split_token(const char *token, size_t len, size_t *dot1,
                       size_t *dot2)
{
  size_t i, dots = 0;

  for (i = 0; i < len; i++) {
    if (token[i] == '.') {
      if (dots == 2)
        return -1;
      if (dots == 0)
        *dot1 = i;
      else
        *dot2 = i;
      dots++;
    } else if (b64url_value(token[i]) < 0) {
      return -1;
    }
  }
  if (dots != 2 || *dot1 == 0 || *dot2 == *dot1 + 1 || *dot2 + 1 == len)
    return -1;
  return 0;
}

/*
 * Verify token at now (see auth.h). Order: shape and encoding, header and
 * alg allow-list, signature with the selected key, then claims, so nothing
 * about the claims of an unverified token is revealed. Thread-safe; a is
 * only read.
 */
int auth_verify(const struct auth_ctx *a, const char *token, time_t now,
                struct auth_principal *out, char *why, size_t whylen)
{
  const char *reason = "invalid token";
  const char *kid = NULL;
  unsigned char *hbuf = NULL, *pbuf = NULL, *sbuf = NULL;
  json_t *header = NULL, *payload = NULL; /* new */
  struct auth_principal p;
  size_t len, dot1 = 0, dot2 = 0, hlen = 0, plen = 0, slen = 0;
  unsigned char ckey[TOKENCACHE_KEY_LEN];
  long long exp = 0;
  int alg_i = -1, rc = -1, keyed;

  if (!a || !token || !out)
    goto out;
  len = strnlen(token, AUTH_MAX_TOKEN + 1);
  if (len == 0) {
    reason = "empty token";
    goto out;
  }
  if (len > AUTH_MAX_TOKEN) {
    reason = "token too long";
    goto out;
  }
  /* a token that passed every check before passes them now, up to exp */
  keyed = a->cache && !tokencache_key(a->cache, token, len, ckey);
  /* a provider token's grants stand only while the bindings they were
   * drawn from do; after a change it is verified (and bound) again */
  if (keyed && tokencache_get(a->cache, ckey, now, out) &&
      (!out->provider || out->bindings_gen == bindings_generation()))
    return 0;
  reason = "malformed token";
  if (split_token(token, len, &dot1, &dot2))
    goto out;
  hbuf = b64url_decode_new(token, dot1, &hlen);
  pbuf = b64url_decode_new(token + dot1 + 1, dot2 - dot1 - 1, &plen);
  sbuf = b64url_decode_new(token + dot2 + 1, len - dot2 - 1, &slen);
  if (!hbuf || !pbuf || !sbuf)
    goto out;
  header = json_loadb((const char *)hbuf, hlen, JSON_REJECT_DUPLICATES, NULL);
  if (!json_is_object(header)) {
    reason = "malformed token header";
    goto out;
  }
  payload = json_loadb((const char *)pbuf, plen, JSON_REJECT_DUPLICATES, NULL);
  if (!json_is_object(payload)) {
    reason = "malformed token payload";
    goto out;
  }
  if (a->idp &&
      idp_trusts(a->idp, json_string_value(json_object_get(payload, "iss")))) {
    /* the organisation's provider: its own verifier, no libjwt */
    if (idp_verify(a->idp, token, now, &p, &reason) != 0)
      goto out;
    exp = p.exp;
    goto verified;
  }
  if (check_header(a, header, &alg_i, &kid, &reason))
    goto out;
  if ((algs[alg_i].jwt == JWT_ALG_HS256 && slen != HS256_SIG_LEN) ||
      (algs[alg_i].jwt == JWT_ALG_ES256 && slen != ES256_SIG_LEN)) {
    reason = "invalid signature";
    goto out;
  }
  if (verify_signature(a, token, alg_i, kid, &reason))
    goto out;
  if (check_claims(a, payload, now, &p, &reason))
    goto out;
  if (time_claim(payload, "exp", &exp) != 1)
    goto out;
verified:
  *out = p;
  rc = 0;
  if (keyed)
    tokencache_put(a->cache, ckey, now, exp, &p);
out:
  if (rc && why && whylen)
    snprintf(why, whylen, "%s", reason);
  json_decref(header);
  json_decref(payload);
  free(hbuf);
  free(pbuf);
  free(sbuf);
  return rc;
}

/* "member" | "admin" | "finance" | "metrics" → role; AUTH_ROLE_NONE
 * otherwise or NULL. */
enum auth_role auth_role_parse(const char *s)
{
  if (!s)
    return AUTH_ROLE_NONE;
  if (strcmp(s, "member") == 0)
    return AUTH_ROLE_MEMBER;
  if (strcmp(s, "admin") == 0)
    return AUTH_ROLE_ADMIN;
  if (strcmp(s, "finance") == 0)
    return AUTH_ROLE_FINANCE;
  if (strcmp(s, "metrics") == 0)
    return AUTH_ROLE_METRICS;
  return AUTH_ROLE_NONE;
}

/* Claim value of a single role; "none" for AUTH_ROLE_NONE or a bit set. */
const char *auth_role_name(enum auth_role r)
{
  switch (r) {
  case AUTH_ROLE_MEMBER:
    return "member";
  case AUTH_ROLE_ADMIN:
    return "admin";
  case AUTH_ROLE_FINANCE:
    return "finance";
  case AUTH_ROLE_METRICS:
    return "metrics";
  case AUTH_ROLE_NONE:
  default:
    return "none";
  }
}

/*
 * Mint a token (see auth.h): claims iss and aud (when configured), sub
 * "<team>:<role>" (or "<role>" without a team), team (when given), role,
 * iat = now, exp = now + ttl_s; header kid when
 * kid is non-NULL and non-empty. The allow-list is not consulted, so tests
 * can mint tokens a verifier must refuse. Returns a new malloc'd string
 * (caller frees) or NULL with a one-line reason in err. Thread-safe.
 */
char *auth_mint(const struct config *cfg, const char *alg,
                const unsigned char *key, size_t keylen, const char *kid,
                const char *team, const char *role, long ttl_s, time_t now,
                char *err, size_t errlen)
{
  jwt_t *jwt = NULL; /* new */
  char *ret = NULL;
  char sub[128];
  long iat = (long)now;
  int i;

  if (!cfg || !alg || !key || !role) {
    snprintf(err, errlen, "auth_mint: missing argument");
    goto out;
  }
  i = find_alg(alg);
  if (i < 0) {
    snprintf(err, errlen, "unsupported algorithm \"%.16s\"", alg);
    goto out;
  }
  if (keylen == 0 || keylen > INT_MAX ||
      (algs[i].jwt == JWT_ALG_HS256 && keylen < HS256_MIN_SECRET)) {
    snprintf(err, errlen, "%s key missing or too short", algs[i].name);
    goto out;
  }
  if (auth_role_parse(role) == AUTH_ROLE_NONE) {
    snprintf(err, errlen,
             "invalid role \"%.16s\": expected member, admin, finance or "
             "metrics",
             role);
    goto out;
  }
  if (!team && auth_role_parse(role) == AUTH_ROLE_MEMBER) {
    snprintf(err, errlen, "a member token needs a team");
    goto out;
  }
  if (team && !valid_team(team)) {
    snprintf(err, errlen, "invalid team \"%.63s\": expected [a-z0-9-]{1,63}",
             team);
    goto out;
  }
  if (ttl_s <= 0 || ttl_s > cfg->jwt_max_lifetime_s || iat < 0 ||
      iat > LONG_MAX - ttl_s) {
    snprintf(err, errlen, "ttl must be in [1, %ld] seconds",
             cfg->jwt_max_lifetime_s);
    goto out;
  }
  if (team)
    snprintf(sub, sizeof(sub), "%s:%s", team, role);
  else
    snprintf(sub, sizeof(sub), "%s", role);

  if (jwt_new(&jwt) != 0) {
    snprintf(err, errlen, "auth_mint: out of memory");
    goto out;
  }
  if ((cfg->jwt_issuer[0] && jwt_add_grant(jwt, "iss", cfg->jwt_issuer)) ||
      (cfg->jwt_audience[0] && jwt_add_grant(jwt, "aud", cfg->jwt_audience)) ||
      jwt_add_grant(jwt, "sub", sub) ||
      (team && jwt_add_grant(jwt, "team", team)) ||
      jwt_add_grant(jwt, "role", role) || jwt_add_grant_int(jwt, "iat", iat) ||
      jwt_add_grant_int(jwt, "exp", iat + ttl_s) ||
      (kid && kid[0] && jwt_add_header(jwt, "kid", kid))) {
    snprintf(err, errlen, "auth_mint: cannot build the token");
    goto out;
  }
  if (jwt_set_alg(jwt, algs[i].jwt, key, (int)keylen) != 0) {
    snprintf(err, errlen, "auth_mint: cannot use the %s key", algs[i].name);
    goto out;
  }
  ret = jwt_encode_str(jwt);
  if (!ret)
    snprintf(err, errlen, "auth_mint: signing failed (is the key a %s key?)",
             algs[i].name);
out:
  if (jwt)
    jwt_free(jwt);
  ERR_clear_error();
  return ret;
}
