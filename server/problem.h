/*
 * problem.h — the only writer of application/problem+json (RFC 9457).
 *
 * A handler that fails records why with problem_field() (one entry per bad
 * field) and returns problem_fail(req, code, ...): both fill the request's
 * struct gg_err (lib/err.h), which db/ functions fill directly through
 * &req->err. The server turns that error into the reply with
 * problem_from_err(). One table maps each gg_code to its HTTP status,
 * problem type and title.
 */
#ifndef GPUGATE_PROBLEM_H
#define GPUGATE_PROBLEM_H

#include <jansson.h>

#include "lib/err.h"
#include "server/req.h"

/* HTTP status of a code (200 for GG_OK). */
unsigned problem_status(enum gg_code code);

/* Short lower-case title of a code, e.g. "validation failed". Static. */
const char *problem_title(enum gg_code code);

/*
 * Record a bad field: appends {field, message} to the request's errors.
 * field is a JSON-pointer-like path ("flavors[1].resources.gpu.nominal").
 */
void problem_field(struct gg_req *req, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Number of fields recorded so far. */
size_t problem_nfields(const struct gg_req *req);

/*
 * Fail the request with code and a full-sentence detail. Returns code so a
 * handler can `return problem_fail(...)`. The first failure wins.
 */
enum gg_code problem_fail(struct gg_req *req, enum gg_code code,
                          const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Forget a recorded failure (a handler that treats it as an answer). */
void problem_clear(struct gg_req *req);

/*
 * Build the problem document for code/detail/errors. errors is borrowed
 * (may be NULL). Returns a new reference.
 */
json_t *problem_build(enum gg_code code, const char *detail, json_t *errors,
                      const char *instance, const char *request_id);

/*
 * The problem document for err (its code, detail and field errors), as the
 * server answers it. Returns a new reference.
 */
json_t *problem_from_err(const struct gg_err *err, const char *instance,
                         const char *request_id);

#endif
