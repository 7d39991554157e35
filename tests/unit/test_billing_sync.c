/*
 * test_billing_sync.c — the BigQuery pull's pure parts, as tables: which
 * usage days a sync re-reads given the export's per-day figures and the
 * stored ones (billing_sync_plan), and the configuration of the pull
 * (GPUGATE_BILLING_BIGQUERY_*, GPUGATE_BIGQUERY_ENDPOINT,
 * GPUGATE_BILLING_SYNC_INTERVAL_S, GPUGATE_BILLING_REREAD_DAYS).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcp/bq_page.h"
#include "control/billing_sync.h"
#include "server/config.h"

/* ---- a query reply's rows, read in place ------------------------------- */

/* Cells joined: "a|b" per row, rows joined by ";", null cells as "~". */
static int join_cells(void *ctx, const char *const *cells, size_t n, char *err,
                      size_t errlen)
{
  char *out = ctx; /* 256 bytes */
  size_t i, len = strlen(out);

  (void)err;
  (void)errlen;
  for (i = 0; i < n && len < 256; i++) {
    snprintf(out + len, 256 - len, "%s%s",
             i      ? "|"
             : *out ? ";"
                    : "",
             cells[i] ? cells[i] : "~");
    len += strlen(out + len);
  }
  return 0;
}

static const struct {
  const char *reply; /* a whole jobs.query / getQueryResults reply */
  const char *cells; /* NULL: refused */
  const char *token; /* its pageToken, "" when none */
} page_cases[] = {
    /* rows and the rest, in any order */
    {"{\"kind\":\"bigquery#getQueryResultsResponse\",\"rows\":[{\"f\":[{\"v\":"
     "\"2026-08-01\"},{\"v\":\"24\"}]},{\"f\":[{\"v\":\"2026-08-02\"},{\"v\":"
     "null}]}],\"pageToken\":\"p2\",\"jobComplete\":true}",
     "2026-08-01|24;2026-08-02|~", "p2"},
    {"{\"pageToken\":\"x\", \"rows\" : [ { \"f\" : [ { \"v\" : \"a\" } ] } ] }",
     "a", "x"},
    /* escapes: quotes, backslashes, \u00e9, a surrogate pair (U+1F600) */
    {"{\"rows\":[{\"f\":[{\"v\":\"{\\\"k\\\":\\\"a\\\\\\\\b\\\"}\"}]}]}",
     "{\"k\":\"a\\\\b\"}", ""},
    {"{\"rows\":[{\"f\":[{\"v\":\"caf\\u00e9 \\ud83d\\ude00\\n\"}]}]}",
     "caf\xc3\xa9 \xf0\x9f\x98\x80\n", ""},
    /* a string ending in an escaped backslash; an empty string */
    {"{\"rows\":[{\"f\":[{\"v\":\"x\\\\\"},{\"v\":\"\"},{\"v\":\"y\"}]}]}",
     "x\\||y", ""},
    /* long runs between escapes, a quote and a backslash at every offset
     * of a sixteen-byte block, escapes back to back */
    {"{\"rows\":[{\"f\":[{\"v\":\"0123456789abcdef0123456789\\\"x\\\\"
     "0123456789abcde\\\"0123456789abcd\\\\\\\"\\n\"},{\"v\":"
     "\"0123456789abcdef0123456789abcdef\"}]}]}",
     "0123456789abcdef0123456789\"x\\0123456789abcde\"0123456789abcd\\\"\n|"
     "0123456789abcdef0123456789abcdef",
     ""},
    {"{\"rows\":[{\"f\":[{\"v\":\"0123456789abcdef0123456789abcdef0123\"}]}]}",
     "0123456789abcdef0123456789abcdef0123", ""},
    {"{\"rows\":[{\"f\":[{\"v\":\"0123456789abcdef0123456789abcdef0123}]}]}",
     NULL, ""},
    /* no rows, empty rows, other keys in a row or a cell skipped */
    {"{\"jobComplete\":false,\"jobReference\":{\"jobId\":\"j\"}}", "", ""},
    {"{\"rows\":[]}", "", ""},
    {"{\"rows\":[{\"x\":{\"a\":[1,\"]\"]},\"f\":[{\"v\":\"1\",\"w\":[]}]}]}",
     "1", ""},
    /* malformed */
    {"{\"rows\":[{\"f\":[{\"v\":\"unterminated}]}]}", NULL, ""},
    {"{\"rows\":[{\"f\":[{\"v\":\"bad \\q escape\"}]}]}", NULL, ""},
    {"{\"rows\":[{\"f\":[{\"v\":\"lone \\udc00\"}]}]}", NULL, ""},
    {"{\"rows\":[{\"f\":[{\"v\":\"a\"}]},]}", NULL, ""},
    {"[1,2]", NULL, ""},
    {"{\"rows\":[{\"f\":[{\"v\":\"a\"}]}]", NULL, ""},
};

