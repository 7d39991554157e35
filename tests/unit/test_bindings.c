/*
 * test_bindings.c — the provider side as tables: which grants a provider
 * principal (issuer, sub, verified email, groups) gets from a set of
 * access bindings, the groups found at a dotted claim path, and which
 * discovery documents are accepted for an issuer.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "identity/discovery.h"
#include "identity/bindings.h"
#include "identity/idp.h"

Suite *bindings_suite(void);

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define IDP "https://idp.example.com"

static const char set[] =
    "["
    "{\"name\": \"a\", \"subjects\": [{\"kind\": \"group\", \"name\": "
    "\"ml-team-a\", \"issuer\": null}], \"role\": \"member\", \"team\": "
    "\"team-a\"},"
    "{\"name\": \"b\", \"subjects\": [{\"kind\": \"group\", \"name\": "
    "\"ml-team-b\"}, {\"kind\": \"email\", \"name\": \"CI@proj.example\"}], "
    "\"role\": \"member\", \"team\": \"team-b\"},"
    "{\"name\": \"b-again\", \"subjects\": [{\"kind\": \"subject\", \"name\": "
    "\"00u1\"}], \"role\": \"member\", \"team\": \"team-b\"},"
    "{\"name\": \"ops\", \"subjects\": [{\"kind\": \"subject\", \"name\": "
    "\"00u1\", \"issuer\": \"" IDP "\"}], \"role\": \"admin\", \"team\": null},"
    "{\"name\": \"fin\", \"subjects\": [{\"kind\": \"group\", \"name\": "
    "\"finance\"}], \"role\": \"finance\", \"team\": null},"
    "{\"name\": \"junk\", \"subjects\": [{\"kind\": \"user\", \"name\": "
    "\"x\"}], \"role\": \"admin\", \"team\": null}"
    "]";

static const struct {
  const char *what, *iss, *sub, *email;
  const char *groups[3];
  const char *want; /* "role:team,..." in binding order; "" for none */
} cases[] = {
    {"a group", IDP, "x", NULL, {"ml-team-a"}, "member:team-a"},
    {"two teams",
     IDP,
     "x",
     NULL,
     {"ml-team-b", "ml-team-a"},
     "member:team-a,member:team-b"},
    {"email, any case", IDP, "x", "ci@PROJ.example", {NULL}, "member:team-b"},
    {"an unverified email is not given", IDP, "x", NULL, {NULL}, ""},
    {"a subject, twice the same grant, and admin for its issuer",
     IDP,
     "00u1",
     NULL,
     {"ml-team-b"},
     "member:team-b,admin:"},
    /* a subject naming no issuer is the first issuer's (IDP) only */
    {"the same subject of another issuer",
     "https://other",
     "00u1",
     NULL,
     {NULL},
     ""},
    {"the same group of another issuer",
     "https://other",
     "x",
     NULL,
     {"ml-team-a", "finance"},
     ""},
    {"the same email of another issuer",
     "https://other",
     "x",
     "ci@proj.example",
     {NULL},
     ""},
    {"no issuer", NULL, "00u1", NULL, {"ml-team-a"}, ""},
    {"finance", IDP, "y", NULL, {"finance"}, "finance:"},
    {"nothing", IDP, "z", "z@example.com", {"nobody"}, ""},
    {"a group name is exact", IDP, "x", NULL, {"ML-TEAM-A"}, ""},
};

START_TEST(grants_table)
{
  struct bindings_identity id = {cases[_i].iss, cases[_i].sub, cases[_i].email,
                                 cases[_i].groups, 0};
  struct auth_grant g[AUTH_MAX_GRANTS];
  unsigned long gen = 0;
  char got[256] = "";
  int n, i;

  while (id.n_groups < 3 && cases[_i].groups[id.n_groups])
    id.n_groups++;
  bindings_set_first_issuer(IDP);
  bindings_set(json_loads(set, 0, NULL));
  ck_assert_uint_eq(bindings_count(), 5); /* "junk" matches nobody */
  n = bindings_grants(&id, g, AUTH_MAX_GRANTS, &gen);
  for (i = 0; i < n; i++)
    snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s:%s",
             i ? "," : "", auth_role_name(g[i].role), g[i].team);
  ck_assert_msg(!strcmp(got, cases[_i].want), "%s: \"%s\", want \"%s\"",
                cases[_i].what, got, cases[_i].want);
  ck_assert_uint_eq(gen, bindings_generation());
}
END_TEST

