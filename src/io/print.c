/* ct_to_string / ct_print: PyTorch 1.13's repr (torch/_tensor_str.py), rule for rule.
 *
 * One formatter per tensor decides how every element prints, from the elements that
 * will be shown (the summarized ones when numel > 1000):
 *   - integers and bools: their decimal text ("True"/"False"), padded to the widest;
 *   - floats whose finite nonzero values are all integers ("int mode"): "3." — unless
 *     max/min > 1000 or max > 1e8, then scientific "3.0000e+08";
 *   - other floats: 4 decimals, or scientific when max/min > 1000, max > 1e8 or
 *     min < 1e-4.  Widths come from the finite nonzero values only.
 * Rows wrap at 80 columns; dims beyond the last two are separated by blank lines;
 * more than 1000 elements show 3 items at each edge of every dim around "...".
 * ct_set_printoptions changes these numbers, as torch.set_printoptions does. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/node.h"
#include "core/tensor_impl.h"
#include "core/mem.h"

/* The options (torch._tensor_str.PRINT_OPTS), shared by all threads; each call
 * formats with a snapshot taken under the lock. */
typedef struct {
    int precision;
    int64_t threshold;
    int edgeitems, linewidth, sci_mode;
} print_opts;
static const print_opts DEFAULTS = {4, 1000, 3, 80, 0};
static print_opts opts = {4, 1000, 3, 80, 0};
static pthread_mutex_t opts_lock = PTHREAD_MUTEX_INITIALIZER;

int ct_set_printoptions_with(ct_print_options o) {
    print_opts n;
    pthread_mutex_lock(&opts_lock);
    n = opts;
    pthread_mutex_unlock(&opts_lock);
    if (o.profile) {
        if (!strcmp(o.profile, "default")) {
            n = DEFAULTS;
        } else if (!strcmp(o.profile, "short")) {
            n = (print_opts){2, 1000, 2, 80, n.sci_mode};
        } else if (!strcmp(o.profile, "full")) {
            n = (print_opts){4, INT64_MAX, 3, 80, n.sci_mode};
        } else {
            ct_error("ct_set_printoptions: unknown profile \"%s\" (expected \"default\", "
                     "\"short\" or \"full\")", o.profile);
            return -1;
        }
    }
    if (o.precision) n.precision = o.precision;
    if (o.threshold) n.threshold = o.threshold;
    if (o.edgeitems) n.edgeitems = o.edgeitems;
    if (o.linewidth) n.linewidth = o.linewidth;
    n.sci_mode = o.sci_mode;
    pthread_mutex_lock(&opts_lock);
    opts = n;
    pthread_mutex_unlock(&opts_lock);
    return 0;
}

/* ---- a growing string --------------------------------------------------- */

typedef struct {
    char *s;
    size_t len, cap;
    bool failed; /* out of memory: later text is dropped (sb_done fails) */
} sbuf;

static bool sb_grow(sbuf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *s = b->failed ? NULL : ct_realloc(b->s, cap);
    if (!s) {
        b->failed = true;
        return false;
    }
    b->s = s;
    b->cap = cap;
    return true;
}
/* The text, or NULL with an error when out of memory. */
static char *sb_done(sbuf *b) {
    if (!b->failed) return b->s;
    free(b->s);
    ct_error("ct_print: out of memory formatting a tensor");
    return NULL;
}
static void sb_putn(sbuf *b, const char *s, size_t n) {
    if (!sb_grow(b, n)) return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}
static void sb_puts(sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }
static void sb_spaces(sbuf *b, int n) {
    for (int i = 0; i < n; i++) sb_putn(b, " ", 1);
}
/* ---- reading elements --------------------------------------------------- */

typedef struct {
    const ct_tensor *t;
    const char *data; /* element 0 of the view */
    size_t esize;
    bool floating, is_bool, summarize;
    print_opts o;
} view;

static double load_f(const view *v, int64_t off) {
    return ct_load_f64(v->data + off * (int64_t)v->esize, v->t->dtype);
}
static int64_t load_i(const view *v, int64_t off) {
    return ct_load_i64(v->data + off * (int64_t)v->esize, v->t->dtype);
}

