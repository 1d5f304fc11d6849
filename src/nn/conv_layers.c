/* Conv1d, Conv2d, ConvTranspose2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d modules
 * over the functional ops of conv.h. */
#include <stdio.h>
#include <string.h>

#include "nn/layer_util.h"

typedef enum { CONV1D, CONV2D, CONV_T2D } conv_kind;

typedef struct {
    conv_kind kind;
    int64_t in, out;
    int nd; /* spatial dims */
    int64_t kernel[2], stride[2], padding[2], dilation[2], output_padding[2];
    ct_padding_mode padding_mode;
    int64_t pad[4];    /* non-zeros modes: F.pad's (left, right) per dim, last dim first */
    ct_conv_options f; /* for the functional op */
} conv_state;

/* Expands a ct_dims (empty, one value, or nd values) to nd values. */
static bool expand(const char *op, const char *what, ct_dims d, int nd, int64_t def, int64_t *out) {
    if (d.n != 0 && d.n != 1 && d.n != nd) {
        ct_error("%s: %s must have 1 or %d values (got %d)", op, what, nd, d.n);
        return false;
    }
    for (int i = 0; i < nd; i++) out[i] = d.n == 0 ? def : d.d[d.n == 1 ? 0 : i];
    return true;
}

static ct_dims dims_of(const int64_t *v, int nd) {
    ct_dims d = {.n = nd};
    for (int i = 0; i < nd; i++) d.d[i] = v[i];
    return d;
}

/* Circular padding of the last nd dims (F.pad's mode='circular'): each dim gets
 * its last `left` entries in front and its first `right` ones behind. */
static ct_tensor *pad_circular(ct_tensor *x, const int64_t *pad, int nd) {
    for (int i = 0; x && i < nd; i++) {
        int64_t dim = -1 - i, n = ct_size(x, dim), l = pad[2 * i], r = pad[2 * i + 1];
        if (l > n || r > n) {
            ct_error("Conv: circular padding (%lld, %lld) larger than the input size %lld",
                     (long long)l, (long long)r, (long long)n);
            return NULL;
        }
        ct_tensor *parts[3] = {ct_narrow(x, dim, n - l, l), x, ct_narrow(x, dim, 0, r)};
        x = ct_cat(3, parts, dim);
    }
    return x;
}

/* The input padded as padding_mode says (zeros: the convolution pads itself). */
static ct_tensor *pad_input(const conv_state *s, ct_tensor *x) {
    ct_dims pad = {.n = 2 * s->nd};
    for (int i = 0; i < pad.n; i++) pad.d[i] = s->pad[i];
    switch (s->padding_mode) {
    case CT_PADDING_ZEROS: return x;
    case CT_PADDING_REFLECT: return ct_pad(x, pad, .mode = CT_PAD_REFLECT);
    case CT_PADDING_REPLICATE: return ct_pad(x, pad, .mode = CT_PAD_REPLICATE);
    case CT_PADDING_CIRCULAR: return pad_circular(x, s->pad, s->nd);
    }
    return NULL;
}

static ct_tensor *conv_forward(ct_module *m, ct_tensor *x) {
    const conv_state *s = ct_module_state(m);
    ct_tensor *w = ct_layer_tensor(m, "weight"), *b = ct_layer_tensor(m, "bias");
    ct_tensor *y = NULL;
    CT_SCOPE {
        ct_tensor *xp = pad_input(s, x);
        switch (s->kind) {
        case CONV1D: y = ct_conv1d_with(xp, w, b, s->f); break;
        case CONV2D: y = ct_conv2d_with(xp, w, b, s->f); break;
        case CONV_T2D: y = ct_conv_transpose2d_with(xp, w, b, s->f); break;
        }
        y = ct_keep(y);
    }
    return y;
}

static bool all_eq(const int64_t *v, int n, int64_t x) {
    for (int i = 0; i < n; i++)
        if (v[i] != x) return false;
    return true;
}

