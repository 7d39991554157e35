/*
 * test_tokencache.c — the cache of verified tokens: a table of steps
 * (expiry, verification time, distinct tokens, replacement, flush), its
 * capacity bound, and the cache behind auth_verify (a forged signature
 * on a cached token's header and claims is still refused; past exp the
 * token is verified in full again).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "identity/auth.h"
#include "identity/tokencache.h"

Suite *tokencache_suite(void);

enum op { PUT, GET, FLUSH, COUNT };

struct step {
  enum op op;
  const char *token;
  long long t;      /* PUT: verified at; GET: now */
  long long exp;    /* PUT */
  const char *team; /* PUT: the principal's; GET: expected, NULL = miss */
  size_t count;     /* COUNT */
};

START_TEST(steps_table)
{
  static const struct step steps[] = {
      {GET, "tok-a", 100, 0, NULL, 0},  /* empty */
      {PUT, "tok-a", 100, 200, "a", 0}, /* verified at 100, exp 200 */
      {GET, "tok-a", 100, 0, "a", 0},   /* at once */
      {GET, "tok-a", 199, 0, "a", 0},   /* until just before exp */
      {GET, "tok-a", 200, 0, NULL, 0},  /* never at exp */
      {GET, "tok-a", 5000, 0, NULL, 0}, /* nor after */
      {GET, "tok-a", 99, 0, NULL, 0},   /* nor before it was verified */
      {GET, "tok-b", 150, 0, NULL, 0},  /* another token */
      {GET, "tok-a ", 150, 0, NULL, 0}, /* one byte more */
      {GET, "tok-", 150, 0, NULL, 0},   /* a prefix */
      {PUT, "tok-b", 100, 300, "b", 0}, /* distinct tokens, */
      {GET, "tok-a", 150, 0, "a", 0},   /* distinct principals */
      {GET, "tok-b", 250, 0, "b", 0},
      {COUNT, NULL, 0, 0, NULL, 2},
      {PUT, "tok-a", 150, 400, "c", 0}, /* the same token again: */
      {COUNT, NULL, 0, 0, NULL, 2},     /* replaced, not added */
      {GET, "tok-a", 350, 0, "c", 0},
      {FLUSH, NULL, 0, 0, NULL, 0}, /* keys reloaded */
      {COUNT, NULL, 0, 0, NULL, 0},
      {GET, "tok-a", 160, 0, NULL, 0},
      {GET, "tok-b", 160, 0, NULL, 0},
      {PUT, "tok-a", 100, 200, "a", 0}, /* usable again after a flush */
      {GET, "tok-a", 150, 0, "a", 0},
  };
  struct tokencache *c = tokencache_new(64);
  size_t i;

  ck_assert_ptr_nonnull(c);
  for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
    const struct step *s = &steps[i];
    unsigned char key[TOKENCACHE_KEY_LEN];
    struct auth_principal p;
    bool hit;

    if (s->token)
      ck_assert_int_eq(tokencache_key(c, s->token, strlen(s->token), key), 0);
    switch (s->op) {
    case PUT:
      memset(&p, 0, sizeof(p));
      snprintf(p.team, sizeof(p.team), "%s", s->team);
      p.role = AUTH_ROLE_MEMBER;
      tokencache_put(c, key, (time_t)s->t, s->exp, &p);
      break;
    case GET:
      memset(&p, 0, sizeof(p));
      hit = tokencache_get(c, key, (time_t)s->t, &p);
      ck_assert_msg(hit == (s->team != NULL), "step %zu: hit %d", i, hit);
      if (hit) {
        ck_assert_msg(!strcmp(p.team, s->team), "step %zu: team %s", i, p.team);
        ck_assert_int_eq(p.role, AUTH_ROLE_MEMBER);
      }
      break;
    case FLUSH:
      tokencache_flush(c);
      break;
    case COUNT:
      ck_assert_msg(tokencache_count(c) == s->count, "step %zu: %zu", i,
                    tokencache_count(c));
      break;
    }
  }
  tokencache_free(c);
}
END_TEST

/* However many tokens pass, the cache holds at most its capacity; the
 * newest is always found. */
