/*
 * log.h — structured logs: one JSON object per line on stderr.
 * Never pass a token or a secret to these functions.
 */
#ifndef GPUGATE_LOG_H
#define GPUGATE_LOG_H

#include <jansson.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Parse "debug" | "info" | "warn" | "error"; -1 otherwise. */
int log_level_parse(const char *s);

/* Set the minimum level written. Not thread-safe: call at start-up. */
void log_set_level(int level);
int log_enabled(int level);

/* Write {"time","level","msg"} plus fields (borrowed, may be NULL). */
void log_json(int level, const char *msg, json_t *fields);

/* printf-style convenience for messages without extra fields. */
void log_msg(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
