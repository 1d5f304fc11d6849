/* ctorch/memory.h — allocator statistics per device (like torch.cuda.memory_allocated)
 * and the cpu block cache (like torch.cuda.empty_cache). */
#ifndef CTORCH_MEMORY_H
#define CTORCH_MEMORY_H

#include "base.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

int64_t ct_memory_allocated(ct_device d);     /* bytes of tensor storage in use now */
#define ct_memory_allocated(...) CT_AT(ct_memory_allocated(__VA_ARGS__))
int64_t ct_max_memory_allocated(ct_device d); /* peak since start or the last reset */
#define ct_max_memory_allocated(...) CT_AT(ct_max_memory_allocated(__VA_ARGS__))
void ct_reset_peak_memory_stats(ct_device d); /* the peak becomes the current count */
#define ct_reset_peak_memory_stats(...) CT_AT(ct_reset_peak_memory_stats(__VA_ARGS__))

/* Freed cpu storages of 128 KiB or more are cached and reused for the next tensor of
 * (about) the same size, so a training loop does not page-fault its buffers in again
 * every step.  The cache holds at most 256 MiB unless told otherwise. */
int64_t ct_memory_reserved(ct_device d);           /* in use plus held by the cache */
#define ct_memory_reserved(...) CT_AT(ct_memory_reserved(__VA_ARGS__))
void ct_empty_cache(ct_device d);                    /* frees every cached block */
#define ct_empty_cache(...) CT_AT(ct_empty_cache(__VA_ARGS__))
void ct_set_cache_limit(ct_device d, int64_t bytes); /* 0 turns the cache off */
#define ct_set_cache_limit(...) CT_AT(ct_set_cache_limit(__VA_ARGS__))

/* Failure injection, for testing that every allocation failure is reported as an error
 * (the call returns NULL or -1 with "out of memory" in ct_last_error()) and leaks
 * nothing.  After ct_test_fail_alloc_after(n), n of ctorch's allocations succeed and
 * the next one fails, once; n = LLONG_MAX only counts them; n < 0 disarms.  Every
 * allocation ctorch makes counts (tensor storage, objects, graph nodes, strings, ...),
 * on any thread; those of the libraries it uses do not.  The environment variable
 * CT_FAIL_ALLOC_AFTER=n arms the switch at the process's first allocation. */
void ct_test_fail_alloc_after(long long n);
#define ct_test_fail_alloc_after(n) CT_AT(ct_test_fail_alloc_after(n))
/* Allocations counted since the switch was armed (the failed one included). */
long long ct_test_alloc_count(void);
#define ct_test_alloc_count(...) CT_AT(ct_test_alloc_count(__VA_ARGS__))
/* Whether the allocation chosen to fail has failed since the switch was armed. */
bool ct_test_alloc_failed(void);
#define ct_test_alloc_failed(...) CT_AT(ct_test_alloc_failed(__VA_ARGS__))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
