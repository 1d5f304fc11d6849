/* The meta device: tensors with shape, dtype and strides but no memory.  Ops and module
 * forwards on meta give the cpu's output shapes, dtypes and strides without allocating
 * data; what needs the values fails with a clear error.  (Every op is also run on
 * meta, with its backward, by each of its samples: tests/opinfo.def, tests/gradcheck/gc.c.) */
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"
#include "core/backend.h"
#include "core/error.h"
#include "ops/dispatch.h"

/* Shape, dtype and strides of a against b; a on meta, b on the cpu. */
static bool same_geometry(const ct_tensor *a, const ct_tensor *b) {
    if (!a || !b || !ct_is_meta(a) || ct_is_meta(b) || ct_ndim(a) != ct_ndim(b) ||
        ct_dtype_of(a) != ct_dtype_of(b))
        return false;
    for (int d = 0; d < ct_ndim(a); d++)
        if (ct_size(a, d) != ct_size(b, d) || ct_stride(a, d) != ct_stride(b, d)) return false;
    return true;
}

static bool has_shape(const ct_tensor *t, ct_shape s) {
    if (!t || ct_ndim(t) != s.ndim) return false;
    for (int d = 0; d < s.ndim; d++)
        if (ct_size(t, d) != s.d[d]) return false;
    return true;
}

TEST(meta_tensors_have_geometry_and_no_memory) {
    CHECK(!ct_is_meta(ct_zeros(CT_SHAPE(1))) && !ct_is_meta(NULL));
    int64_t before = ct_memory_allocated(CT_CPU);
    ct_tensor *t = ct_empty(CT_SHAPE(1 << 20, 64), .device = CT_META);
    CHECK(t != NULL && ct_is_meta(t));
    CHECK(ct_device_eq(ct_device_of(t), CT_META));
    CHECK_INT_EQ(ct_size(t, 0), 1 << 20);
    CHECK_INT_EQ(ct_stride(t, 0), 64);
    CHECK_INT_EQ(ct_dtype_of(t), CT_F32);
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU), before);
    CHECK_INT_EQ(ct_memory_allocated(CT_META), 0);
    CHECK_INT_EQ(ct_max_memory_allocated(CT_META), 0);
    char buf[16];
    CHECK_STR_EQ(ct_device_str(CT_META, buf), "meta");
    const ct_backend *b = ct_backend_of("test", CT_META);
    CHECK(b != NULL && b->no_memory);
    CHECK_STR_EQ(b->name, "meta");
}

TEST(meta_takes_every_cpu_kernel_slot) {
    int slots = 0;
    for (int op = 0; op < CT_NUM_OPS; op++) {
        ct_kernel_family f = ct_op_family[op];
        if (f == CT_FAMILY_NONE) continue;
        for (int d = 1; d < CT_NUM_DTYPES; d++) {
            bool cpu = ct_kernel_entry_for(f, (ct_op_id)op, CT_CPU, (ct_dtype)d) != NULL;
            const ct_kernel_entry *e = ct_kernel_entry_for(f, (ct_op_id)op, CT_META, (ct_dtype)d);
            CHECK((e != NULL) == cpu);
            if (e) CHECK_INT_EQ(e->family, f);
            slots += cpu;
        }
    }
    CHECK(slots > 300);
    ct_clear_error();
}

TEST(meta_tensors_print_as_pytorch) {
    /* torch.empty(2, 3, device='meta') etc., printed by PyTorch 1.13 */
    char *s = ct_to_string(ct_empty(CT_SHAPE(2, 3), .device = CT_META));
    CHECK_STR_EQ(s, "tensor(..., device='meta', size=(2, 3))");
    free(s);
    s = ct_to_string(ct_empty(CT_SHAPE(2, 3), .dtype = CT_I64, .device = CT_META));
    CHECK_STR_EQ(s, "tensor(..., device='meta', size=(2, 3), dtype=torch.int64)");
    free(s);
    s = ct_to_string(ct_empty(CT_SHAPE(), .device = CT_META));
    CHECK_STR_EQ(s, "tensor(..., device='meta', size=())");
    free(s);
    s = ct_to_string(ct_empty(CT_SHAPE(4), .dtype = CT_F16, .device = CT_META));
    CHECK_STR_EQ(s, "tensor(..., device='meta', size=(4,), dtype=torch.float16)");
    free(s);
    s = ct_to_string(ct_empty(CT_SHAPE(2, 3), .device = CT_META, .requires_grad = true));
    CHECK_STR_EQ(s, "tensor(..., device='meta', size=(2, 3), requires_grad=True)");
    free(s);
    ct_tensor *x = ct_empty(CT_SHAPE(2, 3), .device = CT_META, .requires_grad = true);
    s = ct_to_string(ct_mul_scalar(x, 2));
    CHECK_STR_EQ(s, "tensor(..., device='meta', size=(2, 3), grad_fn=<MulBackward0>)");
    free(s);
}

