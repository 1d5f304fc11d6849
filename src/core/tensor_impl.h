/* The tensor and storage structs, private to the library. */
#ifndef CT_CORE_TENSOR_IMPL_H
#define CT_CORE_TENSOR_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "ctorch/tensor.h"
#include "core/autograd_meta.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/object.h"

typedef struct ct_storage {
    ct_object obj;
    void *data;
    size_t nbytes;
    ct_device device;
    /* Note [Version counter]: shared by every view of the storage; in-place ops bump
     * it, and saved tensors compare it in backward to detect modification. */
    atomic_uint version;
    bool external;                          /* memory from ct_from_blob: not ours */
    bool inline_data;                       /* data follows this header in one block */
    void (*free_fn)(void *data, void *ctx); /* runs for external memory, if set */
    void *free_ctx;
    struct ct_alloc_record *record; /* where it was made, while recording (core/memory_history.h) */
} ct_storage;

struct ct_tensor {
    ct_object obj;
    ct_storage *storage;
    int64_t offset; /* in elements */
    int64_t numel;
    int ndim;
    ct_dtype dtype;
    bool wrapped_number; /* a C number made a 0-d tensor: promotes like a scalar */
    /* Autograd's fields (core/autograd_meta.h): core only zeroes them and releases
     * their references. */
    bool requires_grad; /* leaves only; a non-leaf requires grad iff grad_fn != NULL */
    uint8_t view_kind;  /* CT_VIEW_* (autograd/node.h): made by a view op; 0: not a view of
                         * autograd's, see Note [In-place on views] */
    int output_nr;      /* which output of grad_fn this is */
    unsigned view_version; /* storage version when this view's grad_fn was made */
    int64_t sizes[CT_MAX_DIMS];
    int64_t strides[CT_MAX_DIMS]; /* in elements */
    ct_tensor *grad;
    ct_node *grad_fn;   /* owned reference; NULL for leaves */
    ct_node *grad_acc;  /* weak: a leaf's AccumulateGrad node while one exists */
    ct_tensor *base;    /* owned: the tensor this view was made from (views of views: root) */
    ct_autograd_meta *autograd_meta; /* hooks, retain_grad (autograd/hooks.h); NULL: none */
};

/* On the meta device: the tensor has no data, so nothing may read or write it on the
 * host (ops skip their data-dependent checks, or refuse data-dependent shapes). */
/* The same device (type and index): ct_device_eq without the call-site record, for
 * hot paths. */
static inline bool ct_same_device(ct_device a, ct_device b) {
    return a.type == b.type && a.index == b.index;
}
static inline bool ct_tensor_is_meta(const ct_tensor *t) {
    return t->storage->device.type == CT_DEV_META;
}
static inline char *ct_tensor_data(const ct_tensor *t) {
    return (char *)t->storage->data + t->offset * (int64_t)ct_dtype_sizes[t->dtype];
}

/* A new tensor (refcount 1, not registered with any scope) with fresh contiguous
 * storage on `device`; NULL with an error naming `op` ("ct_zeros") when the shape is
 * invalid (ct_check_shape), its byte count overflows, the device has no backend or
 * the allocation fails ("out of memory: tried to allocate N bytes"). */
ct_tensor *ct_tensor_new(const char *op, ct_shape shape, ct_dtype dtype, ct_device device);
/* ct_tensor_new with the shape as ndim sizes (no ct_shape to fill and copy). */
ct_tensor *ct_tensor_new_dims(const char *op, int ndim, const int64_t *sizes, ct_dtype dtype,
                              ct_device device);
/* False with an error naming `op` unless the shape can be a tensor's: at most
 * CT_MAX_DIMS dims, none negative, and the product of its nonzero sizes fits in
 * int64 (so numel, every partial product and contiguous strides do).  Every tensor
 * made from a user's shape passes it: new storage (ct_tensor_new) and views whose
 * sizes the user gives (view, reshape, expand, as_strided, unflatten). */
bool ct_check_shape(const char *op, int ndim, const int64_t *sizes);
/* Whether this build has a backend (an allocator) for the device. */
bool ct_device_available(ct_device device);
/* False with "<op>: no backend for device D in this build of ctorch" when it has none. */
bool ct_check_device(const char *op, ct_device device);
/* A new tensor viewing `src`'s storage with the given geometry (not registered). */
ct_tensor *ct_tensor_view_of(ct_tensor *src, int ndim, const int64_t *sizes,
                             const int64_t *strides, int64_t offset);
/* ct_from_blob without the scope registration. */
ct_tensor *ct_blob_new(void *data, ct_dtype dtype, ct_shape shape, const int64_t *strides,
                       void (*free_fn)(void *, void *), void *ctx);
/* Registers with the scope and returns t: the last step of every public op. */
static inline ct_tensor *ct_ret(ct_tensor *t) { return ct_scope_register(t); }

int64_t ct_shape_numel(int ndim, const int64_t *sizes);
bool ct_tensor_is_contiguous(const ct_tensor *t);
void ct_contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides);
/* Wraps a negative dim; sets an error naming `op` and returns -1 when out of range. */
int ct_wrap_dim(const char *op, int64_t dim, int ndim);
static inline void ct_bump_version(ct_tensor *t) {
    atomic_fetch_add_explicit(&t->storage->version, 1, memory_order_relaxed);
}
static inline unsigned ct_version_counter(const ct_tensor *t) {
    return atomic_load_explicit(&t->storage->version, memory_order_relaxed);
}

/* Copies src into dst elementwise (shapes equal or src broadcastable; dtypes and
 * devices may differ) with the devices' backend (core/backend.c).  Cannot fail once
 * checked. */
void ct_copy_into(ct_tensor *dst, const ct_tensor *src);
/* Sets every element of dst (any strides) to value, the bits of one element of dst's
 * dtype in host memory, with dst's backend (core/backend.c). */
void ct_fill_into(ct_tensor *dst, const void *value);

/* Makes t show src's data: storage, offset, dtype and geometry (module.to(), loading
 * a state dict): every holder of t sees the new values.  Bumps t's version. */
void ct_tensor_assign_data(ct_tensor *t, ct_tensor *src);

bool ct_check_same_device(const char *op, const ct_tensor *a, const ct_tensor *b);

#endif
