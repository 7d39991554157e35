/*
 * billing_fields.c — the rules of a billing export row's fields, written
 * once over struct billing_doc (see billing_fields.h), so that the Jansson
 * path and the fast reader cannot drift apart.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "billing/billing_fields.h"
#include "billing/billing_time.h"

int billing_fail(char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

/* The members of a row the rules read, looked up in one pass. */
enum {
  T_COST,
  T_CURRENCY,
  T_START,
  T_SERVICE,
  T_SKU,
  T_CREDITS,
  T_LABELS,
  T_LOCATION,
  T_INVOICE,
  T_USAGE,
  T_COST_TYPE,
  T_ACCOUNT,
  T_N
};

static const struct billing_key top_keys[T_N] = {
    [T_COST] = {"cost", 4},
    [T_CURRENCY] = {"currency", 8},
    [T_START] = {"usage_start_time", 16},
    [T_SERVICE] = {"service", 7},
    [T_SKU] = {"sku", 3},
    [T_CREDITS] = {"credits", 7},
    [T_LABELS] = {"labels", 6},
    [T_LOCATION] = {"location", 8},
    [T_INVOICE] = {"invoice", 7},
    [T_USAGE] = {"usage", 5},
    [T_COST_TYPE] = {"cost_type", 9},
    [T_ACCOUNT] = {"billing_account_id", 18},
};

static enum billing_kind kind(struct billing_doc *d, billing_val v)
{
  return d->ops->kind(d, v);
}

static billing_val get(struct billing_doc *d, billing_val o, const char *key)
{
  return d->ops->get(d, o, key);
}

static const char *str(struct billing_doc *d, billing_val v)
{
  return d->ops->string(d, v);
}

/* Whether v is absent or null. */
static bool absent(struct billing_doc *d, billing_val v)
{
  enum billing_kind k = kind(d, v);

  return k == BILLING_ABSENT || k == BILLING_NULL;
}

/* The value of key in o if it is a non-empty string, else NULL. */
static const char *nonempty(struct billing_doc *d, billing_val o,
                            const char *key)
{
  const char *s = str(d, get(d, o, key));

  return s && *s ? s : NULL;
}

int billing_zone_region(const char *zone, char *out, size_t outlen)
{
  const char *dash = strrchr(zone, '-');
  size_t n = dash && dash != zone ? (size_t)(dash - zone) : strlen(zone);

  if (n >= outlen)
    return -1;
  memcpy(out, zone, n);
  out[n] = '\0';
  return 0;
}

int billing_gpu_divisor(const char *sku_desc, const char *pricing_unit,
                        bool has_in_pricing, const char *unit, bool has_amount)
{
  if (!sku_desc || !strcasestr(sku_desc, "GPU"))
    return 0;
  if (pricing_unit && !strcmp(pricing_unit, "hour") && has_in_pricing)
    return 1;
  if (unit && !strcmp(unit, "seconds") && has_amount)
    return 3600;
  return 0;
}

bool billing_decimal_string(const char *s)
{
  const char *p = s;

  if (*p == '-')
    p++;
  if (*p < '0' || *p > '9')
    return false;
  while (*p >= '0' && *p <= '9')
    p++;
  if (*p == '.') {
    p++;
    if (*p < '0' || *p > '9')
      return false;
    while (*p >= '0' && *p <= '9')
      p++;
  }
  return *p == '\0' && (size_t)(p - s) < BILLING_AMOUNT_MAX;
}

/*
 * An amount as decimal text into out (BILLING_AMOUNT_MAX bytes): a JSON
 * number, or a string holding a plain decimal, which is how BigQuery's
 * TO_JSON_STRING writes a NUMERIC with a fractional part or beyond ±2^53
 * ("cost":"1.25"; ZetaSQL json_format.cc). The string's digits are kept as
 * they are, to PostgreSQL's numeric. 0, or -1 when v is neither.
 */
static int amount_text(struct billing_doc *d, billing_val v, char *out)
{
  const char *s;

  if (kind(d, v) == BILLING_NUMBER)
    return d->ops->number(d, v, out);
  s = kind(d, v) == BILLING_STRING ? str(d, v) : NULL;
  if (!s || !billing_decimal_string(s))
    return -1;
  memcpy(out, s, strlen(s) + 1);
  return 0;
}