START_TEST(page_table)
{
  char out[256] = "", err[128] = "";
  const char *rows, *token;
  size_t rows_len;
  struct bq_scratch scratch = {NULL, 0};
  json_t *doc = NULL;
  int rc;

  rc = bq_page_split(page_cases[_i].reply, strlen(page_cases[_i].reply), &doc,
                     &rows, &rows_len);
  if (rc == 0)
    rc = bq_page_rows(rows, rows_len, &scratch, join_cells, out, err,
                      sizeof(err));
  if (!page_cases[_i].cells) {
    ck_assert_msg(rc != 0, "case %d accepted: %s", _i, out);
  } else {
    ck_assert_msg(rc == 0, "case %d refused: %s", _i, err);
    ck_assert_str_eq(out, page_cases[_i].cells);
    token = json_string_value(json_object_get(doc, "pageToken"));
    ck_assert_str_eq(token ? token : "", page_cases[_i].token);
    ck_assert(json_is_null(json_object_get(doc, "rows")) ||
              !json_object_get(doc, "rows"));
  }
  json_decref(doc);
  free(scratch.p);
}
END_TEST

/* ---- the same, against Jansson's own escaping, on random strings ------
 *
 * Cells of random text heavy in quotes and backslashes (the sixteen-byte
 * paths of bq_page.c take blocks of plain bytes and \" pairs in one go,
 * and any other block byte by byte), written by json_dumps and read back:
 * every cell must come back byte for byte, with the reply's other keys on
 * both sides of "rows". */

#define RAND_ROWS 6
#define RAND_CELLS 3

struct rand_want {
  char cell[RAND_ROWS][RAND_CELLS][200];
  size_t row, bad;
};

static int check_cells(void *ctx, const char *const *cells, size_t n, char *err,
                       size_t errlen)
{
  struct rand_want *w = ctx;
  size_t i;

  (void)err;
  (void)errlen;
  if (w->row >= RAND_ROWS || n != RAND_CELLS) {
    w->bad++;
    return 0;
  }
  for (i = 0; i < n; i++)
    if (!cells[i] || strcmp(cells[i], w->cell[w->row][i]) != 0)
      w->bad++;
  w->row++;
  return 0;
}

START_TEST(page_random)
{
  static const char *const bits[] = {"a", "b",  "\"",         "\\",
                                     "/", "\n", "\x01",       "\xc3\xa9",
                                     "{", ":",  "0123456789", "\\\""};
  unsigned seed = 0x9e3779b9u * (unsigned)(_i + 1);
  struct rand_want w;
  struct bq_scratch scratch = {NULL, 0};
  json_t *reply = json_object(), *rows = json_array(), *doc = NULL;
  const char *text;
  char *body, err[128] = "";
  size_t r, c, rows_len;
  int rc;

  memset(&w, 0, sizeof(w));
  for (r = 0; r < RAND_ROWS; r++) {
    json_t *f = json_array();
    for (c = 0; c < RAND_CELLS; c++) {
      size_t len = 0;
      seed = seed * 1103515245u + 12345u;
      size_t want = (seed >> 16) % 90;
      while (len < want) {
        const char *b;
        seed = seed * 1103515245u + 12345u;
        /* mostly \" pairs and letters, as a row's JSON is */
        b = bits[(seed >> 16) % 8 < 3 ? 2 : (seed >> 20) % 12];
        if (len + strlen(b) >= sizeof(w.cell[r][c]))
          break;
        memcpy(w.cell[r][c] + len, b, strlen(b));
        len += strlen(b);
      }
      json_array_append_new(f, json_pack("{s:s}", "v", w.cell[r][c]));
    }
    json_array_append_new(rows, json_pack("{s:o}", "f", f));
  }
  json_object_set_new(reply, "kind", json_string("bigquery#queryResponse"));
  json_object_set_new(reply, "rows", rows);
  json_object_set_new(reply, "pageToken", json_string("\"p\\2\""));
  body = json_dumps(reply, JSON_COMPACT | JSON_PRESERVE_ORDER);
  ck_assert_ptr_nonnull(body);
  rc = bq_page_split(body, strlen(body), &doc, &text, &rows_len);
  ck_assert_msg(rc == 0, "seed %d: split refused", _i);
  rc =
      bq_page_rows(text, rows_len, &scratch, check_cells, &w, err, sizeof(err));
  ck_assert_msg(rc == 0, "seed %d: %s", _i, err);
  ck_assert_msg(w.row == RAND_ROWS && w.bad == 0,
                "seed %d: %zu rows, %zu cells differ", _i, w.row, w.bad);
  ck_assert_str_eq(json_string_value(json_object_get(doc, "pageToken")),
                   "\"p\\2\"");
  json_decref(doc);
  json_decref(reply);
  free(body);
  free(scratch.p);
}
END_TEST

