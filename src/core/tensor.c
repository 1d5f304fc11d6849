/* Tensor and storage lifetime, geometry and metadata. */
#include <stdlib.h>
#include <string.h>

#include "core/allocator.h"
#include "core/tensor_impl.h"
#include "autograd/hooks.h"

/* On the cpu the storage header and its data share one allocation: 64-byte aligned
 * for vector loads, except small tensors, where malloc's alignment is plenty and
 * much cheaper. */
#define STORAGE_HEADER ((sizeof(ct_storage) + 63) & ~(size_t)63)
#define SMALL_HEADER ((sizeof(ct_storage) + 15) & ~(size_t)15)
#define SMALL_BYTES 256

static void storage_destroy(ct_object *o) {
    ct_storage *s = (ct_storage *)o;
    if (s->external) {
        if (s->free_fn) s->free_fn(s->data, s->free_ctx);
        free(s);
    } else if (s->inline_data) {
        ct_alloc_stats_add(s->device, -(int64_t)s->nbytes);
        free(s);
    } else {
        ct_alloc_stats_add(s->device, -(int64_t)s->nbytes);
        ct_allocator_for(s->device)->free(s->data, s->nbytes);
        free(s);
    }
}

static ct_storage *storage_new(size_t nbytes, ct_device device) {
    const ct_allocator *a = ct_allocator_for(device);
    if (!a) {
        char buf[16];
        ct_error("no backend for device %s in this build of ctorch", ct_device_str(device, buf));
        return NULL;
    }
    ct_storage *s;
    if (device.type == CT_DEV_CPU && nbytes <= SMALL_BYTES) {
        s = malloc(SMALL_HEADER + nbytes);
        if (s) s->data = (char *)s + SMALL_HEADER;
    } else if (device.type == CT_DEV_CPU) {
        s = aligned_alloc(64, STORAGE_HEADER + ((nbytes + 63) & ~(size_t)63));
        if (s) s->data = (char *)s + STORAGE_HEADER;
    } else {
        s = malloc(sizeof *s);
        if (s && !(s->data = a->alloc(nbytes ? nbytes : 1))) {
            free(s);
            s = NULL;
        }
    }
    if (!s) {
        ct_error("out of memory: tried to allocate %zu bytes", nbytes);
        return NULL;
    }
    ct_object_init(&s->obj, storage_destroy);
    s->nbytes = nbytes;
    s->device = device;
    atomic_init(&s->version, 0);
    s->inline_data = device.type == CT_DEV_CPU;
    s->external = false;
    s->free_fn = NULL;
    s->free_ctx = NULL;
    ct_alloc_stats_add(device, (int64_t)nbytes);
    return s;
}

static void tensor_destroy(ct_object *o) {
    ct_tensor *t = (ct_tensor *)o;
    ct_tensor_detach_hooks(t);
    ct_release(t->grad);
    ct_release(t->grad_fn);
    ct_release(t->base);
    ct_hooks_free(t->hooks);
    ct_release(t->storage);
    free(t);
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

static ct_tensor *tensor_alloc(void) {
    ct_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        ct_error("out of memory allocating a tensor");
        return NULL;
    }
    ct_object_init(&t->obj, tensor_destroy);
    return t;
}

static bool check_shape(ct_shape shape) {
    if (shape.ndim < 0 || shape.ndim > CT_MAX_DIMS) {
        ct_error("tensors have at most %d dims (got %d)", CT_MAX_DIMS, shape.ndim);
        return false;
    }
    for (int i = 0; i < shape.ndim; i++)
        if (shape.d[i] < 0) {
            char buf[CT_SHAPE_STR_MAX];
            ct_error("negative dimension %lld in shape %s", (long long)shape.d[i],
                     ct_shape_str(shape.ndim, shape.d, buf));
            return false;
        }
    return true;
}

ct_tensor *ct_tensor_new(ct_shape shape, ct_dtype dtype, ct_device device) {
    if (!check_shape(shape)) return NULL;
    if (dtype <= CT_DTYPE_UNSET || dtype >= CT_NUM_DTYPES) {
        ct_error("invalid dtype %d", (int)dtype);
        return NULL;
    }
    int64_t numel = ct_shape_numel(shape.ndim, shape.d);
    ct_tensor *t = tensor_alloc();
    if (!t) return NULL;
    t->storage = storage_new((size_t)numel * ct_dtype_size(dtype), device);
    if (!t->storage) {
        free(t);
        return NULL;
    }
    t->ndim = shape.ndim;
    t->dtype = dtype;
    t->numel = numel;
    memcpy(t->sizes, shape.d, sizeof(int64_t) * (size_t)shape.ndim);
    ct_contiguous_strides(t->ndim, t->sizes, t->strides);
    return t;
}

