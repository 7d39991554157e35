/*
 * test_clientaddr.c — trusted-proxy networks and the last untrusted hop of
 * X-Forwarded-For / Forwarded (server/clientaddr.h), as tables.
 */
#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "server/clientaddr.h"

Suite *clientaddr_suite(void);

#define VAR "GPUGATE_HTTP_TRUSTED_PROXIES"

/* nets as "a/p,b/p" into out. */
static void describe_nets(const struct clientaddr_net *nets, int n, char *out,
                          size_t outlen)
{
  size_t used = 0;
  int i;

  out[0] = '\0';
  for (i = 0; i < n; i++) {
    char text[CLIENTADDR_TEXT];
    int w;
    clientaddr_format(&nets[i].base, text);
    w = snprintf(out + used, outlen - used, "%s%s/%u", i ? "," : "", text,
                 nets[i].prefix);
    ck_assert(w > 0 && (size_t)w < outlen - used);
    used += (size_t)w;
  }
}

static void nets_of(const char *list, struct clientaddr_net *nets, int *n)
{
  char err[256];

  ck_assert_msg(clientaddr_parse_nets(VAR, list, nets, CLIENTADDR_MAX_NETS, n,
                                      err, sizeof(err)) == 0,
                "%s: %s", list, err);
}

static struct clientaddr addr_of(const char *text)
{
  struct clientaddr a;

  ck_assert_msg(clientaddr_parse(text, strlen(text), &a) == 0, "%s", text);
  return a;
}

/* ------------------------------------------------------------ networks */

START_TEST(nets_table)
{
  static const struct {
    const char *list;
    const char *want; /* the networks, or a piece of the error */
    bool ok;
  } cases[] = {
      {"10.0.0.0/8", "10.0.0.0/8", true},
      {"10.0.0.0/8, 192.168.0.0/16,2001:db8::/32",
       "10.0.0.0/8,192.168.0.0/16,2001:db8::/32", true},
      {"127.0.0.1", "127.0.0.1/32", true}, /* an address alone */
      {"::1", "::1/128", true},
      {" 35.191.0.0/16 ,130.211.0.0/22 ", "35.191.0.0/16,130.211.0.0/22", true},
      {"0.0.0.0/0,::/0", "0.0.0.0/0,::/0", true},
      {"192.0.2.6/31", "192.0.2.6/31", true},
      {"10.0.0.0/08", "10.0.0.0/8", true},
      {"2001:DB8:0:0::/64", "2001:db8::/64", true},
      /* bad input: one line naming the variable and the entry */
      {"10.0.0.0/33",
       VAR ": \"10.0.0.0/33\": the prefix length must be a number from 0 "
           "to 32",
       false},
      {"2001:db8::/129", "from 0 to 128", false},
      {"10.0.0.0/", "\"10.0.0.0/\": the prefix length", false},
      {"10.0.0.0/8x", "\"10.0.0.0/8x\": the prefix length", false},
      {"10.0.0.0/-1", "the prefix length", false},
      {"10.0.0.0/99999999999999999999", "the prefix length", false},
      {"10.0.0.1/8",
       VAR ": \"10.0.0.1/8\" has bits set after the first 8 (did you mean "
           "10.0.0.0/8?)",
       false},
      {"2001:db8::1/32", "(did you mean 2001:db8::/32?)", false},
      {"192.0.2.7/31", "(did you mean 192.0.2.6/31?)", false},
      {"example.com", VAR ": \"example.com\" is not an IPv4 or IPv6 network",
       false},
      {"10.0.0", "\"10.0.0\" is not an IPv4 or IPv6 network", false},
      {"[::1]", "\"[::1]\" is not an IPv4 or IPv6 network", false},
      {"::ffff:10.0.0.0/104", "is not an IPv4 or IPv6 network", false},
      {"10.0.0.0 /8", "is not an IPv4 or IPv6 network", false},
      {"10.0.0.0/8,,192.168.0.0/16", VAR ": an empty entry", false},
      {"10.0.0.0/8,", "an empty entry", false},
      {" ", "an empty entry", false},
      {"fe80::1%eth0", "is not an IPv4 or IPv6 network", false},
  };
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct clientaddr_net nets[CLIENTADDR_MAX_NETS];
    char err[256] = "", got[512];
    int n = -1;
    int rc = clientaddr_parse_nets(VAR, cases[i].list, nets,
                                   CLIENTADDR_MAX_NETS, &n, err, sizeof(err));
    if (cases[i].ok) {
      ck_assert_msg(rc == 0, "%s: %s", cases[i].list, err);
      describe_nets(nets, n, got, sizeof(got));
      ck_assert_msg(!strcmp(got, cases[i].want), "%s: got %s", cases[i].list,
                    got);
    } else {
      ck_assert_msg(rc == -1, "%s: accepted", cases[i].list);
      ck_assert_msg(!strncmp(err, VAR ": ", sizeof(VAR) + 1) &&
                        strstr(err, cases[i].want),
                    "%s: %s", cases[i].list, err);
    }
  }
}
END_TEST

