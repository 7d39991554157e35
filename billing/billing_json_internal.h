/*
 * billing_json_internal.h — the fast reader's scratch and flat tree of
 * values, shared by the reader (billing_json.c, its strings in
 * billing_json_str.c) and the document view of what it read
 * (billing_doc.c). Not part of the reader's interface (billing_json.h);
 * nothing else includes it.
 */
#ifndef GPUGATE_BILLING_JSON_INTERNAL_H
#define GPUGATE_BILLING_JSON_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum fkind {
  FK_OBJ,
  FK_ARR,
  FK_STR,
  FK_INT,
  FK_REAL,
  FK_TRUE,
  FK_FALSE,
  FK_NULL
};

struct fnode {
  enum fkind kind;
  const char *key; /* members of an object: the decoded key */
  size_t keylen;
  const char *str; /* FK_STR: its text (see f_string); numbers: the text */
  size_t len;
  bool cooked; /* FK_STR: str is decoded and NUL-terminated, in strs */
  int child, last, next; /* first and last child, next sibling; -1: none */
};

struct fmember {
  const char *key;
  size_t keylen;
  uint64_t pfx;      /* the key's first 8 bytes, big-endian, zero-padded */
  size_t start, end; /* its "key":value in the key text; start == end:
                        none, its value has no meaning */
};

struct billing_scratch {
  struct fnode *nodes;
  size_t n_nodes, cap_nodes;
  struct fmember *mem; /* the members of the open objects */
  size_t n_mem, cap_mem;
  char *canon; /* the key text (billing_key.h) */
  size_t canon_len, canon_cap;
  char *tmp; /* an object's members while they are sorted */
  size_t tmp_cap;
  char *strs; /* decoded strings; sized for the row, so never moved */
  size_t strs_len, strs_cap;
};

/*
 * The string at *at (its opening quote; the line ends at stop), *at moved
 * past it. *out and *outlen are its text: in the line itself when it has
 * no escapes (*cooked false; not NUL-terminated; then it holds no byte the
 * key text escapes), else decoded into s->strs (*cooked true;
 * NUL-terminated). 0, or -1 when Jansson would refuse it (declined).
 */
int billing_json_string(struct billing_scratch *s, const char **at,
                        const char *stop, const char **out, size_t *outlen,
                        bool *cooked);

#endif
