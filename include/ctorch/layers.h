/* ctorch/layers.h — containers and layers (torch.nn) and their functional forms.
 *
 * Naming: a module constructor is ct_nn_<name> for PyTorch's nn.<Name> (nn.Linear ->
 * ct_nn_linear, nn.Conv2d -> ct_nn_conv2d, nn.ReLU -> ct_nn_relu); the functional
 * form keeps the plain name of torch.nn.functional (F.linear -> ct_linear, F.conv2d ->
 * ct_conv2d in conv.h, F.relu -> ct_relu in pointwise.h).  Containers have no
 * functional twin and keep their plain names (ct_sequential, ct_module_list, ...).
 * Options are designated initializers; what is not given takes PyTorch's default
 * (ct_nn_linear(4, 2, .bias = false), ct_nn_batch_norm2d(8, .eps = 1e-3)).
 * Parameter names, shapes, state-dict keys and default initialization (in
 * distribution) are PyTorch's:
 *
 *     ct_module *net = ct_sequential(CT_MODULES(
 *         ct_nn_conv2d(1, 8, CT_DIMS(3), .padding = CT_DIMS(1)),
 *         ct_nn_batch_norm2d(8),
 *         ct_nn_relu(),
 *         ct_nn_max_pool2d(CT_DIMS(2)),
 *         ct_nn_flatten(),
 *         ct_nn_linear(8 * 14 * 14, 10)));
 *     ct_tensor *y = ct_forward(net, ct_randn(CT_SHAPE(4, 1, 28, 28)));
 *
 * Modules look their parameters up by name at each forward, so replacing one with
 * ct_module_set_tensor (or loading a state dict) is seen at once.  Convolutions pad
 * with zeros or (.padding_mode) reflect / replicate / circular, as PyTorch's F.pad;
 * transposed convolutions with zeros only.
 */
#ifndef CTORCH_LAYERS_H
#define CTORCH_LAYERS_H

#include <math.h>

#include "conv.h"
#include "index.h"
#include "nn.h"
#include "pointwise.h"
#include "random.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

/* ---- containers ---------------------------------------------------------- */

/* CT_MODULES(a, b, c) expands to "3, (ct_module *[]){a, b, c}": the count and array
 * that ct_sequential and ct_module_list take. */
#define CT_MODULES(...) \
    (int)(sizeof((ct_module *[]){__VA_ARGS__}) / sizeof(ct_module *)), (ct_module *[]){__VA_ARGS__}

/* nn.Sequential: children "0", "1", ... applied in turn (adopts the modules). */
ct_module *ct_sequential(int n, ct_module *const *modules);
#define ct_sequential(...) CT_AT(ct_sequential(__VA_ARGS__))
/* Appends m (adopted) as the next child; returns seq. */
ct_module *ct_sequential_append(ct_module *seq, ct_module *m);
#define ct_sequential_append(seq, m) CT_AT(ct_sequential_append(seq, m))
/* The i-th child (negative i counts from the end); borrowed.  NULL and an error
 * when out of range. */
ct_module *ct_sequential_get(ct_module *seq, int i);
#define ct_sequential_get(seq, i) CT_AT(ct_sequential_get(seq, i))
int ct_sequential_len(const ct_module *seq); /* number of children (-1 if not a Sequential) */
#define ct_sequential_len(seq) CT_AT(ct_sequential_len(seq))

/* nn.ModuleList: children "0", "1", ...; no forward. */
ct_module *ct_module_list(int n, ct_module *const *modules);
#define ct_module_list(...) CT_AT(ct_module_list(__VA_ARGS__))
ct_module *ct_module_list_append(ct_module *list, ct_module *m); /* returns list */
#define ct_module_list_append(list, m) CT_AT(ct_module_list_append(list, m))
ct_module *ct_module_list_get(ct_module *list, int i);           /* negative i from the end */
#define ct_module_list_get(list, i) CT_AT(ct_module_list_get(list, i))
int ct_module_list_len(const ct_module *list);                  /* number of modules */
#define ct_module_list_len(list) CT_AT(ct_module_list_len(list))

/* nn.ModuleDict: children under string keys, in insertion order; no forward.
 * Setting an existing key replaces the module in place (keeps its position). */
