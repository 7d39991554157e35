/*
 * batch_answer.c — pure functions that read Cloud Batch's answers: a Batch
 * job's end time (its state, and Batch → gpugate states, are
 * lib/batch_names.c's), google.rpc.Status
 * errors (and Retry-After), and the back-off between tries. No I/O and no
 * globals (see batch_job.h; the ids and the Job body are in batch_job.c).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcp/batch_job.h"
#include "lib/rfc3339.h"

#define RETRY_INFO_TYPE "type.googleapis.com/google.rpc.RetryInfo"
#define MAX_DELAY_MS (24L * 3600 * 1000) /* a bound for hostile headers */

static const char *str_of(json_t *o, const char *k)
{
  return json_string_value(json_object_get(o, k));
}

static json_int_t int_of(json_t *o, const char *k, json_int_t dflt)
{
  json_t *v = json_object_get(o, k);
  return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* ---------------------------------------------------------- states */

int64_t batch_job_ended_us(const json_t *job)
{
  const json_t *status = json_object_get(job, "status"), *ev;
  const char *state = json_string_value(json_object_get(status, "state"));
  int64_t last = 0, t;
  size_t i;

  if (!state ||
      (strcmp(state, "SUCCEEDED") != 0 && strcmp(state, "FAILED") != 0 &&
       strcmp(state, "CANCELLED") != 0))
    return 0;
  json_array_foreach (json_object_get(status, "statusEvents"), i, ev) {
    if (rfc3339_parse_us(json_string_value(json_object_get(ev, "eventTime")),
                         &t) == 0 &&
        t > last)
      last = t;
  }
  return last;
}

/* ---------------------------------------------------------- errors */

/* The google.rpc.Code name HTTP usually carries a status as. */
static const char *code_for_http(long http)
{
  switch (http) {
  case 400:
    return "INVALID_ARGUMENT";
  case 401:
    return "UNAUTHENTICATED";
  case 403:
    return "PERMISSION_DENIED";
  case 404:
    return "NOT_FOUND";
  case 408:
  case 504:
    return "DEADLINE_EXCEEDED";
  case 409:
    return "ALREADY_EXISTS"; /* bare 409s only answer creates here */
  case 429:
    return "RESOURCE_EXHAUSTED";
  case 499:
    return "CANCELLED";
  case 500:
    return "INTERNAL";
  case 501:
    return "UNIMPLEMENTED";
  case 502:
  case 503:
    return "UNAVAILABLE";
  default:
    return http >= 200 && http < 300 ? "OK" : "UNKNOWN";
  }
}

/*
 * Copy n bytes of src into dst as one printable line: control characters
 * become spaces, runs of spaces fold, ends are trimmed, and a cut never
 * splits a UTF-8 sequence.
 */
static void put_text(char *dst, size_t dstlen, const char *src, size_t n)
{
  size_t i, o = 0;
  bool space = false;

  for (i = 0; i < n && o + 1 < dstlen; i++) {
    unsigned char c = (unsigned char)src[i];
    if (c < 0x20 || c == 0x7F || c == ' ') {
      space = o > 0;
      continue;
    }
    if (space) {
      if (o + 2 >= dstlen)
        break;
      dst[o++] = ' ';
      space = false;
    }
    dst[o++] = (char)c;
  }
  /* drop a trailing partial UTF-8 sequence */
  if (o > 0 && ((unsigned char)dst[o - 1] & 0x80)) {
    size_t start = o, need;
    unsigned char lead;
    while (start > 0 && ((unsigned char)dst[start - 1] & 0xC0) == 0x80)
      start--;
    if (start > 0) {
      lead = (unsigned char)dst[start - 1];
      need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
      if (o - (start - 1) < need)
        o = start - 1;
    }
  }
  dst[o] = '\0';
}

/* A non-JSON body (HTML error page, proxy text) as a short message. */
static void text_message(char *dst, size_t dstlen, const char *body)
{
  const char *t = strcasestr(body, "<title>"), *end;
  char buf[2048];
  size_t n = 0;
  const char *p;

  if (t && (end = strcasestr(t, "</title>")) != NULL) {
    t += 7;
    put_text(dst, dstlen, t, (size_t)(end - t));
    if (*dst)
      return;
  }
  /* strip tags, and the text of <style> and <script> */
  for (p = body; *p && n + 1 < sizeof(buf); p++) {
    if (*p == '<') {
      const char *skip_to = NULL;
      if (!strncasecmp(p, "<style", 6))
        skip_to = strcasestr(p, "</style>");
      else if (!strncasecmp(p, "<script", 7))
        skip_to = strcasestr(p, "</script>");
      if (skip_to)
        p = skip_to;
      p = strchr(p, '>');
      if (!p)
        break;
      buf[n++] = ' ';
      continue;
    }
    buf[n++] = *p;
  }
  put_text(dst, dstlen, buf, n);
}

/* Google's JSON Duration, "1.5s", as whole milliseconds rounded up. */
static long duration_ms(const char *s)
{
  long sec = 0, ms = 0, scale = 100;
  bool rest = false;
  const char *p = s;

  if (!isdigit((unsigned char)*p))
    return -1;
  for (; isdigit((unsigned char)*p); p++) {
    if (sec > MAX_DELAY_MS / 1000)
      return MAX_DELAY_MS;
    sec = sec * 10 + (*p - '0');
  }
  if (*p == '.') {
    for (p++; isdigit((unsigned char)*p); p++) {
      if (scale > 0)
        ms += (*p - '0') * scale;
      else if (*p != '0')
        rest = true;
      scale /= 10;
    }
  }
  if (*p != 's' || p[1] != '\0')
    return -1;
  ms += sec * 1000 + (rest ? 1 : 0);
  return ms > MAX_DELAY_MS ? MAX_DELAY_MS : ms;
}

/* The RetryInfo delay among google.rpc.Status details; -1 when none. */
static long retry_info_ms(json_t *details)
{
  size_t i;
  json_t *d;

  json_array_foreach (details, i, d) {
    json_t *delay = json_object_get(d, "retryDelay");
    const char *type = str_of(d, "@type");
    if (!type || strcmp(type, RETRY_INFO_TYPE) != 0)
      continue;
    if (json_is_string(delay))
      return duration_ms(json_string_value(delay));
    if (json_is_object(delay)) { /* {"seconds": n, "nanos": n} */
      json_int_t s = int_of(delay, "seconds", 0);
      json_int_t ns = int_of(delay, "nanos", 0);
      if (s < 0 || ns < 0 || s > MAX_DELAY_MS / 1000)
        return s < 0 || ns < 0 ? -1 : MAX_DELAY_MS;
      return (long)(s * 1000 + (ns + 999999) / 1000000);
    }
  }
  return -1;
}

/* Retry-After: delta-seconds or an HTTP-date (three formats); -1 if bad. */
static long retry_after_ms(const char *h, time_t now)
{
  static const char *const formats[] = {
      "%a, %d %b %Y %H:%M:%S GMT", /* IMF-fixdate */
      "%A, %d-%b-%y %H:%M:%S GMT", /* RFC 850 */
      "%a %b %e %H:%M:%S %Y"};     /* asctime */
  char buf[64];
  size_t i, n;
  long secs = 0;

  while (*h == ' ' || *h == '\t')
    h++;
  n = strlen(h);
  while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t' || h[n - 1] == '\r' ||
                   h[n - 1] == '\n'))
    n--;
  if (n == 0 || n >= sizeof(buf))
    return -1;
  memcpy(buf, h, n);
  buf[n] = '\0';
  for (i = 0; i < n && isdigit((unsigned char)buf[i]); i++)
    if (secs <= MAX_DELAY_MS / 1000)
      secs = secs * 10 + (buf[i] - '0');
  if (i == n) {
    if (secs > MAX_DELAY_MS / 1000)
      return MAX_DELAY_MS;
    return secs * 1000;
  }
  for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
    struct tm tm;
    const char *end;
    time_t t;
    memset(&tm, 0, sizeof(tm));
    end = strptime(buf, formats[i], &tm);
    if (!end || *end)
      continue;
    t = timegm(&tm);
    if (t == (time_t)-1)
      return -1;
    if (t <= now)
      return 0;
    if (t - now > MAX_DELAY_MS / 1000)
      return MAX_DELAY_MS;
    return (long)(t - now) * 1000;
  }
  return -1;
}

