/* MultiheadAttention and TransformerEncoderLayer after PyTorch 1.13's
 * F.multi_head_attention_forward and nn.TransformerEncoderLayer, composed of ops. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ctorch.h"
#include "ctorch/attention.h"
#include "ctorch/init.h"
#include "ctorch/layers.h"
#include "core/error.h"
#include "core/object.h"
#include "nn/layer_util.h"
#include "ops/options.h"

typedef struct {
    int64_t embed_dim, num_heads;
    ct_mha_options o;
    ct_tensor *in_proj_weight, *in_proj_bias;
    ct_module *out_proj;
} mha_state;

static void mha_repr(const ct_module *m, char *buf, size_t size) {
    (void)m;
    (void)size;
    buf[0] = 0; /* PyTorch prints only the out_proj child */
}

/* A float mask to add to the scores: bool masks become 0 / -inf. */
static ct_tensor *as_additive(ct_tensor *mask, ct_dtype dtype) {
    if (ct_dtype_of(mask) != CT_BOOL) return ct_to(mask, .dtype = dtype);
    return ct_masked_fill(ct_zeros_like(mask, .dtype = dtype), mask, -INFINITY);
}

static const char *shape_of(const ct_tensor *t, char buf[CT_SHAPE_STR_MAX]) {
    ct_shape s = ct_shape_of(t);
    return ct_shape_str(s.ndim, s.d, buf);
}

/* PyTorch's _mha_shape_check: whether the input is batched, or -1 with an error. */
static int check_dims(const char *who, ct_tensor *q, ct_tensor *k, ct_tensor *v, ct_tensor *kpm,
                      ct_tensor *am) {
    int n = ct_ndim(q);
    if (n != 2 && n != 3) {
        ct_error("%s: query should be unbatched 2D or batched 3D tensor but received %d-D query tensor", who, n);
        return -1;
    }
    const char *kind = n == 3 ? "batched (3-D)" : "unbatched (2-D)";
    if (ct_ndim(k) != n || ct_ndim(v) != n) {
        ct_error("%s: For %s `query`, expected `key` and `value` to be %d-D but found %d-D and %d-D tensors "
                 "respectively", who, kind, n, ct_ndim(k), ct_ndim(v));
        return -1;
    }
    if (kpm && ct_ndim(kpm) != n - 1) {
        ct_error("%s: For %s `query`, expected `key_padding_mask` to be `None` or %d-D but found %d-D tensor "
                 "instead", who, kind, n - 1, ct_ndim(kpm));
        return -1;
    }
    if (am && ct_ndim(am) != 2 && ct_ndim(am) != 3) {
        ct_error("%s: For %s `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found %d-D tensor "
                 "instead", who, kind, ct_ndim(am));
        return -1;
    }
    return n == 3;
}

/* attn_mask as an additive [1 or B*H, L, S] mask of dtype dt, or NULL with an error. */
static ct_tensor *prepare_attn_mask(const char *who, ct_tensor *am, int64_t L, int64_t S, int64_t BH, ct_dtype dt) {
    ct_dtype d = ct_dtype_of(am);
    if (d == CT_U8) am = ct_to(am, .dtype = CT_BOOL);
    else if (d != CT_BOOL && !ct_dtype_is_floating(d)) {
        ct_error("%s: Only float, byte, and bool types are supported for attn_mask, not torch.%s", who, ct_dtype_name(d));
        return NULL;
    }
    ct_shape s = ct_shape_of(am);
    char buf[CT_SHAPE_STR_MAX];
    if (s.ndim == 2 && (s.d[0] != L || s.d[1] != S)) {
        ct_error("%s: The shape of the 2D attn_mask is %s, but should be (%lld, %lld).", who, shape_of(am, buf),
                 (long long)L, (long long)S);
        return NULL;
    }
    if (s.ndim == 3 && (s.d[0] != BH || s.d[1] != L || s.d[2] != S)) {
        ct_error("%s: The shape of the 3D attn_mask is %s, but should be (%lld, %lld, %lld).", who,
                 shape_of(am, buf), (long long)BH, (long long)L, (long long)S);
        return NULL;
    }
    am = as_additive(am, dt);
    return s.ndim == 2 ? ct_unsqueeze(am, 0) : am;
}

