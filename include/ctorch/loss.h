/* ctorch/loss.h — loss functions (torch.nn.functional) and loss modules (torch.nn).
 *
 *     ct_tensor *logits = ct_zeros(CT_SHAPE(2, 3), .requires_grad = true);
 *     int64_t labels[] = {0, 2};
 *     ct_tensor *y = ct_tensor_i64(labels, CT_SHAPE(2));
 *     ct_tensor *loss = ct_cross_entropy(logits, y);                  // mean over the batch
 *     ct_tensor *per = ct_cross_entropy(logits, y, .reduction = CT_REDUCTION_NONE);
 *     ct_tensor *smooth = ct_cross_entropy(logits, y, .label_smoothing = 0.1);
 *     ct_backward(loss);
 *
 * Every loss takes its keyword options after the tensors; options not given take
 * PyTorch's defaults (the macros fill the non-zero ones, such as ignore_index -100
 * and beta 1: call the _with forms through the macros).  Results and gradients follow
 * PyTorch 1.13, including its errors ("Target 5 is out of bounds.", "expected scalar
 * type Long but found Float").  Class indices are int64.  A loss's grad_fn is
 * PyTorch's: MseLossBackward0, SmoothL1LossBackward0, HuberLossBackward0,
 * BinaryCrossEntropy[WithLogits]Backward0, NllLossBackward0 / NllLoss2DBackward0 for
 * every reduction; where PyTorch composes a loss of ops (l1_loss, kl_div, the pair
 * losses, label smoothing) the name of its last op (MeanBackward0, AbsBackward0, ...).
 * The input gradient of mse, smooth_l1, huber, binary_cross_entropy and
 * binary_cross_entropy_with_logits (and the target gradient of the first three) is
 * one fused op, differentiable: made with create_graph its grad_fn is
 * MseLossBackwardBackward0, ... as in PyTorch (for the last one, which PyTorch
 * composes, BinaryCrossEntropyWithLogitsBackwardBackward0 is ctorch's own name).
 *
 * Module forms (nn.CrossEntropyLoss, ...) are named ct_nn_<class>: their forward
 * takes (input, target) — three tensors for the embedding and ranking losses — through
 * ct_forward_multi or the ct_loss shortcut; a weight becomes the module's "weight"
 * buffer, as in PyTorch:
 *
 *     ct_module *criterion = ct_nn_cross_entropy_loss(.label_smoothing = 0.1);
 *     int64_t classes[] = {1, 0};
 *     ct_tensor *target = ct_tensor_i64(classes, CT_SHAPE(2));
 *     ct_tensor *l = ct_loss(criterion, ct_ones(CT_SHAPE(2, 4)), target);
 */
#ifndef CTORCH_LOSS_H
#define CTORCH_LOSS_H

#include "nn.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* reduction=: mean over the elements (the default), their sum, or the unreduced
 * losses; "batchmean" (sum / batch size) is kl_div's only. */
typedef enum {
    CT_REDUCTION_MEAN = 0,
    CT_REDUCTION_SUM,
    CT_REDUCTION_NONE,
    CT_REDUCTION_BATCHMEAN,
} ct_reduction;

/* ---- classification ------------------------------------------------------ */

/* Options of ct_cross_entropy and ct_nn_cross_entropy_loss. */
typedef struct {
    ct_tensor *weight;      /* [C] weight of each class, or NULL */
    ct_opt_f64 ignore_index; /* targets equal to it add nothing (default -100; CT_SOME(0)) */
    ct_reduction reduction; /* mean divides by the summed weights of the targets */
    double label_smoothing; /* in [0, 1]: mixes the target with the uniform distribution */
} ct_cross_entropy_options;

/* F.cross_entropy: input [N, C] (or [C], or [N, C, d1, d2, ...]) of logits; target
 * int64 class indices [N] ([], [N, d1, ...]), or class probabilities of input's
 * shape (floating; ignore_index is then refused).  log_softmax and nll fused,
 * stable for any magnitude (logits of 1e4 included). */
ct_tensor *ct_cross_entropy_with(ct_tensor *input, ct_tensor *target, ct_cross_entropy_options o);
#define ct_cross_entropy(input, target, ...)                                               \
    CT_AT(ct_cross_entropy_with(input, target, CT_OPTIONS(ct_cross_entropy_options, __VA_ARGS__)))