static void set_str(char *dst, size_t dstlen, const char *src)
{
  put_text(dst, dstlen, src, strlen(src));
}

int batch_parse_error_at(long http_status, const char *body,
                         const char *retry_after_header, time_t now,
                         struct batch_error *e)
{
  json_t *root = NULL, *err;
  json_error_t jerr;
  long ra = -1, ri = -1;
  int rc = -1;

  memset(e, 0, sizeof(*e));
  e->http_status = http_status;
  set_str(e->status, sizeof(e->status), code_for_http(http_status));
  if (body && *body)
    root = json_loads(body, JSON_REJECT_DUPLICATES, &jerr);
  err = json_object_get(root, "error");
  if (json_is_object(err)) { /* google.rpc.Status */
    const char *st = str_of(err, "status"), *msg = str_of(err, "message");
    if (st && *st)
      set_str(e->status, sizeof(e->status), st);
    if (msg)
      set_str(e->message, sizeof(e->message), msg);
    ri = retry_info_ms(json_object_get(err, "details"));
    rc = 0;
  } else if (json_is_string(err)) { /* OAuth 2.0 token endpoint (RFC 6749) */
    const char *desc = str_of(root, "error_description");
    char msg[sizeof(e->message)];
    snprintf(msg, sizeof(msg), "%s%s%s", json_string_value(err),
             desc ? ": " : "", desc ? desc : "");
    set_str(e->message, sizeof(e->message), msg);
    rc = 0;
  } else if (body && *body && !root) {
    text_message(e->message, sizeof(e->message), body);
  }
  if (!*e->message)
    snprintf(e->message, sizeof(e->message), "HTTP %ld", http_status);
  if (retry_after_header)
    ra = retry_after_ms(retry_after_header, now);
  e->retry_after_ms = ra > ri ? ra : ri;
  e->not_found = http_status == 404;
  e->already_exists =
      http_status == 409 && !strcmp(e->status, "ALREADY_EXISTS");
  e->retryable = http_status == 408 || http_status == 429 ||
                 http_status == 500 || http_status == 502 ||
                 http_status == 503 || http_status == 504 ||
                 (http_status == 409 && !strcmp(e->status, "ABORTED"));
  json_decref(root);
  return rc;
}

