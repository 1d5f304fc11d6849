/* Gradcheck cases of the pointwise family: unary math, activations, pow, clamp,
 * maximum/minimum, where, lerp.  Every op gets first and second derivatives on a
 * non-contiguous input, and first derivatives on size-0 and size-1 shapes; binary
 * and ternary ops also broadcast. */
#include "gc.h"

#define F1(name, expr)                                                        \
    static ct_tensor *name(ct_tensor *const *x, void *c) {                    \
        (void)c;                                                              \
        return expr;                                                          \
    }
F1(f_reciprocal, ct_reciprocal(x[0]))
F1(f_expm1, ct_expm1(x[0]))
F1(f_log1p, ct_log1p(x[0]))
F1(f_log2, ct_log2(x[0]))
F1(f_sqrt, ct_sqrt(x[0]))
F1(f_rsqrt, ct_rsqrt(x[0]))
F1(f_abs, ct_abs(x[0]))
F1(f_sign, ct_sign(x[0]))
F1(f_sin, ct_sin(x[0]))
F1(f_cos, ct_cos(x[0]))
F1(f_tanh, ct_tanh(x[0]))
F1(f_sigmoid, ct_sigmoid(x[0]))
F1(f_erf, ct_erf(x[0]))
F1(f_relu, ct_relu(x[0]))
F1(f_relu_, ct_relu_(ct_mul_scalar(x[0], 1)))
F1(f_leaky_relu, ct_leaky_relu(x[0], .negative_slope = CT_SOME(0.2)))
F1(f_elu, ct_elu(x[0], .alpha = CT_SOME(1.5)))
F1(f_gelu, ct_gelu(x[0]))
F1(f_gelu_tanh, ct_gelu(x[0], .approximate = CT_GELU_TANH))
F1(f_silu, ct_silu(x[0]))
F1(f_softplus, ct_softplus(x[0], .beta = CT_SOME(2), .threshold = CT_SOME(1)))
F1(f_hardtanh, ct_hardtanh(x[0], .min_val = CT_SOME(-0.5), .max_val = CT_SOME(0.6)))
F1(f_nan_to_num, ct_nan_to_num(x[0]))
F1(f_pow_scalar, ct_pow_scalar(x[0], 2.5))
F1(f_pow_scalar2, ct_pow_scalar(x[0], 2))
F1(f_pow_scalar0, ct_pow_scalar(x[0], 0))
F1(f_rpow_scalar, ct_rpow_scalar(x[0], 1.7))
F1(f_clamp, ct_clamp(x[0], .min = CT_SOME(-0.5), .max = CT_SOME(0.6)))
F1(f_clamp_min, ct_clamp(x[0], .min = CT_SOME(-0.3)))
F1(f_clamp_max, ct_clamp(x[0], .max = CT_SOME(0.2)))
F1(f_clamp_, ct_clamp_(ct_mul_scalar(x[0], 1), .min = CT_SOME(-0.5), .max = CT_SOME(0.6)))
F1(f_pow, ct_pow(x[0], x[1]))
F1(f_maximum, ct_maximum(x[0], x[1]))
F1(f_minimum, ct_minimum(x[0], x[1]))
F1(f_lerp, ct_lerp(x[0], x[1], 0.3))
F1(f_lerp_hi, ct_lerp(x[0], x[1], 0.8))
F1(f_where, ct_where(ct_gt_scalar(x[0], 0), x[0], x[1]))
F1(f_lerp_tensor, ct_lerp_tensor(x[0], x[1], x[2]))
F1(f_clamp_tensor, ct_clamp_tensor(x[0], x[1], x[2]))
F1(f_clamp_tensor_min, ct_clamp_tensor(x[0], x[1], NULL))
F1(f_clamp_tensor_max, ct_clamp_tensor(x[0], NULL, x[1]))

typedef struct {
    const char *op;
    ct_gradcheck_fn f;
    double lo, hi; /* input range: inside the domain, away from kinks where needed */
} unary_case;

static const unary_case UNARY[] = {
    {"reciprocal", f_reciprocal, 0.5, 2},  {"expm1", f_expm1, -1, 1},
    {"log1p", f_log1p, -0.5, 1},           {"log2", f_log2, 0.3, 2},
    {"sqrt", f_sqrt, 0.3, 2},              {"rsqrt", f_rsqrt, 0.3, 2},
    {"abs", f_abs, -1, 1},                 {"sign", f_sign, -1, 1},
    {"sin", f_sin, -2, 2},                 {"cos", f_cos, -2, 2},
    {"tanh", f_tanh, -2, 2},               {"sigmoid", f_sigmoid, -3, 3},
    {"erf", f_erf, -2, 2},                 {"relu", f_relu, -1, 1},
    {"relu", f_relu_, -1, 1},              {"leaky_relu", f_leaky_relu, -1, 1},
    {"elu", f_elu, -2, 2},                 {"gelu", f_gelu, -3, 3},
    {"gelu", f_gelu_tanh, -3, 3},          {"silu", f_silu, -3, 3},
    {"softplus", f_softplus, -1, 1},       {"hardtanh", f_hardtanh, -1, 1},
    {"nan_to_num", f_nan_to_num, -1, 1},   {"pow_scalar", f_pow_scalar, 0.2, 2},
    {"pow_scalar", f_pow_scalar2, -2, 2},  {"pow_scalar", f_pow_scalar0, -2, 2},
    {"rpow_scalar", f_rpow_scalar, -2, 2}, {"clamp", f_clamp, -1, 1},
    {"clamp", f_clamp_min, -1, 1},         {"clamp", f_clamp_max, -1, 1},
    {"clamp", f_clamp_, -1, 1},
};

