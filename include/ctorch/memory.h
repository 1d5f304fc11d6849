/* ctorch/memory.h — allocator statistics per device (like torch.cuda.memory_allocated
 * and memory_summary), the cpu block cache (like torch.cuda.empty_cache), and a
 * snapshot of the live tensors' storage with the op and call site that made each
 * (like torch.cuda.memory._record_memory_history and _snapshot), for finding what a
 * training loop keeps:
 *
 *     ct_memory_record_history(true);
 *     ct_tensor *kept[3];
 *     for (int i = 0; i < 3; i++) kept[i] = ct_keep(ct_mul(t, t)); // a leak: kept every step
 *     char *s = ct_memory_snapshot_to_string(CT_CPU, 10);
 *     fputs(s, stdout); // "... 3  float32  [2, 3]  ct_mul  app.c:3": one row per origin
 *     free(s);
 *     ct_memory_record_history(false);
 */
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
void ct_reset_peak_memory_stats(ct_device d); /* the peaks become the current values */
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

/* One statistic of ct_memory_stats (torch.cuda.memory_stats' current / peak /
 * allocated / freed): now, the most since start or ct_reset_peak_memory_stats, and
 * the totals ever allocated and freed. */
typedef struct {
    int64_t current;   /* now */
    int64_t peak;      /* the most since start or the last reset */
    int64_t allocated; /* the total ever allocated (0 where not counted) */
    int64_t freed;     /* the total ever freed (0 where not counted) */
} ct_memory_stat;

/* The allocator's state on one device. */
typedef struct {
    ct_memory_stat allocated_bytes; /* bytes of tensor storage */
    ct_memory_stat allocations;     /* storages (each tensor's; views share theirs); peak: 0 (not counted) */
    ct_memory_stat reserved_bytes;  /* in use plus held by the cache (current, peak) */
    int64_t largest_allocation;     /* the largest storage since start or the last reset */
} ct_allocator_stats;

/* The device's statistics now (all zero for a device ctorch has not used). */
ct_allocator_stats ct_memory_stats(ct_device d);
#define ct_memory_stats(d) CT_AT(ct_memory_stats(d))

/* torch.cuda.memory_summary's table of ct_memory_stats: rows Allocated memory,
 * Reserved memory, Allocations and Largest block; columns Cur Usage, Peak Usage, Tot
 * Alloc and Tot Freed ("-" where the row has none), in B / KB / MB / GB as PyTorch
 * picks them.  malloc'd (free it);
 * NULL with an error when memory is short. */
char *ct_memory_summary(ct_device d);
#define ct_memory_summary(d) CT_AT(ct_memory_summary(d))

/* Starts (true) or stops (false) recording where storage is allocated: while on,
 * every new storage, on any thread, is listed with the op that made it (its public
 * function: "ct_addmm"; marked backward when autograd made it), the call site of the
 * last public call its thread made (file:line of the user's code; the thread's own for
 * DataLoader workers), its size, and its tensor's dtype and shape, until it is freed.
 * Stopping keeps the records of storages still alive.  Off by default; with it off a
 * new storage costs one relaxed load. */
void ct_memory_record_history(bool enabled);
#define ct_memory_record_history(enabled) CT_AT(ct_memory_record_history(enabled))

/* One live storage recorded by ct_memory_record_history. */
typedef struct {
    int64_t bytes;               /* the storage's size */
    ct_device device;            /* where it lives */
    ct_dtype dtype;              /* of the tensor it was made for */
    int ndim;                    /* that tensor's dims */
    int64_t sizes[CT_MAX_DIMS];  /* and sizes */
    char op[40];                 /* the public function that allocated it ("ct_mul") */
    bool backward;               /* allocated while autograd ran a backward formula */
    const char *file;            /* the call site (NULL when none was recorded) */
    int line;                    /* its line */
    int64_t seq;                 /* allocation order: larger is newer */
} ct_memory_block;

/* The live recorded storages of device d, largest first (ties: oldest first): up to
 * max of them into blocks.  Returns how many there are (so ct_memory_snapshot(d, NULL,
 * 0) counts them), or -1 with an error (blocks NULL with max > 0, max < 0). */
int64_t ct_memory_snapshot(ct_device d, ct_memory_block *blocks, int64_t max);
#define ct_memory_snapshot(d, blocks, max) CT_AT(ct_memory_snapshot(d, blocks, max))
/* The snapshot as a table, one row per origin (op, call site, dtype, shape and size),
 * the rows with the most bytes first, at most limit rows (0: all): columns Total,
 * Blocks, Dtype, Shape, Op, Call site.  A tensor kept across iterations shows as a row
 * whose Blocks grows with the iterations.  malloc'd (free it); NULL with an error. */
char *ct_memory_snapshot_to_string(ct_device d, int limit);
#define ct_memory_snapshot_to_string(d, limit) CT_AT(ct_memory_snapshot_to_string(d, limit))

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
