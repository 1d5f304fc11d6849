/* Finite-difference checks of backward formulas. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/internal.h"
#include "core/mem.h"

/* Address of the flat (C order) element k of t, whatever its strides. */
static char *element(const ct_tensor *t, int64_t k) {
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (k % t->sizes[d]) * t->strides[d];
        k /= t->sizes[d];
    }
    return ct_tensor_data(t) + off * (int64_t)ct_dtype_size(t->dtype);
}

/* f's output as doubles (numel elements); false on error. */
static bool eval_flat(ct_gradcheck_fn f, ct_tensor *const *in, void *ctx, double *out, int64_t numel) {
    bool ok = false;
    CT_SCOPE {
        CT_NO_GRAD {
            ct_tensor *y = f(in, ctx);
            ok = y && y->numel == numel &&
                 ct_copy_to_buffer(y, out, CT_F64, sizeof(double) * (size_t)numel) == 0;
            if (y && y->numel != numel) ct_error("gradcheck: the function's output changed size");
        }
    }
    return ok;
}

static double defaulted(double v, double d) { return v > 0 ? v : d; }

/* With constant_ok, an output that does not require grad (it does not depend on the
 * inputs: a gradient formula giving zeros, as sign's) has a zero analytical Jacobian,
 * which the finite differences must confirm (PyTorch's gradgradcheck does this). */
static int check(ct_gradcheck_fn f, int n, ct_tensor *const *inputs, void *ctx,
                 ct_gradcheck_options o, bool constant_ok) {
    double eps = defaulted(o.eps, 1e-6), atol = defaulted(o.atol, 1e-5), rtol = defaulted(o.rtol, 1e-3);
    for (int i = 0; i < n; i++) {
        if (!inputs[i]) return -1;
        if (ct_requires_grad(inputs[i]) && inputs[i]->dtype != CT_F64) {
            ct_error("gradcheck: input %d requires grad but is %s; use float64 inputs", i,
                     ct_dtype_name(inputs[i]->dtype));
            return -1;
        }
    }
    int rc = 0;
    CT_SCOPE {
        ct_tensor *y = f(inputs, ctx);
        if (!y) {
            rc = -1;
            break;
        }
        int64_t m = y->numel;
        double *base = ct_malloc(sizeof(double) * (size_t)(m + 1) * 3);
        if (!base) {
            ct_error("gradcheck: out of memory");
            rc = -1;
            break;
        }
        double *plus = base + m + 1, *minus = plus + m + 1;
        for (int i = 0; i < n && rc == 0; i++) {
            ct_tensor *x = inputs[i];
            if (!ct_requires_grad(x)) continue;
            int64_t nx = x->numel;
            /* Analytic Jacobian, one row (output element) at a time. */
            double *ana = ct_calloc((size_t)(m * nx + 1), sizeof(double));
            if (!ana) {
                ct_error("gradcheck: out of memory");
                rc = -1;
                break;
            }
            bool constant = constant_ok && !ct_requires_grad(y);
            for (int64_t j = 0; j < m && rc == 0 && !constant; j++) {
                CT_SCOPE {
                    ct_tensor *go = ct_zeros_like_with(y, (ct_tensor_options){0});
                    ct_store_f64(element(go, j), go->dtype, 1.0);
                    ct_tensor *g = NULL;
                    if (!ct_requires_grad(y)) {
                        ct_error("gradcheck: the output does not require grad");
                        rc = -1;
                        break;
                    }
                    if (ct_autograd_grad_with(1, &y, 1, &inputs[i], &g,
                                              (ct_grad_options){.grad_outputs = &go,
                                                                .retain_graph = true,
                                                                .allow_unused = true}) != 0) {
                        rc = -1;
                        break;
                    }
                    if (g && (g->numel != nx)) {
                        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
                        ct_error("gradcheck: gradient for input %d has shape %s, expected %s", i,
                                 ct_shape_str(g->ndim, g->sizes, a), ct_shape_str(x->ndim, x->sizes, b));
                        rc = -1;
                        break;
                    }
                    if (g) {
                        for (int64_t k = 0; k < nx; k++)
                            ana[j * nx + k] = ct_load_f64(element(g, k), g->dtype);
                    }
                }
            }
            /* Numerical Jacobian, one column (input element) at a time. */
            for (int64_t k = 0; k < nx && rc == 0; k++) {
                char *p = element(x, k);
                double v = ct_load_f64(p, x->dtype);
                ct_store_f64(p, x->dtype, v + eps);
                bool ok = eval_flat(f, inputs, ctx, plus, m);
                ct_store_f64(p, x->dtype, v - eps);
                ok = ok && eval_flat(f, inputs, ctx, minus, m);
                ct_store_f64(p, x->dtype, v);
                if (!ok) {
                    rc = -1;
                    break;
                }
                for (int64_t j = 0; j < m; j++) {
                    double num = (plus[j] - minus[j]) / (2 * eps), a = ana[j * nx + k];
                    if (fabs(a - num) > atol + rtol * fabs(num) || isnan(a) != isnan(num)) {
                        ct_error("gradcheck: Jacobian mismatch for output 0 with respect to input "
                                 "%d, at output element %lld, input element %lld: numerical "
                                 "%.8g, analytical %.8g", i, (long long)j, (long long)k, num, a);
                        rc = -1;
                        break;
                    }
                }
            }
            free(ana);
        }
        /* A size-0 output still runs backward once, to exercise that path. */
        if (rc == 0 && m == 0 && ct_requires_grad(y)) {
            ct_tensor *g[CT_MAX_DIMS] = {0};
            int k = 0;
            ct_tensor *req[CT_MAX_DIMS];
            for (int i = 0; i < n && k < CT_MAX_DIMS; i++)
                if (ct_requires_grad(inputs[i])) req[k++] = inputs[i];
            ct_tensor *go = ct_zeros_like_with(y, (ct_tensor_options){0});
            rc = ct_autograd_grad_with(1, &y, k, req, g,
                                       (ct_grad_options){.grad_outputs = &go, .allow_unused = true});
        }
        free(base);
    }
    return rc;
}

