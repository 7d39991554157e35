/*
 * clientaddr.c — trusted-proxy networks and the last untrusted hop of
 * X-Forwarded-For / Forwarded (see clientaddr.h).
 *
 * The list is split from the right: each element is found by scanning
 * leftwards to the comma before it (outside a quoted string, for
 * Forwarded), then read left to right on its own. The scan never looks
 * further left than the element it needs, so what a client put at the
 * start of the list — however long or malformed — is not read unless every
 * hop after it was a trusted proxy.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "server/clientaddr.h"

/* What a node (the address part of a hop) turned out to be. */
enum node {
  NODE_ADDR,    /* an address */
  NODE_UNKNOWN, /* "unknown", an obfuscated identifier, or no for= */
  NODE_BAD      /* not readable */
};

static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0,    0,
                                            0, 0, 0, 0, 0xff, 0xff};

int clientaddr_parse(const char *text, size_t len, struct clientaddr *out)
{
  char buf[CLIENTADDR_TEXT];

  memset(out, 0, sizeof(*out));
  if (len == 0 || len >= sizeof(buf) || memchr(text, '\0', len))
    return -1;
  memcpy(buf, text, len);
  buf[len] = '\0';
  if (!memchr(buf, ':', len)) {
    if (inet_pton(AF_INET, buf, out->bytes) != 1)
      return -1;
    out->family = AF_INET;
    return 0;
  }
  if (inet_pton(AF_INET6, buf, out->bytes) != 1) {
    memset(out, 0, sizeof(*out));
    return -1;
  }
  out->family = AF_INET6;
  if (!memcmp(out->bytes, v4_mapped, sizeof(v4_mapped))) {
    memmove(out->bytes, out->bytes + 12, 4);
    memset(out->bytes + 4, 0, 12);
    out->family = AF_INET;
  }
  return 0;
}

int clientaddr_from_sockaddr(const struct sockaddr *sa, size_t len,
                             struct clientaddr *out)
{
  memset(out, 0, sizeof(*out));
  if (!sa)
    return -1;
  if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
    memcpy(out->bytes, &in->sin_addr, 4);
    out->family = AF_INET;
    return 0;
  }
  if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
    const struct sockaddr_in6 *in6 =
        (const struct sockaddr_in6 *)(const void *)sa;
    const unsigned char *b = in6->sin6_addr.s6_addr;
    if (!memcmp(b, v4_mapped, sizeof(v4_mapped))) {
      memcpy(out->bytes, b + 12, 4);
      out->family = AF_INET;
    } else {
      memcpy(out->bytes, b, 16);
      out->family = AF_INET6;
    }
    return 0;
  }
  return -1;
}

void clientaddr_format(const struct clientaddr *a, char buf[CLIENTADDR_TEXT])
{
  buf[0] = '\0';
  if ((a->family == AF_INET || a->family == AF_INET6) &&
      !inet_ntop(a->family, a->bytes, buf, CLIENTADDR_TEXT))
    buf[0] = '\0';
}

bool clientaddr_equal(const struct clientaddr *a, const struct clientaddr *b)
{
  return a->family == b->family && !memcmp(a->bytes, b->bytes, 16);
}

static unsigned family_bits(int family)
{
  return family == AF_INET ? 32u : 128u;
}

/* Whether a's first bits bits equal base's. */
static bool prefix_matches(const unsigned char *a, const unsigned char *base,
                           unsigned bits)
{
  unsigned whole = bits / 8, rest = bits % 8;

  if (memcmp(a, base, whole) != 0)
    return false;
  if (rest == 0)
    return true;
  return ((a[whole] ^ base[whole]) & (unsigned char)(0xff00u >> rest)) == 0;
}

bool clientaddr_in_nets(const struct clientaddr *a,
                        const struct clientaddr_net *nets, int n)
{
  int i;

  for (i = 0; i < n; i++)
    if (nets[i].base.family == a->family &&
        prefix_matches(a->bytes, nets[i].base.bytes, nets[i].prefix))
      return true;
  return false;
}

