/*
 * bindings.h — reading every access binding at once, for the replica's
 * cache (identity/bindings.c), on the configuration watch's own session.
 */
#ifndef GPUGATE_DB_BINDINGS_H
#define GPUGATE_DB_BINDINGS_H

#include <jansson.h>
#include <libpq-fe.h>
#include <stddef.h>

/* At most this many bindings are read (and honoured). */
#define DB_BINDINGS_MAX 4096

/*
 * Every access binding on pg as a new array of {"name", spec...} ordered
 * by name, in *out. Returns 0, or -1 with err filled.
 */
int db_bindings_read(PGconn *pg, json_t **out, char *err, size_t errlen);

#endif