TEST(to_meta_and_back) {
    ct_tensor *c = ct_transpose(ct_arange(6, .dtype = CT_F64), 0, 0);
    ct_tensor *m = ct_to(c, .device = CT_META);
    CHECK(m && ct_is_meta(m) && ct_dtype_of(m) == CT_F64 && ct_size(m, 0) == 6);
    CHECK(ct_to(m, .device = CT_META) == m);
    CHECK(ct_is_meta(ct_to(m, .dtype = CT_F32)));
    CHECK_ERROR(ct_to(m, .device = CT_CPU), "ct_to: cannot copy out of a meta tensor to cpu");
    /* PyTorch 1.13: "Could not run 'aten::_local_scalar_dense' with arguments from the
     * 'Meta' backend" (2.x: "Tensor.item() cannot be called on meta tensors") */
    CHECK_ERROR(ct_item(ct_sum(m)) == ct_item(ct_sum(m)) ? 1 : 0,
                "ct_item: cannot be called on meta tensors: it needs the tensor's values, "
                "and a meta tensor has no data");
    CHECK_ERROR(ct_item_int(ct_sum(m)) ? 1 : 0, "ct_item_int: cannot be called on meta tensors");
    double out[6];
    CHECK_ERROR(ct_copy_to_buffer(m, out, CT_F64, sizeof out) == 0 ? 1 : 0,
                "ct_copy_to_buffer: tensor is not on the cpu");
    CHECK_ERROR(ct_add(m, c), "Expected all tensors to be on the same device");
    /* a number (a 0-d cpu "wrapped number") goes with a tensor on any device */
    CHECK(ct_is_meta(ct_add_scalar(m, 1)) && ct_is_meta(ct_clamp(m, .min = CT_SOME(0))));
}

TEST(factories_on_meta) {
    int64_t before = ct_memory_allocated(CT_CPU);
    CT_SCOPE {
        ct_tensor_options o = {.device = CT_META};
        ct_tensor *made[] = {
            ct_zeros_with(CT_SHAPE(3, 4), o),        ct_ones(CT_SHAPE(3, 4), .device = CT_META),
            ct_full(CT_SHAPE(3, 4), 2, .device = CT_META),
            ct_eye(5, .device = CT_META),
            ct_arange(10, .device = CT_META),
            ct_linspace(0, 1, 7, .device = CT_META),
            ct_randn(CT_SHAPE(3, 4), .device = CT_META),
            ct_randint(0, 9, CT_SHAPE(3, 4), .device = CT_META),
            ct_zeros_like(ct_empty(CT_SHAPE(2), .dtype = CT_I32, .device = CT_META)),
            ct_tensor_from(((int32_t[]){1, 2}), CT_I32, CT_SHAPE(2), .device = CT_META),
        };
        ct_tensor *cpu[] = {ct_zeros(CT_SHAPE(3, 4)),      ct_ones(CT_SHAPE(3, 4)),
                            ct_full(CT_SHAPE(3, 4), 2),    ct_eye(5),
                            ct_arange(10),                 ct_linspace(0, 1, 7),
                            ct_randn(CT_SHAPE(3, 4)),      ct_randint(0, 9, CT_SHAPE(3, 4)),
                            ct_zeros(CT_SHAPE(2), .dtype = CT_I32),
                            ct_tensor_from(((int32_t[]){1, 2}), CT_I32, CT_SHAPE(2))};
        for (size_t i = 0; i < sizeof made / sizeof *made; i++) {
            if (!same_geometry(made[i], cpu[i])) ct_test_fail(__FILE__, __LINE__, "factory %zu", i);
        }
    }
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU), before);
}

