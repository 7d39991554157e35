/*
 * log_filter.h — the Cloud Logging emulator's filters: the subset of the
 * Logging query language that gpugate writes (gcp/logging.c), parsed
 * once and matched against LogEntry objects.
 *
 *   filter  := clause { "AND" clause }
 *   clause  := "(" cmp { "OR" cmp } ")" | cmp
 *   cmp     := field op value
 *   field   := logName | timestamp | severity | labels.KEY | labels."KEY"
 *   op      := "=" | ">=" | ":"     (":" is has: a substring, as Logging's
 *                                    has on a string field)
 *   value   := "string" | WORD | "(" value { "OR" value } ")"
 *
 * severity compares by LogSeverity rank, timestamp as instants, the rest
 * as strings. Anything else is refused, as Logging refuses an unparseable
 * filter (400 INVALID_ARGUMENT).
 */
#ifndef GPUGATE_LOG_FILTER_H
#define GPUGATE_LOG_FILTER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct log_filter;

/* Parse text; NULL with a message in err when outside the subset. An empty
 * filter matches everything. */
struct log_filter *log_filter_parse(const char *text, char *err, size_t errlen);
void log_filter_free(struct log_filter *f);

/* Whether entry (borrowed) matches f. */
bool log_filter_match(const struct log_filter *f, const json_t *entry);

/* An RFC 3339 instant in ns; -1 on a malformed one. Severity rank of a
 * name; -1 when unknown. */
int log_time_ns(const char *s, int64_t *ns);
int log_severity_rank(const char *name);

#endif
