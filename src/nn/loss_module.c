/* Loss modules (nn.CrossEntropyLoss, ...): the functional forms behind a module whose
 * forward takes (input, target), or (x1, x2, target).  Class weights are buffers
 * ("weight", "pos_weight") looked up at each call, so ct_module_to and state-dict
 * loading reach them.  Like PyTorch's, they print as "CrossEntropyLoss()". */
#include "ctorch.h"
#include "core/error.h"
#include "core/object.h"
#include "nn/layer_util.h"

/* The options of whichever loss the module computes (weights live in buffers). */
typedef union {
    ct_cross_entropy_options ce;
    ct_nll_loss_options nll;
    ct_bce_options bce;
    ct_bce_with_logits_options bcel;
    ct_loss_options plain;
    ct_smooth_l1_options sl1;
    ct_huber_options huber;
    ct_kl_div_options kl;
    ct_margin_options margin;
} loss_state;

static bool arity(ct_module *m, int n_in, int want, int max_out) {
    if (n_in == want && max_out >= 1) return true;
    ct_error("ct_forward_multi: %s takes %d inputs (%s) and gives one output (got %d inputs)",
             ct_module_type(m), want, want == 2 ? "input, target" : "x1, x2, target", n_in);
    return false;
}

/* One class per loss: NAME its PyTorch class, N_IN its inputs, CALL the functional
 * form reading s (the state) and in[]. */
#define LOSS_CLASS(ID, NAME, N_IN, CALL)                                                 \
    static int ID##_forward(ct_module *m, int n_in, ct_tensor *const *in, ct_tensor **out, \
                            int max_out) {                                               \
        if (!arity(m, n_in, N_IN, max_out)) return -1;                                   \
        loss_state *s = ct_module_state(m);                                              \
        out[0] = CALL;                                                                   \
        return out[0] ? 1 : -1;                                                          \
    }                                                                                    \
    static const ct_module_class ID##_CLASS = {.name = NAME, .forward_multi = ID##_forward};

static ct_tensor *buffer(ct_module *m, const char *name) { return ct_module_get_buffer(m, name); }

LOSS_CLASS(ce, "CrossEntropyLoss", 2, ({
    ct_cross_entropy_options o = s->ce;
    o.weight = buffer(m, "weight");
    ct_cross_entropy_with(in[0], in[1], o);
}))
LOSS_CLASS(nll, "NLLLoss", 2, ({
    ct_nll_loss_options o = s->nll;
    o.weight = buffer(m, "weight");
    ct_nll_loss_with(in[0], in[1], o);
}))
LOSS_CLASS(bce, "BCELoss", 2, ({
    ct_bce_options o = s->bce;
    o.weight = buffer(m, "weight");
    ct_binary_cross_entropy_with(in[0], in[1], o);
}))
LOSS_CLASS(bcel, "BCEWithLogitsLoss", 2, ({
    ct_bce_with_logits_options o = s->bcel;
    o.weight = buffer(m, "weight");
    o.pos_weight = buffer(m, "pos_weight");
    ct_binary_cross_entropy_with_logits_with(in[0], in[1], o);
}))
LOSS_CLASS(mse, "MSELoss", 2, ct_mse_loss_with(in[0], in[1], s->plain))
LOSS_CLASS(l1, "L1Loss", 2, ct_l1_loss_with(in[0], in[1], s->plain))
LOSS_CLASS(sl1, "SmoothL1Loss", 2, ct_smooth_l1_loss_with(in[0], in[1], s->sl1))
LOSS_CLASS(huber, "HuberLoss", 2, ct_huber_loss_with(in[0], in[1], s->huber))
LOSS_CLASS(kl, "KLDivLoss", 2, ct_kl_div_with(in[0], in[1], s->kl))
LOSS_CLASS(cos, "CosineEmbeddingLoss", 3,
           ct_cosine_embedding_loss_with(in[0], in[1], in[2], s->margin))
