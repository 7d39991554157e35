/*
 * billing_lines.h — NDJSON line splitting for the billing ingest engine:
 * input arrives in chunks of any size, lines may straddle them; memory is
 * bounded by the longest line accepted. Pure (no I/O); one splitter is fed
 * by one thread.
 */
#ifndef GPUGATE_BILLING_LINES_H
#define GPUGATE_BILLING_LINES_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Called for each line, without its newline: line[0..len) borrowed for the
 * call, lineno counting from 1. A line longer than the splitter's max is
 * reported once, as soon as it is known to be too long, with too_long set
 * and line NULL; the rest of it is skipped. A nonzero return stops the
 * splitter, which returns it.
 */
typedef int (*billing_line_fn)(void *ctx, long lineno, const char *line,
                               size_t len, bool too_long);

struct billing_splitter {
  char *buf; /* owned: the current partial line */
  size_t len, cap, max;
  long lines;    /* lines completed */
  bool skipping; /* inside a too-long line */
};

void billing_splitter_init(struct billing_splitter *sp, size_t max);
void billing_splitter_free(struct billing_splitter *sp);

/* Split data[0..n); returns 0, fn's nonzero return, or -1 when out of
 * memory. */
int billing_splitter_feed(struct billing_splitter *sp, const char *data,
                          size_t n, billing_line_fn fn, void *ctx);

/* End of input: a last line without a newline is passed to fn. */
int billing_splitter_finish(struct billing_splitter *sp, billing_line_fn fn,
                            void *ctx);

#endif
