/*
 * fake_req.h — what the libFuzzer harnesses share: a request context whose
 * headers and query arguments come from the harness instead of a
 * libmicrohttpd connection, and small input helpers.
 *
 * The harness binaries define MHD_lookup_connection_value and
 * MHD_get_connection_values themselves (the executable's definitions take
 * precedence over the shared library's), so req_header(), req_query() and
 * the cursor's scope (lib/cursor.c) answer from the values set here. Not
 * thread-safe: libFuzzer runs one input at a time.
 */
#ifndef GPUGATE_FAKE_REQ_H
#define GPUGATE_FAKE_REQ_H

#include <stddef.h>
#include <stdint.h>

#include "server/req.h"

/* Start a request with no headers and no query arguments and a
 * configuration with a fixed cursor key; req_cleanup() releases it. */
void fuzz_req_init(struct gg_req *req);

/* Add a header (name case-insensitive, as libmicrohttpd matches them). The
 * strings are copied. */
void fuzz_req_header(const char *name, const char *value);

/* Set the query arguments from a query string "a=1&b=x%20y" (n bytes),
 * decoded as libmicrohttpd decodes them ('+' is a space, %XX a byte). */
void fuzz_req_query(const char *q, size_t n);

/* A NUL-terminated copy of data[0..n) (malloc'd; NULL when out of memory). */
char *fuzz_strndup(const uint8_t *data, size_t n);

/* Split data at the first byte sep: *head gets a new NUL-terminated copy of
 * what precedes it (all of data when there is no sep) and the rest is
 * returned as *tail / *tail_n (borrowed). */
void fuzz_split(const uint8_t *data, size_t n, uint8_t sep, char **head,
                const uint8_t **tail, size_t *tail_n);

#endif
