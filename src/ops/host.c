/* Host access to tensor values: see host.h. */
#include "ops/host.h"

#include "core/backend.h"

bool ct_has_values(const ct_tensor *t) {
    const ct_backend *b = ct_backend_for_type(t->storage->device.type);
    return b && !b->no_memory;
}

/* An empty tensor's data may be NULL; callers get a pointer they need not test. */
static char empty_elements[8];

static bool check_values(const char *op, const ct_tensor *t) {
    if (ct_has_values(t)) return true;
    char dev[16];
    ct_error_of_kind(CT_ERR_NO_VALUES,
                     "%s: cannot be called on %s tensors: it needs the tensor's values, and a %s "
             "tensor has no data", op, ct_device_str(t->storage->device, dev), dev);
    return false;
}

/* In place: a contiguous cpu tensor of the wanted dtype. */
static bool in_place(const ct_tensor *t, ct_dtype dtype) {
    return t->storage->device.type == CT_DEV_CPU && t->dtype == dtype &&
           ct_tensor_is_contiguous(t);
}

static void *elements(const ct_tensor *t) {
    char *p = ct_tensor_data(t);
    return p ? p : empty_elements;
}

const void *ct_host_read(const char *op, const ct_tensor *t, ct_dtype dtype, ct_host_buf *buf) {
    *buf = (ct_host_buf){0};
    if (dtype == CT_DTYPE_UNSET) dtype = t->dtype;
    if (!check_values(op, t)) return NULL;
    if (in_place(t, dtype)) return elements(t);
    if (!(buf->copy = ct_tensor_new(op, ct_shape_of(t), dtype, CT_CPU))) return NULL;
    ct_copy_into(buf->copy, t);
    return elements(buf->copy);
}

void *ct_host_write(const char *op, ct_tensor *t, ct_host_buf *buf) {
    *buf = (ct_host_buf){0};
    if (!check_values(op, t)) return NULL;
    if (in_place(t, t->dtype)) return elements(t);
    if (!(buf->copy = ct_tensor_new(op, ct_shape_of(t), t->dtype, CT_CPU))) return NULL;
    buf->dst = ct_retain(t);
    return elements(buf->copy);
}

void ct_host_release(ct_host_buf *buf) {
    if (buf->dst) ct_copy_into(buf->dst, buf->copy);
    ct_release(buf->dst);
    ct_release(buf->copy);
    *buf = (ct_host_buf){0};
}