START_TEST(nets_at_most_max)
{
  struct clientaddr_net nets[CLIENTADDR_MAX_NETS];
  char list[2048], err[256];
  size_t used = 0;
  int i, n;

  for (i = 0; i <= CLIENTADDR_MAX_NETS; i++)
    used += (size_t)snprintf(list + used, sizeof(list) - used, "%s10.%d.0.0/16",
                             i ? "," : "", i);
  ck_assert_int_eq(clientaddr_parse_nets(VAR, list, nets, CLIENTADDR_MAX_NETS,
                                         &n, err, sizeof(err)),
                   -1);
  ck_assert_str_eq(err, VAR ": at most 64 networks");
  list[strlen(list) - strlen(",10.64.0.0/16")] = '\0';
  ck_assert_int_eq(clientaddr_parse_nets(VAR, list, nets, CLIENTADDR_MAX_NETS,
                                         &n, err, sizeof(err)),
                   0);
  ck_assert_int_eq(n, CLIENTADDR_MAX_NETS);
}
END_TEST

START_TEST(membership_table)
{
  static const struct {
    const char *nets, *addr;
    bool in;
  } cases[] = {
      {"10.0.0.0/8", "10.0.0.0", true},
      {"10.0.0.0/8", "10.255.255.255", true},
      {"10.0.0.0/8", "11.0.0.0", false},
      {"10.0.0.0/8", "9.255.255.255", false},
      {"192.168.1.128/25", "192.168.1.128", true},
      {"192.168.1.128/25", "192.168.1.255", true},
      {"192.168.1.128/25", "192.168.1.127", false},
      {"192.0.2.6/31", "192.0.2.7", true},
      {"192.0.2.6/31", "192.0.2.8", false},
      {"127.0.0.1", "127.0.0.1", true},
      {"127.0.0.1", "127.0.0.2", false},
      {"2001:db8::/32", "2001:db8:ffff::1", true},
      {"2001:db8::/32", "2001:db9::", false},
      {"2001:db8:8000::/33", "2001:db8:7fff::1", false},
      {"2001:db8:8000::/33", "2001:db8:8000::1", true},
      {"::1", "::1", true},
      {"::1", "::2", false},
      /* IPv4-mapped addresses are IPv4 */
      {"10.0.0.0/8", "::ffff:10.1.1.1", true},
      {"127.0.0.1", "::ffff:127.0.0.1", true},
      /* a family's /0 holds only that family */
      {"0.0.0.0/0", "203.0.113.9", true},
      {"0.0.0.0/0", "::1", false},
      {"::/0", "2001:db8::1", true},
      {"::/0", "203.0.113.9", false},
      /* IPv4 bytes never match an IPv6 network that starts alike */
      {"a00::/8", "10.0.0.1", false},
      {"10.0.0.0/8, 2001:db8::/32, ::1", "::1", true},
      {"10.0.0.0/8, 2001:db8::/32, ::1", "192.0.2.1", false},
  };
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct clientaddr_net nets[CLIENTADDR_MAX_NETS];
    struct clientaddr a = addr_of(cases[i].addr);
    int n;
    nets_of(cases[i].nets, nets, &n);
    ck_assert_msg(clientaddr_in_nets(&a, nets, n) == cases[i].in, "%s in %s",
                  cases[i].addr, cases[i].nets);
  }
}
END_TEST

