/* Shared by the elementwise loss ops (ops/loss_elementwise.c, ops/loss_bce.c).
 *
 * Note [Elementwise loss ops]: mse_loss, smooth_l1_loss, huber_loss,
 * binary_cross_entropy and binary_cross_entropy_with_logits are one op each, as in
 * PyTorch (grad_fn MseLossBackward0, ... for every reduction): one pointwise kernel
 * computes the elementwise loss, the weight and the reduction are applied under
 * no_grad, and one node is recorded on the result.  Its backward multiplies the
 * elementwise derivative by the incoming gradient scaled by ct_pw_loss_grad (1 / numel
 * for mean, the weight): for the input (and a regression loss's target), one fused op
 * per loss, as PyTorch's mse_loss_backward & co. (ct_pw_loss_backward: one pass, the
 * scaled gradient broadcast), itself differentiable with a backward in ops, so double
 * backward works. */
#ifndef CT_OPS_LOSS_IMPL_H
#define CT_OPS_LOSS_IMPL_H

#include "autograd/node.h"
#include "ops/internal.h"
#include "ops/pointwise.h"
#include "ops/trace.h"

/* A reduction as PyTorch's schemas pass it (at::Reduction: None 0, Mean 1, Sum 2). */
static inline int64_t ct_reduction_aten(ct_reduction r) {
    return r == CT_REDUCTION_MEAN ? 1 : r == CT_REDUCTION_SUM ? 2 : 0;
}

/* The node slot holding the weight (the inputs use the first ones). */
#define CT_PW_LOSS_WEIGHT 5

/* The elementwise loss of spec over in[0..n) (broadcast), times weight (NULL: none),
 * reduced; no node.  Registered with the caller's scope; *numel gets the number of
 * elementwise losses (mean's divisor).  `fn` names the PyTorch function in the error
 * refusing a weight that requires grad. */
ct_tensor *ct_pw_loss_forward(const char *fn, const ct_pw_spec *spec, int n, ct_tensor *const *in,
                              const ct_pw_args *args, ct_tensor *weight, ct_reduction red,
                              double *numel);
/* Saves on node n what ct_pw_loss_grad needs (n may be NULL: nothing recorded). */
void ct_pw_loss_save(ct_node *n, ct_tensor *weight, ct_reduction red, double numel);
/* The incoming gradient g of node n scaled for the reduction (/ numel for mean) and
 * the weight; registered, NULL with the error set. */
ct_tensor *ct_pw_loss_grad(ct_node *n, ct_tensor *g);

/* The fused backward op `spec` (mse_loss_backward, ...) of input x, target y and the
 * scaled gradient g (see above): the derivative of the elementwise loss in x times g,
 * one kernel over (x, y, [pw,] g) broadcast, p the loss's beta or delta, pw the
 * pos_weight of binary_cross_entropy_with_logits (else NULL; never differentiable).
 * Records a node on (x, y, g).  Registered; NULL with the error set. */
ct_tensor *ct_pw_loss_backward(const ct_pw_spec *spec, ct_tensor *x, ct_tensor *y, ct_tensor *pw,
                               ct_tensor *g, double p);
/* The first part of the backward of such a node n: its output D(x, y) g is linear in
 * g, whose gradient (gi[2]) is the op again on the incoming gradient.  *gg gets the
 * incoming gradient times g, which the caller multiplies by D's derivatives in x and
 * y (gi[0], gi[1]); NULL when neither needs one.  *x, *y, *pw get the saved tensors. */
bool ct_pw_loss_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi, ct_tensor **gg,
                                  ct_tensor **x, ct_tensor **y, ct_tensor **pw);

#endif