ct_module *ct_module_dict(void);
#define ct_module_dict(...) CT_AT(ct_module_dict(__VA_ARGS__))
ct_module *ct_module_dict_set(ct_module *dict, const char *key, ct_module *m); /* returns m */
#define ct_module_dict_set(dict, key, m) CT_AT(ct_module_dict_set(dict, key, m))
ct_module *ct_module_dict_get(ct_module *dict, const char *key); /* NULL (no error) if absent */
#define ct_module_dict_get(dict, key) CT_AT(ct_module_dict_get(dict, key))
int ct_module_dict_len(const ct_module *dict);                  /* number of entries */
#define ct_module_dict_len(dict) CT_AT(ct_module_dict_len(dict))
const char *ct_module_dict_key(const ct_module *dict, int i);   /* i-th key in insertion order */
#define ct_module_dict_key(dict, i) CT_AT(ct_module_dict_key(dict, i))

/* nn.ParameterList / nn.ParameterDict: parameters named "0", "1", ... or by key
 * (adopted and made to require grad, like ct_module_add_parameter). */
ct_module *ct_parameter_list(int n, ct_tensor *const *params);
#define ct_parameter_list(n, params) CT_AT(ct_parameter_list(n, params))
ct_tensor *ct_parameter_list_append(ct_module *list, ct_tensor *p); /* returns p */
#define ct_parameter_list_append(list, p) CT_AT(ct_parameter_list_append(list, p))
ct_tensor *ct_parameter_list_get(ct_module *list, int i);          /* negative i from the end */
#define ct_parameter_list_get(list, i) CT_AT(ct_parameter_list_get(list, i))
int ct_parameter_list_len(const ct_module *list);                  /* number of parameters */
#define ct_parameter_list_len(list) CT_AT(ct_parameter_list_len(list))
ct_module *ct_parameter_dict(void);
#define ct_parameter_dict(...) CT_AT(ct_parameter_dict(__VA_ARGS__))
ct_tensor *ct_parameter_dict_set(ct_module *dict, const char *key, ct_tensor *p); /* returns p */
#define ct_parameter_dict_set(dict, key, p) CT_AT(ct_parameter_dict_set(dict, key, p))
ct_tensor *ct_parameter_dict_get(ct_module *dict, const char *key); /* NULL if absent */
#define ct_parameter_dict_get(dict, key) CT_AT(ct_parameter_dict_get(dict, key))
int ct_parameter_dict_len(const ct_module *dict);                /* number of entries */
#define ct_parameter_dict_len(dict) CT_AT(ct_parameter_dict_len(dict))
const char *ct_parameter_dict_key(const ct_module *dict, int i); /* i-th key in insertion order */
#define ct_parameter_dict_key(dict, i) CT_AT(ct_parameter_dict_key(dict, i))

/* ---- linear layers and reshaping ------------------------------------------- */

/* nn.Identity: returns its input. */
ct_module *ct_nn_identity(void);

/* Options of ct_nn_linear and ct_nn_bilinear. */
typedef struct {
    bool bias;     /* default true */
    ct_dtype dtype; /* of the parameters; default: the default dtype */
} ct_linear_options;
/* nn.Linear: weight [out, in], bias [out]; y = x @ weight^T + bias. */
ct_module *ct_nn_linear_with(int64_t in_features, int64_t out_features, ct_linear_options o);
#define ct_nn_linear(in, out, ...) \
    CT_AT(ct_nn_linear_with(in, out, CT_DEFAULTS(ct_linear_options, .bias = true, __VA_ARGS__)))
/* nn.Bilinear: weight [out, in1, in2], bias [out]; two inputs (ct_forward_multi):
 * y = x1^T weight x2 + bias. */
ct_module *ct_nn_bilinear_with(int64_t in1_features, int64_t in2_features, int64_t out_features,
                               ct_linear_options o);
#define ct_nn_bilinear(in1, in2, out, ...)                     \
    CT_AT(ct_nn_bilinear_with(in1, in2, out,                   \
                              CT_DEFAULTS(ct_linear_options, .bias = true, __VA_ARGS__)))

