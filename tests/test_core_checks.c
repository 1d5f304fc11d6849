/* Checks of the core that guard against crashes and name the op: shapes whose element
 * or byte count overflows int64, allocations that fail, devices without a backend,
 * cat/stack device errors, the grad_fn of div with a rounding mode, and integer
 * division's one overflowing quotient (INT64_MIN / -1). */
#include <stdint.h>
#include <stdlib.h>

#include "ct_test.h"
#include "core/tensor_impl.h"


/* torch.div(a, b, rounding_mode=...) is the Tensor_mode overload: DivBackward2 for
 * every mode, None too; plain division and a number divisor: DivBackward0 (checked
 * with PyTorch 1.13, where a.div(2., rounding_mode='floor') is DivBackward2 as well:
 * Python wraps the number into a tensor). */
TEST(div_with_rounding_mode_is_div_backward2) {
    ct_tensor *a = ct_tensor_f64(((double[]){2, 3}), CT_SHAPE(2), .requires_grad = true);
    ct_tensor *b = ct_tensor_f64(((double[]){1.5, 2}), CT_SHAPE(2), .requires_grad = true);
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_div_mode(a, b, CT_ROUND_FLOOR))), "DivBackward2");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_div_mode(a, b, CT_ROUND_TRUNC))), "DivBackward2");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_div_mode(a, b, CT_ROUND_NONE))), "DivBackward2");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_div(a, b))), "DivBackward0");
    CHECK_STR_EQ(ct_node_name(ct_grad_fn(ct_div_scalar(a, 2))), "DivBackward0");
    /* the node's formula is div's: zero gradients for a rounded quotient */
    ct_tensor *y = ct_sum(ct_div_mode(a, b, CT_ROUND_FLOOR));
    CHECK(ct_backward(y) == 0);
    CHECK_VALUES(ct_grad(a), 0, 0, 0);
    CHECK_VALUES(ct_grad(b), 0, 0, 0);
}

/* INT64_MIN / -1 has no int64 value: it wraps to INT64_MIN instead of trapping. */
TEST(integer_division_min_by_minus_one_wraps) {
    int64_t x[4] = {INT64_MIN, INT64_MIN, 7, -7}, y[4] = {-1, 1, -1, 2};
    ct_tensor *a = ct_tensor_i64(x, CT_SHAPE(4)), *b = ct_tensor_i64(y, CT_SHAPE(4));
    int64_t out[4];
    CHECK(ct_copy_to_buffer(ct_div_mode(a, b, CT_ROUND_TRUNC), out, CT_I64, sizeof out) == 0);
    CHECK(out[0] == INT64_MIN && out[1] == INT64_MIN && out[2] == -7 && out[3] == -3);
    CHECK(ct_copy_to_buffer(ct_div_mode(a, b, CT_ROUND_FLOOR), out, CT_I64, sizeof out) == 0);
    CHECK(out[0] == INT64_MIN && out[1] == INT64_MIN && out[2] == -7 && out[3] == -4);
    /* a broadcast divisor (the kernel's scalar path) */
    ct_tensor *m1 = ct_tensor_i64(((int64_t[]){-1}), CT_SHAPE(1));
    CHECK(ct_copy_to_buffer(ct_div_mode(a, m1, CT_ROUND_FLOOR), out, CT_I64, sizeof out) == 0);
    CHECK(out[0] == INT64_MIN && out[1] == INT64_MIN && out[2] == -7 && out[3] == 7);
    CHECK(ct_copy_to_buffer(ct_div_mode(a, m1, CT_ROUND_TRUNC), out, CT_I64, sizeof out) == 0);
    CHECK(out[0] == INT64_MIN && out[3] == 7);
    /* true division is float: no wrap */
    CHECK_VALUES(ct_div(ct_narrow(a, 0, 0, 1), ct_narrow(b, 0, 0, 1)), 0, 9223372036854775808.0);
    /* int32 and the narrower types wrap the same way */
    int32_t x32[2] = {INT32_MIN, 9}, y32[2] = {-1, -2};
    ct_tensor *a32 = ct_tensor_i32(x32, CT_SHAPE(2)), *b32 = ct_tensor_i32(y32, CT_SHAPE(2));
    int32_t out32[2];
    CHECK(ct_copy_to_buffer(ct_div_mode(a32, b32, CT_ROUND_TRUNC), out32, CT_I32, sizeof out32) == 0);
    CHECK(out32[0] == INT32_MIN && out32[1] == -4);
    CHECK(ct_copy_to_buffer(ct_div_mode(a32, b32, CT_ROUND_FLOOR), out32, CT_I32, sizeof out32) == 0);
    CHECK(out32[0] == INT32_MIN && out32[1] == -5);
    ct_tensor *a8 = ct_full(CT_SHAPE(1), -128, .dtype = CT_I8), *b8 = ct_full(CT_SHAPE(1), -1, .dtype = CT_I8);
    CHECK_VALUES(ct_div_mode(a8, b8, CT_ROUND_FLOOR), 0, -128);
    /* division by zero is still refused */
    CHECK_ERROR(ct_div_mode(a, ct_zeros_like(b), CT_ROUND_FLOOR), "ZeroDivisionError");
}
