/*
 * rfc3339.h — RFC 3339 date-times to and from seconds since the epoch.
 *
 * Used where the API takes instants as text (a flavor's capacity window)
 * and the code compares them as numbers. Pure: no clock, no locale, no
 * time zone database.
 */
#ifndef GPUGATE_RFC3339_H
#define GPUGATE_RFC3339_H

#include <stdint.h>

#define RFC3339_LEN 21 /* "YYYY-MM-DDTHH:MM:SSZ" and its NUL */

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil); also the calendar of the billing
 * ingest (db/billing.c, db/months.c, billing/billing_time.c). */
int64_t rfc3339_days_from_civil(int64_t y, int64_t m, int64_t d);

/* Its inverse: the date of day z since 1970-01-01 (civil_from_days). */
void rfc3339_civil_from_days(int64_t z, int64_t *y, int64_t *m, int64_t *d);

/*
 * Parse "YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)" ('t' and 'z' accepted, a
 * zone required, years 1970–9999) into seconds since 1970-01-01 UTC. A
 * fraction is rounded: down with round_up false, up with it true (so a
 * window's start never moves earlier nor its end later). Returns 0, or -1
 * when s is not such a date-time (or names an impossible one, like
 * February 30th).
 */
int rfc3339_parse(const char *s, int round_up, int64_t *out);

/* The same to the microsecond (a longer fraction truncated): µs since
 * 1970-01-01 UTC into *out_us. Returns 0 or -1 as rfc3339_parse(). */
int rfc3339_parse_us(const char *s, int64_t *out_us);

/* Write t as "YYYY-MM-DDTHH:MM:SSZ" into out (RFC3339_LEN bytes). t must
 * be within years 1970–9999. */
void rfc3339_format(int64_t t, char out[RFC3339_LEN]);

/* Scanning a date-time's text (also billing/billing_time.c's): exactly n
 * decimal digits at *p, consumed, as a number, or -1 (nothing consumed)
 * when they are not all digits; whether *p starts with c, consumed. */
int64_t rfc3339_digits(const char **p, int n);
int rfc3339_take(const char **p, char c);

#endif