int ct_gradcheck_with(ct_gradcheck_fn f, int n, ct_tensor *const *inputs, void *ctx,
                      ct_gradcheck_options o) {
    return check(f, n, inputs, ctx, o, false);
}

/* gradgradcheck: for each input i needing grad, check the function
 * (inputs..., v) -> d<f, v>/d input_i, with v a fixed random grad_output. */
typedef struct {
    ct_gradcheck_fn f;
    void *ctx;
    int n, which;
} gg_ctx;

static ct_tensor *grad_of(ct_tensor *const *in, void *p) {
    gg_ctx *c = p;
    ct_tensor *g = NULL;
    /* Gradients need the graph even when called for finite differences. */
    CT_ENABLE_GRAD {
        ct_tensor *y = c->f(in, c->ctx), *v = in[c->n];
        if (y && ct_autograd_grad_with(1, &y, 1, &in[c->which], &g,
                                       (ct_grad_options){.grad_outputs = &v, .create_graph = true,
                                                         .allow_unused = true}) == 0 && !g)
            g = ct_zeros_like_with(in[c->which], (ct_tensor_options){0}); /* unused input */
    }
    return g;
}

int ct_gradgradcheck_with(ct_gradcheck_fn f, int n, ct_tensor *const *inputs, void *ctx,
                          ct_gradcheck_options o) {
    int rc = 0;
    CT_SCOPE {
        ct_tensor *y = f(inputs, ctx);
        if (!y) {
            rc = -1;
            break;
        }
        /* A deterministic, non-trivial grad_output. */
        ct_tensor *v = ct_empty_like_with(y, (ct_tensor_options){.dtype = CT_F64, .requires_grad = true});
        for (int64_t j = 0; j < v->numel; j++) ct_store_f64(element(v, j), CT_F64, 0.5 + 0.25 * (double)(j % 5));
        ct_tensor **all = ct_malloc(sizeof(ct_tensor *) * (size_t)(n + 1));
        if (!all) {
            ct_error("gradgradcheck: out of memory");
            rc = -1;
            break;
        }
        memcpy(all, inputs, sizeof(ct_tensor *) * (size_t)n);
        all[n] = v;
        for (int i = 0; i < n && rc == 0; i++) {
            if (!ct_requires_grad(inputs[i])) continue;
            gg_ctx c = {f, ctx, n, i};
            rc = check(grad_of, n + 1, all, &c, o, true);
        }
        free(all);
    }
    return rc;
}