START_TEST(addresses_table)
{
  static const struct {
    const char *text, *want; /* want NULL: refused */
  } cases[] = {
      {"192.0.2.1", "192.0.2.1"},
      {"2001:db8::1", "2001:db8::1"},
      {"2001:0DB8:0000::0001", "2001:db8::1"},
      {"::ffff:192.0.2.1", "192.0.2.1"},
      {"::", "::"},
      {"192.0.2", NULL},
      {"192.0.2.256", NULL},
      {"0x7f.0.0.1", NULL},
      {"1.2.3.4 ", NULL},
      {"[::1]", NULL},
      {"fe80::1%eth0", NULL},
      {"", NULL},
      {"1111:2222:3333:4444:5555:6666:7777:8888:9999", NULL},
      {"0000:0000:0000:0000:0000:ffff:255.255.255.255x", NULL},
  };
  size_t i;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct clientaddr a;
    char text[CLIENTADDR_TEXT];
    int rc = clientaddr_parse(cases[i].text, strlen(cases[i].text), &a);
    if (!cases[i].want) {
      ck_assert_msg(rc == -1, "%s accepted", cases[i].text);
      continue;
    }
    ck_assert_msg(rc == 0, "%s refused", cases[i].text);
    clientaddr_format(&a, text);
    ck_assert_str_eq(text, cases[i].want);
  }
}
END_TEST

/* ------------------------------------------------------------- resolve */

#define XFF CLIENTADDR_X_FORWARDED_FOR
#define FWD CLIENTADDR_FORWARDED
#define PEER CLIENTADDR_PEER
#define HOP CLIENTADDR_HOP
#define LEFT CLIENTADDR_LEFTMOST
#define FALL CLIENTADDR_FALLBACK

/* the trusted proxies of every case below */
#define TRUSTED "10.0.0.0/8, 127.0.0.1, ::1, 2001:db8:ffff::/48"

struct resolve_case {
  const char *peer;
  enum clientaddr_header kind;
  const char *lines[4]; /* NULL-ended */
  enum clientaddr_from from;
  const char *client;
};

