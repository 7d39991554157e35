/*
 * oci_ref.c — container image references checked against the grammar of
 * the OCI distribution reference (github.com/distribution/reference):
 *
 *   reference  := name [ ":" tag ] [ "@" digest ]
 *   name       := [ domain "/" ] path-component { "/" path-component }
 *   domain     := host [ ":" port ]     host: DNS labels, or "[" IPv6 "]"
 *   path-comp  := [a-z0-9]+ { separator [a-z0-9]+ }
 *   separator  := "." | "_" | "__" | "-"+
 *   tag        := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
 *   digest     := alg-comp { [+._-] alg-comp } ":" [0-9a-fA-F]{32,}
 *   alg-comp   := [A-Za-z] [A-Za-z0-9]*
 *
 * The first component is the registry when it holds a '.' or a ':' or is
 * "localhost", as Docker decides. The name is at most 255 bytes.
 */
#include <string.h>

#include "handlers/oci_ref.h"

#define NAME_MAX_LEN 255
#define DIGEST_HEX_MAX 128

static bool is_lower_alnum(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alpha(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
  return c >= '0' && c <= '9';
}

static bool is_hex(char c)
{
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_word(char c)
{
  return is_alpha(c) || is_digit(c) || c == '_';
}

/* One path component, s[0..n). */
static bool path_component(const char *s, size_t n)
{
  size_t i = 0;

  if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
    return false;
  while (i < n) {
    size_t j = i;
    if (is_lower_alnum(s[i])) {
      i++;
      continue;
    }
    while (j < n && !is_lower_alnum(s[j]))
      j++;
    /* s[i..j) is one separator */
    if (!(j - i == 1 && (s[i] == '.' || s[i] == '_')) &&
        !(j - i == 2 && s[i] == '_' && s[i + 1] == '_')) {
      size_t k;
      for (k = i; k < j; k++)
        if (s[k] != '-')
          return false;
    }
    i = j;
  }
  return true;
}

/* One DNS label of a registry host. */
static bool host_label(const char *s, size_t n)
{
  size_t i;

  if (n == 0 || n > 63)
    return false;
  for (i = 0; i < n; i++) {
    char c = s[i];
    if (!(is_alpha(c) || is_digit(c) || (c == '-' && i > 0 && i < n - 1)))
      return false;
  }
  return true;
}

/* The registry, s[0..n): host[:port]. */
static bool domain(const char *s, size_t n)
{
  size_t hostlen = n, i, start;
  const char *colon;

  if (n == 0)
    return false;
  if (s[0] == '[') {
    const char *close = memchr(s, ']', n);
    if (!close || close == s + 1)
      return false;
    for (i = 1; s + i < close; i++)
      if (!is_hex(s[i]) && s[i] != ':')
        return false;
    hostlen = (size_t)(close - s) + 1;
  } else {
    colon = memchr(s, ':', n);
    if (colon)
      hostlen = (size_t)(colon - s);
    start = 0;
    for (i = 0; i <= hostlen; i++)
      if (i == hostlen || s[i] == '.') {
        if (!host_label(s + start, i - start))
          return false;
        start = i + 1;
      }
  }
  if (hostlen == n)
    return true;
  if (s[hostlen] != ':' || hostlen + 1 == n || n - hostlen - 1 > 5)
    return false;
  for (i = hostlen + 1; i < n; i++)
    if (!is_digit(s[i]))
      return false;
  return true;
}

static bool tag(const char *s)
{
  size_t n = strlen(s), i;

  if (n == 0 || n > 128 || !is_word(s[0]))
    return false;
  for (i = 1; i < n; i++)
    if (!is_word(s[i]) && s[i] != '.' && s[i] != '-')
      return false;
  return true;
}

static bool digest(const char *s)
{
  const char *colon = strchr(s, ':');
  size_t i, n, hex;
  bool comp_start = true;

  if (!colon || colon == s)
    return false;
  n = (size_t)(colon - s);
  for (i = 0; i < n; i++) {
    char c = s[i];
    if (comp_start) {
      if (!is_alpha(c))
        return false;
      comp_start = false;
    } else if (c == '+' || c == '.' || c == '_' || c == '-') {
      comp_start = true;
    } else if (!is_alpha(c) && !is_digit(c)) {
      return false;
    }
  }
  if (comp_start)
    return false;
  hex = strlen(colon + 1);
  if (hex < 32 || hex > DIGEST_HEX_MAX)
    return false;
  for (i = 0; i < hex; i++)
    if (!is_hex(colon[1 + i]))
      return false;
  return true;
}

bool oci_ref_valid(const char *ref)
{
  const char *at, *last_slash, *colon, *p, *slash;
  size_t name_len, first_len;
  bool has_domain;

  if (!ref || !*ref || strlen(ref) > OCI_REF_MAX)
    return false;
  at = strchr(ref, '@');
  if (at && !digest(at + 1))
    return false;
  name_len = at ? (size_t)(at - ref) : strlen(ref);
  /* a tag is a ':' after the last '/' */
  last_slash = NULL;
  for (p = ref; p < ref + name_len; p++)
    if (*p == '/')
      last_slash = p;
  colon = memchr(last_slash ? last_slash : ref, ':',
                 name_len - (size_t)((last_slash ? last_slash : ref) - ref));
  if (colon) {
    char t[130];
    size_t tlen = name_len - (size_t)(colon - ref) - 1;
    if (tlen >= sizeof(t))
      return false;
    memcpy(t, colon + 1, tlen);
    t[tlen] = '\0';
    if (!tag(t))
      return false;
    name_len = (size_t)(colon - ref);
  }
  if (name_len == 0 || name_len > NAME_MAX_LEN)
    return false;
  slash = memchr(ref, '/', name_len);
  first_len = slash ? (size_t)(slash - ref) : name_len;
  has_domain =
      slash &&
      (memchr(ref, '.', first_len) || memchr(ref, ':', first_len) ||
       (first_len == 9 && !memcmp(ref, "localhost", 9)) || ref[0] == '[');
  p = ref;
  if (has_domain) {
    if (!domain(ref, first_len))
      return false;
    p = slash + 1;
  }
  while (p <= ref + name_len) {
    const char *end = memchr(p, '/', (size_t)(ref + name_len - p));
    size_t n = end ? (size_t)(end - p) : (size_t)(ref + name_len - p);
    if (!path_component(p, n))
      return false;
    if (!end)
      break;
    p = end + 1;
  }
  return true;
}