/* F.linear(x, weight, bias): x [..., in], weight [out, in], bias [out] or NULL. */
ct_tensor *ct_linear(ct_tensor *x, ct_tensor *weight, ct_tensor *bias);
#define ct_linear(x, weight, bias) CT_AT(ct_linear(x, weight, bias))
/* F.bilinear: x1 [..., in1], x2 [..., in2], weight [out, in1, in2], bias [out] or NULL. */
ct_tensor *ct_bilinear(ct_tensor *x1, ct_tensor *x2, ct_tensor *weight, ct_tensor *bias);
#define ct_bilinear(x1, x2, weight, bias) CT_AT(ct_bilinear(x1, x2, weight, bias))

/* nn.Flatten(start_dim = 1, end_dim = -1) and nn.Unflatten(dim, sizes):
 * ct_nn_flatten(), ct_nn_flatten(.start_dim = CT_SOME(0)).  NULL with an error when a
 * dim is not an integer. */
typedef struct {
    ct_opt_f64 start_dim; /* default 1 */
    ct_opt_f64 end_dim;   /* default -1 */
} ct_flatten_options;
ct_module *ct_nn_flatten_with(ct_flatten_options o);
#define ct_nn_flatten(...) CT_AT(ct_nn_flatten_with(CT_OPTIONS(ct_flatten_options, __VA_ARGS__)))
ct_module *ct_nn_unflatten(int64_t dim, ct_shape sizes); /* nn.Unflatten: dim becomes sizes */
#define ct_nn_unflatten(dim, sizes) CT_AT(ct_nn_unflatten(dim, sizes))

/* ---- convolutions and pooling ---------------------------------------------- */

/* padding_mode of the convolution layers (not of transposed ones: zeros only). */
typedef enum {
    CT_PADDING_ZEROS = 0,
    CT_PADDING_REFLECT,
    CT_PADDING_REPLICATE,
    CT_PADDING_CIRCULAR
} ct_padding_mode;

/* Options of the convolution layers: kernel_size is a constructor argument; ct_dims
 * are one value for every spatial dim (CT_DIMS(1)) or one per dim. */
typedef struct {
    ct_dims stride;         /* default 1 */
    ct_dims padding;        /* default 0 */
    ct_dims dilation;       /* default 1 */
    ct_dims output_padding; /* transposed only; default 0 */
    int64_t groups;         /* default 1 */
    bool padding_same;      /* padding='same' */
    bool bias;              /* default true */
    ct_padding_mode padding_mode; /* default zeros */
    ct_dtype dtype;         /* the parameters' dtype (floating); default: the default dtype */
} ct_conv_layer_options;
/* nn.Conv1d / nn.Conv2d: weight [out, in/groups, *kernel], bias [out]. */
ct_module *ct_nn_conv1d_with(int64_t in_channels, int64_t out_channels, ct_dims kernel_size,
                             ct_conv_layer_options o);
ct_module *ct_nn_conv2d_with(int64_t in_channels, int64_t out_channels, ct_dims kernel_size,
                             ct_conv_layer_options o);
/* nn.ConvTranspose2d: weight [in, out/groups, kh, kw], bias [out]. */
ct_module *ct_nn_conv_transpose2d_with(int64_t in_channels, int64_t out_channels,
                                       ct_dims kernel_size, ct_conv_layer_options o);
#define ct_nn_conv1d(in, out, kernel_size, ...)            \
    CT_AT(ct_nn_conv1d_with(in, out, kernel_size,          \
                            CT_DEFAULTS(ct_conv_layer_options, .bias = true, __VA_ARGS__)))
#define ct_nn_conv2d(in, out, kernel_size, ...)            \
    CT_AT(ct_nn_conv2d_with(in, out, kernel_size,          \
                            CT_DEFAULTS(ct_conv_layer_options, .bias = true, __VA_ARGS__)))
#define ct_nn_conv_transpose2d(in, out, kernel_size, ...)  \
    CT_AT(ct_nn_conv_transpose2d_with(in, out, kernel_size, \
                                      CT_DEFAULTS(ct_conv_layer_options, .bias = true, __VA_ARGS__)))