/* Options of ct_nll_loss and ct_nn_nll_loss. */
typedef struct {
    ct_tensor *weight;      /* [C] or NULL */
    ct_opt_f64 ignore_index; /* default -100 */
    ct_reduction reduction; /* mean (the default), sum or none */
} ct_nll_loss_options;
/* F.nll_loss: input holds log-probabilities, shapes as ct_cross_entropy; the loss of
 * an element is -weight[t] * input[n, t, ...]. */
ct_tensor *ct_nll_loss_with(ct_tensor *input, ct_tensor *target, ct_nll_loss_options o);
#define ct_nll_loss(input, target, ...)                                                    \
    CT_AT(ct_nll_loss_with(input, target, CT_OPTIONS(ct_nll_loss_options, __VA_ARGS__)))

/* ---- binary classification ---------------------------------------------- */

/* Options of ct_binary_cross_entropy and ct_nn_bce_loss. */
typedef struct {
    ct_tensor *weight;      /* broadcast to the input's shape, or NULL */
    ct_reduction reduction; /* mean (the default), sum or none */
} ct_bce_options;
/* F.binary_cross_entropy: input probabilities in [0, 1] (an error otherwise), target of
 * the same shape and dtype; logs are clamped to >= -100 as in PyTorch. */
ct_tensor *ct_binary_cross_entropy_with(ct_tensor *input, ct_tensor *target, ct_bce_options o);
#define ct_binary_cross_entropy(input, target, ...) \
    CT_AT(ct_binary_cross_entropy_with(input, target, CT_OPTIONS(ct_bce_options, __VA_ARGS__)))

/* Options of ct_binary_cross_entropy_with_logits and ct_nn_bce_with_logits_loss. */
typedef struct {
    ct_tensor *weight;      /* broadcast to the input's shape, or NULL */
    ct_tensor *pos_weight;  /* weight of positive examples, broadcast along the last dim */
    ct_reduction reduction; /* mean (the default), sum or none */
} ct_bce_with_logits_options;
/* F.binary_cross_entropy_with_logits: sigmoid and BCE in one stable formula
 * (max(-x, 0) + log(exp(-max) + exp(-x - max)), never overflowing).  weight and
 * pos_weight get no gradient: one that requires grad is refused, as in PyTorch
 * (likewise binary_cross_entropy's weight). */
ct_tensor *ct_binary_cross_entropy_with_logits_with(ct_tensor *input, ct_tensor *target,
                                                    ct_bce_with_logits_options o);
#define ct_binary_cross_entropy_with_logits(input, target, ...) \
    CT_AT(ct_binary_cross_entropy_with_logits_with(input, target,  \
                                                   CT_OPTIONS(ct_bce_with_logits_options, __VA_ARGS__)))

/* ---- regression (input and target broadcast, as PyTorch allows with a warning) ---- */

/* Options of ct_mse_loss, ct_l1_loss, ct_nn_mse_loss and ct_nn_l1_loss. */
typedef struct {
    ct_reduction reduction; /* mean (the default), sum or none */
} ct_loss_options;
/* F.mse_loss: (input - target)^2. */
ct_tensor *ct_mse_loss_with(ct_tensor *input, ct_tensor *target, ct_loss_options o);
/* F.l1_loss: |input - target|. */
ct_tensor *ct_l1_loss_with(ct_tensor *input, ct_tensor *target, ct_loss_options o);
#define ct_mse_loss(input, target, ...) \
    CT_AT(ct_mse_loss_with(input, target, CT_OPTIONS(ct_loss_options, __VA_ARGS__)))
#define ct_l1_loss(input, target, ...) \
    CT_AT(ct_l1_loss_with(input, target, CT_OPTIONS(ct_loss_options, __VA_ARGS__)))

