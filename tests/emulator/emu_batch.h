/*
 * emu_batch.h — the Batch v1 REST resources the emulator serves: jobs
 * (create, get, list, cancel, delete) and operations (get). Each handler
 * validates its input as Batch would and answers a Job, a ListJobsResponse,
 * an Operation or a google.rpc.Status error.
 */
#ifndef GPUGATE_EMU_BATCH_H
#define GPUGATE_EMU_BATCH_H

#include "tests/emulator/emu_http.h"

/* POST /v1/projects/{p}/locations/{l}/jobs?job_id=&request_id= */
void emu_batch_create(struct emu_req *r);

/* GET /v1/projects/{p}/locations/{l}/jobs?filter=&pageSize=&pageToken= */
void emu_batch_list(struct emu_req *r);

/* GET /v1/projects/{p}/locations/{l}/jobs/{id} */
void emu_batch_get(struct emu_req *r);

/* POST /v1/projects/{p}/locations/{l}/jobs/{id}:cancel */
void emu_batch_cancel(struct emu_req *r);

/* DELETE /v1/projects/{p}/locations/{l}/jobs/{id} */
void emu_batch_delete(struct emu_req *r);

/* GET /v1/projects/{p}/locations/{l}/operations/{id} */
void emu_batch_operation(struct emu_req *r);

#endif
