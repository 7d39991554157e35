/*
 * auth.c — the bearer-token verifier's context (auth_new: algorithms,
 * secret and public keys checked and copied once), roles, and minting
 * (auth_mint), on top of libjwt 1.10; one token is checked in auth_verify.c.
 *
 * libjwt 1.10 decodes without a key and verifies HS256 with whatever bytes
 * it is handed (a PEM public key passed as the key turns into a public HMAC
 * secret), so the context keeps the HS256 secret apart from the public keys
 * and classifies each public key by type once, here; auth_verify.c then
 * chooses the key by the token's alg family. Minting refuses an HS256
 * secret shorter than RFC 7518's 32 bytes.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "identity/auth.h"
#include "identity/auth_internal.h"
#include "identity/bindings.h"
#include "identity/idp.h"
#include "identity/tokencache.h"

/* The algorithms gpugate accepts, by JOSE name, libjwt id and config bit. */
const struct auth_alg auth_algs[AUTH_N_ALGS] = {
    {"HS256", JWT_ALG_HS256, CONFIG_ALG_HS256, KEY_NONE},
    {"RS256", JWT_ALG_RS256, CONFIG_ALG_RS256, KEY_RSA},
    {"ES256", JWT_ALG_ES256, CONFIG_ALG_ES256, KEY_EC_P256},
};

#define ALL_ALG_BITS (CONFIG_ALG_HS256 | CONFIG_ALG_RS256 | CONFIG_ALG_ES256)

/* Index into auth_algs[] of the JOSE name s (case-sensitive), or -1. */
int auth_find_alg(const char *s)
{
  int i;

  for (i = 0; i < AUTH_N_ALGS; i++)
    if (strcmp(s, auth_algs[i].name) == 0)
      return i;
  return -1;
}

/* A team name: [a-z0-9-]{1,63}. */
int auth_valid_team(const char *s)
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
struct auth_ctx *auth_new(const struct identity_config *cfg, char *err,
                          size_t errlen)
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
 * Mint a token (see auth.h): claims iss and aud (when configured), sub
 * "<team>:<role>" (or "<role>" without a team), team (when given), role,
 * iat = now, exp = now + ttl_s; header kid when
 * kid is non-NULL and non-empty. The allow-list is not consulted, so tests
 * can mint tokens a verifier must refuse. Returns a new malloc'd string
 * (caller frees) or NULL with a one-line reason in err. Thread-safe.
 */
char *auth_mint(const struct identity_config *cfg, const char *alg,
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
  i = auth_find_alg(alg);
  if (i < 0) {
    snprintf(err, errlen, "unsupported algorithm \"%.16s\"", alg);
    goto out;
  }
  if (keylen == 0 || keylen > INT_MAX ||
      (auth_algs[i].jwt == JWT_ALG_HS256 && keylen < HS256_MIN_SECRET)) {
    snprintf(err, errlen, "%s key missing or too short", auth_algs[i].name);
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
  if (team && !auth_valid_team(team)) {
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
  if (jwt_set_alg(jwt, auth_algs[i].jwt, key, (int)keylen) != 0) {
    snprintf(err, errlen, "auth_mint: cannot use the %s key",
             auth_algs[i].name);
    goto out;
  }
  ret = jwt_encode_str(jwt);
  if (!ret)
    snprintf(err, errlen, "auth_mint: signing failed (is the key a %s key?)",
             auth_algs[i].name);
out:
  if (jwt)
    jwt_free(jwt);
  ERR_clear_error();
  return ret;
}
