/* Padding (torch.nn.functional.pad): constant, reflect and replicate.
 *
 * Constant padding fills a new tensor with the value and copies the (possibly
 * cropped) input into its middle.  Reflect and replicate gather every output element
 * from an input element through one index map per padded dim (cpu/shape.h); their
 * backward sums the gradient back along the same maps, as an op of its own
 * (pad_backward) whose gradient is the padding again. */
#include <stdlib.h>
#include <string.h>

#include "kernels/shape.h"
#include "ops/internal.h"
#include "ops/shape_internal.h"
#include "ops/trace.h"
#include "core/mem.h"
#include "ops/autocast.h"

/* The padding of a pad node's attributes (its first: pad or padding, alike). */
static ct_dims *pad_of(ct_node *n) {
    switch (n->op) {
    case CT_OP_constant_pad_nd: return &n->attrs.constant_pad_nd.pad;
    case CT_OP_reflection_pad: return &n->attrs.reflection_pad.padding;
    case CT_OP_replication_pad: return &n->attrs.replication_pad.padding;
    default: return &n->attrs.pad_backward.padding;
    }
}

static void save_pad(ct_node *n, ct_dims pad, ct_pad_mode mode) {
    *pad_of(n) = pad;
    n->state.pad_mode = mode;
}

/* ---- constant ----------------------------------------------------------------- */

static ct_tensor *constant_pad(ct_tensor *t, ct_dims pad, double value) {
    ct_shape shape = ct_shape_of(t);
    int64_t soff = t->offset, doff = 0, sizes[CT_MAX_DIMS], dst_strides[CT_MAX_DIMS];
    memcpy(sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
    for (int i = 0; i < pad.n / 2; i++) {
        int d = t->ndim - 1 - i;
        int64_t l = pad.d[2 * i], r = pad.d[2 * i + 1], n = t->sizes[d];
        shape.d[d] = n + l + r;
        if (shape.d[d] < 0) {
            ct_error("ct_pad: The input size %lld, plus negative padding %lld and %lld resulted "
                     "in a negative output size, which is invalid. Check dimension %d of your "
                     "input.", (long long)n, (long long)l, (long long)r, d);
            return NULL;
        }
        /* the part of the input that survives cropping, and where it lands */
        int64_t cut_l = l < 0 ? -l : 0, cut_r = r < 0 ? -r : 0;
        sizes[d] = n - cut_l - cut_r > 0 ? n - cut_l - cut_r : 0;
        soff += cut_l * t->strides[d];
    }
    ct_copy_kernel k = ct_kernel_copy_for(CT_OP_constant_pad_nd, t->storage->device,
                                                     t->dtype);
    if (!k) return NULL;
    ct_tensor *out = NULL;
    CT_SCOPE {
        out = ct_keep(ct_full_with(shape, value, (ct_tensor_options){
            .dtype = t->dtype, .device = t->storage->device}));
    }
    if (!out) return NULL;
    ct_contiguous_strides(shape.ndim, shape.d, dst_strides);
    doff = 0;
    for (int i = 0; i < pad.n / 2; i++) {
        int d = t->ndim - 1 - i;
        if (pad.d[2 * i] > 0) doff += pad.d[2 * i] * dst_strides[d];
    }
    if (ct_shape_numel(t->ndim, sizes) > 0)
        ct_copy_region(k, out, doff, dst_strides, t, soff, t->strides, t->ndim, sizes);
    ct_node *n = ct_record1(CT_OP_constant_pad_nd, out, 1, &t);
    ct_constant_pad_nd_attrs a = {pad, value};
    if (n) {
        save_pad(n, pad, CT_PAD_CONSTANT);
        n->attrs.constant_pad_nd = a;
    }
    CT_TRACE_ATTRS(CT_OP_constant_pad_nd, 1, &t, 1, &out, &a);
    return out;
}

bool constant_pad_nd_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_dims back = *pad_of(n);
    for (int i = 0; i < back.n; i++) back.d[i] = -back.d[i];
    return (gi[0] = ct_pad_with(go[0], back, (ct_pad_options){0})) != NULL;
}