/* _ConvNd.extra_repr. */
static void conv_repr(const ct_module *m, char *buf, size_t size) {
    const conv_state *s = ct_module_state(m);
    char t[128];
    size_t n = 0;
#define ADD(...) n += (size_t)snprintf(buf + n, n < size ? size - n : 0, __VA_ARGS__)
    ct_layer_fmt_dims(t, sizeof t, s->kernel, s->nd, false);
    ADD("%lld, %lld, kernel_size=%s", (long long)s->in, (long long)s->out, t);
    ct_layer_fmt_dims(t, sizeof t, s->stride, s->nd, false);
    ADD(", stride=%s", t);
    if (s->f.padding_same) {
        ADD(", padding=same");
    } else if (!all_eq(s->padding, s->nd, 0)) {
        ct_layer_fmt_dims(t, sizeof t, s->padding, s->nd, false);
        ADD(", padding=%s", t);
    }
    if (!all_eq(s->dilation, s->nd, 1)) {
        ct_layer_fmt_dims(t, sizeof t, s->dilation, s->nd, false);
        ADD(", dilation=%s", t);
    }
    if (!all_eq(s->output_padding, s->nd, 0)) {
        ct_layer_fmt_dims(t, sizeof t, s->output_padding, s->nd, false);
        ADD(", output_padding=%s", t);
    }
    if (s->f.groups != 1) ADD(", groups=%lld", (long long)s->f.groups);
    if (!ct_layer_tensor(m, "bias")) ADD(", bias=False");
    static const char *const modes[] = {"zeros", "reflect", "replicate", "circular"};
    if (s->padding_mode != CT_PADDING_ZEROS) ADD(", padding_mode=%s", modes[s->padding_mode]);
#undef ADD
}

static const ct_module_class CONV1D_CLASS = {.name = "Conv1d", .forward = conv_forward,
                                             .extra_repr = conv_repr};
static const ct_module_class CONV2D_CLASS = {.name = "Conv2d", .forward = conv_forward,
                                             .extra_repr = conv_repr};
static const ct_module_class CONV_T2D_CLASS = {.name = "ConvTranspose2d", .forward = conv_forward,
                                               .extra_repr = conv_repr};

static ct_module *conv_new(conv_kind kind, const char *op, int64_t in, int64_t out, ct_dims k,
                           ct_conv_layer_options o) {
    int nd = kind == CONV1D ? 1 : 2;
    conv_state s = {.kind = kind, .in = in, .out = out, .nd = nd};
    int64_t groups = o.groups ? o.groups : 1;
    if (k.n == 0) {
        ct_error("%s: kernel_size is required", op);
        return NULL;
    }
    if (!expand(op, "kernel_size", k, nd, 1, s.kernel) ||
        !expand(op, "stride", o.stride, nd, 1, s.stride) ||
        !expand(op, "padding", o.padding, nd, 0, s.padding) ||
        !expand(op, "dilation", o.dilation, nd, 1, s.dilation) ||
        !expand(op, "output_padding", o.output_padding, nd, 0, s.output_padding))
        return NULL;
    if (groups <= 0) {
        ct_error("%s: groups must be a positive integer", op);
        return NULL;
    }
    if (in % groups) {
        ct_error("%s: in_channels must be divisible by groups", op);
        return NULL;
    }
    if (out % groups) {
        ct_error("%s: out_channels must be divisible by groups", op);
        return NULL;
    }
    if (o.padding_same && !all_eq(s.stride, nd, 1)) {
        ct_error("%s: padding='same' is not supported for strided convolutions", op);
        return NULL;
    }
    if (kind != CONV_T2D && !all_eq(s.output_padding, nd, 0)) {
        ct_error("%s: output_padding is only for transposed convolutions", op);
        return NULL;
    }
    s.f = (ct_conv_options){.stride = dims_of(s.stride, nd), .padding = dims_of(s.padding, nd),
                            .dilation = dims_of(s.dilation, nd),
                            .output_padding = dims_of(s.output_padding, nd), .groups = groups,
                            .padding_same = o.padding_same};
    if (o.padding_same) s.f.padding = (ct_dims){0};
    if ((unsigned)o.padding_mode > CT_PADDING_CIRCULAR) {
        ct_error("%s: padding_mode must be zeros, reflect, replicate or circular (got %d)", op,
                 (int)o.padding_mode);
        return NULL;
    }
    s.padding_mode = o.padding_mode;
    if (o.padding_mode != CT_PADDING_ZEROS) {
        /* PyTorch's _reversed_padding_repeated_twice: F.pad's order (last dim first);
         * 'same' puts the odd extra on the right. */
        for (int i = 0; i < nd; i++) {
            int d = nd - 1 - i;
            int64_t total = s.dilation[d] * (s.kernel[d] - 1);
            s.pad[2 * i] = o.padding_same ? total / 2 : s.padding[d];
            s.pad[2 * i + 1] = o.padding_same ? total - total / 2 : s.padding[d];
        }
        s.f.padding = (ct_dims){0};
        s.f.padding_same = false;
    }
    const ct_module_class *cls = kind == CONV1D ? &CONV1D_CLASS : kind == CONV2D ? &CONV2D_CLASS
                                                                                : &CONV_T2D_CLASS;
    ct_module *m = ct_module_new(cls, sizeof s);
    if (!m) return NULL;
    *(conv_state *)ct_module_state(m) = s;
    ct_shape ws = kind == CONV_T2D ? CT_SHAPE(in, out / groups) : CT_SHAPE(out, in / groups);
    for (int i = 0; i < nd; i++) ws.d[ws.ndim++] = s.kernel[i];
    ct_tensor *w = ct_layer_param(m, "weight", ws, o.dtype);
    ct_tensor *b = o.bias ? ct_layer_param(m, "bias", CT_SHAPE(out), o.dtype) : NULL;
    if (!w || (o.bias && !b) || ct_layer_reset_kaiming(w, b)) {
        ct_layer_discard(m);
        return NULL;
    }
    return m;
}

