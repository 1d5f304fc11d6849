/* Tensor and storage lifetime, geometry and metadata. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/allocator.h"
#include "core/backend.h"
#include "core/lifetime.h"
#include "core/memory_history.h"
#include "core/pool.h"
#include "core/tensor_impl.h"
#include "core/mem.h"

/* On the cpu a small storage's header and data share one malloc (its alignment is
 * plenty for them); larger data comes from the device's backend, 64-byte aligned
 * for vector loads (on the cpu: cached, cpu/block_cache.h). */
#define SMALL_HEADER ((sizeof(ct_storage) + 15) & ~(size_t)15)
#define SMALL_BYTES 256
/* Storages of up to POOL_BYTES (scalars, losses, small vectors) come from the
 * per-thread cache of core/pool.h: one block size for all of them. */
#define POOL_BYTES 64
#define POOL_BLOCK (SMALL_HEADER + POOL_BYTES)

static bool storage_pooled(const ct_storage *s) {
    return s->inline_data && s->device.type == CT_DEV_CPU && s->nbytes <= POOL_BYTES;
}

static void storage_destroy(ct_object *o) {
    ct_storage *s = (ct_storage *)o;
    if (__builtin_expect(s->record != NULL, 0)) ct_memory_history_remove(s->record);
    if (s->external) {
        if (s->free_fn) s->free_fn(s->data, s->free_ctx);
        ct_lifetime_free(s);
    } else if (s->inline_data) {
        ct_alloc_stats_free(s->device, (int64_t)s->nbytes);
        /* held in the quarantine in the debug mode: a stale data pointer's read is
         * then an ASan report (core/lifetime.h) */
        if (__builtin_expect(ct_lifetime_debug, 0)) ct_lifetime_poison(s->data, s->nbytes);
        if (storage_pooled(s))
            ct_pool_free(CT_POOL_STORAGE, s);
        else
            ct_lifetime_free(s);
    } else {
        const ct_backend *b = ct_backend_for_type(s->device.type);
        if (!b->no_memory) ct_alloc_stats_free(s->device, (int64_t)s->nbytes);
        b->free(s->device, s->data, s->nbytes);
        ct_lifetime_free(s);
    }
}

bool ct_device_available(ct_device device) { return ct_backend_for_type(device.type) != NULL; }

bool ct_check_device(const char *op, ct_device device) {
    return ct_backend_for_type(device.type) || ct_backend_of(op, device);
}

static ct_storage *storage_new(const char *op, size_t nbytes, ct_device device) {
    const ct_backend *b = ct_backend_for_type(device.type);
    if (!b) {
        ct_backend_of(op, device); /* sets the error */
        return NULL;
    }
    ct_storage *s;
    bool small = device.type == CT_DEV_CPU && nbytes <= SMALL_BYTES;
    if (small && nbytes <= POOL_BYTES) {
        s = ct_pool_alloc(CT_POOL_STORAGE, POOL_BLOCK);
        if (s) s->data = (char *)s + SMALL_HEADER;
    } else if (small) {
        s = ct_malloc(SMALL_HEADER + nbytes);
        if (s) s->data = (char *)s + SMALL_HEADER;
    } else {
        s = ct_malloc(sizeof *s);
        if (s && !(s->data = b->alloc(device, nbytes ? nbytes : 1))) {
            free(s);
            s = NULL;
        }
    }
    if (!s) {
        ct_error("%s: out of memory: tried to allocate %zu bytes", op, nbytes);
        return NULL;
    }
    ct_object_init(&s->obj, storage_destroy);
    s->nbytes = nbytes;
    s->device = device;
    atomic_init(&s->version, 0);
    s->inline_data = small;
    s->external = false;
    s->free_fn = NULL;
    s->free_ctx = NULL;
    s->record = NULL;
    if (!b->no_memory) {
        ct_alloc_stats_alloc(device, (int64_t)nbytes);
        if (__builtin_expect(atomic_load_explicit(&ct_memory_history_on, memory_order_relaxed), 0))
            s->record = ct_memory_history_add(op, (int64_t)nbytes, device);
    }
    return s;
}

