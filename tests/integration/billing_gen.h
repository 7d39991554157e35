/*
 * billing_gen.h — a synthetic Cloud Billing standard usage cost export for
 * the cost tests, and the totals it must produce, computed here in exact
 * integer micro-units (no floating point anywhere in the expectation).
 *
 * The export is deterministic (a fixed-seed PRNG): NDJSON rows as BigQuery
 * writes them, hourly over 2026-08-01 .. 2026-10-31 (about 12,000), for four
 * teams and unlabelled usage, several services and SKUs (GPU SKUs priced per
 * hour and metered in seconds), two currencies, credits of four types,
 * timestamps in BigQuery's and RFC 3339's forms (with offsets that move the
 * local date), and rows just before midnight UTC at a month's end whose invoice
 * month is the next one. Every amount is drawn as an integer of micro-units and
 * printed as a decimal (trimmed, six places, or with an exponent).
 */
#ifndef GPUGATE_TEST_BILLING_GEN_H
#define GPUGATE_TEST_BILLING_GEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define BG_UNATTRIBUTED "(unattributed)"
#define BG_FROM "2026-08-01"
#define BG_TO "2026-10-31"
#define BG_NDIMS 6 /* day, month, service, sku, flavor, location */

/* What the server must make of one stored row. */
struct bg_row {
  char team[24];    /* gpugate-team, else BG_UNATTRIBUTED */
  char day[16];     /* UTC day of usage_start_time */
  char month[16];   /* its month */
  char invoice[16]; /* invoice.month as YYYY-MM; "" when the row has none */
  const char *service, *sku, *flavor, *location; /* static; "" if none */
  char currency[4];
  int64_t cost, credits; /* micro-units; net = cost + credits */
  int64_t gpu;           /* GPU-hours × 10^6 (GPU SKUs only) */
};

struct bg_data {
  struct bg_row *rows; /* owned */
  size_t n, cap;
};

/* One malformed line of the variant file, and what its error must say. */
struct bg_bad {
  long line;         /* 1-based line number in the variant file */
  const char *error; /* the error must start with this ("cost:") */
};

/* A sum of the expectation: key is the report row's text columns joined
 * by '\t' (team, the asked dimensions in BG_NDIMS order, currency), or the
 * currency alone for totals. */
struct bg_sum {
  char key[320];
  int64_t cost, credits, gpu; /* micro-units */
  long rows;
};

/*
 * Write the export to plain (one row per line) and, when bad is not NULL,
 * the same rows with about 1 % malformed lines (bad JSON, cost as a
 * string, no currency, a bad timestamp) inserted among them, recording
 * each (up to maxbad) in bad[*nbad]. Appends every row to d. Returns 0,
 * or -1 on a write or allocation failure.
 */
int bg_write_export(FILE *plain, FILE *bad_file, struct bg_data *d,
                    struct bg_bad *bad, size_t maxbad, size_t *nbad);

/*
 * Write one Compute Engine "Nvidia L4 GPU running in Americas" row of
 * team (NULL: no gpugate-team label) in currency ("USD", "EUR") starting
 * at start (seconds since the epoch, UTC), costing cost with one
 * COMMITTED_USAGE_DISCOUNT credit of credit (micro-units, <= 0; 0: no
 * credit), and append it to d. seq makes otherwise equal rows distinct.
 * Returns 0 or -1.
 */
int bg_write_row(FILE *f, const char *team, const char *currency,
                 long long start, int64_t cost, int64_t credit, int seq,
                 struct bg_data *d);

void bg_data_free(struct bg_data *d);

/*
 * The expected report over d: rows of team (NULL: every team) grouped by
 * dims (BG_NDIMS flags in the order day, month, service, sku, flavor,
 * location), or with totals the sums per currency. Rows are selected as
 * GET /v1/costs does: by UTC usage day between from and to (inclusive),
 * or with invoice by their month (invoice month where given, else the
 * usage month) between the months of from and to, which is then their
 * month. Returns the number of sums written to *out (a new array sorted by
 * key, free() it), or -1 when out of memory.
 */
long bg_expect(const struct bg_data *d, const bool dims[BG_NDIMS], bool invoice,
               bool totals, const char *from, const char *to, const char *team,
               struct bg_sum **out);

/* The sum with key in s[0..n) (sorted), or NULL. */
const struct bg_sum *bg_find(const struct bg_sum *s, long n, const char *key);

/* Micro-units as plain decimal text ("-12.05", "0"); buf of 32 bytes. */
void bg_micro_text(int64_t v, char *buf, size_t len);

/* Parse plain decimal text with at most six decimals ("-357.28", "1490")
 * into micro-units. False when s is anything else. */
bool bg_parse_micro(const char *s, int64_t *out);

#endif
