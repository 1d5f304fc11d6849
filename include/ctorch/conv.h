/* ctorch/conv.h — convolution, pooling and interpolation (torch.nn.functional).
 *
 *     ct_tensor *img = ct_randn(CT_SHAPE(2, 8, 16, 16));              // NCHW
 *     ct_tensor *w = ct_randn(CT_SHAPE(4, 8, 3, 3)), *bias = ct_zeros(CT_SHAPE(4));
 *     ct_tensor *y = ct_conv2d(img, w, bias, .padding = CT_DIMS(1));  // [2, 4, 16, 16]
 *     ct_tensor *wg = ct_randn(CT_SHAPE(4, 2, 3, 3));
 *     ct_tensor *z = ct_conv2d(img, wg, NULL, .stride = CT_DIMS(2, 1), .groups = 4);
 *     ct_tensor *s = ct_conv2d(img, w, NULL, .padding_same = true);  // padding='same'
 *
 * Weights are laid out as PyTorch's: conv [out, in/groups, kh, kw], transposed conv
 * [in, out/groups, kh, kw].  Input may be unbatched (one dim less).  float32,
 * float64, float16 and bfloat16; the reduced dtypes convert in registers or in
 * bounded float tiles, never through float32 copies of the tensors: a convolution's
 * outputs and gradients (and F.fold's) are float sums rounded once, pooling and
 * interpolation compute in float and round each result (max pooling and nearest are
 * exact; max pooling's gradient, where windows overlap, rounds per add, as PyTorch's
 * does).  The
 * backward computes gradients
 * with kernels; with create_graph it uses differentiable ops (transposed conv,
 * ct_im2col, ct_matmul) instead, so double backward works (except for asymmetric
 * 'same' padding, which fails with an error); pooling and interpolation are
 * differentiable to any order too.  Results never depend on the thread count. */
#ifndef CTORCH_CONV_H
#define CTORCH_CONV_H

#include "tensor.h"

CT_API_BEGIN
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
    CT_AT(ct_conv2d_with(x, w, bias, CT_OPTIONS(ct_conv_options, __VA_ARGS__)))
#define ct_conv1d(x, w, bias, ...) \
    CT_AT(ct_conv1d_with(x, w, bias, CT_OPTIONS(ct_conv_options, __VA_ARGS__)))
#define ct_conv_transpose2d(x, w, bias, ...) \
    CT_AT(ct_conv_transpose2d_with(x, w, bias, CT_OPTIONS(ct_conv_options, __VA_ARGS__)))

/* ---- sliding blocks: F.unfold / F.fold ------------------------------------------- */

/* Options of ct_im2col and ct_col2im. */
typedef struct {
    ct_dims kernel_size; /* required */
    ct_dims dilation;    /* default 1 */
    ct_dims padding;     /* default 0 */
    ct_dims stride;      /* default 1 */
} ct_fold_options;
/* F.unfold: x [N, C, H, W] -> [N, C * kh * kw, L], L the number of block positions. */
ct_tensor *ct_im2col_with(ct_tensor *x, ct_fold_options o);
/* F.fold: cols [N, C * kh * kw, L] -> [N, C, H, W] for output_size CT_DIMS(H, W);
 * overlapping blocks are summed. */
ct_tensor *ct_col2im_with(ct_tensor *cols, ct_dims output_size, ct_fold_options o);
#define ct_im2col(x, ...) CT_AT(ct_im2col_with(x, CT_OPTIONS(ct_fold_options, __VA_ARGS__)))
#define ct_col2im(cols, output_size, ...) \
    CT_AT(ct_col2im_with(cols, output_size, CT_OPTIONS(ct_fold_options, __VA_ARGS__)))

/* ---- pooling (over the last two dims of [N, C, H, W] or [C, H, W]) ---------- */

/* F.max_pool2d / nn.MaxPool2d: zero means default.  ct_dims as above. */
typedef struct {
    ct_dims kernel_size;      /* required */
    ct_dims stride;           /* default: kernel_size */
    ct_dims padding;          /* default 0; at most half the kernel */
    ct_dims dilation;         /* default 1 */
    bool ceil_mode;           /* ceil instead of floor for the output size */
    bool return_indices;      /* nn.MaxPool2d: the indices too, through ct_forward_multi */
} ct_max_pool2d_options;
/* F.avg_pool2d / nn.AvgPool2d: zero means default, but count_include_pad, true in
 * PyTorch, is set by the macros (a `_with` call gives it explicitly). */