static const struct resolve_case resolve_cases[] = {
    /* a peer that is not a trusted proxy: its headers are ignored */
    {"192.0.2.1", XFF, {"203.0.113.5"}, PEER, "192.0.2.1"},
    {"192.0.2.1", XFF, {"garbage"}, PEER, "192.0.2.1"},
    {"192.0.2.1", FWD, {"for=203.0.113.5"}, PEER, "192.0.2.1"},
    {"2001:db8::1", XFF, {"203.0.113.5"}, PEER, "2001:db8::1"},
    /* a trusted proxy that names no hop is the client */
    {"10.0.0.1", XFF, {NULL}, PEER, "10.0.0.1"},
    {"10.0.0.1", XFF, {" , ,"}, PEER, "10.0.0.1"},
    {"10.0.0.1", XFF, {""}, PEER, "10.0.0.1"},
    /* the last untrusted hop */
    {"10.0.0.1", XFF, {"203.0.113.5"}, HOP, "203.0.113.5"},
    {"127.0.0.1", XFF, {"203.0.113.5, 10.1.2.3"}, HOP, "203.0.113.5"},
    {"10.0.0.1", XFF, {"203.0.113.5,10.1.2.3,10.9.9.9"}, HOP, "203.0.113.5"},
    {"::1", XFF, {"203.0.113.5"}, HOP, "203.0.113.5"},
    {"10.0.0.1", XFF, {"203.0.113.5, , "}, HOP, "203.0.113.5"},
    {"10.0.0.1", XFF, {"\t203.0.113.5\t"}, HOP, "203.0.113.5"},
    /* spoofing: what a client prepends is left of its own hop */
    {"10.0.0.1", XFF, {"1.1.1.1, 203.0.113.5"}, HOP, "203.0.113.5"},
    {"10.0.0.1", XFF, {"10.9.9.9, 203.0.113.5"}, HOP, "203.0.113.5"},
    {"10.0.0.1", XFF, {"garbage!!, 203.0.113.5"}, HOP, "203.0.113.5"},
    {"10.0.0.1", XFF, {"unknown, 203.0.113.5"}, HOP, "203.0.113.5"},
    {"10.0.0.1", XFF, {"\"x, 203.0.113.5, 10.2.2.2"}, HOP, "203.0.113.5"},
    {"10.0.0.1",
     XFF,
     {"1.1.1.1, 2.2.2.2, 3.3.3.3, 198.51.100.7"},
     HOP,
     "198.51.100.7"},
    /* several lines are one list, the last line rightmost; a client's own
     * line comes before the proxy's */
    {"10.0.0.1", XFF, {"1.2.3.4", "198.51.100.7"}, HOP, "198.51.100.7"},
    {"10.0.0.1", XFF, {"203.0.113.5", "10.0.0.3"}, HOP, "203.0.113.5"},
    {"10.0.0.1",
     XFF,
     {"203.0.113.5", "", "10.0.0.3, 10.0.0.4"},
     HOP,
     "203.0.113.5"},
    /* every hop trusted: the leftmost */
    {"10.0.0.1", XFF, {"10.0.0.7, 10.0.0.8"}, LEFT, "10.0.0.7"},
    {"10.0.0.1", XFF, {"10.0.0.7", "127.0.0.1"}, LEFT, "10.0.0.7"},
    {"10.0.0.1", XFF, {"2001:db8:ffff::9"}, LEFT, "2001:db8:ffff::9"},
    /* ports, IPv6 forms, IPv4-mapped */
    {"10.0.0.1", XFF, {"203.0.113.5:4711"}, HOP, "203.0.113.5"},
    {"10.0.0.1", XFF, {"[2001:db8::1]:4711"}, HOP, "2001:db8::1"},
    {"10.0.0.1", XFF, {"[2001:db8::1]"}, HOP, "2001:db8::1"},
    {"10.0.0.1", XFF, {"2001:db8::1"}, HOP, "2001:db8::1"},
    {"10.0.0.1", XFF, {"::ffff:203.0.113.9"}, HOP, "203.0.113.9"},
    {"10.0.0.1", XFF, {"::ffff:10.0.0.9"}, LEFT, "10.0.0.9"},
    /* unreadable where it matters: the peer */
    {"10.0.0.1", XFF, {"203.0.113.5, unknown"}, FALL, "10.0.0.1"},
    {"10.0.0.1", XFF, {"_hidden"}, FALL, "10.0.0.1"},
    {"10.0.0.1", XFF, {"203.0.113.5, 10.0.0.300"}, FALL, "10.0.0.1"},
    {"10.0.0.1", XFF, {"203.0.113.5 10.0.0.1"}, FALL, "10.0.0.1"},
    {"10.0.0.1", XFF, {"1.2.3.4:123456"}, FALL, "10.0.0.1"},
    {"10.0.0.1", XFF, {"1.2.3.4:"}, FALL, "10.0.0.1"},
    {"10.0.0.1", XFF, {"1.2.3"}, FALL, "10.0.0.1"},
    {"10.0.0.1", XFF, {"[2001:db8::1"}, FALL, "10.0.0.1"},
    {"10.0.0.1", XFF, {"[2001:db8::1]x"}, FALL, "10.0.0.1"},
    {"10.0.0.1", XFF, {"[203.0.113.5]"}, FALL, "10.0.0.1"},
    {"10.0.0.1", XFF, {"2001:db8::1%eth0"}, FALL, "10.0.0.1"},
    {"10.0.0.1", XFF, {"\"203.0.113.5\""}, FALL, "10.0.0.1"},
    {"10.0.0.1", XFF, {"for=203.0.113.5"}, FALL, "10.0.0.1"},
    {"10.0.0.1", XFF, {"203.0.113.5", "garbage"}, FALL, "10.0.0.1"},
    {"10.0.0.1", XFF, {"_x:_y"}, FALL, "10.0.0.1"},

    /* Forwarded (RFC 7239) */
    {"10.0.0.1", FWD, {"for=203.0.113.5"}, HOP, "203.0.113.5"},
    {"10.0.0.1",
     FWD,
     {"for=203.0.113.5;proto=https;by=10.0.0.1"},
     HOP,
     "203.0.113.5"},
    {"10.0.0.1",
     FWD,
     {"proto=https; FOR=203.0.113.5 ;by=_lb"},
     HOP,
     "203.0.113.5"},
    {"10.0.0.1",
     FWD,
     {"For=\"[2001:db8:cafe::17]:4711\""},
     HOP,
     "2001:db8:cafe::17"},
    {"10.0.0.1", FWD, {"for=\"[2001:db8::1]\""}, HOP, "2001:db8::1"},
    {"10.0.0.1", FWD, {"for=[2001:db8::1]"}, HOP, "2001:db8::1"},
    {"10.0.0.1", FWD, {"for=\"203.0.113.5:_port\""}, HOP, "203.0.113.5"},
    {"10.0.0.1",
     FWD,
     {"for=192.0.2.43, for=198.51.100.17"},
     HOP,
     "198.51.100.17"},
    {"10.0.0.1",
     FWD,
     {"for=192.0.2.43, for=10.0.0.4;by=10.0.0.1"},
     HOP,
     "192.0.2.43"},
    {"10.0.0.1", FWD, {"for=203.0.113.5;;proto=http"}, HOP, "203.0.113.5"},
    {"10.0.0.1", FWD, {"for=10.0.0.9, for=10.0.0.8"}, LEFT, "10.0.0.9"},
    {"10.0.0.1",
     FWD,
     {"for=192.0.2.43", "for=198.51.100.17"},
     HOP,
     "198.51.100.17"},
    /* spoofing */
    {"10.0.0.1", FWD, {"for=1.1.1.1, for=203.0.113.5"}, HOP, "203.0.113.5"},
    {"10.0.0.1", FWD, {"for=\"x,y\", for=203.0.113.5"}, HOP, "203.0.113.5"},
    {"10.0.0.1", FWD, {"garbage, for=203.0.113.5"}, HOP, "203.0.113.5"},
    {"10.0.0.1", FWD, {"for=\"1.1.1.1, for=203.0.113.5"}, HOP, "203.0.113.5"},
    /* quoted commas and escapes inside the proxy's own element */
    {"10.0.0.1", FWD, {"proto=\"a,b\";for=203.0.113.5"}, HOP, "203.0.113.5"},
    {"10.0.0.1",
     FWD,
     {"for=\"203.0.113.5\";ext=\"a\\\"b,c\""},
     HOP,
     "203.0.113.5"},
    {"10.0.0.1",
     FWD,
     {"for=\"203.0.113.5\";ext=\"a\\\\\""},
     HOP,
     "203.0.113.5"},
    {"10.0.0.1", FWD, {"for=\"20\\3.0.113.5\""}, HOP, "203.0.113.5"},
    /* unknown, obfuscated, unreadable: the peer */
    {"10.0.0.1", FWD, {"for=unknown"}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"for=\"unknown\""}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"for=_hidden"}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"for=203.0.113.5, for=\"_abc\""}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"for=_hidden, for=10.0.0.2"}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"proto=https"}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"for=203.0.113.5;for=198.51.100.1"}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"for=\"203.0.113.5"}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"for=203.0.113.5\""}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"for="}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"for"}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"=203.0.113.5"}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"for=203.0.113.5 proto=http"}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"for=\"_hidden\"x"}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"203.0.113.5"}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"for=_a\"b"}, FALL, "10.0.0.1"},
    {"10.0.0.1", FWD, {"for=\"\\"}, FALL, "10.0.0.1"},
};

