/*
 * embedded.c — lookup in the table of files compiled into the binary.
 */
#include <string.h>

#include "lib/embedded.h"

const struct embedded_file *embedded_find(const char *path)
{
  size_t i;

  for (i = 0; i < embedded_nfiles; i++)
    if (strcmp(embedded_files[i].path, path) == 0)
      return &embedded_files[i];
  return NULL;
}