ct_tensor *ct_tensor_view_of(ct_tensor *src, int ndim, const int64_t *sizes,
                             const int64_t *strides, int64_t offset) {
    ct_tensor *t = tensor_alloc();
    if (!t) return NULL;
    t->storage = ct_retain(src->storage);
    t->offset = offset;
    t->ndim = ndim;
    t->dtype = src->dtype;
    memcpy(t->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
    memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
    t->numel = ct_shape_numel(ndim, sizes);
    t->is_view = true;
    t->base = ct_retain(src->base ? src->base : src);
    return t;
}

ct_tensor *ct_blob_new(void *data, ct_dtype dtype, ct_shape shape, const int64_t *strides,
                       void (*free_fn)(void *, void *), void *ctx) {
    if (!data) {
        ct_error("ct_from_blob: data is NULL");
        return NULL;
    }
    if (!check_shape(shape)) return NULL;
    if (dtype <= CT_DTYPE_UNSET || dtype >= CT_NUM_DTYPES) {
        ct_error("ct_from_blob: invalid dtype %d", (int)dtype);
        return NULL;
    }
    ct_tensor *t = tensor_alloc();
    ct_storage *s = malloc(sizeof *s);
    if (!t || !s) {
        free(t);
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
    t->storage = s;
    t->ndim = shape.ndim;
    t->dtype = dtype;
    memcpy(t->sizes, shape.d, sizeof(int64_t) * (size_t)shape.ndim);
    if (strides)
        memcpy(t->strides, strides, sizeof(int64_t) * (size_t)shape.ndim);
    else
        ct_contiguous_strides(t->ndim, t->sizes, t->strides);
    t->numel = ct_shape_numel(t->ndim, t->sizes);
    /* Span of memory the view reaches, for bounds reasoning and statistics. */
    int64_t hi = 0;
    for (int i = 0; i < t->ndim; i++)
        if (t->sizes[i] > 0) hi += (t->sizes[i] - 1) * (t->strides[i] > 0 ? t->strides[i] : 0);
    s->nbytes = t->numel ? (size_t)(hi + 1) * ct_dtype_size(dtype) : 0;
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
    if (ct_device_eq(a->storage->device, b->storage->device)) return true;
    char da[16], db[16];
    ct_error("%s: Expected all tensors to be on the same device, but found at least two "
             "devices, %s and %s!", op, ct_device_str(a->storage->device, da),
             ct_device_str(b->storage->device, db));
    return false;
}

/* ---- public metadata ---------------------------------------------------- */

int ct_ndim(const ct_tensor *t) { return t ? t->ndim : -1; }
int64_t ct_numel(const ct_tensor *t) { return t ? t->numel : -1; }
int64_t ct_storage_offset(const ct_tensor *t) { return t ? t->offset : -1; }
ct_dtype ct_dtype_of(const ct_tensor *t) { return t ? t->dtype : CT_DTYPE_UNSET; }
ct_device ct_device_of(const ct_tensor *t) { return t ? t->storage->device : (ct_device){0, 0}; }
bool ct_is_contiguous(const ct_tensor *t) { return t && ct_tensor_is_contiguous(t); }
void *ct_data_ptr(const ct_tensor *t) { return t ? ct_tensor_data(t) : NULL; }

ct_shape ct_shape_of(const ct_tensor *t) {
    ct_shape s = {0};
    if (!t) return s;
    s.ndim = t->ndim;
    memcpy(s.d, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
    return s;
}

int64_t ct_size(const ct_tensor *t, int64_t dim) {
    if (!t) return -1;
    int d = ct_wrap_dim("ct_size", dim, t->ndim);
    if (d < 0) return -1;
    return t->ndim ? t->sizes[d] : 1;
}

int64_t ct_stride(const ct_tensor *t, int64_t dim) {
    if (!t) return -1;
    int d = ct_wrap_dim("ct_stride", dim, t->ndim);
    if (d < 0) return -1;
    return t->ndim ? t->strides[d] : 1;
}

void ct_tensor_assign_data(ct_tensor *t, ct_tensor *src) {
    ct_storage *old = t->storage;
    /* Continue the old version count, so that a graph which saved t notices. */
    unsigned version = ct_version(t);
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
