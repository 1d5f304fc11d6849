/* io/read_file.h */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "io/read_file.h"

unsigned char *ct_read_file(const char *op, const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        ct_error("%s: cannot open %s: %s", op, path, strerror(errno));
        return NULL;
    }
    unsigned char *data = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (data = ct_malloc((size_t)n + 1)) &&
        fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    fclose(f);
    if (!data) {
        ct_error("%s: cannot read %s", op, path);
        return NULL;
    }
    *size = (size_t)n;
    return data;
}