/* key_padding_mask ([B, S] or [S] unbatched) as an additive [B, S] mask, or NULL with an error. */
static ct_tensor *prepare_kpm(const char *who, ct_tensor *kpm, int64_t B, int64_t S, ct_dtype dt) {
    if (ct_dtype_of(kpm) != CT_BOOL && !ct_dtype_is_floating(ct_dtype_of(kpm))) {
        ct_error("%s: only bool and floating types of key_padding_mask are supported", who);
        return NULL;
    }
    if (ct_ndim(kpm) == 1) kpm = ct_unsqueeze(kpm, 0);
    if (ct_size(kpm, 0) != B || ct_size(kpm, 1) != S) {
        char buf[CT_SHAPE_STR_MAX];
        ct_error("%s: expecting key_padding_mask shape of (%lld, %lld), but got %s", who, (long long)B,
                 (long long)S, shape_of(kpm, buf));
        return NULL;
    }
    return as_additive(kpm, dt);
}

/* The q, k and v projections: packed in_proj_weight, or the three separate weights. */
static int project(const char *who, ct_tensor *q, ct_tensor *k, ct_tensor *v, int64_t E, ct_tensor *ipw,
                   ct_tensor *ipb, const ct_mha_forward_options *o, ct_tensor **out) {
    bool separate = o->q_proj_weight || o->k_proj_weight || o->v_proj_weight;
    ct_tensor *w[3] = {o->q_proj_weight, o->k_proj_weight, o->v_proj_weight};
    static const char *names[3] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};
    for (int i = 0; i < 3; i++) {
        if (separate && !w[i]) {
            ct_error("%s: use_separate_proj_weight is True but %s is None", who, names[i]);
            return -1;
        }
        if (!separate) {
            if (!ipw) {
                ct_error("%s: use_separate_proj_weight is False but in_proj_weight is None", who);
                return -1;
            }
            w[i] = ct_narrow(ipw, 0, i * E, E);
        }
    }
    ct_tensor *x[3] = {q, k, v};
    for (int i = 0; i < 3; i++) {
        out[i] = ct_linear(x[i], w[i], ipb ? ct_narrow(ipb, 0, i * E, E) : NULL);
        if (!out[i]) return -1;
    }
    return 0;
}

/* Appends one key/value position (bias_k/bias_v, or the zero attention) to the masks. */
static void pad_masks(ct_tensor **am, ct_tensor **kpm) {
    if (*am) *am = ct_pad(*am, CT_DIMS(0, 1));
    if (*kpm) *kpm = ct_pad(*kpm, CT_DIMS(0, 1));
}