/* Options of ct_smooth_l1_loss and ct_nn_smooth_l1_loss. */
typedef struct {
    ct_reduction reduction; /* mean (the default), sum or none */
    ct_opt_f64 beta; /* default 1; CT_SOME(0) gives the L1 loss; negative is refused */
} ct_smooth_l1_options;
/* F.smooth_l1_loss: 0.5 z^2 / beta where z = |input - target| < beta, else z - beta / 2. */
ct_tensor *ct_smooth_l1_loss_with(ct_tensor *input, ct_tensor *target, ct_smooth_l1_options o);
#define ct_smooth_l1_loss(input, target, ...)                                              \
    CT_AT(ct_smooth_l1_loss_with(input, target, CT_OPTIONS(ct_smooth_l1_options, __VA_ARGS__)))

/* Options of ct_huber_loss and ct_nn_huber_loss. */
typedef struct {
    ct_reduction reduction; /* mean (the default), sum or none */
    double delta; /* 0: default 1; negative is refused */
} ct_huber_options;
/* F.huber_loss: 0.5 z^2 where z < delta, else delta (z - delta / 2). */
ct_tensor *ct_huber_loss_with(ct_tensor *input, ct_tensor *target, ct_huber_options o);
#define ct_huber_loss(input, target, ...) \
    CT_AT(ct_huber_loss_with(input, target, CT_OPTIONS(ct_huber_options, __VA_ARGS__)))

/* Options of ct_kl_div and ct_nn_kl_div_loss. */
typedef struct {
    ct_reduction reduction; /* CT_REDUCTION_BATCHMEAN: the sum divided by input's size(0) */
    bool log_target;        /* target holds log-probabilities */
} ct_kl_div_options;
/* F.kl_div: input holds log-probabilities; target * (log(target) - input) pointwise
 * (0 where target is 0), or exp(target) * (target - input) with log_target. */
ct_tensor *ct_kl_div_with(ct_tensor *input, ct_tensor *target, ct_kl_div_options o);
#define ct_kl_div(input, target, ...) \
    CT_AT(ct_kl_div_with(input, target, CT_OPTIONS(ct_kl_div_options, __VA_ARGS__)))

/* ---- embeddings and rankings: target holds 1 or -1 ------------------------ */

/* Options of ct_cosine_embedding_loss, ct_margin_ranking_loss and their modules. */
typedef struct {
    double margin;          /* default 0 */
    ct_reduction reduction; /* mean (the default), sum or none */
} ct_margin_options;
/* F.cosine_embedding_loss: x1, x2 [N, D] with target [N] (or [D] with a 0-d target):
 * 1 - cos(x1, x2) where target is 1, max(0, cos - margin) where it is -1. */
ct_tensor *ct_cosine_embedding_loss_with(ct_tensor *x1, ct_tensor *x2, ct_tensor *target,
                                         ct_margin_options o);
/* F.margin_ranking_loss: max(0, -target * (x1 - x2) + margin); all of one ndim. */
ct_tensor *ct_margin_ranking_loss_with(ct_tensor *x1, ct_tensor *x2, ct_tensor *target,
                                       ct_margin_options o);
#define ct_cosine_embedding_loss(x1, x2, target, ...) \
    CT_AT(ct_cosine_embedding_loss_with(x1, x2, target, CT_OPTIONS(ct_margin_options, __VA_ARGS__)))
#define ct_margin_ranking_loss(x1, x2, target, ...) \
    CT_AT(ct_margin_ranking_loss_with(x1, x2, target, CT_OPTIONS(ct_margin_options, __VA_ARGS__)))

/* ---- modules ---------------------------------------------------------------- */

/* nn.CrossEntropyLoss, nn.NLLLoss, ...: modules with the same options.  A weight or
 * pos_weight tensor is registered as a buffer sharing its memory (the caller keeps
 * its own reference); ct_module_to converts it with the module. */
