/* The dtype policy (ops/dtype_policy.h). */
#include "ops/dtype_policy.h"
#include "ops/dispatch.h"

static bool is_reduced(ct_dtype t) { return t == CT_F16 || t == CT_BF16; }

ct_dtype ct_compute_dtype_for(ct_op_id op, ct_device dev, ct_dtype dt) {
    if (!is_reduced(dt) || ct_kernel_registered(op, dev, dt)) return dt;
    return CT_F32;
}

ct_dtype ct_opmath_type(ct_dtype dt) { return is_reduced(dt) ? CT_F32 : dt; }

ct_dtype ct_acc_type(ct_dtype dt, ct_device dev) {
    (void)dev; /* one table today; a cuda backend accumulates float32 in float32 */
    if (is_reduced(dt)) return CT_F32;
    if (ct_dtype_is_floating(dt)) return CT_F64;
    return CT_I64;
}

void ct_reduce_kernel_dtypes(ct_op_id op, ct_device dev, ct_dtype in_dt, ct_dtype out_dt,
                             ct_dtype *kin, ct_dtype *kout) {
    if (ct_dtype_is_floating(out_dt)) {
        *kin = *kout = ct_compute_dtype_for(op, dev, out_dt);
    } else {
        *kin = ct_dtype_is_floating(in_dt) ? out_dt : in_dt;
        *kout = ct_acc_type(out_dt, dev);
    }
}
