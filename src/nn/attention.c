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
#include "nn/layer_util.h"

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

ct_attention_result ct_attention_with(ct_module *m, ct_tensor *query, ct_tensor *key, ct_tensor *value,
                                      ct_attention_options o) {
    ct_attention_result r = {NULL, NULL};
    if (!m || !query || !key || !value) return r;
    if (strcmp(ct_module_type(m), "MultiheadAttention")) {
        ct_error("ct_attention: expected a MultiheadAttention module (got %s)", ct_module_type(m));
        return r;
    }
    mha_state *s = ct_module_state(m);
    const int64_t E = s->embed_dim, H = s->num_heads, hd = E / H;
    bool batched = ct_ndim(query) == 3;
    if ((!batched && ct_ndim(query) != 2) || ct_ndim(key) != ct_ndim(query) || ct_ndim(value) != ct_ndim(query)) {
        ct_error("ct_attention: query, key and value must all be 2-D (unbatched) or 3-D (batched)");
        return r;
    }
    if (ct_size(query, -1) != E || ct_size(key, -1) != E || ct_size(value, -1) != E) {
        ct_error("ct_attention: was expecting embedding dimension of %lld, but got %lld", (long long)E,
                 (long long)ct_size(query, -1));
        return r;
    }
    CT_SCOPE {
        /* Time-major [L, B, E]. */
        ct_tensor *q = query, *k = key, *v = value;
        if (!batched) {
            q = ct_unsqueeze(q, 1);
            k = ct_unsqueeze(k, 1);
            v = ct_unsqueeze(v, 1);
        } else if (s->o.batch_first) {
            q = ct_transpose(q, 0, 1);
            k = ct_transpose(k, 0, 1);
            v = ct_transpose(v, 0, 1);
        }
        const int64_t L = ct_size(q, 0), B = ct_size(q, 1), S = ct_size(k, 0);
        if (ct_size(k, 1) != B || ct_size(v, 0) != S || ct_size(v, 1) != B) {
            ct_error("ct_attention: key and value must have the same batch and sequence sizes, "
                     "matching the query's batch");
            break;
        }
        ct_tensor *w = s->in_proj_weight, *b = s->in_proj_bias;
        ct_tensor *qp = ct_linear(q, ct_narrow(w, 0, 0, E), b ? ct_narrow(b, 0, 0, E) : NULL);
        ct_tensor *kp = ct_linear(k, ct_narrow(w, 0, E, E), b ? ct_narrow(b, 0, E, E) : NULL);
        ct_tensor *vp = ct_linear(v, ct_narrow(w, 0, 2 * E, E), b ? ct_narrow(b, 0, 2 * E, E) : NULL);
        /* [L, B, E] -> [B*H, L, hd] */
        qp = ct_transpose(ct_reshape(qp, CT_SHAPE(L, B * H, hd)), 0, 1);
        kp = ct_transpose(ct_reshape(kp, CT_SHAPE(S, B * H, hd)), 0, 1);
        vp = ct_transpose(ct_reshape(vp, CT_SHAPE(S, B * H, hd)), 0, 1);
        /* One additive mask [B*H, L, S] (or broadcastable), as PyTorch merges them. */
        ct_tensor *mask = NULL;
        ct_dtype dt = ct_dtype_of(qp);
        if (o.attn_mask) {
            mask = as_additive(o.attn_mask, dt);
            if (ct_ndim(mask) == 2) mask = ct_unsqueeze(mask, 0);
        }
        if (o.key_padding_mask) {
            ct_tensor *kpm = as_additive(o.key_padding_mask, dt);
            kpm = ct_reshape(ct_expand(ct_reshape(kpm, CT_SHAPE(B, 1, 1, S)), CT_SHAPE(B, H, 1, S)),
                             CT_SHAPE(B * H, 1, S));
            mask = mask ? ct_add(mask, kpm) : kpm;
        }
        qp = ct_div_scalar(qp, sqrt((double)hd));
        ct_tensor *scores = mask ? ct_baddbmm(mask, qp, ct_transpose(kp, 1, 2), 1, 1)
                                 : ct_bmm(qp, ct_transpose(kp, 1, 2));
        ct_tensor *attn = ct_softmax(scores, -1);
        if (s->o.dropout > 0 && ct_module_is_training(m)) attn = ct_dropout(attn, s->o.dropout, true);
        ct_tensor *out = ct_bmm(attn, vp); /* [B*H, L, hd] */
        out = ct_reshape(ct_transpose(out, 0, 1), CT_SHAPE(L * B, E));
        out = ct_view(ct_forward(s->out_proj, out), CT_SHAPE(L, B, E));
        if (!batched) out = ct_squeeze_dim(out, 1);
        else if (s->o.batch_first) out = ct_transpose(out, 0, 1);
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
    CT_SCOPE {
        ct_module *attn = ct_nn_multihead_attention(d_model, nhead, .dropout = o.dropout, .batch_first = o.batch_first);
        if (!attn) break;
        m = ct_keep(ct_module_new(&ENCODER, sizeof(encoder_state)));
        encoder_state *s = ct_module_state(m);
        s->o = o;
        /* Registration order is PyTorch's, so that printing and state dicts match. */
        s->self_attn = ct_module_add(m, "self_attn", attn);
        s->linear1 = ct_module_add(m, "linear1", ct_nn_linear(d_model, o.dim_feedforward));
        s->dropout = ct_module_add(m, "dropout", ct_nn_dropout(o.dropout));
        s->linear2 = ct_module_add(m, "linear2", ct_nn_linear(o.dim_feedforward, d_model));
        s->norm1 = ct_module_add(m, "norm1", ct_nn_layer_norm(CT_SHAPE(d_model), .eps = o.layer_norm_eps));
        s->norm2 = ct_module_add(m, "norm2", ct_nn_layer_norm(CT_SHAPE(d_model), .eps = o.layer_norm_eps));
        s->dropout1 = ct_module_add(m, "dropout1", ct_nn_dropout(o.dropout));
        s->dropout2 = ct_module_add(m, "dropout2", ct_nn_dropout(o.dropout));
        if (!s->linear1 || !s->linear2 || !s->norm1 || !s->norm2 || !s->dropout || !s->dropout1 || !s->dropout2)
            m = NULL;
    }
    return m;
}
