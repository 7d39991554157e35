/*
 * identity_config.h — what the bearer-token verifier is built from (struct
 * identity_config): the JWT algorithms, HS256 secret, public keys, issuer,
 * audience, leeway and maximum lifetime of gpugate's own tokens, and the
 * organisation's OpenID Provider. Filled by server/config.c from GPUGATE_*
 * variables (a member of struct config) and handed to auth_new/auth_mint by
 * their callers, so identity/ reads no process configuration of its own.
 */
#ifndef GPUGATE_IDENTITY_CONFIG_H
#define GPUGATE_IDENTITY_CONFIG_H

#include <stddef.h>

#include "identity/config_oidc.h"

#define CONFIG_MAX_KEYS 8

/* JWT algorithms accepted, as a bit set. */
enum config_alg {
  CONFIG_ALG_HS256 = 1 << 0,
  CONFIG_ALG_RS256 = 1 << 1,
  CONFIG_ALG_ES256 = 1 << 2
};

/* One configured public key: an optional key id and a PEM file's bytes. */
struct config_pubkey {
  char kid[64]; /* "" when the key has no id */
  char *pem;    /* owned, NUL-terminated */
  size_t pem_len;
};

struct identity_config {
  unsigned jwt_algorithms;     /* enum config_alg bits */
  unsigned char *hs256_secret; /* owned; NULL when not configured */
  size_t hs256_secret_len;
  struct config_pubkey pubkeys[CONFIG_MAX_KEYS];
  int n_pubkeys;
  char jwt_issuer[256];   /* "" = not checked */
  char jwt_audience[256]; /* "" = not checked */
  long jwt_leeway_s;
  long jwt_max_lifetime_s;
  struct config_oidc oidc; /* the organisation's OpenID Provider */
};

#endif
