/*
 * emu_config.c — EMU_* settings as a table of keys (name, type, field,
 * bounds, whether it may change at run time), one mutex around the live
 * copy, and splitmix64 streams seeded from EMU_SEED.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tests/emulator/emu_config.h"
#include "tests/emulator/emu_util.h"

const char *const emu_models[] = {
    "STANDARD", "SPOT", "PREEMPTIBLE", "RESERVATION_BOUND", "FLEX_START", NULL};

enum key_type { K_LONG, K_DOUBLE, K_BOOL, K_STR, K_CAPACITY, K_LATENCY };

struct key {
  const char *name;
  size_t off, size;
  double min, max;
  enum key_type type;
  bool runtime;
};

#define FIELD(f)                                                               \
  offsetof(struct emu_config, f), sizeof(((struct emu_config *)0)->f)
#define NOLIMIT 0, 0

static const struct key keys[] = {
    {"EMU_LISTEN", FIELD(listen), NOLIMIT, K_STR, false},
    {"EMU_PORT_FILE", FIELD(port_file), NOLIMIT, K_STR, false},
    {"EMU_PROJECT", FIELD(project), NOLIMIT, K_STR, true},
    {"EMU_CAPACITY", 0, 0, NOLIMIT, K_CAPACITY, true},
    {"EMU_RUN_MS", FIELD(run_ms), 0, 86400000, K_LONG, true},
    {"EMU_FLEX_WAIT_MS", FIELD(flex_wait_ms), 0, 86400000, K_LONG, true},
    {"EMU_START_MS", FIELD(start_ms), 0, 86400000, K_LONG, true},
    {"EMU_CANCEL_MS", FIELD(cancel_ms), 0, 86400000, K_LONG, true},
    {"EMU_CANCEL_LAG_MS", FIELD(cancel_lag_ms), 0, 86400000, K_LONG, true},
    {"EMU_CANCEL_DROP_FIRST", FIELD(cancel_drop_first), NOLIMIT, K_BOOL, true},
    {"EMU_DELETE_MS", FIELD(delete_ms), 0, 86400000, K_LONG, true},
    {"EMU_FAIL_RATE", FIELD(fail_rate), 0, 1, K_DOUBLE, true},
    {"EMU_SEED", FIELD(seed), 0, 9e18, K_LONG, true},
    {"EMU_TOKEN_TTL_S", FIELD(token_ttl_s), 1, 86400, K_LONG, true},
    {"EMU_REQUIRE_AUTH", FIELD(require_auth), NOLIMIT, K_BOOL, true},
    {"EMU_PUSH_URL", FIELD(push_url), NOLIMIT, K_STR, true},
    {"EMU_PUSH_SUBSCRIPTION", FIELD(push_subscription), NOLIMIT, K_STR, true},
    {"EMU_SA_PUBLIC_KEY", FIELD(sa_public_key), NOLIMIT, K_STR, false},
    {"EMU_SA_EMAIL", FIELD(sa_email), NOLIMIT, K_STR, true},
    {"EMU_TOKEN_URI", FIELD(token_uri), NOLIMIT, K_STR, true},
    {"EMU_OIDC_KEY", FIELD(oidc_key), NOLIMIT, K_STR, false},
    {"EMU_PUSH_AUDIENCE", FIELD(push_audience), NOLIMIT, K_STR, true},
    {"EMU_PUSH_SERVICE_ACCOUNT", FIELD(push_service_account), NOLIMIT, K_STR,
     true},
    {"EMU_LOG_LEVEL", FIELD(log_level), NOLIMIT, K_STR, false},
    {"EMU_EXIT_WITH_PARENT", FIELD(exit_with_parent), NOLIMIT, K_BOOL, false},
    {"EMU_MUTATION_QUOTA", FIELD(mutation_quota), 0, 100000, K_LONG, true},
    {"EMU_QUOTA_WINDOW_MS", FIELD(quota_window_ms), 1, 3600000, K_LONG, true},
    {"EMU_LATENCY_MS", FIELD(latency_spec), NOLIMIT, K_LATENCY, true},
};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct emu_config live;
static unsigned long long rng[EMU_RAND_N];

static void defaults(struct emu_config *c)
{
  memset(c, 0, sizeof(*c));
  snprintf(c->listen, sizeof(c->listen), "127.0.0.1:0");
  snprintf(c->project, sizeof(c->project), "test-project");
  snprintf(c->log_level, sizeof(c->log_level), "info");
  snprintf(c->push_service_account, sizeof(c->push_service_account),
           "batch-push@test-project.iam.gserviceaccount.com");
  c->run_ms = 2000;
  c->flex_wait_ms = 1000;
  c->start_ms = 100;
  c->cancel_ms = 200;
  c->delete_ms = 200;
  c->seed = 42;
  c->token_ttl_s = 3600;
  c->require_auth = true;
  c->mutation_quota = 6000; /* Batch: 6,000 a minute per region */
  c->quota_window_ms = 60000;
}

