/*
 * emulator.c — build/batch_emulator: a local stand-in for Google Cloud
 * Batch v1, the GCE metadata server and Google's OAuth2 token endpoint, so
 * gpugate's tests run without a cloud. See tests/emulator/README.md.
 *
 * Environment (all optional; the run-time ones also via POST /emulator/config):
 *
 *   EMU_LISTEN           host:port to listen on (IPv4). Default 127.0.0.1:0.
 *   EMU_PORT_FILE        write the bound port here once listening.
 *   EMU_PROJECT          the one project that exists. Default test-project;
 *                        others answer 403 PERMISSION_DENIED.           [run]
 *   EMU_CAPACITY         GPUs per location and provisioning model, e.g.
 *                        "us-central1/SPOT=16,europe-west4/FLEX_START=0".
 *                        Pairs not listed are unlimited; 0 never schedules.
 *                        A job needs parallelism × accelerators[0].count. [run]
 *   EMU_RUN_MS           RUNNING → SUCCEEDED/FAILED after this. 2000.    [run]
 *   EMU_FLEX_WAIT_MS     FLEX_START jobs stay QUEUED at least this. 1000. [run]
 *   EMU_START_MS         SCHEDULED → RUNNING after this. 100.            [run]
 *   EMU_CANCEL_MS        CANCELLATION_IN_PROGRESS → CANCELLED. 200.      [run]
 *   EMU_CANCEL_LAG_MS    an accepted :cancel acts this much later (the job
 *                        stays QUEUED/SCHEDULED/RUNNING meanwhile). 0. [run]
 *   EMU_CANCEL_DROP_FIRST the first accepted :cancel of each job is
 *                        answered but never acted on. false.        [run]
 *   EMU_DELETE_MS        DELETION_IN_PROGRESS → gone (404). 200.         [run]
 *   EMU_FAIL_RATE        fraction of runs that end FAILED. 0.            [run]
 *   EMU_SEED             seed of the fault and outcome draws. 42.        [run]
 *   EMU_TOKEN_TTL_S      lifetime of issued access tokens. 3600.         [run]
 *   EMU_REQUIRE_AUTH     false: Batch calls need no bearer token. true.  [run]
 *   EMU_SA_PUBLIC_KEY    PEM public key that must verify JWT-bearer
 *                        assertions (RS256); unset: signatures not checked.
 *   EMU_SA_EMAIL         required JWT iss; unset: any.                   [run]
 *   EMU_TOKEN_URI        required JWT aud; unset: http://{Host}/token.   [run]
 *   EMU_LOGGING_URL      the Cloud Logging emulator (build/logging_emulator):
 *                        jobs write their output there (emu_logs.h); unset:
 *                        no logs.
 *   EMU_PUSH_URL         POST a Pub/Sub push envelope here on every job
 *                        state change; unset: no pushes.                 [run]
 *   EMU_PUSH_SUBSCRIPTION  the envelope's "subscription".
 *                        Default projects/{EMU_PROJECT}/subscriptions/gpugate.
 *   EMU_MUTATION_QUOTA   job mutations (create, cancel, delete) a region
 *                        accepts in any EMU_QUOTA_WINDOW_MS; more answer
 *                        429 RESOURCE_EXHAUSTED. 6000 (0: unlimited).    [run]
 *   EMU_QUOTA_WINDOW_MS  the quota's window. 60000.                      [run]
 *   EMU_LATENCY_MS       Batch's latency per call, "call:median[/p99],…"
 *                        in ms, lognormal (emu_latency.h), e.g.
 *                        "create:300/1500,get:80/400". "": none.         [run]
 *   EMU_LOG_LEVEL        debug | info | warn | error. info.
 *   EMU_EXIT_WITH_PARENT true: exit when the process that started us dies
 *                        (tests that fail mid-way leave no emulator behind).
 *
 * Per job, taskGroups[0].taskSpec.environment.variables may hold
 * EMU_RUN_MS (run time of this job), EMU_START_MS (its time SCHEDULED),
 * EMU_OUTCOME (FAILED | SUCCEEDED) and EMU_FAIL_FIRST_ATTEMPT (true: task
 * 0's first run fails after EMU_RUN_MS; with taskSpec.maxRetryCount >= 1
 * Batch runs it again for EMU_RUN_MS, then the job ends by EMU_OUTCOME;
 * with 0 the job FAILED).
 *
 * Endpoints: Batch v1 jobs and operations under /v1/projects/…; the token
 * endpoints /computeMetadata/v1/instance/service-accounts/default/token and
 * POST /token; control endpoints under /emulator/ (healthz, requests, jobs,
 * jobs/{id}:disappear, faults, config, tokens) — see routes.def.
 *
 * SIGTERM or SIGINT stops it cleanly.
 */
