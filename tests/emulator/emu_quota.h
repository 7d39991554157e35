/*
 * emu_quota.h — Batch's per-region quota on job mutations (create, cancel,
 * delete), enforced strictly: in every window of EMU_QUOTA_WINDOW_MS the
 * mutations a region accepts number at most EMU_MUTATION_QUOTA; one more
 * answers 429 RESOURCE_EXHAUSTED. Counted per region over the whole
 * emulator (all callers), as Batch counts per project and region.
 */
#ifndef GPUGATE_EMU_QUOTA_H
#define GPUGATE_EMU_QUOTA_H

#include <stdbool.h>

/*
 * True when a mutation of path's region may go ahead at now_ms (the
 * request's arrival, as recorded; counted), false when it exceeds the
 * quota (not counted). method and path are the request's; anything that
 * is not a mutation of /v1/projects/{p}/locations/{r}/jobs… is always
 * allowed.
 */
bool emu_quota_admit(const char *method, const char *path, long long now_ms);

/* Quota refusals so far (for GET /emulator/healthz-like checks). */
long long emu_quota_refused(void);

#endif
