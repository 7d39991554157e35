/*
 * emu_fault.c — one set of fault rates behind a mutex. A single uniform
 * draw per request picks reset, timeout, error or lost response by
 * cumulative rate, so the configured rates are the observed rates.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tests/emulator/emu_config.h"
#include "tests/emulator/emu_fault.h"

#define MAX_CODES 16
#define MAX_METHODS 8
#define MAX_REGIONS 8

struct settings {
  double error_rate, timeout_rate, reset_rate, lost_rate;
  unsigned codes[MAX_CODES];
  size_t n_codes;
  long long timeout_ms, retry_after_s, max_faults;
  bool timeout_reset, timeout_slow, tokens, lost_503;
  char methods[MAX_METHODS][8];
  size_t n_methods;
  char calls[MAX_METHODS][8];
  size_t n_calls;
  char regions[MAX_REGIONS][64];
  size_t n_regions;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct settings cur = {.codes = {503},
                              .n_codes = 1,
                              .timeout_ms = 3000,
                              .retry_after_s = 1,
                              .max_faults = -1};
static long long injected[5];

static int rate(json_t *v, const char *name, double *out, char *err,
                size_t errlen)
{
  if (!v)
    return 0;
  if (!json_is_number(v) || json_number_value(v) < 0 ||
      json_number_value(v) > 1) {
    snprintf(err, errlen, "%s must be a number in [0, 1]", name);
    return -1;
  }
  *out = json_number_value(v);
  return 0;
}

static int integer(json_t *v, const char *name, long long min, long long max,
                   long long *out, char *err, size_t errlen)
{
  if (!v)
    return 0;
  if (!json_is_integer(v) || json_integer_value(v) < min ||
      json_integer_value(v) > max) {
    snprintf(err, errlen, "%s must be an integer in [%lld, %lld]", name, min,
             max);
    return -1;
  }
  *out = json_integer_value(v);
  return 0;
}

/* v (NULL: unchanged) as at most max strings of fewer than width bytes
 * each into out (max rows of width), *n of them; else -1 with bad in err. */
static int strings(json_t *v, const char *bad, char *out, size_t max,
                   size_t width, size_t *n, char *err, size_t errlen)
{
  json_t *e;
  size_t i;

  if (!v)
    return 0;
  if (!json_is_array(v) || json_array_size(v) > max) {
    snprintf(err, errlen, "%s", bad);
    return -1;
  }
  json_array_foreach (v, i, e) {
    const char *m = json_string_value(e);
    if (!m || !*m || strlen(m) >= width) {
      snprintf(err, errlen, "%s", bad);
      return -1;
    }
    snprintf(out + *n * width, width, "%s", m);
    (*n)++;
  }
  return 0;
}