/* cost: a number (or a NUMERIC's quoted decimal), as decimal text. */
static int read_cost(struct billing_doc *d, billing_val v,
                     struct billing_field_text *t, char *err, size_t errlen)
{
  if (absent(d, v))
    return billing_fail(err, errlen, "cost: required");
  if (amount_text(d, v, t->cost) != 0)
    return billing_fail(err, errlen, "cost: not a number");
  return 0;
}

/* currency: three letters, upper-cased. */
static int read_currency(struct billing_doc *d, billing_val v,
                         struct billing_field_text *t, char *err, size_t errlen)
{
  const char *s = str(d, v);
  size_t i;

  for (i = 0; s && s[i] && i < 4; i++)
    if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z')))
      break;
  if (!s || i != 3 || s[3])
    return billing_fail(err, errlen, "currency: not a 3-letter code");
  for (i = 0; i < 3; i++)
    t->currency[i] = (char)(s[i] >= 'a' ? s[i] - 'a' + 'A' : s[i]);
  t->currency[3] = '\0';
  return 0;
}

/* service / sku: an object with a description or an id. */
static int read_named(struct billing_doc *d, billing_val o, const char *key,
                      const char **name, char *err, size_t errlen)
{
  if (absent(d, o))
    return billing_fail(err, errlen, "%s: required", key);
  if (kind(d, o) != BILLING_OBJECT)
    return billing_fail(err, errlen, "%s: not an object", key);
  *name = nonempty(d, o, "description");
  if (!*name)
    *name = nonempty(d, o, "id");
  if (!*name)
    return billing_fail(err, errlen, "%s: needs an id or a description", key);
  if (strlen(*name) > BILLING_NAME_MAX)
    return billing_fail(err, errlen, "%s: longer than %d bytes", key,
                        BILLING_NAME_MAX);
  return 0;
}

/* credits[].amount, summed exactly. */
static int read_credits(struct billing_doc *d, billing_val credits,
                        struct billing_field_text *t, char *err, size_t errlen)
{
  billing_val c = BILLING_NONE;
  char text[BILLING_AMOUNT_MAX];
  size_t i;

  memcpy(t->credits, "0", 2);
  if (absent(d, credits))
    return 0;
  if (kind(d, credits) != BILLING_ARRAY)
    return billing_fail(err, errlen, "credits: not an array");
  for (i = 0; (c = d->ops->item(d, credits, c, i)) != BILLING_NONE; i++) {
    billing_val amount;
    if (kind(d, c) != BILLING_OBJECT)
      return billing_fail(err, errlen, "credits[%zu]: not an object", i);
    amount = get(d, c, "amount");
    if (amount_text(d, amount, text) != 0)
      return billing_fail(err, errlen, "credits[%zu].amount: not a number", i);
    if (billing_dec_add(t->credits, text) != 0)
      return billing_fail(err, errlen, "credits: sum out of range");
  }
  return 0;
}

/* labels[]: gpugate-team and gpugate-flavor. */
static int read_labels(struct billing_doc *d, billing_val labels,
                       struct db_billing_row *db, char *err, size_t errlen)
{
  billing_val l = BILLING_NONE;
  size_t i;

  db->team = BILLING_UNATTRIBUTED;
  db->flavor = "";
  if (absent(d, labels))
    return 0;
  if (kind(d, labels) != BILLING_ARRAY)
    return billing_fail(err, errlen, "labels: not an array");
  for (i = 0; (l = d->ops->item(d, labels, l, i)) != BILLING_NONE; i++) {
    const char *key, *value;
    billing_val v;
    bool team, flavor;
    if (kind(d, l) != BILLING_OBJECT)
      return billing_fail(err, errlen, "labels[%zu]: not an object", i);
    key = str(d, get(d, l, "key"));
    if (!key)
      return billing_fail(err, errlen, "labels[%zu].key: not a string", i);
    v = get(d, l, "value");
    if (!absent(d, v) && kind(d, v) != BILLING_STRING)
      return billing_fail(err, errlen, "labels[%zu].value: not a string", i);
    value = str(d, v);
    team = !strcmp(key, "gpugate-team");
    flavor = !team && !strcmp(key, "gpugate-flavor");
    if (value && (team || flavor) && strlen(value) > BILLING_NAME_MAX)
      return billing_fail(err, errlen,
                          "labels[%zu].value: longer than %d bytes", i,
                          BILLING_NAME_MAX);
    if (team)
      db->team = value && *value ? value : BILLING_UNATTRIBUTED;
    else if (flavor)
      db->flavor = value ? value : "";
  }
  return 0;
}