/* F.multi_head_attention_forward (PyTorch 1.13's steps); `who` names the caller in errors. */
static ct_attention_result mha_forward_impl(const char *who, ct_tensor *query, ct_tensor *key, ct_tensor *value,
                                            int64_t embed_dim_to_check, int64_t H, ct_tensor *ipw, ct_tensor *ipb,
                                            ct_tensor *opw, ct_tensor *opb, ct_mha_forward_options o) {
    ct_attention_result r = {NULL, NULL};
    if (!ct_option_alive(who, "key_padding_mask", o.key_padding_mask) ||
        !ct_option_alive(who, "attn_mask", o.attn_mask) ||
        !ct_option_alive(who, "q_proj_weight", o.q_proj_weight) ||
        !ct_option_alive(who, "k_proj_weight", o.k_proj_weight) ||
        !ct_option_alive(who, "v_proj_weight", o.v_proj_weight) ||
        !ct_option_alive(who, "bias_k", o.bias_k) || !ct_option_alive(who, "bias_v", o.bias_v) ||
        !ct_option_alive(who, "generator", o.generator))
        return r;
    if (!query || !key || !value) return r;
    if (!opw) {
        ct_error("%s: out_proj_weight is required", who);
        return r;
    }
    int batched = check_dims(who, query, key, value, o.key_padding_mask, o.attn_mask);
    if (batched < 0) return r;
    CT_SCOPE {
        /* Time-major [L, B, E]. */
        ct_tensor *q = query, *k = key, *v = value;
        if (!batched) {
            q = ct_unsqueeze(q, 1);
            k = ct_unsqueeze(k, 1);
            v = ct_unsqueeze(v, 1);
        } else if (o.batch_first) {
            q = ct_transpose(q, 0, 1);
            k = ct_transpose(k, 0, 1);
            v = ct_transpose(v, 0, 1);
        }
        const int64_t L = ct_size(q, 0), B = ct_size(q, 1), E = ct_size(q, 2);
        int64_t S = ct_size(k, 0);
        if (E != embed_dim_to_check) {
            ct_error("%s: was expecting embedding dimension of %lld, but got %lld", who,
                     (long long)embed_dim_to_check, (long long)E);
            break;
        }
        if (H <= 0 || E % H) {
            ct_error("%s: embed_dim %lld not divisible by num_heads %lld", who, (long long)E, (long long)H);
            break;
        }
        const int64_t hd = E / H;
        bool separate = o.q_proj_weight || o.k_proj_weight || o.v_proj_weight;
        char b1[CT_SHAPE_STR_MAX], b2[CT_SHAPE_STR_MAX];
        ct_shape ks = ct_shape_of(k), vs = ct_shape_of(v);
        if (separate && (ks.d[0] != vs.d[0] || ks.d[1] != vs.d[1])) {
            ct_error("%s: key's sequence and batch dims %s do not match value's %s", who,
                     ct_shape_str(2, ks.d, b1), ct_shape_str(2, vs.d, b2));
            break;
        }
        if (!separate && (ks.d[2] != vs.d[2] || ks.d[0] != vs.d[0] || ks.d[1] != vs.d[1])) {
            ct_error("%s: key shape %s does not match value shape %s", who, shape_of(k, b1), shape_of(v, b2));
            break;
        }
        if (ct_size(k, 1) != B) {
            ct_error("%s: key and value must have the query's batch size %lld (got %lld)", who, (long long)B,
                     (long long)ct_size(k, 1));
            break;
        }
        ct_tensor *p[3];
        if (project(who, q, k, v, E, ipw, ipb, &o, p)) break;
        ct_tensor *qp = p[0], *kp = p[1], *vp = p[2];
        ct_dtype dt = ct_dtype_of(qp);
        ct_tensor *am = NULL, *kpm = NULL;
        if (o.attn_mask && !(am = prepare_attn_mask(who, o.attn_mask, L, S, B * H, dt))) break;
        if (o.key_padding_mask && !(kpm = prepare_kpm(who, o.key_padding_mask, B, S, dt))) break;
        if ((o.bias_k != NULL) != (o.bias_v != NULL)) {
            ct_error("%s: bias_k and bias_v must be given together", who);
            break;
        }
        if (o.bias_k) {
            kp = ct_cat(CT_TENSORS(kp, ct_expand(o.bias_k, CT_SHAPE(1, B, E))), 0);
            vp = ct_cat(CT_TENSORS(vp, ct_expand(o.bias_v, CT_SHAPE(1, B, E))), 0);
            pad_masks(&am, &kpm);
            S++;
        }
        /* [L, B, E] -> [B*H, L, hd] */
        qp = ct_transpose(ct_reshape(qp, CT_SHAPE(L, B * H, hd)), 0, 1);
        kp = ct_transpose(ct_reshape(kp, CT_SHAPE(S, B * H, hd)), 0, 1);
        vp = ct_transpose(ct_reshape(vp, CT_SHAPE(S, B * H, hd)), 0, 1);
        if (o.add_zero_attn) {
            ct_tensor *zeros = ct_zeros(CT_SHAPE(B * H, 1, hd), .dtype = dt, .device = ct_device_of(kp));
            kp = ct_cat(CT_TENSORS(kp, zeros), 1);
            vp = ct_cat(CT_TENSORS(vp, zeros), 1);
            pad_masks(&am, &kpm);
            S++;
        }
        /* One additive mask [B*H, L, S] (or broadcastable), as PyTorch merges them. */
        if (kpm) {
            kpm = ct_reshape(ct_expand(ct_reshape(kpm, CT_SHAPE(B, 1, 1, S)), CT_SHAPE(B, H, 1, S)),
                             CT_SHAPE(B * H, 1, S));
            am = am ? ct_add(am, kpm) : kpm;
        }
        qp = ct_div_scalar(qp, sqrt((double)hd));
        ct_tensor *scores = am ? ct_baddbmm(am, qp, ct_transpose(kp, 1, 2)) : ct_bmm(qp, ct_transpose(kp, 1, 2));
        ct_tensor *attn = ct_softmax(scores, -1);
        if (o.training && o.dropout_p > 0) attn = ct_dropout(attn, o.dropout_p, true, .generator = o.generator);
        ct_tensor *out = ct_bmm(attn, vp); /* [B*H, L, hd] */
        out = ct_linear(ct_reshape(ct_transpose(out, 0, 1), CT_SHAPE(L * B, E)), opw, opb);
        if (!out) break;
        out = ct_view(out, CT_SHAPE(L, B, ct_size(out, 1)));
        if (!batched) out = ct_squeeze_dim(out, 1);
        else if (o.batch_first) out = ct_transpose(out, 0, 1);
        ct_tensor *weights = NULL;
        if (!o.no_weights && out) {
            weights = ct_view(attn, CT_SHAPE(B, H, L, S));
            if (!o.per_head_weights) weights = ct_mean(weights, .dims = CT_DIMS(1));
            if (!batched) weights = ct_squeeze_dim(weights, 0);
        }
        if (out && (o.no_weights || weights)) {
            r.output = ct_keep(out);
            r.weights = weights ? ct_keep(weights) : NULL;
        }
    }
    return r;
}

