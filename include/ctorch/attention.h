/* ctorch/attention.h — multi-head attention and the Transformer encoder layer.
 *
 * Parameters are PyTorch's: in_proj_weight [3E, E], in_proj_bias [3E], and out_proj
 * (a Linear) for MultiheadAttention; self_attn, linear1, linear2, norm1, norm2 for
 * TransformerEncoderLayer.  Sequences are [L, B, E] ([B, L, E] with batch_first, or
 * [L, E] unbatched).  ct_multi_head_attention_forward is the functional form (F's), on
 * weights the caller holds.
 *
 *     ct_module *mha = ct_nn_multihead_attention(16, 4, .batch_first = true);
 *     ct_tensor *q = ct_randn(CT_SHAPE(2, 5, 16));
 *     ct_attention_result r = ct_attention(mha, q, q, q);  // r.output [2, 5, 16], r.weights [2, 5, 5]
 */
#ifndef CTORCH_ATTENTION_H
#define CTORCH_ATTENTION_H

#include "nn.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* Options of ct_nn_multihead_attention. */
typedef struct {
    double dropout;    /* on the attention weights, in training mode */
    bool bias;         /* default true */
    bool batch_first;  /* inputs and outputs [B, L, E] instead of [L, B, E] */
} ct_mha_options;
ct_module *ct_nn_multihead_attention_with(int64_t embed_dim, int64_t num_heads, ct_mha_options o);
#define ct_nn_multihead_attention(embed_dim, num_heads, ...)                                \
    CT_AT(ct_nn_multihead_attention_with(embed_dim, num_heads,                              \
                                         CT_DEFAULTS(ct_mha_options, .bias = true, __VA_ARGS__)))

/* Options of ct_attention. */
typedef struct {
    ct_tensor *key_padding_mask; /* [B, S] (or [S]); bool: true = ignore that key; float: added */
    ct_tensor *attn_mask;        /* [L, S] or [B*heads, L, S]; bool: true = not allowed; float: added */
    bool no_weights;             /* need_weights=False: skip the averaged weights */
    bool per_head_weights;       /* average_attn_weights=False: weights [B, heads, L, S] */
} ct_attention_options;
/* What an attention forward returns. */
typedef struct {
    ct_tensor *output;  /* like query */
    ct_tensor *weights; /* [B, L, S] averaged over heads, or NULL */
} ct_attention_result;
/* MultiheadAttention's forward (query, key, value): ct_multi_head_attention_forward
 * with the module's parameters, dropout, batch_first and training mode; both results
 * registered with the scope; output NULL on error. */
ct_attention_result ct_attention_with(ct_module *mha, ct_tensor *query, ct_tensor *key,
                                      ct_tensor *value, ct_attention_options o);
#define ct_attention(mha, query, key, value, ...) \
    CT_AT(ct_attention_with(mha, query, key, value, CT_OPTIONS(ct_attention_options, __VA_ARGS__)))

/* ---- the functional form: F.multi_head_attention_forward ------------------------
 *
 * The attention of ct_attention with the weights given, no module needed; the
 * module's forward is this function with its parameters.  query [L, B, E], key
 * [S, B, kdim], value [S, B, vdim] (time-major as F's; [B, L, E] ... with
 * .batch_first, [L, E] ... unbatched); in_proj_weight [3E, E] packs the q, k and v
 * projections (kdim = vdim = E), in_proj_bias [3E] or NULL, out_proj_weight [E_out, E],
 * out_proj_bias [E_out] or NULL.  Returns output [L, B, E_out] (like query) and the
 * weights as ct_attention does; both registered with the scope; output NULL on error.
 *
 *     ct_tensor *w_in = ct_randn(CT_SHAPE(48, 16)), *b_in = ct_zeros(CT_SHAPE(48));
 *     ct_tensor *w_out = ct_randn(CT_SHAPE(16, 16)), *b_out = ct_zeros(CT_SHAPE(16));
 *     ct_tensor *q = ct_randn(CT_SHAPE(5, 2, 16));                 // [L, B, E]
 *     ct_tensor *pad = ct_tensor_bool(((bool[]){0, 0, 0, 1, 1, 0, 0, 0, 0, 0}), CT_SHAPE(2, 5));
 *     ct_attention_result r = ct_multi_head_attention_forward(q, q, q, 16, 4, w_in, b_in,
 *                                                             w_out, b_out, .key_padding_mask = pad,
 *                                                             .dropout_p = 0.1, .training = false);
 *     // r.output [5, 2, 16], r.weights [2, 5, 5]; sample 0 gives keys 3 and 4 zero weight
 *     ct_tensor *wq = ct_randn(CT_SHAPE(16, 16)), *wk = ct_randn(CT_SHAPE(16, 8)),
 *               *wv = ct_randn(CT_SHAPE(16, 12));
 *     ct_tensor *k8 = ct_randn(CT_SHAPE(2, 7, 8)), *v12 = ct_randn(CT_SHAPE(2, 7, 12));
 *     ct_attention_result s = ct_multi_head_attention_forward(           // kdim 8, vdim 12
 *         ct_randn(CT_SHAPE(2, 5, 16)), k8, v12, 16, 4, NULL, b_in, w_out, NULL,
 *         .q_proj_weight = wq, .k_proj_weight = wk, .v_proj_weight = wv,
 *         .batch_first = true, .per_head_weights = true);         // s.weights [2, 4, 5, 7]
 */
