/* Writing a file so that readers see the old or the new contents, never a mix: data
 * goes to a temporary file in the same directory, which is flushed to disk and
 * renamed over the target (then the directory is flushed too).  The temporary is named
 * <target>.tmp-<pid>-<n>; opening a file removes the temporaries in its directory whose
 * writer process is gone (killed mid-write), so they do not pile up. */
#ifndef CT_IO_ATOMIC_FILE_H
#define CT_IO_ATOMIC_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct {
    FILE *f;
    char tmp[4096];
    char path[4096];
    const char *op;
} ct_atomic_file;

/* 0, or -1 with an error naming op and path. */
int ct_atomic_open(ct_atomic_file *af, const char *path, const char *op);
bool ct_atomic_write(ct_atomic_file *af, const void *data, size_t n);
/* ok: flush, fsync, rename into place; !ok: remove the temporary file.  0 or -1. */
int ct_atomic_commit(ct_atomic_file *af, bool ok);

#endif
