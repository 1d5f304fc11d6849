/* Dropout, Dropout2d, Embedding modules; F.dropout2d and the max_norm renorm. */
#include <math.h>
#include <stdio.h>

#include "core/object.h"
#include "nn/layer_util.h"
#include "ops/options.h"

static bool check_p(const char *op, double p) {
    if (!(p >= 0 && p <= 1)) {
        ct_error("%s: dropout probability has to be between 0 and 1, but got %g", op, p);
        return false;
    }
    return true;
}

typedef struct {
    double p;
    bool two_d;
    ct_dropout_layer_options o;
} dropout_state;

static ct_tensor *dropout_forward(ct_module *m, ct_tensor *x) {
    const dropout_state *s = ct_module_state(m);
    bool training = ct_module_is_training(m);
    ct_dropout_options o = {.generator = s->o.generator, .inplace = s->o.inplace};
    return s->two_d ? ct_dropout2d_with(x, s->p, training, o) : ct_dropout_with(x, s->p, training, o);
}
static void dropout_repr(const ct_module *m, char *buf, size_t size) {
    const dropout_state *s = ct_module_state(m);
    char p[32];
    ct_layer_fmt_float(p, sizeof p, s->p, false);
    snprintf(buf, size, "p=%s, inplace=%s", p, s->o.inplace ? "True" : "False");
}
static void dropout_destroy(ct_module *m) {
    const dropout_state *s = ct_module_state(m);
    if (s->o.generator) ct_release(s->o.generator);
}
static const ct_module_class DROPOUT = {.name = "Dropout", .forward = dropout_forward,
                                        .extra_repr = dropout_repr, .destroy = dropout_destroy};
static const ct_module_class DROPOUT2D = {.name = "Dropout2d", .forward = dropout_forward,
                                          .extra_repr = dropout_repr, .destroy = dropout_destroy};

static ct_module *dropout_new(bool two_d, double p, ct_dropout_layer_options o) {
    const char *name = two_d ? "ct_nn_dropout2d" : "ct_nn_dropout";
    if (!ct_option_alive(name, "generator", o.generator) || !check_p(name, p)) return NULL;
    ct_module *m = ct_module_new(two_d ? &DROPOUT2D : &DROPOUT, sizeof(dropout_state));
    if (!m) return NULL;
    /* The module keeps its generator alive. */
    if (o.generator) ct_retain(o.generator);
    *(dropout_state *)ct_module_state(m) = (dropout_state){p, two_d, o};
    return m;
}
ct_module *ct_nn_dropout_with(double p, ct_dropout_layer_options o) { return dropout_new(false, p, o); }
ct_module *ct_nn_dropout2d_with(double p, ct_dropout_layer_options o) { return dropout_new(true, p, o); }

/* ---- Embedding ------------------------------------------------------------------------- */

typedef struct {
    int64_t num, dim;
    ct_embedding_options o; /* padding_idx in [0, num) when given; norm_type resolved */
} emb_state;

static ct_tensor *embedding_forward(ct_module *m, ct_tensor *idx) {
    const emb_state *s = ct_module_state(m);
    return ct_embedding_with(idx, ct_layer_tensor(m, "weight"), s->o);
}
static void embedding_repr(const ct_module *m, char *buf, size_t size) {
    const emb_state *s = ct_module_state(m);
    size_t n = (size_t)snprintf(buf, size, "%lld, %lld", (long long)s->num, (long long)s->dim);
    char f[32];
    if (s->o.padding_idx.set && n < size)
        n += (size_t)snprintf(buf + n, size - n, ", padding_idx=%lld", (long long)s->o.padding_idx.v);
    if (s->o.max_norm > 0 && n < size) {
        ct_layer_fmt_float(f, sizeof f, s->o.max_norm, false);
        n += (size_t)snprintf(buf + n, size - n, ", max_norm=%s", f);
    }
    if (s->o.norm_type != 2 && n < size) {
        ct_layer_fmt_float(f, sizeof f, s->o.norm_type, false);
        n += (size_t)snprintf(buf + n, size - n, ", norm_type=%s", f);
    }
    if (s->o.scale_grad_by_freq && n < size) snprintf(buf + n, size - n, ", scale_grad_by_freq=True");
}
static const ct_module_class EMBEDDING = {.name = "Embedding", .forward = embedding_forward,
                                          .extra_repr = embedding_repr};

ct_module *ct_nn_embedding_with(int64_t num, int64_t dim, ct_embedding_options o) {
    int64_t pad;
    if (o.sparse) {
        ct_error("ct_nn_embedding: sparse=True is not supported: ctorch has no sparse tensors "
                 "(the gradient of weight is dense with sparse=False)");
        return NULL;
    }
    if (!ct_embedding_padding("ct_nn_embedding", o.padding_idx, num, &pad)) return NULL;
    ct_module *m = ct_module_new(&EMBEDDING, sizeof(emb_state));
    if (!m) return NULL;
    ct_dtype dtype = o.dtype;
    o.padding_idx = pad < 0 ? (ct_opt_f64){0} : CT_SOME(pad);
    o.norm_type = ct_zero_or(o.norm_type, 2);
    o.dtype = CT_DTYPE_UNSET; /* the weight's; the forward is F.embedding's */
    *(emb_state *)ct_module_state(m) = (emb_state){num, dim, o};
    ct_tensor *w = ct_layer_param(m, "weight", CT_SHAPE(num, dim), dtype);
    bool ok = false;
    CT_NO_GRAD {
        CT_SCOPE {
            ok = ct_init_normal_(w, 0, 1) != NULL &&
                 (pad < 0 || ct_fill_(ct_select(w, 0, pad), 0) != NULL);
        }
    }
    if (!ok) {
        ct_layer_discard(m);
        return NULL;
    }
    return m;
}
