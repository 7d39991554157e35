/*
 * emu_latency.h — the Batch emulator's latency model (EMU_LATENCY_MS): for
 * each kind of Batch call a median and a 99th percentile in milliseconds,
 * each call's delay drawn from the lognormal distribution they define. A
 * real Batch answers a create in a few hundred milliseconds; without this
 * the emulator answers at once, and a client that makes one call at a time
 * looks faster than it could ever be.
 *
 * The spec is "call:median[/p99]" items joined by commas, e.g.
 * "create:300/1500,get:80/400,list:150/800,cancel:250/1200,delete:250/1200".
 * Calls are create, get (a job or an operation), list, cancel, delete; one
 * not named has no delay. Without "/p99" the delay is the median every
 * time. Values are whole milliseconds, median <= p99 <= EMU_LATENCY_MAX_MS,
 * and a spread needs a median above 0. "" is no latency at all.
 *
 * Parsing and drawing are pure (given the uniform variates), so the unit
 * tests check them as tables.
 */
#ifndef GPUGATE_EMU_LATENCY_H
#define GPUGATE_EMU_LATENCY_H

#include <stddef.h>

#define EMU_LATENCY_MAX_MS 60000L
/* no drawn delay exceeds this multiple of the call's p99 */
#define EMU_LATENCY_TAIL_CAP 3

/* The kinds of call the model knows; EMU_CALL_OTHER is never delayed. */
enum emu_call {
  EMU_CALL_OTHER = 0,
  EMU_CALL_CREATE,
  EMU_CALL_GET,
  EMU_CALL_LIST,
  EMU_CALL_CANCEL,
  EMU_CALL_DELETE,
  EMU_CALL_N
};

struct emu_latency {
  long median_ms[EMU_CALL_N];
  long p99_ms[EMU_CALL_N];
};

/* The call's name in a spec ("create", …; "other" for EMU_CALL_OTHER). */
const char *emu_call_name(enum emu_call k);

/*
 * Parse spec (see above) into *out, all or nothing. Returns 0, or -1 with a
 * message in err that quotes the offending item and says what was expected.
 */
int emu_latency_parse(const char *spec, struct emu_latency *out, char *err,
                      size_t errlen);

/*
 * The delay of one call of kind k in ms: median × exp(sigma × z) with z a
 * standard normal from the uniform variates u1 in (0, 1] and u2 in [0, 1)
 * (Box–Muller) and sigma = ln(p99 / median) / 2.3263 (the normal's 99th
 * percentile), capped at EMU_LATENCY_TAIL_CAP × p99. 0 when the call has
 * no latency.
 */
long emu_latency_draw(const struct emu_latency *l, enum emu_call k, double u1,
                      double u2);

#endif
