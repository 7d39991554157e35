/*
 * focus_csv.c — rollups as FOCUS 1.2 CSV rows (see focus_csv.h).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "db/months.h"
#include "billing/billing_fields.h"
#include "handlers/focus_csv.h"

#define PROVIDER "Google Cloud"

static const char *const columns[] = {"BilledCost",
                                      "BillingAccountId",
                                      "BillingAccountName",
                                      "BillingCurrency",
                                      "BillingPeriodStart",
                                      "BillingPeriodEnd",
                                      "ChargeCategory",
                                      "ChargeClass",
                                      "ChargeDescription",
                                      "ChargePeriodStart",
                                      "ChargePeriodEnd",
                                      "ContractedCost",
                                      "EffectiveCost",
                                      "InvoiceIssuerName",
                                      "ListCost",
                                      "PricingQuantity",
                                      "PricingUnit",
                                      "ProviderName",
                                      "PublisherName",
                                      "ServiceCategory",
                                      "ServiceName",
                                      "ResourceId",
                                      "Tags",
                                      "x_Team",
                                      "x_Flavor",
                                      NULL};

void focus_csv_header(struct csv_buf *b)
{
  int i;

  for (i = 0; columns[i]; i++) {
    if (i)
      csv_puts(b, ",");
    csv_puts(b, columns[i]);
  }
  csv_puts(b, "\r\n");
}

const char *focus_charge_category(const char *cost_type)
{
  static const struct {
    const char *cost_type, *category;
  } map[] = {{"regular", "Usage"},
             {"tax", "Tax"},
             {"adjustment", "Adjustment"},
             {"rounding_error", "Adjustment"}};
  size_t i;

  for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
    if (!strcmp(cost_type, map[i].cost_type))
      return map[i].category;
  return NULL;
}

const char *focus_service_category(const char *service)
{
  static const struct {
    const char *word, *category;
  } map[] = {
      {"Compute Engine", "Compute"},
      {"Batch", "Compute"},
      {"Kubernetes Engine", "Compute"},
      {"Cloud Run", "Compute"},
      {"Vertex AI", "AI and Machine Learning"},
      {"Cloud TPU", "AI and Machine Learning"},
      {"Cloud Storage", "Storage"},
      {"Filestore", "Storage"},
      {"Networking", "Networking"},
      {"Cloud DNS", "Networking"},
      {"BigQuery", "Analytics"},
      {"Cloud SQL", "Databases"},
      {"Artifact Registry", "Developer Tools"},
      {"Cloud Build", "Developer Tools"},
      {"Cloud Logging", "Management and Governance"},
      {"Cloud Monitoring", "Management and Governance"},
      {"Secret Manager", "Security"},
      {"Cloud Key Management", "Security"},
      {"Pub/Sub", "Integration"},
  };
  size_t i;

  for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
    if (strcasestr(service, map[i].word))
      return map[i].category;
  return "Other";
}

int focus_next_day(const char *day, char out[11])
{
  static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  char month[DB_MONTH_LEN];
  int d, last;

  if (!day || strlen(day) != 10 || day[7] != '-' || day[8] < '0' ||
      day[8] > '3' || day[9] < '0' || day[9] > '9')
    return -1;
  memcpy(month, day, 7);
  month[7] = '\0';
  if (!db_month_valid(month))
    return -1;
  d = (day[8] - '0') * 10 + (day[9] - '0');
  {
    int y = (int)strtol(month, NULL, 10), m = (int)strtol(month + 5, NULL, 10);
    last = mdays[m - 1];
    if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
      last = 29;
  }
  if (d < 1 || d > last)
    return -1;
  if (d < last) {
    memcpy(out, day, 8);
    out[8] = (char)('0' + (d + 1) / 10);
    out[9] = (char)('0' + (d + 1) % 10);
    out[10] = '\0';
    return 0;
  }
  if (db_month_next(month, month) != 0)
    return -1;
  memcpy(out, month, 7);
  memcpy(out + 7, "-01", 4);
  return 0;
}

/* An instant at midnight UTC of day (YYYY-MM-DD). */
static void put_midnight(struct csv_buf *b, const char *day)
{
  csv_puts(b, day);
  csv_puts(b, "T00:00:00Z");
}

/* The Tags column: the gpugate labels the rollup keeps, as a JSON object
 * (names are plain label values; quotes and backslashes escaped). */
static void put_tags(struct csv_buf *b, const struct db_focus_row *r)
{
  struct csv_buf t = {NULL, 0, 0, false};
  const char *keys[2] = {"gpugate-team", "gpugate-flavor"};
  const char *vals[2] = {r->team, r->flavor};
  int i, n = 0;

  if (!strcmp(r->team, BILLING_UNATTRIBUTED))
    vals[0] = "";
  for (i = 0; i < 2; i++) {
    const char *v = vals[i];
    if (!*v)
      continue;
    csv_puts(&t, n++ ? ",\"" : "{\"");
    csv_puts(&t, keys[i]);
    csv_puts(&t, "\":\"");
    for (; *v; v++) {
      char c[7] = {0};
      if (*v == '"' || *v == '\\') {
        c[0] = '\\';
        c[1] = *v;
      } else if ((unsigned char)*v < 0x20) {
        static const char hex[] = "0123456789abcdef";
        c[0] = '\\';
        c[1] = 'u';
        c[2] = c[3] = '0';
        c[4] = hex[(unsigned char)*v >> 4];
        c[5] = hex[*v & 15];
      } else {
        c[0] = *v;
      }
      csv_puts(&t, c);
    }
    csv_puts(&t, "\"");
  }
  if (n)
    csv_puts(&t, "}");
  if (t.failed)
    b->failed = true;
  else
    csv_field(b, t.data ? t.data : "", false);
  csv_buf_free(&t);
}

