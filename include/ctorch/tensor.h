/* ctorch/tensor.h — the tensor: creation, metadata, data access, conversion.
 *
 * A tensor is a view (shape, strides, offset, dtype) of a reference-counted storage
 * on a device.  Views share storage; writes through one are seen by all.
 *
 *     ct_tensor *a = ct_zeros(CT_SHAPE(2, 3));                  // float32 zeros
 *     ct_tensor *b = ct_ones(CT_SHAPE(3), .dtype = CT_F64);
 *     float v[] = {1, 2, 3, 4};
 *     ct_tensor *c = ct_tensor_f32(v, CT_SHAPE(2, 2), .requires_grad = true);
 *
 * A compound literal holds commas that would split a macro's arguments: name the
 * array (as above) or wrap it in parentheses: ct_tensor_f32(((float[]){1, 2}), ...).
 * A one-element literal needs nothing: ct_tensor_f32((float[]){3}, CT_SHAPE(1)).
 */
#ifndef CTORCH_TENSOR_H
#define CTORCH_TENSOR_H

#include "base.h"

CT_API_BEGIN
#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_tensor ct_tensor; /* a tensor: shape, strides, dtype, device, storage and autograd state */
typedef struct ct_node ct_node; /* a node of the autograd graph (a grad_fn) */
typedef struct ct_generator ct_generator; /* a random number generator (torch.Generator) */

/* Keyword options of the factory functions (all optional). */
typedef struct {
    ct_dtype dtype;          /* default: ct_get_default_dtype() (or the input's for *_like) */
    ct_device device;        /* default: cpu */
    bool requires_grad;      /* record ops on the result for autograd (a leaf) */
    ct_generator *generator; /* random factories: default generator when NULL */
} ct_tensor_options;
#define CT_OPTS(...) (CT_OPTIONS(ct_tensor_options, __VA_ARGS__)) /* a ct_tensor_options from designated initializers */

/* ---- factories -------------------------------------------------------- */

ct_tensor *ct_empty_with(ct_shape shape, ct_tensor_options o); /* torch.empty: values left unset */
ct_tensor *ct_zeros_with(ct_shape shape, ct_tensor_options o); /* torch.zeros */
ct_tensor *ct_ones_with(ct_shape shape, ct_tensor_options o); /* torch.ones */
ct_tensor *ct_full_with(ct_shape shape, double value, ct_tensor_options o); /* torch.full: every element value */
ct_tensor *ct_empty_like_with(const ct_tensor *t, ct_tensor_options o); /* t's shape, dtype and device unless given */
ct_tensor *ct_zeros_like_with(const ct_tensor *t, ct_tensor_options o); /* torch.zeros_like */
ct_tensor *ct_ones_like_with(const ct_tensor *t, ct_tensor_options o); /* torch.ones_like */
ct_tensor *ct_full_like_with(const ct_tensor *t, double value, ct_tensor_options o); /* torch.full_like */
/* A 0-d tensor holding v. */
ct_tensor *ct_scalar_tensor_with(double v, ct_tensor_options o);
/* Copies numel(shape) elements of `dtype` from data (C order). */
ct_tensor *ct_tensor_from_with(const void *data, ct_dtype dtype, ct_shape shape, ct_tensor_options o);

#define ct_empty(shape, ...) CT_AT(ct_empty_with(shape, CT_OPTS(__VA_ARGS__)))
#define ct_zeros(shape, ...) CT_AT(ct_zeros_with(shape, CT_OPTS(__VA_ARGS__)))
#define ct_ones(shape, ...) CT_AT(ct_ones_with(shape, CT_OPTS(__VA_ARGS__)))
#define ct_full(shape, value, ...) CT_AT(ct_full_with(shape, value, CT_OPTS(__VA_ARGS__)))
#define ct_empty_like(t, ...) CT_AT(ct_empty_like_with(t, CT_OPTS(__VA_ARGS__)))
#define ct_zeros_like(t, ...) CT_AT(ct_zeros_like_with(t, CT_OPTS(__VA_ARGS__)))
#define ct_ones_like(t, ...) CT_AT(ct_ones_like_with(t, CT_OPTS(__VA_ARGS__)))
#define ct_full_like(t, value, ...) CT_AT(ct_full_like_with(t, value, CT_OPTS(__VA_ARGS__)))
#define ct_scalar_tensor(v, ...) CT_AT(ct_scalar_tensor_with(v, CT_OPTS(__VA_ARGS__)))
#define ct_tensor_from(data, dtype, shape, ...) \
    CT_AT(ct_tensor_from_with(data, dtype, shape, CT_OPTS(__VA_ARGS__)))
