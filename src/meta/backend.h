/* The meta backend (meta/backend.c): shapes, dtypes and strides without memory. */
#ifndef CT_META_BACKEND_H
#define CT_META_BACKEND_H

/* Registers the meta backend (at start-up, from src/backends.c). */
void ct_meta_backend_init(void);

#endif