int emu_fault_configure(const json_t *spec, char *err, size_t errlen)
{
  struct settings s = {.codes = {503},
                       .n_codes = 1,
                       .timeout_ms = 3000,
                       .retry_after_s = 1,
                       .max_faults = -1};
  json_t *codes = NULL, *methods = NULL, *regions = NULL, *tokens = NULL, *e;
  json_t *er = NULL, *tr = NULL, *rr = NULL, *lr = NULL, *tms = NULL,
         *ras = NULL, *mf = NULL, *calls = NULL;
  const char *mode = NULL, *lost_mode = NULL;
  json_error_t jerr;
  size_t i;

  if (json_unpack_ex((json_t *)spec, &jerr, JSON_STRICT,
                     "{s?o, s?o, s?o, s?o, s?s, s?o, s?o, s?o, s?o, s?o, s?o, "
                     "s?o, s?o, s?s}",
                     "error_rate", &er, "codes", &codes, "timeout_rate", &tr,
                     "timeout_ms", &tms, "timeout_mode", &mode, "reset_rate",
                     &rr, "lost_response_rate", &lr, "retry_after_s", &ras,
                     "tokens", &tokens, "methods", &methods, "regions",
                     &regions, "max_faults", &mf, "calls", &calls,
                     "lost_response_mode", &lost_mode) != 0) {
    snprintf(err, errlen, "%s", jerr.text);
    return -1;
  }
  if (rate(er, "error_rate", &s.error_rate, err, errlen) ||
      rate(tr, "timeout_rate", &s.timeout_rate, err, errlen) ||
      rate(rr, "reset_rate", &s.reset_rate, err, errlen) ||
      rate(lr, "lost_response_rate", &s.lost_rate, err, errlen) ||
      integer(tms, "timeout_ms", 0, 600000, &s.timeout_ms, err, errlen) ||
      integer(ras, "retry_after_s", 0, 3600, &s.retry_after_s, err, errlen) ||
      integer(mf, "max_faults", -1, 1000000000, &s.max_faults, err, errlen))
    return -1;
  if (s.error_rate + s.timeout_rate + s.reset_rate + s.lost_rate > 1.0 + 1e-9) {
    snprintf(err, errlen, "the rates add up to more than 1");
    return -1;
  }
  if (mode && strcmp(mode, "503") != 0 && strcmp(mode, "reset") != 0 &&
      strcmp(mode, "slow") != 0) {
    snprintf(err, errlen,
             "timeout_mode must be \"503\", \"reset\" or \"slow\"");
    return -1;
  }
  if (lost_mode && strcmp(lost_mode, "reset") != 0 &&
      strcmp(lost_mode, "503") != 0) {
    snprintf(err, errlen, "lost_response_mode must be \"reset\" or \"503\"");
    return -1;
  }
  s.lost_503 = lost_mode && !strcmp(lost_mode, "503");
  s.timeout_reset = mode && !strcmp(mode, "reset");
  s.timeout_slow = mode && !strcmp(mode, "slow");
  if (tokens && !json_is_boolean(tokens)) {
    snprintf(err, errlen, "tokens must be a boolean");
    return -1;
  }
  s.tokens = json_is_true(tokens);
  if (codes) {
    if (!json_is_array(codes) || json_array_size(codes) == 0 ||
        json_array_size(codes) > MAX_CODES) {
      snprintf(err, errlen, "codes must be an array of 1 to %d statuses",
               MAX_CODES);
      return -1;
    }
    s.n_codes = 0;
    json_array_foreach (codes, i, e) {
      if (!json_is_integer(e) || json_integer_value(e) < 400 ||
          json_integer_value(e) > 599) {
        snprintf(err, errlen, "codes must hold HTTP statuses 400-599");
        return -1;
      }
      s.codes[s.n_codes++] = (unsigned)json_integer_value(e);
    }
  }
  if (strings(methods, "methods must be an array of HTTP methods",
              &s.methods[0][0], MAX_METHODS, sizeof(s.methods[0]), &s.n_methods,
              err, errlen) ||
      strings(regions, "regions must be an array of Batch locations",
              &s.regions[0][0], MAX_REGIONS, sizeof(s.regions[0]), &s.n_regions,
              err, errlen) ||
      strings(calls,
              "calls must be an array of create, get, list, cancel, delete",
              &s.calls[0][0], MAX_METHODS, sizeof(s.calls[0]), &s.n_calls, err,
              errlen))
    return -1;
  for (i = 0; i < s.n_calls; i++)
    if (strcmp(s.calls[i], "create") && strcmp(s.calls[i], "get") &&
        strcmp(s.calls[i], "list") && strcmp(s.calls[i], "cancel") &&
        strcmp(s.calls[i], "delete")) {
      snprintf(err, errlen,
               "calls must be an array of create, get, list, cancel, delete");
      return -1;
    }
  pthread_mutex_lock(&mu);
  cur = s;
  memset(injected, 0, sizeof(injected));
  pthread_mutex_unlock(&mu);
  return 0;
}