typedef struct {
    ct_tensor *key_padding_mask; /* as in ct_attention_options */
    ct_tensor *attn_mask;        /* as in ct_attention_options */
    bool no_weights;             /* need_weights=False */
    bool per_head_weights;       /* average_attn_weights=False */
    double dropout_p;            /* on the attention weights, when training */
    bool training;               /* default true (F's default; modules pass their mode) */
    bool batch_first;            /* query, key, value and output batch-major (F has no such
                                    argument: MultiheadAttention transposes around it) */
    /* use_separate_proj_weight=True: all three, instead of in_proj_weight (then ignored;
     * pass NULL): q [E, E], k [E, kdim], v [E, vdim]; in_proj_bias stays [3E]. */
    ct_tensor *q_proj_weight;
    ct_tensor *k_proj_weight;    /* with q_proj_weight and v_proj_weight, see above */
    ct_tensor *v_proj_weight;    /* with q_proj_weight and k_proj_weight, see above */
    ct_tensor *bias_k;           /* [1, 1, E], with bias_v (both or neither): one more key */
    ct_tensor *bias_v;           /* [1, 1, E], with bias_k: one more value */
    bool add_zero_attn;          /* one more key and value of zeros per head */
    ct_generator *generator;     /* the dropout's (NULL: the default generator) */
} ct_mha_forward_options;
ct_attention_result ct_multi_head_attention_forward_with(
    ct_tensor *query, ct_tensor *key, ct_tensor *value, int64_t embed_dim_to_check, int64_t num_heads,
    ct_tensor *in_proj_weight, ct_tensor *in_proj_bias, ct_tensor *out_proj_weight,
    ct_tensor *out_proj_bias, ct_mha_forward_options o);
#define ct_multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,             \
                                        in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias, \
                                        ...)                                                          \
    CT_AT(ct_multi_head_attention_forward_with(                                                       \
        query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,               \
        out_proj_weight, out_proj_bias, CT_DEFAULTS(ct_mha_forward_options, .training = true, __VA_ARGS__)))

/* The activation of the encoder layer's feed-forward block. */
typedef enum { CT_ACT_RELU = 0, CT_ACT_GELU = 1 } ct_activation;
/* Options of ct_nn_transformer_encoder_layer. */
typedef struct {
    int64_t dim_feedforward; /* 0: default 2048 */
    ct_opt_f64 dropout;      /* default 0.1; CT_SOME(0) for none */
    ct_activation activation; /* default relu */
    double layer_norm_eps;   /* 0: default 1e-5 */
    bool batch_first;        /* src [B, S, E] instead of [S, B, E] */
    bool norm_first;         /* layer norm before attention and feed-forward (pre-norm) */
} ct_encoder_layer_options;
ct_module *ct_nn_transformer_encoder_layer_with(int64_t d_model, int64_t nhead, ct_encoder_layer_options o);
#define ct_nn_transformer_encoder_layer(d_model, nhead, ...)                                \
    CT_AT(ct_nn_transformer_encoder_layer_with(d_model, nhead,                              \
                                               CT_OPTIONS(ct_encoder_layer_options, __VA_ARGS__)))
/* The encoder layer's forward with masks (ct_forward(layer, src) has none). */
ct_tensor *ct_encoder_layer_forward(ct_module *layer, ct_tensor *src, ct_tensor *src_mask,
                                    ct_tensor *src_key_padding_mask);
#define ct_encoder_layer_forward(layer, src, src_mask, src_key_padding_mask) \
    CT_AT(ct_encoder_layer_forward(layer, src, src_mask, src_key_padding_mask))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
