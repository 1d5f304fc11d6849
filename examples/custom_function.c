/* Custom autograd functions in C: an exp with its own backward, and a
 * straight-through clamp (the forward clamps, the backward lets gradients through, as
 * in quantization-aware training).  Exits non-zero if a value is wrong.
 *
 *     build/examples/custom_function
 */
#include <math.h>
#include <stdio.h>

#include "ctorch.h"

static int wrong;

static void expect(const char *what, ct_tensor *t, const double *want) {
    double v[4];
    if (!t || ct_numel(t) != 4 || ct_copy_to_buffer(t, v, CT_F64, sizeof v) != 0) {
        printf("%s: missing\n", what);
        wrong++;
        return;
    }
    printf("%-22s [%8.4f, %8.4f, %8.4f, %8.4f]\n", what, v[0], v[1], v[2], v[3]);
    for (int i = 0; i < 4; i++)
        if (fabs(v[i] - want[i]) > 1e-5 * (1 + fabs(want[i]))) {
            fprintf(stderr, "%s[%d] = %g, expected %g\n", what, i, v[i], want[i]);
            wrong++;
        }
}

/* ---- MyExp: y = exp(x), dy/dx = y (saved output) ------------------------ */

static ct_tensor *my_exp_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    (void)n;
    ct_tensor *y = ct_exp(in[0]); /* forward runs in no-grad mode */
    ct_ctx_save_for_backward(ctx, 1, &y);
    return y;
}

static int my_exp_backward(ct_function_ctx *ctx, ct_tensor *grad_out, ct_tensor **grad_in) {
    grad_in[0] = ct_mul(grad_out, ct_ctx_saved(ctx, 0));
    return grad_in[0] ? 0 : -1;
}

static const ct_function MyExp = {"MyExp", my_exp_forward, my_exp_backward, NULL};

/* ---- a straight-through clamp to [lo, hi] (the bounds are the function's data) -- */

typedef struct { double lo, hi; } bounds;

static ct_tensor *clamp_forward(ct_function_ctx *ctx, int n, ct_tensor *const *in) {
    (void)n;
    const bounds *b = ct_ctx_data(ctx);
    ct_tensor *y = ct_contiguous(ct_to(in[0], .dtype = CT_F32, .copy = true)); /* a new float32 */
    float *p = ct_data_ptr(y);
    for (int64_t i = 0; i < ct_numel(y); i++)
        p[i] = p[i] < b->lo ? (float)b->lo : p[i] > b->hi ? (float)b->hi : p[i];
    return y;
}

static int clamp_backward(ct_function_ctx *ctx, ct_tensor *grad_out, ct_tensor **grad_in) {
    (void)ctx;
    grad_in[0] = grad_out; /* straight through */
    return 0;
}

static bounds unit = {-1, 1};
static const ct_function StraightThroughClamp = {"StraightThroughClamp", clamp_forward,
                                                 clamp_backward, &unit};

int main(void) {
    ct_set_error_handler(ct_abort_on_error);
    float xs[] = {-2, -0.5f, 0.5f, 2};
    double e[4], two_e[4];
    for (int i = 0; i < 4; i++) {
        e[i] = exp(xs[i]);
        two_e[i] = 2 * e[i];
    }
    CT_SCOPE {
        ct_tensor *x = ct_tensor_f32(xs, CT_SHAPE(4), .requires_grad = true);
        ct_tensor *y = ct_function_apply(&MyExp, 1, &x);
        printf("y.grad_fn = %s\n", ct_node_name(ct_grad_fn(y)));
        ct_backward(ct_sum(ct_mul_scalar(y, 2)));
        expect("MyExp(x)", y, e);
        expect("x.grad of sum(2 y)", ct_grad(x), two_e);
        ct_tensor *x2 = ct_tensor_f32(xs, CT_SHAPE(4), .requires_grad = true);
        ct_backward(ct_sum(ct_mul_scalar(ct_exp(x2), 2)));
        expect("same with ct_exp", ct_grad(x2), two_e);
    }
    CT_SCOPE {
        ct_tensor *x = ct_tensor_f32(xs, CT_SHAPE(4), .requires_grad = true);
        ct_tensor *y = ct_function_apply(&StraightThroughClamp, 1, &x);
        printf("y.grad_fn = %s\n", ct_node_name(ct_grad_fn(y)));
        ct_backward(ct_sum(ct_mul(y, y))); /* d/dx sum(y^2) = 2 y, passed straight through */
        expect("clamp(x, -1, 1)", y, (double[]){-1, -0.5, 0.5, 1});
        expect("x.grad", ct_grad(x), (double[]){-2, -1, 1, 2});
    }
    if (wrong) fprintf(stderr, "custom_function: %d wrong values\n", wrong);
    return wrong ? 1 : 0;
}