TEST(data_dependent_ops_fail_clearly) {
    ct_tensor *m = ct_empty(CT_SHAPE(3, 4), .device = CT_META);
    ct_tensor *mask = ct_empty(CT_SHAPE(3, 4), .dtype = CT_BOOL, .device = CT_META);
    /* PyTorch 1.13 raises for each: "Could not run 'aten::nonzero' (masked_select,
     * multinomial) with arguments from the 'Meta' backend", and for one_hot of a
     * non-empty input, classes given or not, its own message */
    CHECK_ERROR(ct_nonzero(m), "ct_nonzero: cannot be called on meta tensors: it needs the "
                               "tensor's values, and a meta tensor has no data");
    CHECK_ERROR(ct_masked_select(m, mask), "ct_masked_select: cannot be called on meta tensors");
    CHECK_ERROR(ct_index(m, 1, &mask), "ct_nonzero: cannot be called on meta tensors");
    ct_tensor *mi = ct_empty(CT_SHAPE(3), .dtype = CT_I64, .device = CT_META);
    CHECK_ERROR(ct_one_hot(mi, -1),
                "ct_one_hot: Can not infer total number of classes from meta tensor.");
    CHECK_ERROR(ct_one_hot(mi, 5),
                "ct_one_hot: Can not infer total number of classes from meta tensor.");
    CHECK_ERROR(ct_multinomial(ct_empty(CT_SHAPE(4), .device = CT_META), 2),
                "ct_multinomial: cannot be called on meta tensors");
    /* the errors say of what kind they are, for callers that act on it (gradcheck) */
    CHECK(ct_nonzero(m) == NULL && ct_last_error_kind() == CT_ERR_NO_VALUES);
    CHECK(ct_add(m, ct_ones(CT_SHAPE(3, 4))) == NULL &&
          ct_last_error_kind() == CT_ERR_DEVICE_MISMATCH);
    CHECK(ct_view(m, CT_SHAPE(5)) == NULL && ct_last_error_kind() == CT_ERR_OTHER);
    ct_clear_error();
    CHECK(ct_last_error_kind() == CT_ERR_OTHER);
    /* a data-dependent shape is refused before any memory is taken */
    int64_t before = ct_memory_allocated(CT_CPU);
    CHECK(ct_nonzero(m) == NULL && ct_memory_allocated(CT_CPU) == before);
    /* checks of the values are skipped, as in PyTorch: no values, no error */
    ct_tensor *idx = ct_empty(CT_SHAPE(5), .dtype = CT_I64, .device = CT_META);
    CHECK(has_shape(ct_index_select(m, 1, idx), CT_SHAPE(3, 5)));
    ct_tensor *zi = ct_zeros(CT_SHAPE(3), .dtype = CT_I64, .device = CT_META);
    CHECK(has_shape(ct_div_mode(zi, zi, CT_ROUND_TRUNC), CT_SHAPE(3)));
    CHECK(has_shape(ct_cross_entropy(m, ct_empty(CT_SHAPE(3), .dtype = CT_I64, .device = CT_META)),
                    CT_SHAPE()));
    CHECK(has_shape(ct_index(m, 1, &idx), CT_SHAPE(5, 4)));
    CHECK(has_shape(ct_embedding(ct_empty(CT_SHAPE(2), .dtype = CT_I64, .device = CT_META), m),
                    CT_SHAPE(2, 4)));
    /* trunc_normal_ draws again where values fall outside [a, b]; meta has none */
    CHECK(ct_init_trunc_normal_(ct_empty(CT_SHAPE(3), .device = CT_META), 0, 1, -2, 2) != NULL);
}


TEST(demo_cnn_forward_and_backward_on_meta) {
    ct_module *net = ct_test_demo_cnn();
    ct_tensor *y_cpu = ct_forward(net, ct_randn(CT_SHAPE(2, 1, 28, 28)));
    CHECK(has_shape(y_cpu, CT_SHAPE(2, 10)));
    int64_t params = ct_module_num_parameters(net, false);
    CHECK_INT_EQ(ct_module_num_bytes(net), params * 4);
    CHECK_INT_EQ(ct_module_to(net, .device = CT_META), 0);
    ct_tensor *ps[16];
    int n = ct_parameters(net, ps, 16);
    for (int k = 0; k < n; k++) CHECK(ct_is_meta(ps[k]));
    CHECK_INT_EQ(ct_module_num_bytes(net), params * 4); /* the size estimate, unchanged */
    int64_t before = ct_memory_allocated(CT_CPU);
    CT_SCOPE {
        ct_tensor *x = ct_empty(CT_SHAPE(512, 1, 28, 28), .device = CT_META);
        ct_tensor *y = ct_forward(net, x);
        CHECK(ct_is_meta(y) && has_shape(y, CT_SHAPE(512, 10)) && ct_dtype_of(y) == CT_F32);
        ct_tensor *t = ct_empty(CT_SHAPE(512), .dtype = CT_I64, .device = CT_META);
        CHECK_INT_EQ(ct_backward(ct_cross_entropy(y, t)), 0);
        for (int k = 0; k < n; k++) {
            ct_tensor *g = ct_grad(ps[k]);
            CHECK(g && ct_is_meta(g) && has_shape(g, ct_shape_of(ps[k])));
        }
    }
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU), before);
    CHECK_INT_EQ(ct_memory_allocated(CT_META), 0);
}