/* The indices of dim d that are shown: all, or `edgeitems` at each end. */
static bool dim_summarized(const view *v, int d) {
    return v->summarize && v->t->sizes[d] > 2 * v->o.edgeitems;
}
static int64_t shown_index(const view *v, int d, int64_t k) { /* k-th shown index */
    return dim_summarized(v, d) && k >= v->o.edgeitems ? v->t->sizes[d] - 2 * v->o.edgeitems + k : k;
}
static int64_t shown_count(const view *v, int d) {
    return dim_summarized(v, d) ? 2 * v->o.edgeitems : v->t->sizes[d];
}

typedef void (*visit_fn)(const view *v, int64_t off, void *ctx);
static void visit(const view *v, int d, int64_t off, visit_fn fn, void *ctx) {
    if (d == v->t->ndim) {
        fn(v, off, ctx);
        return;
    }
    for (int64_t k = 0, n = shown_count(v, d); k < n; k++)
        visit(v, d + 1, off + shown_index(v, d, k) * v->t->strides[d], fn, ctx);
}

/* ---- the formatter ------------------------------------------------------ */

typedef struct {
    bool int_mode, sci_mode;
    int max_width;
    /* scan state */
    bool any;
    double min_abs, max_abs;
} formatter;

static void scan_int(const view *v, int64_t off, void *ctx) {
    formatter *f = ctx;
    int w = v->is_bool ? (load_i(v, off) ? 4 : 5) : snprintf(NULL, 0, "%lld", (long long)load_i(v, off));
    if (w > f->max_width) f->max_width = w;
}

static void scan_range(const view *v, int64_t off, void *ctx) {
    formatter *f = ctx;
    double x = load_f(v, off);
    if (!isfinite(x) || x == 0) return;
    double a = fabs(x);
    if (!f->any || a < f->min_abs) f->min_abs = a;
    if (!f->any || a > f->max_abs) f->max_abs = a;
    f->any = true;
    if (x != ceil(x)) f->int_mode = false;
}

static void scan_width(const view *v, int64_t off, void *ctx) {
    formatter *f = ctx;
    double x = load_f(v, off);
    if (!isfinite(x) || x == 0) return;
    int w = f->sci_mode   ? snprintf(NULL, 0, "%.*e", v->o.precision, x)
            : f->int_mode ? snprintf(NULL, 0, "%.0f", x) + 1
                          : snprintf(NULL, 0, "%.*f", v->o.precision, x);
    if (w > f->max_width) f->max_width = w;
}

static formatter make_formatter(const view *v) {
    formatter f = {.int_mode = true, .max_width = 1};
    if (!v->floating) {
        visit(v, 0, 0, scan_int, &f);
        return f;
    }
    visit(v, 0, 0, scan_range, &f);
    if (!f.any) return f; /* only zeros, infs and nans */
    f.sci_mode = f.max_abs / f.min_abs > 1000.0 || f.max_abs > 1.0e8 ||
                 (!f.int_mode && f.min_abs < 1.0e-4);
    visit(v, 0, 0, scan_width, &f);
    /* A forced mode changes how elements print, not the widths chosen above. */
    if (v->o.sci_mode) f.sci_mode = v->o.sci_mode > 0;
    return f;
}

/* One element, right-aligned to the formatter's width. */
static void put_elem(sbuf *b, const view *v, const formatter *f, int64_t off) {
    char s[512];
    if (!v->floating) {
        int64_t x = load_i(v, off);
        if (v->is_bool)
            snprintf(s, sizeof s, "%s", x ? "True" : "False");
        else
            snprintf(s, sizeof s, "%lld", (long long)x);
    } else {
        double x = load_f(v, off);
        if (isnan(x))
            snprintf(s, sizeof s, "nan"); /* Python never prints "-nan" */
        else if (isinf(x))
            snprintf(s, sizeof s, "%s", x < 0 ? "-inf" : "inf");
        else if (f->sci_mode)
            snprintf(s, sizeof s, "%.*e", v->o.precision, x);
        else if (f->int_mode)
            snprintf(s, sizeof s, "%.0f.", x);
        else
            snprintf(s, sizeof s, "%.*f", v->o.precision, x);
    }
    int pad = f->max_width - (int)strlen(s);
    sb_spaces(b, pad);
    sb_puts(b, s);
}

