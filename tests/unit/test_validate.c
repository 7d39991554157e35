/*
 * test_validate.c — handlers/validate.c as tables of cases: object names,
 * one field table of this file's own covering every v_type (JSON in, the
 * normalised object or the exact list of field errors out), path
 * parameters, and list cursors.
 *
 * Errors are compared as one string, "field: message | field: message", in
 * the order they were recorded: unknown keys first (in input order), then
 * the table's fields in table order.
 */
#include <stdio.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "handlers/oci_ref.h"
#include "handlers/validate.h"
#include "lib/b64url.h"
#include "lib/cursor.h"
#include "server/problem.h"
#include "server/req.h"

Suite *validate_suite(void);

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

#define X16 "xxxxxxxxxxxxxxxx"
#define X63 X16 X16 X16 "xxxxxxxxxxxxxxx"
#define X64 X16 X16 X16 X16

/* The message of a bad V_NAME (and of v_path_name). */
#define NAME_MSG                                                               \
  "must be 1-63 characters of a-z, 0-9 and '-', starting and ending with "     \
  "a letter or digit"

/* ---------------------------------------------------------------- names */

static const struct {
  const char *s;
  bool ok;
} name_cases[] = {
    {"a", true},         {"a1", true},   {"0", true},
    {"123", true}, /* digits only */
    {"a-b", true},       {"a--b", true}, {"h100-spot", true},
    {"9-9", true},       {X63, true},    {X64, false},
    {"", false},         {"-", false},   {"-a", false},
    {"a-", false},       {"-a-", false}, {"A", false},
    {"aB", false},       {"a_b", false}, {"a.b", false},
    {"a b", false},      {"a/b", false}, {"a\tb", false},
    {"\xc3\xa9", false}, /* é */
};

START_TEST(is_name)
{
  ck_assert_msg(v_is_name(name_cases[_i].s) == name_cases[_i].ok,
                "v_is_name(\"%s\") is %d, want %d", name_cases[_i].s,
                !name_cases[_i].ok, name_cases[_i].ok);
}
END_TEST

/* --------------------------------------------------------- field tables */

static const char *const colors[] = {"red", "green", "blue", NULL};
static const char *const res_keys[] = {"cpu", "gpu", NULL};

static const struct v_field inner_fields[] = {
    {.key = "size", .type = V_INT, .min = 1, .max = 10, .dflt = "3"},
    {.key = "label", .type = V_STRING, .max = 8, .dflt = "\"none\""},
    {.key = NULL}};

static const struct v_field x_item[] = {{.type = V_INT, .min = 0, .max = 9}};
static const struct v_field y_item[] = {
    {.type = V_OBJECT, .fields = inner_fields}};
static const struct v_field quota_item[] = {
    {.type = V_NUMBER, .flags = V_NULLABLE, .min = 0, .max = 100}};

static const struct v_field fields[] = {
    {.key = "name", .type = V_NAME, .flags = V_REQUIRED},
    {.key = "title", .type = V_STRING, .max = 5, .dflt = "\"\""},
    {.key = "region", .type = V_REGION, .flags = V_NULLABLE, .dflt = "null"},
    {.key = "count", .type = V_INT, .min = -5, .max = 5, .dflt = "1"},
    {.key = "weight",
     .type = V_NUMBER,
     .flags = V_NULLABLE,
     .min = 0,
     .max = 1.5,
     .dflt = "0.5"},
    {.key = "enabled", .type = V_BOOL, .dflt = "true"},
    {.key = "color", .type = V_ENUM, .choices = colors, .dflt = "\"red\""},
    {.key = "inner", .type = V_OBJECT, .fields = inner_fields},
    {.key = "xs", .type = V_LIST, .min = 1, .max = 3, .fields = x_item},
    {.key = "ys", .type = V_LIST, .min = 0, .max = 2, .fields = y_item},
    {.key = "quota",
     .type = V_MAP,
     .min = 1,
     .fields = quota_item,
     .keys = res_keys},
    {.key = NULL}};

/* The output of {"name":"a"}: every default, in table order. */
#define DEFAULTS_OF(n)                                                         \
  "{\"name\":\"" n "\",\"title\":\"\",\"region\":null,\"count\":1,"            \
  "\"weight\":0.5,\"enabled\":true,\"color\":\"red\"}"

