/* nn.init: in-place initializers composed of the random ops, run without recording.
 * Each returns t itself without a new reference (the ops' results stay in a local
 * scope), so a call outside any scope leaks nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"
#include "core/error.h"
#include "ops/host.h"
#include "ops/options.h"
#include "ctorch/init.h"
#include "core/mem.h"

typedef enum { FILL_UNIFORM, FILL_NORMAL, FILL_CONSTANT } fill_kind;

/* The one in-place fill of every initializer: without recording, its result kept
 * in a local scope (t is returned borrowed). */
static ct_tensor *fill(ct_tensor *t, fill_kind k, double p1, double p2, ct_generator *g) {
    if (!t) return NULL;
    ct_tensor *r = NULL;
    CT_NO_GRAD {
        CT_SCOPE {
            r = k == FILL_UNIFORM  ? ct_uniform_(t, p1, p2, .generator = g)
                : k == FILL_NORMAL ? ct_normal_(t, p1, p2, .generator = g)
                                   : ct_fill_(t, p1);
        }
    }
    return r;
}

ct_tensor *ct_init_uniform__with(ct_tensor *t, double a, double b, ct_init_options o) {
    if (!ct_alive("ct_init_uniform_", 1, t) || !ct_option_alive("ct_init_uniform_", "generator", o.generator)) return NULL;
    return fill(t, FILL_UNIFORM, a, b, o.generator);
}
ct_tensor *ct_init_normal__with(ct_tensor *t, double mean, double std, ct_init_options o) {
    if (!ct_alive("ct_init_normal_", 1, t) || !ct_option_alive("ct_init_normal_", "generator", o.generator)) return NULL;
    return fill(t, FILL_NORMAL, mean, std, o.generator);
}
ct_tensor *(ct_init_constant_)(ct_tensor *t, double value) {
    if (!ct_alive("ct_init_constant_", 1, t)) return NULL;
    return fill(t, FILL_CONSTANT, value, 0, NULL);
}
ct_tensor *(ct_init_zeros_)(ct_tensor *t) {
    if (!ct_alive("ct_init_zeros_", 1, t)) return NULL;
    return fill(t, FILL_CONSTANT, 0, 0, NULL);
}
ct_tensor *(ct_init_ones_)(ct_tensor *t) {
    if (!ct_alive("ct_init_ones_", 1, t)) return NULL;
    return fill(t, FILL_CONSTANT, 1, 0, NULL);
}

/* Rejection: out-of-range values are redrawn until none is left, so the result has
 * exactly the truncated distribution (PyTorch uses the inverse CDF; same law).  The
 * final clamp only matters if [a, b] holds almost no mass. */
ct_tensor *ct_init_trunc_normal__with(ct_tensor *t, double mean, double std, double a, double b,
                                      ct_init_options o) {
    if (!ct_alive("ct_init_trunc_normal_", 1, t) || !ct_option_alive("ct_init_trunc_normal_", "generator", o.generator)) return NULL;
    if (!t) return NULL;
    if (!(a < b)) {
        ct_error("ct_init_trunc_normal_: a must be less than b (got a=%g, b=%g)", a, b);
        return NULL;
    }
    bool ok = false;
    CT_NO_GRAD {
        CT_SCOPE {
            ct_tensor *x = ct_normal_(ct_empty_like(t, .dtype = CT_F64), mean, std,
                                      .generator = o.generator);
            for (int it = 0; x && it < 1000; it++) {
                ct_tensor *bad = ct_logical_or(ct_lt_scalar(x, a), ct_gt_scalar(x, b));
                /* meta: no values to redraw, as PyTorch's meta draws none */
                if (!bad || !ct_has_values(bad) || !ct_item(ct_any(bad))) break;
                ct_tensor *y = ct_normal_(ct_empty_like(x), mean, std, .generator = o.generator);
                x = ct_where(bad, y, x);
            }
            x = ct_clamp(x, .min = CT_SOME(a), .max = CT_SOME(b));
            ok = x && ct_copy_(t, x);
        }
    }
    return ok ? t : NULL;
}

