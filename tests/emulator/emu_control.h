/*
 * emu_control.h — the emulator's own endpoints under /emulator/, used by
 * tests to inspect and steer it. Never faulted, never recorded.
 */
#ifndef GPUGATE_EMU_CONTROL_H
#define GPUGATE_EMU_CONTROL_H

#include "tests/emulator/emu_http.h"

/* GET /emulator/healthz: {"status": "ok", counters…} */
void emu_control_healthz(struct emu_req *r);

/* GET /emulator/requests[?since=N] / DELETE /emulator/requests */
void emu_control_requests(struct emu_req *r);
void emu_control_requests_clear(struct emu_req *r);

/* GET /emulator/jobs: jobs, create counts per name, GPU usage */
void emu_control_jobs(struct emu_req *r);

/* POST /emulator/jobs/{id}:disappear: drop the job silently */
void emu_control_disappear(struct emu_req *r);

/* GET / POST / DELETE /emulator/faults */
void emu_control_faults_get(struct emu_req *r);
void emu_control_faults_set(struct emu_req *r);
void emu_control_faults_clear(struct emu_req *r);

/* GET / POST /emulator/config ({"EMU_KEY": value, …}) */
void emu_control_config_get(struct emu_req *r);
void emu_control_config_set(struct emu_req *r);

/* DELETE /emulator/tokens: revoke every issued access token */
void emu_control_tokens_revoke(struct emu_req *r);

#endif