/* A reload advances the generation and replaces the grants whole. */
START_TEST(reload_replaces)
{
  const char *groups[] = {"ml-team-a"};
  struct bindings_identity id = {IDP, "x", NULL, groups, 1};
  struct auth_grant g[AUTH_MAX_GRANTS];
  unsigned long gen1, gen2;

  bindings_set_first_issuer(IDP);
  bindings_set(json_loads(set, 0, NULL));
  ck_assert_int_eq(bindings_grants(&id, g, AUTH_MAX_GRANTS, &gen1), 1);
  bindings_set(json_array());
  ck_assert_int_eq(bindings_grants(&id, g, AUTH_MAX_GRANTS, &gen2), 0);
  ck_assert_uint_gt(gen2, gen1);
}
END_TEST

/* Trusting no issuer, a subject naming none matches nothing; trusting a
 * different first issuer moves it there and advances the generation. */
START_TEST(first_issuer_decides)
{
  const char *groups[] = {"ml-team-a"};
  struct bindings_identity id = {IDP, "x", NULL, groups, 1};
  struct bindings_identity other = {"https://other", "x", NULL, groups, 1};
  struct auth_grant g[AUTH_MAX_GRANTS];
  unsigned long gen1, gen2;

  bindings_set(json_loads(set, 0, NULL));
  bindings_set_first_issuer(NULL);
  ck_assert_int_eq(bindings_grants(&id, g, AUTH_MAX_GRANTS, &gen1), 0);
  bindings_set_first_issuer("https://other");
  ck_assert_int_eq(bindings_grants(&id, g, AUTH_MAX_GRANTS, &gen2), 0);
  ck_assert_int_eq(bindings_grants(&other, g, AUTH_MAX_GRANTS, &gen2), 1);
  ck_assert_uint_gt(gen2, gen1);
  bindings_set_first_issuer(IDP);
}
END_TEST

static const struct {
  const char *claims, *path;
  const char *want; /* groups joined by "," */
} group_cases[] = {
    {"{\"groups\": [\"a\", \"b\"]}", "groups", "a,b"},
    {"{\"groups\": \"a\"}", "groups", "a"},
    {"{\"groups\": [\"a\", 1, null, \"b\"]}", "groups", "a,b"},
    {"{\"realm_access\": {\"roles\": [\"admin\"]}}", "realm_access.roles",
     "admin"},
    {"{\"realm_access\": [\"admin\"]}", "realm_access.roles", ""},
    {"{\"realm_access\": {\"roles\": {\"x\": 1}}}", "realm_access.roles", ""},
    {"{}", "groups", ""},
    {"{\"groups\": {}}", "groups", ""},
    {"{\"a\": {\"b\": {\"c\": [\"deep\"]}}}", "a.b.c", "deep"},
    {"{\"https://example.com/groups\": [\"x\"]}", "https://example.com/groups",
     ""}, /* dots split the path: such claims need a plain name */
};

START_TEST(groups_at_path)
{
  json_t *c = json_loads(group_cases[_i].claims, 0, NULL);
  const char *out[8];
  char got[128] = "";
  size_t n, i;

  ck_assert_ptr_nonnull(c);
  n = idp_groups(c, group_cases[_i].path, out, 8);
  for (i = 0; i < n; i++)
    snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? "," : "",
             out[i]);
  ck_assert_msg(!strcmp(got, group_cases[_i].want), "%s @ %s: \"%s\"",
                group_cases[_i].claims, group_cases[_i].path, got);
  json_decref(c);
}
END_TEST

