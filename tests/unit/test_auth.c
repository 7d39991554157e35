/*
 * test_auth.c — the token checks in identity/auth.c as tables of cases with a
 * fixed clock: every case builds one token (auth_mint, raw libjwt, or JSON
 * assembled and HMAC-signed here), optionally mangles it, and states whether
 * auth_verify must accept it (and as whom) or the exact reason it refuses.
 *
 * Keys are the files in tests/fixtures/keys/, opened relative to the current
 * directory: run the tests from the repository root.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include "identity/auth.h"

Suite *auth_suite(void);

#define NOW ((time_t)1700000000) /* the fixed clock of every case */
#define KEY_DIR "tests/fixtures/keys/"

/*
 * Claims valid at NOW under the default configuration: iat NOW-1000,
 * exp NOW+2600 (lifetime 3600), iss and aud "gpugate".
 */
#define GOOD_TIMES "\"iat\":1699999000,\"exp\":1700002600"
#define GOOD_ISSAUD "\"iss\":\"gpugate\",\"aud\":\"gpugate\""
#define GOOD GOOD_ISSAUD "," GOOD_TIMES
#define HS_HEADER "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"

/* Fixture files, loaded once per test case (unchecked fixture). */
enum key_file {
  KF_HS,
  KF_RSA1,
  KF_RSA1_PUB,
  KF_RSA2,
  KF_RSA2_PUB,
  KF_EC1,
  KF_EC1_PUB,
  KF_N
};

static const char *const key_names[KF_N] = {
    "hs256.secret", "rsa1.pem", "rsa1.pub.pem", "rsa2.pem",
    "rsa2.pub.pem", "ec1.pem",  "ec1.pub.pem"};

static char *key_buf[KF_N]; /* owned by the fixture */
static size_t key_len[KF_N];

/* Read a whole small file into a new NUL-terminated buffer; NULL on error. */
static char *slurp(const char *path, size_t *len)
{
  FILE *f = NULL;
  char *buf = NULL, *ret = NULL;
  size_t n;

  f = fopen(path, "rb");
  if (!f)
    goto out;
  buf = malloc(16384);
  if (!buf)
    goto out;
  n = fread(buf, 1, 16383, f);
  if (ferror(f) || !feof(f))
    goto out;
  buf[n] = '\0';
  *len = n;
  ret = buf;
  buf = NULL;
out:
  free(buf);
  if (f)
    fclose(f);
  return ret;
}

static void keys_setup(void)
{
  char path[256];
  int i;

  for (i = 0; i < KF_N; i++) {
    snprintf(path, sizeof(path), KEY_DIR "%s", key_names[i]);
    key_buf[i] = slurp(path, &key_len[i]);
    ck_assert_msg(key_buf[i] != NULL,
                  "cannot read %s (run the tests from the repository root)",
                  path);
  }
}

static void keys_teardown(void)
{
  int i;

  for (i = 0; i < KF_N; i++) {
    free(key_buf[i]);
    key_buf[i] = NULL;
  }
}

/* Configurations the cases run against. */
enum cfg_kind {
  CFG_ALL,      /* HS256+RS256+ES256; kids rsa1, rsa2, ec1 */
  CFG_HS,       /* HS256 only */
  CFG_RS_NOKID, /* RS256 only; rsa1 without a kid */
  CFG_NO_ISSAUD /* CFG_ALL with iss and aud not checked */
};

static void add_key(struct identity_config *cfg, const char *kid,
                    enum key_file kf)
{
  struct config_pubkey *k = &cfg->pubkeys[cfg->n_pubkeys++];

  snprintf(k->kid, sizeof(k->kid), "%s", kid);
  k->pem = key_buf[kf]; /* borrowed from the fixture */
  k->pem_len = key_len[kf];
}

/*
 * Fill cfg (zeroed first). Its pointers borrow the fixture buffers.
 */
static void cfg_init(struct identity_config *cfg, enum cfg_kind kind)
{
  memset(cfg, 0, sizeof(*cfg));
  snprintf(cfg->jwt_issuer, sizeof(cfg->jwt_issuer), "gpugate");
  snprintf(cfg->jwt_audience, sizeof(cfg->jwt_audience), "gpugate");
  cfg->jwt_leeway_s = 60;
  cfg->jwt_max_lifetime_s = 86400;
  cfg->hs256_secret = (unsigned char *)key_buf[KF_HS];
  cfg->hs256_secret_len = key_len[KF_HS];
  switch (kind) {
  case CFG_HS:
    cfg->jwt_algorithms = CONFIG_ALG_HS256;
    break;
  case CFG_RS_NOKID:
    cfg->jwt_algorithms = CONFIG_ALG_RS256;
    add_key(cfg, "", KF_RSA1_PUB);
    break;
  case CFG_NO_ISSAUD:
    cfg->jwt_issuer[0] = '\0';
    cfg->jwt_audience[0] = '\0';
    /* fall through */
  case CFG_ALL:
    cfg->jwt_algorithms =
        CONFIG_ALG_HS256 | CONFIG_ALG_RS256 | CONFIG_ALG_ES256;
    add_key(cfg, "rsa1", KF_RSA1_PUB);
    add_key(cfg, "rsa2", KF_RSA2_PUB);
    add_key(cfg, "ec1", KF_EC1_PUB);
    break;
  }
}

/* base64url without padding of n bytes; a new string (caller frees). */
static char *b64url(const void *data, size_t n)
{
  char *out = malloc(n / 3 * 4 + 8);
  int len, i;

  ck_assert_ptr_nonnull(out);
  len = EVP_EncodeBlock((unsigned char *)out, data, (int)n);
  for (i = 0; i < len; i++) {
    if (out[i] == '+')
      out[i] = '-';
    else if (out[i] == '/')
      out[i] = '_';
    else if (out[i] == '=') {
      out[i] = '\0';
      break;
    }
  }
  out[len] = '\0';
  return out;
}

/* "a.b.c" as a new string (caller frees). */
static char *join3(const char *a, const char *b, const char *c)
{
  size_t n = strlen(a) + strlen(b) + strlen(c) + 3;
  char *s = malloc(n);

  ck_assert_ptr_nonnull(s);
  snprintf(s, n, "%s.%s.%s", a, b, c);
  return s;
}