static void tensor_destroy(ct_object *o) {
    ct_tensor *t = (ct_tensor *)o;
    if (__builtin_expect(t->autograd_meta != NULL, 0)) ct_autograd_release_meta(t);
    ct_object_release(t->grad);
    ct_object_release(t->grad_fn);
    ct_object_release(t->base);
    ct_object_release(t->storage);
    ct_pool_free(CT_POOL_TENSOR, t);
}

int64_t ct_shape_numel(int ndim, const int64_t *sizes) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= sizes[i];
    return n;
}

void ct_contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides) {
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= sizes[i] > 1 ? sizes[i] : 1;
    }
}

/* A tensor (refcount 1, no storage yet) of geometry ndim/sizes/strides (NULL strides:
 * contiguous); every other field zero.  The struct is zeroed in parts, the dims arrays
 * past ndim by length: one memset of the whole struct compiles to a `rep stos`, whose
 * start-up alone costs a good part of a small op. */
#define DIMS_BYTES (sizeof(int64_t) * CT_MAX_DIMS)
_Static_assert(offsetof(ct_tensor, strides) == offsetof(ct_tensor, sizes) + DIMS_BYTES &&
                   offsetof(ct_tensor, grad) == offsetof(ct_tensor, strides) + DIMS_BYTES,
               "tensor_alloc zeroes the fields before sizes and from grad on");
static ct_tensor *tensor_alloc(int ndim, const int64_t *sizes, const int64_t *strides) {
    ct_tensor *t = ct_pool_alloc(CT_POOL_TENSOR, sizeof *t);
    if (!t) {
        ct_error("out of memory allocating a tensor");
        return NULL;
    }
    memset(t, 0, offsetof(ct_tensor, sizes));
    memset(&t->grad, 0, sizeof *t - offsetof(ct_tensor, grad));
    size_t used = sizeof(int64_t) * (size_t)ndim, unused = sizeof t->sizes - used;
    memcpy(t->sizes, sizes, used);
    memset(t->sizes + ndim, 0, unused);
    if (strides)
        memcpy(t->strides, strides, used);
    else
        ct_contiguous_strides(ndim, sizes, t->strides);
    memset(t->strides + ndim, 0, unused);
    t->ndim = ndim;
    t->numel = ct_shape_numel(ndim, sizes);
    ct_object_init(&t->obj, tensor_destroy);
    return t;
}

/* The error of a shape ct_check_shape refuses: kept out of the per-op path. */
__attribute__((noinline, cold)) static bool shape_error(const char *op, int ndim,
                                                        const int64_t *sizes) {
    char buf[CT_SHAPE_STR_MAX];
    if (ndim < 0 || ndim > CT_MAX_DIMS) {
        ct_error("%s: tensors have at most %d dims (got %d)", op, CT_MAX_DIMS, ndim);
        return false;
    }
    for (int i = 0; i < ndim; i++)
        if (sizes[i] < 0) {
            ct_error("%s: Trying to create tensor with negative dimension %lld: %s", op,
                     (long long)sizes[i], ct_shape_str(ndim, sizes, buf));
            return false;
        }
    ct_error("%s: numel: integer multiplication overflow: shape %s has more than 2^63 - 1 "
             "elements", op, ct_shape_str(ndim, sizes, buf));
    return false;
}

bool ct_check_shape(const char *op, int ndim, const int64_t *sizes) {
    if ((unsigned)ndim > CT_MAX_DIMS) return shape_error(op, ndim, sizes);
    uint64_t sign = 0;
    int64_t product = 1;
    bool overflow = false;
    for (int i = 0; i < ndim; i++) { /* branch-free: this runs for every new tensor */
        sign |= (uint64_t)sizes[i];
        overflow |= __builtin_mul_overflow(product, sizes[i] ? sizes[i] : 1, &product);
    }
    if ((sign >> 63) | overflow) return shape_error(op, ndim, sizes);
    return true;
}

