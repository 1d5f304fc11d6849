/* The tensor itself: creation, metadata, views sharing storage, conversion, errors. */
#include <stdlib.h>

#include "ct_test.h"
#include "core/tensor_impl.h"
#include "ops/op_table.h"

TEST(factories_shapes_and_dtypes) {
    ct_tensor *z = ct_zeros(CT_SHAPE(2, 3));
    CHECK_INT_EQ(ct_ndim(z), 2);
    CHECK_INT_EQ(ct_size(z, -1), 3);
    CHECK_INT_EQ(ct_stride(z, 0), 3);
    CHECK_INT_EQ(ct_dtype_of(z), CT_F32);
    CHECK_VALUES(ct_sum(z), 0, 0);
    ct_tensor *f = ct_full(CT_SHAPE(2), 2.5, .dtype = CT_F64);
    CHECK_INT_EQ(ct_dtype_of(f), CT_F64);
    CHECK_VALUES(f, 0, 2.5, 2.5);
    ct_tensor *s = ct_scalar_tensor(7, .dtype = CT_I64);
    CHECK_INT_EQ(ct_ndim(s), 0);
    CHECK_INT_EQ(ct_item_int(s), 7);
    ct_tensor *e = ct_empty(CT_SHAPE(0, 4));
    CHECK_INT_EQ(ct_numel(e), 0);
    CHECK_VALUES(ct_ones_like(f, .dtype = CT_I32), 0, 1, 1);
    CHECK_INT_EQ(ct_dtype_of(ct_ones_like(f, .dtype = CT_I32)), CT_I32);
    CHECK_ERROR(ct_zeros(CT_SHAPE(2, -1)), "negative dimension -1");
    CHECK_ERROR(ct_ones(CT_SHAPE(2), .dtype = CT_I64, .requires_grad = true),
                "Only Tensors of floating point dtype can require gradients");
}

TEST(default_dtype) {
    ct_set_default_dtype(CT_F64);
    CHECK_INT_EQ(ct_dtype_of(ct_ones(CT_SHAPE(1))), CT_F64);
    ct_set_default_dtype(CT_F32);
    CHECK_INT_EQ(ct_dtype_of(ct_ones(CT_SHAPE(1))), CT_F32);
    CHECK_ERROR(ct_set_default_dtype(CT_I64), "only float32 and float64");
    CHECK_INT_EQ(ct_set_default_dtype(CT_F32), 0);
}

TEST(every_cast_round_trips_small_integers) {
    const double v[] = {0, 1, 2, 100};
    for (ct_dtype a = CT_F32; a < CT_NUM_DTYPES; a++) {
        for (ct_dtype b = CT_F32; b < CT_NUM_DTYPES; b++) {
            CT_SCOPE {
                ct_tensor *t = ct_tensor_f64(v, CT_SHAPE(4), .dtype = a);
                ct_tensor *u = ct_to(ct_to(t, .dtype = b), .dtype = CT_F64);
                if (a == CT_BOOL || b == CT_BOOL)
                    CHECK_VALUES(u, 0, 0, 1, 1, 1);
                else
                    CHECK_VALUES(u, 0, 0, 1, 2, 100);
            }
        }
    }
    double big[] = {1.5, -2.25, 65504};
    CHECK_VALUES(ct_to(ct_tensor_f64(big, CT_SHAPE(3)), .dtype = CT_F16), 0, 1.5, -2.25, 65504);
    CHECK_VALUES(ct_to(ct_tensor_f64(big, CT_SHAPE(3)), .dtype = CT_BF16), 0, 1.5, -2.25, 65536);
    CHECK_VALUES(ct_to(ct_tensor_f64(big, CT_SHAPE(3)), .dtype = CT_I32), 0, 1, -2, 65504);
}

TEST(promotion_follows_pytorch) {
    CHECK_INT_EQ(ct_promote_types(CT_U8, CT_I8), CT_I16);
    CHECK_INT_EQ(ct_promote_types(CT_F16, CT_BF16), CT_F32);
    CHECK_INT_EQ(ct_promote_types(CT_I64, CT_F16), CT_F16);
    CHECK_INT_EQ(ct_promote_types(CT_BOOL, CT_I32), CT_I32);
    ct_tensor *i = ct_ones(CT_SHAPE(2), .dtype = CT_I64);
    ct_tensor *u = ct_ones(CT_SHAPE(2), .dtype = CT_U8);
    CHECK_INT_EQ(ct_dtype_of(ct_add(i, ct_ones(CT_SHAPE(2)))), CT_F32);
    CHECK_INT_EQ(ct_dtype_of(ct_mul_scalar(i, 2)), CT_I64);
    CHECK_INT_EQ(ct_dtype_of(ct_mul_scalar(i, 2.5)), CT_F32);
    CHECK_INT_EQ(ct_dtype_of(ct_add(u, ct_scalar_tensor(300, .dtype = CT_I64))), CT_U8);
    CHECK_INT_EQ(ct_dtype_of(ct_add(i, ct_scalar_tensor(1.5, .dtype = CT_F64))), CT_F64);
    CHECK_INT_EQ(ct_dtype_of(ct_div(i, i)), CT_F32);
    CHECK_VALUES(ct_div_mode(ct_tensor_i64(((int64_t[]){7, -7}), CT_SHAPE(2)),
                             ct_tensor_i64(((int64_t[]){2, 2}), CT_SHAPE(2)), CT_ROUND_FLOOR),
                 0, 3, -4);
    CHECK_ERROR(ct_div_mode(i, ct_zeros(CT_SHAPE(2), .dtype = CT_I64), CT_ROUND_TRUNC),
                "ZeroDivisionError");
    ct_tensor *h = ct_ones(CT_SHAPE(2), .dtype = CT_F16);
    CHECK_INT_EQ(ct_dtype_of(ct_add(h, h)), CT_F16);
    CHECK_VALUES(ct_add(h, h), 0, 2, 2);
}

