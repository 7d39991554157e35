/*
 * fs_fixture.c — the fair-share suites' shared start (see fs_fixture.h).
 */
#include <check.h>

#include "tests/integration/fs_fixture.h"

void fs_fixture_start(struct h_server *emu, struct h_server *srv,
                      const char *name, char *url, size_t urllen,
                      char gcp[H_GCP_ENV][128], const char **env,
                      const char *const *extra)
{
  size_t n = 0, i;

  ck_assert_msg(h_emulator_start(emu, NULL) == 0,
                "the emulator did not start; see %s", emu->log);
  h_gcp_env(emu, gcp);
  ck_assert_int_eq(h_db_create(name, url, urllen), 0);
  for (i = 0; i < H_GCP_ENV; i++)
    env[n++] = gcp[i];
  env[n++] = "GPUGATE_SYNC_INTERVAL_MS=200";
  env[n++] = "GPUGATE_ADMISSION_INTERVAL_MS=100";
  env[n++] = "GPUGATE_RATE_LIMIT_RPS=100000";
  for (i = 0; extra && extra[i] && n < FS_FIXTURE_ENV - 1; i++)
    env[n++] = extra[i];
  env[n] = NULL;
  ck_assert_msg(h_server_start(srv, url, env) == 0,
                "gpugate did not start; see %s", srv->log);
}

void fs_fixture_flavor(struct h_server *srv, const char *admin)
{
  json_decref(h_call(
      srv, "PUT", "/v1/priority-classes/default", admin,
      "{\"value\": 10, \"preemption_policy\": \"Never\", \"default\": true}",
      201));
  json_decref(h_call(srv, "PUT", "/v1/flavors/spot", admin,
                     "{\"provisioning_model\": \"SPOT\", \"machine_type\": "
                     "\"g2-standard-24\", \"accelerator_type\": "
                     "\"nvidia-l4\", \"gpus_per_vm\": 2, \"locations\": "
                     "[\"us-central1\"], \"price_per_gpu_hour_usd\": 0.25}",
                     201));
}
