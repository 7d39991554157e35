/*
 * auth_internal.h — what identity/auth.c (the verifier's context, its keys,
 * roles and minting) and identity/auth_verify.c (one token checked) share:
 * the context's layout and the table of accepted algorithms. Not for use
 * outside those two files. Names its module's structs forward rather than
 * include identity/auth.h, so that it makes no include cycle with auth.c.
 */
#ifndef GPUGATE_AUTH_INTERNAL_H
#define GPUGATE_AUTH_INTERNAL_H

#include <jwt.h>

#include "identity/identity_config.h"

#define HS256_MIN_SECRET 32 /* bytes, RFC 7518 §3.2 */
#define HS256_SIG_LEN 32
#define ES256_SIG_LEN 64 /* R || S, 32 bytes each */
#define RSA_MIN_BITS 2048
#define LEEWAY_MAX_S 86400L
#define TIME_CLAIM_MAX 253402300799LL /* 9999-12-31T23:59:59Z */
#define TEAM_MAX 63

struct tokencache;
struct idp;

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

/* One algorithm gpugate accepts, by JOSE name, libjwt id and config bit. */
struct auth_alg {
  const char *name;
  jwt_alg_t jwt;
  unsigned bit;      /* enum config_alg */
  enum key_type key; /* KEY_NONE: the HS256 secret */
};

#define AUTH_N_ALGS 3
extern const struct auth_alg auth_algs[AUTH_N_ALGS]; /* auth.c */

/* Index into auth_algs[] of the JOSE name s (case-sensitive), or -1. */
int auth_find_alg(const char *s);

/* A team name: [a-z0-9-]{1,63}; 1 when s is one, else 0. */
int auth_valid_team(const char *s);

#endif