double ct_init_calculate_gain_with(const char *nl, ct_gain_options o) {
    static const char *const linear[] = {"linear", "conv1d", "conv2d", "conv3d",
                                         "conv_transpose1d", "conv_transpose2d",
                                         "conv_transpose3d", "sigmoid"};
    if (!nl) nl = "(null)";
    for (size_t i = 0; i < sizeof linear / sizeof *linear; i++)
        if (!strcmp(nl, linear[i])) return 1;
    if (!strcmp(nl, "tanh")) return 5.0 / 3;
    if (!strcmp(nl, "relu")) return sqrt(2.0);
    if (!strcmp(nl, "leaky_relu")) {
        double slope = ct_opt_or(o.param, 0.01);
        return sqrt(2.0 / (1 + slope * slope));
    }
    if (!strcmp(nl, "selu")) return 3.0 / 4;
    ct_error("ct_init_calculate_gain: Unsupported nonlinearity %s", nl);
    return NAN;
}

int ct_init_calculate_fan(const ct_tensor *t, int64_t *fan_in, int64_t *fan_out) {
    if (!ct_alive("ct_init_calculate_fan", 1, t)) return -1;
    if (!t) return -1;
    int nd = ct_ndim(t);
    if (nd < 2) {
        ct_error("ct_init_calculate_fan: Fan in and fan out can not be computed for tensor "
                 "with fewer than 2 dimensions");
        return -1;
    }
    int64_t receptive = 1;
    for (int d = 2; d < nd; d++) receptive *= ct_size(t, d);
    if (fan_in) *fan_in = ct_size(t, 1) * receptive;
    if (fan_out) *fan_out = ct_size(t, 0) * receptive;
    return 0;
}

/* The xavier std: gain * sqrt(2 / (fan_in + fan_out)); NAN on error. */
static double xavier_std(const ct_tensor *t, double gain) {
    int64_t fi, fo;
    if (ct_init_calculate_fan(t, &fi, &fo)) return NAN;
    return gain * sqrt(2.0 / (double)(fi + fo));
}

ct_tensor *ct_init_xavier_uniform__with(ct_tensor *t, ct_init_options o) {
    if (!ct_alive("ct_init_xavier_uniform_", 1, t) || !ct_option_alive("ct_init_xavier_uniform_", "generator", o.generator)) return NULL;
    double std = xavier_std(t, ct_zero_or(o.gain, 1));
    if (isnan(std)) return NULL;
    return ct_init_uniform__with(t, -sqrt(3.0) * std, sqrt(3.0) * std, o);
}

ct_tensor *ct_init_xavier_normal__with(ct_tensor *t, ct_init_options o) {
    if (!ct_alive("ct_init_xavier_normal_", 1, t) || !ct_option_alive("ct_init_xavier_normal_", "generator", o.generator)) return NULL;
    double std = xavier_std(t, ct_zero_or(o.gain, 1));
    if (isnan(std)) return NULL;
    return ct_init_normal__with(t, 0, std, o);
}

/* The kaiming std: gain / sqrt(fan); 0 for a zero-element tensor (a no-op, as in
 * PyTorch); NAN on error. */
static double kaiming_std(const ct_tensor *t, ct_init_options o) {
    if (!t) return NAN;
    if (ct_numel(t) == 0) return 0;
    int64_t fi, fo;
    if (ct_init_calculate_fan(t, &fi, &fo)) return NAN;
    if (o.mode != CT_FAN_IN && o.mode != CT_FAN_OUT) {
        ct_error("ct_init_kaiming: Mode %d not supported, please use one of fan_in, fan_out",
                 (int)o.mode);
        return NAN;
    }
    double gain = ct_init_calculate_gain(o.nonlinearity ? o.nonlinearity : "leaky_relu",
                                         .param = CT_SOME(o.a));
    return gain / sqrt((double)(o.mode == CT_FAN_IN ? fi : fo));
}

