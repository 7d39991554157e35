/*
 * fs_fixture.h — the start the fair-share suites share (it_fairshare.c,
 * it_fs_leader.c): the Batch emulator, a fresh database, gpugate with the
 * emulator's variables and short intervals, then the default priority
 * class and the one flavor their cluster queues use.
 */
#ifndef GPUGATE_IT_FS_FIXTURE_H
#define GPUGATE_IT_FS_FIXTURE_H

#include <stddef.h>

#include "tests/integration/harness.h"

#define FS_FIXTURE_ENV 16 /* entries of the env a caller keeps */

/*
 * Start emu, the database name (its URI into url), and srv with emu's GCP
 * variables, GPUGATE_SYNC_INTERVAL_MS=200, GPUGATE_ADMISSION_INTERVAL_MS=100,
 * GPUGATE_RATE_LIMIT_RPS=100000 and the NULL-terminated extra; gcp and
 * env (FS_FIXTURE_ENV entries) keep those variables for a restart of srv
 * with the same env. Fails the test when any does not start.
 */
void fs_fixture_start(struct h_server *emu, struct h_server *srv,
                      const char *name, char *url, size_t urllen,
                      char gcp[H_GCP_ENV][128], const char **env,
                      const char *const *extra);

/* As admin on srv: the default priority class (10, never preempts) and
 * the flavor "spot" (g2-standard-24, 2 L4 a VM, us-central1, $0.25 a
 * GPU-hour). */
void fs_fixture_flavor(struct h_server *srv, const char *admin);

#endif