static bool is_ows(char c)
{
  return c == ' ' || c == '\t';
}

/* s[0..*len) without optional white space at either end. */
static const char *trim(const char *s, size_t *len)
{
  while (*len > 0 && is_ows(s[0])) {
    s++;
    (*len)--;
  }
  while (*len > 0 && is_ows(s[*len - 1]))
    (*len)--;
  return s;
}

/* One network "a.b.c.d[/p]" or "x::y[/p]" of len bytes into *net. */
static int parse_net(const char *name, const char *s, size_t len,
                     struct clientaddr_net *net, char *err, size_t errlen)
{
  const char *slash = memchr(s, '/', len);
  size_t alen = slash ? (size_t)(slash - s) : len;
  unsigned max, prefix = 0, i;
  int shown = (int)(len > 64 ? 64 : len);
  struct clientaddr masked;
  char text[CLIENTADDR_TEXT];

  if (clientaddr_parse(s, alen, &net->base) != 0 ||
      (net->base.family == AF_INET && memchr(s, ':', alen))) {
    snprintf(err, errlen,
             "%s: \"%.*s\" is not an IPv4 or IPv6 network (expected "
             "addresses or CIDRs such as 10.0.0.0/8 or 2001:db8::/32, "
             "comma-separated)",
             name, shown, s);
    return -1;
  }
  max = family_bits(net->base.family);
  if (!slash) {
    net->prefix = max;
    return 0;
  }
  for (i = (unsigned)alen + 1; i < len; i++) {
    if (s[i] < '0' || s[i] > '9' || prefix > max) {
      prefix = max + 1;
      break;
    }
    prefix = prefix * 10 + (unsigned)(s[i] - '0');
  }
  if (alen + 1 == len || prefix > max) {
    snprintf(err, errlen,
             "%s: \"%.*s\": the prefix length must be a number from 0 to %u",
             name, shown, s, max);
    return -1;
  }
  net->prefix = prefix;
  masked = net->base;
  for (i = 0; i < 16; i++) {
    unsigned keep = prefix >= 8 * (i + 1) ? 8
                    : prefix > 8 * i      ? prefix - 8 * i
                                          : 0;
    masked.bytes[i] &= (unsigned char)(0xff00u >> keep);
  }
  if (!clientaddr_equal(&masked, &net->base)) {
    clientaddr_format(&masked, text);
    snprintf(err, errlen,
             "%s: \"%.*s\" has bits set after the first %u (did you mean "
             "%s/%u?)",
             name, shown, s, prefix, text, prefix);
    return -1;
  }
  return 0;
}

int clientaddr_parse_nets(const char *name, const char *list,
                          struct clientaddr_net *nets, int max, int *n,
                          char *err, size_t errlen)
{
  const char *p = list;

  *n = 0;
  for (;;) {
    size_t len = strcspn(p, ",");
    const char *item = trim(p, &len);
    if (len == 0) {
      snprintf(err, errlen, "%s: an empty entry in \"%.64s\"", name, list);
      return -1;
    }
    if (*n == max) {
      snprintf(err, errlen, "%s: at most %d networks", name, max);
      return -1;
    }
    if (parse_net(name, item, len, &nets[*n], err, errlen) != 0)
      return -1;
    (*n)++;
    p += strcspn(p, ",");
    if (*p == '\0')
      return 0;
    p++;
  }
}

/* ------------------------------------------------------------- nodes */

