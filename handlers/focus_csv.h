/*
 * focus_csv.h — rollups as FOCUS 1.2 rows (the FinOps Open Cost and Usage
 * Specification), written as RFC 4180 CSV: pure functions, tested as
 * tables.
 *
 * Each rollup gives a charge row (ChargeCategory from its cost_type:
 * regular → Usage, tax → Tax, adjustment and rounding_error → Adjustment)
 * and, when its credits are not zero, a row of its own for them
 * (ChargeCategory Credit, BilledCost the credits). The BilledCost of a
 * rollup's rows therefore sum to its net cost, exactly: amounts are
 * copied as the exact decimal text PostgreSQL gave.
 */
#ifndef GPUGATE_FOCUS_CSV_H
#define GPUGATE_FOCUS_CSV_H

#include <stdbool.h>
#include <stddef.h>

#include "db/focus.h"
#include "handlers/csv.h"

/* The header row: the 21 mandatory FOCUS 1.2 columns, then ResourceId,
 * Tags, x_Team, x_Flavor; CRLF-terminated. */
void focus_csv_header(struct csv_buf *b);

/* ChargeCategory of a cost_type; NULL for one that is not known. */
const char *focus_charge_category(const char *cost_type);

/* FOCUS ServiceCategory of a Google Cloud service's name ("Compute
 * Engine" → "Compute"); "Other" when none fits. */
const char *focus_service_category(const char *service);

/* The day after day (YYYY-MM-DD) into out; 0 or -1 when malformed. */
int focus_next_day(const char *day, char out[11]);

/* The rows of one rollup (one, or two with a Credit row), CRLF-terminated.
 * 0, or -1 on a malformed month or day. */
int focus_csv_rows(struct csv_buf *b, const struct db_focus_row *r);

/* Whether an Accept-Encoding value asks for gzip (gzip or x-gzip with a
 * q above 0, or * when gzip is not refused). */
bool focus_wants_gzip(const char *accept_encoding);

#endif
