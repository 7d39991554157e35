/*
 * err.c — struct gg_err: record a failure and its field errors.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/err.h"

void err_init(struct gg_err *err)
{
  err->code = GG_OK;
  err->detail[0] = '\0';
  err->fields = NULL;
}

void err_field(struct gg_err *err, const char *field, const char *fmt, ...)
{
  char msg[256];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (!err->fields)
    err->fields = json_array();
  if (json_array_size(err->fields) >= GG_ERR_MAX_FIELDS)
    return;
  json_array_append_new(
      err->fields, json_pack("{s:s, s:s}", "field", field, "message", msg));
}

size_t err_nfields(const struct gg_err *err)
{
  return err->fields ? json_array_size(err->fields) : 0;
}

enum gg_code err_vfail(struct gg_err *err, enum gg_code code, const char *fmt,
                       va_list ap)
{
  if (err->code != GG_OK)
    return err->code;
  err->code = code;
  vsnprintf(err->detail, sizeof(err->detail), fmt, ap);
  return code;
}

enum gg_code err_fail(struct gg_err *err, enum gg_code code, const char *fmt,
                      ...)
{
  va_list ap;
  enum gg_code rc;

  va_start(ap, fmt);
  rc = err_vfail(err, code, fmt, ap);
  va_end(ap);
  return rc;
}

void err_clear(struct gg_err *err)
{
  json_decref(err->fields);
  err_init(err);
}
