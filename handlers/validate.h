/*
 * validate.h — request bodies checked against field tables.
 *
 * A body is described as data: one v_field per accepted key, in the order
 * the normalised object lists them. v_object() checks types, bounds and
 * enums, rejects unknown keys, applies defaults and returns a new object in
 * table order; every problem becomes a problem_field() entry naming the
 * field by its path, so one request reports all of its mistakes at once.
 */
#ifndef GPUGATE_VALIDATE_H
#define GPUGATE_VALIDATE_H

#include <jansson.h>
#include <stdbool.h>

#include "server/req.h"

enum v_type {
  V_STRING, /* max = longest length in bytes */
  V_NAME,   /* [a-z0-9-], 1..63, starts and ends alphanumeric */
  V_REGION, /* a GCP region like us-central1 */
  V_INT,    /* integer in [min, max] */
  V_NUMBER, /* number (int or real) in [min, max] */
  V_BOOL,
  V_ENUM,   /* string from choices */
  V_OBJECT, /* nested object described by fields */
  V_LIST,   /* array of item (a one-element field table), [min, max] */
  V_MAP,    /* object with fixed optional keys, each of type item */
  V_DICT    /* object with free keys accepted by key_ok, values of
               type item, [min, max] keys */
};

#define V_REQUIRED 1u
#define V_NULLABLE 2u

struct v_field {
  const char *key;
  enum v_type type;
  unsigned flags;
  double min, max;
  const char *const *choices;      /* V_ENUM: NULL-terminated */
  const char *dflt;                /* JSON text used when absent, or NULL */
  const struct v_field *fields;    /* V_OBJECT: NULL-key-terminated table;
                                      V_LIST / V_MAP: the item (one entry) */
  const char *const *keys;         /* V_MAP: allowed keys, NULL-terminated */
  bool (*key_ok)(const char *key); /* V_DICT: is this key acceptable? */
  const char *key_rule;            /* V_DICT: what a key must look like */
};

/*
 * Check in against fields. prefix names the object ("" at the top).
 * Returns a new normalised object, or NULL when any field was bad (the
 * problems are recorded on req). in is borrowed.
 */
json_t *v_object(struct gg_req *req, const char *prefix, json_t *in,
                 const struct v_field *fields);

/* True when s is a valid object name: [a-z0-9-]{1,63}, alnum at both ends. */
bool v_is_name(const char *s);

/* "PENDING,RUNNING": a comma-separated list in which every item is a
 * job state (the `state` filter of job lists). */
bool v_job_states(const char *s);

/*
 * Check a path parameter that names an object; records a field error and
 * returns false when bad.
 */
bool v_path_name(struct gg_req *req, const char *param);

/* Room for a cursor from v_cursor(), with its NUL. */
#define V_CURSOR_MAX 224

/*
 * Parse ?limit= and ?cursor= of a list. after receives the position to
 * continue after ("" for the first page): the name v_cursor() sealed.
 * Returns false (with the problem recorded, naming "cursor") on a bad
 * limit, or a cursor that this deployment did not issue for this very list
 * (path, team, filters) or that was altered (lib/cursor.h).
 */
bool v_page(struct gg_req *req, int *limit, char *after, size_t afterlen);

/*
 * Seal position (an object name, or a job sequence number as text) as the
 * opaque cursor of the list req pages, into out (V_CURSOR_MAX bytes).
 * False when it does not fit or no key is configured.
 */
bool v_cursor(struct gg_req *req, const char *position, char *out,
              size_t outlen);

#endif