/* location.region, else location.location, else location.zone's region
 * ("us-central1-a" → "us-central1"), else "". */
static int read_location(struct billing_doc *d, billing_val loc,
                         struct db_billing_row *db,
                         struct billing_field_text *t, char *err, size_t errlen)
{
  const char *s;

  t->location[0] = '\0';
  db->location = t->location;
  if (absent(d, loc))
    return 0;
  if (kind(d, loc) != BILLING_OBJECT)
    return billing_fail(err, errlen, "location: not an object");
  if ((s = nonempty(d, loc, "region")) || (s = nonempty(d, loc, "location"))) {
    if (strlen(s) > BILLING_NAME_MAX)
      return billing_fail(err, errlen, "location: longer than %d bytes",
                          BILLING_NAME_MAX);
    db->location = s;
    return 0;
  }
  s = nonempty(d, loc, "zone");
  if (s && billing_zone_region(s, t->location, sizeof(t->location)) != 0)
    return billing_fail(err, errlen, "location: longer than %d bytes",
                        BILLING_NAME_MAX);
  return 0;
}

/* invoice.month "YYYYMM" (or "YYYY-MM") → "YYYY-MM"; "" when absent. */
static int read_invoice(struct billing_doc *d, billing_val inv,
                        struct billing_field_text *t, char *err, size_t errlen)
{
  billing_val month;
  const char *m;

  t->invoice_month[0] = '\0';
  if (absent(d, inv))
    return 0;
  if (kind(d, inv) != BILLING_OBJECT)
    return billing_fail(err, errlen, "invoice: not an object");
  month = get(d, inv, "month");
  if (absent(d, month))
    return 0;
  m = str(d, month);
  if (billing_invoice_month(m ? m : "", t->invoice_month) != 0)
    return billing_fail(err, errlen, "invoice.month: not YYYYMM");
  return 0;
}

const char *const billing_cost_types[] = {"regular", "tax", "adjustment",
                                          "rounding_error", NULL};

/* cost_type: one of billing_cost_types; "regular" when absent. A type
 * the export may add later is refused rather than summed into none of the
 * month's totals (the line is reported, nothing is stored half). */
static int read_cost_type(struct billing_doc *d, billing_val v,
                          struct db_billing_row *db, char *err, size_t errlen)
{
  const char *s;
  int i;

  db->cost_type = "regular";
  if (absent(d, v))
    return 0;
  s = str(d, v);
  for (i = 0; s && billing_cost_types[i]; i++)
    if (!strcmp(s, billing_cost_types[i])) {
      db->cost_type = billing_cost_types[i];
      return 0;
    }
  return billing_fail(
      err, errlen,
      "cost_type: must be regular, tax, adjustment or rounding_error");
}

/* billing_account_id: a string, "" when absent. */
static int read_account(struct billing_doc *d, billing_val v,
                        struct db_billing_row *db, char *err, size_t errlen)
{
  db->billing_account = "";
  if (absent(d, v))
    return 0;
  db->billing_account = str(d, v);
  if (!db->billing_account)
    return billing_fail(err, errlen, "billing_account_id: not a string");
  if (strlen(db->billing_account) > BILLING_NAME_MAX)
    return billing_fail(err, errlen, "billing_account_id: longer than %d bytes",
                        BILLING_NAME_MAX);
  return 0;
}

/* GPU-hours of GPU SKUs: usage in pricing units when those are hours,
 * else seconds of usage / 3600 (divided in SQL, exactly). */
