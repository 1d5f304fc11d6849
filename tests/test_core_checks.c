/* Checks of the core that guard against crashes and name the op: shapes whose element
 * or byte count overflows int64, allocations that fail, devices without a backend,
 * cat/stack device errors, the grad_fn of div with a rounding mode, and integer
 * division's one overflowing quotient (INT64_MIN / -1). */
#include <stdint.h>
#include <stdlib.h>

#include "ct_test.h"
#include "core/tensor_impl.h"

/* Under AddressSanitizer an absurd allocation must fail like malloc does (NULL), not
 * abort the test: the library reports it as "out of memory". */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

/* The error of expr contains every fragment given. */
#define CHECK_ERROR2(expr, frag1, frag2)                                                  \
    do {                                                                                  \
        CHECK_ERROR(expr, frag1);                                                         \
        CHECK_ERROR(expr, frag2);                                                         \
    } while (0)

#define BIG(k) ((int64_t)1 << (k))

TEST(creation_refuses_shapes_whose_numel_overflows) {
    CHECK_ERROR2(ct_zeros(CT_SHAPE(BIG(33), BIG(31))), "ct_zeros: numel: integer multiplication overflow",
                 "[8589934592, 2147483648]");
    CHECK_ERROR2(ct_eye(BIG(32)), "ct_eye: ", "overflow");
    CHECK_ERROR(ct_ones(CT_SHAPE(BIG(62), 2), .dtype = CT_F64), "ct_ones: numel: integer multiplication overflow");
    CHECK_ERROR(ct_full(CT_SHAPE(3, BIG(62), 2), 1.0), "ct_full: numel: integer multiplication overflow");
    CHECK_ERROR(ct_rand(CT_SHAPE(BIG(40), BIG(40))), "ct_rand: numel: integer multiplication overflow");
    /* numel fits, the byte count does not */
    CHECK_ERROR2(ct_empty(CT_SHAPE(BIG(61), 2)), "ct_empty: Storage size calculation overflowed",
                 "[2305843009213693952, 2]");
    CHECK_ERROR(ct_zeros(CT_SHAPE(BIG(62)), .dtype = CT_I64), "ct_zeros: Storage size calculation overflowed");
    /* Zeros make numel 0; the other sizes must still multiply within int64. */
    ct_tensor *z = ct_empty(CT_SHAPE(0, BIG(62)));
    CHECK(z && ct_numel(z) == 0 && ct_size(z, 1) == BIG(62));
    CHECK_ERROR(ct_empty(CT_SHAPE(BIG(62), 0, 4)), "numel: integer multiplication overflow");
}

TEST(negative_dims_name_the_op) {
    CHECK_ERROR(ct_zeros(CT_SHAPE(-2, 3)),
                "ct_zeros: Trying to create tensor with negative dimension -2: [-2, 3]");
    CHECK_ERROR(ct_ones(CT_SHAPE(2, -1)), "ct_ones: Trying to create tensor with negative dimension -1");
    CHECK_ERROR(ct_empty(CT_SHAPE(-5)), "ct_empty: ");
    CHECK_ERROR(ct_randn(CT_SHAPE(-5)), "ct_randn: ");
}

TEST(views_refuse_shapes_whose_numel_overflows) {
    ct_tensor *one = ct_zeros(CT_SHAPE(1, 1));
    CHECK_ERROR2(ct_expand(one, CT_SHAPE(BIG(32), BIG(32))),
                 "ct_expand: numel: integer multiplication overflow", "[4294967296, 4294967296]");
    /* an expanded numel that fits int64 is fine (no memory behind it) ... */
    ct_tensor *e = ct_expand(one, CT_SHAPE(BIG(31), BIG(31)));
    CHECK(e && ct_numel(e) == BIG(62));
    /* ... but a copy of it cannot be allocated: its byte count overflows */
    CHECK_ERROR(ct_zeros_like(e), "ct_zeros: Storage size calculation overflowed");
    CHECK_ERROR(ct_contiguous(e), "ct_contiguous: Storage size calculation overflowed");
    /* ops that first make a contiguous (or converted) copy of their input name themselves */
    CHECK_ERROR(ct_cumsum(e, 0), "ct_cumsum: Storage size calculation overflowed");
    CHECK_ERROR(ct_softmax(e, 1), "ct_softmax: Storage size calculation overflowed");
    CHECK_ERROR(ct_sum(e, .dims = CT_DIMS(0)), "ct_sum: Storage size calculation overflowed");
    CHECK_ERROR(ct_add_scalar(e, 1), "ct_add: Storage size calculation overflowed");

    ct_tensor *empty = ct_zeros(CT_SHAPE(0));
    /* 2^32 * 2^32 wraps to 0 in 64 bits: it must not pass for "0 elements" */
    CHECK_ERROR(ct_view(empty, CT_SHAPE(BIG(32), BIG(32), 0)), "ct_view: numel: integer multiplication overflow");
    CHECK_ERROR(ct_reshape(empty, CT_SHAPE(-1, BIG(32), BIG(32))), "ct_reshape: numel: integer multiplication overflow");
    CHECK_ERROR(ct_view(ct_zeros(CT_SHAPE(4)), CT_SHAPE(BIG(62), BIG(62), 4)), "ct_view: numel");
    CHECK_ERROR(ct_unflatten(ct_zeros(CT_SHAPE(2, 0)), 1, CT_SHAPE(BIG(32), BIG(32))),
                "ct_unflatten: Provided sizes [4294967296, 4294967296] don't multiply up");
    CHECK_ERROR(ct_unflatten(ct_zeros(CT_SHAPE(2, 3)), 1, CT_SHAPE(BIG(32), BIG(32))),
                "don't multiply up to the size of dim 1 (3)");

    ct_tensor *three = ct_zeros(CT_SHAPE(3));
    CHECK_ERROR(ct_as_strided(three, CT_SHAPE(BIG(32), BIG(32)), CT_SHAPE(0, 0), 0),
                "ct_as_strided: numel: integer multiplication overflow");
    CHECK_ERROR(ct_as_strided(three, CT_SHAPE(3), CT_SHAPE(BIG(62)), 0),
                "ct_as_strided: setStorage: sizes [3], strides [4611686018427387904] and storage "
                "offset 0: the storage size calculation overflowed");
    CHECK_ERROR(ct_as_strided(three, CT_SHAPE(2), CT_SHAPE(1), INT64_MAX), "overflowed");
    CHECK_VALUES(ct_as_strided(three, CT_SHAPE(2, 2), CT_SHAPE(1, 0), 1), 0, 0, 0, 0, 0);

    CHECK_ERROR(ct_repeat(three, CT_SHAPE(BIG(62))),
                "ct_repeat: numel: integer multiplication overflow: repeats [4611686018427387904] "
                "of a tensor of shape [3]");
    CHECK_ERROR(ct_repeat(three, CT_SHAPE(BIG(40), BIG(30))), "ct_repeat: numel: integer multiplication overflow");
    CHECK_ERROR(ct_tile(ct_zeros(CT_SHAPE(2, 2)), CT_SHAPE(BIG(31), BIG(32))), "overflow");

    ct_tensor *huge = ct_expand(ct_zeros(CT_SHAPE(1)), CT_SHAPE(BIG(62)));
    CHECK_ERROR(ct_cat(CT_TENSORS(huge, huge), 0), "ct_cat: the concatenated size along dimension 0 overflows");
    CHECK_ERROR(ct_stack(CT_TENSORS(huge, huge), 0), "ct_stack: numel: integer multiplication overflow");
}