/* Typed forms: the element type is checked by the compiler.  ct_tensor_from of float
 * data. */
#define ct_tensor_f32(data, shape, ...) \
    ct_tensor_from((const float *)(data), CT_F32, shape, __VA_ARGS__)
/* ct_tensor_from of double data. */
#define ct_tensor_f64(data, shape, ...) \
    ct_tensor_from((const double *)(data), CT_F64, shape, __VA_ARGS__)
/* ct_tensor_from of int64_t data. */
#define ct_tensor_i64(data, shape, ...) \
    ct_tensor_from((const int64_t *)(data), CT_I64, shape, __VA_ARGS__)
/* ct_tensor_from of int32_t data. */
#define ct_tensor_i32(data, shape, ...) \
    ct_tensor_from((const int32_t *)(data), CT_I32, shape, __VA_ARGS__)
/* ct_tensor_from of uint8_t data. */
#define ct_tensor_u8(data, shape, ...) \
    ct_tensor_from((const uint8_t *)(data), CT_U8, shape, __VA_ARGS__)
/* ct_tensor_from of bool data. */
#define ct_tensor_bool(data, shape, ...) \
    ct_tensor_from((const bool *)(data), CT_BOOL, shape, __VA_ARGS__)

/* Ranges.  Arguments keep their C type as PyTorch keeps Python's: integers give an
 * int64 tensor, any floating argument the default dtype (.dtype overrides):
 *     ct_print(ct_arange(5));                   // tensor([0, 1, 2, 3, 4])
 *     ct_print(ct_arange_range(1, 2.5, 0.5));   // tensor([1.0000, 1.5000, 2.0000])
 * The length is ceil((end - start) / step); step must be nonzero and point from start
 * towards end.  A ct_scalar (CT_INT(v), CT_FLOAT(v)) is accepted too. */
ct_tensor *ct_arange_with(ct_scalar start, ct_scalar end, ct_scalar step, ct_tensor_options o);
#define ct_arange(end, ...) \
    CT_AT(ct_arange_with(CT_INT(0), CT_NUM(end), CT_INT(1), CT_OPTS(__VA_ARGS__)))
#define ct_arange_range(start, end, step, ...) \
    CT_AT(ct_arange_with(CT_NUM(start), CT_NUM(end), CT_NUM(step), CT_OPTS(__VA_ARGS__)))
/* `steps` values from start to end inclusive, evenly spaced (default dtype); both
 * endpoints are exact (PyTorch's symmetric formula). */
ct_tensor *ct_linspace_with(double start, double end, int64_t steps, ct_tensor_options o);
#define ct_linspace(start, end, steps, ...) \
    CT_AT(ct_linspace_with(start, end, steps, CT_OPTS(__VA_ARGS__)))
/* The n x m identity (ones on the diagonal); ct_eye(n) is square. */
ct_tensor *ct_eye_with(int64_t n, int64_t m, ct_tensor_options o);
#define ct_eye(n, ...) CT_AT(ct_eye_with(n, n, CT_OPTS(__VA_ARGS__)))
#define ct_eye_nm(n, m, ...) CT_AT(ct_eye_with(n, m, CT_OPTS(__VA_ARGS__)))

/* The conversions CT_NUM chooses from. */
static inline ct_scalar ct__num_int(long long v) { return CT_INT(v); }
static inline ct_scalar ct__num_float(double v) { return CT_FLOAT(v); }
static inline ct_scalar ct__num_scalar(ct_scalar v) { return v; }
/* CT_NUM(x): x as a ct_scalar that remembers whether C typed it integer or floating. */
#define CT_NUM(x)                                                                        \
    _Generic((x), float: ct__num_float, double: ct__num_float, long double: ct__num_float, \
             ct_scalar: ct__num_scalar, default: ct__num_int)(x)