ct_tensor *ct_init_kaiming_uniform__with(ct_tensor *t, ct_init_options o) {
    if (!ct_alive("ct_init_kaiming_uniform_", 1, t) || !ct_option_alive("ct_init_kaiming_uniform_", "generator", o.generator)) return NULL;
    double std = kaiming_std(t, o);
    if (isnan(std)) return NULL;
    if (ct_numel(t) == 0) return t;
    return ct_init_uniform__with(t, -sqrt(3.0) * std, sqrt(3.0) * std, o);
}

ct_tensor *ct_init_kaiming_normal__with(ct_tensor *t, ct_init_options o) {
    if (!ct_alive("ct_init_kaiming_normal_", 1, t) || !ct_option_alive("ct_init_kaiming_normal_", "generator", o.generator)) return NULL;
    double std = kaiming_std(t, o);
    if (isnan(std)) return NULL;
    if (ct_numel(t) == 0) return t;
    return ct_init_normal__with(t, 0, std, o);
}

/* Q of a (rows x cols, rows >= cols) column-major-free row-major matrix by modified
 * Gram-Schmidt, run twice for orthogonality to rounding; the implied R has a
 * positive diagonal, which is what PyTorch's sign correction produces. */
static void orthonormalize_columns(double *a, int64_t rows, int64_t cols) {
    for (int64_t j = 0; j < cols; j++) {
        for (int pass = 0; pass < 2; pass++)
            for (int64_t k = 0; k < j; k++) {
                double dot = 0;
                for (int64_t i = 0; i < rows; i++) dot += a[i * cols + k] * a[i * cols + j];
                for (int64_t i = 0; i < rows; i++) a[i * cols + j] -= dot * a[i * cols + k];
            }
        double nrm = 0;
        for (int64_t i = 0; i < rows; i++) nrm += a[i * cols + j] * a[i * cols + j];
        nrm = sqrt(nrm);
        for (int64_t i = 0; i < rows; i++) a[i * cols + j] /= nrm;
    }
}

ct_tensor *ct_init_orthogonal__with(ct_tensor *t, ct_init_options o) {
    if (!ct_alive("ct_init_orthogonal_", 1, t) || !ct_option_alive("ct_init_orthogonal_", "generator", o.generator)) return NULL;
    if (!t) return NULL;
    if (ct_ndim(t) < 2) {
        ct_error("ct_init_orthogonal_: Only tensors with 2 or more dimensions are supported");
        return NULL;
    }
    if (ct_numel(t) == 0) return t;
    int64_t rows = ct_size(t, 0), cols = ct_numel(t) / rows;
    /* PyTorch draws rows x cols, transposes when rows < cols, so Q is tall. */
    int64_t r = rows >= cols ? rows : cols, c = rows >= cols ? cols : rows;
    bool ok = false;
    CT_NO_GRAD {
        CT_SCOPE {
            ct_tensor *g = ct_randn(CT_SHAPE(rows, cols), .dtype = CT_F64, .generator = o.generator);
            if (rows < cols) g = ct_contiguous(ct_t(g));
            double *a = ct_malloc(sizeof(double) * (size_t)(r * c));
            if (!g || !a || ct_copy_to_buffer(g, a, CT_F64, sizeof(double) * (size_t)(r * c))) {
                if (!a) ct_error("ct_init_orthogonal_: out of memory");
                free(a);
                break;
            }
            orthonormalize_columns(a, r, c);
            ct_tensor *q = ct_tensor_f64(a, CT_SHAPE(r, c));
            free(a);
            if (rows < cols) q = ct_t(q);
            q = ct_mul_scalar(q, ct_zero_or(o.gain, 1));
            ok = q && ct_copy_(t, ct_reshape(q, ct_shape_of(t)));
        }
    }
    return ok ? t : NULL;
}
