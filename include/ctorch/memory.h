/* ctorch/memory.h — allocator statistics per device (like torch.cuda.memory_allocated). */
#ifndef CTORCH_MEMORY_H
#define CTORCH_MEMORY_H

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

int64_t ct_memory_allocated(ct_device d);     /* bytes of tensor storage in use now */
int64_t ct_max_memory_allocated(ct_device d); /* peak since start or the last reset */
void ct_reset_peak_memory_stats(ct_device d);

#ifdef __cplusplus
}
#endif
#endif