static bool obfuscated_char(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* A port (1 to 5 digits) or an obfuscated port ("_" and obfuscated
 * characters). */
static bool is_port(const char *s, size_t len)
{
  size_t i;

  if (len == 0)
    return false;
  if (s[0] == '_') {
    for (i = 1; i < len; i++)
      if (!obfuscated_char(s[i]))
        return false;
    return len > 1;
  }
  if (len > 5)
    return false;
  for (i = 0; i < len; i++)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return true;
}

/*
 * A node: "unknown", "_obfuscated", IPv4 with an optional ":port",
 * "[IPv6]" with an optional ":port", or a bare IPv6 address.
 */
static enum node parse_node(const char *s, size_t len, struct clientaddr *out)
{
  const char *colon;
  size_t i;

  if (len == 7 && !strncasecmp(s, "unknown", 7))
    return NODE_UNKNOWN;
  if (len > 1 && s[0] == '_') {
    for (i = 1; i < len; i++)
      if (!obfuscated_char(s[i]))
        return NODE_BAD;
    return NODE_UNKNOWN;
  }
  if (len > 0 && s[0] == '[') {
    const char *close = memchr(s, ']', len);
    size_t alen;
    if (!close)
      return NODE_BAD;
    alen = (size_t)(close - s) - 1;
    if (!memchr(s + 1, ':', alen) || clientaddr_parse(s + 1, alen, out) != 0)
      return NODE_BAD;
    i = (size_t)(close - s) + 1; /* after the bracket */
    if (i == len)
      return NODE_ADDR;
    return s[i] == ':' && is_port(s + i + 1, len - i - 1) ? NODE_ADDR
                                                          : NODE_BAD;
  }
  colon = memchr(s, ':', len);
  if (colon && !memchr(colon + 1, ':', len - (size_t)(colon - s) - 1)) {
    /* one colon: IPv4 and a port */
    size_t alen = (size_t)(colon - s);
    if (clientaddr_parse(s, alen, out) != 0 || out->family != AF_INET ||
        !is_port(colon + 1, len - alen - 1))
      return NODE_BAD;
    return NODE_ADDR;
  }
  return clientaddr_parse(s, len, out) == 0 ? NODE_ADDR : NODE_BAD;
}

/* RFC 7230 tchar. */
static bool tchar(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/*
 * One Forwarded element ("for=192.0.2.60;proto=http;by=203.0.113.43"):
 * its for= node. Values are tokens or quoted strings; a token value may
 * also hold the brackets and colons of an address written unquoted.
 */
static enum node forwarded_node(const char *s, size_t len,
                                struct clientaddr *out)
{
  char value[CLIENTADDR_MAX_ELEMENT];
  size_t i = 0, vlen = 0;
  bool seen = false;

  if (len > CLIENTADDR_MAX_ELEMENT)
    return NODE_BAD;
  while (i < len) {
    size_t name, nlen, w = 0;
    bool is_for;
    char buf[CLIENTADDR_MAX_ELEMENT];
    while (i < len && is_ows(s[i]))
      i++;
    if (i == len)
      break;
    if (s[i] == ';') {
      i++; /* an empty pair */
      continue;
    }
    name = i;
    while (i < len && tchar(s[i]))
      i++;
    nlen = i - name;
    if (nlen == 0 || i == len || s[i] != '=')
      return NODE_BAD;
    is_for = nlen == 3 && !strncasecmp(s + name, "for", 3);
    i++;
    if (i < len && s[i] == '"') {
      for (i++; i < len && s[i] != '"'; i++) {
        if (s[i] == '\\' && ++i == len)
          return NODE_BAD;
        buf[w++] = s[i];
      }
      if (i == len)
        return NODE_BAD; /* no closing quote */
      i++;
    } else {
      while (i < len &&
             (tchar(s[i]) || s[i] == ':' || s[i] == '[' || s[i] == ']'))
        buf[w++] = s[i++];
      if (w == 0)
        return NODE_BAD;
    }
    while (i < len && is_ows(s[i]))
      i++;
    if (i < len && s[i] != ';')
      return NODE_BAD;
    i++; /* the ';' (or past the end) */
    if (is_for) {
      if (seen)
        return NODE_BAD; /* two for= in one element */
      seen = true;
      memcpy(value, buf, w);
      vlen = w;
    }
  }
  if (!seen)
    return NODE_UNKNOWN; /* the proxy did not say whom it served */
  return parse_node(value, vlen, out);
}

/* ------------------------------------------------------------ the walk */

/* Going leftwards over the lines of one list, an element at a time. */
struct walk {
  const char *const *values;
  size_t line;    /* 1 + the line being split; 0: none left */
  size_t pos;     /* where the next element ends in that line */
  bool line_done; /* its first element has been given */
  bool quotes;    /* quoted strings may hold commas (Forwarded) */
};

/* Whether the quote at s[k] is escaped (an odd run of backslashes before
 * it, counted no further left than floor). */
static bool escaped(const char *s, size_t k, size_t floor)
{
  size_t j = k;

  while (j > floor && s[j - 1] == '\\')
    j--;
  return (k - j) % 2 == 1;
}

/*
 * The next element from the right into *el, *len: 1; 0 when the list is
 * done; -1 when an element is longer than CLIENTADDR_MAX_ELEMENT or its
 * quotes do not balance.
 */
static int walk_prev(struct walk *w, const char **el, size_t *len)
{
  const char *s;
  size_t end, i, floor;
  bool inq = false;

  while (w->line > 0 && w->line_done) {
    if (--w->line > 0) {
      w->pos = strlen(w->values[w->line - 1]);
      w->line_done = false;
    }
  }
  if (w->line == 0)
    return 0;
  s = w->values[w->line - 1];
  end = w->pos;
  floor = end > CLIENTADDR_MAX_ELEMENT ? end - CLIENTADDR_MAX_ELEMENT : 0;
  for (i = end; i > 0; i--) {
    char c = s[i - 1];
    if (i - 1 < floor)
      return -1;
    if (w->quotes && c == '"' && (!inq || !escaped(s, i - 1, floor)))
      inq = !inq;
    else if (c == ',' && !inq)
      break;
  }
  if (inq)
    return -1;
  *el = s + i;
  *len = end - i;
  if (i == 0)
    w->line_done = true;
  else
    w->pos = i - 1;
  return 1;
}

enum clientaddr_from clientaddr_resolve(const struct clientaddr_net *nets,
                                        int n, const struct clientaddr *peer,
                                        enum clientaddr_header kind,
                                        const char *const *values,
                                        size_t nvalues, bool truncated,
                                        struct clientaddr *out)
{
  struct walk w = {values, nvalues + 1, 0, true, kind == CLIENTADDR_FORWARDED};
  struct clientaddr hop, leftmost;
  bool have_leftmost = false;
  int hops = 0, rc;
  const char *el;
  size_t len;

  *out = *peer;
  if (!clientaddr_in_nets(peer, nets, n))
    return CLIENTADDR_PEER;
  while ((rc = walk_prev(&w, &el, &len)) != 0) {
    enum node node;
    if (rc < 0 || ++hops > CLIENTADDR_MAX_HOPS)
      return CLIENTADDR_FALLBACK;
    el = trim(el, &len);
    if (len == 0)
      continue; /* an empty list element (RFC 9110 §5.6.1) */
    node = kind == CLIENTADDR_FORWARDED ? forwarded_node(el, len, &hop)
                                        : parse_node(el, len, &hop);
    if (node != NODE_ADDR)
      return CLIENTADDR_FALLBACK;
    if (!clientaddr_in_nets(&hop, nets, n)) {
      *out = hop;
      return CLIENTADDR_HOP;
    }
    leftmost = hop;
    have_leftmost = true;
  }
  if (truncated)
    return CLIENTADDR_FALLBACK; /* the lines left out hold more hops */
  if (!have_leftmost)
    return CLIENTADDR_PEER;
  *out = leftmost;
  return CLIENTADDR_LEFTMOST;
}
