/*
 * it_costs.c — costs end to end: a synthetic billing export
 * (billing_gen.h) is loaded through POST /v1/billing/export-rows, plain and
 * gzipped, and every report of GET /v1/costs and /v1/teams/{team}/costs,
 * as JSON and as CSV, must match the totals computed independently while
 * generating it, to the micro-unit; loading it again changes nothing; a
 * variant with 1 % malformed lines loads the rest and names each bad line;
 * a team with budget_policy hold gets its new jobs held once its billed
 * month-to-date crosses the budget and admitted when it rises; and who may
 * read which costs.
 *
 * Each test case runs its own server and database: "reports" (plain load,
 * reports, reload, roles, parameter errors), "gzip" (also several gzip
 * members, and a gzip body cut short), "malformed" and "budget".
 */
#include <check.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "tests/integration/billing_gen.h"
#include "tests/integration/harness.h"

Suite *costs_suite(void);

#define MAX_BAD 1000
#define NDJSON "Content-Type: application/x-ndjson"
#define IMAGE "us-docker.pkg.dev/p/r/trainer:1.2"
#define QUOTED_SERVICE "\"Networking, \"\"Premium\"\" Tier\""

static const char *const dim_names[BG_NDIMS] = {"day", "month",  "service",
                                                "sku", "flavor", "location"};
static const char *const teams[] = {"team-a", "team-b", "team-c", "team-d"};

/* ---- the export, generated once in the parent process -------------- */

static pid_t owner;
static char workdir[64], plain_path[128], bad_path[128];
static struct bg_data data;
static struct bg_bad bad[MAX_BAD];
static size_t nbad;
static char *plain_body, *bad_body;
static unsigned char *gz_body;
static size_t plain_len, bad_len, gz_len;
static char *member_a, *member_b, *finance, *admin;

static struct h_server srv;
static char db_url[512];

static void remove_files(void)
{
  if (getpid() != owner || !workdir[0])
    return;
  unlink(plain_path);
  unlink(bad_path);
  rmdir(workdir);
}

/* gzip (RFC 1952) of in[0..n), malloc'd; NULL on failure. */
static unsigned char *gzip(const char *in, size_t n, size_t *out_len)
{
  z_stream z;
  unsigned char *out;
  uLong cap;

  memset(&z, 0, sizeof(z));
  if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK)
    return NULL;
  cap = deflateBound(&z, (uLong)n) + 64;
  out = malloc(cap);
  if (!out) {
    deflateEnd(&z);
    return NULL;
  }
  z.next_in = (Bytef *)(uintptr_t)in;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
    deflateEnd(&z);
    free(out);
    return NULL;
  }
  *out_len = z.total_out;
  deflateEnd(&z);
  return out;
}

static void generate_once(void)
{
  char tmpl[] = "/tmp/gpugate-costs-XXXXXX";
  FILE *plain, *badf;

  if (data.n)
    return;
  owner = getpid();
  ck_assert_ptr_nonnull(mkdtemp(tmpl));
  snprintf(workdir, sizeof(workdir), "%s", tmpl);
  snprintf(plain_path, sizeof(plain_path), "%s/export.ndjson", workdir);
  snprintf(bad_path, sizeof(bad_path), "%s/export-malformed.ndjson", workdir);
  atexit(remove_files);
  plain = fopen(plain_path, "w");
  badf = fopen(bad_path, "w");
  ck_assert(plain && badf);
  ck_assert_int_eq(bg_write_export(plain, badf, &data, bad, MAX_BAD, &nbad), 0);
  fclose(plain);
  fclose(badf);
  plain_body = h_slurp(plain_path, &plain_len);
  bad_body = h_slurp(bad_path, &bad_len);
  ck_assert(plain_body && bad_body);
  gz_body = gzip(plain_body, plain_len, &gz_len);
  ck_assert_ptr_nonnull(gz_body);
  member_a = h_token("team-a", "member", 3600);
  member_b = h_token("team-b", "member", 3600);
  finance = h_token("finance", "finance", 3600);
  admin = h_token("platform", "admin", 3600);
  ck_assert(member_a && member_b && finance && admin);
}

/* A fresh database name with the reference architecture, and a server. */
static void start(const char *db)
{
  static const char *const env[] = {"GPUGATE_RATE_LIMIT_RPS=100000",
                                    "GPUGATE_ADMISSION_INTERVAL_MS=200", NULL};

  generate_once();
  h_db_apply(db, H_REFERENCE, db_url, sizeof(db_url));
  ck_assert_int_eq(h_server_start(&srv, db_url, env), 0);
}

static void setup_reports(void)
{
  start("it_costs");
}

static void setup_gzip(void)
{
  start("it_costs_gzip");
}

static void setup_malformed(void)
{
  start("it_costs_malformed");
}

static void setup_budget(void)
{
  start("it_costs_budget");
}

static void setup_hostile(void)
{
  start("it_costs_hostile");
}

static void teardown(void)
{
  h_server_stop(&srv);
}

/* ---- helpers ---------------------------------------------------------- */

static json_int_t int_of(const json_t *o, const char *k)
{
  return json_integer_value(json_object_get(o, k));
}

/* POST an NDJSON body as token; gzip adds Content-Encoding. */
static void ingest(const char *token, const void *body, size_t len, bool gz,
                   struct h_resp *r)
{
  const char *plain_hdrs[] = {NDJSON, NULL};
  const char *gz_hdrs[] = {NDJSON, "Content-Encoding: gzip", NULL};

  ck_assert_int_eq(h_request_raw(&srv, "POST", "/v1/billing/export-rows", token,
                                 body, len, gz ? gz_hdrs : plain_hdrs, r),
                   0);
}

/* The ingest report must count exactly these and list no more rejections
 * than it counts. */
static void expect_counts(const struct h_resp *r, long inserted,
                          long duplicates, long rejected)
{
  json_t *list;

  ck_assert_msg(r->status == 200 && r->json, "ingest: %ld %.500s", r->status,
                r->body);
  list = json_object_get(r->json, "rejected");
  ck_assert_msg(int_of(r->json, "inserted") == inserted &&
                    int_of(r->json, "duplicates") == duplicates &&
                    int_of(r->json, "rejected_count") == rejected &&
                    json_is_array(list) &&
                    json_array_size(list) == (size_t)rejected &&
                    json_is_false(json_object_get(r->json, "truncated")),
                "ingest: want inserted %ld, duplicates %ld, rejected %ld: "
                "%.1000s",
                inserted, duplicates, rejected, r->body);
}