typedef struct {
    ct_dims kernel_size;      /* required */
    ct_dims stride;           /* default: kernel_size */
    ct_dims padding;          /* default 0; at most half the kernel */
    bool ceil_mode;           /* ceil instead of floor for the output size */
    bool count_include_pad;   /* default true: padded zeros count in the mean */
    int64_t divisor_override; /* divide by this instead; 0: none */
} ct_avg_pool2d_options;

/* ct_max_pool2d(x, .kernel_size = CT_DIMS(2)).  F.max_pool2d's return_indices=True is
 * ct_max_pool2d_with_indices (given to ct_max_pool2d, it is refused). */
ct_tensor *ct_max_pool2d_with(ct_tensor *x, ct_max_pool2d_options o);
/* The same, and *indices (int64, registered): the flat h * W + w of each maximum. */
ct_tensor *ct_max_pool2d_with_indices_with(ct_tensor *x, ct_tensor **indices,
                                           ct_max_pool2d_options o);
/* ct_avg_pool2d(x, .kernel_size = CT_DIMS(2), .count_include_pad = false) */
ct_tensor *ct_avg_pool2d_with(ct_tensor *x, ct_avg_pool2d_options o);
/* Output [.., oh, ow] for output_size CT_DIMS(oh, ow) (or CT_DIMS(s) for both). */
ct_tensor *ct_adaptive_avg_pool2d(ct_tensor *x, ct_dims output_size);
ct_tensor *ct_adaptive_max_pool2d(ct_tensor *x, ct_dims output_size);
ct_tensor *ct_adaptive_max_pool2d_with_indices(ct_tensor *x, ct_dims output_size,
                                               ct_tensor **indices);
#define ct_max_pool2d(x, ...) CT_AT(ct_max_pool2d_with(x, CT_OPTIONS(ct_max_pool2d_options, __VA_ARGS__)))
#define ct_max_pool2d_with_indices(x, indices, ...) \
    CT_AT(ct_max_pool2d_with_indices_with(x, indices, CT_OPTIONS(ct_max_pool2d_options, __VA_ARGS__)))
#define ct_avg_pool2d(x, ...)                                                             \
    CT_AT(ct_avg_pool2d_with(x, CT_DEFAULTS(ct_avg_pool2d_options, .count_include_pad = true, \
                                            __VA_ARGS__)))
#define ct_adaptive_avg_pool2d(x, output_size) CT_AT(ct_adaptive_avg_pool2d(x, output_size))
#define ct_adaptive_max_pool2d(x, output_size) CT_AT(ct_adaptive_max_pool2d(x, output_size))
#define ct_adaptive_max_pool2d_with_indices(x, output_size, indices) \
    CT_AT(ct_adaptive_max_pool2d_with_indices(x, output_size, indices))

/* ---- interpolation ([N, C, H, W]) --------------------------------------------- */

/* F.interpolate's mode: "nearest" or "bilinear". */
typedef enum { CT_INTERP_NEAREST = 0, CT_INTERP_BILINEAR } ct_interp_mode;
/* Options of ct_interpolate. */
typedef struct {
    ct_dims size;           /* output (H, W), or one value for both; or: */
    double scale_factor[2]; /* {s} for both dims or {sh, sw}; output = floor(in * s) */
    ct_interp_mode mode;    /* default nearest */
    bool align_corners;     /* bilinear only */
} ct_interpolate_options;
/* F.interpolate: ct_interpolate(x, .scale_factor = {2}),
 * ct_interpolate(x, .size = CT_DIMS(7, 9), .mode = CT_INTERP_BILINEAR). */
ct_tensor *ct_interpolate_with(ct_tensor *x, ct_interpolate_options o);
#define ct_interpolate(x, ...) \
    CT_AT(ct_interpolate_with(x, CT_OPTIONS(ct_interpolate_options, __VA_ARGS__)))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
