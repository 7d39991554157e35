/*
 * billing.c — bulk loading of billing-export rows: building a batch (its
 * flush is db/billing_flush.c).
 *
 * A batch keeps each row as its tuple of a binary COPY into billing_rows,
 * plus its hash, its amounts as text and the index of its rollup key (team
 * × day × invoice month × service × sku × flavor × location × currency ×
 * cost type × billing account) among the batch's distinct keys. Where a
 * key is reported (its month, and whether it is a correction of a closed
 * month: db/months.h) is decided at the flush, from the closed months read
 * in its transaction. Flushing it is one transaction of two
 * statements:
 *
 *   1. one statement, given the batch as arrays (binary parameters), finds
 *      the rows whose hash is not yet in billing_rows (an index probe per
 *      row), adds exactly their sums to cost_rollups (one upsert per key,
 *      in key order), and returns which rows are new with, for GPU usage in
 *      seconds, their GPU-hours (PostgreSQL's numeric division); a batch
 *      expected to be new is summed and divided in C instead, the same way
 *      (db/billing_numeric.h), and the statement gets only the keys' sums;
 *   2. COPY ... (FORMAT binary) of the new rows straight into billing_rows,
 *      mostly sent from the batch's buffer as it is.
 *
 * Loading the same rows again therefore changes neither table. The rows go
 * to PostgreSQL once, in its binary form: no text to parse, no staging
 * table, no per-row statement.
 *
 * Concurrent loads: a row stored by another transaction between the two
 * statements (or not yet committed by it) makes the COPY fail with a
 * unique violation once that transaction commits; the batch is rolled back
 * and tried again, and the row is then known. Two loads with a row in
 * common also have its rollup key in common, and upsert keys in the same
 * order, so they queue on it rather than deadlock. No session state is used
 * (no temporary table, no SET), so this also works through PgBouncer in
 * transaction mode.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/billing.h"
#include "db/billing_batch.h"
#include "lib/rfc3339.h"

/* ---- binary forms ---------------------------------------------------- */

void bb_put_be16(unsigned char *p, unsigned v)
{
  p[0] = (unsigned char)(v >> 8);
  p[1] = (unsigned char)v;
}