LOSS_CLASS(rank, "MarginRankingLoss", 3,
           ct_margin_ranking_loss_with(in[0], in[1], in[2], s->margin))

/* A new module of cls with state s; each weight given becomes a buffer: a detached
 * tensor sharing the caller's memory, so the caller's own reference is untouched. */
static ct_module *make(const ct_module_class *cls, loss_state s, ct_tensor *weight,
                       ct_tensor *pos_weight) {
    ct_module *m = ct_module_new(cls, sizeof(loss_state));
    if (!m) return NULL;
    *(loss_state *)ct_module_state(m) = s;
    if ((weight && !ct_module_add_buffer(m, "weight", ct_detach(weight), true)) ||
        (pos_weight && !ct_module_add_buffer(m, "pos_weight", ct_detach(pos_weight), true))) {
        ct_layer_discard(m);
        return NULL;
    }
    return m;
}

ct_module *ct_nn_cross_entropy_loss_with(ct_cross_entropy_options o) {
    return make(&ce_CLASS, (loss_state){.ce = o}, o.weight, NULL);
}
ct_module *ct_nn_nll_loss_with(ct_nll_loss_options o) {
    return make(&nll_CLASS, (loss_state){.nll = o}, o.weight, NULL);
}
ct_module *ct_nn_bce_loss_with(ct_bce_options o) {
    return make(&bce_CLASS, (loss_state){.bce = o}, o.weight, NULL);
}
ct_module *ct_nn_bce_with_logits_loss_with(ct_bce_with_logits_options o) {
    return make(&bcel_CLASS, (loss_state){.bcel = o}, o.weight, o.pos_weight);
}
ct_module *ct_nn_mse_loss_with(ct_loss_options o) {
    return make(&mse_CLASS, (loss_state){.plain = o}, NULL, NULL);
}
ct_module *ct_nn_l1_loss_with(ct_loss_options o) {
    return make(&l1_CLASS, (loss_state){.plain = o}, NULL, NULL);
}
ct_module *ct_nn_smooth_l1_loss_with(ct_smooth_l1_options o) {
    return make(&sl1_CLASS, (loss_state){.sl1 = o}, NULL, NULL);
}
ct_module *ct_nn_huber_loss_with(ct_huber_options o) {
    return make(&huber_CLASS, (loss_state){.huber = o}, NULL, NULL);
}
ct_module *ct_nn_kl_div_loss_with(ct_kl_div_options o) {
    return make(&kl_CLASS, (loss_state){.kl = o}, NULL, NULL);
}
ct_module *ct_nn_cosine_embedding_loss_with(ct_margin_options o) {
    return make(&cos_CLASS, (loss_state){.margin = o}, NULL, NULL);
}
ct_module *ct_nn_margin_ranking_loss_with(ct_margin_options o) {
    return make(&rank_CLASS, (loss_state){.margin = o}, NULL, NULL);
}

static ct_tensor *call(ct_module *m, int n, ct_tensor *const *in) {
    ct_tensor *out = NULL;
    return m && ct_forward_multi(m, n, in, &out, 1) == 1 ? out : NULL;
}
ct_tensor *(ct_loss)(ct_module *loss, ct_tensor *input, ct_tensor *target) {
    if (!ct_alive("ct_loss", 1, loss) || !ct_alive("ct_loss", 2, input) ||
        !ct_alive("ct_loss", 3, target))
        return NULL;
    ct_tensor *in[2] = {input, target};
    return call(loss, 2, in);
}
ct_tensor *(ct_loss3)(ct_module *loss, ct_tensor *x1, ct_tensor *x2, ct_tensor *target) {
    if (!ct_alive("ct_loss3", 1, loss) || !ct_alive("ct_loss3", 2, x1) ||
        !ct_alive("ct_loss3", 3, x2) || !ct_alive("ct_loss3", 4, target))
        return NULL;
    ct_tensor *in[3] = {x1, x2, target};
    return call(loss, 3, in);
}