ct_attention_result ct_multi_head_attention_forward_with(ct_tensor *query, ct_tensor *key, ct_tensor *value,
                                                         int64_t embed_dim_to_check, int64_t num_heads,
                                                         ct_tensor *in_proj_weight, ct_tensor *in_proj_bias,
                                                         ct_tensor *out_proj_weight, ct_tensor *out_proj_bias,
                                                         ct_mha_forward_options o) {
    if (!ct_alive("ct_multi_head_attention_forward", 1, query) ||
        !ct_alive("ct_multi_head_attention_forward", 2, key) ||
        !ct_alive("ct_multi_head_attention_forward", 3, value) ||
        !ct_alive("ct_multi_head_attention_forward", 6, in_proj_weight) ||
        !ct_alive("ct_multi_head_attention_forward", 7, in_proj_bias) ||
        !ct_alive("ct_multi_head_attention_forward", 8, out_proj_weight) ||
        !ct_alive("ct_multi_head_attention_forward", 9, out_proj_bias))
        return (ct_attention_result){0};
    return mha_forward_impl("ct_multi_head_attention_forward", query, key, value, embed_dim_to_check, num_heads,
                            in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias, o);
}

/* nn.MultiheadAttention.forward: the functional form with the module's parameters. */
ct_attention_result ct_attention_with(ct_module *m, ct_tensor *query, ct_tensor *key, ct_tensor *value,
                                      ct_attention_options o) {
    if (!ct_alive("ct_attention", 1, m) || !ct_alive("ct_attention", 2, query) ||
        !ct_alive("ct_attention", 3, key) || !ct_alive("ct_attention", 4, value))
        return (ct_attention_result){0};
    ct_attention_result r = {NULL, NULL};
    if (!m || !query || !key || !value) return r;
    if (strcmp(ct_module_type(m), "MultiheadAttention")) {
        ct_error("ct_attention: expected a MultiheadAttention module (got %s)", ct_module_type(m));
        return r;
    }
    mha_state *s = ct_module_state(m);
    ct_mha_forward_options f = {
        .key_padding_mask = o.key_padding_mask, .attn_mask = o.attn_mask, .no_weights = o.no_weights,
        .per_head_weights = o.per_head_weights, .dropout_p = s->o.dropout,
        .training = ct_module_is_training(m), .batch_first = s->o.batch_first,
    };
    return mha_forward_impl("ct_attention", query, key, value, s->embed_dim, s->num_heads, s->in_proj_weight,
                            s->in_proj_bias, ct_layer_tensor(s->out_proj, "weight"),
                            ct_layer_tensor(s->out_proj, "bias"), f);
}

