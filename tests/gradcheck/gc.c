#include <stdlib.h>
#include <string.h>

#include "gc.h"
#include "ops/op_table.h"

static bool covered[CT_NUM_OPS];
static uint64_t lcg = 0x9e3779b97f4a7c15ull;

static double next_unit(void) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg >> 11) / 9007199254740992.0;
}

void gc_cover(const char *op) {
    for (int i = 0; i < CT_NUM_OPS; i++)
        if (!strcmp(ct_ops[i].name, op)) {
            covered[i] = true;
            return;
        }
    fprintf(stderr, "gc_cover: no op named \"%s\" in ops.def\n", op);
    abort();
}

static bool all_contiguous(int n, ct_tensor *const *t) {
    for (int i = 0; i < n; i++)
        if (!ct_is_contiguous(t[i])) return false;
    return true;
}

/* The case on the meta device: f on meta copies of the inputs gives the cpu's shape
 * and dtype (and strides, for contiguous inputs), and its backward gives each input a
 * gradient of the input's shape, all without allocating data.  A case whose function
 * brings cpu tensors of its own (targets, indices in ctx) cannot run on meta: it is
 * counted, not checked. */
static int meta_checked, meta_skipped;

static void meta_check(const char *file, int line, const char *op, ct_gradcheck_fn f, int n,
                       ct_tensor *const *inputs, void *ctx) {
    ct_shape want;
    ct_dtype dtype = CT_DTYPE_UNSET;
    int64_t strides[CT_MAX_DIMS];
    CT_SCOPE {
        ct_tensor *y = f(inputs, ctx);
        if (y) {
            want = ct_shape_of(y);
            dtype = ct_dtype_of(y);
            for (int d = 0; d < want.ndim; d++) strides[d] = ct_stride(y, d);
        }
    }
    if (dtype == CT_DTYPE_UNSET) return;
    bool same_strides = all_contiguous(n, inputs);
    int64_t before = ct_memory_allocated(CT_CPU);
    CT_SCOPE {
        ct_tensor *m[16];
        for (int i = 0; i < n && i < 16; i++) {
            m[i] = ct_detach(ct_to(inputs[i], .device = CT_META));
            ct_set_requires_grad(m[i], ct_requires_grad(inputs[i]));
        }
        ct_clear_error();
        ct_tensor *y = f(m, ctx);
        if ((!y || !ct_is_meta(y)) && ct_last_error() &&
            strstr(ct_last_error(), "on the same device")) {
            meta_skipped++;
            break;
        }
        meta_checked++;
        if (!y || !ct_is_meta(y)) {
            ct_test_fail(file, line, "%s on meta: %s", op, y ? "result not on meta" : ct_last_error());
            break;
        }
        ct_shape got = ct_shape_of(y);
        bool ok = got.ndim == want.ndim && ct_dtype_of(y) == dtype;
        for (int d = 0; ok && d < got.ndim; d++)
            ok = got.d[d] == want.d[d] && (!same_strides || ct_stride(y, d) == strides[d]);
        if (!ok) {
            char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
            ct_test_fail(file, line, "%s on meta: %s %s, on cpu %s %s", op,
                         ct_dtype_name(ct_dtype_of(y)), ct_shape_str(got.ndim, got.d, a),
                         ct_dtype_name(dtype), ct_shape_str(want.ndim, want.d, b));
            break;
        }
        if (!ct_requires_grad(y)) break;
        if (ct_backward(ct_sum(y)) != 0) {
            ct_test_fail(file, line, "%s: backward on meta: %s", op, ct_last_error());
            break;
        }
        for (int i = 0; i < n && i < 16; i++) {
            ct_tensor *g = ct_grad(m[i]);
            if (!g) continue; /* an input y does not depend on */
            ct_shape gs = ct_shape_of(g), is = ct_shape_of(m[i]);
            bool same = ct_is_meta(g) && gs.ndim == is.ndim;
            for (int d = 0; same && d < gs.ndim; d++) same = gs.d[d] == is.d[d];
            if (!same) ct_test_fail(file, line, "%s: the meta gradient of input %d", op, i);
        }
    }
    if (ct_memory_allocated(CT_CPU) != before || ct_memory_allocated(CT_META) != 0)
        ct_test_fail(file, line, "%s on meta: allocated memory (%lld cpu bytes left)", op,
                     (long long)(ct_memory_allocated(CT_CPU) - before));
}

void gc_run(const char *file, int line, const char *op, ct_gradcheck_fn f, int n,
            ct_tensor *const *inputs, void *ctx, bool second_order) {
    gc_cover(op);
    ct_clear_error();
    meta_check(file, line, op, f, n, inputs, ctx);
    ct_clear_error();
    if (ct_gradcheck(f, n, inputs, ctx) != 0) {
        ct_test_fail(file, line, "gradcheck of %s: %s", op, ct_last_error());
        return;
    }
    if (second_order && ct_gradgradcheck(f, n, inputs, ctx) != 0)
        ct_test_fail(file, line, "gradgradcheck of %s: %s", op, ct_last_error());
}

ct_tensor *gc_rand_range(ct_shape shape, double lo, double hi) {
    ct_tensor *t = ct_empty(shape, .dtype = CT_F64);
    double *p = ct_data_ptr(t);
    for (int64_t i = 0; i < ct_numel(t); i++) p[i] = lo + (hi - lo) * next_unit();
    ct_set_requires_grad(t, true);
    return t;
}

ct_tensor *gc_rand(ct_shape shape) { return gc_rand_range(shape, -1, 1); }

static void free_buffer(void *data, void *ctx) {
    (void)ctx;
    free(data);
}

ct_tensor *gc_noncontig_range(ct_shape shape, double lo, double hi) {
    int64_t numel = 1, strides[CT_MAX_DIMS], s = 2;
    for (int d = 0; d < shape.ndim; d++) numel *= shape.d[d];
    for (int d = shape.ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape.d[d] > 1 ? shape.d[d] : 1;
    }
    double *buf = calloc((size_t)(2 * numel + 1), sizeof(double));
    for (int64_t i = 0; i < 2 * numel; i++) buf[i] = lo + (hi - lo) * next_unit();
    ct_tensor *t = ct_from_blob(buf, CT_F64, shape, strides, free_buffer, NULL);
    ct_set_requires_grad(t, true);
    return t;
}

ct_tensor *gc_noncontig(ct_shape shape) { return gc_noncontig_range(shape, -1, 1); }

/* Called by the harness after the last test: every differentiable op needs a case. */
int ct_test_finish(void) {
    int missing = 0;
    printf("meta device: %d cases checked, %d with cpu tensors of their own skipped\n",
           meta_checked, meta_skipped);
    for (int i = 0; i < CT_NUM_OPS; i++) {
        if (!ct_ops[i].backward || covered[i] || i == CT_OP_accumulate_grad) continue;
        fprintf(stderr, "differentiable op \"%s\" (%s) has no gradcheck case\n", ct_ops[i].name,
                ct_ops[i].grad_name);
        missing++;
    }
    return missing;
}
