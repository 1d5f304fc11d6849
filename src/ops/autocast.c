/* Autocast (ctorch/amp.h): this thread's region state, the cast cache, and the casts
 * an op makes at its entry (ops/autocast.h). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mem.h"
#include "ctorch/amp.h"
#include "ops/autocast.h"
#include "ops/internal.h"
#include "ops/trace.h"

const ct_autocast_policy ct_autocast_policy_of[CT_NUM_OPS] = {
#define CT_OP(name, grad, family, autocast) [CT_OP_##name] = CT_AUTOCAST_##autocast,
#define CT_OP_ND(name, family, autocast) [CT_OP_##name] = CT_AUTOCAST_##autocast,
#include "ops/ops.def"
#undef CT_OP
#undef CT_OP_ND
};

_Thread_local int ct_autocast_on;

/* This thread's state; zero: no region (the defaults ct_get_autocast_dtype reports are
 * filled in by its reader). */
static _Thread_local struct {
    bool enabled, cache;
    ct_dtype dtype;
    ct_device device;
    int nesting;  /* open regions, enabled or not (the cache lives until 0) */
    int excluded; /* autocast ops running: their inner ops are not cast */
} st;

/* The casts of weights made in the outermost region: (source, cast) pairs, both owned
 * (holding the source keeps its address from being reused by another tensor). */
static _Thread_local struct { ct_tensor *src, *cast; } *cache;
static _Thread_local int n_cache, cap_cache;

static void update(void) { ct_autocast_on = st.enabled && !st.excluded; }

static void clear_cache(void) {
    for (int i = 0; i < n_cache; i++) {
        ct_release(cache[i].src);
        ct_release(cache[i].cast);
    }
    free(cache);
    cache = NULL;
    n_cache = cap_cache = 0;
}

static ct_dtype default_dtype(ct_device d) { return d.type == CT_DEV_CUDA ? CT_F16 : CT_BF16; }

ct_autocast_guard ct_autocast_begin(ct_autocast_options o) {
    ct_autocast_guard g = {st.enabled, st.dtype, st.device, st.cache, 1};
    ct_device dev = o.device.type == CT_DEV_UNSET ? CT_CPU : o.device;
    ct_dtype dt = o.dtype == CT_DTYPE_UNSET ? default_dtype(dev) : o.dtype;
    bool enabled = o.enabled;
    if (enabled && dt != CT_BF16 && dt != CT_F16) {
        ct_error("ct_autocast: In autocast, but the target dtype is not supported: %s "
                 "(bfloat16 and float16 are). Disabling autocast.", ct_dtype_name(dt));
        enabled = false;
    }
    st.nesting++;
    st.enabled = enabled;
    st.dtype = dt;
    st.device = dev;
    st.cache = o.cache_enabled;
    update();
    return g;
}

void ct_autocast_end(ct_autocast_guard *g) {
    if (!g) return;
    st.enabled = g->prev_enabled;
    st.dtype = g->prev_dtype;
    st.device = g->prev_device;
    st.cache = g->prev_cache;
    if (st.nesting > 0 && --st.nesting == 0) clear_cache();
    update();
}

bool ct_is_autocast_enabled(void) { return st.enabled; }

ct_dtype ct_get_autocast_dtype(void) { return st.nesting ? st.dtype : CT_BF16; }

/* Whether autocast casts t: a floating tensor on the region's device type; float64
 * is never cast (PyTorch's is_eligible). */
static bool eligible(const ct_tensor *t) {
    return t && t->storage->device.type == st.device.type && ct_dtype_is_floating(t->dtype) &&
           t->dtype != CT_F64;
}

/* The widest eligible floating dtype of the inputs (float16 with bfloat16: float32). */
static ct_dtype widest(int n, ct_tensor *const *in) {
    ct_dtype w = CT_DTYPE_UNSET;
    for (int i = 0; i < n; i++) {
        if (!eligible(in[i]) || in[i]->dtype == w) continue;
        w = w == CT_DTYPE_UNSET ? in[i]->dtype : CT_F32; /* two different: float32 */
    }
    return w;
}

static ct_tensor *cached(ct_tensor *t) {
    for (int i = 0; i < n_cache; i++)
        if (cache[i].src == t) return ct_retain(cache[i].cast);
    return NULL;
}

static void remember(ct_tensor *t, ct_tensor *cast) {
    if (n_cache == cap_cache) {
        int cap = cap_cache ? 2 * cap_cache : 16;
        void *p = ct_realloc(cache, sizeof *cache * (size_t)cap);
        if (!p) return; /* no room: the cast is simply not reused */
        cache = p;
        cap_cache = cap;
    }
    cache[n_cache].src = ct_retain(t);
    cache[n_cache].cast = ct_retain(cast);
    n_cache++;
}

/* A float32 leaf requiring grad: a weight, whose casts PyTorch caches. */
static bool is_weight(const ct_tensor *t) {
    return t->dtype == CT_F32 && t->requires_grad && !t->grad_fn && !t->base;
}

/* t as dtype dt, a new reference: from the cache when t is a weight or a view of one
 * (the transposed weight a recurrent layer multiplies by at every step), cast to the
 * region's dtype.  The cache holds t itself, so the view's geometry cannot change. */
