/*
 * fuzz_billing_row.c — the billing row parser as a differential fuzzer: the
 * input is one line of a billing export. The engine's parser (the
 * single-pass reader, falling back to Jansson for whatever it declines)
 * and the Jansson path alone must agree: both accept or both reject with
 * the same message, and an accepted row has the same fields and the same
 * row hash either way (amounts: the same value, see same_amount). The same
 * input is then fed to the line splitter in two pieces split at every position
 * the first byte picks, which must see the same lines whatever the split.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/billing_ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const char *what, const char *a, const char *b)
{
  if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0)) {
    fprintf(stderr, "fast and Jansson disagree on %s: \"%s\" vs \"%s\"\n", what,
            a ? a : "(null)", b ? b : "(null)");
    abort();
  }
}

/* An amount: the fast reader keeps a number's text as written (and sums
 * credits exactly), the Jansson path (only for rows the fast reader
 * declines) holds a real as a double and writes "%.17g"; the two must agree
 * to a double's precision. */
static void same_amount(const char *what, const char *a, const char *b)
{
  double x, y, m;

  if (a && b && strcmp(a, b) != 0) {
    x = strtod(a, NULL);
    y = strtod(b, NULL);
    m = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
    if (fabs(x - y) <= m * 1e-12)
      return;
  }
  same(what, a, b);
}

static void compare(const char *line, size_t n, struct billing_scratch *scratch)
{
  struct billing_row fast, ref;
  char ferr[256] = "", jerr[256] = "";
  int frc = billing_parse_row_with(scratch, line, n, &fast, ferr, sizeof(ferr));
  int jrc = billing_parse_row_jansson(line, n, &ref, jerr, sizeof(jerr));

  if (frc != 0 && jrc == 0 && !strcmp(ferr, BILLING_NOT_EXACT)) {
    /* only Jansson reads the row, and its amounts through a double:
     * refused where the reference takes them by value */
    billing_row_clear(&ref);
    return;
  }
  if (frc != jrc) {
    fprintf(stderr, "fast %s (%s), Jansson %s (%s)\n",
            frc ? "rejects" : "accepts", ferr, jrc ? "rejects" : "accepts",
            jerr);
    abort();
  }
  if (frc != 0) {
    same("the error", ferr, jerr);
    return;
  }
  same_amount("cost", fast.db.cost, ref.db.cost);
  same("currency", fast.db.currency, ref.db.currency);
  same("usage_start", fast.db.usage_start, ref.db.usage_start);
  same("usage_day", fast.db.usage_day, ref.db.usage_day);
  same("invoice_month", fast.db.invoice_month, ref.db.invoice_month);
  same("service", fast.db.service, ref.db.service);
  same("sku", fast.db.sku, ref.db.sku);
  same("team", fast.db.team, ref.db.team);
  same("flavor", fast.db.flavor, ref.db.flavor);
  same("location", fast.db.location, ref.db.location);
  same_amount("credits", fast.db.credits, ref.db.credits);
  same_amount("gpu_amount", fast.db.gpu_amount, ref.db.gpu_amount);
  same_amount("pricing_quantity", fast.db.pricing_quantity,
              ref.db.pricing_quantity);
  same("pricing_unit", fast.db.pricing_unit, ref.db.pricing_unit);
  same("cost_type", fast.db.cost_type, ref.db.cost_type);
  same("billing_account", fast.db.billing_account, ref.db.billing_account);
  if (fast.db.gpu_divisor != ref.db.gpu_divisor ||
      memcmp(fast.db.hash, ref.db.hash, sizeof(fast.db.hash)) != 0 ||
      fast.db.row != ref.db.row || fast.db.row_len != ref.db.row_len) {
    fprintf(stderr, "fast and Jansson disagree on the divisor or hash\n");
    abort();
  }
  billing_row_clear(&fast);
  billing_row_clear(&ref);
}

struct seen {
  uint64_t sum; /* a digest of the lines seen, in order */
  long lines;
};

static int on_line(void *ctx, long lineno, const char *line, size_t len,
                   bool too_long)
{
  struct seen *s = ctx;
  size_t i;

  s->sum = s->sum * 1000003u + (uint64_t)lineno * 31u + too_long;
  for (i = 0; line && i < len; i++)
    s->sum = s->sum * 131u + (unsigned char)line[i];
  s->lines++;
  return 0;
}

/* The lines of data[0..n) split into pieces at cut, with max 64. */
static struct seen split(const char *data, size_t n, size_t cut)
{
  struct billing_splitter sp;
  struct seen s = {0, 0};

  billing_splitter_init(&sp, 64);
  if (billing_splitter_feed(&sp, data, cut, on_line, &s) != 0 ||
      billing_splitter_feed(&sp, data + cut, n - cut, on_line, &s) != 0 ||
      billing_splitter_finish(&sp, on_line, &s) != 0)
    abort();
  billing_splitter_free(&sp);
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static struct billing_scratch *scratch;
  char *line;
  struct seen whole, cut;

  if (!scratch && !(scratch = billing_scratch_new()))
    abort();
  if (size > 65536)
    return 0;
  line = malloc(size ? size : 1); /* exactly size bytes: ASan sees over-reads */
  if (!line)
    return 0;
  if (size)
    memcpy(line, data, size);
  compare(line, size, scratch);
  whole = split(line, size, size);
  cut = split(line, size, size ? data[0] % (size + 1) : 0);
  if (whole.sum != cut.sum || whole.lines != cut.lines)
    abort(); /* the same lines whatever the split */
  free(line);
  return 0;
}