ct_module *ct_nn_conv1d_with(int64_t in, int64_t out, ct_dims k, ct_conv_layer_options o) {
    return conv_new(CONV1D, "ct_nn_conv1d", in, out, k, o);
}
ct_module *ct_nn_conv2d_with(int64_t in, int64_t out, ct_dims k, ct_conv_layer_options o) {
    return conv_new(CONV2D, "ct_nn_conv2d", in, out, k, o);
}
ct_module *ct_nn_conv_transpose2d_with(int64_t in, int64_t out, ct_dims k, ct_conv_layer_options o) {
    if (o.padding_same || o.padding_mode != CT_PADDING_ZEROS) {
        ct_error("ct_nn_conv_transpose2d: Only \"zeros\" padding mode is supported for "
                 "ConvTranspose2d, and padding='same' is not");
        return NULL;
    }
    return conv_new(CONV_T2D, "ct_nn_conv_transpose2d", in, out, k, o);
}

/* ---- pooling ------------------------------------------------------------------------ */

typedef struct {
    ct_max_pool2d_options max;
    ct_avg_pool2d_options avg;
    ct_dims output_size; /* adaptive */
} pool_state;

static ct_tensor *max_pool_forward(ct_module *m, ct_tensor *x) {
    ct_max_pool2d_options o = ((pool_state *)ct_module_state(m))->max;
    o.return_indices = false; /* one output: the values */
    return ct_max_pool2d_with(x, o);
}
static ct_tensor *avg_pool_forward(ct_module *m, ct_tensor *x) {
    return ct_avg_pool2d_with(x, ((pool_state *)ct_module_state(m))->avg);
}
static ct_tensor *adaptive_avg_forward(ct_module *m, ct_tensor *x) {
    return ct_adaptive_avg_pool2d(x, ((pool_state *)ct_module_state(m))->output_size);
}
static ct_tensor *adaptive_max_forward(ct_module *m, ct_tensor *x) {
    return ct_adaptive_max_pool2d(x, ((pool_state *)ct_module_state(m))->output_size);
}

/* return_indices=True (always, for the adaptive pool): (output, indices) when the
 * caller has room for both. */
static int max_pool_multi(ct_module *m, int n_in, ct_tensor *const *in, ct_tensor **out, int max_out) {
    if (n_in != 1 || max_out < 1) {
        ct_error("%s: forward takes one input (got %d)", ct_module_type(m), n_in);
        return -1;
    }
    const pool_state *s = ct_module_state(m);
    bool adaptive = !strcmp(ct_module_type(m), "AdaptiveMaxPool2d");
    ct_tensor *idx = NULL;
    ct_tensor **want = max_out >= 2 && (adaptive || s->max.return_indices) ? &idx : NULL;
    if (!want) out[0] = adaptive ? ct_adaptive_max_pool2d(in[0], s->output_size)
                                 : max_pool_forward(m, in[0]);
    else out[0] = adaptive ? ct_adaptive_max_pool2d_with_indices(in[0], s->output_size, want)
                           : ct_max_pool2d_with_indices_with(in[0], want, s->max);
    if (!out[0]) return -1;
    if (want) out[1] = idx;
    return want ? 2 : 1;
}