static const struct {
  const char *what;
  const char *prefix;
  const char *in;     /* JSON text (NUL characters allowed) */
  const char *out;    /* compact normalised object, or NULL */
  const char *errors; /* "field: message | ...", "" for none */
} obj_cases[] = {
    /* accepted: defaults, table order, types preserved */
    {"defaults", "", "{\"name\":\"a\"}", DEFAULTS_OF("a"), ""},
    {"everything, input in reverse order", "",
     "{\"quota\":{\"gpu\":2,\"cpu\":1.5},\"ys\":[{\"size\":10},{}],"
     "\"xs\":[0,9],\"inner\":{\"label\":\"x\"},\"color\":\"blue\","
     "\"enabled\":false,\"weight\":1.5,\"count\":-5,"
     "\"region\":\"us-central1\",\"title\":\"hello\",\"name\":\"z9\"}",
     "{\"name\":\"z9\",\"title\":\"hello\",\"region\":\"us-central1\","
     "\"count\":-5,\"weight\":1.5,\"enabled\":false,\"color\":\"blue\","
     "\"inner\":{\"size\":3,\"label\":\"x\"},\"xs\":[0,9],"
     "\"ys\":[{\"size\":10,\"label\":\"none\"},{\"size\":3,"
     "\"label\":\"none\"}],\"quota\":{\"cpu\":1.5,\"gpu\":2}}",
     ""},
    {"nested defaults", "", "{\"name\":\"a\",\"inner\":{}}",
     "{\"name\":\"a\",\"title\":\"\",\"region\":null,\"count\":1,"
     "\"weight\":0.5,\"enabled\":true,\"color\":\"red\","
     "\"inner\":{\"size\":3,\"label\":\"none\"}}",
     ""},
    {"nullable given null", "",
     "{\"name\":\"a\",\"weight\":null,\"region\":null}",
     "{\"name\":\"a\",\"title\":\"\",\"region\":null,\"count\":1,"
     "\"weight\":null,\"enabled\":true,\"color\":\"red\"}",
     ""},
    {"V_NUMBER keeps an integer", "", "{\"name\":\"a\",\"weight\":1}",
     "{\"name\":\"a\",\"title\":\"\",\"region\":null,\"count\":1,"
     "\"weight\":1,\"enabled\":true,\"color\":\"red\"}",
     ""},
    {"bounds are inclusive", "",
     "{\"name\":\"" X63 "\",\"count\":5,\"weight\":0,\"xs\":[1,2,3],"
     "\"ys\":[],\"title\":\"h\xc3\xa9ll\",\"region\":\"europe-west4\"}",
     "{\"name\":\"" X63 "\",\"title\":\"h\xc3\xa9ll\","
     "\"region\":\"europe-west4\",\"count\":5,\"weight\":0,"
     "\"enabled\":true,\"color\":\"red\",\"xs\":[1,2,3],\"ys\":[]}",
     ""},
    {"map with a null item", "", "{\"name\":\"a\",\"quota\":{\"cpu\":null}}",
     "{\"name\":\"a\",\"title\":\"\",\"region\":null,\"count\":1,"
     "\"weight\":0.5,\"enabled\":true,\"color\":\"red\","
     "\"quota\":{\"cpu\":null}}",
     ""},
    {"prefix does not change the output", "spec", "{\"name\":\"b\"}",
     DEFAULTS_OF("b"), ""},

    /* not an object */
    {"array body", "", "[]", NULL, "body: must be an object, not an array"},
    {"null body", "", "null", NULL, "body: must be an object, not null"},
    {"string body", "", "\"x\"", NULL, "body: must be an object, not a string"},
    {"prefixed non-object", "spec", "7", NULL,
     "spec: must be an object, not a number"},

    /* required, unknown, null */
    {"required missing", "", "{}", NULL, "name: is required"},
    {"required missing, prefixed", "spec", "{}", NULL,
     "spec.name: is required"},
    {"required null", "", "{\"name\":null}", NULL, "name: must not be null"},
    {"unknown fields in input order", "",
     "{\"zz\":1,\"name\":\"a\",\"Name\":2}", NULL,
     "zz: unknown field | Name: unknown field"},
    {"unknown field, prefixed", "spec", "{\"name\":\"a\",\"x\":1}", NULL,
     "spec.x: unknown field"},
    {"non-nullable null", "", "{\"name\":\"a\",\"count\":null}", NULL,
     "count: must not be null"},
    {"all mistakes at once", "",
     "{\"bogus\":1,\"count\":9,\"color\":\"x\",\"enabled\":null}", NULL,
     "bogus: unknown field | name: is required | "
     "count: must be between -5 and 5 | enabled: must not be null | "
     "color: must be one of: red, green, blue"},

    /* V_NAME */
    {"name uppercase", "", "{\"name\":\"A\"}", NULL, "name: " NAME_MSG},
    {"name 64", "", "{\"name\":\"" X64 "\"}", NULL, "name: " NAME_MSG},
    {"name leading -", "", "{\"name\":\"-a\"}", NULL, "name: " NAME_MSG},
    {"name empty", "", "{\"name\":\"\"}", NULL, "name: " NAME_MSG},
    {"name a number", "", "{\"name\":5}", NULL,
     "name: must be a string, not a number"},

    /* V_STRING */
    {"string too long", "", "{\"name\":\"a\",\"title\":\"hello!\"}", NULL,
     "title: must be at most 5 bytes long"},
    {"string bytes, not characters", "",
     "{\"name\":\"a\",\"title\":\"h\xc3\xa9llo\"}", NULL,
     "title: must be at most 5 bytes long"},
    {"string with NUL", "", "{\"name\":\"a\",\"title\":\"a\\u0000b\"}", NULL,
     "title: must not contain NUL characters"},
    {"string an array", "", "{\"name\":\"a\",\"title\":[]}", NULL,
     "title: must be a string, not an array"},

    /* V_REGION */
    {"region too short", "", "{\"name\":\"a\",\"region\":\"us\"}", NULL,
     "region: must be a region such as \"us-central1\""},
    {"region without digit", "", "{\"name\":\"a\",\"region\":\"us-central\"}",
     NULL, "region: must be a region such as \"us-central1\""},
    {"region without dash", "", "{\"name\":\"a\",\"region\":\"uscentral1\"}",
     NULL, "region: must be a region such as \"us-central1\""},
    {"region uppercase", "", "{\"name\":\"a\",\"region\":\"US-central1\"}",
     NULL, "region: must be a region such as \"us-central1\""},
    {"region starts with digit", "",
     "{\"name\":\"a\",\"region\":\"1us-central1\"}", NULL,
     "region: must be a region such as \"us-central1\""},

    /* V_INT */
    {"int above", "", "{\"name\":\"a\",\"count\":6}", NULL,
     "count: must be between -5 and 5"},
    {"int below", "", "{\"name\":\"a\",\"count\":-6}", NULL,
     "count: must be between -5 and 5"},
    {"int fraction", "", "{\"name\":\"a\",\"count\":1.5}", NULL,
     "count: must be an integer, not a fraction"},
    {"int written as real", "", "{\"name\":\"a\",\"count\":1.0}", NULL,
     "count: must be an integer, not a fraction"},
    {"int a string", "", "{\"name\":\"a\",\"count\":\"1\"}", NULL,
     "count: must be an integer, not a string"},
    {"int a boolean", "", "{\"name\":\"a\",\"count\":true}", NULL,
     "count: must be an integer, not a boolean"},
    {"int huge", "", "{\"name\":\"a\",\"count\":9223372036854775807}", NULL,
     "count: must be between -5 and 5"},

    /* V_NUMBER */
    {"number above", "", "{\"name\":\"a\",\"weight\":1.6}", NULL,
     "weight: must be between 0 and 1.5"},
    {"number below", "", "{\"name\":\"a\",\"weight\":-0.1}", NULL,
     "weight: must be between 0 and 1.5"},
    {"number integer above", "", "{\"name\":\"a\",\"weight\":2}", NULL,
     "weight: must be between 0 and 1.5"},
    {"number a string", "", "{\"name\":\"a\",\"weight\":\"1\"}", NULL,
     "weight: must be a number, not a string"},

    /* V_BOOL */
    {"bool a string", "", "{\"name\":\"a\",\"enabled\":\"true\"}", NULL,
     "enabled: must be true or false, not a string"},
    {"bool a number", "", "{\"name\":\"a\",\"enabled\":0}", NULL,
     "enabled: must be true or false, not a number"},

    /* V_ENUM */
    {"enum unknown", "", "{\"name\":\"a\",\"color\":\"purple\"}", NULL,
     "color: must be one of: red, green, blue"},
    {"enum case-sensitive", "", "{\"name\":\"a\",\"color\":\"RED\"}", NULL,
     "color: must be one of: red, green, blue"},
    {"enum a number", "", "{\"name\":\"a\",\"color\":1}", NULL,
     "color: must be a string, not a number"},

    /* V_OBJECT */
    {"nested errors by path", "",
     "{\"name\":\"a\",\"inner\":{\"size\":11,\"bogus\":true}}", NULL,
     "inner.bogus: unknown field | inner.size: must be between 1 and 10"},
    {"nested, prefixed", "spec", "{\"name\":\"a\",\"inner\":{\"size\":0}}",
     NULL, "spec.inner.size: must be between 1 and 10"},
    {"nested not an object", "", "{\"name\":\"a\",\"inner\":[]}", NULL,
     "inner: must be an object, not an array"},
    {"nested null", "", "{\"name\":\"a\",\"inner\":null}", NULL,
     "inner: must not be null"},

    /* V_LIST */
    {"list empty below min", "", "{\"name\":\"a\",\"xs\":[]}", NULL,
     "xs: must have 1 to 3 items, not 0"},
    {"list above max", "", "{\"name\":\"a\",\"xs\":[1,2,3,4]}", NULL,
     "xs: must have 1 to 3 items, not 4"},
    {"list item error", "", "{\"name\":\"a\",\"xs\":[1,2,10]}", NULL,
     "xs[2]: must be between 0 and 9"},
    {"list item errors", "", "{\"name\":\"a\",\"xs\":[\"a\",1,1.5]}", NULL,
     "xs[0]: must be an integer, not a string | "
     "xs[2]: must be an integer, not a fraction"},
    {"list null item", "", "{\"name\":\"a\",\"xs\":[null]}", NULL,
     "xs[0]: must not be null"},
    {"list not an array", "", "{\"name\":\"a\",\"xs\":{}}", NULL,
     "xs: must be an array, not an object"},
    {"list of objects", "",
     "{\"name\":\"a\",\"ys\":[{\"size\":1},{\"size\":0,\"x\":1}]}", NULL,
     "ys[1].x: unknown field | ys[1].size: must be between 1 and 10"},
    {"list of objects, prefixed", "spec",
     "{\"name\":\"a\",\"ys\":[{},{\"label\":\"123456789\"}]}", NULL,
     "spec.ys[1].label: must be at most 8 bytes long"},

    /* V_MAP */
    {"map unknown key", "", "{\"name\":\"a\",\"quota\":{\"gpu\":1,\"tpu\":2}}",
     NULL, "quota.tpu: unknown key"},
    {"map unknown key hides item errors", "",
     "{\"name\":\"a\",\"quota\":{\"gpu\":-1,\"tpu\":2}}", NULL,
     "quota.tpu: unknown key"},
    {"map below min", "", "{\"name\":\"a\",\"quota\":{}}", NULL,
     "quota: must have at least 1 keys"},
    {"map item error", "", "{\"name\":\"a\",\"quota\":{\"gpu\":101}}", NULL,
     "quota.gpu: must be between 0 and 100"},
    {"map not an object", "", "{\"name\":\"a\",\"quota\":5}", NULL,
     "quota: must be an object, not a number"},
    {"map, prefixed", "spec", "{\"name\":\"a\",\"quota\":{\"cpu\":\"1\"}}",
     NULL, "spec.quota.cpu: must be a number, not a string"},
};

