/*
 * bq_rendered.h — the BigQuery emulator's table rendered once: every row of
 * every day as the rows query's reply carries it, so that a page is a span
 * of stored text sent as it is, as BigQuery serves stored rows, rather
 * than rows generated anew (BQ_EMU_PRERENDER=1; bench/ingest.sh sets it,
 * so that the emulator's work on the bench's two cores is sending, not
 * generating: BigQuery's own work is not on gpugate's host).
 *
 * The text of a day is its rows end to end, each a comma and its cell
 * (bq_fixture_cell: `{"f":[{"v":"…"}]}`, the row's TO_JSON_STRING as a
 * JSON string, the very bytes a generated page holds); rows
 * offset..end of a page are "[" + the span from the comma after row
 * offset's own + "]". A fixture change (a revision, a touch, a late row, a
 * short day) makes the rendering stale: the emulator then generates pages
 * again (bq_emulator.c).
 */
#ifndef GPUGATE_BQ_RENDERED_H
#define GPUGATE_BQ_RENDERED_H

#include <stdbool.h>
#include <stddef.h>

#include "tests/emulator/bq_fixture.h"

/* Render every day of f (each day's rows as bq_fixture_day_rows counts
 * them). 0, or -1 when out of memory (nothing kept). */
int bq_rendered_build(const struct bq_fixture *f);

/* Rows offset..end (end > offset) of day d as a page's rows, without the
 * brackets, into *p, *n: true, or false when d is not rendered or end is
 * past its rows. The text lives as long as the process. */
bool bq_rendered_span(int d, long offset, long end, const char **p, size_t *n);

#endif
