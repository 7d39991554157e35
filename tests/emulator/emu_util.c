/*
 * emu_util.c — clocks, timestamps, base64, form decoding and random ids
 * for the Batch emulator. Random bytes come from OpenSSL's CSPRNG, so ids
 * and tokens do not depend on EMU_SEED (which drives only simulated
 * behaviour: faults and outcomes).
 */
#include <errno.h>
#include <openssl/rand.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "tests/emulator/emu_util.h"

long long emu_now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long emu_wall_ms(void)
{
  struct timeval tv;

  gettimeofday(&tv, NULL);
  return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

void emu_sleep_ms(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

  while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

void emu_rfc3339(char *buf, size_t len)
{
  emu_rfc3339_ago(buf, len, 0);
}

void emu_rfc3339_ago(char *buf, size_t len, long long ago_ms)
{
  struct timeval tv;
  struct tm tm;
  char date[32];

  gettimeofday(&tv, NULL);
  if (ago_ms > 0) {
    long long us = (long long)tv.tv_sec * 1000000 + tv.tv_usec - ago_ms * 1000;
    tv.tv_sec = (time_t)(us / 1000000);
    tv.tv_usec = (suseconds_t)(us % 1000000);
  }
  gmtime_r(&tv.tv_sec, &tm);
  strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, len, "%s.%06ldZ", date, (long)tv.tv_usec);
}

static int b64val(int c)
{
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '-' || c == '+')
    return 62;
  if (c == '_' || c == '/')
    return 63;
  return -1;
}

unsigned char *emu_b64url_decode(const char *in, size_t inlen, size_t *outlen)
{
  unsigned char *out;
  size_t i, n = 0;
  uint32_t acc = 0;
  int bits = 0;

  while (inlen > 0 && in[inlen - 1] == '=')
    inlen--;
  if (inlen % 4 == 1)
    return NULL;
  out = malloc(inlen * 3 / 4 + 1);
  if (!out)
    return NULL;
  for (i = 0; i < inlen; i++) {
    int v = b64val((unsigned char)in[i]);
    if (v < 0) {
      free(out);
      return NULL;
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (unsigned char)((acc >> bits) & 0xff);
    }
  }
  out[n] = '\0';
  *outlen = n;
  return out;
}

static int hexval(int c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

bool emu_form_decode(char *s)
{
  char *r = s, *w = s;

  while (*r) {
    if (*r == '+') {
      *w++ = ' ';
      r++;
    } else if (*r == '%') {
      int hi = hexval((unsigned char)r[1]), lo;
      if (hi < 0 || (lo = hexval((unsigned char)r[2])) < 0 || (hi | lo) == 0)
        return false;
      *w++ = (char)(hi * 16 + lo);
      r += 3;
    } else {
      *w++ = *r++;
    }
  }
  *w = '\0';
  return true;
}

void emu_random_hex(char *out, size_t nbytes)
{
  static const char hex[] = "0123456789abcdef";
  unsigned char b[64];
  size_t i;

  if (nbytes > sizeof(b))
    nbytes = sizeof(b);
  if (RAND_bytes(b, (int)nbytes) != 1) {
    /* the CSPRNG never fails on Linux; fall back rather than abort */
    for (i = 0; i < nbytes; i++)
      b[i] = (unsigned char)(rand() & 0xff);
  }
  for (i = 0; i < nbytes; i++) {
    out[2 * i] = hex[b[i] >> 4];
    out[2 * i + 1] = hex[b[i] & 15];
  }
  out[2 * nbytes] = '\0';
}

void emu_uuid4(char *out, size_t len)
{
  char h[33];

  emu_random_hex(h, 16);
  h[12] = '4';
  h[16] = "89ab"[hexval((unsigned char)h[16]) & 3];
  snprintf(out, len, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16,
           h + 20);
}

bool emu_is_uuid(const char *s)
{
  size_t i;
  bool nonzero = false;

  if (strlen(s) != 36)
    return false;
  for (i = 0; i < 36; i++) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-')
        return false;
    } else if (hexval((unsigned char)s[i]) < 0) {
      return false;
    } else if (s[i] != '0') {
      nonzero = true;
    }
  }
  return nonzero;
}

bool emu_parse_long(const char *s, long long *out)
{
  char *end;

  if (!s || !*s)
    return false;
  errno = 0;
  *out = strtoll(s, &end, 10);
  return errno == 0 && *end == '\0';
}