static ct_tensor *cast_to(ct_tensor *t, ct_dtype dt) {
    bool cacheable = st.cache && dt == st.dtype &&
                     (is_weight(t) || (t->grad_fn && t->base && is_weight(t->base)));
    ct_tensor *c = cacheable ? cached(t) : NULL;
    if (c) return c;
    c = ct_to_dtype_new("ct_autocast", t, dt);
    if (c && cacheable) remember(t, c);
    return c;
}

/* The dtype op's inputs run in, or UNSET when the op keeps them. */
static ct_dtype target(ct_op_id op, int n, ct_tensor *const *in) {
    if (ct_trace_backward_depth > 0) return CT_DTYPE_UNSET;
    switch (ct_autocast_policy_of[op]) {
    case CT_AUTOCAST_LOWER: return st.dtype;
    case CT_AUTOCAST_FP32: return CT_F32;
    case CT_AUTOCAST_PROMOTE: return widest(n, in);
    case CT_AUTOCAST_KEEP: break;
    }
    return CT_DTYPE_UNSET;
}

/* Casts in[i] where needed, into out[i]: a new reference, NULL where in[i] is kept. */
static void cast_all(int n, ct_tensor *const *in, ct_dtype dt, ct_tensor **out) {
    for (int i = 0; i < n; i++)
        out[i] = eligible(in[i]) && in[i]->dtype != dt ? cast_to(in[i], dt) : NULL;
}

/* The frame of the autocast op this thread is running (innermost). */
static _Thread_local ct_autocast_frame *running;

static void begin_op(ct_autocast_frame *f) {
    f->prev = running;
    running = f;
    st.excluded++;
    update();
}

ct_dtype ct_autocast_narrowest_input(void) {
    ct_dtype d = CT_DTYPE_UNSET;
    for (int i = 0; running && i < running->n; i++) {
        const ct_tensor *t = running->src[i];
        if (t && (t->dtype == CT_BF16 || t->dtype == CT_F16)) d = t->dtype;
    }
    return d;
}

ct_tensor *ct_autocast_cast_source(ct_tensor *t) {
    for (const ct_autocast_frame *f = running; f; f = f->prev) {
        ct_tensor *const *casts = f->list ? f->list + f->n : f->casts;
        for (int i = 0; i < f->n; i++) {
            ct_tensor *src = f->src[i];
            if (!casts[i] || src->grad_fn) continue;
            if (casts[i] == t) return ct_retain(src);
            /* a view of the cast (F.linear's transposed weight): the same view of the
             * source, whose layout the cast has */
            if (t->base == casts[i] && ct_is_contiguous(src) && ct_is_contiguous(casts[i]))
                return ct_tensor_view_of(src, t->ndim, t->sizes, t->strides, t->offset);
        }
    }
    return NULL;
}

bool ct_autocast_enter(ct_autocast_frame *f, ct_op_id op, int n, ct_tensor **in) {
    if (n > CT_AUTOCAST_MAX_INPUTS)
        ct_fatal("internal error: ct_%s autocasts %d inputs (at most %d)", ct_ops[op].name, n,
                 CT_AUTOCAST_MAX_INPUTS);
    ct_dtype dt = target(op, n, in);
    if (dt == CT_DTYPE_UNSET) return false;
    f->n = n;
    f->list = NULL;
    memcpy(f->src_args, in, sizeof *in * (size_t)n);
    f->src = f->src_args;
    cast_all(n, in, dt, f->casts);
    for (int i = 0; i < n; i++)
        if (f->casts[i] || (eligible(in[i]) && in[i]->dtype != dt)) in[i] = f->casts[i];
    begin_op(f);
    return true;
}

bool ct_autocast_enter_list(ct_autocast_frame *f, ct_op_id op, int n, ct_tensor *const **ts) {
    ct_dtype dt = n > 0 && *ts ? target(op, n, *ts) : CT_DTYPE_UNSET;
    if (dt == CT_DTYPE_UNSET) return false;
    ct_tensor **list = ct_malloc(sizeof *list * (size_t)n * 2);
    if (!list) { /* the op runs on what it was given, with the error pending */
        ct_error("ct_%s: out of memory for autocast's list of %d inputs", ct_ops[op].name, n);
        return false;
    }
    ct_tensor **casts = list + n;
    cast_all(n, *ts, dt, casts);
    for (int i = 0; i < n; i++) list[i] = casts[i] ? casts[i] : (*ts)[i];
    for (int i = 0; i < n; i++)
        if (!casts[i] && eligible((*ts)[i]) && (*ts)[i]->dtype != dt) list[i] = NULL;
    f->n = n;
    f->list = list;
    f->src = *ts;
    *ts = list;
    begin_op(f);
    return true;
}

void ct_autocast_exit(ct_autocast_frame *f) {
    running = f->prev;
    st.excluded--;
    update();
    ct_tensor **casts = f->list ? f->list + f->n : f->casts;
    for (int i = 0; i < f->n; i++) ct_release(casts[i]);
    free(f->list);
}
