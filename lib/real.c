/*
 * real.c — reals without printf (see real.h).
 *
 * Each real of a row is read (strtod) and written back with 17 significant
 * digits for the canonical text, amounts with 15. glibc does both exactly
 * but slowly (multi-precision arithmetic). For most values exact 64- and
 * 128-bit integer arithmetic does the same: these functions take that
 * path and leave every other value to glibc, with the same results (the
 * unit tests compare the two on many values).
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/real.h"

__extension__ typedef unsigned __int128 u128;

const uint64_t real_pow10[REAL_POW10_N] = {1u,
                                           10u,
                                           100u,
                                           1000u,
                                           10000u,
                                           100000u,
                                           1000000u,
                                           10000000u,
                                           100000000u,
                                           1000000000u,
                                           10000000000u,
                                           100000000000u,
                                           1000000000000u,
                                           10000000000000u,
                                           100000000000000u,
                                           1000000000000000u,
                                           10000000000000000u,
                                           100000000000000000u,
                                           1000000000000000000u};

static const double pow10_dbl[] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* 5^0 .. 5^27, the powers below 2^63 */
static const uint64_t pow5_u64[] = {1u,
                                    5u,
                                    25u,
                                    125u,
                                    625u,
                                    3125u,
                                    15625u,
                                    78125u,
                                    390625u,
                                    1953125u,
                                    9765625u,
                                    48828125u,
                                    244140625u,
                                    1220703125u,
                                    6103515625u,
                                    30517578125u,
                                    152587890625u,
                                    762939453125u,
                                    3814697265625u,
                                    19073486328125u,
                                    95367431640625u,
                                    476837158203125u,
                                    2384185791015625u,
                                    11920928955078125u,
                                    59604644775390625u,
                                    298023223876953125u,
                                    1490116119384765625u,
                                    7450580596923828125u};

/*
 * strtod of a JSON number's text (valid, len < BILLING_NUM_MAX). Clinger's
 * fast path: a significand below 2^53 and a power of ten up to 10^22 are
 * both exact doubles, so one multiplication or division, rounded to
 * nearest, is the correctly rounded value strtod returns.
 */
static double read_real(const char *s, size_t len)
{
  char text[BILLING_NUM_MAX];
  uint64_t m = 0;
  size_t i = 0;
  int nd = 0, frac = 0, e = 0;
  bool neg = false, point = false;

  if (FLT_EVAL_METHOD != 0)
    goto slow;
  if (s[0] == '-') {
    neg = true;
    i = 1;
  }
  for (; i < len; i++) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      frac += point;
      if (m == 0 && c == '0')
        continue;
      if (++nd > 19)
        goto slow;
      m = m * 10 + (uint64_t)(c - '0');
    } else if (c == '.') {
      point = true;
    } else {
      break;
    }
  }
  if (i < len) { /* the exponent */
    bool eneg = false;
    int ev = 0;
    i++;
    if (s[i] == '+' || s[i] == '-')
      eneg = s[i++] == '-';
    for (; i < len; i++) {
      if (ev > 100000)
        goto slow;
      ev = ev * 10 + (s[i] - '0');
    }
    e = eneg ? -ev : ev;
  }
  e -= frac;
  if (m == 0)
    return neg ? -0.0 : 0.0;
  if (m <= (uint64_t)1 << 53 && e >= -22 && e <= 22) {
    double v = (double)m;
    v = e >= 0 ? v * pow10_dbl[e] : v / pow10_dbl[-e];
    return neg ? -v : v;
  }
slow:
  memcpy(text, s, len);
  text[len] = '\0';
  return strtod(text, NULL);
}

static u128 pow10_u128(int k)
{
  u128 v = 1;

  while (k-- > 0)
    v *= 10;
  return v;
}

/*
 * The first p (15 or 17) significant digits of v > 0 as printf rounds them
 * (to nearest, ties to even, on the exact binary value): *d, with
 * 10^(p-1) <= *d < 10^p, and the decimal exponent *x of the first one.
 * False when v is outside what 128 bits do exactly.
 */
