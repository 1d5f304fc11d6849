/* The record hook's side inside ops (the public side is ctorch/ops.h).
 *
 * Each op reports its call once, after its outputs exist: with CT_TRACE_ATTRS, the op,
 * its inputs and outputs as arrays and its typed attribute struct (ops/attrs.h, the
 * one its graph node keeps), or with CT_TRACE and one value per schema attribute in
 * schema order:
 *
 *     CT_TRACE_ATTRS(CT_OP_add, 2, in, 1, &out, &(ct_add_attrs){alpha});
 *     CT_TRACE(CT_OP_add, 2, in, 1, &out, CT_V_SCALAR(alpha));
 *
 * With no hook on the thread's stack this is one predictable branch on a thread-local
 * counter; the attribute values are not even built. */
#ifndef CT_OPS_TRACE_H
#define CT_OPS_TRACE_H

#include <string.h>

#include "ctorch/ops.h"
#include "core/autograd_meta.h" /* ct_trace_backward_depth */
#include "ops/attrs.h"
#include "ops/op_table.h"

/* Hooks on this thread's stack; 0 when there are none or reporting is muted. */
extern _Thread_local int ct_trace_active;

/* Between these, this thread's op calls are not reported: a composite op (one made of
 * other ops) mutes its inner ops and reports itself once.  They nest. */
void ct_trace_mute(void);
void ct_trace_unmute(void);
/* True when (fn, ctx) is the innermost hook of this thread. */
bool ct_trace_is_top(ct_trace_fn fn, const void *ctx);
/* The parsed schema of op (ops/schema.c). */
const ct_schema *ct_schema_of(ct_op_id op);
/* Hands one call to every hook; checks the values against op's schema first (a
 * mismatch is a bug in the op: fatal). */
void ct_trace_emit(ct_op_id op, int n_in, ct_tensor *const *in, int n_out,
                   ct_tensor *const *out, int n_attrs, const ct_value *attrs);

#define CT_TRACE(op, n_in, in, n_out, out, ...)                                        \
    do {                                                                               \
        if (__builtin_expect(ct_trace_active != 0, 0)) {                               \
            const ct_value ct_attrs_[] = {{0}, __VA_ARGS__};                           \
            ct_trace_emit(op, n_in, in, n_out, out,                                    \
                          (int)(sizeof ct_attrs_ / sizeof ct_attrs_[0]) - 1, ct_attrs_ + 1); \
        }                                                                              \
    } while (0)

/* The values of op's attribute struct attrs (ct_<op>_attrs), one per schema attribute
 * in schema order, into v (ct_attrs_info_of[op].n_fields of them); lists and strings
 * point into attrs.  A Generator is reported as None. */
void ct_attrs_values(ct_op_id op, const void *attrs, ct_value *v);
/* ct_trace_emit with the values of op's attribute struct attrs. */
void ct_trace_emit_attrs(ct_op_id op, int n_in, ct_tensor *const *in, int n_out,
                         ct_tensor *const *out, const void *attrs);

/* The attributes are the last argument; variadic so that a compound literal's commas
 * may stand in it: CT_TRACE_ATTRS(op, 1, &t, 1, &out, &(ct_select_attrs){dim, index}). */
#define CT_TRACE_ATTRS(op, n_in, in, n_out, out, ...)                                  \
    do {                                                                               \
        if (__builtin_expect(ct_trace_active != 0, 0))                                 \
            ct_trace_emit_attrs(op, n_in, in, n_out, out, __VA_ARGS__);                \
    } while (0)

/* Attribute struct fields from what an op has at hand: a list of n values (n < 0:
 * None), an optional int or float given (CT_ATTR_SOME) or not (CT_ATTR_NONE). */
static inline ct_dims ct_attr_dims(int n, const int64_t *d) {
    ct_dims r = {.n = n};
    if (n > 0) memcpy(r.d, d, sizeof(int64_t) * (size_t)n);
    return r;
}
static inline ct_attr_ints2 ct_attr_ints2_of(const int64_t *d) {
    return (ct_attr_ints2){2, {d[0], d[1]}};
}
static inline ct_attr_floats ct_attr_floats_of(int n, const double *d) {
    ct_attr_floats r = {.n = n};
    if (n > 0) memcpy(r.d, d, sizeof(double) * (size_t)n);
    return r;
}
#define CT_ATTR_SOME(x) {.some = true, .v = (x)}
#define CT_ATTR_NONE {.some = false}

/* Attribute values, by kind.  An optional one given as None: CT_V_NONE(kind); the
 * dtype, string and list forms take CT_DTYPE_UNSET / NULL / a negative count as None. */
#define CT_V_INT(x) {.kind = CT_ARG_INT, .i = (x)}
#define CT_V_FLOAT(x) {.kind = CT_ARG_FLOAT, .f = (x)}
#define CT_V_SCALAR(x) {.kind = CT_ARG_SCALAR, .f = (x)}
#define CT_V_BOOL(x) {.kind = CT_ARG_BOOL, .b = (x)}
#define CT_V_DTYPE(d) {.kind = CT_ARG_DTYPE, .none = (d) == CT_DTYPE_UNSET, .dtype = (d)}
#define CT_V_STR(x) {.kind = CT_ARG_STR, .none = !(x), .s = (x)}
#define CT_V_INTS(n, p) {.kind = CT_ARG_INT_LIST, .none = (n) < 0, .ints = {(n), (p)}}
#define CT_V_FLOATS(n, p) {.kind = CT_ARG_FLOAT_LIST, .none = (n) < 0, .floats = {(n), (p)}}
#define CT_V_BOOLS(n, p) {.kind = CT_ARG_BOOL_LIST, .none = (n) < 0, .bools = {(n), (p)}}
#define CT_V_DEVICE(d) {.kind = CT_ARG_DEVICE, .none = (d).type == CT_DEV_UNSET, .device = (d)}
#define CT_V_NONE(k) {.kind = (k), .none = true}

#endif