/* ---- reflect and replicate -------------------------------------------------------- */

static const char *const pad_names[2][2][3] = {
    {{"ReflectionPad1DBackward0", "ReflectionPad2DBackward0", "ReflectionPad3DBackward0"},
     {"ReplicationPad1DBackward0", "ReplicationPad2DBackward0", "ReplicationPad3DBackward0"}},
    {{"ReflectionPad1DBackwardBackward0", "ReflectionPad2DBackwardBackward0",
      "ReflectionPad3DBackwardBackward0"},
     {"ReplicationPad1DBackwardBackward0", "ReplicationPad2DBackwardBackward0",
      "ReplicationPad3DBackwardBackward0"}}};

/* Records the node of a reflect/replicate padding (backward = 0) or of its backward
 * (backward = 1), named as PyTorch names it for the number of padded dims. */
static void record_pad(ct_op_id op, ct_tensor *out, ct_tensor *in, ct_dims pad, ct_pad_mode mode,
                       int backward) {
    ct_node *n = ct_record1(op, out, 1, &in);
    if (n) {
        save_pad(n, pad, mode);
        n->name = pad_names[backward][mode == CT_PAD_REPLICATE][pad.n / 2 - 1];
    }
    /* reflection_pad's, replication_pad's and pad_backward's attributes are alike */
    CT_TRACE_ATTRS(op, 1 + backward, ((ct_tensor *[]){in, NULL}), 1, &out,
                   &(ct_reflection_pad_attrs){pad});
}

/* The input element that output index j (along a dim of size n padded by l on the
 * left) reads. */
static int64_t pad_source(ct_pad_mode mode, int64_t j, int64_t n, int64_t l) {
    int64_t i = j - l;
    if (mode == CT_PAD_REFLECT) {
        if (i < 0) i = -i;
        if (i >= n) i = 2 * (n - 1) - i;
    } else {
        if (i < 0) i = 0;
        if (i >= n) i = n - 1;
    }
    return i;
}

/* The inverse of map (n_out entries in [0, n_in)): start (n_in + 1 entries) and inv
 * (n_out), as ct_pad_geom describes them (a counting sort, stable). */
static void invert_map(const int64_t *map, int64_t n_out, int64_t n_in, int64_t *start,
                       int64_t *inv) {
    memset(start, 0, sizeof(int64_t) * (size_t)(n_in + 1));
    for (int64_t j = 0; j < n_out; j++) start[map[j] + 1]++;
    for (int64_t i = 0; i < n_in; i++) start[i + 1] += start[i];
    for (int64_t j = 0; j < n_out; j++) inv[start[map[j]]++] = j; /* start[i]: i's end */
    for (int64_t i = n_in; i > 0; i--) start[i] = start[i - 1];
    start[0] = 0;
}

/* Fills g (maps and the inverses of mz, my malloc'd into *maps, freed by the caller) for
 * padding an input of (ndim, sizes) by pad; writes the output shape.  False with the
 * error when out of memory. */
static bool pad_plan(ct_pad_mode mode, int ndim, const int64_t *sizes, ct_dims pad,
                     ct_pad_geom *g, int64_t **maps, ct_shape *out) {
    int k = pad.n / 2;
    out->ndim = ndim;
    memcpy(out->d, sizes, sizeof(int64_t) * (size_t)ndim);
    int64_t total = 0;
    for (int a = 0; a < 3; a++) { /* axis a of (D, H, W); padded dim i = 2 - a */
        int i = 2 - a, d = ndim - 1 - i;
        g->in[a] = i < k ? sizes[d] : 1;
        g->out[a] = i < k ? sizes[d] + pad.d[2 * i] + pad.d[2 * i + 1] : 1;
        total += a < 2 ? 2 * g->out[a] + g->in[a] + 1 : g->out[a];
    }
    *maps = ct_malloc(sizeof(int64_t) * (size_t)total);
    if (!*maps) {
        ct_error("ct_pad: out of memory");
        return false;
    }
    int64_t *m = *maps;
    for (int a = 0; a < 3; a++) {
        int i = 2 - a;
        int64_t l = i < k ? pad.d[2 * i] : 0, n_in = g->in[a], n_out = g->out[a];
        for (int64_t j = 0; j < n_out; j++) m[j] = pad_source(mode, j, n_in, l);
        g->map[a] = m;
        m += n_out;
        if (a < 2) { /* the inverses of mz and my */
            g->start[a] = m;
            g->inv[a] = m + n_in + 1;
            invert_map(g->map[a], n_out, n_in, m, m + n_in + 1);
            m += n_out + n_in + 1;
        }
        if (i < k) out->d[ndim - 1 - i] = n_out;
    }
    int64_t inner = g->in[0] * g->in[1] * g->in[2];
    g->B = inner ? ct_shape_numel(ndim, sizes) / inner : 0;
    int64_t l = k > 0 ? pad.d[0] : 0, W = g->in[2], Wo = g->out[2];
    g->x_lo = l > 0 ? l : 0;
    g->x_hi = l + W < Wo ? l + W : Wo;
    if (g->x_hi < g->x_lo) g->x_hi = g->x_lo;
    g->x_src = g->x_lo - l;
    return true;
}

