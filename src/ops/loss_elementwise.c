/* mse_loss, smooth_l1_loss and huber_loss as ops (see Note [Elementwise loss ops]):
 * input and target broadcast as in PyTorch (which warns when their sizes differ).
 * The backward formulas are PyTorch's, including its choices at the kinks: 0 at
 * input == target for mse and huber, -1 there for smooth_l1 with beta 0 (for the
 * input's gradient and the target's alike). */
#include "ops/loss_impl.h"
#include "ops/options.h"
#include "ops/unary.h"
#include "ops/autocast.h"

/* Saved tensors: the input and the target. */
enum { SV_INPUT, SV_TARGET };

static const ct_pw_spec MSE = {CT_OP_mse_loss, CT_PW_PROMOTE, 0};
static const ct_pw_spec SMOOTH_L1 = {CT_OP_smooth_l1_loss, CT_PW_PROMOTE, 0};
static const ct_pw_spec HUBER = {CT_OP_huber_loss, CT_PW_PROMOTE, 0};

/* The forward of the three ops: p is beta or delta (node->state.loss.p). */
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
        ct_node_save(n, SV_INPUT, x, false);
        ct_node_save(n, SV_TARGET, y, false);
        ct_pw_loss_save(n, NULL, red, numel);
        n->state.loss.p = p;
    }
    /* mse_loss's reduction; smooth_l1_loss's and huber_loss's (alike) and p */
    CT_TRACE_ATTRS(spec->op, 2, in, 1, &l, &(ct_smooth_l1_loss_attrs){ct_reduction_aten(red), p});
    return l;
}

ct_tensor *(ct_mse_loss_with)(ct_tensor *x, ct_tensor *y, ct_loss_options o) {
    if (!ct_alive("ct_mse_loss", 1, x) || !ct_alive("ct_mse_loss", 2, y)) return NULL;
    CT_AUTOCAST_OP(CT_OP_mse_loss, ct_mse_loss_with(x, y, o), x, y);
    return regression_loss("mse_loss", &MSE, x, y, o.reduction, 0);
}

ct_tensor *(ct_smooth_l1_loss_with)(ct_tensor *x, ct_tensor *y, ct_smooth_l1_options o) {
    if (!ct_alive("ct_smooth_l1_loss", 1, x) || !ct_alive("ct_smooth_l1_loss", 2, y)) return NULL;
    CT_AUTOCAST_OP(CT_OP_smooth_l1_loss, ct_smooth_l1_loss_with(x, y, o), x, y);
    double beta = ct_opt_or(o.beta, 1);
    if (beta < 0) {
        ct_error("ct_smooth_l1_loss: smooth_l1_loss does not support negative values for beta.");
        return NULL;
    }
    return regression_loss("smooth_l1_loss", &SMOOTH_L1, x, y, o.reduction, beta);
}

ct_tensor *(ct_huber_loss_with)(ct_tensor *x, ct_tensor *y, ct_huber_options o) {
    if (!ct_alive("ct_huber_loss", 1, x) || !ct_alive("ct_huber_loss", 2, y)) return NULL;
    CT_AUTOCAST_OP(CT_OP_huber_loss, ct_huber_loss_with(x, y, o), x, y);
    double delta = ct_zero_or(o.delta, 1);
    if (!(delta > 0)) {
        ct_error("ct_huber_loss: huber_loss does not support non-positive values for delta.");
        return NULL;
    }
    return regression_loss("huber_loss", &HUBER, x, y, o.reduction, delta);
}

static const ct_pw_spec MSE_BWD = {CT_OP_mse_loss_backward, CT_PW_PROMOTE, 0};
static const ct_pw_spec SMOOTH_L1_BWD = {CT_OP_smooth_l1_loss_backward, CT_PW_PROMOTE, 0};
static const ct_pw_spec HUBER_BWD = {CT_OP_huber_loss_backward, CT_PW_PROMOTE, 0};

/* The fused backward op `spec` of the scaled gradient for the input, and for the
 * target the same op with input and target swapped, as PyTorch (the negation of the
 * input's except at smooth_l1's kink with beta 0, where both are -1). */
static bool regression_backward(ct_node *n, ct_tensor **go, ct_tensor **gi, const ct_pw_spec *spec) {
    if (!go[0]) return true;
    ct_tensor *x = ct_node_saved(n, SV_INPUT), *y = ct_node_saved(n, SV_TARGET);
    ct_tensor *g = x && y ? ct_pw_loss_grad(n, go[0]) : NULL;
    if (!g) return false;
    double p = n->state.loss.p;
    if (n->needs_grad[0] && !(gi[0] = ct_pw_loss_backward(spec, x, y, NULL, g, p))) return false;
    if (n->needs_grad[1] && !(gi[1] = ct_pw_loss_backward(spec, y, x, NULL, g, p))) return false;
    return true;
}

bool mse_loss_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return regression_backward(n, go, gi, &MSE_BWD);
}
bool smooth_l1_loss_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return regression_backward(n, go, gi, &SMOOTH_L1_BWD);
}
bool huber_loss_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return regression_backward(n, go, gi, &HUBER_BWD);
}

/* The backward of the fused ops (see ct_pw_loss_backward_backward): the derivative D
 * of the elementwise loss depends on d = x - y only, so x's gradient is gg D'(d) and
 * y's its negation.  D' (PyTorch's, zero at the kinks): mse 2; smooth_l1 1 / beta
 * where |d| < beta (beta 0: 0); huber 1 where |d| < delta. */
static bool regression_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *gg, *x, *y, *pw, *gx;
    if (!ct_pw_loss_backward_backward(n, go, gi, &gg, &x, &y, &pw)) return false;
    if (!gg) return true;
    double p = n->state.loss.p;
    if (n->op == CT_OP_mse_loss_backward)
        gx = ct_mul_scalar(gg, 2);
    else if (n->op == CT_OP_smooth_l1_loss_backward && p == 0)
        gx = ct_zeros_like(gg);
    else {
        gx = ct_mask_grad(ct_lt_scalar(ct_abs(ct_sub(x, y)), p), gg);
        if (n->op == CT_OP_smooth_l1_loss_backward) gx = ct_div_scalar(gx, p);
    }
    if (!gx) return false;
    if (n->needs_grad[0]) gi[0] = gx;
    return !n->needs_grad[1] || (gi[1] = ct_neg(gx));
}

bool mse_loss_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return regression_backward_backward(n, go, gi);
}
bool smooth_l1_loss_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return regression_backward_backward(n, go, gi);
}
bool huber_loss_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return regression_backward_backward(n, go, gi);
}