static int read_usage(struct billing_doc *d, billing_val usage, billing_val sku,
                      struct db_billing_row *db, struct billing_field_text *t,
                      char *err, size_t errlen)
{
  billing_val in_pricing, amount;
  const char *desc = str(d, get(d, sku, "description"));
  bool has_in_pricing, has_amount;

  memcpy(t->gpu_amount, "0", 2);
  memcpy(t->pricing_quantity, "0", 2);
  db->gpu_divisor = 0;
  db->pricing_unit = "";
  if (absent(d, usage))
    return 0;
  if (kind(d, usage) != BILLING_OBJECT)
    return billing_fail(err, errlen, "usage: not an object");
  in_pricing = get(d, usage, "amount_in_pricing_units");
  amount = get(d, usage, "amount");
  has_in_pricing = kind(d, in_pricing) == BILLING_NUMBER;
  has_amount = kind(d, amount) == BILLING_NUMBER;
  if (!absent(d, in_pricing) && !has_in_pricing)
    return billing_fail(err, errlen,
                        "usage.amount_in_pricing_units: not a number");
  if (!absent(d, amount) && !has_amount)
    return billing_fail(err, errlen, "usage.amount: not a number");
  if (has_in_pricing && d->ops->number(d, in_pricing, t->pricing_quantity) != 0)
    return billing_fail(err, errlen,
                        "usage.amount_in_pricing_units: not a number");
  if (!absent(d, get(d, usage, "pricing_unit"))) {
    db->pricing_unit = str(d, get(d, usage, "pricing_unit"));
    if (!db->pricing_unit)
      return billing_fail(err, errlen, "usage.pricing_unit: not a string");
    if (strlen(db->pricing_unit) > BILLING_NAME_MAX)
      return billing_fail(err, errlen,
                          "usage.pricing_unit: longer than %d bytes",
                          BILLING_NAME_MAX);
  }
  db->gpu_divisor = billing_gpu_divisor(
      desc, str(d, get(d, usage, "pricing_unit")), has_in_pricing,
      str(d, get(d, usage, "unit")), has_amount);
  if (db->gpu_divisor &&
      d->ops->number(d, db->gpu_divisor == 1 ? in_pricing : amount,
                     t->gpu_amount) != 0)
    return billing_fail(err, errlen, "usage: not a number");
  return 0;
}

int billing_fields_read(struct billing_doc *d, struct db_billing_row *db,
                        struct billing_field_text *t, char *err, size_t errlen)
{
  billing_val top[T_N];
  const char *start;

  d->ops->lookup(d, d->root, top_keys, T_N, top);
  if (read_cost(d, top[T_COST], t, err, errlen) ||
      read_currency(d, top[T_CURRENCY], t, err, errlen))
    return -1;
  start = str(d, top[T_START]);
  if (!start || billing_parse_timestamp(start, t->usage_start, t->usage_day))
    return billing_fail(err, errlen, "usage_start_time: not a timestamp");
  if (read_named(d, top[T_SERVICE], "service", &db->service, err, errlen) ||
      read_named(d, top[T_SKU], "sku", &db->sku, err, errlen) ||
      read_credits(d, top[T_CREDITS], t, err, errlen) ||
      read_labels(d, top[T_LABELS], db, err, errlen) ||
      read_location(d, top[T_LOCATION], db, t, err, errlen) ||
      read_invoice(d, top[T_INVOICE], t, err, errlen) ||
      read_usage(d, top[T_USAGE], top[T_SKU], db, t, err, errlen) ||
      read_cost_type(d, top[T_COST_TYPE], db, err, errlen) ||
      read_account(d, top[T_ACCOUNT], db, err, errlen))
    return -1;
  db->currency = t->currency;
  db->usage_start = t->usage_start;
  db->usage_day = t->usage_day;
  db->invoice_month = t->invoice_month;
  db->cost = t->cost;
  db->credits = t->credits;
  db->gpu_amount = t->gpu_amount;
  db->pricing_quantity = t->pricing_quantity;
  return 0;
}
