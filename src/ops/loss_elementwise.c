/* mse_loss, smooth_l1_loss and huber_loss as ops (see Note [Elementwise loss ops]):
 * input and target broadcast as in PyTorch (which warns when their sizes differ).
 * The backward formulas are PyTorch's, including its choices at the kinks: 0 at
 * input == target for mse and huber, -1 there for smooth_l1 with beta 0. */
#include "ops/loss_impl.h"

static const ct_pw_spec MSE = {CT_OP_mse_loss, CT_PW_PROMOTE, 0};
static const ct_pw_spec SMOOTH_L1 = {CT_OP_smooth_l1_loss, CT_PW_PROMOTE, 0};
static const ct_pw_spec HUBER = {CT_OP_huber_loss, CT_PW_PROMOTE, 0};

/* The forward of the three ops: p is beta or delta (node args[1]). */
static ct_tensor *regression_loss(const char *fn, const ct_pw_spec *spec, ct_tensor *x,
                                  ct_tensor *y, ct_reduction red, double p) {
    if (!x || !y) return NULL;
    ct_tensor *in[2] = {x, y};
    ct_pw_args a = {.a = p, .has_a = true};
    double numel = 0;
    ct_tensor *l = ct_pw_loss_forward(fn, spec, 2, in, &a, NULL, red, &numel);
    if (!l) return NULL;
    ct_node *n = ct_record1(spec->op, l, 2, in);
    if (n) {
        ct_node_save(n, 0, x, false);
        ct_node_save(n, 1, y, false);
        ct_pw_loss_save(n, NULL, red, numel);
        n->args[1] = p;
    }
    return l;
}

ct_tensor *(ct_mse_loss_with)(ct_tensor *x, ct_tensor *y, ct_loss_options o) {
    return regression_loss("mse_loss", &MSE, x, y, o.reduction, 0);
}

ct_tensor *(ct_smooth_l1_loss_with)(ct_tensor *x, ct_tensor *y, ct_smooth_l1_options o) {
    if (o.beta < 0) {
        ct_error("ct_smooth_l1_loss: smooth_l1_loss does not support negative values for beta.");
        return NULL;
    }
    return regression_loss("smooth_l1_loss", &SMOOTH_L1, x, y, o.reduction, o.beta);
}

ct_tensor *(ct_huber_loss_with)(ct_tensor *x, ct_tensor *y, ct_huber_options o) {
    if (!(o.delta > 0)) {
        ct_error("ct_huber_loss: huber_loss does not support non-positive values for delta.");
        return NULL;
    }
    return regression_loss("huber_loss", &HUBER, x, y, o.reduction, o.delta);
}

/* Calls f(d, p) with d = input - target, and hands d-derivative * scaled gradient to
 * input and its negation to target. */
static bool regression_backward(ct_node *n, ct_tensor **go, ct_tensor **gi,
                                ct_tensor *(*f)(ct_tensor *d, double p)) {
    if (!go[0]) return true;
    ct_tensor *x = ct_node_saved(n, 0), *y = ct_node_saved(n, 1);
    ct_tensor *g = x && y ? ct_pw_loss_grad(n, go[0]) : NULL;
    ct_tensor *dx = g ? ct_mul(f(ct_sub(x, y), n->args[1]), g) : NULL;
    if (!dx) return false;
    if (n->needs_grad[0]) gi[0] = dx;
    if (n->needs_grad[1] && !(gi[1] = ct_neg(dx))) return false;
    return true;
}

/* 2 (x - y) */
static ct_tensor *mse_grad(ct_tensor *d, double p) {
    (void)p;
    return ct_mul_scalar(d, 2);
}
/* d / beta inside [-beta, beta], its sign outside; beta 0: 1 where d > 0, else -1. */
static ct_tensor *smooth_l1_grad(ct_tensor *d, double beta) {
    if (beta == 0) return ct_masked_fill(ct_full_like(d, -1), ct_gt_scalar(d, 0), 1);
    return ct_div_scalar(ct_clamp(d, .min = CT_SOME(-beta), .max = CT_SOME(beta)), beta);
}
/* d inside [-delta, delta], delta times its sign outside. */
static ct_tensor *huber_grad(ct_tensor *d, double delta) {
    return ct_clamp(d, .min = CT_SOME(-delta), .max = CT_SOME(delta));
}

bool mse_loss_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return regression_backward(n, go, gi, mse_grad);
}
bool smooth_l1_loss_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return regression_backward(n, go, gi, smooth_l1_grad);
}
bool huber_loss_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return regression_backward(n, go, gi, huber_grad);
}