/* nn.MaxPool2d / nn.AvgPool2d(kernel_size, options of ct_max_pool2d / ct_avg_pool2d:
 * the same structs); printed as PyTorch prints them (an int when one value was
 * given).  nn.MaxPool2d(2, return_indices=True), ct_nn_max_pool2d(CT_DIMS(2),
 * .return_indices = true), gives (output, indices) through ct_forward_multi with room
 * for two outputs; nn.AdaptiveMaxPool2d always does. */
ct_module *ct_nn_max_pool2d_with(ct_max_pool2d_options o);
ct_module *ct_nn_avg_pool2d_with(ct_avg_pool2d_options o);
#define ct_nn_max_pool2d(k_, ...) \
    CT_AT(ct_nn_max_pool2d_with(CT_OPTIONS(ct_max_pool2d_options, .kernel_size = k_, __VA_ARGS__)))
#define ct_nn_avg_pool2d(k_, ...)                                                         \
    CT_AT(ct_nn_avg_pool2d_with(CT_DEFAULTS(ct_avg_pool2d_options, .count_include_pad = true, \
                                            .kernel_size = k_, __VA_ARGS__)))
/* nn.AdaptiveAvgPool2d(output_size): CT_DIMS(7) or CT_DIMS(7, 7). */
ct_module *ct_nn_adaptive_avg_pool2d(ct_dims output_size);
#define ct_nn_adaptive_avg_pool2d(output_size) CT_AT(ct_nn_adaptive_avg_pool2d(output_size))
/* nn.AdaptiveMaxPool2d(output_size). */
ct_module *ct_nn_adaptive_max_pool2d(ct_dims output_size);
#define ct_nn_adaptive_max_pool2d(output_size) CT_AT(ct_nn_adaptive_max_pool2d(output_size))

/* ---- normalization ------------------------------------------------------------ */

/* Options of ct_nn_batch_norm1d and ct_nn_batch_norm2d. */
typedef struct {
    double eps;          /* 0: PyTorch's default 1e-5 */
    ct_opt_f64 momentum; /* not given: 0.1; CT_NONE: a cumulative moving average */
    bool affine;     /* default true: weight (ones) and bias (zeros) [C] */
    bool track_running_stats; /* default true: running_mean, running_var, num_batches_tracked */
    ct_dtype dtype;         /* the parameters' dtype (floating); default: the default dtype */
} ct_batch_norm_layer_options;
/* nn.BatchNorm1d ([N, C] or [N, C, L]) and nn.BatchNorm2d ([N, C, H, W]).  Training
 * normalizes with the batch statistics and updates the running ones (unbiased
 * variance) under no_grad; eval uses the running statistics when tracked. */
ct_module *ct_nn_batch_norm1d_with(int64_t num_features, ct_batch_norm_layer_options o);
ct_module *ct_nn_batch_norm2d_with(int64_t num_features, ct_batch_norm_layer_options o);
#define CT_BN_DEFAULTS_(...)                                                       \
    CT_DEFAULTS(ct_batch_norm_layer_options, .affine = true, .track_running_stats = true, \
                __VA_ARGS__)
#define ct_nn_batch_norm1d(num_features, ...) \
    CT_AT(ct_nn_batch_norm1d_with(num_features, CT_BN_DEFAULTS_(__VA_ARGS__)))
#define ct_nn_batch_norm2d(num_features, ...) \
    CT_AT(ct_nn_batch_norm2d_with(num_features, CT_BN_DEFAULTS_(__VA_ARGS__)))

/* Options of ct_nn_layer_norm. */
typedef struct {
    double eps;              /* 0: PyTorch's default 1e-5 */
    bool elementwise_affine; /* default true (set by the macro) */
    ct_dtype dtype;         /* the parameters' dtype (floating); default: the default dtype */
} ct_layer_norm_options;
/* nn.LayerNorm(normalized_shape): weight and bias of that shape. */
ct_module *ct_nn_layer_norm_with(ct_shape normalized_shape, ct_layer_norm_options o);
#define ct_nn_layer_norm(normalized_shape, ...)                                          \
    CT_AT(ct_nn_layer_norm_with(normalized_shape, CT_DEFAULTS(ct_layer_norm_options,       \
                                                              .elementwise_affine = true, __VA_ARGS__)))