TEST(linear_lstm_attention_on_meta) {
    ct_module *lin = ct_nn_linear(8, 3);
    ct_module *lstm = ct_lstm(8, 16, .num_layers = 2, .batch_first = true);
    ct_module *mha = ct_nn_multihead_attention(8, 2, .batch_first = true);
    ct_tensor *seq = ct_randn(CT_SHAPE(4, 5, 8));
    ct_tensor *want_lin = ct_forward(lin, seq);
    ct_tensor *want_lstm[3];
    CHECK_INT_EQ(ct_forward_multi(lstm, 1, &seq, want_lstm, 3), 3);
    ct_attention_result want_att = ct_attention(mha, seq, seq, seq);
    CHECK_INT_EQ(ct_module_to(lin, .device = CT_META), 0);
    CHECK_INT_EQ(ct_module_to(lstm, .device = CT_META), 0);
    CHECK_INT_EQ(ct_module_to(mha, .device = CT_META), 0);
    ct_tensor *ms = ct_to(seq, .device = CT_META);
    int64_t before = ct_memory_allocated(CT_CPU);
    CT_SCOPE {
        CHECK(same_geometry(ct_forward(lin, ms), want_lin));
        ct_tensor *got[3];
        CHECK_INT_EQ(ct_forward_multi(lstm, 1, &ms, got, 3), 3);
        for (int k = 0; k < 3; k++) CHECK(same_geometry(got[k], want_lstm[k]));
        ct_attention_result r = ct_attention(mha, ms, ms, ms);
        CHECK(same_geometry(r.output, want_att.output));
        CHECK(same_geometry(r.weights, want_att.weights));
        CHECK_INT_EQ(ct_backward(ct_add(ct_sum(r.output), ct_sum(got[0]))), 0);
        ct_tensor *ps[16];
        int n = ct_parameters(lstm, ps, 16);
        for (int k = 0; k < n; k++) CHECK(ct_grad(ps[k]) && ct_is_meta(ct_grad(ps[k])));
    }
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU), before);
}

/* Fills reach the meta backend's fill, which has no data to set: the placeholder
 * storage, whose pages may not be touched, never is. */
TEST(fills_on_meta_touch_no_memory) {
    const ct_backend *b = ct_backend_of("test", CT_META);
    CHECK(b->fill != NULL);
    int64_t before = ct_memory_allocated(CT_CPU);
    CT_SCOPE {
        ct_tensor *t = ct_empty(CT_SHAPE(4, 5), .device = CT_META);
        float v = 3;
        b->fill(ct_select(t, 1, 2), &v);
        CHECK(ct_fill_(t, 2) == t);
        CHECK(ct_is_meta(ct_zeros(CT_SHAPE(4, 5), .device = CT_META)));
        CHECK(ct_is_meta(ct_eye(4, .device = CT_META)));
        /* backwards that start from zeros: as_strided's (strided_scatter) and pad's */
        ct_tensor *x = ct_empty(CT_SHAPE(1, 2, 4, 4), .device = CT_META, .requires_grad = true);
        ct_tensor *y = ct_add(ct_sum(ct_as_strided(x, CT_SHAPE(3, 3), CT_SHAPE(2, 1), 1)),
                              ct_sum(ct_pad(x, CT_DIMS(1, 1, 1, 1), .mode = CT_PAD_REFLECT)));
        CHECK(ct_backward(y) == 0);
        CHECK(ct_is_meta(ct_grad(x)) && has_shape(ct_grad(x), CT_SHAPE(1, 2, 4, 4)));
    }
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU), before);
}