static bool check_gather_pad(ct_tensor *t, ct_dims pad, ct_pad_mode mode) {
    int k = pad.n / 2;
    if (k < 1 || k > 3 || (t->ndim != k + 1 && t->ndim != k + 2)) {
        ct_error("ct_pad: Only 2D, 3D, 4D, 5D padding with non-constant padding are supported "
                 "for now (got a %d-dim input and %d pad values)", t->ndim, pad.n);
        return false;
    }
    char buf[CT_SHAPE_STR_MAX];
    /* Dims after the batch must be non-empty; PyTorch's 1-d and 2-d reflection pads
     * also take an unbatched input with no channels ([0, W], [0, H, W]). */
    bool channels_may_be_empty = mode == CT_PAD_REFLECT && k < 3;
    for (int d = t->ndim == k + 2 || channels_may_be_empty ? 1 : 0; d < t->ndim; d++)
        if (t->sizes[d] == 0) {
            ct_error("ct_pad: Expected %dD or %dD (batch mode) tensor with possibly 0 batch size "
                     "and other non-zero dimensions for input, but got: %s", k + 1, k + 2,
                     ct_shape_str(t->ndim, t->sizes, buf));
            return false;
        }
    for (int i = 0; i < k; i++) {
        int d = t->ndim - 1 - i;
        int64_t l = pad.d[2 * i], r = pad.d[2 * i + 1], n = t->sizes[d];
        if (mode == CT_PAD_REFLECT && (l >= n || r >= n)) {
            ct_error("ct_pad: Argument #%d: Padding size should be less than the corresponding "
                     "input dimension, but got: padding (%lld, %lld) at dimension %d of input %s",
                     4 + 2 * i, (long long)l, (long long)r, d, ct_shape_str(t->ndim, t->sizes, buf));
            return false;
        }
        if (n + l + r < 1 || (mode == CT_PAD_REFLECT && (l <= -n || r <= -n))) {
            ct_error("ct_pad: input %s is too small for padding (%lld, %lld) at dimension %d "
                     "(the output would have %lld elements there)",
                     ct_shape_str(t->ndim, t->sizes, buf), (long long)l, (long long)r, d,
                     (long long)(n + l + r));
            return false;
        }
    }
    return true;
}

static ct_tensor *gather_pad(ct_tensor *t, ct_dims pad, ct_pad_mode mode) {
    CT_AUTOCAST_OP(mode == CT_PAD_REFLECT ? CT_OP_reflection_pad : CT_OP_replication_pad,
                   gather_pad(t, pad, mode), t);
    if (!check_gather_pad(t, pad, mode)) return NULL;
    ct_op_id op = mode == CT_PAD_REFLECT ? CT_OP_reflection_pad : CT_OP_replication_pad;
    ct_pad_gather_kernel k = ct_kernel_pad_gather_for(op, t->storage->device, t->dtype);
    if (!k) return NULL;
    ct_pad_geom g;
    int64_t *maps;
    ct_shape shape;
    if (!pad_plan(mode, t->ndim, t->sizes, pad, &g, &maps, &shape)) return NULL;
    ct_tensor *src = ct_tensor_is_contiguous(t) ? ct_retain(t) : ct_cast_new("ct_pad", t, t->dtype);
    ct_tensor *out = src ? ct_tensor_new("ct_pad", shape, t->dtype, t->storage->device) : NULL;
    if (out && out->numel > 0)
        k(ct_tensor_data(out), ct_tensor_data(src), ct_dtype_size(t->dtype), &g);
    free(maps);
    ct_release(src);
    if (!out) return NULL;
    record_pad(op, out, t, pad, mode, 0);
    return ct_ret(out);
}