Suite *billing_sync_suite(void);

#define MAXD 6
#define T1 "2026-10-02T04:00:00.000000Z"
#define T2 "2026-10-02T05:00:00.000000Z"

struct plan_case {
  const char *name;
  struct billing_day_figures remote[MAXD], stored[MAXD];
  size_t nr, ns;
  const char
      *want; /* the days re-read, "day[-]" each ('-': gone), ' '-separated */
};

static const struct plan_case plan_cases[] = {
    {"first sync: every day",
     {{"2026-10-01", T1, 3, "", "", ""}, {"2026-10-02", T1, 4, "", "", ""}},
     {{"", "", 0, "", "", ""}},
     2,
     0,
     "2026-10-01 2026-10-02"},
    {"nothing changed",
     {{"2026-10-01", T1, 3, "", "", ""}, {"2026-10-02", T1, 4, "", "", ""}},
     {{"2026-10-01", T1, 3, "", "", ""}, {"2026-10-02", T1, 4, "", "", ""}},
     2,
     2,
     ""},
    {"export_time moved",
     {{"2026-10-01", T1, 3, "", "", ""}, {"2026-10-02", T2, 4, "", "", ""}},
     {{"2026-10-01", T1, 3, "", "", ""}, {"2026-10-02", T1, 4, "", "", ""}},
     2,
     2,
     "2026-10-02"},
    {"a late row, same export_time",
     {{"2026-10-01", T1, 4, "", "", ""}},
     {{"2026-10-01", T1, 3, "", "", ""}},
     1,
     1,
     "2026-10-01"},
    {"a row fewer",
     {{"2026-10-01", T1, 2, "", "", ""}},
     {{"2026-10-01", T1, 3, "", "", ""}},
     1,
     1,
     "2026-10-01"},
    {"a new day after the stored ones",
     {{"2026-10-01", T1, 3, "", "", ""}, {"2026-10-02", T1, 1, "", "", ""}},
     {{"2026-10-01", T1, 3, "", "", ""}},
     2,
     1,
     "2026-10-02"},
    {"a new day between stored ones",
     {{"2026-10-01", T1, 3, "", "", ""},
      {"2026-10-02", T1, 1, "", "", ""},
      {"2026-10-03", T1, 5, "", "", ""}},
     {{"2026-10-01", T1, 3, "", "", ""}, {"2026-10-03", T1, 5, "", "", ""}},
     3,
     2,
     "2026-10-02"},
    {"a day gone from the export",
     {{"2026-10-01", T1, 3, "", "", ""}, {"2026-10-03", T1, 5, "", "", ""}},
     {{"2026-10-01", T1, 3, "", "", ""},
      {"2026-10-02", T1, 2, "", "", ""},
      {"2026-10-03", T1, 5, "", "", ""}},
     2,
     3,
     "2026-10-02-"},
    {"a day gone and already emptied",
     {{"2026-10-01", T1, 3, "", "", ""}},
     {{"2026-10-01", T1, 3, "", "", ""}, {"2026-10-02", "", 0, "", "", ""}},
     1,
     2,
     ""},
    {"the export is empty",
     {{"", "", 0, "", "", ""}},
     {{"2026-10-01", T1, 3, "", "", ""}, {"2026-10-02", T1, 2, "", "", ""}},
     0,
     2,
     "2026-10-01- 2026-10-02-"},
    {"both empty",
     {{"", "", 0, "", "", ""}},
     {{"", "", 0, "", "", ""}},
     0,
     0,
     ""},
    {"every kind at once",
     {{"2026-09-30", T1, 1, "", "", ""},
      {"2026-10-01", T2, 3, "", "", ""},
      {"2026-10-02", T1, 2, "", "", ""},
      {"2026-10-04", T1, 7, "", "", ""}},
     {{"2026-10-01", T1, 3, "", "", ""},
      {"2026-10-02", T1, 2, "", "", ""},
      {"2026-10-03", T1, 9, "", "", ""}},
     4,
     3,
     "2026-09-30 2026-10-01 2026-10-03- 2026-10-04"},
};