static void check_case(const struct clientaddr_net *nets, int n,
                       const struct resolve_case *c, size_t i)
{
  struct clientaddr peer = addr_of(c->peer), out;
  size_t nlines = 0;
  enum clientaddr_from from;
  char text[CLIENTADDR_TEXT];

  while (nlines < 4 && c->lines[nlines])
    nlines++;
  from = clientaddr_resolve(nets, n, &peer, c->kind, c->lines, nlines, false,
                            &out);
  clientaddr_format(&out, text);
  ck_assert_msg(from == c->from && !strcmp(text, c->client),
                "case %zu (%s): got %d %s, want %d %s", i,
                c->lines[0] ? c->lines[0] : "-", (int)from, text, (int)c->from,
                c->client);
}

START_TEST(resolve_table)
{
  struct clientaddr_net nets[CLIENTADDR_MAX_NETS];
  int n;
  size_t i;

  nets_of(TRUSTED, nets, &n);
  for (i = 0; i < sizeof(resolve_cases) / sizeof(resolve_cases[0]); i++)
    check_case(nets, n, &resolve_cases[i], i);
}
END_TEST

/* Whatever a client writes before the hop the trusted proxy appended
 * leaves a found hop (or a fallback) as it is. */
START_TEST(prepending_changes_nothing)
{
  static const char *const prefixes[] = {
      "203.0.113.66", "10.0.0.1", "unknown", "\"",
      "for=\"",       "[",        "_x",      "for=1.1.1.1;for=2.2.2.2",
      "\\",           ",,,,"};
  struct clientaddr_net nets[CLIENTADDR_MAX_NETS];
  int n;
  size_t i, j;

  nets_of(TRUSTED, nets, &n);
  for (i = 0; i < sizeof(resolve_cases) / sizeof(resolve_cases[0]); i++) {
    const struct resolve_case *c = &resolve_cases[i];
    struct clientaddr peer = addr_of(c->peer), want, got;
    size_t nlines = 0;
    if (c->from != HOP && c->from != FALL)
      continue;
    while (c->lines[nlines])
      nlines++;
    clientaddr_resolve(nets, n, &peer, c->kind, c->lines, nlines, false, &want);
    for (j = 0; j < sizeof(prefixes) / sizeof(prefixes[0]); j++) {
      const char *lines[5];
      char joined[512];
      /* as a line of its own, and at the start of the first line */
      lines[0] = prefixes[j];
      memcpy(lines + 1, c->lines, nlines * sizeof(lines[0]));
      ck_assert_int_eq(clientaddr_resolve(nets, n, &peer, c->kind, lines,
                                          nlines + 1, false, &got),
                       c->from);
      ck_assert_msg(clientaddr_equal(&got, &want), "case %zu, prefix %zu", i,
                    j);
      if (!nlines)
        continue;
      snprintf(joined, sizeof(joined), "%s, %s", prefixes[j], c->lines[0]);
      lines[0] = joined;
      memcpy(lines + 1, c->lines + 1, (nlines - 1) * sizeof(lines[0]));
      ck_assert_int_eq(clientaddr_resolve(nets, n, &peer, c->kind, lines,
                                          nlines, false, &got),
                       c->from);
      ck_assert_msg(clientaddr_equal(&got, &want), "case %zu, joined %zu", i,
                    j);
    }
  }
}
END_TEST