/* Caller holds mu. */
static void reseed(long long seed)
{
  int i;

  for (i = 0; i < EMU_RAND_N; i++)
    rng[i] = (unsigned long long)seed * 0x9E3779B97F4A7C15ULL +
             (unsigned long long)i + 1ULL;
}

bool emu_model_valid(const char *model)
{
  int i;

  for (i = 0; emu_models[i]; i++)
    if (!strcmp(model, emu_models[i]))
      return true;
  return false;
}

/* "loc/MODEL=N,loc/MODEL=N" into c->caps. */
static int parse_capacity(struct emu_config *c, const char *value, char *err,
                          size_t errlen)
{
  char *copy = strdup(value), *p, *next;
  int n = 0, rc = -1;

  if (!copy) {
    snprintf(err, errlen, "EMU_CAPACITY: out of memory");
    return -1;
  }
  for (p = copy; p && *p; p = next) {
    char *slash, *eq, *end;
    long long gpus;
    struct emu_cap *cap;

    next = strchr(p, ',');
    if (next)
      *next++ = '\0';
    p += strspn(p, " \t");
    end = p + strlen(p);
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
      *--end = '\0';
    if (!*p)
      continue;
    slash = strchr(p, '/');
    eq = strchr(p, '=');
    if (!slash || !eq || eq < slash) {
      snprintf(err, errlen, "EMU_CAPACITY: \"%s\" is not location/MODEL=gpus",
               p);
      goto out;
    }
    *slash = '\0';
    *eq = '\0';
    if (!emu_parse_long(eq + 1, &gpus) || gpus < 0) {
      snprintf(err, errlen, "EMU_CAPACITY: bad GPU count \"%s\"", eq + 1);
      goto out;
    }
    if (!emu_model_valid(slash + 1)) {
      snprintf(err, errlen, "EMU_CAPACITY: unknown provisioning model \"%s\"",
               slash + 1);
      goto out;
    }
    if (!*p || strlen(p) >= sizeof(cap->location) || n >= EMU_MAX_CAPS) {
      snprintf(err, errlen, "EMU_CAPACITY: bad or too many locations");
      goto out;
    }
    cap = &c->caps[n++];
    snprintf(cap->location, sizeof(cap->location), "%s", p);
    snprintf(cap->model, sizeof(cap->model), "%s", slash + 1);
    cap->gpus = gpus;
  }
  c->n_caps = n;
  rc = 0;
out:
  free(copy);
  return rc;
}

static const struct key *find_key(const char *name)
{
  size_t i;

  for (i = 0; i < N_KEYS; i++)
    if (!strcmp(keys[i].name, name))
      return &keys[i];
  return NULL;
}