START_TEST(plan_table)
{
  const struct plan_case *c = &plan_cases[_i];
  struct billing_day_plan out[2 * MAXD];
  char got[256] = "";
  size_t n, i;

  n = billing_sync_plan(c->remote, c->nr, c->stored, c->ns, out);
  for (i = 0; i < n; i++) {
    size_t len = strlen(got);
    ck_assert_uint_lt(len + 13, sizeof(got));
    if (i)
      got[len++] = ' ';
    memcpy(got + len, out[i].day, 10);
    len += 10;
    if (out[i].remote < 0)
      got[len++] = '-';
    got[len] = '\0';
    if (out[i].remote >= 0)
      ck_assert_str_eq(c->remote[out[i].remote].day, out[i].day);
  }
  ck_assert_msg(!strcmp(got, c->want), "%s: got \"%s\", want \"%s\"", c->name,
                got, c->want);
}
END_TEST

/* ---- the first usage day summed again ----------------------------------- */

#define E1 "2026-10-05T04:00:00.000000Z"
#define E2 "2026-10-05T04:00:30.000000Z"

struct scan_case {
  const char *name;
  struct billing_partition remote[4], stored[4];
  size_t nr, ns;
  const char *from, *want;
};

static const struct scan_case scan_cases[] = {
    {"nothing moved: the window",
     {{"2026-10-04", E1, "2026-10-03"}, {"2026-10-05", E1, "2026-10-04"}},
     {{"2026-10-04", E1, "2026-10-03"}, {"2026-10-05", E1, "2026-10-04"}},
     2,
     2,
     "2026-10-03",
     "2026-10-03"},
    {"a late row for an old day in a moved partition",
     {{"2026-10-04", E1, "2026-10-03"}, {"2026-10-05", E2, "2026-08-06"}},
     {{"2026-10-04", E1, "2026-10-03"}, {"2026-10-05", E1, "2026-10-04"}},
     2,
     2,
     "2026-10-03",
     "2026-08-06"},
    {"an old day in an unmoved partition: read before",
     {{"2026-10-05", E1, "2026-08-06"}},
     {{"2026-10-05", E1, "2026-08-06"}},
     1,
     1,
     "2026-10-03",
     "2026-10-03"},
    {"a partition never read",
     {{"2026-10-04", E1, "2026-10-03"}, {"2026-10-06", E1, "2026-09-30"}},
     {{"2026-10-04", E1, "2026-10-03"}},
     2,
     1,
     "2026-10-03",
     "2026-09-30"},
    {"everything summed: stays everything",
     {{"2026-10-05", E2, "2026-08-06"}},
     {{"2026-10-05", E1, "2026-08-06"}},
     1,
     1,
     "",
     ""},
    {"the earliest of two moved",
     {{"2026-10-04", E2, "2026-09-01"}, {"2026-10-05", E2, "2026-08-06"}},
     {{"2026-10-03", E1, "2026-10-02"}},
     2,
     1,
     "2026-10-03",
     "2026-08-06"},
};

START_TEST(scan_table)
{
  const struct scan_case *c = &scan_cases[_i];
  char out[11];

  billing_sync_scan_from(c->remote, c->nr, c->stored, c->ns, c->from, out);
  ck_assert_msg(!strcmp(out, c->want), "%s: got \"%s\", want \"%s\"", c->name,
                out, c->want);
}
END_TEST

/* ---- configuration ------------------------------------------------------ */

static const char *const vars[] = {
    "GPUGATE_BILLING_BIGQUERY_TABLE",    "GPUGATE_BILLING_BIGQUERY_PROJECT",
    "GPUGATE_BILLING_BIGQUERY_LOCATION", "GPUGATE_BIGQUERY_ENDPOINT",
    "GPUGATE_BILLING_SYNC_INTERVAL_S",   "GPUGATE_BILLING_REREAD_DAYS"};

