/* The cpu backend: host memory from the block cache (cpu/block_cache.h), copies, fills
 * and elementwise loops over the iterator on its OpenMP threads (cpu/iter.h), the kernel
 * tables of src/cpu.  Work is done when a kernel returns, so
 * synchronising has nothing to wait for. */
#include "core/backend.h"
#include "cpu/backend.h"
#include "cpu/block_cache.h"
#include "cpu/iter.h"

static void *cpu_alloc(ct_device d, size_t nbytes) {
    (void)d;
    return ct_block_alloc(nbytes);
}
static void cpu_free(ct_device d, void *p, size_t nbytes) {
    (void)d;
    ct_block_free(p, nbytes);
}
static void cpu_synchronize(ct_device d) { (void)d; }
static void cpu_empty_cache(ct_device d) {
    (void)d;
    ct_block_cache_trim(0);
}
static int64_t cpu_cached_bytes(ct_device d) {
    (void)d;
    return (int64_t)ct_block_cache_held();
}
static void cpu_set_cache_limit(ct_device d, int64_t bytes) {
    (void)d;
    ct_block_cache_set_limit(bytes > 0 ? (size_t)bytes : 0);
}

static const ct_backend cpu_backend = {
    .name = "cpu",
    .type = CT_DEV_CPU,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = ct_cpu_copy,
    .fill = ct_cpu_fill,
    .run_loop = ct_cpu_run_loop,
    .synchronize = cpu_synchronize,
    .empty_cache = cpu_empty_cache,
    .cached_bytes = cpu_cached_bytes,
    .set_cache_limit = cpu_set_cache_limit,
    .kernel_tables = ct_cpu_kernel_tables,
};

void ct_cpu_backend_init(void) {
    if (!ct_backend_register(&cpu_backend)) ct_fatal("%s", ct_last_error());
}