/* Options of ct_nn_group_norm. */
typedef struct {
    double eps;  /* 0: PyTorch's default 1e-5 */
    bool affine; /* default true (set by the macro) */
    ct_dtype dtype;         /* the parameters' dtype (floating); default: the default dtype */
} ct_group_norm_options;
/* nn.GroupNorm(num_groups, num_channels): weight and bias [C] when affine. */
ct_module *ct_nn_group_norm_with(int64_t num_groups, int64_t num_channels, ct_group_norm_options o);
#define ct_nn_group_norm(num_groups, num_channels, ...)                                   \
    CT_AT(ct_nn_group_norm_with(num_groups, num_channels,                                 \
                                CT_DEFAULTS(ct_group_norm_options, .affine = true, __VA_ARGS__)))

/* Options of ct_batch_norm. */
typedef struct {
    ct_tensor *weight;        /* optional scale, [C] */
    ct_tensor *bias;          /* optional shift, [C] */
    bool training;            /* use (and update) batch statistics */
    ct_opt_f64 momentum;      /* not given: 0.1 */
    double eps;               /* 0: PyTorch's default 1e-5 */
} ct_batch_norm_options;
/* F.batch_norm(x, running_mean, running_var, ...): x [N, C, *]; the running tensors
 * (may be NULL) are updated in place when training (momentum, unbiased variance).
 * The three normalizations are fused ops (grad_fn NativeBatchNormBackward0,
 * NativeLayerNormBackward0, NativeGroupNormBackward0) whose results do not depend on
 * the thread count; their gradients are differentiable (double backward).  float16
 * and bfloat16 inputs compute in float32 a tile at a time (no float32 copy of x),
 * with float32 statistics, and round each output once; a float32 weight, bias or
 * running statistic is used as it is (PyTorch's mixed-precision batch norm). */
ct_tensor *ct_batch_norm_with(ct_tensor *x, ct_tensor *running_mean, ct_tensor *running_var,
                              ct_batch_norm_options o);
#define ct_batch_norm(x, running_mean, running_var, ...)                                   \
    CT_AT(ct_batch_norm_with(x, running_mean, running_var, CT_OPTIONS(ct_batch_norm_options, __VA_ARGS__)))
/* Options of ct_layer_norm and ct_group_norm. */
typedef struct {
    ct_tensor *weight;        /* optional scale */
    ct_tensor *bias;          /* optional shift */
    double eps;               /* 0: PyTorch's default 1e-5 */
} ct_norm_options_f;
/* F.layer_norm(x, normalized_shape, weight, bias, eps): over the trailing dims. */
ct_tensor *ct_layer_norm_with(ct_tensor *x, ct_shape normalized_shape, ct_norm_options_f o);
#define ct_layer_norm(x, normalized_shape, ...)                                           \
    CT_AT(ct_layer_norm_with(x, normalized_shape, CT_OPTIONS(ct_norm_options_f, __VA_ARGS__)))
/* F.group_norm(x, num_groups, weight, bias, eps): x [N, C, *]. */
ct_tensor *ct_group_norm_with(ct_tensor *x, int64_t num_groups, ct_norm_options_f o);
#define ct_group_norm(x, num_groups, ...)                                                 \
    CT_AT(ct_group_norm_with(x, num_groups, CT_OPTIONS(ct_norm_options_f, __VA_ARGS__)))

/* ---- dropout and embedding -------------------------------------------------- */

/* Options of ct_nn_dropout and ct_nn_dropout2d. */
typedef struct {
    bool inplace;            /* zero the module's input itself */
    ct_generator *generator; /* NULL: the default generator */
} ct_dropout_layer_options;
/* nn.Dropout(p) and nn.Dropout2d(p) (whole channels); identity in eval mode. */
ct_module *ct_nn_dropout_with(double p, ct_dropout_layer_options o);
ct_module *ct_nn_dropout2d_with(double p, ct_dropout_layer_options o);
#define ct_nn_dropout(p, ...) CT_AT(ct_nn_dropout_with(p, CT_OPTIONS(ct_dropout_layer_options, __VA_ARGS__)))
#define ct_nn_dropout2d(p, ...) \
    CT_AT(ct_nn_dropout2d_with(p, CT_OPTIONS(ct_dropout_layer_options, __VA_ARGS__)))
/* F.dropout2d (and dropout1d/3d) are in ctorch/random.h. */

