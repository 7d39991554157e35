/*
 * emu_fault.h — fault injection on the Batch API (and, when asked, the token
 * endpoints), configured at run time by POST /emulator/faults. Thread-safe.
 */
#ifndef GPUGATE_EMU_FAULT_H
#define GPUGATE_EMU_FAULT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum emu_fault_kind {
  EMU_FAULT_NONE = 0,
  EMU_FAULT_ERROR,        /* answer an error code instead of the call */
  EMU_FAULT_TIMEOUT,      /* stall, then 503 (or close) without the call */
  EMU_FAULT_RESET,        /* close the connection without the call */
  EMU_FAULT_LOST_RESPONSE /* perform the call, then close without a reply */
};

/* What to do to one request. */
struct emu_fault {
  enum emu_fault_kind kind;
  unsigned code;           /* EMU_FAULT_ERROR: the HTTP status */
  long long timeout_ms;    /* EMU_FAULT_TIMEOUT: how long to stall */
  bool timeout_reset;      /* EMU_FAULT_TIMEOUT: close instead of 503 */
  long long retry_after_s; /* 429: Retry-After and RetryInfo */
  bool timeout_slow;       /* EMU_FAULT_TIMEOUT: then serve it as usual */
  bool lost_503;           /* EMU_FAULT_LOST_RESPONSE: 503, not a close */
};

/*
 * Replace the fault settings with spec (borrowed): {"error_rate", "codes",
 * "timeout_rate", "timeout_ms", "timeout_mode": "503"|"reset"|"slow",
 * "reset_rate", "lost_response_rate", "retry_after_s", "tokens",
 * "methods": ["POST", …], "regions": ["us-east4", …], "max_faults",
 * "calls": ["create", "get", "list", "cancel", "delete"],
 * "lost_response_mode": "reset"|"503"}; {}
 * turns faults off. Returns 0,
 * or -1 with a message in err (settings unchanged).
 */
int emu_fault_configure(const json_t *spec, char *err, size_t errlen);

/* Current settings and counters as a new JSON object. */
json_t *emu_fault_to_json(void);

/*
 * Draw the fault for one request with method and path, a call of kind
 * call (emu_call_name(): "create", …, "other"); token_endpoint
 * says whether it is a token endpoint (faulted only with "tokens": true).
 */
void emu_fault_draw(bool token_endpoint, const char *method, const char *path,
                    const char *call, struct emu_fault *out);

/* The google.rpc.Code name for an HTTP status ("UNAVAILABLE" for 503). */
const char *emu_fault_status_name(unsigned http);

/* Name of a fault kind for the request log; NULL for none. */
const char *emu_fault_kind_name(enum emu_fault_kind kind);

#endif
