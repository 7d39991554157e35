/*
 * file.c — a whole small file into memory (secrets, keys, key files).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/file.h"

char *file_read(const char *path, size_t max, size_t *len)
{
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t n = 0, cap = 4096;
  size_t got;

  if (!f)
    return NULL;
  buf = malloc(cap + 1);
  if (!buf)
    goto fail;
  while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n > max) {
      errno = EFBIG;
      goto fail;
    }
    if (n == cap) {
      char *bigger = realloc(buf, cap * 2 + 1);
      if (!bigger)
        goto fail;
      buf = bigger;
      cap *= 2;
    }
  }
  if (ferror(f)) {
    errno = EIO;
    goto fail;
  }
  fclose(f);
  buf[n] = '\0';
  if (len)
    *len = n;
  return buf;
fail:
  free(buf);
  fclose(f);
  return NULL;
}
