/*
 * file.h — a whole small file into memory.
 */
#ifndef GPUGATE_FILE_H
#define GPUGATE_FILE_H

#include <stddef.h>

/*
 * Read a whole (small) file into a new NUL-terminated buffer of at most
 * max bytes. Returns NULL and sets errno on failure or when too large.
 */
char *file_read(const char *path, size_t max, size_t *len);

#endif
