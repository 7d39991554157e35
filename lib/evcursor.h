/*
 * evcursor.h — the event stream's cursor and its Server-Sent Events
 * frames. A cursor is a position in the stream's (xid, id) order
 * (migration 0041); its text, the SSE `id:`, is "<xid>.<id>" in decimal,
 * which clients treat as opaque and send back as Last-Event-ID. Pure
 * functions.
 */
#ifndef GPUGATE_EVCURSOR_H
#define GPUGATE_EVCURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evcursor {
  uint64_t xid;
  int64_t id;
};

/* Room for a cursor's text with its NUL. */
#define EVCURSOR_TEXT 48

/* <0, 0, >0 as a is before, at, after b. */
int evcursor_cmp(const struct evcursor *a, const struct evcursor *b);

/* The text of c into out (EVCURSOR_TEXT bytes). */
void evcursor_format(const struct evcursor *c, char *out, size_t outlen);

/* Parse text ("<xid>.<id>", both decimal, no sign, no spaces) into c;
 * false when it is anything else. */
bool evcursor_parse(const char *text, struct evcursor *c);

/*
 * One SSE event: "id: <cursor>\nevent: <event>\ndata: <data>\n\n" into a
 * new malloc()ed string (returned; NULL when out of memory or when data
 * holds a line break, which one data line cannot carry), its length in
 * *len. The caller frees it.
 */
char *evcursor_frame(const struct evcursor *c, const char *event,
                     const char *data, size_t *len);

#endif
