/*
 * billing_time.h — the dates and times of billing rows: usage timestamps
 * (BigQuery's export format or RFC 3339) normalised to UTC text PostgreSQL
 * reads, and invoice months. Pure functions, thread-safe.
 */
#ifndef GPUGATE_BILLING_TIME_H
#define GPUGATE_BILLING_TIME_H

/*
 * Parse a timestamp as BigQuery's JSON export ("2026-08-01 10:00:00 UTC",
 * with optional fraction) or RFC 3339 writes it ("2026-08-01T10:00:00Z",
 * "...+02:00"). A time zone is required. On success writes the instant in
 * UTC as "YYYY-MM-DD HH:MM:SS[.ffffff]+00" into ts (48 bytes; fractions
 * beyond microseconds are dropped) and its UTC day "YYYY-MM-DD" into day
 * (16 bytes), and returns 0; else -1.
 */
int billing_parse_timestamp(const char *s, char *ts, char *day);

/* An invoice month "YYYYMM" (or "YYYY-MM") as "YYYY-MM" into out; 0, or -1
 * when m is not a month of years 0001-9999. */
int billing_invoice_month(const char *m, char out[8]);

#endif