int batch_parse_error(long http_status, const char *body,
                      const char *retry_after_header, struct batch_error *e)
{
  return batch_parse_error_at(http_status, body, retry_after_header, time(NULL),
                              e);
}

void batch_error_transport(struct batch_error *e, const char *status,
                           const char *message, bool retryable)
{
  memset(e, 0, sizeof(*e));
  set_str(e->status, sizeof(e->status), status);
  set_str(e->message, sizeof(e->message), message);
  e->retry_after_ms = -1;
  e->retryable = retryable;
}

/* --------------------------------------------------------- backoff */

long batch_backoff_ms(int try_no, long retry_after_ms, unsigned *rng_state)
{
  unsigned x = *rng_state ? *rng_state : 0x9E3779B9u;
  long ceiling = BATCH_BACKOFF_BASE_MS, d;
  int i;

  /* xorshift32: cheap, per caller, reproducible from a seed */
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  *rng_state = x;
  for (i = 0; i < try_no && ceiling < BATCH_BACKOFF_CAP_MS; i++)
    ceiling *= 2;
  if (ceiling > BATCH_BACKOFF_CAP_MS)
    ceiling = BATCH_BACKOFF_CAP_MS;
  d = (long)(x % (unsigned)(ceiling + 1));
  if (retry_after_ms >= 0 && d < retry_after_ms)
    d = retry_after_ms;
  return d;
}
