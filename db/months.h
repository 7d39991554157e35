/*
 * months.h — invoice months as text ("YYYY-MM") and where a billing row is
 * reported once months can be closed: pure functions, shared by the loader
 * (db/billing.c), the month close (db/month_close.c) and the tests.
 */
#ifndef GPUGATE_DB_MONTHS_H
#define GPUGATE_DB_MONTHS_H

#include <stdbool.h>
#include <stddef.h>

#define DB_MONTH_LEN 8 /* "YYYY-MM" and its NUL */

/* Whether s is a month "YYYY-MM" (year 0001..9999, month 01..12). */
bool db_month_valid(const char *s);

/* The month after m (valid) into out; "9999-12" has none: -1. */
int db_month_next(const char *m, char out[DB_MONTH_LEN]);

/*
 * Where a row is reported, given the closed months (closed[0..n), valid
 * and in ascending order). Its own month is invoice_month ("YYYY-MM") or,
 * when that is "", the month of usage_day ("YYYY-MM-DD"). When neither its
 * own month nor its usage month is closed, the row is regular: *month is
 * its own month and *correction false. Otherwise it came late for a closed
 * month: it is a correction (*correction true) reported in the first month
 * that is not closed, from the later of the two on (a row invoiced in an
 * open month for usage in a closed one stays in its invoice month). Returns 0,
 * or -1 on malformed input (or no month left before 10000).
 */
int db_month_attribute(const char *usage_day, const char *invoice_month,
                       const char (*closed)[DB_MONTH_LEN], size_t n,
                       char month[DB_MONTH_LEN], bool *correction);

#endif