ct_tensor *ct_tensor_new_dims(const char *op, int ndim, const int64_t *sizes, ct_dtype dtype,
                              ct_device device) {
    if (!ct_check_shape(op, ndim, sizes)) return NULL;
    if (dtype <= CT_DTYPE_UNSET || dtype >= CT_NUM_DTYPES) {
        ct_error("%s: invalid dtype %d", op, (int)dtype);
        return NULL;
    }
    ct_tensor *t = tensor_alloc(ndim, sizes, NULL);
    if (!t) return NULL;
    int64_t nbytes;
    if (__builtin_mul_overflow(t->numel, (int64_t)ct_dtype_sizes[dtype], &nbytes)) {
        char buf[CT_SHAPE_STR_MAX];
        ct_error("%s: Storage size calculation overflowed with sizes=%s (%lld elements of %zu "
                 "bytes)", op, ct_shape_str(ndim, sizes, buf), (long long)t->numel,
                 (size_t)ct_dtype_sizes[dtype]);
        ct_pool_free(CT_POOL_TENSOR, t);
        return NULL;
    }
    t->storage = storage_new(op, (size_t)nbytes, device);
    if (!t->storage) {
        ct_pool_free(CT_POOL_TENSOR, t);
        return NULL;
    }
    t->dtype = dtype;
    if (__builtin_expect(t->storage->record != NULL, 0))
        ct_memory_history_describe(t->storage->record, dtype, ndim, sizes);
    return t;
}

ct_tensor *ct_tensor_new(const char *op, ct_shape shape, ct_dtype dtype, ct_device device) {
    return ct_tensor_new_dims(op, shape.ndim, shape.d, dtype, device);
}

ct_tensor *ct_tensor_view_of(ct_tensor *src, int ndim, const int64_t *sizes,
                             const int64_t *strides, int64_t offset) {
    ct_tensor *t = tensor_alloc(ndim, sizes, strides);
    if (!t) return NULL;
    t->storage = ct_retain(src->storage);
    t->offset = offset;
    t->dtype = src->dtype;
    t->base = ct_retain(src->base ? src->base : src);
    return t;
}

ct_tensor *ct_blob_new(void *data, ct_dtype dtype, ct_shape shape, const int64_t *strides,
                       void (*free_fn)(void *, void *), void *ctx) {
    if (!data) {
        ct_error("ct_from_blob: data is NULL");
        return NULL;
    }
    if (!ct_check_shape("ct_from_blob", shape.ndim, shape.d)) return NULL;
    if (dtype <= CT_DTYPE_UNSET || dtype >= CT_NUM_DTYPES) {
        ct_error("ct_from_blob: invalid dtype %d", (int)dtype);
        return NULL;
    }
    ct_tensor *t = tensor_alloc(shape.ndim, shape.d, strides);
    ct_storage *s = ct_malloc(sizeof *s);
    if (!t || !s) {
        if (t) ct_pool_free(CT_POOL_TENSOR, t);
        free(s);
        ct_error("out of memory");
        return NULL;
    }
    ct_object_init(&s->obj, storage_destroy);
    s->data = data;
    s->device = CT_CPU;
    atomic_init(&s->version, 0);
    s->external = true;
    s->inline_data = false;
    s->free_fn = free_fn;
    s->free_ctx = ctx;
    s->record = NULL;
    t->storage = s;
    t->dtype = dtype;
    /* Span of memory the view reaches, for bounds reasoning and statistics. */
    int64_t hi = 0, span;
    bool overflow = false;
    for (int i = 0; i < t->ndim; i++)
        if (t->sizes[i] > 0 && t->strides[i] > 0)
            overflow |= __builtin_mul_overflow(t->sizes[i] - 1, t->strides[i], &span) ||
                        __builtin_add_overflow(hi, span, &hi);
    overflow = overflow || __builtin_add_overflow(hi, 1, &hi) ||
               __builtin_mul_overflow(hi, (int64_t)ct_dtype_size(dtype), &span);
    if (overflow) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        ct_error("ct_from_blob: Storage size calculation overflowed with sizes=%s and strides=%s",
                 ct_shape_str(t->ndim, t->sizes, a), ct_shape_str(t->ndim, t->strides, b));
        s->free_fn = NULL; /* the memory stays the caller's */
        ct_release(t);
        return NULL;
    }
    s->nbytes = t->numel ? (size_t)span : 0;
    return t;
}

ct_tensor *ct_from_blob(void *data, ct_dtype dtype, ct_shape shape, const int64_t *strides,
                        void (*free_fn)(void *, void *), void *ctx) {
    return ct_ret(ct_blob_new(data, dtype, shape, strides, free_fn, ctx));
}