static bool sig_digits(double v, int p, uint64_t *d, int *x)
{
  uint64_t bits, m, lo = real_pow10[p - 1], hi = real_pow10[p];
  int be, e2, k, tries;
  u128 q;

  memcpy(&bits, &v, sizeof(bits));
  be = (int)((bits >> 52) & 0x7FF);
  if (be == 0 || be == 0x7FF)
    return false; /* subnormal, infinite or NaN */
  m = (bits & (((uint64_t)1 << 52) - 1)) | (uint64_t)1 << 52;
  e2 = be - 1075; /* v = m × 2^e2 */
  /* floor(log10(v)), or one less: v is in [2^E, 2^(E+1)), log10(2) is
   * about 78913 / 2^18; the loop below corrects the estimate */
  {
    int e = be - 1023;
    *x = e >= 0 ? (e * 78913) >> 18 : -((-e * 78913 + (1 << 18) - 1) >> 18);
  }
  for (tries = 0; tries < 3; tries++) {
    bool up;        /* whether the digits after the p-th round q up */
    k = p - 1 - *x; /* q = v × 10^k, truncated */
    if (k >= 0) {
      u128 num;
      int sh;
      if (k > 27)
        return false;
      num = (u128)m * pow5_u64[k]; /* < 2^116 */
      sh = e2 + k;
      if (sh >= 0) {
        if (sh > 8)
          return false;
        q = num << sh;
        up = false;
      } else {
        u128 rem, half;
        if (-sh > 120)
          return false;
        rem = num & (((u128)1 << -sh) - 1);
        half = (u128)1 << (-sh - 1);
        q = num >> -sh;
        up = rem > half || (rem == half && (q & 1));
      }
    } else {
      u128 num, den, rem;
      if (-k > 38 || e2 < 0 || e2 > 74)
        return false;
      num = (u128)m << e2;
      den = pow10_u128(-k);
      q = num / den;
      rem = num % den;
      up = 2 * rem > den || (2 * rem == den && (q & 1));
    }
    /* the estimate of the exponent was off when v × 10^k has not p digits */
    if (q >= hi) {
      (*x)++;
    } else if (q < lo) {
      (*x)--;
    } else {
      q += up;
      if (q == hi) { /* 9.99…95 rounds to 10.0…0: one exponent up */
        q = lo;
        (*x)++;
      }
      *d = (uint64_t)q;
      return true;
    }
  }
  return false;
}

/*
 * printf's "%.<p>g" of ±d × 10^(x - p + 1) (from sig_digits) into out (32
 * bytes); with jansson, as Jansson 2.14's jsonp_dtostr then rewrites it:
 * ".0" after an integer, no '+' nor leading zeros in the exponent.
 */
static size_t g_format(bool neg, uint64_t d, int x, int p, bool jansson,
                       char *out)
{
  char dig[20] = {0};
  int n = p, i;
  size_t o = 0;

  for (i = p - 1; i >= 0; i--) {
    dig[i] = (char)('0' + d % 10);
    d /= 10;
  }
  while (n > 1 && dig[n - 1] == '0')
    n--; /* trailing zeros are not written */
  if (neg)
    out[o++] = '-';
  if (x < -4 || x >= p) {
    int ax = x < 0 ? -x : x;
    out[o++] = dig[0];
    if (n > 1) {
      out[o++] = '.';
      memcpy(out + o, dig + 1, (size_t)n - 1);
      o += (size_t)n - 1;
    }
    out[o++] = 'e';
    if (x < 0)
      out[o++] = '-';
    else if (!jansson)
      out[o++] = '+';
    if (ax >= 100)
      out[o++] = (char)('0' + ax / 100);
    if (ax >= 10 || !jansson)
      out[o++] = (char)('0' + ax / 10 % 10);
    out[o++] = (char)('0' + ax % 10);
  } else if (x >= 0) {
    memcpy(out + o, dig, (size_t)x + 1);
    o += (size_t)x + 1;
    if (n > x + 1) {
      out[o++] = '.';
      memcpy(out + o, dig + x + 1, (size_t)(n - x - 1));
      o += (size_t)(n - x - 1);
    } else if (jansson) {
      out[o++] = '.';
      out[o++] = '0';
    }
  } else {
    out[o++] = '0';
    out[o++] = '.';
    for (i = 0; i < -x - 1; i++)
      out[o++] = '0';
    memcpy(out + o, dig, (size_t)n);
    o += (size_t)n;
  }
  out[o] = '\0';
  return o;
}

/*
 * A real as Jansson 2.14 dumps it (jsonp_dtostr) with a precision (17 in
 * its sorted dump, 15 in gpugate's replies): "%.<precision>g", ".0" added
 * when it looks like an integer, the exponent's '+' and leading zeros
 * removed. Its length, or 0 when Jansson's buffer could not hold it (the
 * dump then fails).
 */
size_t billing_real_jansson(double v, int precision, char *buf, size_t size)
{
  uint64_t d;
  int ret, x;
  size_t length;
  char *start, *stop;

  if (v == 0 && size >= 5)
    return (size_t)snprintf(buf, size, "%s", signbit(v) ? "-0.0" : "0.0");
  if (size >= 32 && precision >= 1 && precision <= 17 &&
      sig_digits(fabs(v), precision, &d, &x))
    return g_format(signbit(v) != 0, d, x, precision, true, buf);
  ret = snprintf(buf, size, "%.*g", precision, v);
  if (ret < 0 || (size_t)ret >= size)
    return 0;
  length = (size_t)ret;
  if (!strchr(buf, '.') && !strchr(buf, 'e')) {
    if (length + 3 >= size)
      return 0;
    memcpy(buf + length, ".0", 3);
    length += 2;
  }
  start = strchr(buf, 'e');
  if (start) {
    start++;
    stop = start + 1;
    if (*start == '-')
      start++;
    while (*stop == '0')
      stop++;
    if (stop != start) {
      memmove(start, stop, length - (size_t)(stop - buf) + 1);
      length -= (size_t)(stop - start);
    }
  }
  return length;
}

size_t billing_real_text(double v, char *buf, size_t size)
{
  return billing_real_jansson(v, 17, buf, size);
}

double billing_read_real(const char *s, size_t len)
{
  return len < BILLING_NUM_MAX ? read_real(s, len) : strtod(s, NULL);
}
