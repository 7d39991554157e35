/*
 * emu_config.h — the Batch emulator's settings (EMU_* environment variables,
 * changeable at run time through POST /emulator/config) and its seeded
 * pseudo-random streams. All functions are thread-safe.
 */
#ifndef GPUGATE_EMU_CONFIG_H
#define GPUGATE_EMU_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "tests/emulator/emu_latency.h"

#define EMU_MAX_CAPS 64

/* GPUs available to one location and provisioning model. */
struct emu_cap {
  char location[64];
  char model[32];
  long long gpus;
};

struct emu_config {
  char listen[128];
  char port_file[512];
  char project[128];
  struct emu_cap caps[EMU_MAX_CAPS];
  int n_caps;
  long long run_ms;
  long long flex_wait_ms;
  long long start_ms;  /* SCHEDULED → RUNNING */
  long long cancel_ms; /* CANCELLATION_IN_PROGRESS → CANCELLED */
  /* an accepted :cancel leaves the job as it is this long first */
  long long cancel_lag_ms;
  bool cancel_drop_first; /* the first accepted :cancel of a job is lost */
  long long delete_ms;    /* DELETION_IN_PROGRESS → gone */
  double fail_rate;
  long long seed;
  long long token_ttl_s;
  bool require_auth;
  char push_url[512];
  char push_subscription[256]; /* "" = projects/{project}/subscriptions/gpugate
                                */
  char sa_public_key[512];     /* path of a PEM public key; "" = not verified */
  char sa_email[256];          /* expected JWT iss; "" = any */
  char token_uri[512];         /* expected JWT aud; "" = http://{Host}/token */
  char oidc_key[512];          /* private RSA PEM signing pushes; "" = one
                                  made at start */
  char push_audience[512];     /* "" = pushes carry no OIDC token */
  char push_service_account[256]; /* the pushes' token email */
  char log_level[16];
  bool exit_with_parent;
  long long mutation_quota;   /* per region and window; 0 = unlimited */
  long long quota_window_ms;  /* the quota's window */
  char latency_spec[256];     /* EMU_LATENCY_MS as given */
  struct emu_latency latency; /* … parsed */
};

/* Random streams, independent so that faults do not shift outcomes. */
enum emu_rand_stream {
  EMU_RAND_FAULT = 0,
  EMU_RAND_OUTCOME,
  EMU_RAND_LATENCY,
  EMU_RAND_N
};

/* Provisioning models the emulator knows (NULL-ended). */
extern const char *const emu_models[];

/* True when model is one of emu_models. */
bool emu_model_valid(const char *model);

/*
 * Set defaults, then apply every EMU_* variable present in the environment.
 * Returns 0, or -1 with a message naming the variable in err.
 */
int emu_config_load_env(char *err, size_t errlen);

/*
 * Apply {"EMU_KEY": value, ...} (borrowed; values strings, numbers or
 * booleans) all-or-nothing. Keys fixed at start-up (EMU_LISTEN, …) are
 * refused. Returns 0, or -1 with a message in err.
 */
int emu_config_apply_json(const json_t *obj, char *err, size_t errlen);

/* A snapshot of the current settings. */
void emu_config_get(struct emu_config *out);

/* Every setting as a new JSON object (keys as the variables). */
json_t *emu_config_to_json(void);

/* Capacity in GPUs of location/model in c; -1 when unlimited. */
long long emu_config_capacity(const struct emu_config *c, const char *location,
                              const char *model);

/* A uniform double in [0, 1) from a stream seeded by EMU_SEED. */
double emu_rand(enum emu_rand_stream stream);

#endif
