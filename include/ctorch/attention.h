/* ctorch/attention.h — multi-head attention and the Transformer encoder layer.
 *
 * Parameters are PyTorch's: in_proj_weight [3E, E], in_proj_bias [3E], and out_proj
 * (a Linear) for MultiheadAttention; self_attn, linear1, linear2, norm1, norm2 for
 * TransformerEncoderLayer.  Sequences are [L, B, E] ([B, L, E] with batch_first, or
 * [L, E] unbatched).
 *
 *     ct_module *mha = ct_nn_multihead_attention(16, 4, .batch_first = true);
 *     ct_tensor *q = ct_randn(CT_SHAPE(2, 5, 16));
 *     ct_attention_result r = ct_attention(mha, q, q, q);  // r.output [2, 5, 16], r.weights [2, 5, 5]
 */
#ifndef CTORCH_ATTENTION_H
#define CTORCH_ATTENTION_H

#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double dropout;    /* on the attention weights, in training mode */
    bool bias;         /* default true */
    bool batch_first;
} ct_mha_options;
ct_module *ct_nn_multihead_attention_with(int64_t embed_dim, int64_t num_heads, ct_mha_options o);
#define ct_nn_multihead_attention(embed_dim, num_heads, ...)                                \
    CT_AT(ct_nn_multihead_attention_with(embed_dim, num_heads,                              \
                                         CT_DEFAULTS(ct_mha_options, .bias = true, __VA_ARGS__)))

typedef struct {
    ct_tensor *key_padding_mask; /* [B, S] (or [S]); bool: true = ignore that key; float: added */
    ct_tensor *attn_mask;        /* [L, S] or [B*heads, L, S]; bool: true = not allowed; float: added */
    bool no_weights;             /* need_weights=False: skip the averaged weights */
    bool per_head_weights;       /* average_attn_weights=False: weights [B, heads, L, S] */
} ct_attention_options;
typedef struct {
    ct_tensor *output;  /* like query */
    ct_tensor *weights; /* [B, L, S] averaged over heads, or NULL */
} ct_attention_result;
/* MultiheadAttention's forward (query, key, value); both results registered with the
 * scope; output NULL on error. */
ct_attention_result ct_attention_with(ct_module *mha, ct_tensor *query, ct_tensor *key,
                                      ct_tensor *value, ct_attention_options o);
#define ct_attention(mha, query, key, value, ...) \
    CT_AT(ct_attention_with(mha, query, key, value, (ct_attention_options){__VA_ARGS__}))

typedef enum { CT_ACT_RELU = 0, CT_ACT_GELU = 1 } ct_activation;
typedef struct {
    int64_t dim_feedforward; /* default 2048 */
    double dropout;          /* default 0.1 */
    ct_activation activation;
    double layer_norm_eps;   /* default 1e-5 */
    bool batch_first;
    bool norm_first;
} ct_encoder_layer_options;
ct_module *ct_nn_transformer_encoder_layer_with(int64_t d_model, int64_t nhead, ct_encoder_layer_options o);
#define ct_nn_transformer_encoder_layer(d_model, nhead, ...)                                \
    CT_AT(ct_nn_transformer_encoder_layer_with(d_model, nhead,                              \
        CT_DEFAULTS(ct_encoder_layer_options, .dim_feedforward = 2048, .dropout = 0.1,      \
                    .layer_norm_eps = 1e-5, __VA_ARGS__)))
/* The encoder layer's forward with masks (ct_forward(layer, src) has none). */
ct_tensor *ct_encoder_layer_forward(ct_module *layer, ct_tensor *src, ct_tensor *src_mask,
                                    ct_tensor *src_key_padding_mask);

#ifdef __cplusplus
}
#endif
#endif
