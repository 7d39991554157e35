/*
 * billing_gen.c — the synthetic billing export of the cost tests and its
 * exact expectation (see billing_gen.h).
 *
 * Rows come from streams (a team, a SKU, a flavor, a location, a currency)
 * sampled every hour with a fixed probability, plus one row per team and
 * month end at 23:30 UTC invoiced in the next month: about 12,000 rows,
 * enough for every combination and few enough to load in seconds. Each (stream,
 * hour) is one row, so no two rows of the file are equal. A row's choices are
 * drawn first (struct line) and rendered afterwards, so that the malformed
 * variants of a row are renderings of the same choices.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/integration/billing_gen.h"

/* ---- the catalogue ------------------------------------------------------ */

struct service {
  const char *id, *desc;
};

/* The last one forces RFC 4180 quoting in CSV reports. */
static const struct service services[] = {
    {"6F81-5844-456A", "Compute Engine"},
    {"5E5F-1A2B-9C3D", "Batch"},
    {"95FF-2EF5-5EA1", "Cloud Storage"},
    {"E505-1604-58F8", "Networking, \"Premium\" Tier"},
};

enum kind { K_GPU, K_CORE, K_RAM, K_STORAGE, K_OPS, K_NET, K_BATCH };

struct sku {
  int service;
  const char *id, *desc;
  enum kind kind;
  int64_t price; /* GPU SKUs: micro-units per GPU-hour, a multiple of 100 */
};

/* Index 0 is the SKU of bg_write_row. */
static const struct sku skus[] = {
    {0, "39D8-7A2B-1F3E", "Nvidia L4 GPU running in Americas", K_GPU, 710000},
    {0, "5C1A-8B3D-2E4F", "Spot Preemptible Nvidia L4 GPU running in Americas",
     K_GPU, 220000},
    {0, "6D2B-9C4E-3F5A", "Nvidia Tesla A100 GPU running in Americas", K_GPU,
     2930000},
    {0, "7E3C-AD5F-4A6B", "Nvidia L4 GPU running in EMEA", K_GPU, 650000},
    {0, "8F4D-BE6A-5B7C", "G2 Instance Core running in Americas", K_CORE, 0},
    {0, "9A5E-CF7B-6C8D", "G2 Instance Ram running in Americas", K_RAM, 0},
    {1, "AB6F-D08C-7D9E", "Batch Job Orchestration", K_BATCH, 0},
    {2, "BC7A-E19D-8EAF", "Standard Storage US Multi-region", K_STORAGE, 0},
    {2, "CD8B-F2AE-9FB0", "Class A Operations", K_OPS, 0},
    {3, "DE9C-03BF-A0C1", "Network Internet Egress from Americas to EMEA",
     K_NET, 0},
    {3, "EFAD-14C0-B1D2", "Network Inter Zone Data Transfer Out", K_NET, 0},
};

struct location {
  const char *json;   /* the location member; NULL: absent */
  const char *region; /* what the rows are attributed to */
};

/* Index 0 is the location of bg_write_row. */
static const struct location locations[] = {
    {"{\"location\":\"us-central1\",\"country\":\"US\",\"region\":"
     "\"us-central1\",\"zone\":\"us-central1-a\"}",
     "us-central1"},
    {"{\"zone\":\"us-east4-c\"}", "us-east4"},
    {"{\"location\":\"europe-west4\",\"country\":\"NL\",\"region\":"
     "\"europe-west4\",\"zone\":\"europe-west4-b\"}",
     "europe-west4"},
    {"{\"location\":\"us\",\"country\":\"US\",\"region\":null,\"zone\":null}",
     "us"},
    {NULL, ""},
};

enum labels { L_TEAM, L_ABSENT, L_EMPTY, L_OTHER };

