/* Shared machinery of pointwise ops: checks, type promotion, broadcasting, output
 * allocation, the reduced-precision path, and the kernel run over the iterator.
 *
 * Reduced precision: a float16 or bfloat16 op runs the backend's kernel of that dtype
 * where it has one (it converts in registers: no float32 copy of an operand); else
 * the operands are cast to float32 around the float32 kernel and the result back
 * (ops/dtype_policy.h).  The cpu has such kernels for every pointwise op but the
 * fused losses and their backwards; tests/opinfo.def's rows list each op's dtypes.
 *
 * An op function calls ct_pointwise() for its forward, then records its node:
 *
 *     ct_tensor *ct_mul(ct_tensor *a, ct_tensor *b) {
 *         ct_tensor *in[] = {a, b};
 *         ct_tensor *out = ct_pointwise(&MUL, 2, in, NULL, NULL);
 *         ... ct_node_record / save ...
 *         return ct_ret(out);
 *     }
 */
#ifndef CT_OPS_POINTWISE_H
#define CT_OPS_POINTWISE_H

#include "core/iter.h"
#include "kernels/loop.h"
#include "ops/op_table.h"

/* How an op's result dtype follows from its inputs. */
typedef enum {
    CT_PW_PROMOTE,       /* promoted input dtype (add, mul, maximum, ...) */
    CT_PW_PROMOTE_FLOAT, /* promoted, integers become the default float (div, exp, ...) */
    CT_PW_BOOL,          /* computed in the promoted dtype, output bool (eq, lt, isnan) */
    CT_PW_FIRST,         /* the first input's dtype; others cast to it (where: see ops) */
} ct_pw_result;

typedef struct {
    ct_op_id op;
    ct_pw_result result;
    int first_input; /* inputs before this index are not promoted (where's condition) */
} ct_pw_spec;

/* Computes op over inputs (broadcast together).  With `out` given, writes into it in
 * place (its shape must be the broadcast shape and the result must cast to its dtype)
 * and bumps its version.  Returns a new, unregistered tensor (or out, retained), or
 * NULL with the error set. */
ct_tensor *ct_pointwise(const ct_pw_spec *spec, int n_in, ct_tensor *const *inputs,
                        ct_tensor *out, const ct_pw_args *args);

/* PyTorch's result_type over tensors, 0-d tensors and wrapped numbers. */
ct_dtype ct_result_type(int n, ct_tensor *const *inputs);
/* A 0-d tensor holding v as a "wrapped number": int64 when v is integral and `like` is
 * not floating, else `like`'s floating dtype (or the default); unregistered. */
ct_tensor *ct_wrap_scalar(double v, const ct_tensor *like);

/* False, with PyTorch's error, when writing t would write one location twice (an
 * expanded tensor); ct_check_inplace_of checks it first. */
bool ct_check_no_internal_overlap(const char *op, const ct_tensor *t);
/* Checks for an in-place op on t (PyTorch's check_inplace), in grad mode: a leaf
 * requiring grad is refused, and so is a view that may not be modified in place when
 * t or one of the op's other inputs requires grad (see Note [In-place on views]). */
bool ct_check_inplace_of(const char *op, ct_tensor *t, int n, ct_tensor *const *inputs);
bool ct_check_inplace(const char *op, ct_tensor *t);

#endif
