/* The collectives and point-to-point calls on tensors: each checks its arguments on
 * the caller's thread, describes itself (Note [Mismatch checks]) and queues a work
 * item for the communication thread (dist/steps.c, dist/p2p.c).
 *
 * A call whose own arguments are wrong still takes its place in the sequence, marked
 * invalid, so that the other ranks fail the collective with "rank r's call failed its
 * own checks" instead of waiting for it; the rank itself reports its own error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_impl.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/object.h"
#include "core/tensor_impl.h"

/* A call being prepared: its work and the first local error. */
typedef struct {
    ct_work *w;
    char err[512];
} call;

static void bad(call *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(call *c, const char *fmt, ...) {
    if (c->err[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
}

/* Checks what every tensor of a call must be: given, on the CPU, contiguous. */
static bool usable(call *c, const char *what, const ct_tensor *t) {
    const char *fn = c->w->fn;
    if (!t)
        bad(c, "%s: %s is NULL", fn, what);
    else if (t->storage->device.type != CT_DEV_CPU) {
        char d[16];
        bad(c, "%s: the MPI backend takes CPU tensors only (%s is on %s)", fn, what,
            (ct_device_str)(t->storage->device, d));
    } else if (!ct_tensor_is_contiguous(t))
        bad(c, "%s: Tensors must be contiguous (%s is not)", fn, what);
    else
        return true;
    return false;
}

static bool same_geometry(const ct_tensor *a, const ct_tensor *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->sizes[i] != b->sizes[i]) return false;
    return true;
}

/* Starts a call on the group of o: the work, described by t (the barrier has none). */
static bool begin(call *c, ct_work_kind kind, const char *fn, const ct_dist_options *o,
                  ct_tensor *t) {
    c->err[0] = 0;
    c->w = NULL;
    ct_process_group *g = ct_dist_group_of(fn, o->group);
    if (!g) return false;
    ct_work *w = c->w = ct_work_new(kind, fn, g);
    if (!w) return false;
    if (kind != CT_WORK_BARRIER && usable(c, "the tensor", t)) {
        w->desc.dtype = t->dtype;
        w->desc.ndim = t->ndim;
        w->desc.numel = t->numel;
        memcpy(w->desc.shape, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
        w->dtype = t->dtype;
        w->elem = ct_dtype_sizes[t->dtype];
        w->count = t->numel;
        w->buf = ct_tensor_data(t);
        w->held[0] = (ct_retain)(t);
    }
    return true;
}

static void use_op(call *c, const ct_dist_options *o) {
    ct_work *w = c->w;
    ct_dist_reduce_op op = o->op;
    w->desc.op = op;
    switch (op) {
    case CT_DIST_SUM:
        w->red = CT_DIST_RED_SUM;
        break;
    case CT_DIST_AVG:
        w->red = CT_DIST_RED_SUM;
        w->avg = true;
        break;
    case CT_DIST_PRODUCT:
        w->red = CT_DIST_RED_PROD;
        break;
    case CT_DIST_MIN:
        w->red = CT_DIST_RED_MIN;
        break;
    case CT_DIST_MAX:
        w->red = CT_DIST_RED_MAX;
        break;
    default:
        bad(c, "%s: unknown reduce op %d", w->fn, (int)op);
        return;
    }
    if (w->avg && w->dtype && ct_dtype_category(w->dtype) != 2)
        bad(c, "%s: ReduceOp.AVG needs a floating point tensor (got %s)", w->fn,
            (ct_dtype_name)((ct_dtype)w->dtype));
}

static void use_root(call *c, const ct_dist_options *o) {
    c->w->desc.root = o->root;
    if (o->root < 0 || o->root >= c->w->g->size)
        bad(c, "%s: Invalid rootRank %d (the group has %d ranks)", c->w->fn, o->root,
            c->w->g->size);
}

/* Scratch of n elements of the work's dtype. */
static void *scratch(call *c, int64_t n) {
    if (c->err[0]) return NULL;
    void *p = ct_malloc((size_t)(n > 0 ? n : 1) * (size_t)c->w->elem);
    if (!p) bad(c, "%s: out of memory", c->w->fn);
    return c->w->tmp = p;
}

/* list: the group's size tensors shaped like t (retained by the work). */
static void use_list(call *c, ct_tensor *const *list, const ct_tensor *t, const char *what,
                     bool keep) {
    ct_work *w = c->w;
    int n = w->g->size;
    if (c->err[0]) return;
    if (!list) {
        bad(c, "%s: %s is NULL", w->fn, what);
        return;
    }
    char name[64];
    for (int r = 0; r < n; r++) {
        snprintf(name, sizeof name, "%s[%d]", what, r);
        if (!usable(c, name, list[r])) return;
        if (!same_geometry(list[r], t)) {
            char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
            bad(c,
                "%s: %s has shape %s (%s) but the tensor %s (%s): the list needs %d tensors like "
                "it",
                w->fn, name, ct_shape_str(list[r]->ndim, list[r]->sizes, a),
                (ct_dtype_name)(list[r]->dtype), ct_shape_str(t->ndim, t->sizes, b),
                (ct_dtype_name)(t->dtype), n);
            return;
        }
    }
    if (!keep) return;
    w->list = ct_calloc((size_t)n, sizeof *w->list);
    if (!w->list) {
        bad(c, "%s: out of memory", w->fn);
        return;
    }
    for (int r = 0; r < n; r++) w->list[r] = (ct_retain)(list[r]);
    w->nlist = n;
}

static void pack(ct_work *w, ct_tensor *const *list) {
    size_t bytes = (size_t)w->count * (size_t)w->elem;
    for (int r = 0; r < w->g->size; r++)
        memcpy((char *)w->tmp + bytes * r, ct_tensor_data(list[r]), bytes);
}

/* big is [size * d0, ...] or [size, *t.shape] with t's dtype. */
static void use_stacked(call *c, ct_tensor *big, const ct_tensor *t, const char *what) {
    ct_work *w = c->w;
    if (c->err[0] || !usable(c, what, big)) return;
    int n = w->g->size;
    bool cat = t->ndim > 0 && big->ndim == t->ndim && big->sizes[0] == n * t->sizes[0];
    for (int i = 1; cat && i < t->ndim; i++) cat = big->sizes[i] == t->sizes[i];
    bool stack = big->ndim == t->ndim + 1 && big->sizes[0] == n;
    for (int i = 0; stack && i < t->ndim; i++) stack = big->sizes[i + 1] == t->sizes[i];
    if (big->dtype != t->dtype || !(cat || stack)) {
        char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
        bad(c,
            "%s: %s must be the group's %d tensors concatenated along dim 0 or stacked, with the "
            "same "
            "dtype: got %s (%s) for %s (%s)",
            w->fn, what, n, ct_shape_str(big->ndim, big->sizes, a), (ct_dtype_name)(big->dtype),
            ct_shape_str(t->ndim, t->sizes, b), (ct_dtype_name)(t->dtype));
        return;
    }
    w->held[1] = (ct_retain)(big);
}

/* Queues the call: when a local check failed it still runs (marked invalid, so that
 * the other ranks fail too), and the local error is the result. */
static int submit(call *c, ct_work **out) {
    ct_work *w = c->w;
    if (!w) return -1;
    if (!c->err[0]) return ct_work_submit(w, out);
    w->desc.invalid = 1;
    ct_dist_enqueue(w);
    (ct_work_free)(w);
    ct_error("%s", c->err);
    return -1;
}

int ct_dist_all_reduce_with(ct_tensor *t, ct_dist_options o) {
    const char *fn = "ct_dist_all_reduce";
    call c;
    if (!ct_alive(fn, 1, t) || !begin(&c, CT_WORK_ALL_REDUCE, fn, &o, t)) return -1;
    use_op(&c, &o);
    return submit(&c, o.work);
}

int ct_dist_reduce_with(ct_tensor *t, ct_dist_options o) {
    const char *fn = "ct_dist_reduce";
    call c;
    if (!ct_alive(fn, 1, t) || !begin(&c, CT_WORK_REDUCE, fn, &o, t)) return -1;
    use_op(&c, &o);
    use_root(&c, &o);
    return submit(&c, o.work);
}

int ct_dist_broadcast_with(ct_tensor *t, ct_dist_options o) {
    const char *fn = "ct_dist_broadcast";
    call c;
    if (!ct_alive(fn, 1, t) || !begin(&c, CT_WORK_BROADCAST, fn, &o, t)) return -1;
    use_root(&c, &o);
    return submit(&c, o.work);
}

int ct_dist_all_gather_with(ct_tensor *const *out_list, ct_tensor *t, ct_dist_options o) {
    const char *fn = "ct_dist_all_gather";
    call c;
    if (!ct_alive(fn, 2, t) || !begin(&c, CT_WORK_ALL_GATHER, fn, &o, t)) return -1;
    if (!c.err[0] && !ct_all_alive(fn, 1, out_list, c.w->g->size)) bad(&c, "%s", (ct_last_error)());
    use_list(&c, out_list, t, "out_list", true);
    scratch(&c, c.w->count * c.w->g->size);
    return submit(&c, o.work);
}

int ct_dist_all_gather_into_tensor_with(ct_tensor *out, ct_tensor *t, ct_dist_options o) {
    const char *fn = "ct_dist_all_gather_into_tensor";
    call c;
    if (!ct_alive(fn, 1, out) || !ct_alive(fn, 2, t) ||
        !begin(&c, CT_WORK_ALL_GATHER_INTO, fn, &o, t))
        return -1;
    use_stacked(&c, out, t, "out");
    if (!c.err[0]) c.w->buf2 = ct_tensor_data(out);
    return submit(&c, o.work);
}

/* reduce_scatter: the work is described by out; tmp holds this rank's size inputs. */
int ct_dist_reduce_scatter_with(ct_tensor *out, ct_tensor *const *in_list, ct_dist_options o) {
    const char *fn = "ct_dist_reduce_scatter";
    call c;
    if (!ct_alive(fn, 1, out) || !begin(&c, CT_WORK_REDUCE_SCATTER, fn, &o, out)) return -1;
    if (!c.err[0] && !ct_all_alive(fn, 2, in_list, c.w->g->size)) bad(&c, "%s", (ct_last_error)());
    use_op(&c, &o);
    use_list(&c, in_list, out, "in_list", false);
    if (scratch(&c, c.w->count * c.w->g->size)) pack(c.w, in_list);
    return submit(&c, o.work);
}

int ct_dist_reduce_scatter_tensor_with(ct_tensor *out, ct_tensor *in, ct_dist_options o) {
    const char *fn = "ct_dist_reduce_scatter_tensor";
    call c;
    if (!ct_alive(fn, 1, out) || !ct_alive(fn, 2, in) ||
        !begin(&c, CT_WORK_REDUCE_SCATTER_TENSOR, fn, &o, out))
        return -1;
    use_op(&c, &o);
    use_stacked(&c, in, out, "in");
    if (scratch(&c, c.w->count * c.w->g->size))
        memcpy(c.w->tmp, ct_tensor_data(in),
               (size_t)(c.w->count * c.w->g->size) * (size_t)c.w->elem);
    return submit(&c, o.work);
}

int ct_dist_gather_with(ct_tensor *t, ct_tensor *const *gather_list, ct_dist_options o) {
    const char *fn = "ct_dist_gather";
    call c;
    if (!ct_alive(fn, 1, t) || !begin(&c, CT_WORK_GATHER, fn, &o, t)) return -1;
    use_root(&c, &o);
    if (!c.err[0] && c.w->g->rank == o.root) {
        if (!ct_all_alive(fn, 2, gather_list, c.w->g->size)) bad(&c, "%s", (ct_last_error)());
        use_list(&c, gather_list, t, "gather_list", true);
        scratch(&c, c.w->count * c.w->g->size);
    }
    return submit(&c, o.work);
}

int ct_dist_scatter_with(ct_tensor *t, ct_tensor *const *scatter_list, ct_dist_options o) {
    const char *fn = "ct_dist_scatter";
    call c;
    if (!ct_alive(fn, 1, t) || !begin(&c, CT_WORK_SCATTER, fn, &o, t)) return -1;
    use_root(&c, &o);
    if (!c.err[0] && c.w->g->rank == o.root) {
        if (!ct_all_alive(fn, 2, scatter_list, c.w->g->size)) bad(&c, "%s", (ct_last_error)());
        use_list(&c, scatter_list, t, "scatter_list", false);
        if (scratch(&c, c.w->count * c.w->g->size)) pack(c.w, scatter_list);
    }
    return submit(&c, o.work);
}

int ct_dist_barrier_with(ct_dist_options o) {
    call c;
    if (!begin(&c, CT_WORK_BARRIER, "ct_dist_barrier", &o, NULL)) return -1;
    return submit(&c, o.work);
}

/* send and recv: peer and tag checked before anything is queued (there is no
 * partner to tell when the peer itself is wrong). */
static bool p2p_begin(call *c, ct_work_kind kind, const char *fn, ct_tensor *t, int peer,
                      const ct_dist_options *o) {
    ct_process_group *g = ct_dist_group_of(fn, o->group);
    if (!g) return false;
    if (peer < (kind == CT_WORK_RECV ? -1 : 0) || peer >= g->size) {
        ct_error("%s: Invalid %s rank %d (the group has %d ranks)", fn,
                 kind == CT_WORK_RECV ? "source" : "destination", peer, g->size);
        return false;
    }
    if (o->tag < 0 || o->tag > g->tag_ub) {
        ct_error("%s: tag %d is out of range [0, %d]", fn, o->tag, g->tag_ub);
        return false;
    }
    if (!begin(c, kind, fn, o, t)) return false;
    ct_work *w = c->w;
    w->peer = peer;
    w->desc.tag = o->tag;
    return true;
}

int ct_dist_send_with(ct_tensor *t, int dst, ct_dist_options o) {
    call c;
    if (!ct_alive("ct_dist_send", 1, t) || !p2p_begin(&c, CT_WORK_SEND, "ct_dist_send", t, dst, &o))
        return -1;
    return submit(&c, o.work);
}

int ct_dist_recv_with(ct_tensor *t, int src, ct_dist_options o) {
    call c;
    if (!ct_alive("ct_dist_recv", 1, t) || !p2p_begin(&c, CT_WORK_RECV, "ct_dist_recv", t, src, &o))
        return -1;
    if (o.work) return submit(&c, o.work);
    ct_work *w = c.w;
    if (c.err[0]) return submit(&c, NULL);
    ct_dist_enqueue(w);
    int rc = (ct_work_wait)(w);
    int source = rc == 0 ? w->peer : -1;
    (ct_work_free)(w);
    return source;
}