START_TEST(capacity_bound)
{
  static const size_t caps[] = {1, 4, 16, 100};
  size_t k;

  for (k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
    struct tokencache *c = tokencache_new(caps[k]);
    size_t bound = (caps[k] + 3) / 4 * 4; /* whole sets of four */
    int i;

    ck_assert_ptr_nonnull(c);
    for (i = 0; i < 5000; i++) {
      char tok[32];
      unsigned char key[TOKENCACHE_KEY_LEN];
      struct auth_principal p, got;

      snprintf(tok, sizeof(tok), "token-%d", i);
      memset(&p, 0, sizeof(p));
      snprintf(p.team, sizeof(p.team), "t%d", i);
      ck_assert_int_eq(tokencache_key(c, tok, strlen(tok), key), 0);
      tokencache_put(c, key, 0, 1000, &p);
      ck_assert(tokencache_get(c, key, 1, &got));
      ck_assert_str_eq(got.team, p.team);
      ck_assert_uint_le(tokencache_count(c), bound);
    }
    ck_assert_uint_ge(tokencache_count(c), 1);
    tokencache_free(c);
  }
}
END_TEST

#define SECRET "0123456789abcdef0123456789abcdef-tokencache"
#define T0 1900000000L

static struct auth_ctx *hs_ctx(struct identity_config *cfg)
{
  char err[256] = "";
  struct auth_ctx *a;

  memset(cfg, 0, sizeof(*cfg));
  snprintf(cfg->jwt_issuer, sizeof(cfg->jwt_issuer), "gpugate");
  snprintf(cfg->jwt_audience, sizeof(cfg->jwt_audience), "gpugate");
  cfg->jwt_leeway_s = 60;
  cfg->jwt_max_lifetime_s = 86400;
  cfg->jwt_algorithms = CONFIG_ALG_HS256;
  cfg->hs256_secret = (unsigned char *)SECRET;
  cfg->hs256_secret_len = strlen(SECRET);
  a = auth_new(cfg, err, sizeof(err));
  ck_assert_msg(a != NULL, "%s", err);
  return a;
}

START_TEST(behind_auth_verify)
{
  struct identity_config cfg;
  struct auth_ctx *a = hs_ctx(&cfg);
  struct auth_principal who;
  char err[256] = "", why[128] = "", *tok, *forged;
  size_t n;

  tok = auth_mint(&cfg, "HS256", (const unsigned char *)SECRET, strlen(SECRET),
                  NULL, "team-a", "member", 600, T0, err, sizeof(err));
  ck_assert_msg(tok != NULL, "%s", err);
  ck_assert_int_eq(auth_verify(a, tok, T0, &who, why, sizeof(why)), 0);
  ck_assert_str_eq(who.team, "team-a");
  /* the cached answer is the verified one */
  memset(&who, 0, sizeof(who));
  ck_assert_int_eq(auth_verify(a, tok, T0 + 10, &who, why, sizeof(why)), 0);
  ck_assert_str_eq(who.team, "team-a");
  ck_assert_int_eq(who.role, AUTH_ROLE_MEMBER);

  /* the same header and claims with another signature: not the same
   * token, verified in full and refused */
  forged = strdup(tok);
  ck_assert_ptr_nonnull(forged);
  n = strlen(forged);
  forged[n - 2] = forged[n - 2] == 'A' ? 'B' : 'A';
  ck_assert_int_eq(auth_verify(a, forged, T0 + 10, &who, why, sizeof(why)), -1);
  free(forged);

  /* past exp: verified in full — accepted within the leeway, then not */
  ck_assert_int_eq(auth_verify(a, tok, T0 + 600 + 30, &who, why, sizeof(why)),
                   0);
  ck_assert_int_eq(auth_verify(a, tok, T0 + 600 + 61, &who, why, sizeof(why)),
                   -1);
  ck_assert_str_eq(why, "token expired");

  /* a new context (keys reloaded) starts empty: with another secret the
   * token no longer passes */
  auth_free(a);
  cfg.hs256_secret = (unsigned char *)SECRET "-rotated";
  cfg.hs256_secret_len = strlen(SECRET "-rotated");
  a = auth_new(&cfg, err, sizeof(err));
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(auth_verify(a, tok, T0 + 10, &who, why, sizeof(why)), -1);
  free(tok);
  auth_free(a);
}
END_TEST

Suite *tokencache_suite(void)
{
  Suite *s = suite_create("tokencache");
  TCase *tc = tcase_create("tokencache");

  tcase_add_test(tc, steps_table);
  tcase_add_test(tc, capacity_bound);
  tcase_add_test(tc, behind_auth_verify);
  suite_add_tcase(s, tc);
  return s;
}
