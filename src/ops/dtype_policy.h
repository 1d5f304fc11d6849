/* The dtype policy: which dtype a kernel computes in, and which it accumulates in.
 *
 *     ct_dtype k = ct_compute_dtype_for(CT_OP_exp, dev, CT_BF16);
 *     // CT_BF16 where the backend has a bfloat16 exp kernel (it converts in
 *     // registers), else CT_F32: the op casts its operands to float32 around the kernel
 *
 * Every op asks this one place instead of deciding itself, so a backend that adds a
 * reduced-precision kernel is used without touching the op. */
#ifndef CT_OPS_DTYPE_POLICY_H
#define CT_OPS_DTYPE_POLICY_H

#include "core/tensor_impl.h"
#include "kernels/kernel.h"

/* The dtype op's kernel runs in for operands of dtype dt on dev: dt itself when the
 * backend registered a kernel for it; else float32 for float16/bfloat16 (the fallback:
 * the op converts whole operands); else dt (the lookup then reports the missing slot).
 * Never sets an error. */
ct_dtype ct_compute_dtype_for(ct_op_id op, ct_device dev, ct_dtype dt);

/* PyTorch's at::opmath_type: the dtype a reduced-precision element is computed in
 * between a load and a store (float16, bfloat16: float32; every other dtype itself). */
ct_dtype ct_opmath_type(ct_dtype dt);

/* PyTorch's at::acc_type for the cpu: what reductions, scans and softmax accumulate
 * in.  float16, bfloat16: float32; float32, float64: float64; integers and bool:
 * int64.  The cpu kernels' accumulator C types follow this table (cpu/reduce_sum.c,
 * cpu/scan.c, cpu/softmax.c, cpu/softmax_reduced.c, cpu/norm_reduced.c,
 * cpu/reduce_norm.c, cpu/gemm_reduced.c); ops use it for the dtype of integer
 * results. */
ct_dtype ct_acc_type(ct_dtype dt, ct_device dev);

/* Kernel input / output dtypes of a sum-like reduction or scan (sum, prod, cumsum,
 * cumprod) of input dtype in_dt into result dtype out_dt: a floating result computes
 * in ct_compute_dtype_for(op, dev, out_dt); an integer result reads the integer input
 * itself (a floating one as out_dt) into ct_acc_type(out_dt), int64. */
void ct_reduce_kernel_dtypes(ct_op_id op, ct_device dev, ct_dtype in_dt, ct_dtype out_dt,
                             ct_dtype *kin, ct_dtype *kout);

#endif
