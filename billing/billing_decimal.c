/*
 * billing_decimal.c — exact decimal sums of billing amounts (see
 * billing_decimal.h): a 64-bit shortcut for the common case, a fixed grid of
 * decimal digits for everything else.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "billing/billing_decimal.h"
#include "lib/real.h"

/*
 * A fixed grid of decimal digits from 10^-DEC_FRAC to 10^(DEC_INT-1): "%.15g"
 * of a double reaches down to 10^-338 (4.94065645841247e-324) and up to
 * 10^308, and a row's credits add up to far less than 10^50 times that.
 */
#define DEC_FRAC 340
#define DEC_INT 360
#define DEC_N (DEC_FRAC + DEC_INT)

struct dec {
  bool neg;
  unsigned char d[DEC_N]; /* d[i] is the digit of 10^(i - DEC_FRAC) */
};

static int dec_parse(const char *s, struct dec *out)
{
  const char *p = s, *mant, *mend, *q;
  size_t nint = 0, nfrac = 0;
  bool point = false;
  long exp = 0, power;

  memset(out, 0, sizeof(*out));
  if (*p == '-' || *p == '+')
    out->neg = *p++ == '-';
  for (mant = p; *p; p++) {
    if (*p >= '0' && *p <= '9')
      point ? nfrac++ : nint++;
    else if (*p == '.' && !point)
      point = true;
    else
      break;
  }
  mend = p;
  if (nint + nfrac == 0)
    return -1;
  if (*p == 'e' || *p == 'E') {
    char *end;
    errno = 0;
    exp = strtol(p + 1, &end, 10);
    if (end == p + 1 || *end || errno || exp > 100000 || exp < -100000)
      return -1;
  } else if (*p) {
    return -1;
  }
  power = (long)nint - 1 + exp;
  for (q = mant; q < mend; q++) {
    long idx = power + DEC_FRAC;
    if (*q == '.')
      continue;
    power--;
    if (*q == '0')
      continue;
    if (idx < 0 || idx >= DEC_N)
      return -1;
    out->d[idx] = (unsigned char)(*q - '0');
  }
  return 0;
}

static int dec_cmp_mag(const struct dec *a, const struct dec *b)
{
  int i;

  for (i = DEC_N - 1; i >= 0; i--)
    if (a->d[i] != b->d[i])
      return a->d[i] > b->d[i] ? 1 : -1;
  return 0;
}

/* out = |x| - |y|, with |x| >= |y|; out may be x or y. */
static void dec_sub_mag(struct dec *out, const struct dec *x,
                        const struct dec *y)
{
  int i, borrow = 0;

  for (i = 0; i < DEC_N; i++) {
    int v = x->d[i] - y->d[i] - borrow;
    borrow = v < 0;
    out->d[i] = (unsigned char)(v < 0 ? v + 10 : v);
  }
}

/* a += b. Returns 0, or -1 on overflow. */
static int dec_add_to(struct dec *a, const struct dec *b)
{
  int i, carry = 0;
  bool zero = true;

  if (a->neg == b->neg) {
    for (i = 0; i < DEC_N; i++) {
      int v = a->d[i] + b->d[i] + carry;
      carry = v >= 10;
      a->d[i] = (unsigned char)(carry ? v - 10 : v);
    }
    if (carry)
      return -1;
  } else if (dec_cmp_mag(a, b) >= 0) {
    dec_sub_mag(a, a, b);
  } else {
    dec_sub_mag(a, b, a);
    a->neg = b->neg;
  }
  for (i = 0; i < DEC_N && zero; i++)
    zero = a->d[i] == 0;
  if (zero)
    a->neg = false;
  return 0;
}

/* Plain decimal text ("-12.05", "0"); out holds BILLING_DEC_MAX bytes. */
static void dec_format(const struct dec *a, char *out)
{
  int hi = -1, lo = -1, i;
  size_t o = 0;

  for (i = DEC_N - 1; i >= 0 && hi < 0; i--)
    if (a->d[i])
      hi = i;
  for (i = 0; i < DEC_N && lo < 0; i++)
    if (a->d[i])
      lo = i;
  if (hi < 0) {
    out[0] = '0';
    out[1] = '\0';
    return;
  }
  if (a->neg)
    out[o++] = '-';
  if (hi < DEC_FRAC)
    out[o++] = '0';
  for (i = hi; i >= DEC_FRAC; i--)
    out[o++] = (char)('0' + a->d[i]);
  if (lo < DEC_FRAC) {
    out[o++] = '.';
    for (i = DEC_FRAC - 1; i >= lo; i--)
      out[o++] = (char)('0' + a->d[i]);
  }
  out[o] = '\0';
}

