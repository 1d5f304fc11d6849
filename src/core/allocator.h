/* Per-device allocators with statistics.  Only the cpu one exists yet; a cuda
 * allocator registers itself in the same table. */
#ifndef CT_CORE_ALLOCATOR_H
#define CT_CORE_ALLOCATOR_H

#include <stddef.h>

#include "ctorch/base.h"

typedef struct {
    void *(*alloc)(size_t nbytes);
    void (*free)(void *p, size_t nbytes);
} ct_allocator;

/* NULL when the device has no backend compiled in. */
const ct_allocator *ct_allocator_for(ct_device d);
void ct_alloc_stats_add(ct_device d, int64_t delta);

#endif