void bb_put_be32(unsigned char *p, uint32_t v)
{
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

void bb_put_be64(unsigned char *p, uint64_t v)
{
  bb_put_be32(p, (uint32_t)(v >> 32));
  bb_put_be32(p + 4, (uint32_t)v);
}

/*
 * numeric_in's reading of decimal text: digits with an optional point, an
 * optional exponent; the display scale is the digits after the point less
 * the exponent (at least 0). numeric_send then writes base-10000 digits
 * without leading or trailing zero digits, the weight of the first, the
 * sign (0 or 0x4000; zero is positive) and the display scale.
 */
int db_numeric_binary(const char *text, unsigned char *out, size_t cap)
{
  const char *p = text;
  char digits[NUMERIC_MAX];
  size_t nd = 0, i;
  long nfrac = 0, exp = 0, last, dscale, weight;
  bool neg = false, point = false, any = false;
  int ngroups = 0;
  unsigned groups[NUMERIC_MAX / 4 + 2];

  if (*p == '-' || *p == '+')
    neg = *p++ == '-';
  for (; *p; p++) {
    if (*p >= '0' && *p <= '9') {
      any = true;
      nfrac += point;
      if (nd == 0 && *p == '0')
        continue; /* a leading zero */
      if (nd >= sizeof(digits))
        return -1;
      digits[nd++] = *p;
    } else if (*p == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!any)
    return -1;
  if (*p == 'e' || *p == 'E') {
    bool eneg = false;
    int ed = 0;
    p++;
    if (*p == '-' || *p == '+')
      eneg = *p++ == '-';
    for (; *p >= '0' && *p <= '9'; p++) {
      if (++ed > 5)
        return -1;
      exp = exp * 10 + (*p - '0');
    }
    if (ed == 0)
      return -1;
    exp = eneg ? -exp : exp;
  }
  if (*p)
    return -1;
  dscale = nfrac - exp < 0 ? 0 : nfrac - exp;
  if (dscale > 0x3FFF)
    return -1;
  if (nd == 0) { /* zero: no digits, weight 0, positive */
    if (cap < 8)
      return -1;
    bb_put_be16(out, 0);
    bb_put_be16(out + 2, 0);
    bb_put_be16(out + 4, 0);
    bb_put_be16(out + 6, (unsigned)dscale);
    return 8;
  }
  /* the value is digits × 10^last; base-10000 digits sit at powers of ten
   * that are multiples of 4, so pad on the right down to one */
  last = exp - nfrac;
  {
    long pad = ((last % 4) + 4) % 4, lead, n;
    char all[NUMERIC_MAX + 8];
    if (nd + (size_t)pad + 4 > sizeof(all))
      return -1;
    n = (long)nd + pad;
    lead = (4 - n % 4) % 4; /* zeros on the left to whole groups */
    memset(all, '0', (size_t)lead);
    memcpy(all + lead, digits, nd);
    memset(all + lead + (long)nd, '0', (size_t)pad);
    n += lead;
    last -= pad;
    for (i = 0; i < (size_t)n; i += 4)
      groups[ngroups++] =
          (unsigned)((all[i] - '0') * 1000 + (all[i + 1] - '0') * 100 +
                     (all[i + 2] - '0') * 10 + (all[i + 3] - '0'));
    weight = last / 4 + ngroups - 1;
  }
  while (ngroups > 0 && groups[ngroups - 1] == 0)
    ngroups--; /* trailing zero digits (the first one is never zero) */
  if (weight > 0x7FFF || weight < -0x8000 || cap < 8 + 2 * (size_t)ngroups)
    return -1;
  bb_put_be16(out, (unsigned)ngroups);
  bb_put_be16(out + 2, (unsigned)(weight & 0xFFFF));
  bb_put_be16(out + 4, neg ? 0x4000 : 0);
  bb_put_be16(out + 6, (unsigned)dscale);
  for (i = 0; i < (size_t)ngroups; i++)
    bb_put_be16(out + 8 + 2 * i, groups[i]);
  return 8 + 2 * ngroups;
}

/* Exactly n digits at p, else -1. */
static long digits_at(const char *p, int n)
{
  long v = 0;
  int i;

  for (i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9')
      return -1;
    v = v * 10 + (p[i] - '0');
  }
  return v;
}

int db_date_binary(const char *text, int32_t *days)
{
  long y = digits_at(text, 4), m, d;

  if (y < 1 || text[4] != '-' || (m = digits_at(text + 5, 2)) < 1 || m > 12 ||
      text[7] != '-' || (d = digits_at(text + 8, 2)) < 1 || d > 31 ||
      text[10] != '\0')
    return -1;
  *days = (int32_t)(rfc3339_days_from_civil(y, m, d) - 10957); /* 2000-01-01 */
  return 0;
}

int db_timestamptz_binary(const char *text, int64_t *us)
{
  int32_t days;
  char day[11];
  long h, mi, s, frac = 0;
  const char *p = text + 19;
  int n = 0;

  if (strlen(text) < 22)
    return -1;
  memcpy(day, text, 10);
  day[10] = '\0';
  if (db_date_binary(day, &days) != 0 || text[10] != ' ' ||
      (h = digits_at(text + 11, 2)) < 0 || h > 23 || text[13] != ':' ||
      (mi = digits_at(text + 14, 2)) < 0 || mi > 59 || text[16] != ':' ||
      (s = digits_at(text + 17, 2)) < 0 || s > 59)
    return -1;
  if (*p == '.') {
    for (p++; *p >= '0' && *p <= '9' && n < 6; p++, n++)
      frac = frac * 10 + (*p - '0');
    if (n == 0)
      return -1;
    for (; n < 6; n++)
      frac *= 10;
  }
  if (strcmp(p, "+00") != 0)
    return -1;
  *us = ((int64_t)days * 86400 + h * 3600 + mi * 60 + s) * 1000000 + frac;
  return 0;
}

/* ---- buffers ----------------------------------------------------------- */

int bb_reserve(struct buf *b, size_t need)
{
  size_t cap;
  char *grown;

  if (b->cap - b->len >= need)
    return 0;
  cap = b->cap ? b->cap : (size_t)64 * 1024;
  while (cap - b->len < need)
    cap *= 2;
  grown = realloc(b->p, cap);
  if (!grown)
    return -1;
  b->p = grown;
  b->cap = cap;
  return 0;
}

/* Append a COPY/array field: its length (4 bytes) and bytes. The caller
 * reserved room. */
static void bb_put_field(struct buf *b, const void *data, size_t n)
{
  bb_put_be32((unsigned char *)b->p + b->len, (uint32_t)n);
  memcpy(b->p + b->len + 4, data, n);
  b->len += 4 + n;
}

int bb_add_field(struct buf *b, const void *data, size_t n)
{
  if (bb_reserve(b, 4 + n) != 0)
    return -1;
  bb_put_field(b, data, n);
  return 0;
}

int bb_add_numeric(struct buf *b, const char *text)
{
  int n;

  if (bb_reserve(b, 4 + NUMERIC_MAX) != 0 ||
      (n = db_numeric_binary(text, (unsigned char *)b->p + b->len + 4,
                             NUMERIC_MAX)) < 0)
    return -1;
  bb_put_be32((unsigned char *)b->p + b->len, (uint32_t)n);
  b->len += 4 + (size_t)n;
  return 0;
}

int bb_add_text(struct buf *b, const char *s)
{
  return bb_add_field(b, s, strlen(s));
}

/* ---- the batch --------------------------------------------------------- */

struct db_billing_batch *db_billing_batch_new(void)
{
  return calloc(1, sizeof(struct db_billing_batch));
}

void db_billing_batch_free(struct db_billing_batch *b)
{
  if (!b)
    return;
  free(b->rows);
  free(b->tuples.p);
  free(b->text.p);
  free(b->keys.p);
  free(b->key_off);
  free(b->key_size);
  free(b->slots);
  free(b->params.p);
  free(b->uniq);
  free(b->seen);
  free(b->closed);
  free(b->gpu.p);
  free(b->sums);
  free(b->key_day);
  free(b->out.p);
  free(b->canon.p);
  free(b);
}

size_t db_billing_batch_rows(const struct db_billing_batch *b)
{
  return b->n;
}

size_t db_billing_batch_bytes(const struct db_billing_batch *b)
{
  return b->tuples.len + b->text.len + b->keys.len;
}

void bb_batch_reset(struct db_billing_batch *b)
{
  b->n = 0;
  b->tuples.len = b->text.len = b->keys.len = 0;
  b->n_keys = 0;
  b->canon.len = 0;
  b->n_canon = 0;
  if (b->slots)
    memset(b->slots, 0, b->n_slots * sizeof(*b->slots));
}

void db_billing_batch_clear(struct db_billing_batch *b)
{
  bb_batch_reset(b);
}

static uint64_t fnv1a(const char *p, size_t n)
{
  uint64_t h = 0xcbf29ce484222325u;
  size_t i;

  for (i = 0; i < n; i++) {
    h ^= (unsigned char)p[i];
    h *= 0x100000001b3u;
  }
  return h;
}

static size_t key_len(const struct db_billing_batch *b, int k)
{
  return b->key_size[k];
}

/* Grow the key table to twice its size (or 1024 slots) and rehash. */
static int rehash(struct db_billing_batch *b)
{
  size_t n = b->n_slots ? b->n_slots * 2 : 1024, i;
  int *slots = calloc(n, sizeof(*slots)), k;

  if (!slots)
    return -1;
  for (k = 0; k < b->n_keys; k++) {
    i = fnv1a(b->keys.p + b->key_off[k], key_len(b, k)) & (n - 1);
    while (slots[i])
      i = (i + 1) & (n - 1);
    slots[i] = k + 1;
  }
  free(b->slots);
  b->slots = slots;
  b->n_slots = n;
  return 0;
}

/* The index of r's rollup key in b, added if new; -1 on failure. */
static int key_of(struct db_billing_batch *b, const struct db_billing_row *r)
{
  const char *fields[N_KEY_FIELDS] = {r->team,
                                      r->usage_day,
                                      r->invoice_month,
                                      r->service,
                                      r->sku,
                                      r->flavor,
                                      r->location,
                                      r->currency,
                                      r->cost_type ? r->cost_type : "regular",
                                      r->billing_account ? r->billing_account
                                                         : "",
                                      r->pricing_unit ? r->pricing_unit : ""};
  size_t start = b->keys.len, n, i;
  int k;

  for (i = 0; i < N_KEY_FIELDS; i++)
    if (bb_add_text(&b->keys, fields[i]) != 0) {
      b->keys.len = start;
      return -1;
    }
  n = b->keys.len - start;
  if ((size_t)b->n_keys * 2 >= b->n_slots && rehash(b) != 0) {
    b->keys.len = start;
    return -1;
  }
  i = fnv1a(b->keys.p + start, n) & (b->n_slots - 1);
  while ((k = b->slots[i]) != 0) {
    k--;
    if (key_len(b, k) == n &&
        !memcmp(b->keys.p + b->key_off[k], b->keys.p + start, n)) {
      b->keys.len = start; /* known: drop the copy */
      return k;
    }
    i = (i + 1) & (b->n_slots - 1);
  }
  if (b->n_keys == b->cap_keys) {
    int cap = b->cap_keys ? b->cap_keys * 2 : 256;
    size_t *off = realloc(b->key_off, (size_t)cap * sizeof(*off)), *size;
    if (off)
      b->key_off = off;
    size = off ? realloc(b->key_size, (size_t)cap * sizeof(*size)) : NULL;
    if (!size) {
      b->keys.len = start;
      return -1;
    }
    b->key_size = size;
    b->cap_keys = cap;
  }
  b->key_off[b->n_keys] = start;
  b->key_size[b->n_keys] = n;
  b->slots[i] = b->n_keys + 1;
  return b->n_keys++;
}

int db_billing_batch_add(struct db_billing_batch *b,
                         const struct db_billing_row *r)
{
  const char *texts[] = {r->team, r->flavor,   r->service,
                         r->sku,  r->location, r->currency};
  const char *quantity = r->pricing_quantity ? r->pricing_quantity : "0";
  size_t tuple = b->tuples.len, text = b->text.len, i;
  unsigned char raw[8];
  struct brow *row;
  int64_t us;
  int32_t day;

  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 1024;
    struct brow *grown = realloc(b->rows, cap * sizeof(*grown));
    if (!grown)
      return -1;
    b->rows = grown;
    b->cap = cap;
  }
  row = &b->rows[b->n];
  if (db_timestamptz_binary(r->usage_start, &us) != 0 ||
      db_date_binary(r->usage_day, &day) != 0)
    return -1;
  /* GPU-hours are known here unless PostgreSQL divides (see sql_merge) */
  if (r->gpu_divisor != 3600) {
    if (bb_reserve(&b->tuples, 2) != 0)
      goto bad;
    bb_put_be16((unsigned char *)b->tuples.p + b->tuples.len, COPY_FIELDS);
    b->tuples.len += 2;
    if (bb_add_numeric(&b->tuples, r->gpu_divisor == 1 ? r->gpu_amount : "0") !=
        0)
      goto bad;
  }
  row->hash_at = b->tuples.len + 4; /* after the field's length */
  if (bb_add_field(&b->tuples, r->hash, DB_BILLING_HASH_LEN) != 0)
    goto bad;
  for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
    if (bb_add_text(&b->tuples, texts[i]) != 0)
      goto bad;
  bb_put_be64(raw, (uint64_t)us);
  if (bb_add_field(&b->tuples, raw, 8) != 0)
    goto bad;
  bb_put_be32(raw, (uint32_t)day);
  if (bb_add_field(&b->tuples, raw, 4) != 0 ||
      bb_add_text(&b->tuples, r->invoice_month) != 0 ||
      bb_add_numeric(&b->tuples, r->cost) != 0 ||
      bb_add_numeric(&b->tuples, r->credits) != 0 ||
      bb_add_numeric(&b->tuples, quantity) != 0 ||
      bb_add_text(&b->tuples, r->pricing_unit ? r->pricing_unit : "") != 0 ||
      bb_add_field(&b->tuples, r->row, r->row_len) != 0)
    goto bad;
  /* the amounts as text for the merge (all four checked by now: the
   * statement never meets a bad one) */
  {
    size_t lc = strlen(r->cost) + 1, lr = strlen(r->credits) + 1,
           lg = strlen(r->gpu_amount) + 1, lq = strlen(quantity) + 1;
    unsigned char probe[NUMERIC_MAX];
    if ((r->gpu_divisor == 3600 &&
         db_numeric_binary(r->gpu_amount, probe, sizeof(probe)) < 0) ||
        bb_reserve(&b->text, lc + lr + lg + lq) != 0)
      goto bad;
    memcpy(b->text.p + b->text.len, r->cost, lc);
    memcpy(b->text.p + b->text.len + lc, r->credits, lr);
    memcpy(b->text.p + b->text.len + lc + lr, r->gpu_amount, lg);
    memcpy(b->text.p + b->text.len + lc + lr + lg, quantity, lq);
    b->text.len += lc + lr + lg + lq;
  }
  if ((row->key = key_of(b, r)) < 0)
    goto bad;
  if (b->n == 0 || us > b->latest_us)
    b->latest_us = us;
  memcpy(row->hash, r->hash, DB_BILLING_HASH_LEN);
  row->tuple = tuple;
  row->tuple_len = b->tuples.len - tuple;
  row->amounts = text;
  row->divisor = r->gpu_divisor;
  row->fresh = false;
  b->n++;
  return 0;
bad:
  b->tuples.len = tuple;
  b->text.len = text;
  return -1;
}

int bb_hash_pending(struct db_billing_batch *b)
{
  const unsigned char *msg[SHA256_LANES];
  unsigned char out[SHA256_LANES][SHA256_LEN];
  int i;

  if (b->n_canon == 0)
    return 0;
  for (i = 0; i < b->n_canon; i++)
    msg[i] = (const unsigned char *)b->canon.p + b->canon_off[i];
  if (sha256_lanes((size_t)b->n_canon, msg, b->canon_len, out) != 0)
    return -1;
  for (i = 0; i < b->n_canon; i++) {
    struct brow *row = &b->rows[b->canon_row[i]];
    memcpy(row->hash, out[i], DB_BILLING_HASH_LEN);
    memcpy(b->tuples.p + row->hash_at, out[i], DB_BILLING_HASH_LEN);
  }
  b->n_canon = 0;
  b->canon.len = 0;
  return 0;
}

int db_billing_batch_add_canonical(struct db_billing_batch *b,
                                   const struct db_billing_row *r,
                                   const char *canon, size_t canon_len)
{
  int i;

  if (!canon)
    return db_billing_batch_add(b, r);
  /* SHA256_LANES waiting: hashed before one more joins them */
  if (b->n_canon == SHA256_LANES && bb_hash_pending(b) != 0)
    return -1;
  if (bb_reserve(&b->canon, canon_len) != 0 || db_billing_batch_add(b, r) != 0)
    return -1;
  i = b->n_canon++;
  memcpy(b->canon.p + b->canon.len, canon, canon_len);
  b->canon_off[i] = b->canon.len;
  b->canon_len[i] = canon_len;
  b->canon_row[i] = b->n - 1;
  b->canon.len += canon_len;
  return 0;
}
