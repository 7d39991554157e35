/*
 * fuzz_clientaddr.c — trusted-proxy networks and forwarded headers
 * (server/clientaddr.h). The input's first byte chooses the header
 * (bit 0: Forwarded) and the peer (bit 1: 192.0.2.1, not trusted; else
 * 10.0.0.1); the rest is split into lines: the first is a
 * GPUGATE_HTTP_TRUSTED_PROXIES value (the default 10.0.0.0/8, ::1 when it
 * does not parse), the others the header's lines.
 *
 * Findings, besides a crash, a leak or undefined behaviour: a network with
 * bits set after its prefix; an untrusted peer whose header was read; a
 * found hop that is trusted, a leftmost hop that is not, a fallback that
 * is not the peer; and a hop or fallback that a line put before the others
 * (what a client can write) changes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "server/clientaddr.h"
#include "tests/fuzz/fake_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_LINES (CLIENTADDR_MAX_HOPS + 8)

static bool same(const struct clientaddr *a, const struct clientaddr *b)
{
  return clientaddr_equal(a, b);
}

static void check_nets(const struct clientaddr_net *nets, int n)
{
  int i;

  for (i = 0; i < n; i++) {
    struct clientaddr back;
    char text[CLIENTADDR_TEXT];
    unsigned bits = nets[i].base.family == AF_INET ? 32u : 128u, b;
    if (nets[i].prefix > bits)
      abort();
    for (b = nets[i].prefix; b < bits; b++)
      if (nets[i].base.bytes[b / 8] & (0x80u >> (b % 8)))
        abort(); /* a host bit */
    clientaddr_format(&nets[i].base, text);
    if (clientaddr_parse(text, strlen(text), &back) != 0 ||
        !same(&back, &nets[i].base) ||
        !clientaddr_in_nets(&nets[i].base, &nets[i], 1))
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct clientaddr_net nets[CLIENTADDR_MAX_NETS];
  struct clientaddr peer, out, again;
  const char *lines[MAX_LINES + 1];
  char *copy, *p, *first, err[256];
  enum clientaddr_header kind;
  enum clientaddr_from from;
  size_t nlines = 0;
  bool truncated = false;
  int n;

  if (size < 1 || size > 16384)
    return 0;
  kind = data[0] & 1 ? CLIENTADDR_FORWARDED : CLIENTADDR_X_FORWARDED_FOR;
  clientaddr_parse(data[0] & 2 ? "192.0.2.1" : "10.0.0.1", data[0] & 2 ? 9 : 8,
                   &peer);
  copy = fuzz_strndup(data + 1, size - 1);
  if (!copy)
    return 0;
  first = copy;
  p = strchr(copy, '\n');
  if (p)
    *p++ = '\0';
  if (clientaddr_parse_nets("GPUGATE_HTTP_TRUSTED_PROXIES", first, nets,
                            CLIENTADDR_MAX_NETS, &n, err, sizeof(err)) == 0)
    check_nets(nets, n);
  else if (clientaddr_parse_nets("V", "10.0.0.0/8, ::1", nets,
                                 CLIENTADDR_MAX_NETS, &n, err,
                                 sizeof(err)) != 0)
    abort();
  while (p) { /* the header's lines; beyond MAX_LINES left out */
    char *next = strchr(p, '\n');
    if (next)
      *next++ = '\0';
    if (nlines == MAX_LINES) {
      memmove(lines, lines + 1, (MAX_LINES - 1) * sizeof(lines[0]));
      nlines--;
      truncated = true;
    }
    lines[nlines++] = p;
    p = next;
  }

  /* lines + 1: one free slot in front for the client's own line */
  memmove(lines + 1, lines, nlines * sizeof(lines[0]));
  from = clientaddr_resolve(nets, n, &peer, kind, lines + 1, nlines, truncated,
                            &out);
  if (!clientaddr_in_nets(&peer, nets, n) && from != CLIENTADDR_PEER)
    abort();
  switch (from) {
  case CLIENTADDR_PEER:
  case CLIENTADDR_FALLBACK:
    if (!same(&out, &peer))
      abort();
    break;
  case CLIENTADDR_HOP:
    if (clientaddr_in_nets(&out, nets, n))
      abort();
    break;
  case CLIENTADDR_LEFTMOST:
    if (!clientaddr_in_nets(&out, nets, n))
      abort();
    break;
  default:
    abort();
  }
  if (from == CLIENTADDR_HOP || from == CLIENTADDR_FALLBACK) {
    lines[0] = "203.0.113.66, for=\"";
    if (clientaddr_resolve(nets, n, &peer, kind, lines, nlines + 1, truncated,
                           &again) != from ||
        !same(&again, &out))
      abort();
  }
  free(copy);
  return 0;
}
