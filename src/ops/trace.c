/* The record hook (ctorch/ops.h): a per-thread stack of hooks, the calls ops report
 * with CT_TRACE (ops/trace.h), checked against the op's schema. */
#include <string.h>

#include "core/error.h"
#include "ops/trace.h"

#define MAX_HOOKS 8

_Thread_local int ct_trace_active; /* n_hooks, or 0 while muted */
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

void ct_attrs_values(ct_op_id op, const void *attrs, ct_value *v) {
    const ct_attrs_info *info = &ct_attrs_info_of[op];
    for (int i = 0; i < info->n_fields; i++) {
        const ct_attr_field *f = &info->fields[i];
        const char *p = (const char *)attrs + f->offset;
        ct_value x = {.kind = f->kind};
        switch (f->storage) {
/* An optional number ({some, v}) into x.member. */
#define OPTIONAL(T, member)                                                            \
    do {                                                                               \
        T o_;                                                                          \
        memcpy(&o_, p, sizeof o_);                                                     \
        x.none = !o_.some;                                                             \
        x.member = o_.v;                                                               \
    } while (0)
        case CT_ATTR_INT: memcpy(&x.i, p, sizeof x.i); break;
        case CT_ATTR_OPT_INT: OPTIONAL(ct_attr_opt_int, i); break;
        case CT_ATTR_FLOAT: memcpy(&x.f, p, sizeof x.f); break;
        case CT_ATTR_OPT_FLOAT: OPTIONAL(ct_attr_opt_float, f); break;
#undef OPTIONAL
        case CT_ATTR_BOOL: memcpy(&x.b, p, sizeof x.b); break;
        case CT_ATTR_DTYPE:
            memcpy(&x.dtype, p, sizeof x.dtype);
            x.none = x.dtype == CT_DTYPE_UNSET;
            break;
        case CT_ATTR_STR:
            memcpy(&x.s, p, sizeof x.s);
            x.none = !x.s;
            break;
        case CT_ATTR_DEVICE:
            memcpy(&x.device, p, sizeof x.device);
            x.none = x.device.type == CT_DEV_UNSET;
            break;
        case CT_ATTR_GENERATOR: x.none = true; break; /* the generator is not shown */
        case CT_ATTR_INTS: /* {int n; int64_t d[cap];} */
            memcpy(&x.ints.n, p, sizeof x.ints.n);
            x.ints.v = (const int64_t *)(p + offsetof(ct_dims, d));
            x.none = x.ints.n < 0;
            break;
        case CT_ATTR_FLOATS:
            memcpy(&x.floats.n, p, sizeof x.floats.n);
            x.floats.v = (const double *)(p + offsetof(ct_attr_floats, d));
            x.none = x.floats.n < 0;
            break;
        case CT_ATTR_BOOLS:
            memcpy(&x.bools.n, p, sizeof x.bools.n);
            x.bools.v = (const bool *)(p + offsetof(ct_attr_bools, d));
            x.none = x.bools.n < 0;
            break;
        }
        v[i] = x;
    }
}

void ct_trace_emit_attrs(ct_op_id op, int n_in, ct_tensor *const *in, int n_out,
                         ct_tensor *const *out, const void *attrs) {
    int n = ct_attrs_info_of[op].n_fields;
    ct_value v[n ? n : 1];
    ct_attrs_values(op, attrs, v);
    ct_trace_emit(op, n_in, in, n_out, out, n, v);
}

bool ct_trace_is_top(ct_trace_fn fn, const void *ctx) {
    return n_hooks && hooks[n_hooks - 1].fn == fn && hooks[n_hooks - 1].ctx == ctx;
}