/* Wraps external memory without copying (like torch.from_numpy): writes are seen
 * both ways.  strides (in elements) may be NULL for C order.  free_fn(data, ctx),
 * when given, runs once the last tensor viewing the memory is released.  When the
 * call fails (NULL) free_fn is not called: the memory stays the caller's. */
ct_tensor *ct_from_blob(void *data, ct_dtype dtype, ct_shape shape, const int64_t *strides,
                        void (*free_fn)(void *data, void *ctx), void *ctx);
#define ct_from_blob(...) CT_AT(ct_from_blob(__VA_ARGS__))

/* ---- metadata --------------------------------------------------------- */

int ct_ndim(const ct_tensor *t); /* t.dim() */
#define ct_ndim(t) CT_AT(ct_ndim(t))
int64_t ct_size(const ct_tensor *t, int64_t dim);   /* negative dims count from the end */
#define ct_size(t, dim) CT_AT(ct_size(t, dim))
int64_t ct_stride(const ct_tensor *t, int64_t dim); /* in elements */
#define ct_stride(t, dim) CT_AT(ct_stride(t, dim))
ct_shape ct_shape_of(const ct_tensor *t); /* t.shape */
#define ct_shape_of(t) CT_AT(ct_shape_of(t))
int64_t ct_numel(const ct_tensor *t); /* number of elements */
#define ct_numel(t) CT_AT(ct_numel(t))
int64_t ct_storage_offset(const ct_tensor *t); /* t.storage_offset(), in elements */
#define ct_storage_offset(t) CT_AT(ct_storage_offset(t))
ct_dtype ct_dtype_of(const ct_tensor *t); /* t.dtype */
#define ct_dtype_of(t) CT_AT(ct_dtype_of(t))
ct_device ct_device_of(const ct_tensor *t); /* t.device */
#define ct_device_of(t) CT_AT(ct_device_of(t))
/* Tensor.is_meta: on the meta device (below, "the meta device"). */
bool ct_is_meta(const ct_tensor *t);
#define ct_is_meta(t) CT_AT(ct_is_meta(t))
bool ct_is_contiguous(const ct_tensor *t); /* C order without gaps */
#define ct_is_contiguous(t) CT_AT(ct_is_contiguous(t))
/* Address of element 0 of the view (the first element in storage order plus offset). */
void *ct_data_ptr(const ct_tensor *t);
#define ct_data_ptr(t) CT_AT(ct_data_ptr(t))

/* ---- reading values --------------------------------------------------- */

/* The value of a one-element tensor as a double; NaN and an error otherwise. */
double ct_item(const ct_tensor *t);
#define ct_item(t) CT_AT(ct_item(t))
/* The value as an integer (a float truncated toward zero, as Python's int()); 0 and an
 * error when t is not one element, or for NaN, infinity or a float beyond int64's range. */
int64_t ct_item_int(const ct_tensor *t);
#define ct_item_int(t) CT_AT(ct_item_int(t))
/* Copies all elements in C order into dst as `dtype` (converting).  Returns 0 or -1. */
int ct_copy_to_buffer(const ct_tensor *t, void *dst, ct_dtype dtype, size_t dst_bytes);
#define ct_copy_to_buffer(...) CT_AT(ct_copy_to_buffer(__VA_ARGS__))

/* ---- conversion ------------------------------------------------------- */

/* Options of ct_to: what to convert to. */
typedef struct {
    ct_dtype dtype;   /* unset: keep */
    ct_device device; /* unset: keep */
    bool copy;        /* always return a new tensor */
} ct_to_options;
ct_tensor *ct_to_with(ct_tensor *t, ct_to_options o);
/* ct_to(t, .dtype = CT_F64), ct_to(t, .device = CT_CUDA(0)): returns t itself
 * (retained, registered with the scope) when nothing changes.  Floats converted to
 * an integer dtype truncate toward zero; where PyTorch leaves the result to the
 * hardware ctorch defines it: NaN gives 0, values beyond int64 saturate at its
 * limits, and narrower types keep the low bits (455.0 -> uint8 199, -1.0 -> 255). */
