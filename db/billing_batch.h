/*
 * billing_batch.h — the inside of a batch of billing rows (db/billing.h),
 * shared by its two halves: db/billing.c builds a batch (each row's binary
 * COPY tuple, its hash, amounts and rollup key), db/billing_flush.c stores
 * it. Not for other callers.
 */
#ifndef GPUGATE_DB_BILLING_BATCH_H
#define GPUGATE_DB_BILLING_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "db/billing_row.h"
#include "db/billing_numeric.h"
#include "db/months.h"
#include "lib/err.h"
#include "lib/sha256_lanes.h"

struct db_conn;

#define NUMERIC_MAX 2048 /* binary numeric of any amount we write */
#define N_KEY_FIELDS 11  /* the rollup key as the batch has it */
/* the fields of a row's COPY tuple (db/billing_copy.c's sql_copy) */
#define COPY_FIELDS 16

struct brow {
  unsigned char hash[DB_BILLING_HASH_LEN];
  size_t hash_at;          /* where the hash is in tuples */
  size_t tuple, tuple_len; /* its COPY tuple in tuples; without the field
                              count and gpu_hours when divisor is 3600 */
  size_t amounts;          /* "cost\0credits\0gpu_amount\0pricing_quantity\0" in
                              text */
  int key;                 /* its rollup key, 0-based */
  int divisor;
  bool fresh;  /* a flush: not stored yet */
  int gpu_row; /* a flush: its GPU-hours in the statement's result, or -1;
                  summed in C, their offset in gpu */
};

/* A flush summing in C: a key's sums over its new rows. */
struct bsum {
  struct bnum cost, credits, gpu_hours, pricing_quantity;
  long rows;
};

struct buf {
  char *p;
  size_t len, cap;
};

struct db_billing_batch {
  struct brow *rows;
  size_t n, cap;
  struct buf tuples; /* the rows' binary COPY tuples */
  struct buf text;   /* the rows' amounts */
  struct buf keys;  /* distinct rollup keys: N_KEY_FIELDS × (u32 len, bytes) */
  size_t *key_off;  /* where each key starts in keys */
  size_t *key_size; /* and its length */
  int n_keys, cap_keys;
  int *slots; /* open addressing over the keys: index + 1, 0 when free */
  size_t n_slots;
  struct buf params; /* the arrays of a flush */
  int *uniq;         /* a flush: the rows, each hash once, in batch order */
  int *seen;         /* a flush: open addressing over hashes, index + 1 */
  size_t cap_uniq, cap_seen;
  int64_t latest_us;            /* the latest usage_start in the batch */
  char (*closed)[DB_MONTH_LEN]; /* a flush: the closed months */
  size_t n_closed, cap_closed;
  struct buf gpu;    /* a flush summing in C: GPU-hours of rows, text */
  struct bsum *sums; /* and the sums of each key */
  int cap_sums;
  int32_t *key_day; /* a flush: each key's usage day (db_date_binary) */
  int cap_key_day;
  struct buf out; /* a flush: COPY data staged for sending */
  /* rows added by their canonical text, hashed SHA256_LANES at a time
   * (lib/sha256_lanes.h): their texts, and their rows in rows */
  struct buf canon;
  size_t canon_off[SHA256_LANES], canon_len[SHA256_LANES];
  size_t canon_row[SHA256_LANES];
  int n_canon;
};

/* Hash the rows still waiting for their hash (db_billing_batch_add_canonical)
 * into their tuples: 0, or -1 (out of memory). */
int bb_hash_pending(struct db_billing_batch *b);

/* Big-endian integers. */
void bb_put_be16(unsigned char *p, unsigned v);
void bb_put_be32(unsigned char *p, uint32_t v);
void bb_put_be64(unsigned char *p, uint64_t v);

/* Room for need more bytes in b; 0, or -1 when out of memory. */
int bb_reserve(struct buf *b, size_t need);

/* Append a COPY/array field: its length (4 bytes) and bytes; a binary
 * numeric of decimal text; text. 0, or -1 (out of memory, a bad number). */
int bb_add_field(struct buf *b, const void *data, size_t n);
int bb_add_numeric(struct buf *b, const char *text);
int bb_add_text(struct buf *b, const char *s);

/* Empty b, keeping its memory. */
void bb_batch_reset(struct db_billing_batch *b);

/* Log a failed statement (what), with its SQLSTATE and message. */
void bb_log_failure(const char *what, PGconn *pg, const PGresult *res);

/* COPY the fresh rows among the n of b->uniq into billing_rows (see
 * db/billing_copy.c); merged: the flush statement's result, whose third
 * column has the GPU-hours PostgreSQL computed, or NULL when the batch was
 * summed in C. */
enum gg_code bb_copy_rows(struct db_conn *c, struct db_billing_batch *b,
                          size_t n, PGresult *merged);

#endif
