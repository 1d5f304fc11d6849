/* The record of where live storages were allocated (ct_memory_record_history,
 * ctorch/memory.h): one record per storage made while recording, on a global list
 * until the storage is freed. */
#ifndef CT_CORE_MEMORY_HISTORY_H
#define CT_CORE_MEMORY_HISTORY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctorch/base.h"

typedef struct ct_alloc_record ct_alloc_record;

/* Whether new storages are recorded (read with one relaxed load per storage). */
extern atomic_bool ct_memory_history_on;

/* A record of a storage of nbytes that op is allocating on this thread, at the call
 * site the thread's last public call recorded; NULL when memory for it is short (the
 * storage is then simply not listed). */
ct_alloc_record *ct_memory_history_add(const char *op, int64_t nbytes, ct_device device);
/* The dtype and shape of the tensor the storage was made for. */
void ct_memory_history_describe(ct_alloc_record *r, ct_dtype dtype, int ndim, const int64_t *sizes);
/* The storage is gone: its record leaves the list. */
void ct_memory_history_remove(ct_alloc_record *r);

#endif