static const struct {
  const char *issuer, *doc;
  const char *jwks; /* NULL: refused */
  bool groups_scope;
} discovery_cases[] = {
    {IDP,
     "{\"issuer\": \"" IDP "\", \"jwks_uri\": \"" IDP "/keys\", "
     "\"authorization_endpoint\": \"" IDP "/auth\", \"token_endpoint\": "
     "\"" IDP "/token\", \"scopes_supported\": [\"openid\", \"groups\"]}",
     IDP "/keys", true},
    {IDP, "{\"issuer\": \"" IDP "\", \"jwks_uri\": \"" IDP "/keys\"}",
     IDP "/keys", false},
    /* the trailing slash counts (coreos/go-oidc #203) */
    {IDP "/", "{\"issuer\": \"" IDP "\", \"jwks_uri\": \"" IDP "/k\"}", NULL,
     false},
    {IDP, "{\"issuer\": \"" IDP "/\", \"jwks_uri\": \"" IDP "/k\"}", NULL,
     false},
    {IDP, "{\"issuer\": \"https://evil.example\", \"jwks_uri\": \"" IDP "/k\"}",
     NULL, false},
    {IDP, "{\"issuer\": \"" IDP "\"}", NULL, false},
    {IDP, "{\"issuer\": \"" IDP "\", \"jwks_uri\": \"file:///etc/k\"}", NULL,
     false},
    {IDP, "{\"issuer\": \"" IDP "\", \"jwks_uri\": 7}", NULL, false},
    {IDP,
     "{\"issuer\": \"" IDP "\", \"jwks_uri\": \"" IDP "/k\", "
     "\"token_endpoint\": \"javascript:x\"}",
     NULL, false},
    {IDP, "[]", NULL, false},
    /* http:// only to this machine */
    {IDP,
     "{\"issuer\": \"" IDP "\", \"jwks_uri\": \"http://idp.example.com/k\"}",
     NULL, false},
    {IDP,
     "{\"issuer\": \"" IDP "\", \"jwks_uri\": \"" IDP "/k\", "
     "\"token_endpoint\": \"http://idp.example.com/token\"}",
     NULL, false},
    {IDP,
     "{\"issuer\": \"" IDP
     "\", \"jwks_uri\": \"http://127.0.0.1:80@evil.example/k\"}",
     NULL, false},
    {IDP,
     "{\"issuer\": \"" IDP
     "\", \"jwks_uri\": \"http://127.0.0.1.evil.example/k\"}",
     NULL, false},
    {IDP,
     "{\"issuer\": \"" IDP "\", \"jwks_uri\": \"http://127.0.0.1:8080/k\"}",
     "http://127.0.0.1:8080/k", false},
    {IDP, "{\"issuer\": \"" IDP "\", \"jwks_uri\": \"http://[::1]/k\"}",
     "http://[::1]/k", false},
    {IDP, "{\"issuer\": \"" IDP "\", \"jwks_uri\": \"http://localhost:9/k\"}",
     "http://localhost:9/k", false},
    {IDP, "{\"issuer\": \"" IDP "\", \"issuer\": \"" IDP "\"}", NULL, false},
};

START_TEST(discovery_documents)
{
  struct discovery_doc d;
  char err[128] = "";
  int rc =
      discovery_parse(discovery_cases[_i].issuer, discovery_cases[_i].doc,
                      strlen(discovery_cases[_i].doc), &d, err, sizeof(err));

  if (discovery_cases[_i].jwks) {
    ck_assert_msg(rc == 0, "case %d refused: %s", _i, err);
    ck_assert_str_eq(d.jwks_uri, discovery_cases[_i].jwks);
    ck_assert_int_eq(d.groups_scope, discovery_cases[_i].groups_scope);
  } else {
    ck_assert_msg(rc == -1 && err[0], "case %d accepted", _i);
  }
}
END_TEST

Suite *bindings_suite(void)
{
  Suite *s = suite_create("bindings");
  TCase *tc = tcase_create("bindings");

  tcase_add_loop_test(tc, grants_table, 0, N_OF(cases));
  tcase_add_test(tc, reload_replaces);
  tcase_add_test(tc, first_issuer_decides);
  tcase_add_loop_test(tc, groups_at_path, 0, N_OF(group_cases));
  tcase_add_loop_test(tc, discovery_documents, 0, N_OF(discovery_cases));
  suite_add_tcase(s, tc);
  return s;
}