struct stream {
  const char *team;   /* gpugate-team value (L_TEAM; "" = empty value) */
  const char *flavor; /* gpugate-flavor value; NULL: none */
  int sku, loc;
  const char *currency;
  int permille; /* chance of a row in a given hour */
  enum labels labels;
  bool no_invoice; /* the rows carry no invoice member */
  const char *project;
};

static const struct stream streams[] = {
    {"team-a", "l4-on-demand", 0, 0, "USD", 500, L_TEAM, false, "ml-team-a"},
    {"team-a", "l4-spot", 1, 0, "USD", 450, L_TEAM, false, "ml-team-a"},
    {"team-a", "l4-on-demand", 4, 0, "USD", 400, L_TEAM, false, "ml-team-a"},
    {"team-b", "a100-compact-spot", 2, 0, "USD", 450, L_TEAM, false,
     "ml-team-b"},
    {"team-b", NULL, 7, 3, "USD", 350, L_TEAM, false, "ml-team-b"},
    {"team-b", "dws", 6, 1, "USD", 300, L_TEAM, false, "ml-team-b"},
    {"team-c", "dws", 3, 2, "EUR", 450, L_TEAM, false, "ml-team-c-eu"},
    {"team-c", "l4-reserved", 0, 0, "USD", 350, L_TEAM, false, "ml-team-c"},
    {"team-c", NULL, 9, 4, "USD", 300, L_TEAM, false, "ml-team-c"},
    {"team-d", "l4-spot", 3, 2, "EUR", 350, L_TEAM, false, "ml-team-d-eu"},
    {"team-d", NULL, 8, 3, "USD", 250, L_TEAM, false, "ml-team-d"},
    {"team-d", "l4-on-demand", 5, 0, "USD", 350, L_TEAM, false, "ml-team-d"},
    {NULL, NULL, 10, 0, "USD", 350, L_ABSENT, false, "shared-infra"},
    {NULL, NULL, 4, 2, "EUR", 250, L_OTHER, true, "shared-infra-eu"},
    {"", "l4-spot", 0, 0, "USD", 200, L_TEAM, false, "shared-infra"},
    {NULL, NULL, 7, 3, "USD", 200, L_EMPTY, false, "shared-infra"},
};
#define NSTREAMS (sizeof(streams) / sizeof(streams[0]))

/* The month-end rows: one per team and unlabelled, L4 in Americas, USD. */
static const char *const month_end_teams[] = {"team-a", "team-b", "team-c",
                                              "team-d", NULL};

/* ---- the PRNG (splitmix64) ---------------------------------------------- */

static uint64_t next(uint64_t *s)
{
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);

  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static int64_t below(uint64_t *s, int64_t n)
{
  return (int64_t)(next(s) % (uint64_t)n);
}

/* ---- text ---------------------------------------------------------------- */

struct sb {
  char buf[8192];
  size_t len;
  bool overflow;
};

