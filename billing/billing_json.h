/*
 * billing_json.h — the fast JSON reader of billing export rows: one pass
 * over a line, no allocation per row, the row's key text (billing_key.h)
 * written as it goes, and a flat tree of the values seen as a struct
 * billing_doc for the field checks.
 *
 * It declines (returns -1) whatever it does not read exactly as Jansson
 * does; the caller then lets Jansson decide (billing_row.c).
 */
#ifndef GPUGATE_BILLING_JSON_H
#define GPUGATE_BILLING_JSON_H

#include <stddef.h>

#include "billing/billing_fields.h"

/*
 * Memory the reader reuses from row to row. A row read with it borrows
 * from it until the next parse with it. One scratch is used by one thread
 * at a time.
 */
struct billing_scratch;
struct billing_scratch *billing_scratch_new(void);    /* NULL: no memory */
void billing_scratch_free(struct billing_scratch *s); /* accepts NULL */

/* Read line[0..len) (which must stay unchanged while the row is used) as
 * one JSON object into s: 0, or -1 when declined. */
int billing_json_parse(struct billing_scratch *s, const char *line, size_t len);

/* The object just read, as a document borrowing from s. */
void billing_json_doc(struct billing_scratch *s, struct billing_doc *out);

/* Its key text (billing_key.h; borrowed from s, not NUL-terminated): what
 * billing_key_text writes of the same row. */
const char *billing_json_canonical(const struct billing_scratch *s,
                                   size_t *len);

#endif