/* At most CLIENTADDR_MAX_HOPS elements and CLIENTADDR_MAX_ELEMENT bytes
 * each are read; past either the peer is the client. */
START_TEST(bounds)
{
  struct clientaddr_net nets[CLIENTADDR_MAX_NETS];
  struct clientaddr peer = addr_of("10.0.0.1"), out;
  char list[8192], text[CLIENTADDR_TEXT];
  const char *lines[CLIENTADDR_MAX_HOPS + 1];
  size_t used;
  int n, i;

  nets_of(TRUSTED, nets, &n);
  /* the client and 31 trusted hops: 32 elements, found */
  used = (size_t)snprintf(list, sizeof(list), "203.0.113.5");
  for (i = 1; i < CLIENTADDR_MAX_HOPS; i++)
    used +=
        (size_t)snprintf(list + used, sizeof(list) - used, ", 10.0.0.%d", i);
  lines[0] = list;
  ck_assert_int_eq(
      clientaddr_resolve(nets, n, &peer, XFF, lines, 1, false, &out), HOP);
  clientaddr_format(&out, text);
  ck_assert_str_eq(text, "203.0.113.5");
  /* one trusted hop more: not read */
  snprintf(list + used, sizeof(list) - used, ", 10.0.0.99");
  ck_assert_int_eq(
      clientaddr_resolve(nets, n, &peer, XFF, lines, 1, false, &out), FALL);
  ck_assert(clientaddr_equal(&out, &peer));
  /* the same as one line each */
  for (i = 0; i < CLIENTADDR_MAX_HOPS + 1; i++)
    lines[i] = i == 0 ? "203.0.113.5" : "10.0.0.2";
  ck_assert_int_eq(clientaddr_resolve(nets, n, &peer, XFF, lines,
                                      CLIENTADDR_MAX_HOPS, false, &out),
                   HOP);
  ck_assert_int_eq(clientaddr_resolve(nets, n, &peer, XFF, lines,
                                      CLIENTADDR_MAX_HOPS + 1, false, &out),
                   FALL);
  /* lines left out before the first given: walking past it is too far */
  ck_assert_int_eq(
      clientaddr_resolve(nets, n, &peer, XFF, lines + 1, 2, true, &out), FALL);
  ck_assert_int_eq(
      clientaddr_resolve(nets, n, &peer, XFF, lines, 2, true, &out), HOP);
  /* an element of CLIENTADDR_MAX_ELEMENT bytes is read, one more is not */
  memset(list, ' ', sizeof(list));
  memcpy(list + CLIENTADDR_MAX_ELEMENT - 11, "203.0.113.5", 11);
  list[CLIENTADDR_MAX_ELEMENT] = '\0';
  lines[0] = list;
  ck_assert_int_eq(
      clientaddr_resolve(nets, n, &peer, XFF, lines, 1, false, &out), HOP);
  memset(list, ' ', sizeof(list));
  memcpy(list + CLIENTADDR_MAX_ELEMENT - 10, "203.0.113.5", 11);
  list[CLIENTADDR_MAX_ELEMENT + 1] = '\0';
  ck_assert_int_eq(
      clientaddr_resolve(nets, n, &peer, XFF, lines, 1, false, &out), FALL);
  /* a long prefix the client wrote is never reached */
  memset(list, 'x', sizeof(list));
  snprintf(list + sizeof(list) - 32, 32, ", 203.0.113.5, 10.0.0.2");
  ck_assert_int_eq(
      clientaddr_resolve(nets, n, &peer, XFF, lines, 1, false, &out), HOP);
  /* an open quote runs to the element limit and stops there */
  memset(list, 'a', sizeof(list));
  memcpy(list, "for=1.2.3.4", 11);
  snprintf(list + sizeof(list) - 32, 32, "\", for=10.0.0.2");
  ck_assert_int_eq(
      clientaddr_resolve(nets, n, &peer, FWD, lines, 1, false, &out), FALL);
}
END_TEST