json_t *emu_fault_to_json(void)
{
  struct settings s;
  long long n[5];
  json_t *codes = json_array(), *methods = json_array(),
         *regions = json_array(), *calls = json_array(), *out;
  size_t i;

  pthread_mutex_lock(&mu);
  s = cur;
  memcpy(n, injected, sizeof(n));
  pthread_mutex_unlock(&mu);
  for (i = 0; i < s.n_codes; i++)
    json_array_append_new(codes, json_integer(s.codes[i]));
  for (i = 0; i < s.n_methods; i++)
    json_array_append_new(methods, json_string(s.methods[i]));
  for (i = 0; i < s.n_regions; i++)
    json_array_append_new(regions, json_string(s.regions[i]));
  for (i = 0; i < s.n_calls; i++)
    json_array_append_new(calls, json_string(s.calls[i]));
  out = json_pack(
      "{s:f, s:o, s:f, s:I, s:s, s:f, s:f, s:I, s:b, s:o, s:o, s:I, "
      "s:{s:I, s:I, s:I, s:I}}",
      "error_rate", s.error_rate, "codes", codes, "timeout_rate",
      s.timeout_rate, "timeout_ms", (json_int_t)s.timeout_ms, "timeout_mode",
      s.timeout_reset  ? "reset"
      : s.timeout_slow ? "slow"
                       : "503",
      "reset_rate", s.reset_rate, "lost_response_rate", s.lost_rate,
      "retry_after_s", (json_int_t)s.retry_after_s, "tokens", s.tokens,
      "methods", methods, "regions", regions, "max_faults",
      (json_int_t)s.max_faults, "injected", "error",
      (json_int_t)n[EMU_FAULT_ERROR], "timeout",
      (json_int_t)n[EMU_FAULT_TIMEOUT], "reset", (json_int_t)n[EMU_FAULT_RESET],
      "lost_response", (json_int_t)n[EMU_FAULT_LOST_RESPONSE]);
  if (out) {
    json_object_set_new(out, "calls", calls);
    json_object_set_new(out, "lost_response_mode",
                        json_string(s.lost_503 ? "503" : "reset"));
  } else {
    json_decref(calls);
  }
  return out;
}

/* Whether path names one of the regions ("/locations/<region>/"). */
static bool region_ok(const struct settings *s, const char *path)
{
  char needle[80];
  size_t i;

  if (s->n_regions == 0)
    return true;
  for (i = 0; i < s->n_regions; i++) {
    snprintf(needle, sizeof(needle), "/locations/%s/", s->regions[i]);
    if (path && strstr(path, needle))
      return true;
  }
  return false;
}

void emu_fault_draw(bool token_endpoint, const char *method, const char *path,
                    const char *call, struct emu_fault *out)
{
  struct settings s;
  double r, total;
  size_t i;
  bool method_ok, call_ok;

  memset(out, 0, sizeof(*out));
  pthread_mutex_lock(&mu);
  s = cur;
  pthread_mutex_unlock(&mu);
  total = s.error_rate + s.timeout_rate + s.reset_rate + s.lost_rate;
  if (total <= 0 || (token_endpoint && !s.tokens))
    return;
  method_ok = s.n_methods == 0;
  for (i = 0; i < s.n_methods; i++)
    method_ok |= !strcmp(s.methods[i], method);
  call_ok = s.n_calls == 0;
  for (i = 0; i < s.n_calls; i++)
    call_ok |= !strcmp(s.calls[i], call);
  if (!method_ok || !call_ok || !region_ok(&s, path))
    return;
  r = emu_rand(EMU_RAND_FAULT);
  if (r < s.reset_rate)
    out->kind = EMU_FAULT_RESET;
  else if (r < s.reset_rate + s.timeout_rate)
    out->kind = EMU_FAULT_TIMEOUT;
  else if (r < s.reset_rate + s.timeout_rate + s.error_rate)
    out->kind = EMU_FAULT_ERROR;
  else if (r < total)
    out->kind = EMU_FAULT_LOST_RESPONSE;
  else
    return;
  pthread_mutex_lock(&mu);
  if (cur.max_faults == 0) {
    out->kind = EMU_FAULT_NONE;
  } else {
    if (cur.max_faults > 0)
      cur.max_faults--;
    injected[out->kind]++;
  }
  pthread_mutex_unlock(&mu);
  out->code = s.codes[(size_t)(emu_rand(EMU_RAND_FAULT) * (double)s.n_codes) %
                      s.n_codes];
  out->timeout_ms = s.timeout_ms;
  out->timeout_reset = s.timeout_reset;
  out->timeout_slow = s.timeout_slow;
  out->lost_503 = s.lost_503;
  out->retry_after_s = s.retry_after_s;
}

const char *emu_fault_status_name(unsigned http)
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
  case 409:
    return "ABORTED";
  case 412:
    return "FAILED_PRECONDITION";
  case 429:
    return "RESOURCE_EXHAUSTED";
  case 499:
    return "CANCELLED";
  case 500:
    return "INTERNAL";
  case 501:
    return "UNIMPLEMENTED";
  case 503:
    return "UNAVAILABLE";
  case 504:
    return "DEADLINE_EXCEEDED";
  default:
    return "UNKNOWN";
  }
}

const char *emu_fault_kind_name(enum emu_fault_kind kind)
{
  static const char *const names[] = {NULL, "error", "timeout", "reset",
                                      "lost_response"};

  return names[kind];
}