ct_module *ct_nn_cross_entropy_loss_with(ct_cross_entropy_options o);
#define ct_nn_cross_entropy_loss_with(...) CT_AT(ct_nn_cross_entropy_loss_with(__VA_ARGS__))
ct_module *ct_nn_nll_loss_with(ct_nll_loss_options o);
#define ct_nn_nll_loss_with(...) CT_AT(ct_nn_nll_loss_with(__VA_ARGS__))
ct_module *ct_nn_bce_loss_with(ct_bce_options o);
#define ct_nn_bce_loss_with(...) CT_AT(ct_nn_bce_loss_with(__VA_ARGS__))
ct_module *ct_nn_bce_with_logits_loss_with(ct_bce_with_logits_options o);
#define ct_nn_bce_with_logits_loss_with(...) CT_AT(ct_nn_bce_with_logits_loss_with(__VA_ARGS__))
ct_module *ct_nn_mse_loss_with(ct_loss_options o);
#define ct_nn_mse_loss_with(...) CT_AT(ct_nn_mse_loss_with(__VA_ARGS__))
ct_module *ct_nn_l1_loss_with(ct_loss_options o);
#define ct_nn_l1_loss_with(...) CT_AT(ct_nn_l1_loss_with(__VA_ARGS__))
ct_module *ct_nn_smooth_l1_loss_with(ct_smooth_l1_options o);
#define ct_nn_smooth_l1_loss_with(...) CT_AT(ct_nn_smooth_l1_loss_with(__VA_ARGS__))
ct_module *ct_nn_huber_loss_with(ct_huber_options o);
#define ct_nn_huber_loss_with(...) CT_AT(ct_nn_huber_loss_with(__VA_ARGS__))
ct_module *ct_nn_kl_div_loss_with(ct_kl_div_options o);
#define ct_nn_kl_div_loss_with(...) CT_AT(ct_nn_kl_div_loss_with(__VA_ARGS__))
ct_module *ct_nn_cosine_embedding_loss_with(ct_margin_options o);
#define ct_nn_cosine_embedding_loss_with(...) CT_AT(ct_nn_cosine_embedding_loss_with(__VA_ARGS__))
ct_module *ct_nn_margin_ranking_loss_with(ct_margin_options o);
#define ct_nn_margin_ranking_loss_with(...) CT_AT(ct_nn_margin_ranking_loss_with(__VA_ARGS__))
#define ct_nn_cross_entropy_loss(...)                                                  \
    ct_nn_cross_entropy_loss_with(CT_OPTIONS(ct_cross_entropy_options, __VA_ARGS__))
#define ct_nn_nll_loss(...) \
    ct_nn_nll_loss_with(CT_OPTIONS(ct_nll_loss_options, __VA_ARGS__))
#define ct_nn_bce_loss(...) ct_nn_bce_loss_with(CT_OPTIONS(ct_bce_options, __VA_ARGS__))
#define ct_nn_bce_with_logits_loss(...) \
    ct_nn_bce_with_logits_loss_with(CT_OPTIONS(ct_bce_with_logits_options, __VA_ARGS__))
#define ct_nn_mse_loss(...) ct_nn_mse_loss_with(CT_OPTIONS(ct_loss_options, __VA_ARGS__))
#define ct_nn_l1_loss(...) ct_nn_l1_loss_with(CT_OPTIONS(ct_loss_options, __VA_ARGS__))
#define ct_nn_smooth_l1_loss(...) \
    ct_nn_smooth_l1_loss_with(CT_OPTIONS(ct_smooth_l1_options, __VA_ARGS__))
#define ct_nn_huber_loss(...) \
    ct_nn_huber_loss_with(CT_OPTIONS(ct_huber_options, __VA_ARGS__))
#define ct_nn_kl_div_loss(...) ct_nn_kl_div_loss_with(CT_OPTIONS(ct_kl_div_options, __VA_ARGS__))
#define ct_nn_cosine_embedding_loss(...) \
    ct_nn_cosine_embedding_loss_with(CT_OPTIONS(ct_margin_options, __VA_ARGS__))
#define ct_nn_margin_ranking_loss(...) \
    ct_nn_margin_ranking_loss_with(CT_OPTIONS(ct_margin_options, __VA_ARGS__))

/* loss(input, target): the module called through ct_forward_multi with two inputs;
 * ct_loss3 for the three-input losses (cosine embedding, margin ranking). */
ct_tensor *ct_loss(ct_module *loss, ct_tensor *input, ct_tensor *target);
ct_tensor *ct_loss3(ct_module *loss, ct_tensor *x1, ct_tensor *x2, ct_tensor *target);
#define ct_loss(loss, input, target) CT_AT(ct_loss(loss, input, target))
#define ct_loss3(loss, x1, x2, target) CT_AT(ct_loss3(loss, x1, x2, target))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
