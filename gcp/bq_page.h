/*
 * bq_page.h — reading a jobs.query / getQueryResults reply without building
 * a JSON tree of its rows: the reply less its "rows" is parsed as JSON (a
 * few hundred bytes), and the rows ("rows": [{"f": [{"v": ...}, ...]}, ...])
 * are walked in place, each cell's string unescaped into a scratch buffer
 * and handed on. A page of 5,000 billing rows is about 7 MB of escaped
 * JSON strings: this keeps it one pass over the bytes and no allocation per
 * row. Pure functions (no I/O).
 */
#ifndef GPUGATE_BATCH_BQ_PAGE_H
#define GPUGATE_BATCH_BQ_PAGE_H

#include <jansson.h>
#include <stddef.h>

#define BQ_MAX_CELLS 8 /* cells of a row we read */

/*
 * body[0..len) as a JSON object: *doc, a new reference, is the object
 * with "rows" set to null, and *rows, *rows_len the text of the "rows"
 * value (len 0 when there is none). Returns 0, or -1 when body is not a
 * JSON object.
 */
int bq_page_split(const char *body, size_t len, json_t **doc, const char **rows,
                  size_t *rows_len);

/*
 * A row's cells (NULL for a null "v", else NUL-terminated, unescaped),
 * valid during the call; return 0 to go on, -1 to stop.
 */
typedef int (*bq_cells_fn)(void *ctx, const char *const *cells, size_t n,
                           char *err, size_t errlen);

/* Scratch memory of bq_page_rows, reused across pages. */
struct bq_scratch {
  char *p;
  size_t cap;
};

/*
 * Walk the rows text (as bq_page_split gives it: an array of {"f": [{"v":
 * string or null}, ...]}) and call fn per row. Returns 0, or -1 with err
 * (fn's message, or the malformed part of the rows).
 */
int bq_page_rows(const char *rows, size_t len, struct bq_scratch *s,
                 bq_cells_fn fn, void *ctx, char *err, size_t errlen);

#endif