#define ct_to(t, ...) CT_AT(ct_to_with(t, CT_OPTIONS(ct_to_options, __VA_ARGS__)))
ct_tensor *ct_contiguous(ct_tensor *t); /* t itself (retained) when contiguous, else a C-order copy */
ct_tensor *ct_clone(ct_tensor *t); /* a copy with its own storage (differentiable) */
#define ct_contiguous(t) CT_AT(ct_contiguous(t))
#define ct_clone(t) CT_AT(ct_clone(t))

/* ---- the meta device -------------------------------------------------- */

/* CT_META, PyTorch's `meta` device: tensors with shape, dtype and strides but no
 * memory.  Every op and every module forward runs on it and gives the output's shape,
 * dtype and strides as on the cpu, without allocating data (ct_memory_allocated is
 * not changed; ct_memory_allocated(CT_META) stays 0):
 *
 *     ct_module *net = ct_sequential(CT_MODULES(ct_nn_flatten(), ct_nn_linear(784, 10)));
 *     ct_module_to(net, .device = CT_META);    // parameters become meta tensors
 *     ct_tensor *in = ct_empty(CT_SHAPE(64, 1, 28, 28), .device = CT_META);
 *     ct_tensor *y = ct_forward(net, in);
 *     ct_print(y);  // tensor(..., device='meta', size=(64, 10), grad_fn=<AddmmBackward0>)
 *     printf("%lld bytes\n", (long long)ct_module_num_bytes(net)); // 31400 bytes
 *
 * ct_to(t, .device = CT_META) moves no data; copying out of a meta tensor (ct_to
 * another device, ct_item, ct_copy_to_buffer) fails: it has no data.  Ops whose
 * output shape depends on the values (ct_nonzero, ct_masked_select, ct_one_hot
 * without num_classes, ...) fail with "...: cannot run on the meta device: its output
 * shape depends on the data"; checks that need the values (index bounds, integer
 * division by zero, loss targets in range) are skipped, as in PyTorch. */

/* ---- in-place writes -------------------------------------------------- */

/* dst.copy_(src): src is broadcast to dst's shape and converted to its dtype. */
ct_tensor *ct_copy_(ct_tensor *dst, ct_tensor *src);
ct_tensor *ct_fill_(ct_tensor *t, double value); /* every element of t becomes value; returns t */
ct_tensor *ct_zero_(ct_tensor *t); /* every element of t becomes 0; returns t */
#define ct_copy_(dst, src) CT_AT(ct_copy_(dst, src))
#define ct_fill_(t, value) CT_AT(ct_fill_(t, value))
#define ct_zero_(t) CT_AT(ct_zero_(t))

/* ---- printing --------------------------------------------------------- */

/* PyTorch's repr: "tensor([[1.0000, 2.0000]], requires_grad=True)".  The returned
 * string is malloc'd; free() it. */
char *ct_to_string(const ct_tensor *t);
#define ct_to_string(t) CT_AT(ct_to_string(t))
void ct_print(const ct_tensor *t); /* prints ct_to_string(t) and a newline to stdout */
#define ct_print(t) CT_AT(ct_print(t))
/* torch.set_printoptions: every field left 0 keeps its current value (so precision 0
 * cannot be asked for); `profile` ("default", "short", "full") applies first.  As in
 * PyTorch, sci_mode is always set: 1 forces scientific notation, -1 forbids it, 0
 * lets the formatter choose.
 *     ct_set_printoptions(.precision = 2, .linewidth = 120);
 *     ct_set_printoptions(.profile = "default");                // back to the defaults */
typedef struct {
    int precision;       /* digits after the point (default 4) */
    int64_t threshold;   /* summarize tensors with more elements (default 1000) */
    int edgeitems;       /* items kept at each end of a summarized dim (default 3) */
    int linewidth;       /* characters per line (default 80) */
    int sci_mode;        /* 0 automatic, 1 on, -1 off */
    const char *profile; /* NULL, "default", "short" (precision 2, edgeitems 2), "full" */
} ct_print_options;
int ct_set_printoptions_with(ct_print_options o); /* 0, or -1 for an unknown profile */
#define ct_set_printoptions(...) CT_AT(ct_set_printoptions_with(CT_OPTIONS(ct_print_options, __VA_ARGS__)))

#ifdef __cplusplus
}
#endif
CT_API_END
#endif
