/* Helpers shared by the nn ops whose kernels take contiguous float buffers
 * (convolution, pooling, upsampling, matrix products). */
#include "ops/internal.h"

const ct_kernel_entry *ct_compute_kernel(ct_kernel_family family, ct_op_id op, ct_device dev,
                                         ct_dtype dt) {
    ct_dtype kd = ct_compute_dtype_for(op, dev, dt);
    const ct_kernel_entry *e = ct_kernel_entry_for(family, op, dev, kd);
    if (!e && kd != dt) { /* report the user's dtype, not the internal float32 */
        ct_clear_error();
        ct_kernel_entry_for(family, op, dev, dt);
    }
    return e;
}

ct_tensor *ct_cast_result(const char *op, ct_tensor *out, ct_dtype dt) {
    if (!out || out->dtype == dt) return out;
    ct_tensor *c = ct_cast_new(op, out, dt);
    ct_release(out);
    return c;
}

ct_tensor *ct_contiguous_as(const char *op, ct_tensor *t, ct_dtype dt) {
    if (t->dtype == dt && ct_tensor_is_contiguous(t)) return ct_retain(t);
    return ct_cast_new(op, t, dt);
}
