#include <stdlib.h>

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

void gc_run(const char *file, int line, const char *op, ct_gradcheck_fn f, int n,
            ct_tensor *const *inputs, void *ctx, bool second_order) {
    gc_cover(op);
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
    for (int i = 0; i < CT_NUM_OPS; i++) {
        if (!ct_ops[i].backward || covered[i] || i == CT_OP_accumulate_grad) continue;
        fprintf(stderr, "differentiable op \"%s\" (%s) has no gradcheck case\n", ct_ops[i].name,
                ct_ops[i].grad_name);
        missing++;
    }
    return missing;
}
