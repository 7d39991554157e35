/*
 * clientaddr.h — who the client is when gpugate sits behind a load
 * balancer: trusted-proxy networks (GPUGATE_HTTP_TRUSTED_PROXIES) and the
 * client address that a trusted peer's X-Forwarded-For or Forwarded
 * (RFC 7239) header names.
 *
 * The rule is the last untrusted hop: the list is walked from the right
 * (the hop the nearest proxy appended) leftwards, over addresses inside
 * the trusted networks; the first one outside them is the client. What a
 * client writes itself stays to the left of it and is never read, so a
 * client cannot choose its address by prepending hops. A peer outside the
 * trusted networks is its own client address whatever it sends.
 *
 * Everything here is pure (no I/O, no globals) and bounded: at most
 * CLIENTADDR_MAX_HOPS list elements are read, each at most
 * CLIENTADDR_MAX_ELEMENT bytes. Anything that cannot be read — a malformed
 * element, an "unknown" or obfuscated node, more hops than that — makes
 * the peer the client (CLIENTADDR_FALLBACK).
 */
#ifndef GPUGATE_CLIENTADDR_H
#define GPUGATE_CLIENTADDR_H

#include <stdbool.h>
#include <stddef.h>

struct sockaddr;

#define CLIENTADDR_MAX_NETS 64     /* entries of GPUGATE_HTTP_TRUSTED_PROXIES */
#define CLIENTADDR_MAX_HOPS 32     /* list elements read, from the right */
#define CLIENTADDR_MAX_ELEMENT 256 /* bytes of one list element */
#define CLIENTADDR_TEXT 46         /* INET6_ADDRSTRLEN: a formatted address */

/* An IPv4 or IPv6 address. IPv4-mapped IPv6 addresses (::ffff:a.b.c.d,
 * what a dual-stack listener sees for IPv4 peers) are held as IPv4. */
struct clientaddr {
  int family;              /* AF_INET or AF_INET6; 0: none */
  unsigned char bytes[16]; /* network order; IPv4 in the first 4 */
};

/* A network: an address and its prefix length. */
struct clientaddr_net {
  struct clientaddr base; /* host bits zero */
  unsigned prefix;        /* 0..32 (IPv4) or 0..128 (IPv6) */
};

/* Which header a trusted proxy writes (GPUGATE_HTTP_FORWARDED_HEADER). */
enum clientaddr_header {
  CLIENTADDR_X_FORWARDED_FOR, /* X-Forwarded-For: a, b, c */
  CLIENTADDR_FORWARDED        /* Forwarded: for=a;proto=https, for=b */
};

/* Where clientaddr_resolve() found the client. */
enum clientaddr_from {
  CLIENTADDR_PEER,     /* the peer: not a trusted proxy, or it named no hop */
  CLIENTADDR_HOP,      /* the last untrusted hop */
  CLIENTADDR_LEFTMOST, /* every hop was trusted: the leftmost one */
  CLIENTADDR_FALLBACK  /* unreadable, "unknown" or too many hops: the peer */
};

/*
 * An IP literal of len bytes (IPv4 dotted quad, or IPv6 without brackets)
 * into *out. Returns 0, or -1 when it is not one.
 */
int clientaddr_parse(const char *text, size_t len, struct clientaddr *out);

/* A socket address (AF_INET or AF_INET6) into *out; -1 for another
 * family or a short address. */
int clientaddr_from_sockaddr(const struct sockaddr *sa, size_t len,
                             struct clientaddr *out);

/* a as text ("192.0.2.1", "2001:db8::1") into buf[CLIENTADDR_TEXT];
 * "" when a holds no address. */
void clientaddr_format(const struct clientaddr *a, char buf[CLIENTADDR_TEXT]);

/* Whether a and b are the same address. */
bool clientaddr_equal(const struct clientaddr *a, const struct clientaddr *b);

/*
 * A comma-separated list of networks — "10.0.0.0/8, 2001:db8::/32,
 * 192.0.2.7" (an address alone is a /32 or /128) — into nets[max];
 * *n gets their number. Returns 0, or -1 with a one-line message naming
 * the variable name and the bad entry in err (a bad address or prefix,
 * host bits set below the prefix, an empty entry, more than max).
 */
int clientaddr_parse_nets(const char *name, const char *list,
                          struct clientaddr_net *nets, int max, int *n,
                          char *err, size_t errlen);

/* Whether a lies inside one of nets[0..n). */
bool clientaddr_in_nets(const struct clientaddr *a,
                        const struct clientaddr_net *nets, int n);

/*
 * The client address of a request from peer that carried the header kind
 * in nvalues lines values[0..nvalues) (in the order received; several
 * lines form one list). truncated: lines before values[0] were left out
 * (walking past values[0] then counts as too many hops). The client goes
 * to *out; returns where it was found. Headers are read only when peer
 * lies inside nets[0..n).
 */
enum clientaddr_from clientaddr_resolve(const struct clientaddr_net *nets,
                                        int n, const struct clientaddr *peer,
                                        enum clientaddr_header kind,
                                        const char *const *values,
                                        size_t nvalues, bool truncated,
                                        struct clientaddr *out);

#endif
