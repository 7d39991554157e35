/*
 * emu_record.h — the log of requests the emulator received on the Batch
 * API and token endpoints, for tests to inspect (GET /emulator/requests).
 * Thread-safe.
 */
#ifndef GPUGATE_EMU_RECORD_H
#define GPUGATE_EMU_RECORD_H

#include <jansson.h>

/* Append entry (stolen), giving it the next "index". */
void emu_record_add(json_t *entry);

/*
 * {"requests": [entries with index >= since], "next": the index the next
 * entry will get} as a new reference.
 */
json_t *emu_record_list(long long since);

/* Forget every entry; indexes keep counting up. */
void emu_record_clear(void);

/* How many entries are kept. */
size_t emu_record_count(void);

/* Free everything at shutdown. */
void emu_record_free(void);

#endif