/*
 * The common case without the grid: both operands of at most 18
 * significant digits and small exponents, so that their sum is exact in 64
 * bits. Anything else (including every malformed input) is left to the
 * grid, whose results these are digit for digit.
 */
#define SMALL_DIGITS 18
#define SMALL_EXP 40

struct small_dec {
  bool neg;
  uint64_t mant; /* value = ±mant × 10^exp, mant < 10^18 */
  int exp;
};

static bool small_parse(const char *p, struct small_dec *out)
{
  int digits = 0, frac = 0, e = 0, edigits = 0;
  bool point = false, any = false, eneg = false;

  out->neg = false;
  out->mant = 0;
  if (*p == '-' || *p == '+')
    out->neg = *p++ == '-';
  for (;; p++) {
    if (*p >= '0' && *p <= '9') {
      any = true;
      frac += point;
      if (out->mant == 0 && *p == '0')
        continue;
      if (++digits > SMALL_DIGITS)
        return false;
      out->mant = out->mant * 10 + (uint64_t)(*p - '0');
    } else if (*p == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (!any)
    return false;
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '-' || *p == '+')
      eneg = *p++ == '-';
    for (; *p >= '0' && *p <= '9'; p++) {
      if (++edigits > 3)
        return false;
      e = e * 10 + (*p - '0');
    }
    if (edigits == 0)
      return false;
  }
  if (*p)
    return false;
  out->exp = (eneg ? -e : e) - frac;
  return out->exp >= -SMALL_EXP && out->exp <= SMALL_EXP;
}

/* m × 10^k into *out unless it reaches 10^18. */
static bool small_scale(uint64_t m, int k, uint64_t *out)
{
  if (k > SMALL_DIGITS || m > real_pow10[SMALL_DIGITS] / real_pow10[k])
    return false;
  *out = m * real_pow10[k];
  return *out < real_pow10[SMALL_DIGITS];
}

/* ±mag × 10^exp as dec_format writes it. */
static void small_format(bool neg, uint64_t mag, int exp, char *out)
{
  char digits[24];
  int n = 0, k, i;
  size_t o = 0;

  if (mag == 0) {
    memcpy(out, "0", 2);
    return;
  }
  while (exp < 0 && mag % 10 == 0) {
    mag /= 10;
    exp++;
  }
  for (; mag; mag /= 10)
    digits[n++] = (char)('0' + mag % 10); /* least significant first */
  if (neg)
    out[o++] = '-';
  if (exp >= 0) {
    for (i = n - 1; i >= 0; i--)
      out[o++] = digits[i];
    for (i = 0; i < exp; i++)
      out[o++] = '0';
  } else {
    k = -exp; /* fraction digits */
    if (n > k) {
      for (i = n - 1; i >= k; i--)
        out[o++] = digits[i];
    } else {
      out[o++] = '0';
    }
    out[o++] = '.';
    for (i = k - 1; i >= 0; i--)
      out[o++] = i < n ? digits[i] : '0';
  }
  out[o] = '\0';
}

static bool small_add(char *acc, const char *x)
{
  struct small_dec a, b;
  uint64_t ma, mb;
  int exp;

  if (!small_parse(acc, &a) || !small_parse(x, &b))
    return false;
  exp = a.exp < b.exp ? a.exp : b.exp;
  if (!small_scale(a.mant, a.exp - exp, &ma) ||
      !small_scale(b.mant, b.exp - exp, &mb))
    return false;
  if (a.neg == b.neg)
    small_format(a.neg, ma + mb, exp, acc);
  else if (ma >= mb)
    small_format(a.neg, ma - mb, exp, acc);
  else
    small_format(b.neg, mb - ma, exp, acc);
  return true;
}

int billing_dec_add(char *acc, const char *x)
{
  struct dec a, b;

  if (small_add(acc, x))
    return 0;
  if (dec_parse(acc, &a) != 0 || dec_parse(x, &b) != 0 ||
      dec_add_to(&a, &b) != 0)
    return -1;
  dec_format(&a, acc);
  return 0;
}

/* The grid alone, for tests: what billing_dec_add must agree with. */
int billing_dec_add_grid(char *acc, const char *x)
{
  struct dec a, b;

  if (dec_parse(acc, &a) != 0 || dec_parse(x, &b) != 0 ||
      dec_add_to(&a, &b) != 0)
    return -1;
  dec_format(&a, acc);
  return 0;
}