TEST(from_blob_refuses_a_span_that_overflows) {
    float data[4] = {0};
    int64_t strides[1] = {BIG(62)};
    CHECK_ERROR(ct_from_blob(data, CT_F32, CT_SHAPE(4), strides, NULL, NULL),
                "ct_from_blob: Storage size calculation overflowed with sizes=[4] and strides=");
    CHECK_ERROR(ct_from_blob(data, CT_F32, CT_SHAPE(BIG(32), BIG(32)), NULL, NULL, NULL),
                "ct_from_blob: numel: integer multiplication overflow");
}

TEST(failed_allocation_names_op_and_bytes) {
    /* 2^62 bytes: more than any address space, so this fails whatever the overcommit */
    CHECK_ERROR(ct_empty(CT_SHAPE(BIG(60))),
                "ct_empty: out of memory: tried to allocate 4611686018427387904 bytes");
    CHECK_ERROR(ct_ones(CT_SHAPE(BIG(30), BIG(29)), .dtype = CT_U8), "ct_ones: out of memory: tried to allocate");
    ct_tensor *e = ct_expand(ct_zeros(CT_SHAPE(1, 1)), CT_SHAPE(BIG(30), BIG(30)));
    CHECK_ERROR(ct_mul_scalar(e, 2), "ct_mul: out of memory: tried to allocate 4611686018427387904 bytes");
    CHECK_ERROR(ct_clone(e), "ct_clone: out of memory");
    /* the process goes on: allocations of a sane size still work */
    CHECK_VALUES(ct_ones(CT_SHAPE(2)), 0, 1, 1);
}

TEST(missing_backend_names_op_and_devices) {
    CHECK_ERROR(ct_zeros(CT_SHAPE(2), .device = CT_CUDA(0)), "ct_zeros: no backend for device cuda:0");
    CHECK_ERROR(ct_rand(CT_SHAPE(2), .device = CT_CUDA(1)), "ct_rand: no backend for device cuda:1");
    ct_tensor *a = ct_ones(CT_SHAPE(2));
    ct_clear_error();
    CHECK(!ct_to(a, .device = CT_CUDA(0)));
    CHECK_STR_EQ(ct_last_error(), "ct_to: cannot copy a tensor from cpu to cuda:0: no backend for "
                                  "device cuda:0 in this build of ctorch");
    ct_clear_error();
    CHECK(ct_to(a, .device = CT_CPU) == a); /* same device: no copy, no error */
}

TEST(cat_and_stack_device_errors_name_the_op_once) {
    ct_tensor *a = ct_ones(CT_SHAPE(2));
    ct_tensor *b = ct_ones(CT_SHAPE(2));
    b->storage->device = CT_CUDA(0); /* white-box: no cuda backend in this build */
    const char *want_cat = "ct_cat: Expected all tensors to be on the same device, but found at "
                           "least two devices, cpu and cuda:0!";
    ct_clear_error();
    CHECK(!ct_cat(CT_TENSORS(a, b), 0));
    CHECK_STR_EQ(ct_last_error(), want_cat);
    ct_clear_error();
    CHECK(!ct_stack(CT_TENSORS(a, b), 0));
    CHECK_STR_EQ(ct_last_error(), "ct_stack: Expected all tensors to be on the same device, but "
                                  "found at least two devices, cpu and cuda:0!");
    b->storage->device = CT_CPU;
    ct_clear_error();
    CHECK(!ct_cat(0, NULL, 0));
    CHECK_STR_EQ(ct_last_error(), "ct_cat: torch.cat(): expected a non-empty list of Tensors");
    ct_clear_error();
    CHECK(!ct_stack(0, NULL, 0));
    CHECK_STR_EQ(ct_last_error(), "ct_stack: stack expects a non-empty TensorList");
    ct_clear_error();
}

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