/* req.err.fields as "field: message | field: message". */
static void errors_text(const struct gg_req *req, char *out, size_t outlen)
{
  json_t *e;
  size_t i, used = 0;

  out[0] = '\0';
  json_array_foreach (req->err.fields, i, e) {
    int w;
    ck_assert_uint_eq(json_object_size(e), 2);
    w = snprintf(out + used, outlen - used, "%s%s: %s", i ? " | " : "",
                 json_string_value(json_object_get(e, "field")),
                 json_string_value(json_object_get(e, "message")));
    ck_assert(w > 0 && (size_t)w < outlen - used);
    used += (size_t)w;
  }
}

START_TEST(object)
{
  struct gg_req req;
  json_error_t jerr;
  json_t *in, *out;
  char *dump = NULL, errs[1024];
  size_t refs;

  req_init(&req, NULL);
  in = json_loads(obj_cases[_i].in, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
  ck_assert_msg(in != NULL, "case \"%s\": bad input: %s", obj_cases[_i].what,
                jerr.text);
  refs = in->refcount;
  out = v_object(&req, obj_cases[_i].prefix, in, fields);
  errors_text(&req, errs, sizeof(errs));
  if (out)
    dump = json_dumps(out, GG_JSON_DUMP);
  ck_assert_msg(!strcmp(errs, obj_cases[_i].errors),
                "case \"%s\": errors\n  \"%s\", want\n  \"%s\"",
                obj_cases[_i].what, errs, obj_cases[_i].errors);
  ck_assert_msg((dump == NULL) == (obj_cases[_i].out == NULL) &&
                    (!dump || !strcmp(dump, obj_cases[_i].out)),
                "case \"%s\": output\n  %s, want\n  %s", obj_cases[_i].what,
                dump ? dump : "NULL",
                obj_cases[_i].out ? obj_cases[_i].out : "NULL");
  /* NULL exactly when something was recorded; in stays borrowed */
  ck_assert_msg((out == NULL) == (problem_nfields(&req) > 0),
                "case \"%s\": output %p with %zu errors", obj_cases[_i].what,
                (void *)out, problem_nfields(&req));
  ck_assert_uint_eq(in->refcount, refs);
  ck_assert_int_eq(req.err.code, GG_OK); /* fields only; the caller fails */
  free(dump);
  json_decref(out);
  json_decref(in);
  req_cleanup(&req);
}
END_TEST

/* Two v_object calls on one request accumulate their errors. */
START_TEST(object_accumulates)
{
  struct gg_req req;
  json_t *a = json_pack("{s:i}", "count", 9);
  json_t *b = json_pack("{s:s}", "name", "B");
  char errs[512];

  req_init(&req, NULL);
  ck_assert_ptr_null(v_object(&req, "first", a, fields));
  ck_assert_ptr_null(v_object(&req, "second", b, fields));
  errors_text(&req, errs, sizeof(errs));
  ck_assert_str_eq(errs, "first.name: is required | "
                         "first.count: must be between -5 and 5 | "
                         "second.name: " NAME_MSG);
  json_decref(a);
  json_decref(b);
  req_cleanup(&req);
}
END_TEST

/* ---------------------------------------------------------- path names */

static const struct {
  const char *param; /* parameter asked for */
  const char *value; /* value of parameter "name", or NULL: no parameter */
  bool ok;
  const char *errors; /* as in obj_cases */
} path_cases[] = {
    {"name", "a100", true, ""},
    {"name", X63, true, ""},
    {"name", "A100", false, "name: " NAME_MSG},
    {"name", "-a", false, "name: " NAME_MSG},
    {"name", "", false, "name: " NAME_MSG},
    {"name", NULL, false, "name: " NAME_MSG},
    {"team", "a100", false, "team: " NAME_MSG}, /* only "name" is set */
};

START_TEST(path_name)
{
  struct gg_req req;
  char errs[512];
  bool ok;

  req_init(&req, NULL);
  if (path_cases[_i].value) {
    req.param_names[0] = "name";
    snprintf(req.param_values[0], sizeof(req.param_values[0]), "%s",
             path_cases[_i].value);
    req.n_params = 1;
  }
  ok = v_path_name(&req, path_cases[_i].param);
  errors_text(&req, errs, sizeof(errs));
  ck_assert_msg(ok == path_cases[_i].ok && !strcmp(errs, path_cases[_i].errors),
                "v_path_name(%s) with name=%s: %d \"%s\", want %d \"%s\"",
                path_cases[_i].param,
                path_cases[_i].value ? path_cases[_i].value : "(none)", ok,
                errs, path_cases[_i].ok, path_cases[_i].errors);
  req_cleanup(&req);
}
END_TEST

/* -------------------------------------------------------------- cursors */

static void base64url_of(const char *s, char *out, size_t cap)
{
  if (!b64url_encode((const unsigned char *)s, strlen(s), out, cap) && cap)
    out[0] = '\0';
}

static const unsigned char key_a[CURSOR_KEY_LEN] =
    "0123456789abcdef0123456789abcdef";
static const unsigned char key_b[CURSOR_KEY_LEN] =
    "0123456789abcdef0123456789abcdeF";
static const unsigned char iv0[12] = "iv-of-12-byt";

#define SCOPE_A "/v1/teams/team-a/jobs?state=PENDING&"

static const char *const positions[] = {"1",    "42",     "9223372036854775807",
                                        "a100", "team-1", X63};

/* Sealed positions open again, for the same key and list only; the cursor
 * shows nothing of the position. */
START_TEST(cursor_round_trip)
{
  char c[V_CURSOR_MAX], pos[130], plain[200];
  const char *p = positions[_i];

  ck_assert_int_eq(cursor_seal(key_a, SCOPE_A, p, iv0, c, sizeof(c)), 0);
  ck_assert_uint_le(strlen(c), CURSOR_MAX);
  ck_assert_int_eq(cursor_open(key_a, SCOPE_A, c, pos, sizeof(pos)), 0);
  ck_assert_str_eq(pos, p);
  /* neither the position nor its base64 appears in the cursor */
  ck_assert_ptr_null(strstr(c, p));
  base64url_of(p, plain, sizeof(plain));
  ck_assert_ptr_null(strstr(c, plain));
  /* another key, another list, another filter, another team */
  ck_assert_int_eq(cursor_open(key_b, SCOPE_A, c, pos, sizeof(pos)), -1);
  ck_assert_int_eq(cursor_open(key_a, "/v1/teams/team-b/jobs?state=PENDING&", c,
                               pos, sizeof(pos)),
                   -1);
  ck_assert_int_eq(cursor_open(key_a, "/v1/teams/team-a/jobs?state=RUNNING&", c,
                               pos, sizeof(pos)),
                   -1);
  ck_assert_int_eq(cursor_open(key_a, "/v1/flavors?", c, pos, sizeof(pos)), -1);
}
END_TEST

/* Every single-character change of a cursor is refused. */
START_TEST(cursor_tampered)
{
  static const char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  char c[V_CURSOR_MAX], t[V_CURSOR_MAX + 8], pos[130];
  size_t i, n, k;

  ck_assert_int_eq(cursor_seal(key_a, SCOPE_A, "12345", iv0, c, sizeof(c)), 0);
  n = strlen(c);
  for (i = 0; i < n; i++)
    for (k = 0; k < sizeof(alphabet) - 1; k += 7) {
      memcpy(t, c, n + 1);
      if (t[i] == alphabet[k])
        continue;
      t[i] = alphabet[k];
      /* the last character may carry only padding bits: same bytes */
      if (i == n - 1 && cursor_open(key_a, SCOPE_A, t, pos, sizeof(pos)) == 0)
        ck_assert_str_eq(pos, "12345");
      else
        ck_assert_msg(cursor_open(key_a, SCOPE_A, t, pos, sizeof(pos)) == -1,
                      "tampered cursor %s opened", t);
    }
  /* truncated, extended */
  for (i = 0; i < n; i++) {
    memcpy(t, c, i);
    t[i] = '\0';
    ck_assert_int_eq(cursor_open(key_a, SCOPE_A, t, pos, sizeof(pos)), -1);
  }
  snprintf(t, sizeof(t), "%sAAAA", c);
  ck_assert_int_eq(cursor_open(key_a, SCOPE_A, t, pos, sizeof(pos)), -1);
}
END_TEST

/* What cursors used to be, and junk: never a position. */
static const char *const junk_cursors[] = {
    "",
    "MTIzNDU", /* base64 of "12345": the old plain cursors */
    "YTEwMA",
    "!!!!",
    "a",
    "AQ",
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
};

START_TEST(cursor_junk)
{
  char pos[130];

  ck_assert_int_eq(
      cursor_open(key_a, SCOPE_A, junk_cursors[_i], pos, sizeof(pos)), -1);
}
END_TEST

/* Without a connection there is no query string: the first page of 50. */
START_TEST(page_defaults)
{
  struct gg_req req;
  char after[128];
  int limit = 0;

  req_init(&req, NULL);
  memcpy(after, "junk", sizeof("junk"));
  ck_assert(v_page(&req, &limit, after, sizeof(after)));
  ck_assert_int_eq(limit, 50);
  ck_assert_str_eq(after, "");
  ck_assert_uint_eq(problem_nfields(&req), 0);
  req_cleanup(&req);
}
END_TEST

/* ---------------------------------------------------- image references */

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define C50 "ccccccccccccccccccccccccccccccccccccccccccccccccc"

static const struct {
  const char *ref;
  bool ok;
} image_cases[] = {
    /* README's, the tests' and common real-world references */
    {"us-docker.pkg.dev/p/r/trainer:1.2", true},
    {"us-docker.pkg.dev/p/r/work:1", true},
    {"us-docker.pkg.dev/p/r/evaluator:1.0", true},
    {"i", true},
    {"ubuntu", true},
    {"ubuntu:22.04", true},
    {"library/ubuntu:latest", true},
    {"nvcr.io/nvidia/pytorch:24.01-py3", true},
    {"gcr.io/deeplearning-platform-release/pytorch-gpu.2-1", true},
    {"localhost/app", true},
    {"localhost:5000/team/app:v1", true},
    {"registry.example.com:443/a/b/c", true},
    {"[::1]:5000/app:dev", true},
    {"10.0.0.1:5000/app", true},
    {"a__b/c_d/e.f/g--h---i:TAG_1.x-y", true},
    {"app@sha256:" HEX64, true},
    {"us-docker.pkg.dev/p/r/t:1.2@sha256:" HEX64, true},
    {"app@sha512+b64u.x-y_z:" HEX64, true},
    {"a:_tag", true},
    /* hostile or malformed */
    {"'; DROP TABLE jobs;--", false},
    {"../../etc/passwd", false},
    {"<script>", false},
    {"<script>alert(1)</script>", false},
    {"", false},
    {"/app", false},
    {"app/", false},
    {"a//b", false},
    {"Ubuntu", false}, /* path components are lower case */
    {"docker.io/Library/x", false},
    {"app:", false},
    {"app:-tag", false}, /* a tag starts with a word character */
    {"app:.tag", false},
    {"app:t@g", false},
    {"app@sha256:abc", false}, /* digest too short */
    {"app@sha256:" HEX64 "g", false},
    {"app@:" HEX64, false},
    {"app@1sha:" HEX64, false},
    {"app@sha256", false},
    {"a..b", false},
    {"a._b", false},
    {"a___b", false},
    {"-a", false},
    {"a-", false},
    {"a b", false},
    {"a\tb", false},
    {"a\nb", false},
    {"host:99999999/app", false}, /* port of more than 5 digits */
    {"host:/app", false},
    {"-host.io/app", false},
    {"ho_st.io/app", false},
    {"[zz]:5000/app", false},
    {"app:" C50 C50 C50, false},           /* tag of 147 > 128 */
    {"x/" C50 C50 C50 C50 C50 C50, false}, /* name of 296 > 255 */
    {"$(id)", false},
    {"`id`", false},
    {"app;rm -rf /", false},
};

START_TEST(image_reference)
{
  ck_assert_msg(oci_ref_valid(image_cases[_i].ref) == image_cases[_i].ok,
                "oci_ref_valid(\"%s\") is %d, want %d", image_cases[_i].ref,
                !image_cases[_i].ok, image_cases[_i].ok);
}
END_TEST

/* The validate suite: names, field tables, path names, cursors. */
Suite *validate_suite(void)
{
  Suite *s = suite_create("validate");
  TCase *tc = tcase_create("validate");

  tcase_add_loop_test(tc, is_name, 0, N_OF(name_cases));
  tcase_add_loop_test(tc, object, 0, N_OF(obj_cases));
  tcase_add_test(tc, object_accumulates);
  tcase_add_loop_test(tc, path_name, 0, N_OF(path_cases));
  tcase_add_loop_test(tc, cursor_round_trip, 0, N_OF(positions));
  tcase_add_test(tc, cursor_tampered);
  tcase_add_loop_test(tc, cursor_junk, 0, N_OF(junk_cursors));
  tcase_add_test(tc, page_defaults);
  tcase_add_loop_test(tc, image_reference, 0, N_OF(image_cases));
  suite_add_tcase(s, tc);
  return s;
}
