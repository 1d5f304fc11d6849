/* Losses on pairs with a target of 1 / -1: cosine_embedding_loss and
 * margin_ranking_loss, composed of ops as PyTorch 1.13 composes them. */
#include "ctorch.h"
#include "core/error.h"
#include "ops/internal.h"

/* cos = sum(x1 x2) / sqrt((sum(x1^2) + eps) (sum(x2^2) + eps)), eps = 1e-12, along
 * the last dim; 1 - cos where target == 1, max(0, cos - margin) where target == -1. */
ct_tensor *(ct_cosine_embedding_loss_with)(ct_tensor *x1, ct_tensor *x2, ct_tensor *y,
                                           ct_margin_options o) {
    if (!ct_alive("ct_cosine_embedding_loss", 1, x1) ||
        !ct_alive("ct_cosine_embedding_loss", 2, x2) || !ct_alive("ct_cosine_embedding_loss", 3, y))
        return NULL;
    static const char *op = "ct_cosine_embedding_loss";
    if (!x1 || !x2 || !y || !ct_loss_check_reduction(op, o.reduction)) return NULL;
    int td = ct_ndim(y);
    char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
    ct_shape s1 = ct_shape_of(x1), s2 = ct_shape_of(x2);
    if (td > 1) {
        ct_error("%s: 0D or 1D target tensor expected, multi-target not supported", op);
        return NULL;
    }
    if (s1.ndim != td + 1 || s2.ndim != td + 1) {
        ct_error("%s: %s target tensor expects %s input tensors, but found inputs with sizes %s "
                 "and %s.", op, td ? "1D" : "0D", td ? "2D" : "1D", ct_shape_str(s1.ndim, s1.d, a),
                 ct_shape_str(s2.ndim, s2.d, b));
        return NULL;
    }
    ct_tensor *r = NULL;
    CT_SCOPE {
        ct_reduce_options last = {.dims = CT_DIMS(td)};
        ct_tensor *prod = ct_sum_with(ct_mul(x1, x2), last);
        ct_tensor *m1 = ct_add_scalar(ct_sum_with(ct_mul(x1, x1), last), 1e-12);
        ct_tensor *m2 = ct_add_scalar(ct_sum_with(ct_mul(x2, x2), last), 1e-12);
        ct_tensor *cos = ct_div(prod, ct_sqrt(ct_mul(m1, m2)));
        ct_tensor *zeros = ct_zeros_like(cos);
        ct_tensor *pos = ct_where(ct_eq_scalar(y, 1), ct_rsub_scalar(cos, 1), zeros);
        ct_tensor *neg = ct_where(ct_eq_scalar(y, -1),
                                  ct_clamp(ct_sub_scalar(cos, o.margin), .min = CT_SOME(0)), zeros);
        r = ct_keep(ct_loss_reduce(op, ct_add(pos, neg), o.reduction));
    }
    return r;
}

ct_tensor *(ct_margin_ranking_loss_with)(ct_tensor *x1, ct_tensor *x2, ct_tensor *y,
                                         ct_margin_options o) {
    if (!ct_alive("ct_margin_ranking_loss", 1, x1) || !ct_alive("ct_margin_ranking_loss", 2, x2) ||
        !ct_alive("ct_margin_ranking_loss", 3, y))
        return NULL;
    static const char *op = "ct_margin_ranking_loss";
    if (!x1 || !x2 || !y || !ct_loss_check_reduction(op, o.reduction)) return NULL;
    ct_shape s1 = ct_shape_of(x1), s2 = ct_shape_of(x2), st = ct_shape_of(y);
    if (s1.ndim != s2.ndim || s1.ndim != st.ndim) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX], c[CT_SHAPE_STR_MAX];
        ct_error("%s: margin_ranking_loss : All input tensors should have same dimension but got "
                 "sizes: input1: torch.Size(%s), input2: torch.Size(%s), target: torch.Size(%s) ",
                 op, ct_shape_str(s1.ndim, s1.d, a), ct_shape_str(s2.ndim, s2.d, b),
                 ct_shape_str(st.ndim, st.d, c));
        return NULL;
    }
    ct_tensor *r = NULL;
    CT_SCOPE {
        ct_tensor *l = ct_add_scalar(ct_mul(ct_neg(y), ct_sub(x1, x2)), o.margin);
        l = ct_loss_grad_fn_as(ct_clamp(l, .min = CT_SOME(0)), "ClampMinBackward0");
        r = ct_keep(ct_loss_reduce(op, l, o.reduction));
    }
    return r;
}
