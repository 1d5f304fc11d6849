/* Shared by the elementwise loss ops (ops/loss_elementwise.c, ops/loss_bce.c).
 *
 * Note [Elementwise loss ops]: mse_loss, smooth_l1_loss, huber_loss,
 * binary_cross_entropy and binary_cross_entropy_with_logits are one op each, as in
 * PyTorch (grad_fn MseLossBackward0, ... for every reduction): one pointwise kernel
 * computes the elementwise loss, the weight and the reduction are applied under
 * no_grad, and one node is recorded on the result.  Its backward (in ops, so double
 * backward works) multiplies the elementwise derivative by the incoming gradient
 * scaled by ct_pw_loss_grad (1 / numel for mean, the weight). */
#ifndef CT_OPS_LOSS_IMPL_H
#define CT_OPS_LOSS_IMPL_H

#include "autograd/node.h"
#include "ops/internal.h"
#include "ops/pointwise.h"

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

#endif