static ct_tensor *mha_forward(ct_module *m, ct_tensor *x) {
    return ct_attention_with(m, x, x, x, (ct_attention_options){.no_weights = true}).output;
}

static const ct_module_class MHA = {.name = "MultiheadAttention", .forward = mha_forward, .extra_repr = mha_repr};

ct_module *ct_nn_multihead_attention_with(int64_t embed_dim, int64_t num_heads, ct_mha_options o) {
    if (embed_dim <= 0 || num_heads <= 0 || embed_dim % num_heads) {
        ct_error("ct_nn_multihead_attention: embed_dim must be divisible by num_heads (got %lld and %lld)",
                 (long long)embed_dim, (long long)num_heads);
        return NULL;
    }
    ct_module *m = NULL;
    CT_SCOPE {
        m = ct_keep(ct_module_new(&MHA, sizeof(mha_state)));
        if (!m) break;
        mha_state *s = ct_module_state(m);
        *s = (mha_state){.embed_dim = embed_dim, .num_heads = num_heads, .o = o};
        /* PyTorch's _reset_parameters: xavier_uniform_ in_proj, zero biases. */
        ct_tensor *w = ct_empty(CT_SHAPE(3 * embed_dim, embed_dim));
        ct_init_xavier_uniform_(w);
        s->in_proj_weight = ct_module_add_parameter(m, "in_proj_weight", w);
        if (o.bias) s->in_proj_bias = ct_module_add_parameter(m, "in_proj_bias", ct_zeros(CT_SHAPE(3 * embed_dim)));
        s->out_proj = ct_module_add(m, "out_proj", ct_nn_out_proj_linear(embed_dim, embed_dim, (ct_linear_options){.bias = o.bias}));
        if (o.bias) CT_NO_GRAD { ct_zero_(ct_module_get_parameter(s->out_proj, "bias")); }
        if (!s->in_proj_weight || !s->out_proj) {
            m = NULL;
            break;
        }
    }
    return m;
}

/* ---- TransformerEncoderLayer -------------------------------------------------------------- */

typedef struct {
    ct_encoder_layer_options o;
    ct_module *self_attn, *linear1, *dropout, *linear2, *norm1, *norm2, *dropout1, *dropout2;
} encoder_state;

static ct_tensor *activate(const encoder_state *s, ct_tensor *x) {
    return s->o.activation == CT_ACT_GELU ? ct_gelu(x) : ct_relu(x);
}

static ct_tensor *self_attention_block(ct_module *m, encoder_state *s, ct_tensor *x, ct_tensor *mask,
                                       ct_tensor *kpm) {
    (void)m;
    ct_tensor *a = ct_attention(s->self_attn, x, x, x, .attn_mask = mask, .key_padding_mask = kpm,
                                .no_weights = true).output;
    return ct_forward(s->dropout1, a);
}

