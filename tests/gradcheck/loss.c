/* Gradcheck cases of the loss ops (nll_loss, its backward, binary_cross_entropy and
 * the other elementwise losses with their fused backwards) and of the losses composed
 * of ops, over reductions, class weights, ignored targets,
 * K-dimensional inputs, non-contiguous inputs and empty batches.  The ctx of each
 * function is a case: targets and options the function does not differentiate. */
#include "gc.h"

typedef struct {
    ct_tensor *target, *weight;
    ct_reduction reduction;
    int64_t ignore_index;
    double smoothing;
} nll_case;

static ct_tensor *f_nll(ct_tensor *const *x, void *c) {
    const nll_case *k = c;
    return ct_nll_loss(x[0], gc_like(x[0], k->target), .weight = gc_like(x[0], k->weight),
                       .reduction = k->reduction, .ignore_index = CT_SOME(k->ignore_index));
}
static ct_tensor *f_ce(ct_tensor *const *x, void *c) {
    const nll_case *k = c;
    return ct_cross_entropy(x[0], gc_like(x[0], k->target), .weight = gc_like(x[0], k->weight),
                            .reduction = k->reduction, .ignore_index = CT_SOME(k->ignore_index),
                            .label_smoothing = k->smoothing);
}
/* The input gradient of nll_loss for grad_output x[1], built with create_graph: made
 * by the nll_loss_backward op, checked as a function of x[0] and x[1]. */
static ct_tensor *f_nll_bwd(ct_tensor *const *x, void *c) {
    ct_tensor *r[1] = {NULL};
    CT_ENABLE_GRAD {
        ct_tensor *y = f_nll(x, c);
        ct_tensor *gos[1] = {x[1]}, *outs[1] = {y};
        if (ct_autograd_grad(1, outs, 1, x, r, .grad_outputs = gos, .create_graph = true) != 0)
            r[0] = NULL;
    }
    return r[0];
}

static ct_tensor *targets(ct_shape s, const int64_t *v) { return ct_tensor_i64(v, s); }