/* nn.Embedding: weight [num, dim] ~ N(0, 1), the padding row zero; the forward is
 * ct_embedding with the module's options (ct_embedding_options, ctorch/index.h):
 * ct_nn_embedding(1000, 64, .padding_idx = CT_SOME(0)). */
ct_module *ct_nn_embedding_with(int64_t num_embeddings, int64_t embedding_dim,
                                ct_embedding_options o);
#define ct_nn_embedding(num, dim, ...) \
    CT_AT(ct_nn_embedding_with(num, dim, CT_OPTIONS(ct_embedding_options, __VA_ARGS__)))
/* F.embedding's max_norm: rows of weight referenced by indices whose norm_type-norm
 * exceeds max_norm are scaled to max_norm (in place, without recording). */
int ct_embedding_renorm_(ct_tensor *weight, ct_tensor *indices, double max_norm, double norm_type);
#define ct_embedding_renorm_(weight, indices, max_norm, norm_type) \
    CT_AT(ct_embedding_renorm_(weight, indices, max_norm, norm_type))

/* ---- activations ------------------------------------------------------------------ */

/* nn.ReLU(inplace): ct_nn_relu(), ct_nn_relu(.inplace = true) (writes into its input). */
typedef struct {
    bool inplace; /* write into the input */
} ct_relu_options;
ct_module *ct_nn_relu_with(ct_relu_options o);
#define ct_nn_relu(...) CT_AT(ct_nn_relu_with(CT_OPTIONS(ct_relu_options, __VA_ARGS__)))
/* nn.SiLU, nn.Tanh, nn.Sigmoid: the pointwise function as a module. */
ct_module *ct_nn_silu(void);
ct_module *ct_nn_tanh(void);
ct_module *ct_nn_sigmoid(void);
/* nn.LeakyReLU: ct_nn_leaky_relu(), ct_nn_leaky_relu(.negative_slope = CT_SOME(0.2)); the
 * options of F.leaky_relu (ctorch/pointwise.h). */
ct_module *ct_nn_leaky_relu_with(ct_leaky_relu_options o);
#define ct_nn_leaky_relu(...) CT_AT(ct_nn_leaky_relu_with(CT_OPTIONS(ct_leaky_relu_options, __VA_ARGS__)))
/* nn.GELU(approximate): ct_nn_gelu(), ct_nn_gelu(.approximate = CT_GELU_TANH). */
ct_module *ct_nn_gelu_with(ct_gelu_options o);
#define ct_nn_gelu(...) CT_AT(ct_nn_gelu_with(CT_OPTIONS(ct_gelu_options, __VA_ARGS__)))
/* nn.ELU(alpha = 1), nn.Softplus(beta = 1, threshold = 20), nn.Hardtanh(-1, 1): the
 * options of ct_elu, ct_softplus and ct_hardtanh (ctorch/pointwise.h). */
ct_module *ct_nn_elu_with(ct_elu_options o);
ct_module *ct_nn_softplus_with(ct_softplus_options o);
ct_module *ct_nn_hardtanh_with(ct_hardtanh_options o);
#define ct_nn_elu(...) CT_AT(ct_nn_elu_with(CT_OPTIONS(ct_elu_options, __VA_ARGS__)))
#define ct_nn_softplus(...) CT_AT(ct_nn_softplus_with(CT_OPTIONS(ct_softplus_options, __VA_ARGS__)))
#define ct_nn_hardtanh(...) CT_AT(ct_nn_hardtanh_with(CT_OPTIONS(ct_hardtanh_options, __VA_ARGS__)))
/* nn.Softmax(dim) / nn.LogSoftmax(dim). */
ct_module *ct_nn_softmax(int64_t dim);
ct_module *ct_nn_log_softmax(int64_t dim);
#define ct_nn_silu() CT_AT(ct_nn_silu())
#define ct_nn_tanh() CT_AT(ct_nn_tanh())
#define ct_nn_sigmoid() CT_AT(ct_nn_sigmoid())
#define ct_nn_identity() CT_AT(ct_nn_identity())
#define ct_nn_softmax(dim) CT_AT(ct_nn_softmax(dim))
#define ct_nn_log_softmax(dim) CT_AT(ct_nn_log_softmax(dim))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