/* A pooling argument as PyTorch prints it: an int when one value was given (or for
 * a default), else a tuple. */
static void fmt_arg(char *buf, size_t size, ct_dims d, int64_t def) {
    if (d.n == 0) snprintf(buf, size, "%lld", (long long)def);
    else ct_layer_fmt_dims(buf, size, d.d, d.n, true);
}

static void pool_repr(const ct_module *m, char *buf, size_t size) {
    const pool_state *s = ct_module_state(m);
    bool is_max = !strcmp(ct_module_type(m), "MaxPool2d");
    ct_dims kernel = is_max ? s->max.kernel_size : s->avg.kernel_size;
    ct_dims stride = is_max ? s->max.stride : s->avg.stride;
    char k[64], st[64], p[64], d[64];
    fmt_arg(k, sizeof k, kernel, 0);
    if (stride.n) fmt_arg(st, sizeof st, stride, 0);
    else memcpy(st, k, sizeof k);
    fmt_arg(p, sizeof p, is_max ? s->max.padding : s->avg.padding, 0);
    fmt_arg(d, sizeof d, s->max.dilation, 1);
    if (is_max)
        snprintf(buf, size, "kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s", k,
                 st, p, d, s->max.ceil_mode ? "True" : "False");
    else
        snprintf(buf, size, "kernel_size=%s, stride=%s, padding=%s", k, st, p);
}
static void adaptive_repr(const ct_module *m, char *buf, size_t size) {
    const pool_state *s = ct_module_state(m);
    char o[64];
    ct_layer_fmt_dims(o, sizeof o, s->output_size.d, s->output_size.n, true);
    snprintf(buf, size, "output_size=%s", o);
}

static const ct_module_class MAX_POOL = {.name = "MaxPool2d", .forward = max_pool_forward,
                                         .forward_multi = max_pool_multi, .extra_repr = pool_repr};
static const ct_module_class AVG_POOL = {.name = "AvgPool2d", .forward = avg_pool_forward,
                                         .extra_repr = pool_repr};
static const ct_module_class ADAPTIVE_AVG = {.name = "AdaptiveAvgPool2d",
                                             .forward = adaptive_avg_forward,
                                             .extra_repr = adaptive_repr};
static const ct_module_class ADAPTIVE_MAX = {.name = "AdaptiveMaxPool2d",
                                             .forward = adaptive_max_forward,
                                             .forward_multi = max_pool_multi,
                                             .extra_repr = adaptive_repr};

static ct_module *pool_new(const ct_module_class *cls, const char *op, ct_dims kernel_size,
                           pool_state s) {
    if (kernel_size.n < 1 || kernel_size.n > 2) {
        ct_error("%s: kernel_size must have 1 or 2 values (got %d)", op, kernel_size.n);
        return NULL;
    }
    ct_module *m = ct_module_new(cls, sizeof(pool_state));
    if (m) *(pool_state *)ct_module_state(m) = s;
    return m;
}
ct_module *ct_nn_max_pool2d_with(ct_max_pool2d_options o) {
    return pool_new(&MAX_POOL, "ct_nn_max_pool2d", o.kernel_size, (pool_state){.max = o});
}
ct_module *ct_nn_avg_pool2d_with(ct_avg_pool2d_options o) {
    return pool_new(&AVG_POOL, "ct_nn_avg_pool2d", o.kernel_size, (pool_state){.avg = o});
}

static ct_module *adaptive_new(const ct_module_class *cls, const char *op, ct_dims output_size) {
    if (output_size.n < 1 || output_size.n > 2) {
        ct_error("%s: output_size must have 1 or 2 values (got %d)", op, output_size.n);
        return NULL;
    }
    ct_module *m = ct_module_new(cls, sizeof(pool_state));
    if (m) ((pool_state *)ct_module_state(m))->output_size = output_size;
    return m;
}
ct_module *(ct_nn_adaptive_avg_pool2d)(ct_dims output_size) {
    return adaptive_new(&ADAPTIVE_AVG, "ct_nn_adaptive_avg_pool2d", output_size);
}
ct_module *(ct_nn_adaptive_max_pool2d)(ct_dims output_size) {
    return adaptive_new(&ADAPTIVE_MAX, "ct_nn_adaptive_max_pool2d", output_size);
}