static int set_key(struct emu_config *c, const struct key *k, const char *v,
                   char *err, size_t errlen)
{
  char *field = (char *)c + k->off;

  switch (k->type) {
  case K_LONG: {
    long long n;
    if (!emu_parse_long(v, &n) || (double)n < k->min || (double)n > k->max) {
      snprintf(err, errlen, "%s: \"%s\" is not an integer in [%.0f, %.0f]",
               k->name, v, k->min, k->max);
      return -1;
    }
    memcpy(field, &n, sizeof(n));
    return 0;
  }
  case K_DOUBLE: {
    char *end;
    double d;
    errno = 0;
    d = strtod(v, &end);
    if (errno || !*v || *end || !(d >= k->min && d <= k->max)) {
      snprintf(err, errlen, "%s: \"%s\" is not a number in [%g, %g]", k->name,
               v, k->min, k->max);
      return -1;
    }
    memcpy(field, &d, sizeof(d));
    return 0;
  }
  case K_BOOL: {
    bool b;
    if (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes"))
      b = true;
    else if (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no"))
      b = false;
    else {
      snprintf(err, errlen, "%s: \"%s\" is not a boolean", k->name, v);
      return -1;
    }
    memcpy(field, &b, sizeof(b));
    return 0;
  }
  case K_STR:
    if (strlen(v) >= k->size) {
      snprintf(err, errlen, "%s: value is too long", k->name);
      return -1;
    }
    memcpy(field, v, strlen(v) + 1);
    return 0;
  case K_CAPACITY:
    return parse_capacity(c, v, err, errlen);
  case K_LATENCY:
    if (strlen(v) >= k->size) {
      snprintf(err, errlen, "%s: value is too long", k->name);
      return -1;
    }
    if (emu_latency_parse(v, &c->latency, err, errlen) != 0)
      return -1;
    memcpy(field, v, strlen(v) + 1);
    return 0;
  }
  return -1;
}

int emu_config_load_env(char *err, size_t errlen)
{
  struct emu_config c;
  size_t i;

  defaults(&c);
  for (i = 0; i < N_KEYS; i++) {
    const char *v = getenv(keys[i].name);
    if (v && set_key(&c, &keys[i], v, err, errlen) != 0)
      return -1;
  }
  pthread_mutex_lock(&mu);
  live = c;
  reseed(c.seed);
  pthread_mutex_unlock(&mu);
  return 0;
}

int emu_config_apply_json(const json_t *obj, char *err, size_t errlen)
{
  struct emu_config c;
  const char *name;
  json_t *v;
  long long old_seed;
  bool seeded = false;

  if (!json_is_object(obj)) {
    snprintf(err, errlen, "the body must be a JSON object");
    return -1;
  }
  pthread_mutex_lock(&mu);
  c = live;
  old_seed = c.seed;
  json_object_foreach ((json_t *)obj, name, v) {
    const struct key *k = find_key(name);
    char buf[1024];
    const char *s = buf;

    if (!k || !k->runtime) {
      snprintf(err, errlen,
               k ? "%s cannot change at run time" : "unknown setting \"%s\"",
               name);
      goto fail;
    }
    if (json_is_string(v))
      s = json_string_value(v);
    else if (json_is_integer(v))
      snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
      snprintf(buf, sizeof(buf), "%.17g", json_real_value(v));
    else if (json_is_boolean(v))
      snprintf(buf, sizeof(buf), "%s", json_is_true(v) ? "true" : "false");
    else {
      snprintf(err, errlen, "%s: value must be a string, number or boolean",
               name);
      goto fail;
    }
    if (set_key(&c, k, s, err, errlen) != 0)
      goto fail;
    seeded |= !strcmp(name, "EMU_SEED");
  }
  live = c;
  if (seeded || c.seed != old_seed)
    reseed(c.seed);
  pthread_mutex_unlock(&mu);
  return 0;
fail:
  pthread_mutex_unlock(&mu);
  return -1;
}

void emu_config_get(struct emu_config *out)
{
  pthread_mutex_lock(&mu);
  *out = live;
  pthread_mutex_unlock(&mu);
}

json_t *emu_config_to_json(void)
{
  struct emu_config c;
  json_t *o = json_object(), *caps = json_object();
  size_t i;
  int j;

  emu_config_get(&c);
  if (!o || !caps) {
    json_decref(o);
    json_decref(caps);
    return NULL;
  }
  for (i = 0; i < N_KEYS; i++) {
    const char *field = (const char *)&c + keys[i].off;
    json_t *v = NULL;
    long long n;
    double d;
    bool b;

    switch (keys[i].type) {
    case K_LONG:
      memcpy(&n, field, sizeof(n));
      v = json_integer(n);
      break;
    case K_DOUBLE:
      memcpy(&d, field, sizeof(d));
      v = json_real(d);
      break;
    case K_BOOL:
      memcpy(&b, field, sizeof(b));
      v = json_boolean(b);
      break;
    case K_STR:
    case K_LATENCY:
      v = json_string(field);
      break;
    case K_CAPACITY: {
      char buf[EMU_MAX_CAPS * 112] = "";
      size_t used = 0;
      for (j = 0; j < c.n_caps && used < sizeof(buf); j++)
        used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s/%s=%lld",
                                 j ? "," : "", c.caps[j].location,
                                 c.caps[j].model, c.caps[j].gpus);
      v = json_string(buf);
      break;
    }
    }
    json_object_set_new(o, keys[i].name, v);
  }
  for (j = 0; j < c.n_caps; j++) {
    char key[128];
    snprintf(key, sizeof(key), "%s/%s", c.caps[j].location, c.caps[j].model);
    json_object_set_new(caps, key, json_integer(c.caps[j].gpus));
  }
  json_object_set_new(o, "capacity", caps);
  return o;
}

long long emu_config_capacity(const struct emu_config *c, const char *location,
                              const char *model)
{
  int i;

  for (i = 0; i < c->n_caps; i++)
    if (!strcmp(c->caps[i].location, location) &&
        !strcmp(c->caps[i].model, model))
      return c->caps[i].gpus;
  return -1;
}

double emu_rand(enum emu_rand_stream stream)
{
  unsigned long long z;

  pthread_mutex_lock(&mu);
  z = (rng[stream] += 0x9E3779B97F4A7C15ULL);
  pthread_mutex_unlock(&mu);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}
