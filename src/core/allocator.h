/* Allocation statistics per device (ctorch/memory.h); the memory itself comes from
 * each device's backend (core/backend.h). */
#ifndef CT_CORE_ALLOCATOR_H
#define CT_CORE_ALLOCATOR_H

#include <stdint.h>

#include "ctorch/base.h"

/* Adds delta bytes to the device's bytes in use (and its peak). */
void ct_alloc_stats_add(ct_device d, int64_t delta);

#endif