TEST(grad_nll_loss_and_cross_entropy) {
    static const int64_t t4[] = {0, 2, -100, 1}, t2[] = {0, 2, 2, 1}, t0[] = {0, 2, 0, 1};
    static const int64_t tk[] = {0, 1, 2, 1, -100, 0, 2, 2}, tk1[] = {0, 1, 2, 1, 1, 0, 2, 2};
    ct_tensor *w = ct_tensor_f64(((double[]){0.2, 0.3, 0.5}), CT_SHAPE(3));
    nll_case cases[] = {
        {targets(CT_SHAPE(4), t4), NULL, CT_REDUCTION_MEAN, -100, 0},
        {targets(CT_SHAPE(4), t4), w, CT_REDUCTION_MEAN, -100, 0},
        {targets(CT_SHAPE(4), t4), w, CT_REDUCTION_SUM, -100, 0.2},
        {targets(CT_SHAPE(4), t2), w, CT_REDUCTION_NONE, 2, 0.1},
        {targets(CT_SHAPE(4), t0), NULL, CT_REDUCTION_MEAN, 0, 0.3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ct_tensor *x[] = {i % 2 ? gc_noncontig(CT_SHAPE(4, 3)) : gc_rand(CT_SHAPE(4, 3))};
        GRADGRADCHECK("nll_loss", f_nll, 1, x, &cases[i]);
        GRADGRADCHECK("nll_loss", f_ce, 1, x, &cases[i]);
    }
    /* K-dimensional: [2, 3, 4] and [2, 3, 2, 2] with targets [2, 4] / [2, 2, 2]. */
    for (int r = 0; r < 3; r++) {
        nll_case k = {targets(CT_SHAPE(2, 4), tk), w, (ct_reduction)r, -100, r == 1 ? 0.2 : 0};
        ct_tensor *x[] = {gc_rand(CT_SHAPE(2, 3, 4))};
        GRADGRADCHECK("nll_loss", f_ce, 1, x, &k);
        nll_case k4 = {targets(CT_SHAPE(2, 2, 2), tk1), NULL, (ct_reduction)r, 1, 0};
        ct_tensor *x4[] = {gc_noncontig(CT_SHAPE(2, 3, 2, 2))};
        GRADGRADCHECK("nll_loss", f_nll, 1, x4, &k4);
    }
    /* Unbatched [C] with a 0-d target; an empty batch (sum). */
    nll_case k1 = {ct_tensor_i64((int64_t[]){2}, CT_SHAPE()), NULL, CT_REDUCTION_NONE, -100, 0};
    ct_tensor *x1[] = {gc_rand(CT_SHAPE(3))};
    GRADGRADCHECK("nll_loss", f_ce, 1, x1, &k1);
    nll_case k0 = {ct_zeros(CT_SHAPE(0), .dtype = CT_I64), NULL, CT_REDUCTION_SUM, -100, 0};
    ct_tensor *x0[] = {gc_rand(CT_SHAPE(0, 3))};
    GRADCHECK("nll_loss", f_nll, 1, x0, &k0);
}

TEST(grad_nll_loss_backward) {
    static const int64_t t4[] = {0, 2, -100, 1};
    ct_tensor *w = ct_tensor_f64(((double[]){0.2, 0.3, 0.5}), CT_SHAPE(3));
    for (int r = 0; r < 3; r++) {
        nll_case k = {targets(CT_SHAPE(4), t4), w, (ct_reduction)r, -100, 0};
        ct_tensor *x[] = {gc_rand(CT_SHAPE(4, 3)),
                          r == CT_REDUCTION_NONE ? gc_rand(CT_SHAPE(4)) : gc_rand(CT_SHAPE())};
        /* first order only: the backward is linear in grad_output, constant in input */
        GRADCHECK("nll_loss_backward", f_nll_bwd, 2, x, &k);
    }
}

/* Class probabilities as targets (x[1] differentiable too). */
static ct_tensor *f_ce_prob(ct_tensor *const *x, void *c) {
    const nll_case *k = c;
    return ct_cross_entropy(x[0], x[1], .weight = gc_like(x[0], k->weight),
                            .reduction = k->reduction, .label_smoothing = k->smoothing);
}

TEST(grad_cross_entropy_probabilities) {
    ct_tensor *w = ct_tensor_f64(((double[]){0.2, 0.3, 0.5}), CT_SHAPE(3));
    for (int r = 0; r < 3; r++) {
        nll_case k = {NULL, r == 1 ? NULL : w, (ct_reduction)r, -100, r == 2 ? 0.1 : 0};
        ct_tensor *x[] = {gc_rand(CT_SHAPE(2, 3, 2)), gc_rand_range(CT_SHAPE(2, 3, 2), 0, 1)};
        GRADGRADCHECK("log_softmax", f_ce_prob, 2, x, &k);
    }
}

typedef struct {
    ct_tensor *weight, *pos_weight;
    ct_reduction reduction;
    double p;  /* beta, delta, margin */
    bool flag; /* log_target */
} pw_case;

static ct_tensor *f_bce(ct_tensor *const *x, void *c) {
    const pw_case *k = c;
    return ct_binary_cross_entropy(x[0], x[1], .weight = gc_like(x[0], k->weight),
                                   .reduction = k->reduction);
}
static ct_tensor *f_bcel(ct_tensor *const *x, void *c) {
    const pw_case *k = c;
    return ct_binary_cross_entropy_with_logits(x[0], x[1], .weight = gc_like(x[0], k->weight),
                                               .pos_weight = gc_like(x[0], k->pos_weight),
                                               .reduction = k->reduction);
}
static ct_tensor *f_mse(ct_tensor *const *x, void *c) {
    return ct_mse_loss(x[0], x[1], .reduction = ((pw_case *)c)->reduction);
}
static ct_tensor *f_l1(ct_tensor *const *x, void *c) {
    return ct_l1_loss(x[0], x[1], .reduction = ((pw_case *)c)->reduction);
}
static ct_tensor *f_sl1(ct_tensor *const *x, void *c) {
    const pw_case *k = c;
    return ct_smooth_l1_loss(x[0], x[1], .reduction = k->reduction, .beta = CT_SOME(k->p));
}
static ct_tensor *f_huber(ct_tensor *const *x, void *c) {
    const pw_case *k = c;
    return ct_huber_loss(x[0], x[1], .reduction = k->reduction, .delta = k->p);
}
static ct_tensor *f_kl(ct_tensor *const *x, void *c) {
    const pw_case *k = c;
    return ct_kl_div(x[0], x[1], .reduction = k->reduction, .log_target = k->flag);
}

TEST(grad_binary_cross_entropy) {
    ct_tensor *w = gc_rand_range(CT_SHAPE(3), 0.5, 2);
    ct_set_requires_grad(w, false);
    for (int r = 0; r < 3; r++) {
        pw_case k = {r == 1 ? NULL : w, r == 0 ? NULL : w, (ct_reduction)r, 0, false};
        ct_tensor *x[] = {gc_rand_range(CT_SHAPE(2, 3), 0.05, 0.95),
                          gc_rand_range(CT_SHAPE(2, 3), 0, 1)};
        GRADGRADCHECK("binary_cross_entropy", f_bce, 2, x, &k);
        ct_tensor *xl[] = {gc_noncontig_range(CT_SHAPE(2, 3), -3, 3),
                           gc_rand_range(CT_SHAPE(2, 3), 0, 1)};
        GRADGRADCHECK("binary_cross_entropy_with_logits", f_bcel, 2, xl, &k);
        /* pos_weight alone, broadcast from [1, 3]; size-1 dims */
        pw_case kp = {NULL, ct_reshape(w, CT_SHAPE(1, 3)), (ct_reduction)r, 0, false};
        ct_tensor *x1[] = {gc_rand_range(CT_SHAPE(1, 3), -3, 3),
                           gc_rand_range(CT_SHAPE(1, 3), 0, 1)};
        GRADGRADCHECK("binary_cross_entropy_with_logits", f_bcel, 2, x1, &kp);
        GRADGRADCHECK("binary_cross_entropy", f_bce, 2,
                      ((ct_tensor *[]){gc_rand_range(CT_SHAPE(1, 1), 0.1, 0.9),
                                       gc_rand_range(CT_SHAPE(1, 1), 0, 1)}),
                      &kp);
    }
    /* the second derivatives above go through the fused backward ops */
    gc_cover("binary_cross_entropy_backward");
    gc_cover("binary_cross_entropy_with_logits_backward");
    pw_case k0 = {0};
    ct_tensor *x0[] = {gc_rand_range(CT_SHAPE(0, 3), 0.1, 0.9), gc_rand(CT_SHAPE(0, 3))};
    GRADCHECK("binary_cross_entropy", f_bce, 2, x0, &k0);
    GRADCHECK("binary_cross_entropy_with_logits", f_bcel, 2, x0, &k0);
}

TEST(grad_regression_losses) {
    for (int r = 0; r < 3; r++) {
        pw_case k = {NULL, NULL, (ct_reduction)r, 0.7, r == 1};
        /* Broadcast target, non-contiguous input; values away from the kinks. */
        ct_tensor *x[] = {gc_noncontig(CT_SHAPE(2, 3)), gc_rand(CT_SHAPE(3))};
        GRADGRADCHECK("mse_loss", f_mse, 2, x, &k);
        GRADCHECK("abs", f_l1, 2, x, &k);
        GRADGRADCHECK("smooth_l1_loss", f_sl1, 2, x, &k);
        GRADGRADCHECK("huber_loss", f_huber, 2, x, &k);
        pw_case k0 = {NULL, NULL, (ct_reduction)r, 0, false}; /* beta 0: the l1 gradient */
        GRADCHECK("smooth_l1_loss", f_sl1, 2, x, &k0);
        /* broadcast input against a target with size-1 and size-0 dims */
        ct_tensor *xb[] = {gc_rand(CT_SHAPE(2, 1)), gc_noncontig(CT_SHAPE(1, 3))};
        GRADGRADCHECK("mse_loss", f_mse, 2, xb, &k);
        GRADGRADCHECK("huber_loss", f_huber, 2, xb, &k);
        GRADGRADCHECK("smooth_l1_loss", f_sl1, 2, xb, &k);
        gc_cover("mse_loss_backward");
        gc_cover("huber_loss_backward");
        gc_cover("smooth_l1_loss_backward");
        if (r == CT_REDUCTION_MEAN) continue; /* the mean of nothing is NaN */
        ct_tensor *xe[] = {gc_rand(CT_SHAPE(0, 3)), gc_rand(CT_SHAPE(3))};
        GRADCHECK("mse_loss", f_mse, 2, xe, &k);
        GRADCHECK("smooth_l1_loss", f_sl1, 2, xe, &k);
        GRADCHECK("huber_loss", f_huber, 2, xe, &k);
        ct_tensor *kx[] = {gc_rand(CT_SHAPE(2, 3)), gc_rand_range(CT_SHAPE(2, 3), 0.1, 1)};
        GRADGRADCHECK("log", f_kl, 2, kx, &k);
    }
    pw_case bm = {.reduction = CT_REDUCTION_BATCHMEAN};
    ct_tensor *kx[] = {gc_rand(CT_SHAPE(4, 1)), gc_rand_range(CT_SHAPE(4, 1), 0.1, 1)};
    GRADCHECK("log", f_kl, 2, kx, &bm);
}

/* The gradient of a loss (f, ctx k) for grad_output x[2] with respect to its input
 * (which 0) or target (1), built with create_graph: made by the fused backward ops
 * (mse_loss_backward, ...), checked as a function of x[0], x[1] and x[2]. */
typedef struct {
    ct_gradcheck_fn f;
    pw_case *k;
    int which;
} bwd_case;

static ct_tensor *f_loss_bwd(ct_tensor *const *x, void *c) {
    const bwd_case *b = c;
    ct_tensor *r[2] = {NULL, NULL};
    CT_ENABLE_GRAD {
        ct_tensor *outs[1] = {b->f(x, b->k)}, *gos[1] = {x[2]};
        if (ct_autograd_grad(1, outs, 2, x, r, .grad_outputs = gos, .create_graph = true) != 0)
            r[b->which] = NULL;
    }
    return r[b->which];
}

TEST(grad_loss_backward_ops) {
    ct_tensor *w = gc_rand_range(CT_SHAPE(3), 0.5, 2);
    ct_set_requires_grad(w, false);
    for (int r = 0; r < 3; r++) {
        ct_shape gs = r == CT_REDUCTION_NONE ? CT_SHAPE(2, 3) : CT_SHAPE();
        pw_case k = {NULL, NULL, (ct_reduction)r, 0.7, false};
        pw_case k0 = {NULL, NULL, (ct_reduction)r, 0, false}; /* smooth_l1 with beta 0 */
        pw_case kw = {r == 1 ? NULL : w, r == 0 ? NULL : w, (ct_reduction)r, 0, false};
        for (int which = 0; which < 2; which++) {
            /* a broadcast target, a non-contiguous input */
            ct_tensor *x[] = {gc_noncontig(CT_SHAPE(2, 3)), gc_rand(CT_SHAPE(3)), gc_rand(gs)};
            GRADCHECK("mse_loss_backward", f_loss_bwd, 3, x, &((bwd_case){f_mse, &k, which}));
            GRADCHECK("smooth_l1_loss_backward", f_loss_bwd, 3, x, &((bwd_case){f_sl1, &k, which}));
            GRADCHECK("smooth_l1_loss_backward", f_loss_bwd, 3, x,
                      &((bwd_case){f_sl1, &k0, which}));
            GRADCHECK("huber_loss_backward", f_loss_bwd, 3, x, &((bwd_case){f_huber, &k, which}));
            ct_tensor *xb[] = {gc_rand_range(CT_SHAPE(2, 3), 0.05, 0.95),
                               gc_rand_range(CT_SHAPE(2, 3), 0, 1), gc_rand(gs)};
            GRADCHECK("binary_cross_entropy_backward", f_loss_bwd, 3, xb,
                      &((bwd_case){f_bce, &kw, which}));
            ct_tensor *xl[] = {gc_noncontig_range(CT_SHAPE(2, 3), -3, 3),
                               gc_rand_range(CT_SHAPE(2, 3), 0, 1), gc_rand(gs)};
            GRADCHECK("binary_cross_entropy_with_logits_backward", f_loss_bwd, 3, xl,
                      &((bwd_case){f_bcel, &kw, which}));
            GRADCHECK("binary_cross_entropy_with_logits_backward", f_loss_bwd, 3, xl,
                      &((bwd_case){f_bcel, &k, which}));
        }
    }
}

static ct_tensor *f_cos(ct_tensor *const *x, void *c) {
    const pw_case *k = c;
    return ct_cosine_embedding_loss(x[0], x[1], gc_like(x[0], k->weight), .margin = k->p,
                                    .reduction = k->reduction);
}
static ct_tensor *f_rank(ct_tensor *const *x, void *c) {
    const pw_case *k = c;
    return ct_margin_ranking_loss(x[0], x[1], gc_like(x[0], k->weight), .margin = k->p,
                                  .reduction = k->reduction);
}

TEST(grad_embedding_losses) {
    ct_tensor *y = ct_tensor_f64(((double[]){1, -1, -1, 1}), CT_SHAPE(4));
    for (int r = 0; r < 3; r++) {
        pw_case k = {y, NULL, (ct_reduction)r, -0.5, false};
        ct_tensor *x[] = {gc_rand(CT_SHAPE(4, 3)), gc_noncontig(CT_SHAPE(4, 3))};
        GRADGRADCHECK("sqrt", f_cos, 2, x, &k);
        ct_tensor *xr[] = {gc_rand(CT_SHAPE(4)), gc_rand(CT_SHAPE(4))};
        pw_case kr = {y, NULL, (ct_reduction)r, 0.1, false};
        GRADCHECK("clamp", f_rank, 2, xr, &kr);
    }
}
