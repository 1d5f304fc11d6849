/* In-place ops on views: the CopySlices rebase of the base's history, the lazy
 * regeneration of views' grad_fn, and the checks that refuse the ambiguous cases.
 * See Note [In-place on views] (autograd/node.h). */
#include <stdlib.h>
#include <string.h>

#include "ctorch/autograd.h"
#include "autograd/hooks.h"
#include "autograd/node.h"
#include "ops/internal.h"
#include "ops/shape_internal.h"
#include "ops/trace.h"
#include "core/mem.h"

static ct_geom geom_of(const ct_tensor *t) {
    ct_geom g = {.ndim = t->ndim, .offset = t->offset};
    memcpy(g.sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
    memcpy(g.strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    return g;
}

static void meta_of(ct_input_meta *m, const ct_tensor *t) {
    m->ndim = t->ndim;
    m->dtype = t->dtype;
    memcpy(m->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
}

/* The edge a new node takes to reach t's gradient (t is a base: never a view). */
static void edge_to(ct_node *n, int i, ct_tensor *t) {
    meta_of(&n->in_meta[i], t);
    if (t->grad_fn) {
        n->next[i].fn = ct_retain(t->grad_fn);
        n->next[i].input_nr = t->output_nr;
    } else if (t->requires_grad) {
        n->next[i].fn = ct_grad_accumulator(t);
        n->next[i].input_nr = 0;
    }
    n->needs_grad[i] = n->next[i].fn != NULL;
}

void ct_view_mark(ct_tensor *out, const ct_tensor *t, int kind) {
    /* PyTorch's propagate_creation_meta: a view of a restricted view stays restricted. */
    if (!ct_is_grad_enabled()) kind = CT_VIEW_NO_GRAD;
    else if (kind == CT_VIEW_DEFAULT && t->view_kind > CT_VIEW_DEFAULT) kind = t->view_kind;
    out->view_kind = (uint8_t)kind;
    out->view_version = ct_version_counter(t);
}

/* Views made in no_grad mode keep no history: they are not regenerated (PyTorch
 * refuses to use them once their base changed in place; we keep them detached). */
bool ct_view_requires_grad(const ct_tensor *t) {
    return t->base && t->view_kind != CT_VIEW_NO_GRAD && !t->grad_fn &&
           ct_version_counter(t) != t->view_version && ct_requires_grad_impl(t->base);
}

/* Makes t's grad_fn an AsStridedBackward0 of its base (PyTorch does the same when a
 * view's grad_fn is out of date). */
static void regenerate(ct_tensor *t) {
    ct_tensor *base = t->base;
    ct_node *n = ct_node_new(CT_OP_as_strided, 1, 1);
    ct_geom *g = n ? ct_malloc(2 * sizeof *g) : NULL;
    if (!g) { /* the op in progress fails (ct_error_fail_result) */
        if (n) ct_error_fail_result("out of memory recording the graph");
        ct_release(n);
        return;
    }
    edge_to(n, 0, base);
    g[0] = geom_of(base); /* as ct_as_strided records: the input's geometry, the output's */
    g[1] = geom_of(t);
    n->extra = g;
    n->extra_free = free;
    ct_tensor_detach_hooks(t); /* the old node must not point at t any more */
    ct_node_set_output(n, t, 0);
    ct_release(n);
}

/* Whether t's grad_fn, made by regenerate(), no longer leads to its base's history: an
 * input of an in-place op is regenerated while the op records its node, after the
 * version moved but before the base's history is rebased. */
static bool base_moved(const ct_tensor *t) {
    const ct_node *fn = t->grad_fn;
    if (!fn || fn->op != CT_OP_as_strided || fn->n_in != 1) return false;
    const ct_tensor *base = t->base;
    return fn->next[0].fn != (base->grad_fn ? base->grad_fn : base->grad_acc);
}

ct_node *ct_view_grad_fn(ct_tensor *t) {
    if (!t->base || t->view_kind == CT_VIEW_NO_GRAD) return t->grad_fn;
    if (!t->grad_fn && !ct_requires_grad_impl(t->base)) return NULL;
    unsigned v = ct_version_counter(t);
    if (v != t->view_version || base_moved(t)) {
        regenerate(t);
        t->view_version = v;
    }
    return t->grad_fn;
}

/* ---- CopySlices -------------------------------------------------------------- */

typedef struct {
    ct_node *fn;       /* the in-place op's node (owned); first: see ct_node_release_saved */
    ct_geom base, view;
} copy_slices;

static void copy_slices_free(void *p) {
    copy_slices *c = p;
    ct_release(c->fn);
    free(c);
}

void ct_rebase_history(ct_node *fn, ct_tensor *out) {
    if (!out->view_kind || !out->base) {
        ct_node_set_output(fn, out, 0);
        return;
    }
    ct_tensor *base = out->base;
    /* Edge 0 goes to the base's history; the others are the op's own. */
    ct_node *cs = ct_node_new(CT_OP_copy_slices, fn->n_in, 1);
    copy_slices *c = cs ? ct_malloc(sizeof *c) : NULL;
    if (!c) { /* the op in progress fails (ct_error_fail_result) */
        if (cs) ct_error_fail_result("out of memory recording the graph");
        ct_release(cs);
        return;
    }
    edge_to(cs, 0, base);
    for (int i = 1; i < fn->n_in; i++) {
        cs->in_meta[i] = fn->in_meta[i];
        cs->next[i] = fn->next[i];
        ct_retain(cs->next[i].fn);
        cs->needs_grad[i] = fn->needs_grad[i];
    }
    c->fn = ct_retain(fn);
    c->base = geom_of(base);
    c->view = geom_of(out);
    cs->extra = c;
    cs->extra_free = copy_slices_free;
    ct_node_set_output(cs, base, 0);
    ct_release(cs);
    regenerate(out);
    out->view_version = ct_version_counter(out);
}

static ct_shape shape_of(int ndim, const int64_t *d) {
    ct_shape s = {.ndim = ndim};
    memcpy(s.d, d, sizeof(int64_t) * (size_t)ndim);
    return s;
}

/* As PyTorch's CopySlices::apply: the base's gradient with the view's region replaced
 * by the op's gradient for its input (self), and the op's gradients for the others.
 * Written with ops (clone, as_strided, copy_), so it is differentiable in turn. */
bool copy_slices_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    copy_slices *c = n->extra;
    ct_node *fn = c->fn;
    /* As PyTorch's: a second backward without retain_graph is refused even when the
     * op saved nothing (ct_node_saved words the error). */
    if (n->released) return ct_node_saved(n, 0) != NULL;
    /* The gradient laid out with the base's geometry, so that the view's geometry
     * (relative to the base's offset) finds its region. */
    ct_tensor *result;
    bool contiguous = true;
    int64_t expect = 1;
    for (int d = c->base.ndim - 1; d >= 0; d--) {
        if (c->base.sizes[d] != 1 && c->base.strides[d] != expect) contiguous = false;
        expect *= c->base.sizes[d];
    }
    int64_t offset = c->view.offset - c->base.offset;
    /* The copies are copy_slices' own (reported once, below); the op's formula is not. */
    ct_trace_mute();
    if (contiguous) {
        result = ct_clone(go[0]);
    } else {
        int64_t extent = 1;
        for (int d = 0; d < c->base.ndim; d++) extent += (c->base.sizes[d] - 1) * c->base.strides[d];
        ct_tensor *buf = ct_zeros_with(CT_SHAPE(extent), (ct_tensor_options){.dtype = go[0]->dtype});
        result = ct_as_strided(buf, shape_of(c->base.ndim, c->base.sizes),
                               shape_of(c->base.ndim, c->base.strides), 0);
        result = ct_copy_(result, go[0]);
    }
    ct_tensor *slice = NULL, *slice_grad = NULL;
    if (result) {
        slice = ct_as_strided(result, shape_of(c->view.ndim, c->view.sizes),
                              shape_of(c->view.ndim, c->view.strides), offset + result->offset);
        slice_grad = ct_clone(slice);
    }
    ct_trace_unmute();
    if (!slice_grad) return false;
    ct_tensor *res_small[8] = {0}, **res = res_small;
    if (fn->n_in > 8 && !(res = ct_calloc((size_t)fn->n_in, sizeof *res))) {
        ct_error("ct_backward: out of memory running the graph");
        return false;
    }
    /* Run the op's formula with this node's needs (its edge 0 is not ours). */
    bool keep0 = fn->needs_grad[0];
    fn->needs_grad[0] = n->needs_grad[0];
    bool ok = ct_ops[fn->op].backward(fn, &slice_grad, res);
    fn->needs_grad[0] = keep0;
    if (ok && n->needs_grad[0]) {
        ct_trace_mute();
        ok = (res[0] ? ct_copy_(slice, res[0]) : ct_zero_(slice)) != NULL;
        ct_trace_unmute();
        gi[0] = result;
        if (ok) CT_TRACE(CT_OP_copy_slices, 2, ((ct_tensor *[]){result, res[0]}), 1, &result);
    }
    for (int i = 1; ok && i < fn->n_in; i++) gi[i] = res[i];
    if (res != res_small) free(res);
    return ok;
}

/* ---- checks ------------------------------------------------------------------ */

bool ct_view_check_inplace(const char *op, ct_tensor *t, int n, ct_tensor *const *inputs) {
    if (!t->base || !ct_is_grad_enabled()) return true;
    /* A view made in no_grad mode counts as requiring grad when its base does. */
    bool self_rg = ct_requires_grad_impl(t) ||
                   (t->view_kind == CT_VIEW_NO_GRAD && ct_requires_grad_impl(t->base));
    if (!self_rg && !ct_any_requires_grad(n, inputs)) return true;
    if (t->view_kind != CT_VIEW_DEFAULT) {
        char head[160];
        if (t->grad_fn)
            snprintf(head, sizeof head, "Output %d of %s is a view and is being modified inplace.",
                     t->output_nr, ct_node_grad_name(t->grad_fn));
        else
            snprintf(head, sizeof head, "A view was created in no_grad mode and is being "
                     "modified inplace with grad mode enabled.");
        if (t->view_kind == CT_VIEW_MULTI)
            ct_error("%s: %s This view is the output of a function that returns multiple views. "
                     "Such functions do not allow the output views to be modified inplace. You "
                     "should replace the inplace operation by an out-of-place one.", op, head);
        else
            ct_error("%s: %s Given that this use case is ambiguous and error-prone, it is "
                     "forbidden. You can clarify your code by moving both the view and the "
                     "inplace either both inside the no_grad block (if you don't want the "
                     "inplace to be tracked) or both outside (if you want the inplace to be "
                     "tracked).", op, head);
        return false;
    }
    if (self_rg && !t->base->grad_fn && t->base->requires_grad) {
        ct_error("%s: a view of a leaf Variable that requires grad is being used in an "
                 "in-place operation.", op);
        return false;
    }
    return true;
}