static ct_tensor *feed_forward_block(encoder_state *s, ct_tensor *x) {
    ct_tensor *h = ct_forward(s->dropout, activate(s, ct_forward(s->linear1, x)));
    return ct_forward(s->dropout2, ct_forward(s->linear2, h));
}

ct_tensor *ct_encoder_layer_forward(ct_module *m, ct_tensor *src, ct_tensor *src_mask, ct_tensor *kpm) {
    if (!ct_alive("ct_encoder_layer_forward", 1, m) ||
        !ct_alive("ct_encoder_layer_forward", 2, src) ||
        !ct_alive("ct_encoder_layer_forward", 3, src_mask) ||
        !ct_alive("ct_encoder_layer_forward", 4, kpm))
        return NULL;
    if (!m || !src) return NULL;
    if (strcmp(ct_module_type(m), "TransformerEncoderLayer")) {
        ct_error("ct_encoder_layer_forward: expected a TransformerEncoderLayer (got %s)", ct_module_type(m));
        return NULL;
    }
    encoder_state *s = ct_module_state(m);
    ct_tensor *x = NULL;
    CT_SCOPE {
        x = src;
        if (s->o.norm_first) {
            x = ct_add(x, self_attention_block(m, s, ct_forward(s->norm1, x), src_mask, kpm));
            x = ct_add(x, feed_forward_block(s, ct_forward(s->norm2, x)));
        } else {
            x = ct_forward(s->norm1, ct_add(x, self_attention_block(m, s, x, src_mask, kpm)));
            x = ct_forward(s->norm2, ct_add(x, feed_forward_block(s, x)));
        }
        x = ct_keep(x);
    }
    return x;
}

static ct_tensor *encoder_forward(ct_module *m, ct_tensor *x) { return ct_encoder_layer_forward(m, x, NULL, NULL); }

static const ct_module_class ENCODER = {.name = "TransformerEncoderLayer", .forward = encoder_forward};

ct_module *ct_nn_transformer_encoder_layer_with(int64_t d_model, int64_t nhead, ct_encoder_layer_options o) {
    ct_module *m = NULL;
    o.dim_feedforward = o.dim_feedforward ? o.dim_feedforward : 2048;
    o.dropout = CT_SOME(ct_opt_or(o.dropout, 0.1));
    o.layer_norm_eps = ct_zero_or(o.layer_norm_eps, 1e-5);
    double p = o.dropout.v;
    CT_SCOPE {
        ct_module *attn = ct_nn_multihead_attention(d_model, nhead, .dropout = p, .batch_first = o.batch_first);
        if (!attn) break;
        m = ct_keep(ct_module_new(&ENCODER, sizeof(encoder_state)));
        if (!m) break;
        encoder_state *s = ct_module_state(m);
        s->o = o;
        /* Registration order is PyTorch's, so that printing and state dicts match. */
        s->self_attn = ct_module_add(m, "self_attn", attn);
        s->linear1 = ct_module_add(m, "linear1", ct_nn_linear(d_model, o.dim_feedforward));
        s->dropout = ct_module_add(m, "dropout", ct_nn_dropout(p));
        s->linear2 = ct_module_add(m, "linear2", ct_nn_linear(o.dim_feedforward, d_model));
        s->norm1 = ct_module_add(m, "norm1", ct_nn_layer_norm(CT_SHAPE(d_model), .eps = o.layer_norm_eps));
        s->norm2 = ct_module_add(m, "norm2", ct_nn_layer_norm(CT_SHAPE(d_model), .eps = o.layer_norm_eps));
        s->dropout1 = ct_module_add(m, "dropout1", ct_nn_dropout(p));
        s->dropout2 = ct_module_add(m, "dropout2", ct_nn_dropout(p));
        if (!s->linear1 || !s->linear2 || !s->norm1 || !s->norm2 || !s->dropout || !s->dropout1 || !s->dropout2)
            m = NULL;
    }
    return m;
}