TEST(views_share_storage) {
    ct_tensor *a = ct_tensor_f32(((float[]){1, 2, 3, 4, 5, 6}), CT_SHAPE(2, 3));
    ct_tensor *t = ct_transpose(a, 0, 1);
    CHECK(!ct_is_contiguous(t));
    CHECK_INT_EQ(ct_stride(t, 0), 1);
    CHECK(ct_data_ptr(t) == ct_data_ptr(a));
    ct_tensor *c = ct_contiguous(t);
    CHECK(ct_is_contiguous(c));
    CHECK_VALUES(c, 0, 1, 4, 2, 5, 3, 6);
    ct_fill_(ct_view(a, CT_SHAPE(6)), 9);
    CHECK_VALUES(t, 0, 9, 9, 9, 9, 9, 9);
    CHECK(ct_data_ptr(ct_reshape(a, CT_SHAPE(3, 2))) == ct_data_ptr(a));
    CHECK(ct_data_ptr(ct_reshape(t, CT_SHAPE(6))) != ct_data_ptr(a)); /* must copy */
    CHECK_ERROR(ct_view(t, CT_SHAPE(6)), "view size is not compatible");
    CHECK_ERROR(ct_view(a, CT_SHAPE(4, -1)), "shape '[4, -1]' is invalid for input of size 6");
    ct_tensor *e = ct_expand(ct_ones(CT_SHAPE(3, 1)), CT_SHAPE(2, 3, 4));
    CHECK_INT_EQ(ct_stride(e, 0), 0);
    CHECK_VALUES(ct_sum(e), 0, 24);
}

static int freed;
static void note_free(void *data, void *ctx) {
    (void)ctx;
    freed++;
    free(data);
}

TEST(from_blob_shares_memory_both_ways) {
    float *buf = malloc(4 * sizeof(float));
    for (int i = 0; i < 4; i++) buf[i] = (float)i;
    freed = 0;
    CT_SCOPE {
        ct_tensor *t = ct_from_blob(buf, CT_F32, CT_SHAPE(2, 2), NULL, note_free, NULL);
        ct_mul_scalar_(t, 10);
        CHECK(buf[3] == 30);
        buf[0] = -1;
        CHECK_VALUES(t, 0, -1, 10, 20, 30);
        ct_tensor *v = ct_transpose(t, 0, 1);
        ct_release(ct_retain(v));
        CHECK_INT_EQ(freed, 0);
    }
    CHECK_INT_EQ(freed, 1); /* the last view died */
    float local[3] = {1, 2, 3};
    CT_SCOPE {
        int64_t stride[] = {2};
        ct_tensor *s = ct_from_blob(local, CT_F32, CT_SHAPE(2), stride, NULL, NULL);
        CHECK_VALUES(s, 0, 1, 3);
    }
}

TEST(reading_values_out) {
    ct_tensor *a = ct_tensor_f32(((float[]){1, 2, 3, 4}), CT_SHAPE(2, 2));
    double out[4];
    CHECK(ct_copy_to_buffer(ct_transpose(a, 0, 1), out, CT_F64, sizeof out) == 0);
    CHECK(out[1] == 3 && out[2] == 2);
    CHECK_ERROR(ct_copy_to_buffer(a, out, CT_F64, 8), "too small");
    CHECK(isnan(ct_item(a)));
    CHECK(strstr(ct_last_error(), "a Tensor with 4 elements cannot be converted to Scalar"));
    ct_clear_error();
}

TEST(devices_must_match) {
    ct_tensor *a = ct_ones(CT_SHAPE(2));
    ct_tensor *b = ct_ones(CT_SHAPE(2));
    b->storage->device = CT_CUDA(0); /* white-box: no cuda backend in this build */
    CHECK_ERROR(ct_add(a, b), "Expected all tensors to be on the same device, but found at least "
                              "two devices, cuda:0 and cpu!");
    b->storage->device = CT_CPU;
    CHECK_ERROR(ct_zeros(CT_SHAPE(2), .device = CT_CUDA(0)), "no backend for device cuda:0");
}

TEST(not_implemented_names_op_dtype_and_device) {
    ct_tensor *b = ct_ones(CT_SHAPE(2), .dtype = CT_BOOL);
    /* white-box: an empty dispatch slot */
    CHECK_ERROR(ct_kernel_entry_for(CT_FAMILY_LOOP, CT_OP_exp, CT_CPU, CT_I64),
                "ct_exp: not implemented for int64 on cpu");
    CHECK_ERROR(ct_sub(b, b), "Subtraction, the `-` operator, with two bool tensors");
}

TEST(thread_count_does_not_change_results) {
    ct_tensor *x = ct_full(CT_SHAPE(1 << 20), 0.1);
    ct_set_num_threads(1);
    double one = ct_item(ct_sum(ct_mul(x, x)));
    ct_set_num_threads(2);
    double two = ct_item(ct_sum(ct_mul(x, x)));
    CHECK(one == two);
}
