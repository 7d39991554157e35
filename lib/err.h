/*
 * err.h — the one error every layer fills (struct gg_err): an internal code,
 * a client-safe detail sentence and field errors.
 *
 * PostgreSQL's ereport is the model: the layer that knows what went wrong
 * (db/, a handler's validation) fills the error deep inside; only the edge
 * (server/problem.c, problem_from_err()) turns it into an HTTP answer. Nothing
 * here knows HTTP: the code → status → problem type table lives in server/.
 */
#ifndef GPUGATE_ERR_H
#define GPUGATE_ERR_H

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>

/* Result of a handler and of most internal calls: GG_OK or an error kind.
 * The comments name the HTTP status server/problem.c answers with. */
enum gg_code {
  GG_OK = 0,
  GG_BAD_REQUEST,         /* 400 */
  GG_UNAUTHORIZED,        /* 401 */
  GG_FORBIDDEN,           /* 403 */
  GG_NOT_FOUND,           /* 404 */
  GG_METHOD_NOT_ALLOWED,  /* 405 */
  GG_NOT_ACCEPTABLE,      /* 406 */
  GG_CONFLICT,            /* 409 */
  GG_PRECONDITION_FAILED, /* 412 */
  GG_PAYLOAD_TOO_LARGE,   /* 413 */
  GG_UNSUPPORTED_MEDIA,   /* 415 */
  GG_UNPROCESSABLE,       /* 422 */
  GG_TOO_MANY_REQUESTS,   /* 429 */
  GG_INTERNAL,            /* 500 */
  GG_UNAVAILABLE,         /* 503 */
  GG_CODE_COUNT
};

/* At most this many field errors are kept: the client has enough to fix. */
#define GG_ERR_MAX_FIELDS 100

struct gg_err {
  enum gg_code code; /* GG_OK until the first err_fail() */
  char detail[512];  /* a full sentence for the client; never SQL or curl */
  json_t *fields;    /* owned; array of {field, message}, or NULL */
};

/* An empty error (code GG_OK). */
void err_init(struct gg_err *err);

/*
 * Record a bad field: appends {field, message}. field is a JSON-pointer-like
 * path ("flavors[1].resources.gpu.nominal"). Bounded by GG_ERR_MAX_FIELDS.
 */
void err_field(struct gg_err *err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Number of field errors recorded so far. */
size_t err_nfields(const struct gg_err *err);

/*
 * Fail with code and a full-sentence detail. Returns the error's code so a
 * caller can `return err_fail(...)`. The first failure wins.
 */
enum gg_code err_fail(struct gg_err *err, enum gg_code code, const char *fmt,
                      ...) __attribute__((format(printf, 3, 4)));

/* err_fail() with a va_list. */
enum gg_code err_vfail(struct gg_err *err, enum gg_code code, const char *fmt,
                       va_list ap) __attribute__((format(printf, 3, 0)));

/* Forget the failure and the field errors (back to err_init()'s state). */
void err_clear(struct gg_err *err);

#endif