TEST(grad_pointwise_unary) {
    for (size_t i = 0; i < sizeof UNARY / sizeof UNARY[0]; i++) {
        const unary_case *u = &UNARY[i];
        CT_SCOPE {
            ct_tensor *nc[] = {gc_noncontig_range(CT_SHAPE(3, 4), u->lo, u->hi)};
            ct_tensor *zero[] = {gc_rand_range(CT_SHAPE(0, 3), u->lo, u->hi)};
            ct_tensor *one[] = {gc_rand_range(CT_SHAPE(1, 1), u->lo, u->hi)};
            /* sign and pow(x, 0): a zero gradient that does not depend on x, which
             * gradgradcheck takes as a zero second derivative (as PyTorch's does). */
            GRADGRADCHECK(u->op, u->f, 1, nc, NULL);
            GRADCHECK(u->op, u->f, 1, zero, NULL);
            GRADCHECK(u->op, u->f, 1, one, NULL);
        }
    }
    /* relu's gradgradcheck differentiates its backward op */
    gc_cover("threshold_backward");
}

/* pow: the base kept positive (log of the base in d/de), broadcast exponent. */
TEST(grad_pointwise_pow) {
    ct_tensor *a[] = {gc_rand_range(CT_SHAPE(2, 3), 0.3, 2), gc_rand_range(CT_SHAPE(3), -2, 2)};
    ct_tensor *b[] = {gc_noncontig_range(CT_SHAPE(2, 1), 0.3, 2), gc_rand_range(CT_SHAPE(1, 4), -2, 2)};
    ct_tensor *z[] = {gc_rand_range(CT_SHAPE(0, 3), 0.3, 2), gc_rand(CT_SHAPE(3))};
    GRADGRADCHECK("pow", f_pow, 2, a, NULL);
    GRADGRADCHECK("pow", f_pow, 2, b, NULL);
    GRADCHECK("pow", f_pow, 2, z, NULL);
}

TEST(grad_pointwise_binary) {
    struct { const char *op; ct_gradcheck_fn f; } cases[] = {
        {"maximum", f_maximum}, {"minimum", f_minimum}, {"lerp", f_lerp},
        {"lerp", f_lerp_hi},    {"where", f_where},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CT_SCOPE {
            ct_tensor *a[] = {gc_rand(CT_SHAPE(2, 3)), gc_rand(CT_SHAPE(2, 3))};
            ct_tensor *b[] = {gc_noncontig(CT_SHAPE(4, 1)), gc_rand(CT_SHAPE(1, 3))};
            ct_tensor *z[] = {gc_rand(CT_SHAPE(0, 3)), gc_rand(CT_SHAPE(1, 3))};
            GRADGRADCHECK(cases[i].op, cases[i].f, 2, a, NULL);
            GRADGRADCHECK(cases[i].op, cases[i].f, 2, b, NULL);
            GRADCHECK(cases[i].op, cases[i].f, 2, z, NULL);
        }
    }
}

/* clamp with tensor bounds: min below max on most elements, above it on some. */
TEST(grad_pointwise_ternary) {
    struct { const char *op; ct_gradcheck_fn f; } cases[] = {
        {"lerp_tensor", f_lerp_tensor},
        {"clamp_tensor", f_clamp_tensor},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CT_SCOPE {
            ct_tensor *a[] = {gc_rand(CT_SHAPE(3, 4)), gc_rand_range(CT_SHAPE(3, 4), -1, 0),
                              gc_rand_range(CT_SHAPE(3, 4), -0.2, 1)};
            ct_tensor *b[] = {gc_noncontig(CT_SHAPE(2, 3)), gc_rand_range(CT_SHAPE(3), -1, 0),
                              gc_rand_range(CT_SHAPE(2, 1), 0, 1)};
            ct_tensor *z[] = {gc_rand(CT_SHAPE(0, 1)), gc_rand(CT_SHAPE(1, 2)), gc_rand(CT_SHAPE(1))};
            GRADGRADCHECK(cases[i].op, cases[i].f, 3, a, NULL);
            GRADGRADCHECK(cases[i].op, cases[i].f, 3, b, NULL);
            GRADCHECK(cases[i].op, cases[i].f, 3, z, NULL);
        }
    }
}

/* clamp with one tensor bound. */
TEST(grad_pointwise_clamp_one_bound) {
    ct_tensor *a[] = {gc_rand(CT_SHAPE(3, 4)), gc_rand_range(CT_SHAPE(4), -0.5, 0.5)};
    ct_tensor *b[] = {gc_noncontig(CT_SHAPE(2, 3)), gc_rand_range(CT_SHAPE(2, 1), -0.5, 0.5)};
    GRADGRADCHECK("clamp_tensor", f_clamp_tensor_min, 2, a, NULL);
    GRADGRADCHECK("clamp_tensor", f_clamp_tensor_max, 2, a, NULL);
    GRADCHECK("clamp_tensor", f_clamp_tensor_min, 2, b, NULL);
    GRADCHECK("clamp_tensor", f_clamp_tensor_max, 2, b, NULL);
}