/* ---- layout ------------------------------------------------------------- */

/* The last dim at `off`: elements joined by ", ", wrapped to the line width. */
static void vector_str(sbuf *b, const view *v, const formatter *f, int64_t off, int indent) {
    int d = v->t->ndim - 1;
    int64_t elem_len = f->max_width + 2;
    int64_t per_line = (v->o.linewidth - indent) / elem_len;
    if (per_line < 1) per_line = 1;
    int64_t n = shown_count(v, d), items = n + (dim_summarized(v, d) ? 1 : 0);
    sb_puts(b, "[");
    for (int64_t k = 0, item = 0; item < items; item++) {
        if (item > 0) {
            if (item % per_line == 0) {
                sb_puts(b, ",\n");
                sb_spaces(b, indent + 1);
            } else {
                sb_puts(b, ", ");
            }
        }
        if (dim_summarized(v, d) && item == v->o.edgeitems) {
            sb_puts(b, " ...");
            continue;
        }
        put_elem(b, v, f, off + shown_index(v, d, k) * v->t->strides[d]);
        k++;
    }
    sb_puts(b, "]");
}

static void tensor_str(sbuf *b, const view *v, const formatter *f, int d, int64_t off,
                       int indent) {
    int ndim = v->t->ndim;
    if (d == ndim) { /* 0-d */
        put_elem(b, v, f, off);
        return;
    }
    if (d == ndim - 1) {
        vector_str(b, v, f, off, indent);
        return;
    }
    sb_puts(b, "[");
    int64_t n = shown_count(v, d), items = n + (dim_summarized(v, d) ? 1 : 0);
    for (int64_t k = 0, item = 0; item < items; item++) {
        if (item > 0) {
            sb_puts(b, ",");
            for (int i = 0; i < ndim - d - 1; i++) sb_puts(b, "\n");
            sb_spaces(b, indent + 1);
        }
        if (dim_summarized(v, d) && item == v->o.edgeitems) {
            sb_puts(b, "...");
            continue;
        }
        tensor_str(b, v, f, d + 1, off + shown_index(v, d, k) * v->t->strides[d], indent + 1);
        k++;
    }
    sb_puts(b, "]");
}

/* ", suffix" or ",\n<indent>suffix" when the line would pass linewidth. */
static void add_suffix(sbuf *b, const char *suffix, int indent, int linewidth) {
    const char *nl = b->s ? strrchr(b->s, '\n') : NULL;
    /* PyTorch's count: len - rfind("\n") + 1, with rfind -1 when there is no newline */
    int64_t last_line_len = nl ? (int64_t)(b->s + b->len - nl) + 1 : (int64_t)b->len + 2;
    if (last_line_len + (int64_t)strlen(suffix) + 2 > linewidth) {
        sb_puts(b, ",\n");
        sb_spaces(b, indent);
    } else {
        sb_puts(b, ", ");
    }
    sb_puts(b, suffix);
}

/* ", grad_fn=<MulBackward0>" or ", requires_grad=True" (a leaf), or nothing. */
static void add_grad_suffix(sbuf *b, const ct_tensor *t, int indent, int linewidth) {
    ct_node *grad_fn = ct_grad_fn_of((ct_tensor *)t);
    if (grad_fn) {
        char suffix[96];
        snprintf(suffix, sizeof suffix, "grad_fn=<%s>", ct_node_grad_name(grad_fn));
        add_suffix(b, suffix, indent, linewidth);
    } else if (t->requires_grad) {
        add_suffix(b, "requires_grad=True", indent, linewidth);
    }
}

