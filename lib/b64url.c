/*
 * b64url.c — base64url without padding: the one encoder and canonical
 * decoder behind tokens, key sets and cursors.
 */
#include "lib/b64url.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int b64url_value(char c)
{
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '-')
    return 62;
  if (c == '_')
    return 63;
  return -1;
}

size_t b64url_encode(const unsigned char *in, size_t n, char *out, size_t cap)
{
  size_t i, o = 0;

  /* 4 characters a whole group of 3 bytes, 2 or 3 for the rest, a NUL */
  if (n / 3 >= (cap / 4) + 1 || 4 * (n / 3) + (n % 3 ? n % 3 + 1 : 0) + 1 > cap)
    return 0;
  for (i = 0; i < n; i += 3) {
    unsigned v = (unsigned)in[i] << 16;

    if (i + 1 < n)
      v |= (unsigned)in[i + 1] << 8;
    if (i + 2 < n)
      v |= in[i + 2];
    out[o++] = alphabet[(v >> 18) & 63];
    out[o++] = alphabet[(v >> 12) & 63];
    if (i + 1 < n)
      out[o++] = alphabet[(v >> 6) & 63];
    if (i + 2 < n)
      out[o++] = alphabet[v & 63];
  }
  out[o] = '\0';
  return o;
}

int b64url_decode(const char *in, size_t len, unsigned char *out, size_t cap,
                  size_t *outlen)
{
  unsigned acc = 0, bits = 0;
  size_t i, o = 0;

  if (len % 4 == 1)
    return -1;
  for (i = 0; i < len; i++) {
    int v = b64url_value(in[i]);

    if (v < 0)
      return -1;
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (o >= cap)
        return -1;
      out[o++] = (unsigned char)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  if (acc != 0)
    return -1; /* non-canonical trailing bits */
  *outlen = o;
  return 0;
}