static void set(const char *table, const char *project, const char *interval,
                const char *reread)
{
  const char *v[6] = {table, project, NULL, NULL, interval, reread};
  size_t i;

  for (i = 0; i < 6; i++)
    if (v[i])
      setenv(vars[i], v[i], 1);
    else
      unsetenv(vars[i]);
}

START_TEST(config_defaults)
{
  struct config cfg;
  char err[256];

  set(NULL, NULL, NULL, NULL);
  ck_assert_msg(config_load(&cfg, err, sizeof(err)) == 0, "%s", err);
  ck_assert_str_eq(cfg.control.billing_bq_table, "");
  ck_assert_str_eq(cfg.control.bigquery_endpoint,
                   "https://bigquery.googleapis.com");
  ck_assert_int_eq(cfg.control.billing_sync_interval_s, 21600);
  ck_assert_int_eq(cfg.control.billing_reread_days, 10);
  config_free(&cfg);
}
END_TEST

struct cfg_case {
  const char *table, *project, *interval, *reread;
  const char *want_project; /* NULL: refused, naming bad_var */
  const char *bad_var;
};

static const struct cfg_case cfg_cases[] = {
    {"proj.billing.export", NULL, NULL, NULL, "proj", NULL},
    {"my-proj-1.billing_ds.gcp_billing_export_v1_01", NULL, "0", "0",
     "my-proj-1", NULL},
    {"example.com:proj.ds.t", NULL, NULL, NULL, "example.com:proj", NULL},
    {"proj.billing.export", "runner-proj", "60", "366", "runner-proj", NULL},
    {"proj.billing", NULL, NULL, NULL, NULL, "GPUGATE_BILLING_BIGQUERY_TABLE"},
    {"proj.ds.t`; DROP", NULL, NULL, NULL, NULL,
     "GPUGATE_BILLING_BIGQUERY_TABLE"},
    {"proj..t", NULL, NULL, NULL, NULL, "GPUGATE_BILLING_BIGQUERY_TABLE"},
    {".proj.ds.t", NULL, NULL, NULL, NULL, "GPUGATE_BILLING_BIGQUERY_TABLE"},
    {"proj.ds.t.", NULL, NULL, NULL, NULL, "GPUGATE_BILLING_BIGQUERY_TABLE"},
    {"proj.ds.t", "bad project", NULL, NULL, NULL,
     "GPUGATE_BILLING_BIGQUERY_PROJECT"},
    {NULL, NULL, "-1", NULL, NULL, "GPUGATE_BILLING_SYNC_INTERVAL_S"},
    {NULL, NULL, "6h", NULL, NULL, "GPUGATE_BILLING_SYNC_INTERVAL_S"},
    {NULL, NULL, NULL, "367", NULL, "GPUGATE_BILLING_REREAD_DAYS"},
    {NULL, NULL, NULL, "-1", NULL, "GPUGATE_BILLING_REREAD_DAYS"},
};

START_TEST(config_table)
{
  const struct cfg_case *c = &cfg_cases[_i];
  struct config cfg;
  char err[256] = "";
  int rc;

  set(c->table, c->project, c->interval, c->reread);
  rc = config_load(&cfg, err, sizeof(err));
  if (c->want_project) {
    ck_assert_msg(rc == 0, "case %d: %s", _i, err);
    ck_assert_str_eq(cfg.control.billing_bq_project, c->want_project);
  } else {
    ck_assert_msg(rc == -1, "case %d: accepted", _i);
    ck_assert_msg(strstr(err, c->bad_var) != NULL, "case %d: \"%s\"", _i, err);
  }
  config_free(&cfg);
  set(NULL, NULL, NULL, NULL);
}
END_TEST

Suite *billing_sync_suite(void)
{
  Suite *s = suite_create("billing_sync");
  TCase *tc = tcase_create("billing_sync");

  tcase_add_loop_test(tc, plan_table, 0,
                      (int)(sizeof(plan_cases) / sizeof(plan_cases[0])));
  tcase_add_loop_test(tc, scan_table, 0,
                      (int)(sizeof(scan_cases) / sizeof(scan_cases[0])));
  tcase_add_test(tc, config_defaults);
  tcase_add_loop_test(tc, page_table, 0,
                      (int)(sizeof(page_cases) / sizeof(page_cases[0])));
  tcase_add_loop_test(tc, page_random, 0, 500);
  tcase_add_loop_test(tc, config_table, 0,
                      (int)(sizeof(cfg_cases) / sizeof(cfg_cases[0])));
  suite_add_tcase(s, tc);
  return s;
}