#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "lib/log.h"
#include "tests/emulator/emu_config.h"
#include "tests/emulator/emu_http.h"
#include "tests/emulator/emu_jobs.h"
#include "tests/emulator/emu_logs.h"
#include "tests/emulator/emu_oidc.h"
#include "tests/emulator/emu_push.h"
#include "tests/emulator/emu_record.h"
#include "tests/emulator/emu_token.h"

/* "host:port" into host and *port. */
static int split_listen(const char *s, char *host, size_t hostlen,
                        unsigned short *port)
{
  const char *colon = strrchr(s, ':');
  char *end;
  unsigned long p;

  if (!colon || colon == s || (size_t)(colon - s) >= hostlen)
    return -1;
  errno = 0;
  p = strtoul(colon + 1, &end, 10);
  if (errno || *end || end == colon + 1 || p > 65535)
    return -1;
  memcpy(host, s, (size_t)(colon - s));
  host[colon - s] = '\0';
  *port = (unsigned short)p;
  return 0;
}

static int write_port_file(const char *path, unsigned short port)
{
  char tmp[600];
  FILE *f;

  /* write then rename, so a reader never sees a half-written port */
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  f = fopen(tmp, "w");
  if (!f)
    return -1;
  fprintf(f, "%u\n", port);
  if (fclose(f) != 0)
    return -1;
  return rename(tmp, path);
}

int main(void)
{
  struct emu_config c;
  char err[512], host[128];
  unsigned short port, bound = 0;
  sigset_t set;
  int sig = 0, level, rc = EXIT_FAILURE;
  pid_t parent = getppid();

  if (emu_config_load_env(err, sizeof(err)) != 0) {
    fprintf(stderr, "batch_emulator: %s\n", err);
    return EXIT_FAILURE;
  }
  emu_config_get(&c);
  level = log_level_parse(c.log_level);
  if (level < 0) {
    fprintf(stderr, "batch_emulator: EMU_LOG_LEVEL: bad level \"%s\"\n",
            c.log_level);
    return EXIT_FAILURE;
  }
  log_set_level(level);
  if (split_listen(c.listen, host, sizeof(host), &port) != 0) {
    fprintf(stderr, "batch_emulator: EMU_LISTEN: \"%s\" is not host:port\n",
            c.listen);
    return EXIT_FAILURE;
  }
  if (emu_token_init(c.sa_public_key, err, sizeof(err)) != 0) {
    fprintf(stderr, "batch_emulator: %s\n", err);
    return EXIT_FAILURE;
  }
  if (emu_oidc_init(c.oidc_key, err, sizeof(err)) != 0) {
    fprintf(stderr, "batch_emulator: %s\n", err);
    emu_token_shutdown();
    return EXIT_FAILURE;
  }

  /* threads inherit the mask: only sigwait() below sees these */
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);
  if (c.exit_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
      goto out_token; /* the parent died before prctl() */
  }

  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (emu_push_start() != 0 || emu_logs_start() != 0 || emu_jobs_start() != 0) {
    log_msg(LOG_ERROR, "emulator: cannot start threads");
    goto out_threads;
  }
  if (emu_http_start(host, port, &bound) != 0)
    goto out_threads;
  if (c.port_file[0] && write_port_file(c.port_file, bound) != 0) {
    log_msg(LOG_ERROR, "emulator: cannot write EMU_PORT_FILE %s", c.port_file);
    goto out_http;
  }
  log_msg(LOG_INFO, "emulator: listening on %s:%u (project %s)", host, bound,
          c.project);
  while (sigwait(&set, &sig) != 0)
    ;
  log_msg(LOG_INFO, "emulator: signal %d, stopping", sig);
  rc = EXIT_SUCCESS;
out_http:
  emu_http_stop();
out_threads:
  emu_jobs_stop();
  emu_logs_stop();
  emu_push_stop();
  emu_record_free();
  curl_global_cleanup();
out_token:
  emu_oidc_shutdown();
  emu_token_shutdown();
  return rc;
}
