/* Backends: one per device type, owning that device's memory, copies and kernels.
 *
 *     static const ct_backend cpu = {.name = "cpu", .type = CT_DEV_CPU,
 *                                    .alloc = ..., .free = ..., .copy = ..., .fill = ...,
 *                                    .run_loop = ..., .synchronize = ...,
 *                                    .kernel_tables = ...};
 *     void ct_cpu_backend_init(void) { ct_backend_register(&cpu); }
 *     // the meta device: no memory, a no-op kernel per family in every cpu slot
 *     static const ct_backend meta = {.name = "meta", .type = CT_DEV_META,
 *                                     .no_memory = true, ..., .family_kernels = noops,
 *                                     .slots_of = CT_DEV_CPU};
 *
 *     const ct_backend *b = ct_backend_of("ct_zeros", dev);
 *     if (!b) return NULL; // "ct_zeros: no backend for device cuda:0 in this build of ctorch"
 *
 * Backends register themselves at start-up: the build's list of backends
 * (src/backends.c) runs each one's init once, when the library is loaded.  Code above
 * the backends reaches a device only through its ct_backend: memory (the statistics of
 * ctorch/memory.h are kept in core/allocator.c around it), copies, fills, synchronisation,
 * elementwise loops over the iterator's geometry that the op layer builds
 * (core/iter.h), and the kernel slots of ops/dispatch.h, filled from each backend's
 * kernel tables. */
#ifndef CT_CORE_BACKEND_H
#define CT_CORE_BACKEND_H

#include <stdatomic.h>
#include <stddef.h>

#include "core/tensor_impl.h"
#include "kernels/kernel.h"

typedef struct ct_iter ct_iter; /* core/iter.h */

typedef struct {
    const char *name;    /* "cpu" */
    ct_device_type type; /* the device type it serves */
    /* Its tensors hold no memory (the meta device): alloc returns a placeholder that
     * nothing reads, and the allocation statistics are not kept for it. */
    bool no_memory;
    /* Memory of the device, 64-byte aligned; NULL when out of memory.  free gets the
     * size alloc was given. */
    void *(*alloc)(ct_device d, size_t nbytes);
    void (*free)(ct_device d, void *p, size_t nbytes);
    /* dst = src elementwise, any strides and dtypes (shapes equal, or src broadcast to
     * dst's): both on this backend's device, or one of them on the host (cpu).  Cannot
     * fail once checked. */
    void (*copy)(ct_tensor *dst, const ct_tensor *src);
    /* Sets every element of dst (on this device, any strides) to value: the bits of one
     * element of dst's dtype, in host memory.  Cannot fail. */
    void (*fill)(ct_tensor *dst, const void *value);
    /* Runs an elementwise kernel over every element of the iterator (operands on this
     * device, cpu scalars as values: core/iter.h), chunk by chunk as the iterator
     * splits the range, so that results do not depend on how the chunks are run. */
    void (*run_loop)(const ct_iter *it, ct_loop_fn loop, const void *ctx);
    /* Waits until the device has finished all work queued on it. */
    void (*synchronize)(ct_device d);
    /* Its allocator's cache, or NULL when it keeps none: bytes held, free them all, the
     * most it may hold (ct_memory_reserved, ct_empty_cache, ct_set_cache_limit). */
    int64_t (*cached_bytes)(ct_device d);
    void (*empty_cache)(ct_device d);
    void (*set_cache_limit)(ct_device d, int64_t bytes);
    /* Its kernel tables (kernels/kernel.h), NULL-terminated. */
    const ct_kernel_entry *const *kernel_tables;
    /* Instead of tables: one kernel per family (family_kernels[CT_FAMILY_LOOP], ...),
     * taking every (op, dtype) slot that the backend of device type slots_of has, each
     * with its op's family's kernel (the meta backend takes the cpu's slots). */
    const ct_kernel_fn *family_kernels;
    ct_device_type slots_of;
} ct_backend;

/* Registers b as the backend of its device type (from the backend's init); false with
 * an error when b lacks a required member (kernel_tables or family_kernels with
 * slots_of among them) or its device type has a backend already. */
bool ct_backend_register(const ct_backend *b);
/* The backend of the device, or NULL with "<op>: no backend for device D in this
 * build of ctorch". */
const ct_backend *ct_backend_of(const char *op, ct_device d);
/* Waits for the device's queued work; false with ct_backend_of's error. */
bool ct_device_synchronize(const char *op, ct_device d);

/* Runs every built-in backend's init; defined by the build's list, src/backends.c. */
void ct_register_builtin_backends(void);

/* The backend of a device type, or NULL (no error).  Inline: every storage's
 * allocation and release asks. */
extern const ct_backend *ct_backends_[CT_NUM_DEVICE_TYPES];
extern atomic_bool ct_backends_ready_;
void ct_backends_init_(void);
static inline const ct_backend *ct_backend_for_type(ct_device_type t) {
    if (!atomic_load_explicit(&ct_backends_ready_, memory_order_acquire)) ct_backends_init_();
    return (unsigned)t < CT_NUM_DEVICE_TYPES ? ct_backends_[t] : NULL;
}

#endif
