/* ctorch/gradcheck.h — check analytic gradients against finite differences.
 *
 *     static ct_tensor *f(ct_tensor *const *in, void *ctx) { return ct_mul(in[0], in[1]); }
 *     ...
 *     ct_tensor *in[] = {a, b};   // float64, requires_grad on those to check
 *     if (ct_gradcheck(f, 2, in, NULL) != 0) puts(ct_last_error());
 *
 * Like torch.autograd.gradcheck: central differences on every input element,
 * compared with the Jacobian that backward computes row by row. */
#ifndef CTORCH_GRADCHECK_H
#define CTORCH_GRADCHECK_H

#include "tensor.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* The function checked: its output from the inputs. */
typedef ct_tensor *(*ct_gradcheck_fn)(ct_tensor *const *inputs, void *ctx);
/* Options of ct_gradcheck and ct_gradgradcheck. */
typedef struct {
    double eps;  /* default 1e-6 */
    double atol; /* default 1e-5 */
    double rtol; /* default 1e-3 */
} ct_gradcheck_options;

/* 0 when they agree; -1 with an error naming the output/input pair and the first
 * mismatching entry. */
int ct_gradcheck_with(ct_gradcheck_fn f, int n, ct_tensor *const *inputs, void *ctx,
                      ct_gradcheck_options o);
/* Second derivatives: gradcheck of the gradients (computed with create_graph) with
 * respect to the inputs and to a random grad_output. */
int ct_gradgradcheck_with(ct_gradcheck_fn f, int n, ct_tensor *const *inputs, void *ctx,
                          ct_gradcheck_options o);
#define ct_gradcheck(f, n, inputs, ctx, ...) \
    CT_AT(ct_gradcheck_with(f, n, inputs, ctx, CT_OPTIONS(ct_gradcheck_options, __VA_ARGS__)))
#define ct_gradgradcheck(f, n, inputs, ctx, ...) \
    CT_AT(ct_gradgradcheck_with(f, n, inputs, ctx, CT_OPTIONS(ct_gradcheck_options, __VA_ARGS__)))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
