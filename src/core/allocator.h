/* Allocation statistics per device (ctorch/memory.h); the memory itself comes from
 * each device's backend (core/backend.h). */
#ifndef CT_CORE_ALLOCATOR_H
#define CT_CORE_ALLOCATOR_H

#include <stdint.h>

#include "ctorch/base.h"

/* A storage of `bytes` allocated on (given back to) the device: its bytes and
 * storages in use, their peaks and totals. */
void ct_alloc_stats_alloc(ct_device d, int64_t bytes);
void ct_alloc_stats_free(ct_device d, int64_t bytes);
/* Adds delta bytes to what the device's cache holds (for the reserved peak). */
void ct_alloc_stats_cached(ct_device d, int64_t delta);

#endif
