/*
 * fuzz_cursor.c — list cursors (lib/cursor.h). The input is split at
 * the first newline into a cursor and a position. cursor_open() must
 * refuse anything it did not seal (a hand-made cursor opening would be a
 * forgery of an AES-GCM tag: a finding); a position that fits is sealed
 * and must open again to itself for its own list only. A crash, a leak or
 * undefined behaviour is a finding too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cursor.h"
#include "tests/fuzz/fake_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const unsigned char key[CURSOR_KEY_LEN] =
    "fuzz-cursor-key-0123456789abcdef";
static const unsigned char iv[12] = "fuzz-iv-1234";

#define SCOPE "/v1/teams/team-a/jobs?state=PENDING&"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *cursor = NULL, *position = NULL;
  char out[CURSOR_MAX + 8], back[CURSOR_POSITION_MAX + 1];
  const uint8_t *rest;
  size_t rest_n;

  if (size > 4096)
    return 0;
  fuzz_split(data, size, '\n', &cursor, &rest, &rest_n);
  position = fuzz_strndup(rest, rest_n);
  if (!cursor || !position)
    goto out;
  /* nobody but the key holder makes a cursor that opens */
  if (cursor_open(key, SCOPE, cursor, back, sizeof(back)) == 0)
    abort();
  if (cursor_seal(key, SCOPE, position, iv, out, sizeof(out)) == 0) {
    if (strlen(out) > CURSOR_MAX ||
        cursor_open(key, SCOPE, out, back, sizeof(back)) != 0 ||
        strcmp(back, position) != 0 ||
        cursor_open(key, "/v1/teams/team-b/jobs?state=PENDING&", out, back,
                    sizeof(back)) == 0)
      abort();
  }
out:
  free(cursor);
  free(position);
  return 0;
}
