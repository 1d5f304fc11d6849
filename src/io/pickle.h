/* A restricted unpickler: Python's pickle virtual machine without its ability to call
 * arbitrary code.  GLOBAL, REDUCE, BUILD and BINPERSID are handed to hooks (the .pt
 * loader's, io/pt_load.c), which resolve only the names they know; every other opcode
 * builds plain values (ctorch/pt.h). */
#ifndef CT_IO_PICKLE_H
#define CT_IO_PICKLE_H

#include <stddef.h>

#include "io/pt_value.h"

/* The deepest nesting of containers a pickle may build. */
#define PK_MAX_DEPTH 100

/* Each hook returns a new value owning one reference (or false / NULL with an error
 * set through pk_error).  Arguments are borrowed. */
typedef struct pk_hooks {
    void *ctx;
    /* GLOBAL module.name: a PT_GLOBAL value */
    ct_pt_value *(*find_global)(void *ctx, const char *module, const char *name);
    /* REDUCE: callable(*args); callable is a PT_GLOBAL, args a tuple */
    ct_pt_value *(*reduce)(void *ctx, const ct_pt_value *callable, const ct_pt_value *args);
    /* BINPERSID: the object a persistent id names */
    ct_pt_value *(*persistent_load)(void *ctx, const ct_pt_value *pid);
    /* BUILD: obj.__setstate__(state); true when allowed (the state is then dropped) */
    bool (*build)(void *ctx, const ct_pt_value *obj, const ct_pt_value *state);
} pk_hooks;

/* Runs the pickle in data[0..n) up to its STOP: the object (one reference), with
 * *used the bytes read; or NULL with an error "<where>: <what> (at byte N)". */
ct_pt_value *pk_load(const unsigned char *data, size_t n, size_t *used, const pk_hooks *h, const char *where);

/* Sets the error of a hook: "<where>: <message>" (where as given to pk_load). */
void pk_error(const char *where, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