/* How a case's token is made. */
enum build {
  B_MINT, /* auth_mint(alg, key, kid, team, role, ttl, at) */
  B_JWT,  /* raw libjwt: claims JSON, kid header, alg, key */
  B_RAW,  /* header and claims JSON as written, HMAC-SHA256 with key */
  B_TEXT  /* the token is the claims string, verbatim */
};

/* Signing key of a case; for B_RAW, K_NONE leaves the signature empty. */
enum sign_key { K_NONE, K_HS, K_RSA1, K_RSA2, K_EC1, K_RSA1_PUB };

/* What is done to the token after it is built. */
enum mutation {
  M_NONE,
  M_PAYLOAD,      /* replace the payload with b64url(alt), keep signature */
  M_SIG,          /* change one character in the middle of the signature */
  M_SIG_NONCANON, /* set an unused trailing bit of the signature */
  M_SIG_SHORT,    /* drop the last 3 signature characters */
  M_TWO_PARTS,    /* cut off ".signature" */
  M_FOUR_PARTS,   /* append ".AAAA" */
  M_BAD_CHAR,     /* a '*' inside the payload */
  M_PADDED        /* '=' padding after the header */
};

struct vcase {
  const char *name;
  const char *alg;
  const char *kid;
  const char *header;    /* B_RAW */
  const char *claims;    /* B_JWT, B_RAW: JSON object; B_TEXT: the token */
  const char *team;      /* B_MINT */
  const char *role;      /* B_MINT */
  const char *alt;       /* M_PAYLOAD */
  const char *why;       /* reject: exact reason */
  const char *want_team; /* accept */
  const char *want_sub;  /* accept; NULL = not checked */
  long ttl;              /* B_MINT */
  time_t at;             /* B_MINT: the minting clock */
  size_t pad;            /* B_JWT: add a "pad" claim of this many bytes */
  enum cfg_kind cfg;
  enum build build;
  enum sign_key key;
  enum mutation mut;
  enum auth_role want_role; /* accept */
  int ok;
};

#define MINT(alg_, key_, kid_, team_, role_, ttl_, at_)                        \
  .build = B_MINT, .alg = alg_, .key = key_, .kid = kid_, .team = team_,       \
  .role = role_, .ttl = ttl_, .at = at_
#define ACCEPT(team_, role_) .ok = 1, .want_team = team_, .want_role = role_
#define REJECT(why_) .ok = 0, .why = why_

