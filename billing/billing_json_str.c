/*
 * billing_json_str.c — the fast reader's strings (see billing_json.c):
 * JSON string syntax, escapes and UTF-8 checked as Jansson checks them,
 * decoded into the scratch only when the string has escapes.
 */
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "billing/billing_json_internal.h"

/* The UTF-8 sequence at p: its length, or 0 when Jansson would not decode
 * it (overlong forms, surrogates, beyond U+10FFFF, truncated). */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
  unsigned c = p[0];
  size_t n, i;

  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4;
  else
    return 0;
  if ((size_t)(end - p) < n)
    return 0;
  for (i = 1; i < n; i++)
    if ((p[i] & 0xC0) != 0x80)
      return 0;
  if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0) ||
      (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] >= 0x90))
    return 0;
  return n;
}

/* Four hex digits at p (end permitting) as *out; 0 or -1. */
static int hex4(const unsigned char *p, const unsigned char *end, unsigned *out)
{
  unsigned v = 0;
  int i;

  if (end - p < 4)
    return -1;
  for (i = 0; i < 4; i++) {
    unsigned c = p[i];
    if (c >= '0' && c <= '9')
      v = v * 16 + (c - '0');
    else if (c >= 'a' && c <= 'f')
      v = v * 16 + (c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v = v * 16 + (c - 'A' + 10);
    else
      return -1;
  }
  *out = v;
  return 0;
}

static size_t utf8_put(char *d, unsigned cp)
{
  if (cp < 0x80) {
    d[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    d[0] = (char)(0xC0 | (cp >> 6));
    d[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    d[0] = (char)(0xE0 | (cp >> 12));
    d[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    d[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  d[0] = (char)(0xF0 | (cp >> 18));
  d[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  d[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  d[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* The first byte at or after p that is not plain string text: printable
 * ASCII other than '"' and '\\' (so a quote, a backslash, a control
 * character or a non-ASCII byte), or end. */
static const unsigned char *skip_plain(const unsigned char *p,
                                       const unsigned char *end)
{
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                space = _mm_set1_epi8(0x20);

  while (end - p >= 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    /* signed: bytes from 0x80 are negative, below the space too */
    int mask = _mm_movemask_epi8(_mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
        _mm_cmplt_epi8(x, space)));
    if (mask)
      return p + __builtin_ctz((unsigned)mask);
    p += 16;
  }
#endif
  while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
    p++;
  return p;
}

int billing_json_string(struct billing_scratch *s, const char **at,
                        const char *stop, const char **out, size_t *outlen,
                        bool *cooked)
{
  const unsigned char *p = (const unsigned char *)*at + 1,
                      *end = (const unsigned char *)stop, *raw = p;
  char *d0, *d;

  for (;;) { /* as long as there is no escape */
    size_t n;
    p = skip_plain(p, end);
    if (p >= end || *p < 0x20)
      return -1;
    if (*p == '"') {
      *out = (const char *)raw;
      *outlen = (size_t)(p - raw);
      *cooked = false;
      *at = (const char *)p + 1;
      return 0;
    }
    if (*p == '\\')
      break;
    if ((n = utf8_len(p, end)) == 0)
      return -1;
    p += n;
  }
  /* escapes: decode into strs */
  d0 = d = s->strs + s->strs_len;
  memcpy(d, raw, (size_t)(p - raw));
  d += p - raw;
  for (;;) {
    unsigned c, cp, lo;
    size_t n;
    if (p >= end)
      return -1;
    c = *p;
    if (c == '"')
      break;
    if (c < 0x20)
      return -1;
    if (c < 0x80 && c != '\\') {
      *d++ = (char)c;
      p++;
      continue;
    }
    if (c >= 0x80) {
      if ((n = utf8_len(p, end)) == 0)
        return -1;
      memcpy(d, p, n);
      d += n;
      p += n;
      continue;
    }
    if (end - p < 2)
      return -1;
    switch (p[1]) {
    case '"':
    case '\\':
    case '/':
      *d++ = (char)p[1];
      p += 2;
      continue;
    case 'b':
      *d++ = '\b';
      p += 2;
      continue;
    case 'f':
      *d++ = '\f';
      p += 2;
      continue;
    case 'n':
      *d++ = '\n';
      p += 2;
      continue;
    case 'r':
      *d++ = '\r';
      p += 2;
      continue;
    case 't':
      *d++ = '\t';
      p += 2;
      continue;
    case 'u':
      break;
    default:
      return -1;
    }
    if (hex4(p + 2, end, &cp) != 0 || cp == 0)
      return -1;
    p += 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (end - p < 6 || p[0] != '\\' || p[1] != 'u' ||
          hex4(p + 2, end, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF)
        return -1;
      p += 6;
      cp = ((cp - 0xD800) << 10) + (lo - 0xDC00) + 0x10000;
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      return -1;
    }
    d += utf8_put(d, cp);
  }
  *d = '\0';
  *out = d0;
  *outlen = (size_t)(d - d0);
  *cooked = true;
  s->strs_len += *outlen + 1;
  *at = (const char *)p + 1;
  return 0;
}
