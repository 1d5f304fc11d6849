/* Helpers shared by the nn ops whose kernels take contiguous float buffers
 * (convolution, pooling, upsampling, matrix products). */
#include "ops/internal.h"

ct_dtype ct_compute_dtype(ct_dtype t) { return t == CT_F16 || t == CT_BF16 ? CT_F32 : t; }

ct_tensor *ct_contiguous_as(ct_tensor *t, ct_dtype dt) {
    if (t->dtype == dt && ct_tensor_is_contiguous(t)) return ct_retain(t);
    return ct_cast_new(t, dt);
}

bool ct_check_no_double_backward(const char *grad_name) {
    if (!ct_is_grad_enabled()) return true;
    ct_error("%s: double backward is not implemented (a backward with create_graph=true "
             "reached this node)", grad_name);
    return false;
}