static const struct vcase cases[] = {
    /* valid tokens, one per algorithm */
    {.name = "hs256 minted",
     MINT("HS256", K_HS, NULL, "ml-research", "member", 3600, NOW),
     ACCEPT("ml-research", AUTH_ROLE_MEMBER),
     .want_sub = "ml-research:member"},
    {.name = "rs256 minted, kid rsa2 chosen among two rsa keys",
     MINT("RS256", K_RSA2, "rsa2", "team-b", "admin", 3600, NOW),
     ACCEPT("team-b", AUTH_ROLE_ADMIN)},
    {.name = "rs256 minted, kid rsa1",
     MINT("RS256", K_RSA1, "rsa1", "team-a", "finance", 600, NOW - 100),
     ACCEPT("team-a", AUTH_ROLE_FINANCE)},
    {.name = "es256 minted, kid ec1",
     MINT("ES256", K_EC1, "ec1", "vision", "member", 3600, NOW),
     ACCEPT("vision", AUTH_ROLE_MEMBER)},
    {.name = "es256 without kid uses the only ec key",
     MINT("ES256", K_EC1, NULL, "vision", "member", 3600, NOW),
     ACCEPT("vision", AUTH_ROLE_MEMBER)},
    {.name = "rs256 without kid uses the key without kid",
     .cfg = CFG_RS_NOKID,
     MINT("RS256", K_RSA1, NULL, "t1", "admin", 3600, NOW),
     ACCEPT("t1", AUTH_ROLE_ADMIN)},
    {.name = "hs256 ignores kid",
     MINT("HS256", K_HS, "rsa1", "t1", "member", 3600, NOW),
     ACCEPT("t1", AUTH_ROLE_MEMBER)},
    {.name = "raw libjwt hs256",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"team\":\"t-9\",\"role\":\"finance\",\"sub\":\"u\"}",
     ACCEPT("t-9", AUTH_ROLE_FINANCE),
     .want_sub = "u"},
    {.name = "typ jwt is case-insensitive",
     .build = B_RAW,
     .key = K_HS,
     .header = "{\"alg\":\"HS256\",\"typ\":\"jwt\"}",
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"member\"}",
     ACCEPT("t1", AUTH_ROLE_MEMBER)},
    {.name = "no typ header",
     .build = B_RAW,
     .key = K_HS,
     .header = "{\"alg\":\"HS256\"}",
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"member\"}",
     ACCEPT("t1", AUTH_ROLE_MEMBER)},

    /* algorithm and key confusion */
    {.name = "alg none, empty signature",
     .build = B_RAW,
     .key = K_NONE,
     .header = "{\"alg\":\"none\",\"typ\":\"JWT\"}",
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("malformed token")},
    {.name = "alg none with a signature",
     .build = B_RAW,
     .key = K_HS,
     .header = "{\"alg\":\"none\",\"typ\":\"JWT\"}",
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("algorithm not allowed")},
    {.name = "alg None",
     .build = B_RAW,
     .key = K_HS,
     .header = "{\"alg\":\"None\"}",
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("algorithm not allowed")},
    {.name = "alg missing",
     .build = B_RAW,
     .key = K_HS,
     .header = "{\"typ\":\"JWT\"}",
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("missing token algorithm")},
    {.name = "alg hs512 is not supported",
     .build = B_JWT,
     .alg = "HS512",
     .key = K_HS,
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("algorithm not allowed")},
    {.name = "hs256 signed with the rsa public pem as hmac secret",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_RSA1_PUB,
     .kid = "rsa1",
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("invalid signature")},
    {.name = "hs256 signed with the rsa public pem, only rs256 allowed",
     .cfg = CFG_RS_NOKID,
     .build = B_JWT,
     .alg = "HS256",
     .key = K_RSA1_PUB,
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("algorithm not allowed")},
    {.name = "rs256 when only hs256 is allowed",
     .cfg = CFG_HS,
     MINT("RS256", K_RSA1, "rsa1", "t1", "member", 3600, NOW),
     REJECT("algorithm not allowed")},
    {.name = "es256 when only rs256 is allowed",
     .cfg = CFG_RS_NOKID,
     MINT("ES256", K_EC1, "ec1", "t1", "member", 3600, NOW),
     REJECT("algorithm not allowed")},
    {.name = "rs256 signed by rsa1 claiming kid rsa2",
     MINT("RS256", K_RSA1, "rsa2", "t1", "member", 3600, NOW),
     REJECT("invalid signature")},
    {.name = "rs256 with the kid of the ec key",
     MINT("RS256", K_RSA1, "ec1", "t1", "member", 3600, NOW),
     REJECT("key id does not match algorithm")},
    {.name = "unknown kid",
     MINT("RS256", K_RSA1, "rsa9", "t1", "member", 3600, NOW),
     REJECT("unknown key id")},
    {.name = "rs256 without kid among two rsa keys with kids",
     MINT("RS256", K_RSA1, NULL, "t1", "member", 3600, NOW),
     REJECT("key id required")},
    {.name = "kid not a string",
     .build = B_RAW,
     .key = K_HS,
     .header = "{\"alg\":\"HS256\",\"kid\":7}",
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"member\"}",
     REJECT("invalid key id")},
    {.name = "typ other than jwt",
     .build = B_RAW,
     .key = K_HS,
     .header = "{\"alg\":\"HS256\",\"typ\":\"at+jwt\"}",
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"member\"}",
     REJECT("unsupported token type")},
    {.name = "crit header",
     .build = B_RAW,
     .key = K_HS,
     .header = "{\"alg\":\"HS256\",\"crit\":[\"exp\"],\"exp\":1}",
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"member\"}",
     REJECT("unsupported critical header")},
    {.name = "duplicate alg in header",
     .build = B_RAW,
     .key = K_HS,
     .header = "{\"alg\":\"HS256\",\"typ\":\"JWT\",\"alg\":\"HS256\"}",
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"member\"}",
     REJECT("malformed token header")},
    {.name = "duplicate alg in header, none last",
     .build = B_RAW,
     .key = K_HS,
     .header = "{\"alg\":\"HS256\",\"alg\":\"none\"}",
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"member\"}",
     REJECT("malformed token header")},
    {.name = "header is not an object",
     .build = B_RAW,
     .key = K_HS,
     .header = "[\"HS256\"]",
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"member\"}",
     REJECT("malformed token header")},
    {.name = "duplicate team in payload",
     .build = B_RAW,
     .key = K_HS,
     .header = HS_HEADER,
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"member\",\"team\":\"t2\"}",
     REJECT("malformed token payload")},
    {.name = "payload with trailing bytes",
     .build = B_RAW,
     .key = K_HS,
     .header = HS_HEADER,
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"member\"} x",
     REJECT("malformed token payload")},

    /* time */
    {.name = "expired",
     MINT("HS256", K_HS, NULL, "t1", "member", 3600, NOW - 7200),
     REJECT("token expired")},
    {.name = "expired 30 s ago, within 60 s leeway",
     MINT("HS256", K_HS, NULL, "t1", "member", 3600, NOW - 3630),
     ACCEPT("t1", AUTH_ROLE_MEMBER)},
    {.name = "expired exactly leeway ago",
     MINT("HS256", K_HS, NULL, "t1", "member", 3600, NOW - 3660),
     ACCEPT("t1", AUTH_ROLE_MEMBER)},
    {.name = "expired leeway + 1 s ago",
     MINT("HS256", K_HS, NULL, "t1", "member", 3600, NOW - 3661),
     REJECT("token expired")},
    {.name = "nbf in the future",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims =
         "{" GOOD ",\"nbf\":1700000600,\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("token not yet valid")},
    {.name = "nbf 30 s ahead, within leeway",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims =
         "{" GOOD ",\"nbf\":1700000030,\"team\":\"t1\",\"role\":\"admin\"}",
     ACCEPT("t1", AUTH_ROLE_ADMIN)},
    {.name = "nbf not an integer",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"nbf\":\"soon\",\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("invalid nbf claim")},
    {.name = "issued in the future beyond leeway",
     MINT("HS256", K_HS, NULL, "t1", "member", 3600, NOW + 120),
     REJECT("token issued in the future")},
    {.name = "issued 30 s in the future, within leeway",
     MINT("HS256", K_HS, NULL, "t1", "member", 3600, NOW + 30),
     ACCEPT("t1", AUTH_ROLE_MEMBER)},
    {.name = "lifetime over max",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD_ISSAUD ",\"iat\":1699999900,\"exp\":1700086400,"
               "\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("token lifetime too long")},
    {.name = "lifetime exactly max",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD_ISSAUD ",\"iat\":1699999900,\"exp\":1700086300,"
               "\"team\":\"t1\",\"role\":\"admin\"}",
     ACCEPT("t1", AUTH_ROLE_ADMIN)},
    {.name = "exp before iat",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD_ISSAUD ",\"iat\":1700000000,\"exp\":1699999999,"
               "\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("token expires before it was issued")},
    {.name = "exp missing",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD_ISSAUD ",\"iat\":1699999000,"
               "\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("missing or invalid exp claim")},
    {.name = "exp a string",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD_ISSAUD ",\"iat\":1699999000,\"exp\":\"1700002600\","
               "\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("missing or invalid exp claim")},
    {.name = "exp a real number",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD_ISSAUD ",\"iat\":1699999000,\"exp\":1700002600.5,"
               "\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("missing or invalid exp claim")},
    {.name = "exp negative",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD_ISSAUD ",\"iat\":1699999000,\"exp\":-1,"
               "\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("missing or invalid exp claim")},
    {.name = "iat missing",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD_ISSAUD ",\"exp\":1700002600,"
               "\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("missing or invalid iat claim")},

    /* issuer and audience */
    {.name = "wrong iss",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{\"iss\":\"evil\",\"aud\":\"gpugate\"," GOOD_TIMES
               ",\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("invalid issuer")},
    {.name = "iss missing",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{\"aud\":\"gpugate\"," GOOD_TIMES
               ",\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("invalid issuer")},
    {.name = "wrong aud",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{\"iss\":\"gpugate\",\"aud\":\"other\"," GOOD_TIMES
               ",\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("invalid audience")},
    {.name = "aud array containing ours",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims =
         "{\"iss\":\"gpugate\",\"aud\":[\"other\",\"gpugate\"]," GOOD_TIMES
         ",\"team\":\"t1\",\"role\":\"admin\"}",
     ACCEPT("t1", AUTH_ROLE_ADMIN)},
    {.name = "aud array without ours",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{\"iss\":\"gpugate\",\"aud\":[\"other\",7]," GOOD_TIMES
               ",\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("invalid audience")},
    {.name = "iss and aud absent and not configured",
     .cfg = CFG_NO_ISSAUD,
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD_TIMES ",\"team\":\"t1\",\"role\":\"admin\"}",
     ACCEPT("t1", AUTH_ROLE_ADMIN)},

    /* team, role, sub */
    /* a member belongs to a team; admin, finance and metrics need not */
    {.name = "member without team",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"role\":\"member\"}",
     REJECT("missing or invalid team claim")},
    {.name = "admin without team",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"role\":\"admin\"}",
     ACCEPT("", AUTH_ROLE_ADMIN)},
    {.name = "finance without team",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"role\":\"finance\",\"sub\":\"ana\"}",
     ACCEPT("", AUTH_ROLE_FINANCE),
     .want_sub = "ana"},
    {.name = "metrics without team",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"role\":\"metrics\"}",
     ACCEPT("", AUTH_ROLE_METRICS)},
    {.name = "admin with a team keeps it",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"team\":\"ops\",\"role\":\"admin\"}",
     ACCEPT("ops", AUTH_ROLE_ADMIN)},
    {.name = "admin with a null team",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"team\":null,\"role\":\"admin\"}",
     REJECT("missing or invalid team claim")},
    {.name = "finance with a bad team",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"team\":\"Finance Dept\",\"role\":\"finance\"}",
     REJECT("missing or invalid team claim")},
    {.name = "minted admin without team",
     MINT("HS256", K_HS, NULL, NULL, "admin", 600, NOW),
     ACCEPT("", AUTH_ROLE_ADMIN),
     .want_sub = "admin"},
    {.name = "minted metrics without team",
     MINT("HS256", K_HS, NULL, NULL, "metrics", 600, NOW),
     ACCEPT("", AUTH_ROLE_METRICS),
     .want_sub = "metrics"},
    {.name = "missing role",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"team\":\"t1\"}",
     REJECT("missing or invalid role claim")},
    {.name = "bad role",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"root\"}",
     REJECT("missing or invalid role claim")},
    {.name = "role not a string",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":[\"admin\"]}",
     REJECT("missing or invalid role claim")},
    {.name = "bad team characters",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"team\":\"ML_Research\",\"role\":\"member\"}",
     REJECT("missing or invalid team claim")},
    {.name = "team with a slash",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"team\":\"a/../b\",\"role\":\"member\"}",
     REJECT("missing or invalid team claim")},
    {.name = "team of 64 characters",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"team\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
               "aaaaaaaaaaaaaaaaaaaaaa\",\"role\":\"member\"}",
     REJECT("missing or invalid team claim")},
    {.name = "team of 63 characters",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"team\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
               "aaaaaaaaaaaaaaaaaaaaa\",\"role\":\"member\"}",
     ACCEPT("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            AUTH_ROLE_MEMBER)},
    {.name = "empty team",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"team\":\"\",\"role\":\"member\"}",
     REJECT("missing or invalid team claim")},
    {.name = "sub not a string",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"member\",\"sub\":5}",
     REJECT("invalid sub claim")},
    {.name = "sub of 128 bytes",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .claims =
         "{" GOOD ",\"team\":\"t1\",\"role\":\"member\",\"sub\":\""
         "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
         "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
         "\"}",
     REJECT("sub claim too long")},

    /* tampering and shape */
    {.name = "tampered payload, other team",
     MINT("HS256", K_HS, NULL, "t1", "member", 3600, NOW),
     .mut = M_PAYLOAD,
     .alt = "{" GOOD ",\"team\":\"t2\",\"role\":\"member\"}",
     REJECT("invalid signature")},
    {.name = "tampered payload, rs256",
     MINT("RS256", K_RSA1, "rsa1", "t1", "member", 3600, NOW),
     .mut = M_PAYLOAD,
     .alt = "{" GOOD ",\"team\":\"t1\",\"role\":\"admin\"}",
     REJECT("invalid signature")},
    {.name = "tampered signature, hs256",
     MINT("HS256", K_HS, NULL, "t1", "member", 3600, NOW),
     .mut = M_SIG,
     REJECT("invalid signature")},
    {.name = "tampered signature, rs256",
     MINT("RS256", K_RSA2, "rsa2", "t1", "member", 3600, NOW),
     .mut = M_SIG,
     REJECT("invalid signature")},
    {.name = "tampered signature, es256",
     MINT("ES256", K_EC1, "ec1", "t1", "member", 3600, NOW),
     .mut = M_SIG,
     REJECT("invalid signature")},
    {.name = "non-canonical signature encoding, es256",
     MINT("ES256", K_EC1, "ec1", "t1", "member", 3600, NOW),
     .mut = M_SIG_NONCANON,
     REJECT("malformed token")},
    {.name = "truncated signature, hs256",
     MINT("HS256", K_HS, NULL, "t1", "member", 3600, NOW),
     .mut = M_SIG_SHORT,
     REJECT("invalid signature")},
    {.name = "two parts only",
     MINT("HS256", K_HS, NULL, "t1", "member", 3600, NOW),
     .mut = M_TWO_PARTS,
     REJECT("malformed token")},
    {.name = "four parts",
     MINT("HS256", K_HS, NULL, "t1", "member", 3600, NOW),
     .mut = M_FOUR_PARTS,
     REJECT("malformed token")},
    {.name = "character outside base64url",
     MINT("HS256", K_HS, NULL, "t1", "member", 3600, NOW),
     .mut = M_BAD_CHAR,
     REJECT("malformed token")},
    {.name = "base64 padding",
     MINT("HS256", K_HS, NULL, "t1", "member", 3600, NOW),
     .mut = M_PADDED,
     REJECT("malformed token")},
    {.name = "impossible base64 length",
     .build = B_TEXT,
     .claims = "eyJhbGciOiJIUzI1NiJ9A.e30.AAAA",
     REJECT("malformed token")},
    {.name = "payload not json",
     .build = B_TEXT,
     .claims = "eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.AAAA",
     REJECT("malformed token payload")},
    {.name = "empty token",
     .build = B_TEXT,
     .claims = "",
     REJECT("empty token")},
    {.name = "dots only",
     .build = B_TEXT,
     .claims = "..",
     REJECT("malformed token")},
    {.name = "bearer prefix left in",
     .build = B_TEXT,
     .claims = "Bearer eyJhbGciOiJIUzI1NiJ9.e30.AAAA",
     REJECT("malformed token")},
    {.name = "token over 8 KiB",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .pad = 6200,
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"member\"}",
     REJECT("token too long")},
    {.name = "token just under 8 KiB",
     .build = B_JWT,
     .alg = "HS256",
     .key = K_HS,
     .pad = 5900,
     .claims = "{" GOOD ",\"team\":\"t1\",\"role\":\"member\"}",
     ACCEPT("t1", AUTH_ROLE_MEMBER)},
};

#define N_CASES ((int)(sizeof(cases) / sizeof(cases[0])))

static const char *key_bytes(enum sign_key k, size_t *len)
{
  static const enum key_file files[] = {KF_HS,   KF_HS,  KF_RSA1,
                                        KF_RSA2, KF_EC1, KF_RSA1_PUB};

  *len = key_len[files[k]];
  return key_buf[files[k]];
}

/* B_RAW: header.payload signed with HMAC-SHA256 (or unsigned); new string. */
static char *build_raw(const struct vcase *c)
{
  char *h = b64url(c->header, strlen(c->header));
  char *p = b64url(c->claims, strlen(c->claims));
  char *input = join3(h, p, "");
  char *sig, *tok;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned mac_len = 0;
  size_t klen;
  const char *key = key_bytes(c->key, &klen);

  input[strlen(input) - 1] = '\0'; /* "h.p" */
  if (c->key == K_NONE) {
    sig = b64url("", 0);
  } else {
    ck_assert_ptr_nonnull(HMAC(EVP_sha256(), key, (int)klen,
                               (const unsigned char *)input, strlen(input), mac,
                               &mac_len));
    sig = b64url(mac, mac_len);
  }
  tok = join3(h, p, sig);
  free(h);
  free(p);
  free(input);
  free(sig);
  return tok;
}

/* B_JWT: a token made by libjwt directly; new string. */
static char *build_jwt(const struct vcase *c)
{
  jwt_t *jwt = NULL; /* new */
  char *tok, *pad = NULL;
  size_t klen;
  const char *key = key_bytes(c->key, &klen);

  ck_assert_int_eq(jwt_new(&jwt), 0);
  ck_assert_int_eq(jwt_add_grants_json(jwt, c->claims), 0);
  if (c->pad) {
    pad = malloc(c->pad + 1);
    ck_assert_ptr_nonnull(pad);
    memset(pad, 'x', c->pad);
    pad[c->pad] = '\0';
    ck_assert_int_eq(jwt_add_grant(jwt, "pad", pad), 0);
  }
  if (c->kid)
    ck_assert_int_eq(jwt_add_header(jwt, "kid", c->kid), 0);
  ck_assert_int_eq(jwt_set_alg(jwt, jwt_str_alg(c->alg),
                               (const unsigned char *)key, (int)klen),
                   0);
  tok = jwt_encode_str(jwt);
  ck_assert_ptr_nonnull(tok);
  jwt_free(jwt);
  free(pad);
  return tok;
}

static char *build(const struct vcase *c, const struct identity_config *cfg)
{
  char err[256] = "";
  char *tok;
  size_t klen;
  const char *key;

  switch (c->build) {
  case B_MINT:
    key = key_bytes(c->key, &klen);
    tok = auth_mint(cfg, c->alg, (const unsigned char *)key, klen, c->kid,
                    c->team, c->role, c->ttl, c->at, err, sizeof(err));
    ck_assert_msg(tok != NULL, "auth_mint: %s", err);
    return tok;
  case B_JWT:
    return build_jwt(c);
  case B_RAW:
    return build_raw(c);
  case B_TEXT:
  default:
    tok = strdup(c->claims);
    ck_assert_ptr_nonnull(tok);
    return tok;
  }
}

/* Apply c->mut to tok (freed); returns the new token. */
static char *mutate(const struct vcase *c, char *tok)
{
  char *d1 = strchr(tok, '.');
  char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
  char *out = NULL, *p;
  size_t n = strlen(tok), slen;

  if (c->mut == M_NONE)
    return tok;
  ck_assert_ptr_nonnull(d2);
  slen = strlen(d2 + 1);
  switch (c->mut) {
  case M_NONE:
    return tok;
  case M_PAYLOAD:
    *d1 = '\0';
    p = b64url(c->alt, strlen(c->alt));
    out = join3(tok, p, d2 + 1);
    free(p);
    break;
  case M_SIG:
    p = d2 + 1 + slen / 2;
    *p = *p == 'A' ? 'B' : 'A';
    return tok;
  case M_SIG_NONCANON:
    p = tok + n - 1;
    ck_assert_msg(*p == 'A' || *p == 'Q' || *p == 'g' || *p == 'w',
                  "ES256 signatures end in one of AQgw");
    *p = (char)(*p + 1); /* sets the lowest, unused bit */
    return tok;
  case M_SIG_SHORT:
    tok[n - 3] = '\0'; /* 43 characters → 40: still canonical base64url */
    return tok;
  case M_TWO_PARTS:
    *d2 = '\0';
    return tok;
  case M_FOUR_PARTS:
    out = malloc(n + 6);
    ck_assert_ptr_nonnull(out);
    snprintf(out, n + 6, "%s.AAAA", tok);
    break;
  case M_BAD_CHAR:
    d1[3] = '*';
    return tok;
  case M_PADDED:
    *d1 = '\0';
    *d2 = '\0';
    out = malloc(n + 3);
    ck_assert_ptr_nonnull(out);
    snprintf(out, n + 3, "%s==.%s.%s", tok, d1 + 1, d2 + 1);
    break;
  }
  free(tok);
  return out;
}

START_TEST(verify_case)
{
  const struct vcase *c = &cases[_i];
  struct identity_config cfg;
  struct auth_ctx *a;
  struct auth_principal who;
  char err[256] = "", why[128] = "";
  char *tok;
  int rc;

  cfg_init(&cfg, c->cfg);
  a = auth_new(&cfg, err, sizeof(err));
  ck_assert_msg(a != NULL, "auth_new: %s", err);
  tok = mutate(c, build(c, &cfg));
  if (c->pad)
    ck_assert_msg(c->ok ? strlen(tok) <= AUTH_MAX_TOKEN &&
                              strlen(tok) > AUTH_MAX_TOKEN - 400
                        : strlen(tok) > AUTH_MAX_TOKEN,
                  "%s: padded token has %zu bytes", c->name, strlen(tok));

  memset(&who, 0, sizeof(who));
  snprintf(who.team, sizeof(who.team), "untouched");
  rc = auth_verify(a, tok, NOW, &who, why, sizeof(why));
  if (c->ok) {
    ck_assert_msg(rc == 0, "%s: rejected: %s", c->name, why);
    ck_assert_str_eq(who.team, c->want_team);
    ck_assert_int_eq(who.role, c->want_role);
    if (c->want_sub)
      ck_assert_str_eq(who.subject, c->want_sub);
  } else {
    ck_assert_msg(rc == -1, "%s: accepted", c->name);
    ck_assert_msg(strcmp(why, c->why) == 0, "%s: reason \"%s\", want \"%s\"",
                  c->name, why, c->why);
    ck_assert_str_eq(who.team, "untouched");
  }
  free(tok);
  auth_free(a);
}
END_TEST

/* A PEM public key for a freshly generated key (for key types with no
 * fixture); new string (caller frees). */
static char *gen_pub_pem(const char *type, const char *param, size_t bits,
                         size_t *len)
{
  EVP_PKEY *pkey = NULL;
  BIO *bio = BIO_new(BIO_s_mem());
  char *data, *out;
  long n;

  ck_assert_ptr_nonnull(bio);
  if (param)
    pkey = EVP_PKEY_Q_keygen(NULL, NULL, type, param);
  else if (bits)
    pkey = EVP_PKEY_Q_keygen(NULL, NULL, type, bits);
  else
    pkey = EVP_PKEY_Q_keygen(NULL, NULL, type);
  ck_assert_ptr_nonnull(pkey);
  ck_assert_int_eq(PEM_write_bio_PUBKEY(bio, pkey), 1);
  n = BIO_get_mem_data(bio, &data);
  ck_assert_int_gt(n, 0);
  out = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(out);
  memcpy(out, data, (size_t)n);
  out[n] = '\0';
  *len = (size_t)n;
  BIO_free(bio);
  EVP_PKEY_free(pkey);
  return out;
}

/* Configuration errors: what is changed and the variable the error names. */
enum cfg_break {
  BR_NO_ALGS,
  BR_UNKNOWN_ALG_BIT,
  BR_NO_SECRET,
  BR_SHORT_SECRET,
  BR_RS_WITHOUT_RSA_KEY,
  BR_ES_WITHOUT_EC_KEY,
  BR_GARBAGE_PEM,
  BR_PRIVATE_PEM,
  BR_DUP_KID,
  BR_RSA_1024,
  BR_EC_P384,
  BR_ED25519,
  BR_NEG_LEEWAY,
  BR_ZERO_LIFETIME,
  BR_N
};

static const char *const break_wants[BR_N] = {
    "GPUGATE_JWT_ALGORITHMS",        "GPUGATE_JWT_ALGORITHMS",
    "GPUGATE_JWT_HS256_SECRET_FILE", "GPUGATE_JWT_HS256_SECRET_FILE",
    "GPUGATE_JWT_PUBLIC_KEYS",       "GPUGATE_JWT_PUBLIC_KEYS",
    "GPUGATE_JWT_PUBLIC_KEYS",       "GPUGATE_JWT_PUBLIC_KEYS",
    "GPUGATE_JWT_PUBLIC_KEYS",       "GPUGATE_JWT_PUBLIC_KEYS",
    "GPUGATE_JWT_PUBLIC_KEYS",       "GPUGATE_JWT_PUBLIC_KEYS",
    "GPUGATE_JWT_LEEWAY_S",          "GPUGATE_JWT_MAX_LIFETIME_S"};

START_TEST(config_errors)
{
  struct identity_config cfg;
  struct auth_ctx *a;
  char err[256] = "";
  char *gen = NULL;
  size_t gen_len = 0;
  char garbage[] = "-----BEGIN PUBLIC KEY-----\nnot a key\n"
                   "-----END PUBLIC KEY-----\n";

  ck_assert_int_lt(_i, BR_N);
  cfg_init(&cfg, CFG_ALL);
  switch ((enum cfg_break)_i) {
  case BR_NO_ALGS:
    cfg.jwt_algorithms = 0;
    break;
  case BR_UNKNOWN_ALG_BIT:
    cfg.jwt_algorithms |= 1u << 7;
    break;
  case BR_NO_SECRET:
    cfg.hs256_secret = NULL;
    cfg.hs256_secret_len = 0;
    break;
  case BR_SHORT_SECRET:
    cfg.hs256_secret_len = 31;
    break;
  case BR_RS_WITHOUT_RSA_KEY:
    cfg.n_pubkeys = 0;
    add_key(&cfg, "ec1", KF_EC1_PUB);
    break;
  case BR_ES_WITHOUT_EC_KEY:
    cfg.n_pubkeys = 2;
    break;
  case BR_GARBAGE_PEM:
    cfg.pubkeys[1].pem = garbage;
    cfg.pubkeys[1].pem_len = strlen(garbage);
    break;
  case BR_PRIVATE_PEM:
    add_key(&cfg, "rsa1-private", KF_RSA1);
    break;
  case BR_DUP_KID:
    snprintf(cfg.pubkeys[1].kid, sizeof(cfg.pubkeys[1].kid), "rsa1");
    break;
  case BR_RSA_1024:
    gen = gen_pub_pem("RSA", NULL, 1024, &gen_len);
    break;
  case BR_EC_P384:
    gen = gen_pub_pem("EC", "P-384", 0, &gen_len);
    break;
  case BR_ED25519:
    gen = gen_pub_pem("ED25519", NULL, 0, &gen_len);
    break;
  case BR_NEG_LEEWAY:
    cfg.jwt_leeway_s = -1;
    break;
  case BR_ZERO_LIFETIME:
    cfg.jwt_max_lifetime_s = 0;
    break;
  case BR_N:
    break;
  }
  if (gen) {
    cfg.pubkeys[cfg.n_pubkeys].pem = gen;
    cfg.pubkeys[cfg.n_pubkeys].pem_len = gen_len;
    snprintf(cfg.pubkeys[cfg.n_pubkeys].kid,
             sizeof(cfg.pubkeys[cfg.n_pubkeys].kid), "weak");
    cfg.n_pubkeys++;
  }
  a = auth_new(&cfg, err, sizeof(err));
  ck_assert_msg(a == NULL, "case %d: accepted", _i);
  ck_assert_msg(strstr(err, break_wants[_i]) != NULL,
                "case %d: \"%s\" does not name %s", _i, err, break_wants[_i]);
  free(gen);
}
END_TEST

START_TEST(config_valid)
{
  struct identity_config cfg;
  struct auth_ctx *a;
  char err[256] = "";

  cfg_init(&cfg, CFG_ALL);
  a = auth_new(&cfg, err, sizeof(err));
  ck_assert_msg(a != NULL, "%s", err);
  auth_free(a);

  /* RS256 only: the HS256 secret is not needed */
  cfg_init(&cfg, CFG_RS_NOKID);
  cfg.hs256_secret = NULL;
  cfg.hs256_secret_len = 0;
  a = auth_new(&cfg, err, sizeof(err));
  ck_assert_msg(a != NULL, "%s", err);
  auth_free(a);

  auth_free(NULL);
  ck_assert_ptr_null(auth_new(NULL, err, sizeof(err)));
}
END_TEST

/* The context must not depend on cfg after auth_new (keys are copied). */
START_TEST(config_copied)
{
  struct identity_config cfg;
  struct auth_ctx *a;
  struct auth_principal who;
  char err[256] = "", why[128] = "";
  char *tok, *pem = malloc(key_len[KF_RSA1_PUB] + 1);
  size_t klen;
  const char *key = key_bytes(K_RSA1, &klen);

  ck_assert_ptr_nonnull(pem);
  memcpy(pem, key_buf[KF_RSA1_PUB], key_len[KF_RSA1_PUB] + 1);
  cfg_init(&cfg, CFG_RS_NOKID);
  cfg.pubkeys[0].pem = pem;
  a = auth_new(&cfg, err, sizeof(err));
  ck_assert_msg(a != NULL, "%s", err);
  tok = auth_mint(&cfg, "RS256", (const unsigned char *)key, klen, NULL, "t1",
                  "admin", 60, NOW, err, sizeof(err));
  ck_assert_msg(tok != NULL, "%s", err);
  memset(pem, 0, key_len[KF_RSA1_PUB]);
  free(pem);
  memset(&cfg, 0, sizeof(cfg));
  ck_assert_msg(auth_verify(a, tok, NOW, &who, why, sizeof(why)) == 0, "%s",
                why);
  free(tok);
  auth_free(a);
}
END_TEST

/* auth_mint refusals. */
struct mcase {
  const char *alg;
  enum sign_key key;
  size_t keylen; /* 0 = the whole key */
  const char *team;
  const char *role;
  long ttl;
};

static const struct mcase mint_bad[] = {
    {"HS256", K_HS, 0, "Bad_Team", "member", 60},
    {"HS256", K_HS, 0, "", "member", 60},
    {"HS256", K_HS, 0, NULL, "member", 60}, /* a member needs a team */
    {"HS256", K_HS, 0, "", "admin", 60},
    {"HS256", K_HS, 0, "t1", "root", 60},
    {"HS256", K_HS, 0, "t1", "member", 0},
    {"HS256", K_HS, 0, "t1", "member", -5},
    {"HS256", K_HS, 0, "t1", "member", 86401},
    {"HS256", K_HS, 31, "t1", "member", 60},
    {"HS512", K_HS, 0, "t1", "member", 60},
    {"none", K_HS, 0, "t1", "member", 60},
    {"RS256", K_EC1, 0, "t1", "member", 60},
    {"ES256", K_RSA1, 0, "t1", "member", 60},
    {"RS256", K_RSA1_PUB, 0, "t1", "member", 60},
};

START_TEST(mint_errors)
{
  const struct mcase *m = &mint_bad[_i];
  struct identity_config cfg;
  char err[256] = "";
  char *tok;
  size_t klen;
  const char *key = key_bytes(m->key, &klen);

  cfg_init(&cfg, CFG_ALL);
  tok = auth_mint(&cfg, m->alg, (const unsigned char *)key,
                  m->keylen ? m->keylen : klen, NULL, m->team, m->role, m->ttl,
                  NOW, err, sizeof(err));
  ck_assert_msg(tok == NULL, "mint case %d: minted", _i);
  ck_assert_msg(err[0] != '\0', "mint case %d: no reason", _i);
}
END_TEST

/* A minted token carries exactly the promised claims. */
START_TEST(mint_claims)
{
  struct identity_config cfg;
  char err[256] = "";
  char *tok;
  jwt_t *jwt = NULL; /* new */
  size_t klen;
  const char *key = key_bytes(K_HS, &klen);

  cfg_init(&cfg, CFG_ALL);
  tok = auth_mint(&cfg, "HS256", (const unsigned char *)key, klen, "k1",
                  "team-7", "finance", 900, NOW, err, sizeof(err));
  ck_assert_msg(tok != NULL, "%s", err);
  ck_assert_int_eq(jwt_decode(&jwt, tok, (const unsigned char *)key, (int)klen),
                   0);
  ck_assert_int_eq(jwt_get_alg(jwt), JWT_ALG_HS256);
  ck_assert_str_eq(jwt_get_header(jwt, "kid"), "k1");
  ck_assert_str_eq(jwt_get_grant(jwt, "iss"), "gpugate");
  ck_assert_str_eq(jwt_get_grant(jwt, "aud"), "gpugate");
  ck_assert_str_eq(jwt_get_grant(jwt, "team"), "team-7");
  ck_assert_str_eq(jwt_get_grant(jwt, "role"), "finance");
  ck_assert_str_eq(jwt_get_grant(jwt, "sub"), "team-7:finance");
  ck_assert_int_eq(jwt_get_grant_int(jwt, "iat"), (long)NOW);
  ck_assert_int_eq(jwt_get_grant_int(jwt, "exp"), (long)NOW + 900);
  jwt_free(jwt);
  free(tok);
}
END_TEST

START_TEST(roles)
{
  static const enum auth_role all[] = {AUTH_ROLE_MEMBER, AUTH_ROLE_ADMIN,
                                       AUTH_ROLE_FINANCE};
  size_t i;

  for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    ck_assert_int_eq(auth_role_parse(auth_role_name(all[i])), all[i]);
  ck_assert_int_eq(auth_role_parse("Admin"), AUTH_ROLE_NONE);
  ck_assert_int_eq(auth_role_parse(""), AUTH_ROLE_NONE);
  ck_assert_int_eq(auth_role_parse(NULL), AUTH_ROLE_NONE);
  ck_assert_int_eq(auth_role_parse("none"), AUTH_ROLE_NONE);
}
END_TEST

START_TEST(null_arguments)
{
  struct identity_config cfg;
  struct auth_ctx *a;
  struct auth_principal who;
  char err[256] = "", why[64] = "";

  cfg_init(&cfg, CFG_HS);
  a = auth_new(&cfg, err, sizeof(err));
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(auth_verify(a, NULL, NOW, &who, why, sizeof(why)), -1);
  ck_assert_int_eq(auth_verify(NULL, "a.b.c", NOW, &who, why, sizeof(why)), -1);
  ck_assert_int_eq(auth_verify(a, "a.b.c", NOW, &who, NULL, 0), -1);
  auth_free(a);
}
END_TEST

/* Many threads verifying with one shared context. */
struct thread_arg {
  const struct auth_ctx *a;
  const char *tokens[3];
  int failures;
};

static void *verify_many(void *p)
{
  struct thread_arg *t = p;
  struct auth_principal who;
  char why[64];
  int i;

  for (i = 0; i < 150; i++)
    if (auth_verify(t->a, t->tokens[i % 3], NOW, &who, why, sizeof(why)) != 0 ||
        strcmp(who.team, "t1") != 0)
      t->failures++;
  return NULL;
}

START_TEST(threads)
{
  struct identity_config cfg;
  struct auth_ctx *a;
  struct thread_arg args[4];
  pthread_t th[4];
  char err[256] = "";
  char *tok[3];
  static const char *const alg[3] = {"HS256", "RS256", "ES256"};
  static const enum sign_key key[3] = {K_HS, K_RSA1, K_EC1};
  static const char *const kid[3] = {NULL, "rsa1", "ec1"};
  size_t klen;
  int i, j;

  cfg_init(&cfg, CFG_ALL);
  a = auth_new(&cfg, err, sizeof(err));
  ck_assert_msg(a != NULL, "%s", err);
  for (i = 0; i < 3; i++) {
    const char *k = key_bytes(key[i], &klen);

    tok[i] = auth_mint(&cfg, alg[i], (const unsigned char *)k, klen, kid[i],
                       "t1", "member", 3600, NOW, err, sizeof(err));
    ck_assert_msg(tok[i] != NULL, "%s", err);
  }
  for (i = 0; i < 4; i++) {
    args[i].a = a;
    args[i].failures = 0;
    for (j = 0; j < 3; j++)
      args[i].tokens[j] = tok[(i + j) % 3];
    ck_assert_int_eq(pthread_create(&th[i], NULL, verify_many, &args[i]), 0);
  }
  for (i = 0; i < 4; i++) {
    ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    ck_assert_int_eq(args[i].failures, 0);
  }
  for (i = 0; i < 3; i++)
    free(tok[i]);
  auth_free(a);
}
END_TEST

/* The auth test suite: token verification, configuration, minting. */
Suite *auth_suite(void)
{
  Suite *s = suite_create("auth");
  TCase *tc;

  tc = tcase_create("verify");
  tcase_add_unchecked_fixture(tc, keys_setup, keys_teardown);
  tcase_add_loop_test(tc, verify_case, 0, N_CASES);
  suite_add_tcase(s, tc);

  tc = tcase_create("config");
  tcase_add_unchecked_fixture(tc, keys_setup, keys_teardown);
  tcase_add_loop_test(tc, config_errors, 0, BR_N);
  tcase_add_test(tc, config_valid);
  tcase_add_test(tc, config_copied);
  suite_add_tcase(s, tc);

  tc = tcase_create("mint");
  tcase_add_unchecked_fixture(tc, keys_setup, keys_teardown);
  tcase_add_loop_test(tc, mint_errors, 0,
                      (int)(sizeof(mint_bad) / sizeof(mint_bad[0])));
  tcase_add_test(tc, mint_claims);
  tcase_add_test(tc, roles);
  tcase_add_test(tc, null_arguments);
  tcase_add_test(tc, threads);
  tcase_set_timeout(tc, 300);
  suite_add_tcase(s, tc);
  return s;
}