/* PricingQuantity and PricingUnit of a row of category: GPU usage in
 * hours; other usage in the export's pricing unit (FOCUS 1.2: not null on
 * Usage); none on the others (null on Tax; Credit and Adjustment rows are
 * no volume of a SKU). */
static void put_pricing(struct csv_buf *b, const struct db_focus_row *r,
                        const char *category)
{
  if (strcmp(category, "Usage") != 0) {
    csv_puts(b, ",");
  } else if (strcmp(r->gpu_hours, "0") != 0) {
    csv_field(b, r->gpu_hours, false);
    csv_puts(b, ",Hours");
  } else {
    csv_field(b, r->pricing_quantity, false);
    csv_puts(b, ",");
    csv_field(b, r->pricing_unit, false);
  }
}

/* One row: billed is the row's BilledCost; list/contracted its ListCost
 * and ContractedCost; category its ChargeCategory. */
static void put_row(struct csv_buf *b, const struct db_focus_row *r,
                    const char *category, const char *billed, const char *list,
                    const char *period_end, const char *charge_end)
{
  char month_start[11];

  memcpy(month_start, r->month, 7);
  memcpy(month_start + 7, "-01", 4);
  csv_field(b, billed, false);
  csv_puts(b, ",");
  csv_field(b, r->billing_account, false);
  csv_puts(b, ",,"); /* BillingAccountName: not in the export */
  csv_field(b, r->currency, false);
  csv_puts(b, ",");
  put_midnight(b, month_start);
  csv_puts(b, ",");
  put_midnight(b, period_end);
  csv_puts(b, ",");
  csv_puts(b, category);
  csv_puts(b, ",");
  csv_field(b, r->charge_class, false);
  csv_puts(b, ",");
  csv_field(b, r->sku, false);
  csv_puts(b, ",");
  put_midnight(b, r->day);
  csv_puts(b, ",");
  put_midnight(b, charge_end);
  csv_puts(b, ",");
  csv_field(b, list, false); /* ContractedCost */
  csv_puts(b, ",");
  csv_field(b, billed, false); /* EffectiveCost */
  csv_puts(b, "," PROVIDER ",");
  csv_field(b, list, false); /* ListCost */
  csv_puts(b, ",");
  put_pricing(b, r, category);
  csv_puts(b, "," PROVIDER "," PROVIDER ",");
  csv_puts(b, focus_service_category(r->service));
  csv_puts(b, ",");
  csv_field(b, r->service, false);
  csv_puts(b, ",,"); /* ResourceId: rollups keep none */
  put_tags(b, r);
  csv_puts(b, ",");
  csv_field(b, r->team, false);
  csv_puts(b, ",");
  csv_field(b, r->flavor, false);
  csv_puts(b, "\r\n");
}

int focus_csv_rows(struct csv_buf *b, const struct db_focus_row *r)
{
  const char *category = focus_charge_category(r->cost_type);
  char period_end[11], charge_end[11], next[DB_MONTH_LEN];

  if (!category || db_month_next(r->month, next) != 0 ||
      focus_next_day(r->day, charge_end) != 0)
    return -1;
  memcpy(period_end, next, 7);
  memcpy(period_end + 7, "-01", 4);
  put_row(b, r, category, r->cost, r->cost, period_end, charge_end);
  if (strcmp(r->credits, "0") != 0)
    put_row(b, r, "Credit", r->credits, "0", period_end, charge_end);
  return 0;
}

bool focus_wants_gzip(const char *ae)
{
  bool gzip = false, star = false, gzip_seen = false;

  while (ae && *ae) {
    const char *end = ae + strcspn(ae, ","), *p = ae, *semi;
    size_t n;
    bool zero = false;
    while (p < end && (*p == ' ' || *p == '\t'))
      p++;
    semi = memchr(p, ';', (size_t)(end - p));
    n = (size_t)((semi ? semi : end) - p);
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
      n--;
    if (semi) { /* q=0, q=0.0, q=0.000: refused */
      const char *q = semi + 1;
      while (q < end && (*q == ' ' || *q == '\t'))
        q++;
      if (end - q >= 3 && (q[0] == 'q' || q[0] == 'Q') && q[1] == '=') {
        const char *v = q + 2;
        zero = *v == '0';
        for (v++; zero && v < end && *v != ' '; v++)
          if (*v != '.' && *v != '0')
            zero = false;
      }
    }
    if ((n == 4 && !strncasecmp(p, "gzip", 4)) ||
        (n == 6 && !strncasecmp(p, "x-gzip", 6))) {
      gzip_seen = true;
      gzip = gzip || !zero;
    } else if (n == 1 && *p == '*') {
      star = !zero;
    }
    ae = *end ? end + 1 : end;
  }
  return gzip || (star && !gzip_seen);
}