static bool gather_pad_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    const ct_input_meta *m = &n->in_meta[0];
    return (gi[0] = ct_pad_backward(go[0], m->ndim, m->sizes, (ct_pad_mode)n->state.pad_mode,
                                    *pad_of(n))) != NULL;
}
bool reflection_pad_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return gather_pad_backward(n, go, gi);
}
bool replication_pad_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return gather_pad_backward(n, go, gi);
}

ct_tensor *ct_pad_backward(ct_tensor *grad, int ndim, const int64_t *in_sizes, ct_pad_mode mode,
                           ct_dims pad) {
    if (!grad) return NULL;
    ct_pad_geom g;
    int64_t *maps;
    ct_shape out_shape, in_shape = {.ndim = ndim};
    memcpy(in_shape.d, in_sizes, sizeof(int64_t) * (size_t)ndim);
    /* the kernel writes every element of gin (kernels/shape.h) */
    ct_device dev = grad->storage->device;
    ct_dtype acc = ct_compute_dtype_for(CT_OP_pad_backward, dev, grad->dtype);
    ct_pad_scatter_kernel k = ct_kernel_pad_scatter_for(CT_OP_pad_backward, dev, acc);
    if (!k) return NULL;
    const char *op = ct_ops[CT_OP_pad_backward].fn;
    if (!pad_plan(mode, ndim, in_sizes, pad, &g, &maps, &out_shape)) return NULL;
    ct_tensor *go = ct_contiguous_as(op, grad, acc);
    ct_tensor *gin = go ? ct_tensor_new(op, in_shape, acc, dev) : NULL;
    if (gin && gin->numel > 0 && !ct_tensor_is_meta(gin)) /* meta: nothing to compute */
        k(ct_tensor_data(gin), ct_tensor_data(go), &g);
    free(maps);
    ct_release(go);
    if (gin && acc != grad->dtype) {
        ct_tensor *c = ct_cast_new(op, gin, grad->dtype);
        ct_release(gin);
        gin = c;
    }
    if (!gin) return NULL;
    record_pad(CT_OP_pad_backward, gin, grad, pad, mode, 1);
    return ct_ret(gin);
}

bool pad_backward_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_pad_options o = {.mode = (ct_pad_mode)n->state.pad_mode};
    return (gi[0] = ct_pad_with(go[0], *pad_of(n), o)) != NULL;
}

/* ---- entry point ------------------------------------------------------------------ */

ct_tensor *ct_pad_with(ct_tensor *t, ct_dims pad, ct_pad_options o) {
    if (!ct_alive("ct_pad", 1, t)) return NULL;
    if (!t) return NULL;
    if (pad.n < 0 || pad.n > CT_MAX_DIMS || pad.n % 2) {
        ct_error("ct_pad: Padding length must be divisible by 2 (got %d values)", pad.n);
        return NULL;
    }
    if (pad.n / 2 > t->ndim) {
        ct_error("ct_pad: Padding length too large (%d values for a %d-dim input)", pad.n, t->ndim);
        return NULL;
    }
    switch (o.mode) {
    case CT_PAD_CONSTANT: return constant_pad(t, pad, o.value);
    case CT_PAD_REFLECT:
    case CT_PAD_REPLICATE: return gather_pad(t, pad, o.mode);
    }
    ct_error("ct_pad: invalid padding mode %d (expected CT_PAD_CONSTANT, CT_PAD_REFLECT or "
             "CT_PAD_REPLICATE)", (int)o.mode);
    return NULL;
}
