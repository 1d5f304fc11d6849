/* ctorch/conv.h — convolution, pooling and interpolation (torch.nn.functional).
 *
 *     ct_tensor *y = ct_conv2d(x, w, b, .padding = CT_DIMS(1));         // NCHW
 *     ct_tensor *z = ct_conv2d(x, w, NULL, .stride = CT_DIMS(2, 1), .groups = 4);
 *     ct_tensor *s = ct_conv2d(x, w, NULL, .padding_same = true);       // padding='same'
 *
 * Weights are laid out as PyTorch's: conv [out, in/groups, kh, kw], transposed conv
 * [in, out/groups, kh, kw].  Input may be unbatched (one dim less).  float32 and
 * float64 (float16/bfloat16 compute in float32).  The backward computes gradients
 * with kernels; double backward (create_graph) through a convolution is not
 * implemented and fails with an error.  Results never depend on the thread count. */
#ifndef CTORCH_CONV_H
#define CTORCH_CONV_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Options of the convolutions; zero means default.  Each ct_dims is empty (default),
 * one value for every spatial dim (CT_DIMS(1)) or one per dim (CT_DIMS(1, 2)). */
typedef struct {
    ct_dims stride;         /* default 1 */
    ct_dims padding;        /* default 0 (zeros on both sides) */
    ct_dims dilation;       /* default 1 */
    ct_dims output_padding; /* transposed only: extra size on one side; default 0 */
    int64_t groups;         /* default 1 */
    bool padding_same;      /* padding='same' (stride 1 only) */
} ct_conv_options;

/* x [N, C, H, W] (or [C, H, W]), w [O, C/groups, kh, kw], bias [O] or NULL. */
ct_tensor *ct_conv2d_with(ct_tensor *x, ct_tensor *w, ct_tensor *bias, ct_conv_options o);
/* x [N, C, L] (or [C, L]), w [O, C/groups, k], bias [O] or NULL. */
ct_tensor *ct_conv1d_with(ct_tensor *x, ct_tensor *w, ct_tensor *bias, ct_conv_options o);
/* x [N, C, H, W], w [C, O/groups, kh, kw], bias [O] or NULL; output size
 * (H - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1. */
ct_tensor *ct_conv_transpose2d_with(ct_tensor *x, ct_tensor *w, ct_tensor *bias,
                                    ct_conv_options o);
#define ct_conv2d(x, w, bias, ...) \
    CT_AT(ct_conv2d_with(x, w, bias, (ct_conv_options){__VA_ARGS__}))
#define ct_conv1d(x, w, bias, ...) \
    CT_AT(ct_conv1d_with(x, w, bias, (ct_conv_options){__VA_ARGS__}))
#define ct_conv_transpose2d(x, w, bias, ...) \
    CT_AT(ct_conv_transpose2d_with(x, w, bias, (ct_conv_options){__VA_ARGS__}))

#ifdef __cplusplus
}
#endif
#endif