START_TEST(sockaddrs)
{
  struct sockaddr_in in4;
  struct sockaddr_in6 in6;
  struct clientaddr a;
  char text[CLIENTADDR_TEXT];

  memset(&in4, 0, sizeof(in4));
  in4.sin_family = AF_INET;
  inet_pton(AF_INET, "192.0.2.9", &in4.sin_addr);
  ck_assert_int_eq(
      clientaddr_from_sockaddr((struct sockaddr *)&in4, sizeof(in4), &a), 0);
  clientaddr_format(&a, text);
  ck_assert_str_eq(text, "192.0.2.9");
  ck_assert_int_eq(clientaddr_from_sockaddr((struct sockaddr *)&in4, 4, &a),
                   -1);
  memset(&in6, 0, sizeof(in6));
  in6.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "::ffff:192.0.2.9", &in6.sin6_addr);
  ck_assert_int_eq(
      clientaddr_from_sockaddr((struct sockaddr *)&in6, sizeof(in6), &a), 0);
  ck_assert_int_eq(a.family, AF_INET); /* a dual-stack listener's IPv4 */
  clientaddr_format(&a, text);
  ck_assert_str_eq(text, "192.0.2.9");
  inet_pton(AF_INET6, "2001:db8::7", &in6.sin6_addr);
  ck_assert_int_eq(
      clientaddr_from_sockaddr((struct sockaddr *)&in6, sizeof(in6), &a), 0);
  clientaddr_format(&a, text);
  ck_assert_str_eq(text, "2001:db8::7");
  in6.sin6_family = AF_UNIX;
  ck_assert_int_eq(
      clientaddr_from_sockaddr((struct sockaddr *)&in6, sizeof(in6), &a), -1);
  clientaddr_format(&a, text);
  ck_assert_str_eq(text, "");
}
END_TEST

Suite *clientaddr_suite(void)
{
  Suite *s = suite_create("clientaddr");
  TCase *tc = tcase_create("clientaddr");

  tcase_add_test(tc, nets_table);
  tcase_add_test(tc, nets_at_most_max);
  tcase_add_test(tc, membership_table);
  tcase_add_test(tc, addresses_table);
  tcase_add_test(tc, resolve_table);
  tcase_add_test(tc, prepending_changes_nothing);
  tcase_add_test(tc, bounds);
  tcase_add_test(tc, sockaddrs);
  suite_add_tcase(s, tc);
  return s;
}
