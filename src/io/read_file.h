/* A whole file read into memory, for the loaders that parse a file from a buffer. */
#ifndef CT_IO_READ_FILE_H
#define CT_IO_READ_FILE_H

#include <stddef.h>

/* The bytes of path (one spare byte after them) into a block the caller frees, their
 * count into *size; NULL with "op: cannot open PATH: REASON" or "op: cannot read PATH". */
unsigned char *ct_read_file(const char *op, const char *path, size_t *size);

#endif