static void add(struct sb *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add(struct sb *b, const char *fmt, ...)
{
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(b->buf + b->len, sizeof(b->buf) - b->len, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof(b->buf) - b->len) {
    b->overflow = true;
    return;
  }
  b->len += (size_t)n;
}

/* A JSON string (with its quotes) of s, which is plain ASCII. */
static void add_str(struct sb *b, const char *s)
{
  add(b, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      add(b, "\\%c", *s);
    else
      add(b, "%c", *s);
  }
  add(b, "\"");
}

void bg_micro_text(int64_t v, char *buf, size_t len)
{
  uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  size_t n;

  if (a % 1000000 == 0) {
    snprintf(buf, len, "%s%llu", v < 0 ? "-" : "",
             (unsigned long long)(a / 1000000));
    return;
  }
  snprintf(buf, len, "%s%llu.%06llu", v < 0 ? "-" : "",
           (unsigned long long)(a / 1000000),
           (unsigned long long)(a % 1000000));
  n = strlen(buf);
  while (n > 0 && buf[n - 1] == '0')
    buf[--n] = '\0';
}

bool bg_parse_micro(const char *s, int64_t *out)
{
  bool neg = false;
  int64_t ip = 0, fp = 0;
  int nint = 0, nfrac = 0;

  if (*s == '-') {
    neg = true;
    s++;
  }
  for (; *s >= '0' && *s <= '9'; s++, nint++) {
    if (ip > 922337203685LL)
      return false;
    ip = ip * 10 + (*s - '0');
  }
  if (*s == '.') {
    for (s++; *s >= '0' && *s <= '9'; s++, nfrac++) {
      if (nfrac == 6)
        return false;
      fp = fp * 10 + (*s - '0');
    }
    if (nfrac == 0)
      return false;
  }
  if (*s || nint == 0)
    return false;
  for (; nfrac < 6; nfrac++)
    fp *= 10;
  *out = (ip * 1000000 + fp) * (neg ? -1 : 1);
  return true;
}

/* An amount as the export may print it: trimmed ("1.5"), with six places
 * ("1.500000") or with an exponent ("1500000e-6"). */
static void add_amount(struct sb *b, int64_t v, int style)
{
  uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  char text[40];

  if (style == 1)
    add(b, "%s%llu.%06llu", v < 0 ? "-" : "", (unsigned long long)(a / 1000000),
        (unsigned long long)(a % 1000000));
  else if (style == 2 && a != 0)
    add(b, "%s%llue-6", v < 0 ? "-" : "", (unsigned long long)a);
  else {
    bg_micro_text(v, text, sizeof(text));
    add(b, "%s", text);
  }
}

/* A timestamp of t (UTC seconds) in one of the export's forms: 0 BigQuery
 * ("2026-08-01 10:00:00 UTC"), 1 RFC 3339 with Z, 2 with +02:00, 3 with
 * -05:00, 4 BigQuery with microseconds. Local time in the offset forms. */
static void add_time(struct sb *b, long long t, int style)
{
  static const long offsets[] = {0, 0, 7200, -18000, 0};
  long off = offsets[style];
  time_t local = (time_t)(t + off);
  struct tm tm;

  gmtime_r(&local, &tm);
  add(b, "%04d-%02d-%02d%c%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
      tm.tm_mday, style == 0 || style == 4 ? ' ' : 'T', tm.tm_hour, tm.tm_min,
      tm.tm_sec);
  if (style == 0)
    add(b, " UTC");
  else if (style == 1)
    add(b, "Z");
  else if (style == 4)
    add(b, ".000000 UTC");
  else
    add(b, "%c%02ld:%02ld", off < 0 ? '-' : '+', labs(off) / 3600,
        labs(off) % 3600 / 60);
}

/* ---- rows ---------------------------------------------------------------- */

enum credit_type { CR_SUD, CR_CUD, CR_PROMO, CR_FREE };

static const char *const credit_types[] = {"SUSTAINED_USAGE_DISCOUNT",
                                           "COMMITTED_USAGE_DISCOUNT",
                                           "PROMOTION", "FREE_TIER"};
static const char *const credit_names[] = {
    "Sustained Usage Discount", "Committed use discount: GPU",
    "Research credits 2026", "Free tier"};

/* The choices of one row, drawn before it is rendered. */
struct line {
  const char *team, *flavor; /* labels as in struct stream */
  enum labels labels;
  const struct sku *sku;
  const struct location *loc;
  const char *currency, *project;
  long long start;  /* UTC seconds */
  char invoice[16]; /* "YYYYMM"; "" for none */
  int64_t cost;     /* micro */
  int64_t gpu_s;    /* GPU SKUs: GPU-seconds, a multiple of 36 */
  int64_t usage_amount;
  int ncredits;
  enum credit_type ctype[2];
  int64_t credit[2]; /* micro, <= 0 */
  int time_style, cost_style, credit_style;
  bool seconds_only; /* GPU usage without amount_in_pricing_units */
  int seq;
};

enum flaw { F_NONE, F_JSON, F_COST_STRING, F_NO_CURRENCY, F_TIMESTAMP };

static void draw_amounts(struct line *l, uint64_t *rng)
{
  int64_t r, c;

  if (l->sku->kind == K_GPU) {
    int64_t gpus = 1 + below(rng, 8), k = 50 + below(rng, 51);
    l->gpu_s = gpus * k * 36;
    l->cost = gpus * k * (l->sku->price / 100);
    l->usage_amount = l->gpu_s;
    l->seconds_only = below(rng, 8) == 0;
  } else {
    l->cost = below(rng, 20) == 0 ? 0 : below(rng, 5000000);
    l->usage_amount = 1 + below(rng, 1000000);
  }
  c = l->cost;
  r = below(rng, 100);
  l->ncredits = 0;
  if (r < 30 || c == 0)
    return;
  l->ncredits = 1;
  if (r < 55) {
    l->ctype[0] = CR_SUD;
    l->credit[0] = -(c * 20 / 100);
  } else if (r < 70) {
    l->ctype[0] = CR_CUD;
    l->credit[0] = -(c * 37 / 100);
  } else if (r < 80) {
    l->ctype[0] = CR_PROMO;
    l->credit[0] = -below(rng, c + 1);
  } else if (r < 90) {
    l->ctype[0] = CR_FREE;
    l->credit[0] = c < 100000 ? -c : -100000;
  } else {
    l->ncredits = 2;
    l->ctype[0] = CR_SUD;
    l->credit[0] = -(c / 10);
    l->ctype[1] = CR_PROMO;
    l->credit[1] = -(c / 5) - 1;
  }
}

static void draw_styles(struct line *l, uint64_t *rng)
{
  int64_t r = below(rng, 100);

  l->time_style = r < 70 ? 0 : r < 80 ? 1 : r < 88 ? 2 : r < 95 ? 3 : 4;
  r = below(rng, 10);
  l->cost_style = r < 6 ? 0 : r < 9 ? 1 : 2;
  r = below(rng, 10);
  l->credit_style = r < 6 ? 0 : r < 9 ? 1 : 2;
}

static void month_of(long long t, char *yyyymm, size_t len)
{
  time_t tt = (time_t)t;
  struct tm tm;

  gmtime_r(&tt, &tm);
  strftime(yyyymm, len, "%Y%m", &tm);
}

static void add_labels(struct sb *b, const struct line *l)
{
  if (l->labels == L_ABSENT)
    return;
  add(b, "\"labels\":[");
  if (l->labels == L_OTHER)
    add(b, "{\"key\":\"env\",\"value\":\"dev\"},"
           "{\"key\":\"owner\",\"value\":\"platform\"}");
  if (l->labels == L_TEAM) {
    /* the flavor label first on odd rows: order must not matter */
    if (l->flavor && l->seq % 2)
      add(b, "{\"key\":\"gpugate-flavor\",\"value\":\"%s\"},", l->flavor);
    add(b, "{\"key\":\"gpugate-team\",\"value\":");
    add_str(b, l->team);
    add(b, "}");
    if (l->flavor && !(l->seq % 2))
      add(b, ",{\"key\":\"gpugate-flavor\",\"value\":\"%s\"}", l->flavor);
    add(b, ",{\"key\":\"gpugate-job\",\"value\":\"j-%05d\"}", l->seq / 24);
  }
  add(b, "],");
}

static void add_usage(struct sb *b, const struct line *l)
{
  add(b, "\"usage\":{");
  switch (l->sku->kind) {
  case K_GPU:
    add(b, "\"amount\":%lld,\"unit\":\"seconds\",", (long long)l->usage_amount);
    if (l->seconds_only) {
      add(b, "\"amount_in_pricing_units\":null,\"pricing_unit\":\"hour\"");
    } else {
      add(b, "\"amount_in_pricing_units\":");
      add_amount(b, l->gpu_s * 10000 / 36, 0);
      add(b, ",\"pricing_unit\":\"hour\"");
    }
    break;
  case K_CORE:
  case K_BATCH:
    add(b,
        "\"amount\":%lld,\"unit\":\"seconds\",\"amount_in_pricing_units\":"
        "%lld.%03lld,\"pricing_unit\":\"hour\"",
        (long long)l->usage_amount, (long long)(l->usage_amount / 3600),
        (long long)(l->usage_amount % 1000));
    break;
  case K_RAM:
  case K_STORAGE:
    add(b,
        "\"amount\":%lld000000,\"unit\":\"byte-seconds\","
        "\"amount_in_pricing_units\":0.%06lld,\"pricing_unit\":\"gibibyte "
        "hour\"",
        (long long)l->usage_amount, (long long)l->usage_amount);
    break;
  case K_OPS:
    add(b,
        "\"amount\":%lld,\"unit\":\"requests\",\"amount_in_pricing_units\":"
        "%lld,\"pricing_unit\":\"count\"",
        (long long)l->usage_amount, (long long)l->usage_amount);
    break;
  case K_NET:
    add(b,
        "\"amount\":%lld,\"unit\":\"bytes\",\"amount_in_pricing_units\":"
        "0.%06lld,\"pricing_unit\":\"gibibyte\"",
        (long long)l->usage_amount, (long long)l->usage_amount);
    break;
  }
  add(b, "},");
}

/* Render l as one NDJSON line (no newline) with flaw. Returns 0 or -1. */
static int render(const struct line *l, enum flaw flaw, struct sb *b)
{
  const struct service *svc = &services[l->sku->service];
  int i;

  b->len = 0;
  b->overflow = false;
  add(b, "{\"billing_account_id\":\"%s\",",
      strcmp(l->currency, "EUR") ? "01A2B3-C4D5E6-F7A8B9"
                                 : "0EU123-456789-ABCDEF");
  add(b, "\"service\":{\"id\":\"%s\",\"description\":", svc->id);
  add_str(b, svc->desc);
  add(b, "},\"sku\":{\"id\":\"%s\",\"description\":", l->sku->id);
  add_str(b, l->sku->desc);
  add(b, "},\"usage_start_time\":\"");
  if (flaw == F_TIMESTAMP)
    add(b, "2026-08-32 10:00:00 UTC");
  else
    add_time(b, l->start, l->time_style);
  add(b, "\",\"usage_end_time\":\"");
  add_time(b, l->start + 3600, l->time_style);
  add(b,
      "\",\"project\":{\"id\":\"%s\",\"number\":\"4815162342\",\"name\":\"%s\","
      "\"labels\":[],\"ancestry_numbers\":\"/271828/\"},",
      l->project, l->project);
  add_labels(b, l);
  if (l->sku->service == 0)
    add(b, "\"system_labels\":[{\"key\":\"compute.googleapis.com/"
           "machine_spec\",\"value\":\"g2-standard-24\"},{\"key\":"
           "\"compute.googleapis.com/cores\",\"value\":\"24\"}],");
  else
    add(b, "\"system_labels\":[],");
  if (l->loc->json)
    add(b, "\"location\":%s,", l->loc->json);
  add(b, "\"export_time\":\"");
  add_time(b, l->start + 4LL * 3600 + 1234, 4);
  add(b, "\",\"cost\":");
  if (flaw == F_COST_STRING)
    add(b, "\"");
  add_amount(b, l->cost, l->cost_style);
  if (flaw == F_COST_STRING) /* a quoted plain decimal is a NUMERIC's form
                                (TO_JSON_STRING): with a unit it is none */
    add(b, " USD\"");
  if (flaw != F_NO_CURRENCY)
    add(b, ",\"currency\":\"%s\"", l->currency);
  add(b, ",\"currency_conversion_rate\":%s,",
      strcmp(l->currency, "EUR") ? "1" : "0.921234");
  add_usage(b, l);
  add(b, "\"credits\":[");
  for (i = 0; i < l->ncredits; i++) {
    add(b, "%s{\"name\":\"%s\",\"amount\":", i ? "," : "",
        credit_names[l->ctype[i]]);
    add_amount(b, l->credit[i], l->credit_style);
    add(b, ",\"full_name\":null,\"id\":\"%s-%d\",\"type\":\"%s\"}",
        credit_types[l->ctype[i]], (int)l->ctype[i], credit_types[l->ctype[i]]);
  }
  add(b, "],");
  if (l->invoice[0])
    add(b, "\"invoice\":{\"month\":\"%s\"},", l->invoice);
  add(b, "\"cost_type\":\"regular\",\"adjustment_info\":null,"
         "\"x_synthetic\":{\"generator\":\"gpugate-tests\",\"v\":1}}");
  if (b->overflow)
    return -1;
  if (flaw == F_JSON)
    b->len = b->len / 2; /* cut in the middle: not JSON */
  return 0;
}

static int record(struct bg_data *d, const struct line *l)
{
  struct bg_row *r;
  time_t t = (time_t)l->start;
  struct tm tm;
  int i;

  if (d->n == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 4096;
    struct bg_row *grown = realloc(d->rows, cap * sizeof(*grown));
    if (!grown)
      return -1;
    d->rows = grown;
    d->cap = cap;
  }
  r = &d->rows[d->n++];
  memset(r, 0, sizeof(*r));
  snprintf(r->team, sizeof(r->team), "%s",
           l->labels == L_TEAM && l->team[0] ? l->team : BG_UNATTRIBUTED);
  gmtime_r(&t, &tm);
  strftime(r->day, sizeof(r->day), "%Y-%m-%d", &tm);
  snprintf(r->month, sizeof(r->month), "%.7s", r->day);
  if (l->invoice[0])
    snprintf(r->invoice, sizeof(r->invoice), "%.4s-%.2s", l->invoice,
             l->invoice + 4);
  r->service = services[l->sku->service].desc;
  r->sku = l->sku->desc;
  r->flavor = l->labels == L_TEAM && l->flavor ? l->flavor : "";
  r->location = l->loc->region;
  snprintf(r->currency, sizeof(r->currency), "%s", l->currency);
  r->cost = l->cost;
  for (i = 0; i < l->ncredits; i++)
    r->credits += l->credit[i];
  r->gpu = l->sku->kind == K_GPU ? l->gpu_s * 10000 / 36 : 0;
  return 0;
}

static int emit(FILE *f, const struct line *l, enum flaw flaw)
{
  struct sb b;

  if (render(l, flaw, &b) != 0)
    return -1;
  return fwrite(b.buf, 1, b.len, f) == b.len && fputc('\n', f) == '\n' ? 0 : -1;
}

/* Seconds since the epoch of a UTC date and time. */
static long long utc(int y, int mo, int d, int h, int mi)
{
  struct tm tm;

  memset(&tm, 0, sizeof(tm));
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  return (long long)timegm(&tm);
}

struct writer {
  FILE *plain, *bad_file;
  struct bg_data *d;
  struct bg_bad *bad;
  size_t maxbad, *nbad;
  long bad_line; /* lines written to bad_file */
  long rows;
  uint64_t *rng;
};

/* Write a valid row, after every 99th one a malformed copy of it. */
static int put_row(struct writer *w, const struct line *l)
{
  static const enum flaw flaws[] = {F_JSON, F_COST_STRING, F_NO_CURRENCY,
                                    F_TIMESTAMP};
  static const char *const errors[] = {
      "not JSON", "cost:", "currency:", "usage_start_time:"};

  if (emit(w->plain, l, F_NONE) != 0 || record(w->d, l) != 0)
    return -1;
  w->rows++;
  if (!w->bad_file)
    return 0;
  if (emit(w->bad_file, l, F_NONE) != 0)
    return -1;
  w->bad_line++;
  if (w->rows % 99 == 0) {
    int k = (int)below(w->rng, 4);
    if (emit(w->bad_file, l, flaws[k]) != 0)
      return -1;
    w->bad_line++;
    if (*w->nbad < w->maxbad) {
      w->bad[*w->nbad].line = w->bad_line;
      w->bad[*w->nbad].error = errors[k];
      (*w->nbad)++;
    }
  }
  return 0;
}

int bg_write_export(FILE *plain, FILE *bad_file, struct bg_data *d,
                    struct bg_bad *bad, size_t maxbad, size_t *nbad)
{
  uint64_t rng = 20260801;
  long long t0 = utc(2026, 8, 1, 0, 0), t1 = utc(2026, 11, 1, 0, 0), t;
  struct writer w = {plain, bad_file, d, bad, maxbad, nbad, 0, 0, &rng};
  int seq = 0;
  size_t s, k;

  if (nbad)
    *nbad = 0;
  for (t = t0; t < t1; t += 3600) {
    for (s = 0; s < NSTREAMS; s++) {
      const struct stream *st = &streams[s];
      struct line l;
      if (below(&rng, 1000) >= st->permille)
        continue;
      memset(&l, 0, sizeof(l));
      l.team = st->team;
      l.flavor = st->flavor;
      l.labels = st->labels;
      l.sku = &skus[st->sku];
      l.loc = &locations[st->loc];
      l.currency = st->currency;
      l.project = st->project;
      l.start = t;
      l.seq = seq++;
      if (!st->no_invoice)
        month_of(t, l.invoice, sizeof(l.invoice));
      draw_amounts(&l, &rng);
      draw_styles(&l, &rng);
      if (put_row(&w, &l) != 0)
        return -1;
    }
    /* 23:00 on a month's last day: the late rows invoiced next month */
    if ((t + 3600) % 86400 == 0 && t + 3600 < t1) {
      time_t tomorrow = (time_t)(t + 3600);
      struct tm tm;
      gmtime_r(&tomorrow, &tm);
      if (tm.tm_mday != 1)
        continue;
      for (k = 0; k < sizeof(month_end_teams) / sizeof(*month_end_teams); k++) {
        struct line l;
        memset(&l, 0, sizeof(l));
        l.team = month_end_teams[k];
        l.flavor = "l4-on-demand";
        l.labels = l.team ? L_TEAM : L_ABSENT;
        l.sku = &skus[0];
        l.loc = &locations[0];
        l.currency = "USD";
        l.project = "late-usage";
        l.start = t + 1800;
        l.seq = seq++;
        month_of(t + 3600, l.invoice, sizeof(l.invoice));
        draw_amounts(&l, &rng);
        draw_styles(&l, &rng);
        /* local dates in +02:00 fall on the next month: UTC must win */
        l.time_style = k % 2 ? 2 : 0;
        if (put_row(&w, &l) != 0)
          return -1;
      }
    }
  }
  /* the last month's late rows are invoiced in November */
  for (k = 0; k < sizeof(month_end_teams) / sizeof(*month_end_teams); k++) {
    struct line l;
    memset(&l, 0, sizeof(l));
    l.team = month_end_teams[k];
    l.flavor = "l4-on-demand";
    l.labels = l.team ? L_TEAM : L_ABSENT;
    l.sku = &skus[0];
    l.loc = &locations[0];
    l.currency = "USD";
    l.project = "late-usage";
    l.start = t1 - 1800;
    l.seq = seq++;
    month_of(t1, l.invoice, sizeof(l.invoice));
    draw_amounts(&l, &rng);
    draw_styles(&l, &rng);
    if (put_row(&w, &l) != 0)
      return -1;
  }
  return fflush(plain) == 0 && (!bad_file || fflush(bad_file) == 0) ? 0 : -1;
}

int bg_write_row(FILE *f, const char *team, const char *currency,
                 long long start, int64_t cost, int64_t credit, int seq,
                 struct bg_data *d)
{
  struct line l;

  memset(&l, 0, sizeof(l));
  l.team = team;
  l.flavor = "l4-on-demand";
  l.labels = team ? L_TEAM : L_ABSENT;
  l.sku = &skus[0];
  l.loc = &locations[0];
  l.currency = currency;
  l.project = "budget-test";
  l.start = start;
  l.seq = seq;
  month_of(start, l.invoice, sizeof(l.invoice));
  l.cost = cost;
  l.gpu_s = (int64_t)36 * (1 + seq);
  l.usage_amount = l.gpu_s;
  if (credit) {
    l.ncredits = 1;
    l.ctype[0] = CR_CUD;
    l.credit[0] = credit;
  }
  if (emit(f, &l, F_NONE) != 0 || record(d, &l) != 0)
    return -1;
  return fflush(f) == 0 ? 0 : -1;
}

void bg_data_free(struct bg_data *d)
{
  free(d->rows);
  memset(d, 0, sizeof(*d));
}

/* ---- the expectation ----------------------------------------------------- */

static int cmp_sum(const void *a, const void *b)
{
  return strcmp(((const struct bg_sum *)a)->key,
                ((const struct bg_sum *)b)->key);
}

long bg_expect(const struct bg_data *d, const bool dims[BG_NDIMS], bool invoice,
               bool totals, const char *from, const char *to, const char *team,
               struct bg_sum **out)
{
  struct bg_sum *s = calloc(d->n ? d->n : 1, sizeof(*s));
  size_t i, n = 0, w;

  *out = NULL;
  if (!s)
    return -1;
  for (i = 0; i < d->n; i++) {
    const struct bg_row *r = &d->rows[i];
    const char *month = invoice && r->invoice[0] ? r->invoice : r->month;
    const char *vals[BG_NDIMS] = {r->day, month,     r->service,
                                  r->sku, r->flavor, r->location};
    size_t len;
    int k;

    if (team && strcmp(r->team, team) != 0)
      continue;
    if (invoice ? strncmp(month, from, 7) < 0 || strncmp(month, to, 7) > 0
                : strcmp(r->day, from) < 0 || strcmp(r->day, to) > 0)
      continue;
    if (totals) {
      snprintf(s[n].key, sizeof(s[n].key), "%s", r->currency);
    } else {
      len = (size_t)snprintf(s[n].key, sizeof(s[n].key), "%s", r->team);
      for (k = 0; k < BG_NDIMS; k++)
        if (dims[k] && len < sizeof(s[n].key))
          len += (size_t)snprintf(s[n].key + len, sizeof(s[n].key) - len,
                                  "\t%s", vals[k]);
      if (len < sizeof(s[n].key))
        snprintf(s[n].key + len, sizeof(s[n].key) - len, "\t%s", r->currency);
    }
    s[n].cost = r->cost;
    s[n].credits = r->credits;
    s[n].gpu = r->gpu;
    s[n].rows = 1;
    n++;
  }
  qsort(s, n, sizeof(*s), cmp_sum);
  for (i = 0, w = 0; i < n; i++) {
    if (w > 0 && !strcmp(s[w - 1].key, s[i].key)) {
      s[w - 1].cost += s[i].cost;
      s[w - 1].credits += s[i].credits;
      s[w - 1].gpu += s[i].gpu;
      s[w - 1].rows += s[i].rows;
    } else {
      if (w != i)
        s[w] = s[i];
      w++;
    }
  }
  *out = s;
  return (long)w;
}

const struct bg_sum *bg_find(const struct bg_sum *s, long n, const char *key)
{
  struct bg_sum probe;

  if (n <= 0)
    return NULL;
  memset(&probe, 0, sizeof(probe));
  snprintf(probe.key, sizeof(probe.key), "%s", key);
  return bsearch(&probe, s, (size_t)n, sizeof(*s), cmp_sum);
}
