/*
 * billing_numeric.c — PostgreSQL's numeric sums and division by 3600 in C
 * (see billing_numeric.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "db/billing_numeric.h"

#define MAX_DIGITS 36 /* |m| < 10^36: headroom for a sum of two */
#define MAX_SCALE 60
#define EXP_MAX 1000

/* 10^n, 0 ≤ n ≤ 38 */
static bn_int pow10_(int n)
{
  static const uint64_t p[20] = {1ULL,
                                 10ULL,
                                 100ULL,
                                 1000ULL,
                                 10000ULL,
                                 100000ULL,
                                 1000000ULL,
                                 10000000ULL,
                                 100000000ULL,
                                 1000000000ULL,
                                 10000000000ULL,
                                 100000000000ULL,
                                 1000000000000ULL,
                                 10000000000000ULL,
                                 100000000000000ULL,
                                 1000000000000000ULL,
                                 10000000000000000ULL,
                                 100000000000000000ULL,
                                 1000000000000000000ULL,
                                 10000000000000000000ULL};

  return n < 20 ? (bn_int)p[n] : (bn_int)p[19] * p[n - 19];
}

static bn_int limit(void)
{
  return pow10_(MAX_DIGITS);
}

static bn_int abs_(bn_int v)
{
  return v < 0 ? -v : v;
}

/* *m × 10^n within the limit; false when it would not fit. */
static bool scale_up(bn_int *m, int n)
{
  if (n == 0)
    return true;
  if (n < 0 || n >= MAX_DIGITS || abs_(*m) >= pow10_(MAX_DIGITS - n))
    return false;
  *m *= pow10_(n);
  return true;
}

int bnum_parse(const char *text, struct bnum *out)
{
  const char *p = text;
  bool neg = false, any = false;
  bn_int m = 0, lim10 = pow10_(MAX_DIGITS - 1);
  int frac = 0, e = 0, scale;

  if (*p == '-' || *p == '+')
    neg = *p++ == '-';
  for (; (*p >= '0' && *p <= '9') || (*p == '.' && frac == 0); p++) {
    if (*p == '.') {
      frac = -1; /* the point seen: digits after it count from here */
      continue;
    }
    if (m >= lim10)
      return -1;
    m = m * 10 + (*p - '0');
    any = true;
    if (frac < 0)
      frac--;
  }
  frac = frac < 0 ? -frac - 1 : 0;
  if (!any)
    return -1;
  if (*p == 'e' || *p == 'E') {
    bool eneg = false, edigit = false;
    p++;
    if (*p == '-' || *p == '+')
      eneg = *p++ == '-';
    for (; *p >= '0' && *p <= '9'; p++) {
      e = e * 10 + (*p - '0');
      edigit = true;
      if (e > EXP_MAX)
        return -1;
    }
    if (!edigit)
      return -1;
    if (eneg)
      e = -e;
  }
  if (*p)
    return -1;
  scale = frac - e;
  if (scale < 0) {
    if (!scale_up(&m, -scale))
      return -1;
    scale = 0;
  }
  if (scale > MAX_SCALE)
    return -1;
  out->m = neg ? -m : m;
  out->scale = scale;
  return 0;
}

int bnum_add(struct bnum *acc, const struct bnum *x)
{
  bn_int a = acc->m, b = x->m, s;
  int scale = acc->scale > x->scale ? acc->scale : x->scale;

  if (!scale_up(&a, scale - acc->scale) || !scale_up(&b, scale - x->scale))
    return -1;
  s = a + b;
  if (abs_(s) >= limit())
    return -1;
  acc->m = s;
  acc->scale = scale;
  return 0;
}

/* Decimal digits of 0 < v < 10^MAX_DIGITS. */
static int digits(bn_int v)
{
  int n = 1;

  while (n < MAX_DIGITS && v >= pow10_(n))
    n++;
  return n;
}

int bnum_div3600(const struct bnum *x, struct bnum *out)
{
  bn_int a = abs_(x->m), n, q, r;
  int weight = 0, first = 0, qweight, rscale;

  /* numeric.c select_div_scale: the weight and first digit of the
   * dividend in base 10000 (a zero's are 0), the divisor's being 0 and
   * 3600 */
  if (a > 0) {
    int e10 = digits(a) - 1 - x->scale, shift;
    weight = e10 >= 0 ? e10 / 4 : -((-e10 + 3) / 4);
    shift = x->scale + 4 * weight; /* -3 ≤ shift */
    if (shift >= 0)
      first = (int)((a / pow10_(shift)) % 10000);
    else
      first = (int)((a * pow10_(-shift)) % 10000);
  }
  qweight = weight;
  if (first <= 3600)
    qweight--;
  rscale = 16 - qweight * 4; /* NUMERIC_MIN_SIG_DIGITS, DEC_DIGITS */
  if (rscale < x->scale)
    rscale = x->scale;
  if (rscale < 0)
    rscale = 0;
  if (rscale > 1000)
    rscale = 1000;
  /* div_var: the exact quotient, rounded half away from zero at rscale */
  n = a;
  if (!scale_up(&n, rscale - x->scale))
    return -1;
  q = n / 3600;
  r = n % 3600;
  if (r * 2 >= 3600)
    q++;
  /* trim_scale (in 64 bits when it fits: 128-bit division is slow) */
  if (q <= (bn_int)UINT64_MAX) {
    uint64_t q64 = (uint64_t)q;
    while (rscale > 0 && q64 % 10 == 0) {
      q64 /= 10;
      rscale--;
    }
    q = q64;
  }
  while (rscale > 0 && q % 10 == 0) {
    q /= 10;
    rscale--;
  }
  if (q == 0)
    rscale = 0;
  out->m = x->m < 0 ? -q : q;
  out->scale = rscale;
  return 0;
}

void bnum_text(const struct bnum *x, char out[BNUM_TEXT_MAX])
{
  char rev[BNUM_TEXT_MAX];
  bn_int a = abs_(x->m);
  size_t n = 0, o = 0;

  /* the digits, least significant first, at least scale + 1 of them */
  do {
    rev[n++] = (char)('0' + (int)(a % 10));
    a /= 10;
  } while ((a > 0 || n <= (size_t)x->scale) && n < sizeof(rev));
  if (x->m < 0)
    out[o++] = '-';
  while (n > 0 && o < BNUM_TEXT_MAX - 2) {
    if (n == (size_t)x->scale)
      out[o++] = '.';
    out[o++] = rev[--n];
  }
  out[o] = '\0';
}
