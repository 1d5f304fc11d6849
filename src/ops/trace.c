/* The record hook (ctorch/ops.h): a per-thread stack of hooks, the calls ops report
 * with CT_TRACE (ops/trace.h), checked against the op's schema. */
#include <string.h>

#include "core/error.h"
#include "ops/trace.h"

#define MAX_HOOKS 8

_Thread_local int ct_trace_active; /* n_hooks, or 0 while muted */
_Thread_local int ct_trace_backward_depth;
static _Thread_local struct { ct_trace_fn fn; void *ctx; } hooks[MAX_HOOKS];
static _Thread_local int n_hooks, muted;

static void update(void) { ct_trace_active = muted ? 0 : n_hooks; }

void ct_trace_mute(void) {
    muted++;
    update();
}
void ct_trace_unmute(void) {
    muted--;
    update();
}

int ct_trace_push(ct_trace_fn fn, void *ctx) {
    if (!fn) {
        ct_error("ct_trace_push: fn is NULL");
        return -1;
    }
    if (n_hooks == MAX_HOOKS) {
        ct_error("ct_trace_push: this thread already has %d hooks (the most there can be)",
                 MAX_HOOKS);
        return -1;
    }
    hooks[n_hooks].fn = fn;
    hooks[n_hooks].ctx = ctx;
    n_hooks++;
    update();
    return 0;
}

int ct_trace_pop(void) {
    if (!n_hooks) {
        ct_error("ct_trace_pop: this thread has no hook to pop");
        return -1;
    }
    n_hooks--;
    update();
    return 0;
}

static bool has_list(int n, const ct_schema_arg *a) {
    for (int i = 0; i < n; i++)
        if (a[i].kind == CT_ARG_TENSOR_LIST) return true;
    return false;
}

/* A call that does not fit its schema is a bug in the op that reported it. */
static void check(const ct_schema *s, int n_in, int n_out, int n_attrs, const ct_value *v) {
    if (n_attrs != s->n_attrs)
        ct_fatal("internal error: ct_%s reported %d attributes; its schema %s has %d", s->name,
                 n_attrs, s->signature, s->n_attrs);
    if (!has_list(s->n_inputs, s->inputs) && n_in != s->n_inputs)
        ct_fatal("internal error: ct_%s reported %d inputs; its schema %s has %d", s->name,
                 n_in, s->signature, s->n_inputs);
    if (!has_list(s->n_outputs, s->outputs) && n_out != s->n_outputs)
        ct_fatal("internal error: ct_%s reported %d outputs; its schema %s has %d", s->name,
                 n_out, s->signature, s->n_outputs);
    for (int i = 0; i < n_attrs; i++) {
        const ct_schema_arg *a = &s->attrs[i];
        bool none_ok = a->optional || (a->default_value && !strcmp(a->default_value, "None"));
        if (v[i].kind != a->kind || (v[i].none && !none_ok))
            ct_fatal("internal error: ct_%s reported attribute %s (%s) as %s of kind %d", s->name,
                     a->name, a->type, v[i].none ? "None" : "a value", (int)v[i].kind);
    }
}

void ct_trace_emit(ct_op_id op, int n_in, ct_tensor *const *in, int n_out,
                   ct_tensor *const *out, int n_attrs, const ct_value *attrs) {
    const ct_schema *s = ct_schema_of(op);
    check(s, n_in, n_out, n_attrs, attrs);
    ct_op_call call = {s, n_in, n_out, in, out, attrs, ct_trace_backward_depth > 0};
    /* A hook's own op calls are not reported (to it or to the hooks below it). */
    int depth = n_hooks;
    ct_trace_mute();
    for (int i = depth - 1; i >= 0; i--) hooks[i].fn(&call, hooks[i].ctx);
    ct_trace_unmute();
}

bool ct_trace_is_top(ct_trace_fn fn, const void *ctx) {
    return n_hooks && hooks[n_hooks - 1].fn == fn && hooks[n_hooks - 1].ctx == ctx;
}