/* group_by text → flags in dim_names order. */
static void dims_of(const char *group_by, bool dims[BG_NDIMS])
{
  int d;

  for (d = 0; d < BG_NDIMS; d++) {
    const char *p = group_by;
    size_t n = strlen(dim_names[d]);
    dims[d] = false;
    while ((p = strstr(p, dim_names[d]))) {
      if ((p == group_by || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
        dims[d] = true;
      p += n;
    }
  }
}

/* The columns a report's rows must have, in order. */
static int columns(const bool dims[BG_NDIMS], const char *cols[16])
{
  int n = 0, d;

  cols[n++] = "team";
  for (d = 0; d < BG_NDIMS; d++)
    if (dims[d])
      cols[n++] = dim_names[d];
  cols[n++] = "charge_class"; /* null: no month is closed here */
  cols[n++] = "currency";
  cols[n++] = "cost";
  cols[n++] = "credits";
  cols[n++] = "net_cost";
  cols[n++] = "usage_gpu_hours";
  return n;
}

/* A JSON number equals micro-units to well within a cent (half a
 * micro-unit: the double nearest the decimal). */
static bool near(const json_t *v, int64_t micro)
{
  return json_is_number(v) &&
         fabs(json_number_value(v) - (double)micro / 1e6) < 5e-7;
}

static void micro_text(int64_t v, char *buf)
{
  bg_micro_text(v, buf, 32);
}

/* The first n lines of the export: their length. */
static size_t lines_len(size_t n)
{
  const char *p = plain_body;

  while (n-- > 0 && (p = strchr(p, '\n')))
    p++;
  return p ? (size_t)(p - plain_body) : plain_len;
}

/* ---- CSV (RFC 4180) ------------------------------------------------------ */

struct csv {
  char **fields; /* owned, each owned */
  size_t *start; /* record i is fields[start[i] .. start[i + 1]) */
  size_t nfields, nrecords;
};

static void csv_free(struct csv *c)
{
  size_t i;

  for (i = 0; i < c->nfields; i++)
    free(c->fields[i]);
  free(c->fields);
  free(c->start);
  memset(c, 0, sizeof(*c));
}

/* Parse strictly: CRLF after every record, quotes only around a whole
 * field, "" inside quotes; a comma, quote, CR or LF only inside quotes.
 * False (with *why) on anything else. */
static bool csv_parse(const char *s, size_t len, struct csv *c,
                      const char **why)
{
  const char *end = s + len;

  memset(c, 0, sizeof(*c));
  c->fields = malloc((len + 1) * sizeof(char *));
  c->start = malloc((len + 2) * sizeof(size_t));
  if (!c->fields || !c->start) {
    *why = "out of memory";
    return false;
  }
  while (s < end) {
    c->start[c->nrecords++] = c->nfields;
    for (;;) {
      char *f = malloc((size_t)(end - s) + 1);
      size_t n = 0;
      if (!f) {
        *why = "out of memory";
        return false;
      }
      c->fields[c->nfields++] = f;
      if (*s == '"') {
        for (s++;; s++) {
          if (s >= end) {
            *why = "unterminated quoted field";
            return false;
          }
          if (*s == '"' && s + 1 < end && s[1] == '"')
            f[n++] = *s++;
          else if (*s == '"')
            break;
          else
            f[n++] = *s;
        }
        s++;
      } else {
        while (s < end && *s != ',' && *s != '\r' && *s != '\n' && *s != '"')
          f[n++] = *s++;
        if (s < end && (*s == '"' || *s == '\n')) {
          *why = "quote or bare LF in an unquoted field";
          return false;
        }
      }
      f[n] = '\0';
      if (s < end && *s == ',') {
        s++;
        continue;
      }
      if (end - s >= 2 && s[0] == '\r' && s[1] == '\n') {
        s += 2;
        break;
      }
      *why = "a record does not end with CRLF";
      return false;
    }
  }
  c->start[c->nrecords] = c->nfields;
  return true;
}

static size_t csv_width(const struct csv *c, size_t rec)
{
  return c->start[rec + 1] - c->start[rec];
}

static const char *csv_field(const struct csv *c, size_t rec, size_t i)
{
  return c->fields[c->start[rec] + i];
}

/* ---- reports ---------------------------------------------------------- */

struct report_case {
  const char *group_by;
  bool invoice;
  const char *from, *to;
};

static const struct report_case cases[] = {
    {"month", false, BG_FROM, BG_TO},
    {"month", true, BG_FROM, BG_TO},
    {"day", false, BG_FROM, BG_TO},
    {"service,sku", false, BG_FROM, BG_TO},
    {"flavor,location", false, BG_FROM, BG_TO},
    {"", false, BG_FROM, BG_TO},
    {"sku,service,month", false, BG_FROM, BG_TO},
    {"day,month,service,sku,flavor,location", false, BG_FROM, BG_TO},
    {"day,month", false, "2026-08-30", "2026-09-01"},
    {"day", false, "2026-09-30", "2026-09-30"},
    {"month,day", true, "2026-09-01", "2026-09-30"},
    {"month,location", true, "2026-10-01", "2026-10-31"},
    {"month", false, "2025-01-01", "2025-12-31"},
};
#define N_CASES ((int)(sizeof(cases) / sizeof(cases[0])))

static void report_path(const char *base, const struct report_case *rc,
                        const char *extra, char *path, size_t len)
{
  snprintf(path, len, "%s?from=%s&to=%s%s%s%s%s", base, rc->from, rc->to,
           rc->group_by[0] ? "&group_by=" : "", rc->group_by,
           rc->invoice ? "&month_basis=invoice" : "", extra);
}

/* The report as JSON: every row and total against the expectation. */
static void check_json(const char *token, const char *base, const char *team,
                       const struct report_case *rc, const bool *dims,
                       const struct bg_sum *exp, long nexp,
                       const struct bg_sum *tot, long ntot)
{
  const char *cols[16], *prev[16] = {NULL};
  char path[512], key[512];
  struct h_resp r;
  json_t *rows, *totals, *gb, *row, *v;
  size_t i, k, ngb = 0;
  int ncols = columns(dims, cols), c, d;

  report_path(base, rc, "", path, sizeof(path));
  ck_assert_int_eq(h_request(&srv, "GET", path, token, NULL, NULL, &r), 0);
  ck_assert_msg(r.status == 200 && r.json, "GET %s: %ld %.300s", path, r.status,
                r.body);
  ck_assert_str_eq(h_str(r.json, "from"), rc->from);
  ck_assert_str_eq(h_str(r.json, "to"), rc->to);
  gb = json_object_get(r.json, "group_by");
  ck_assert_msg(json_is_array(gb), "%s: group_by", path);
  for (d = 0; d < BG_NDIMS; d++)
    if (dims[d]) {
      ck_assert_msg(
          ngb < json_array_size(gb) &&
              !strcmp(json_string_value(json_array_get(gb, ngb)), dim_names[d]),
          "%s: group_by %.200s", path, r.body);
      ngb++;
    }
  ck_assert_uint_eq(json_array_size(gb), ngb);

  rows = json_object_get(r.json, "rows");
  ck_assert_msg(json_is_array(rows) && json_array_size(rows) == (size_t)nexp,
                "GET %s: %zu rows, want %ld", path, json_array_size(rows),
                nexp);
  json_array_foreach (rows, i, row) {
    const struct bg_sum *e;
    const char *kname;
    size_t klen = 0;
    /* exactly the columns, in order */
    c = 0;
    json_object_foreach (row, kname, v) {
      ck_assert_msg(c < ncols && !strcmp(kname, cols[c]),
                    "GET %s row %zu: key %s at %d", path, i, kname, c);
      c++;
    }
    ck_assert_int_eq(c, ncols);
    for (c = 0; c < ncols - 4; c++) {
      const char *s = h_str(row, cols[c]);
      if (c == ncols - 6) {
        ck_assert_msg(json_is_null(json_object_get(row, cols[c])),
                      "GET %s row %zu: charge_class not null", path, i);
        continue;
      }
      ck_assert_msg(s != NULL, "GET %s row %zu: %s not a string", path, i,
                    cols[c]);
      klen += (size_t)snprintf(key + klen, sizeof(key) - klen, "%s%s",
                               c ? "\t" : "", s);
    }
    /* ordered by team, the dimensions, currency (bytewise), no repeats */
    if (prev[0]) {
      int cmp = 0;
      for (c = 0; c < ncols - 4 && cmp == 0; c++)
        if (c != ncols - 6)
          cmp = strcmp(prev[c], h_str(row, cols[c]));
      ck_assert_msg(cmp < 0, "GET %s: row %zu not after row %zu", path, i,
                    i - 1);
    }
    for (c = 0; c < ncols - 4; c++)
      prev[c] = c == ncols - 6 ? "" : h_str(row, cols[c]);
    if (team)
      ck_assert_str_eq(h_str(row, "team"), team);
    e = bg_find(exp, nexp, key);
    ck_assert_msg(e != NULL, "GET %s: unexpected row %s", path, key);
    ck_assert_msg(
        near(json_object_get(row, "cost"), e->cost) &&
            near(json_object_get(row, "credits"), e->credits) &&
            near(json_object_get(row, "net_cost"), e->cost + e->credits) &&
            near(json_object_get(row, "usage_gpu_hours"), e->gpu),
        "GET %s: row %s: cost %f credits %f net %f gpu %f, want "
        "%lld %lld %lld %lld micro",
        path, key, json_number_value(json_object_get(row, "cost")),
        json_number_value(json_object_get(row, "credits")),
        json_number_value(json_object_get(row, "net_cost")),
        json_number_value(json_object_get(row, "usage_gpu_hours")),
        (long long)e->cost, (long long)e->credits,
        (long long)(e->cost + e->credits), (long long)e->gpu);
  }

  totals = json_object_get(r.json, "totals");
  ck_assert_msg(
      json_is_array(totals) && json_array_size(totals) == (size_t)ntot,
      "GET %s: totals %.300s", path, json_dumps(totals, JSON_COMPACT));
  json_array_foreach (totals, k, row) {
    const char *cur = h_str(row, "currency");
    const struct bg_sum *e = cur ? bg_find(tot, ntot, cur) : NULL;
    ck_assert_msg(e != NULL, "GET %s: total of %s", path, cur);
    ck_assert_msg(
        near(json_object_get(row, "cost"), e->cost) &&
            near(json_object_get(row, "credits"), e->credits) &&
            near(json_object_get(row, "net_cost"), e->cost + e->credits),
        "GET %s: total %s: %.200s, want %lld %lld micro", path, cur,
        json_dumps(row, JSON_COMPACT), (long long)e->cost,
        (long long)e->credits);
  }
  if (team) {
    json_t *budget = json_object_get(r.json, "budget");
    ck_assert_msg(
        json_is_object(budget) &&
            json_is_number(json_object_get(budget, "month_to_date_net_usd")) &&
            json_is_boolean(json_object_get(budget, "over_budget")),
        "GET %s: budget %.300s", path, r.body);
  }
  h_resp_free(&r);
}

/* The report as CSV: header, RFC 4180, every value exactly; the rows of
 * each currency add up exactly to the expected totals. */
static void check_csv(const char *token, const char *base, bool by_format,
                      const struct report_case *rc, const bool *dims,
                      const struct bg_sum *exp, long nexp,
                      const struct bg_sum *tot, long ntot)
{
  const char *accept[] = {"Accept: text/csv", NULL};
  const char *cols[16], *why = "";
  char path[512], key[512], ct[128];
  struct h_resp r;
  struct csv csv;
  int64_t sums[8][2];
  bool quoted_service = false;
  size_t i;
  long t;
  int ncols = columns(dims, cols), c;

  memset(sums, 0, sizeof(sums));
  report_path(base, rc, by_format ? "&format=csv" : "", path, sizeof(path));
  ck_assert_int_eq(
      h_request(&srv, "GET", path, token, NULL, by_format ? NULL : accept, &r),
      0);
  ck_assert_msg(r.status == 200, "GET %s (CSV): %ld %.300s", path, r.status,
                r.body);
  ck_assert_msg(h_header(&r, "Content-Type", ct, sizeof(ct)) &&
                    !strncmp(ct, "text/csv", 8),
                "GET %s: Content-Type %s", path, ct);
  ck_assert_msg(csv_parse(r.body, r.body_len, &csv, &why), "GET %s: CSV: %s",
                path, why);
  ck_assert_uint_eq(csv.nrecords, (size_t)nexp + 1);
  ck_assert_uint_eq(csv_width(&csv, 0), (size_t)ncols);
  for (c = 0; c < ncols; c++)
    ck_assert_str_eq(csv_field(&csv, 0, (size_t)c), cols[c]);
  for (i = 1; i < csv.nrecords; i++) {
    const struct bg_sum *e;
    int64_t v[4];
    size_t klen = 0;
    ck_assert_uint_eq(csv_width(&csv, i), (size_t)ncols);
    ck_assert_str_eq(csv_field(&csv, i, (size_t)ncols - 6), "");
    for (c = 0; c < ncols - 4; c++)
      if (c != ncols - 6)
        klen += (size_t)snprintf(key + klen, sizeof(key) - klen, "%s%s",
                                 c ? "\t" : "", csv_field(&csv, i, (size_t)c));
    for (c = 0; c < 4; c++)
      ck_assert_msg(
          bg_parse_micro(csv_field(&csv, i, (size_t)(ncols - 4 + c)), &v[c]),
          "GET %s: record %zu: %s is not a plain decimal", path, i,
          csv_field(&csv, i, (size_t)(ncols - 4 + c)));
    e = bg_find(exp, nexp, key);
    ck_assert_msg(e != NULL, "GET %s: unexpected CSV row %s", path, key);
    ck_assert_msg(v[0] == e->cost && v[1] == e->credits &&
                      v[2] == e->cost + e->credits && v[3] == e->gpu,
                  "GET %s: CSV row %s: %s,%s,%s,%s; want micro %lld %lld "
                  "%lld %lld",
                  path, key, csv_field(&csv, i, (size_t)ncols - 4),
                  csv_field(&csv, i, (size_t)ncols - 3),
                  csv_field(&csv, i, (size_t)ncols - 2),
                  csv_field(&csv, i, (size_t)ncols - 1), (long long)e->cost,
                  (long long)e->credits, (long long)(e->cost + e->credits),
                  (long long)e->gpu);
    for (t = 0; t < ntot && t < 8; t++)
      if (!strcmp(tot[t].key, csv_field(&csv, i, (size_t)ncols - 5))) {
        sums[t][0] += v[0];
        sums[t][1] += v[1];
      }
    if (dims[2] &&
        strchr(csv_field(&csv, i, 1 + (size_t)dims[0] + (size_t)dims[1]), '"'))
      quoted_service = true;
  }
  for (t = 0; t < ntot && t < 8; t++) {
    char a[32], b[32];
    micro_text(sums[t][0], a);
    micro_text(tot[t].cost, b);
    ck_assert_msg(sums[t][0] == tot[t].cost && sums[t][1] == tot[t].credits,
                  "GET %s: CSV rows in %s add up to %s, want %s", path,
                  tot[t].key, a, b);
  }
  /* the service with a comma and quotes went out RFC 4180-quoted */
  if (quoted_service)
    ck_assert_msg(strstr(r.body, "," QUOTED_SERVICE ","),
                  "GET %s: service not quoted", path);
  csv_free(&csv);
  h_resp_free(&r);
}

/* One report case through base (NULL team: /v1/costs) as token, as JSON and
 * as CSV (by Accept, or by ?format=csv). */
static void check_report(const struct bg_data *dd, const char *token,
                         const char *team, const struct report_case *rc,
                         bool by_format)
{
  struct bg_sum *exp = NULL, *tot = NULL;
  char base[96];
  bool dims[BG_NDIMS];
  long nexp, ntot;

  if (team)
    snprintf(base, sizeof(base), "/v1/teams/%s/costs", team);
  else
    snprintf(base, sizeof(base), "/v1/costs");
  dims_of(rc->group_by, dims);
  nexp = bg_expect(dd, dims, rc->invoice, false, rc->from, rc->to, team, &exp);
  ntot = bg_expect(dd, dims, rc->invoice, true, rc->from, rc->to, team, &tot);
  ck_assert(nexp >= 0 && ntot >= 0);
  check_json(token, base, team, rc, dims, exp, nexp, tot, ntot);
  check_csv(token, base, by_format, rc, dims, exp, nexp, tot, ntot);
  free(exp);
  free(tot);
}

static void check_all_reports(void)
{
  int i;

  for (i = 0; i < N_CASES; i++)
    check_report(&data, finance, NULL, &cases[i], i % 3 == 2);
}

/* ---- the "reports" case ----------------------------------------------- */

/* (a) The whole export loads: every row inserted, none rejected. */
START_TEST(ingest_plain)
{
  struct h_resp r;

  ck_assert_uint_gt(data.n, 10000);
  ingest(finance, plain_body, plain_len, false, &r);
  expect_counts(&r, (long)data.n, 0, 0);
  h_resp_free(&r);
}
END_TEST

/* (b) Each report case matches the expectation, JSON and CSV. */
START_TEST(reports_match)
{
  check_report(&data, finance, NULL, &cases[_i], _i % 3 == 2);
}
END_TEST

/* month_basis=invoice moves the month-end rows: the generator made the two
 * bases differ, and the server matched both (reports_match). */
START_TEST(invoice_basis_moves_rows)
{
  static const bool month[BG_NDIMS] = {false, true, false, false, false, false};
  struct bg_sum *u = NULL, *v = NULL;
  const struct bg_sum *a, *b;
  long nu = bg_expect(&data, month, false, false, BG_FROM, BG_TO, NULL, &u);
  long nv = bg_expect(&data, month, true, false, BG_FROM, BG_TO, NULL, &v);

  /* August loses its last evening to September's invoice */
  a = bg_find(u, nu, "team-a\t2026-08\tUSD");
  b = bg_find(v, nv, "team-a\t2026-08\tUSD");
  ck_assert(a && b);
  ck_assert_msg(b->rows == a->rows - 1 && b->cost < a->cost,
                "the generator made no cross-month rows");
  /* September gains August's and loses its own; October's goes to
   * November, outside the range */
  a = bg_find(u, nu, "team-a\t2026-09\tUSD");
  b = bg_find(v, nv, "team-a\t2026-09\tUSD");
  ck_assert(a && b && b->rows == a->rows && b->cost != a->cost);
  ck_assert_ptr_null(bg_find(v, nv, "team-a\t2026-11\tUSD"));
  free(u);
  free(v);
}
END_TEST

/* Unlabelled rows are (unattributed); currencies are never added up. */
START_TEST(unattributed_and_currencies)
{
  struct h_resp r;
  json_t *row;
  size_t i;
  int unattributed = 0, team_c = 0;

  ck_assert_int_eq(h_request(&srv, "GET",
                             "/v1/costs?from=" BG_FROM "&to=" BG_TO, finance,
                             NULL, NULL, &r),
                   0);
  ck_assert_int_eq(r.status, 200);
  json_array_foreach (json_object_get(r.json, "rows"), i, row) {
    const char *cur = h_str(row, "currency");
    ck_assert(cur && (!strcmp(cur, "USD") || !strcmp(cur, "EUR")));
    if (!strcmp(h_str(row, "team"), BG_UNATTRIBUTED))
      unattributed++;
    if (!strcmp(h_str(row, "team"), "team-c"))
      team_c++;
  }
  ck_assert_int_eq(unattributed, 2); /* USD and EUR */
  ck_assert_int_eq(team_c, 2);
  row = json_object_get(r.json, "totals");
  ck_assert_uint_eq(json_array_size(row), 2);
  ck_assert_str_eq(h_str(json_array_get(row, 0), "currency"), "EUR");
  ck_assert_str_eq(h_str(json_array_get(row, 1), "currency"), "USD");
  h_resp_free(&r);
}
END_TEST

/* Finance reads every team's report, rows of that team only. */
START_TEST(finance_reads_every_team)
{
  static const struct report_case rc[] = {
      {"month", false, BG_FROM, BG_TO},
      {"service,sku,flavor", false, BG_FROM, BG_TO},
  };
  size_t t, k;

  for (t = 0; t < sizeof(teams) / sizeof(*teams); t++)
    for (k = 0; k < 2; k++)
      check_report(&data, finance, teams[t], &rc[k], k == 1);
  /* and admins read the whole report too */
  check_report(&data, admin, NULL, &cases[0], false);
}
END_TEST

/* (f) A member reads its own team's costs only. */
START_TEST(member_reads_own_team_only)
{
  static const struct report_case rc = {"month,service", false, BG_FROM, BG_TO};
  const char *row = "{\"cost\": 1, \"currency\": \"USD\"}\n";
  struct h_resp r;

  check_report(&data, member_a, "team-a", &rc, false);
  check_report(&data, member_b, "team-b", &rc, true);
  h_request(&srv, "GET", "/v1/teams/team-b/costs?from=" BG_FROM "&to=" BG_TO,
            member_a, NULL, NULL, &r);
  ck_assert_msg(h_is_problem(&r, 404, NULL), "%ld %s", r.status, r.body);
  h_resp_free(&r);
  h_request(&srv, "GET", "/v1/costs?from=" BG_FROM "&to=" BG_TO, member_a, NULL,
            NULL, &r);
  ck_assert_msg(h_is_problem(&r, 403, NULL), "%ld %s", r.status, r.body);
  h_resp_free(&r);
  h_request(&srv, "GET", "/v1/costs/savings?from=" BG_FROM "&to=" BG_TO,
            member_a, NULL, NULL, &r);
  ck_assert_msg(h_is_problem(&r, 403, NULL), "%ld %s", r.status, r.body);
  h_resp_free(&r);
  h_request_raw(&srv, "POST", "/v1/billing/export-rows", member_a, row,
                strlen(row), (const char *[]){NDJSON, NULL}, &r);
  ck_assert_msg(h_is_problem(&r, 403, NULL), "%ld %s", r.status, r.body);
  h_resp_free(&r);
}
END_TEST

/* Bad parameters: 400 naming the parameter, 406 for an unknown Accept. */
START_TEST(parameter_errors)
{
  static const struct {
    const char *path, *field;
  } bad_params[] = {
      {"/v1/costs?from=" BG_FROM "&to=" BG_TO "&group_by=bogus", "group_by"},
      {"/v1/costs?from=" BG_FROM "&to=" BG_TO "&group_by=month,bogus",
       "group_by"},
      {"/v1/costs?from=2026-10-31&to=2026-08-01", "to"},
      {"/v1/costs?from=2026-02-30&to=2026-08-01", "from"},
      {"/v1/costs?to=" BG_TO, "from"},
      {"/v1/costs?from=" BG_FROM, "to"},
      {"/v1/costs?from=" BG_FROM "&to=" BG_TO "&month_basis=fiscal",
       "month_basis"},
      {"/v1/costs?from=" BG_FROM "&to=" BG_TO "&format=xml", "format"},
      {"/v1/teams/team-a/costs?from=" BG_FROM "&to=" BG_TO "&group_by=team",
       "group_by"},
  };
  const char *png[] = {"Accept: image/png", NULL};
  struct h_resp r;
  size_t i;

  for (i = 0; i < sizeof(bad_params) / sizeof(*bad_params); i++) {
    h_request(&srv, "GET", bad_params[i].path, finance, NULL, NULL, &r);
    ck_assert_msg(h_is_problem(&r, 400, bad_params[i].field), "%s: %ld %s",
                  bad_params[i].path, r.status, r.body);
    h_resp_free(&r);
  }
  h_request(&srv, "GET", "/v1/teams/team-z/costs?from=" BG_FROM "&to=" BG_TO,
            finance, NULL, NULL, &r);
  ck_assert_msg(h_is_problem(&r, 404, NULL), "%ld %s", r.status, r.body);
  h_resp_free(&r);
  h_request(&srv, "GET", "/v1/costs?from=" BG_FROM "&to=" BG_TO, finance, NULL,
            png, &r);
  ck_assert_msg(h_is_problem(&r, 406, NULL), "%ld %s", r.status, r.body);
  h_resp_free(&r);
  h_request(&srv, "GET", "/v1/teams/team-a/costs?from=" BG_FROM "&to=" BG_TO,
            finance, NULL, png, &r);
  ck_assert_msg(h_is_problem(&r, 406, NULL), "%ld %s", r.status, r.body);
  h_resp_free(&r);
}
END_TEST

/* (c) Loading the same file again: all duplicates, no total moves. */
START_TEST(reload_changes_nothing)
{
  struct h_resp r;

  ingest(admin, plain_body, plain_len, false, &r);
  expect_counts(&r, 0, (long)data.n, 0);
  h_resp_free(&r);
  check_all_reports();
}
END_TEST

/* A row is known by its content, not its text: the first rows again with
 * their members in reverse order, spaced and their numbers re-printed are
 * duplicates too. */
START_TEST(reload_reformatted_is_duplicate)
{
  size_t n = 200, len = lines_len(n), i;
  char *text = malloc(len * 2 + 1024), *p = text, *line;
  const char *q = plain_body;
  struct h_resp r;

  ck_assert_ptr_nonnull(text);
  for (i = 0; i < n; i++) {
    const char *nl = strchr(q, '\n'), *keys[64], *k;
    json_t *row, *rev, *v;
    size_t nk = 0;
    ck_assert_ptr_nonnull(nl);
    row = json_loadb(q, (size_t)(nl - q), 0, NULL);
    rev = json_object();
    ck_assert(row && rev);
    json_object_foreach (row, k, v)
      if (nk < 64)
        keys[nk++] = k;
    while (nk > 0) {
      nk--;
      json_object_set(rev, keys[nk], json_object_get(row, keys[nk]));
    }
    line = json_dumps(rev, JSON_INDENT(0) | JSON_REAL_PRECISION(17));
    ck_assert_ptr_nonnull(line);
    ck_assert_ptr_null(strchr(line, '\n'));
    p += snprintf(p, len * 2 + 1024 - (size_t)(p - text), "%s\n", line);
    free(line);
    json_decref(rev);
    json_decref(row);
    q = nl + 1;
  }
  ingest(finance, text, (size_t)(p - text), false, &r);
  expect_counts(&r, 0, (long)n, 0);
  h_resp_free(&r);
  free(text);
}
END_TEST

/* ---- the "gzip" case -------------------------------------------------- */

/* (a) The same export gzipped (Content-Encoding: gzip) loads the same. */
START_TEST(ingest_gzip)
{
  struct h_resp r;

  ck_assert_uint_lt(gz_len, plain_len / 4);
  ingest(finance, gz_body, gz_len, true, &r);
  expect_counts(&r, (long)data.n, 0, 0);
  h_resp_free(&r);
  check_report(&data, finance, NULL, &cases[0], false);
  check_report(&data, finance, NULL, &cases[1], true);
  check_report(&data, finance, NULL, &cases[3], false);
}
END_TEST

/* A gzip body of several members (RFC 1952 §2.2, what `cat a.gz b.gz`
 * and parallel compressors make) is the concatenation of their contents:
 * every member's rows count, not only the first's. */
START_TEST(gzip_multi_member)
{
  size_t half = lines_len(300), all = lines_len(600), n1 = 0, n2 = 0;
  unsigned char *m1 = gzip(plain_body, half, &n1);
  unsigned char *m2 = gzip(plain_body + half, all - half, &n2);
  unsigned char *body = malloc(n1 + n2);
  struct h_resp r;

  ck_assert(m1 && m2 && body);
  memcpy(body, m1, n1);
  memcpy(body + n1, m2, n2);
  ingest(finance, body, n1 + n2, true, &r);
  expect_counts(&r, 0, 600, 0);
  h_resp_free(&r);
  free(m1);
  free(m2);
  free(body);
}
END_TEST

/* A gzip body cut short (a dropped connection's tail, a partial upload)
 * is refused as corrupt, not loaded as far as it goes: without its end,
 * and without the trailer's CRC-32 and length, it cannot be known whole. */
START_TEST(gzip_truncated)
{
  size_t n = 0;
  unsigned char *gz = gzip(plain_body, lines_len(600), &n);
  const size_t cuts[] = {n * 6 / 10, n - 8};
  struct h_resp r;
  size_t i;

  ck_assert_ptr_nonnull(gz);
  for (i = 0; i < 2; i++) {
    ingest(finance, gz, cuts[i], true, &r);
    ck_assert_msg(h_is_problem(&r, 400, "body"),
                  "gzip cut at %zu of %zu bytes: %ld %.300s", cuts[i], n,
                  r.status, r.body);
    h_resp_free(&r);
  }
  free(gz);
}
END_TEST

/* ---- the "malformed" case ---------------------------------------------- */

/* (d) 1 % malformed lines: the valid rows load, each bad line is listed by
 * number with a reason naming the field, and the totals are those of the
 * valid rows alone. Loading it again rejects the same lines. */
START_TEST(ingest_malformed)
{
  bool kinds[4] = {false, false, false, false};
  static const char *const kind_prefix[4] = {
      "not JSON", "cost:", "currency:", "usage_start_time:"};
  struct h_resp r;
  json_t *e;
  size_t i;
  int k;

  ck_assert_uint_ge(nbad, data.n / 100);
  ck_assert_uint_lt(nbad, MAX_BAD);
  ingest(finance, bad_body, bad_len, false, &r);
  expect_counts(&r, (long)data.n, 0, (long)nbad);
  json_array_foreach (json_object_get(r.json, "rejected"), i, e) {
    const char *err = h_str(e, "error");
    ck_assert_msg(int_of(e, "line") == bad[i].line && err &&
                      !strncmp(err, bad[i].error, strlen(bad[i].error)),
                  "rejection %zu: line %lld \"%s\", want line %ld \"%s...\"", i,
                  (long long)int_of(e, "line"), err ? err : "(none)",
                  bad[i].line, bad[i].error);
    for (k = 0; k < 4; k++)
      kinds[k] |= bad[i].error == kind_prefix[k] ||
                  !strcmp(bad[i].error, kind_prefix[k]);
  }
  for (k = 0; k < 4; k++)
    ck_assert_msg(kinds[k], "no malformed line of kind %s", kind_prefix[k]);
  h_resp_free(&r);
  check_report(&data, finance, NULL, &cases[0], false);
  check_report(&data, finance, NULL, &cases[5], true);
  check_report(&data, finance, NULL, &cases[3], false);

  ingest(finance, bad_body, bad_len, false, &r);
  expect_counts(&r, 0, (long)data.n, (long)nbad);
  h_resp_free(&r);
}
END_TEST

/* ---- the "budget" case ------------------------------------------------- */

static void put_team_a(double budget)
{
  char body[256];
  struct h_resp r;

  snprintf(body, sizeof(body),
           "{\"display_name\": \"Team A\", \"cost_center\": "
           "\"ml-research\", \"monthly_budget_usd\": %.0f, "
           "\"budget_policy\": \"hold\"}",
           budget);
  ck_assert_int_eq(
      h_request(&srv, "PUT", "/v1/teams/team-a", admin, body, NULL, &r), 0);
  ck_assert_msg(r.status == 200 || r.status == 201, "PUT team-a: %ld %s",
                r.status, r.body);
  h_resp_free(&r);
}

/* The budget object of team's report (a new reference). */
static json_t *budget_of(const char *team, const char *token)
{
  char path[160];
  struct h_resp r;
  json_t *b;

  snprintf(path, sizeof(path), "/v1/teams/%s/costs?from=%s&to=%s", team,
           BG_FROM, BG_TO);
  ck_assert_int_eq(h_request(&srv, "GET", path, token, NULL, NULL, &r), 0);
  ck_assert_msg(r.status == 200, "GET %s: %ld %s", path, r.status, r.body);
  b = json_incref(json_object_get(r.json, "budget"));
  ck_assert_msg(json_is_object(b), "GET %s: %s", path, r.body);
  h_resp_free(&r);
  return b;
}

static double num_of(const json_t *o, const char *k)
{
  const json_t *v = json_object_get(o, k);

  ck_assert_msg(json_is_number(v), "%s is not a number", k);
  return json_number_value(v);
}

static void submit(const char *team, const char *token, const char *name,
                   char id[32])
{
  char path[96], body[512];
  struct h_resp r;

  snprintf(path, sizeof(path), "/v1/teams/%s/jobs", team);
  snprintf(body, sizeof(body),
           "{\"name\": \"%s\", \"queue\": \"lp\", \"task\": {\"image\": "
           "\"" IMAGE "\", \"cpu_milli\": 100, \"memory_mib\": 128}}",
           name);
  ck_assert_int_eq(h_request(&srv, "POST", path, token, body, NULL, &r), 0);
  ck_assert_msg(r.status == 201, "submit %s: %ld %s", name, r.status, r.body);
  snprintf(id, 32, "%s", h_str(r.json, "id"));
  h_resp_free(&r);
}

/* Poll team's job until it is admitted (admitted true) or held with
 * BudgetExceeded, up to 10 s; its last view (a new reference). */
static json_t *wait_job(const char *team, const char *token, const char *id,
                        bool admitted)
{
  char path[160];
  long waited;

  snprintf(path, sizeof(path), "/v1/teams/%s/jobs/%.31s", team, id);
  for (waited = 0;; waited += 100) {
    struct h_resp r;
    json_t *j;
    const char *state, *reason;
    bool done;
    ck_assert_int_eq(h_request(&srv, "GET", path, token, NULL, NULL, &r), 0);
    ck_assert_msg(r.status == 200, "GET %s: %ld %s", path, r.status, r.body);
    j = json_incref(r.json);
    h_resp_free(&r);
    state = h_str(j, "state");
    reason = h_str(j, "reason");
    done = admitted ? state && strcmp(state, "PENDING") != 0
                    : state && !strcmp(state, "PENDING") && reason &&
                          !strcmp(reason, "BudgetExceeded");
    if (done || waited >= 10000)
      return j;
    json_decref(j);
    h_sleep_ms(100);
  }
}

static void expect_job(const char *team, const char *token, const char *id,
                       bool admitted)
{
  json_t *j = wait_job(team, token, id, admitted);
  char *text = json_dumps(j, JSON_COMPACT);

  if (admitted)
    ck_assert_msg(strcmp(h_str(j, "state"), "PENDING") != 0,
                  "job %s not admitted: %s", id, text);
  else
    ck_assert_msg(!strcmp(h_str(j, "state"), "PENDING") && h_str(j, "reason") &&
                      !strcmp(h_str(j, "reason"), "BudgetExceeded"),
                  "job %s not held for its budget: %s", id, text);
  free(text);
  json_decref(j);
}

/* (e) budget_policy hold: billed month-to-date net over the budget holds
 * the team's new jobs (PENDING/BudgetExceeded), other teams' run, and a
 * raised budget admits them. Only USD rows of the current UTC month
 * count. */
START_TEST(budget_hold)
{
  char path[160] = "", id_before[32], id_held[32], id_b[32], id_held2[32];
  time_t now = time(NULL);
  long long today = (long long)now - (long long)now % 86400, month_start;
  struct bg_data rows = {NULL, 0, 0};
  struct report_case rc = {"month,day", false, NULL, NULL};
  char from[16], to[16];
  struct tm tm;
  struct h_resp r;
  json_t *b;
  FILE *f;
  char *body;
  size_t len = 0;

  gmtime_r(&now, &tm);
  tm.tm_mday = 1;
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  month_start = (long long)timegm(&tm);

  put_team_a(100);
  b = budget_of("team-a", member_a);
  ck_assert_double_eq_tol(num_of(b, "monthly_budget_usd"), 100, 1e-9);
  ck_assert_str_eq(h_str(b, "budget_policy"), "hold");
  ck_assert_double_eq_tol(num_of(b, "month_to_date_net_usd"), 0, 1e-9);
  ck_assert(json_is_false(json_object_get(b, "over_budget")));
  json_decref(b);

  /* under the budget: admitted */
  submit("team-a", member_a, "before-the-bill", id_before);
  expect_job("team-a", member_a, id_before, true);

  /* the bill: 3 × (60 - 5) = 165 USD net this month for team-a; EUR,
   * last month and other teams' rows do not count */
  snprintf(path, sizeof(path), "%s/budget.ndjson", workdir);
  f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(
      bg_write_row(f, "team-a", "USD", today, 60000000, -5000000, 0, &rows), 0);
  ck_assert_int_eq(bg_write_row(f, "team-a", "USD", today + 60, 60000000,
                                -5000000, 1, &rows),
                   0);
  ck_assert_int_eq(bg_write_row(f, "team-a", "USD", today + 120, 60000000,
                                -5000000, 2, &rows),
                   0);
  ck_assert_int_eq(
      bg_write_row(f, "team-a", "EUR", today, 1000000000, 0, 3, &rows), 0);
  ck_assert_int_eq(bg_write_row(f, "team-a", "USD", month_start - 3600,
                                500000000, 0, 4, &rows),
                   0);
  ck_assert_int_eq(
      bg_write_row(f, "team-b", "USD", today, 50000000, 0, 5, &rows), 0);
  ck_assert_int_eq(bg_write_row(f, NULL, "USD", today, 70000000, 0, 6, &rows),
                   0);
  fclose(f);
  body = h_slurp(path, &len);
  unlink(path);
  ck_assert_ptr_nonnull(body);
  ingest(finance, body, len, false, &r);
  free(body);
  expect_counts(&r, 7, 0, 0);
  h_resp_free(&r);

  /* the team report: the rows, and the budget over */
  snprintf(from, sizeof(from), "%s", rows.rows[4].day);
  snprintf(to, sizeof(to), "%s", rows.rows[0].day);
  rc.from = from;
  rc.to = to;
  check_report(&rows, member_a, "team-a", &rc, false);
  b = budget_of("team-a", member_a);
  ck_assert_double_eq_tol(num_of(b, "month_to_date_net_usd"), 165, 1e-6);
  ck_assert(json_is_true(json_object_get(b, "over_budget")));
  json_decref(b);
  b = budget_of("team-b", finance);
  ck_assert_double_eq_tol(num_of(b, "month_to_date_net_usd"), 50, 1e-6);
  ck_assert(json_is_false(json_object_get(b, "over_budget")));
  json_decref(b);

  /* over: team-a's new jobs are held, team-b's are not */
  submit("team-a", member_a, "after-the-bill", id_held);
  expect_job("team-a", member_a, id_held, false);
  submit("team-b", member_b, "team-b-runs", id_b);
  expect_job("team-b", member_b, id_b, true);
  submit("team-a", member_a, "after-the-bill-2", id_held2);
  expect_job("team-a", member_a, id_held2, false);
  h_sleep_ms(800); /* several admission cycles: still held */
  expect_job("team-a", member_a, id_held, false);

  /* the budget rises: both are admitted */
  put_team_a(1000000);
  expect_job("team-a", member_a, id_held, true);
  expect_job("team-a", member_a, id_held2, true);
  b = budget_of("team-a", member_a);
  ck_assert_double_eq_tol(num_of(b, "monthly_budget_usd"), 1000000, 1e-9);
  ck_assert_double_eq_tol(num_of(b, "month_to_date_net_usd"), 165, 1e-6);
  ck_assert(json_is_false(json_object_get(b, "over_budget")));
  json_decref(b);
  bg_data_free(&rows);
}
END_TEST

/* ---- hostile stored data ------------------------------------------------ */

/* In line (owned, NUL-terminated), replace the first `from` by `to`;
 * returns a new buffer and frees line. */
static char *replace1(char *line, const char *from, const char *to)
{
  char *at = strstr(line, from), *out;
  size_t a, n;

  ck_assert_msg(at != NULL, "\"%s\" not in %s", from, line);
  a = (size_t)(at - line);
  n = strlen(line) - strlen(from) + strlen(to) + 1;
  out = malloc(n);
  ck_assert_ptr_nonnull(out);
  snprintf(out, n, "%.*s%s%s", (int)a, line, to, at + strlen(from));
  free(line);
  return out;
}

/* 1.0e308 written out: a double holds it, but not two of them summed. */
#define E300                                                                   \
  "1"                                                                          \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"                                                                 \
  "0000000000"
#define E308 E300 "00000000"

/*
 * Billing rows hold a SKU description that is a spreadsheet formula and two
 * costs of 1e308 each: every report still answers (the sum 2e308 is exact
 * in JSON, where a double would be inf), and the CSV neutralises the
 * formula while the negative credits stay numbers.
 */
START_TEST(hostile_rows_reports_answer)
{
  char path[160], want[400];
  struct bg_data rows = {NULL, 0, 0};
  struct h_resp r;
  char *line0, *line1, *body;
  size_t len0 = 0, len1 = 0, n;
  long long day = 1788220800LL; /* 2026-09-01 */
  const char *csv_hdr[] = {"Accept: text/csv", NULL};
  FILE *f;

  snprintf(path, sizeof(path), "%s/hostile0.ndjson", workdir);
  f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(
      bg_write_row(f, "team-a", "USD", day, 123456789, -357280000, 0, &rows),
      0);
  fclose(f);
  line0 = h_slurp(path, &len0);
  unlink(path);
  snprintf(path, sizeof(path), "%s/hostile1.ndjson", workdir);
  f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(
      bg_write_row(f, "team-a", "USD", day + 60, 123456789, 0, 1, &rows), 0);
  fclose(f);
  line1 = h_slurp(path, &len1);
  unlink(path);
  bg_data_free(&rows);
  ck_assert(line0 && line1);
  line0 = replace1(line0, "\"cost\":123.456789", "\"cost\":1e308");
  line0 = replace1(line0, "Nvidia L4 GPU running in Americas",
                   "=HYPERLINK(\\\"http://evil.example\\\")");
  line1 = replace1(line1, "\"cost\":123.456789", "\"cost\":1.0E+308");
  n = strlen(line0) + strlen(line1) + 1;
  body = malloc(n);
  ck_assert_ptr_nonnull(body);
  snprintf(body, n, "%s%s", line0, line1);
  ingest(finance, body, strlen(body), false, &r);
  expect_counts(&r, 2, 0, 0);
  h_resp_free(&r);
  free(body);
  free(line0);
  free(line1);

  /* JSON: 200 and the exact sum, digit for digit */
  snprintf(want, sizeof(want), "\"cost\":2%s,", E308 + 1);
  ck_assert_int_eq(h_request(&srv, "GET",
                             "/v1/costs?from=" BG_FROM "&to=" BG_TO, finance,
                             NULL, NULL, &r),
                   0);
  ck_assert_msg(r.status == 200, "JSON report: %ld %.300s", r.status, r.body);
  ck_assert_msg(strstr(r.body, want) != NULL, "no exact sum in %.800s", r.body);
  ck_assert_msg(strstr(r.body, "\"credits\":-357.28,") != NULL,
                "credits not -357.28 in %.800s", r.body);
  h_resp_free(&r);
  /* the team's report with its budget status (month-to-date 2e308) */
  ck_assert_int_eq(h_request(&srv, "GET",
                             "/v1/teams/team-a/costs?from=" BG_FROM "&to=" BG_TO
                             "&group_by=sku",
                             member_a, NULL, NULL, &r),
                   0);
  ck_assert_msg(r.status == 200, "team report: %ld %.300s", r.status, r.body);
  ck_assert_msg(strstr(r.body, want) != NULL, "no exact sum in %.800s", r.body);
  h_resp_free(&r);

  /* CSV: the formula is a quoted text starting with ', credits a number */
  ck_assert_int_eq(h_request(&srv, "GET",
                             "/v1/teams/team-a/costs?from=" BG_FROM "&to=" BG_TO
                             "&group_by=sku",
                             member_a, NULL, csv_hdr, &r),
                   0);
  ck_assert_msg(r.status == 200, "CSV report: %ld %.300s", r.status, r.body);
  ck_assert_msg(
      strstr(r.body, ",\"'=HYPERLINK(\"\"http://evil.example\"\")\",") != NULL,
      "formula not neutralised: %.800s", r.body);
  ck_assert_msg(strstr(r.body, ",=HYPERLINK") == NULL, "formula cell: %.800s",
                r.body);
  ck_assert_msg(strstr(r.body, ",-357.28,") != NULL,
                "credits not a number: %.800s", r.body);
  h_resp_free(&r);
}
END_TEST

static void setup_exact(void)
{
  start("it_costs_exact");
}

/*
 * Money stays decimal text from the wire to numeric on the upload path: a
 * cost of 12345678.123456789 (a JSON number, as a file may hold it) and a
 * credit of "-0.000000001" (a NUMERIC's quoted form) are stored, row and
 * rollup, to the last digit (before: the cost went through a double and
 * "%.15g", 12345678.1234568).
 */
START_TEST(upload_amounts_exact)
{
  static const char row[] =
      "{\"billing_account_id\":\"EXACT-0001\","
      "\"service\":{\"id\":\"S\",\"description\":\"Compute Engine\"},"
      "\"sku\":{\"id\":\"K\",\"description\":\"Nvidia L4 GPU\"},"
      "\"usage_start_time\":\"2026-07-15 05:00:00 UTC\","
      "\"labels\":[{\"key\":\"gpugate-team\",\"value\":\"team-exact\"}],"
      "\"cost\":12345678.123456789,\"currency\":\"USD\","
      "\"credits\":[{\"amount\":\"-0.000000001\"}]}\n";
  const char *hdr[] = {"Content-Type: application/x-ndjson", NULL};
  struct h_resp r;

  ck_assert_int_eq(h_request_raw(&srv, "POST", "/v1/billing/export-rows",
                                 finance, row, strlen(row), hdr, &r),
                   0);
  ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
  ck_assert_int_eq(int_of(r.json, "inserted"), 1);
  h_resp_free(&r);
  /* stored as the exact decimals they were (reports round to 6 decimals,
   * from these) */
  {
    PGconn *pg = PQconnectdb(db_url);
    PGresult *res = PQexec(pg, "SELECT cost::text || ' ' || credits::text"
                               " FROM billing_rows WHERE team = 'team-exact'");
    ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
    ck_assert_int_eq(PQntuples(res), 1);
    ck_assert_str_eq(PQgetvalue(res, 0, 0), "12345678.123456789 -0.000000001");
    PQclear(res);
    res = PQexec(pg, "SELECT sum(cost)::text || ' ' || sum(credits)::text"
                     " FROM cost_rollups WHERE team = 'team-exact'");
    ck_assert_int_eq(PQresultStatus(res), PGRES_TUPLES_OK);
    ck_assert_str_eq(PQgetvalue(res, 0, 0), "12345678.123456789 -0.000000001");
    PQclear(res);
    PQfinish(pg);
  }
}
END_TEST

Suite *costs_suite(void)
{
  Suite *s = suite_create("costs");
  TCase *tc = tcase_create("reports");

  tcase_add_unchecked_fixture(tc, setup_reports, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, ingest_plain);
  tcase_add_loop_test(tc, reports_match, 0, N_CASES);
  tcase_add_test(tc, invoice_basis_moves_rows);
  tcase_add_test(tc, unattributed_and_currencies);
  tcase_add_test(tc, finance_reads_every_team);
  tcase_add_test(tc, member_reads_own_team_only);
  tcase_add_test(tc, parameter_errors);
  tcase_add_test(tc, reload_changes_nothing);
  tcase_add_test(tc, reload_reformatted_is_duplicate);
  suite_add_tcase(s, tc);

  tc = tcase_create("gzip");
  tcase_add_unchecked_fixture(tc, setup_gzip, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, ingest_gzip);
  tcase_add_test(tc, gzip_multi_member);
  tcase_add_test(tc, gzip_truncated);
  suite_add_tcase(s, tc);

  tc = tcase_create("malformed");
  tcase_add_unchecked_fixture(tc, setup_malformed, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, ingest_malformed);
  suite_add_tcase(s, tc);

  tc = tcase_create("budget");
  tcase_add_unchecked_fixture(tc, setup_budget, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, budget_hold);
  suite_add_tcase(s, tc);

  tc = tcase_create("exact");
  tcase_add_unchecked_fixture(tc, setup_exact, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, upload_amounts_exact);
  suite_add_tcase(s, tc);

  tc = tcase_create("hostile");
  tcase_add_unchecked_fixture(tc, setup_hostile, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, hostile_rows_reports_answer);
  suite_add_tcase(s, tc);
  return s;
}