static char *format_tensor(const ct_tensor *t, const ct_tensor *orig) {
    sbuf b = {0};
    const char *prefix = "tensor(";
    int indent = (int)strlen(prefix);
    sb_puts(&b, prefix);
    print_opts o;
    pthread_mutex_lock(&opts_lock);
    o = opts;
    pthread_mutex_unlock(&opts_lock);
    if (t->numel == 0) {
        sb_puts(&b, "[]");
    } else {
        view v = {t, ct_tensor_data(t), ct_dtype_size(t->dtype), ct_dtype_is_floating(t->dtype),
                  t->dtype == CT_BOOL, t->numel > o.threshold, o};
        formatter f = make_formatter(&v);
        tensor_str(&b, &v, &f, 0, 0, indent);
    }
    char suffix[CT_SHAPE_STR_MAX + 32];
    ct_device dev = orig->storage->device;
    if (dev.type != CT_DEV_CPU) {
        char d[16];
        snprintf(suffix, sizeof suffix, "device='%s'", ct_device_str(dev, d));
        add_suffix(&b, suffix, indent, o.linewidth);
    }
    ct_dtype def = ct_get_default_dtype();
    if (t->numel == 0 && t->ndim != 1) {
        int n = snprintf(suffix, sizeof suffix, "size=(");
        for (int i = 0; i < t->ndim; i++)
            n += snprintf(suffix + n, sizeof suffix - (size_t)n, i ? ", %lld" : "%lld",
                          (long long)t->sizes[i]);
        snprintf(suffix + n, sizeof suffix - (size_t)n, ")");
        add_suffix(&b, suffix, indent, o.linewidth);
    }
    bool show_dtype = t->numel == 0 ? t->dtype != def
                                    : t->dtype != def && t->dtype != CT_I64 && t->dtype != CT_BOOL;
    if (show_dtype) {
        snprintf(suffix, sizeof suffix, "dtype=torch.%s", ct_dtype_name(t->dtype));
        add_suffix(&b, suffix, indent, o.linewidth);
    }
    add_grad_suffix(&b, orig, indent, o.linewidth);
    sb_puts(&b, ")");
    return sb_done(&b);
}

/* tensor(..., device='meta', size=(2, 3)) and the dtype whenever it is not the
 * default one, as PyTorch prints a tensor without data. */
static char *format_meta(const ct_tensor *t) {
    sbuf b = {0};
    const char *prefix = "tensor(";
    int indent = (int)strlen(prefix);
    print_opts o;
    pthread_mutex_lock(&opts_lock);
    o = opts;
    pthread_mutex_unlock(&opts_lock);
    sb_puts(&b, prefix);
    sb_puts(&b, "...");
    add_suffix(&b, "device='meta'", indent, o.linewidth);
    char suffix[CT_SHAPE_STR_MAX + 32];
    int n = snprintf(suffix, sizeof suffix, "size=(");
    for (int i = 0; i < t->ndim; i++)
        n += snprintf(suffix + n, sizeof suffix - (size_t)n, i ? ", %lld" : "%lld",
                      (long long)t->sizes[i]);
    snprintf(suffix + n, sizeof suffix - (size_t)n, t->ndim == 1 ? ",)" : ")");
    add_suffix(&b, suffix, indent, o.linewidth);
    if (t->dtype != ct_get_default_dtype()) {
        snprintf(suffix, sizeof suffix, "dtype=torch.%s", ct_dtype_name(t->dtype));
        add_suffix(&b, suffix, indent, o.linewidth);
    }
    add_grad_suffix(&b, t, indent, o.linewidth);
    sb_puts(&b, ")");
    return sb_done(&b);
}

char *ct_to_string(const ct_tensor *t) {
    if (!ct_alive("ct_to_string", 1, t)) return NULL;
    if (!t) return NULL;
    if (ct_tensor_is_meta(t)) return format_meta(t);
    if (t->storage->device.type == CT_DEV_CPU) return format_tensor(t, t);
    char *s = NULL;
    CT_SCOPE {
        ct_tensor *c = ct_to_with((ct_tensor *)t, (ct_to_options){.device = CT_CPU});
        if (c) s = format_tensor(c, t);
    }
    return s;
}

void ct_print(const ct_tensor *t) {
    if (!ct_alive("ct_print", 1, t)) return;
    char *s = ct_to_string(t);
    if (s)
        puts(s);
    else
        printf("NULL (%s)\n", ct_last_error() ? ct_last_error() : "no tensor");
    free(s);
}