bool ct_tensor_is_contiguous(const ct_tensor *t) {
    int64_t expected = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->sizes[i] == 1) continue;
        if (t->sizes[i] == 0) return true;
        if (t->strides[i] != expected) return false;
        expected *= t->sizes[i];
    }
    return true;
}

int ct_wrap_dim(const char *op, int64_t dim, int ndim) {
    int64_t n = ndim > 0 ? ndim : 1; /* a 0-d tensor accepts dim 0 and -1 */
    if (dim < -n || dim >= n) {
        ct_error("%s: Dimension out of range (expected to be in range of [%lld, %lld], "
                 "but got %lld)", op, (long long)-n, (long long)(n - 1), (long long)dim);
        return -1;
    }
    return (int)(dim < 0 ? dim + n : dim);
}

bool ct_check_same_device(const char *op, const ct_tensor *a, const ct_tensor *b) {
    if (ct_same_device(a->storage->device, b->storage->device)) return true;
    char da[16], db[16];
    ct_error_of_kind(CT_ERR_DEVICE_MISMATCH,
             "%s: Expected all tensors to be on the same device, but found at least two "
             "devices, %s and %s!", op, ct_device_str(a->storage->device, da),
             ct_device_str(b->storage->device, db));
    return false;
}

/* ---- public metadata ---------------------------------------------------- */

int ct_ndim(const ct_tensor *t) {
    if (!ct_alive("ct_ndim", 1, t)) return -1;
    return t ? t->ndim : -1;
}
int64_t ct_numel(const ct_tensor *t) {
    if (!ct_alive("ct_numel", 1, t)) return -1;
    return t ? t->numel : -1;
}
int64_t ct_storage_offset(const ct_tensor *t) {
    if (!ct_alive("ct_storage_offset", 1, t)) return -1;
    return t ? t->offset : -1;
}
ct_dtype ct_dtype_of(const ct_tensor *t) {
    if (!ct_alive("ct_dtype_of", 1, t)) return CT_DTYPE_UNSET;
    return t ? t->dtype : CT_DTYPE_UNSET;
}
ct_device ct_device_of(const ct_tensor *t) {
    if (!ct_alive("ct_device_of", 1, t)) return (ct_device){0, 0};
    return t ? t->storage->device : (ct_device){0, 0};
}
bool ct_is_meta(const ct_tensor *t) {
    if (!ct_alive("ct_is_meta", 1, t)) return false;
    return t && ct_tensor_is_meta(t);
}
bool ct_is_contiguous(const ct_tensor *t) {
    if (!ct_alive("ct_is_contiguous", 1, t)) return false;
    return t && ct_tensor_is_contiguous(t);
}
void *ct_data_ptr(const ct_tensor *t) {
    if (!ct_alive("ct_data_ptr", 1, t)) return NULL;
    return t ? ct_tensor_data(t) : NULL;
}

ct_shape ct_shape_of(const ct_tensor *t) {
    ct_shape s = {0};
    if (!t || !ct_alive("ct_shape_of", 1, t)) return s;
    s.ndim = t->ndim;
    memcpy(s.d, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
    return s;
}

int64_t ct_size(const ct_tensor *t, int64_t dim) {
    if (!ct_alive("ct_size", 1, t)) return -1;
    if (!t) return -1;
    int d = ct_wrap_dim("ct_size", dim, t->ndim);
    if (d < 0) return -1;
    return t->ndim ? t->sizes[d] : 1;
}

int64_t ct_stride(const ct_tensor *t, int64_t dim) {
    if (!ct_alive("ct_stride", 1, t)) return -1;
    if (!t) return -1;
    int d = ct_wrap_dim("ct_stride", dim, t->ndim);
    if (d < 0) return -1;
    return t->ndim ? t->strides[d] : 1;
}

void ct_tensor_assign_data(ct_tensor *t, ct_tensor *src) {
    ct_storage *old = t->storage;
    /* Continue the old version count, so that a graph which saved t notices. */
    unsigned version = ct_version_counter(t);
    t->storage = ct_retain(src->storage);
    ct_release(old);
    atomic_store(&t->storage->version, version);
    t->offset = src->offset;
    t->dtype = src->dtype;
    t->ndim = src->ndim;
    t->numel = src->numel;
    memcpy(t->sizes, src->sizes, sizeof t->sizes);
    memcpy(t->strides, src->strides, sizeof t->strides);
    ct_bump_version(t);
}
