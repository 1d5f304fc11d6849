/* Comparisons, logical ops and isnan/isinf/isfinite (bool results, no graph), and
 * maximum/minimum (differentiable, ties split the gradient). */
#include "ops/trace.h"
#include "ops/unary.h"

/* Saved tensors of maximum and minimum. */
enum { SV_SELF, SV_OTHER };

/* A bool-valued op of two tensors; the result is registered. */
static ct_tensor *bool_binary(ct_op_id op, ct_tensor *a, ct_tensor *b) {
    if (!a || !b) return NULL;
    ct_pw_spec spec = {op, CT_PW_BOOL, 0};
    ct_tensor *in[2] = {a, b};
    ct_tensor *out = ct_pointwise(&spec, 2, in, NULL, NULL);
    if (out) CT_TRACE(op, 2, in, 1, &out);
    return ct_ret(out);
}

/* The scalar forms compare with a wrapped number (promotes like a Python number). */
static ct_tensor *bool_binary_scalar(ct_op_id op, ct_tensor *a, double b) {
    if (!a) return NULL;
    ct_tensor *w = ct_wrap_scalar(b, a);
    if (!w) return NULL;
    ct_tensor *out = bool_binary(op, a, w);
    ct_release(w);
    return out;
}

#define COMPARE(NAME)                                                                    \
    ct_tensor *ct_##NAME(ct_tensor *a, ct_tensor *b) {                                   \
        if (!ct_alive("ct_" #NAME, 1, a) || !ct_alive("ct_" #NAME, 2, b)) return NULL;    \
        return bool_binary(CT_OP_##NAME, a, b);                                          \
    }                                                                                    \
    ct_tensor *ct_##NAME##_scalar(ct_tensor *a, double b) {                              \
        if (!ct_alive("ct_" #NAME "_scalar", 1, a)) return NULL;                         \
        return bool_binary_scalar(CT_OP_##NAME, a, b);                                   \
    }
COMPARE(eq)
COMPARE(ne)
COMPARE(lt)
COMPARE(le)
COMPARE(gt)
COMPARE(ge)

ct_tensor *ct_logical_and(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_logical_and", 1, a) || !ct_alive("ct_logical_and", 2, b)) return NULL;
    return bool_binary(CT_OP_logical_and, a, b);
}
ct_tensor *ct_logical_or(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_logical_or", 1, a) || !ct_alive("ct_logical_or", 2, b)) return NULL;
    return bool_binary(CT_OP_logical_or, a, b);
}
ct_tensor *ct_logical_xor(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_logical_xor", 1, a) || !ct_alive("ct_logical_xor", 2, b)) return NULL;
    return bool_binary(CT_OP_logical_xor, a, b);
}

static ct_tensor *bool_unary(ct_op_id op, ct_tensor *x) {
    if (!x) return NULL;
    ct_pw_spec spec = {op, CT_PW_BOOL, 0};
    ct_tensor *out = ct_pointwise(&spec, 1, &x, NULL, NULL);
    if (out) CT_TRACE(op, 1, &x, 1, &out);
    return ct_ret(out);
}
ct_tensor *ct_logical_not(ct_tensor *x) {
    if (!ct_alive("ct_logical_not", 1, x)) return NULL;
    return bool_unary(CT_OP_logical_not, x);
}
ct_tensor *ct_isnan(ct_tensor *x) {
    if (!ct_alive("ct_isnan", 1, x)) return NULL;
    return bool_unary(CT_OP_isnan, x);
}
ct_tensor *ct_isinf(ct_tensor *x) {
    if (!ct_alive("ct_isinf", 1, x)) return NULL;
    return bool_unary(CT_OP_isinf, x);
}
ct_tensor *ct_isfinite(ct_tensor *x) {
    if (!ct_alive("ct_isfinite", 1, x)) return NULL;
    return bool_unary(CT_OP_isfinite, x);
}

/* ---- maximum, minimum ---- */

static ct_tensor *extremum(ct_op_id op, ct_tensor *a, ct_tensor *b) {
    if (!a || !b) return NULL;
    ct_pw_spec spec = {op, CT_PW_PROMOTE, 0};
    ct_tensor *in[2] = {a, b};
    ct_tensor *out = ct_pointwise(&spec, 2, in, NULL, NULL);
    if (!out) return NULL;
    ct_node *n = ct_node_record(op, 2, in, 1);
    if (n) {
        ct_node_save(n, SV_SELF, a, false);
        ct_node_save(n, SV_OTHER, b, false);
        ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    CT_TRACE(op, 2, in, 1, &out);
    return ct_ret(out);
}
ct_tensor *ct_maximum(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_maximum", 1, a) || !ct_alive("ct_maximum", 2, b)) return NULL;
    return extremum(CT_OP_maximum, a, b);
}
ct_tensor *ct_minimum(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_minimum", 1, a) || !ct_alive("ct_minimum", 2, b)) return NULL;
    return extremum(CT_OP_minimum, a, b);
}

/* PyTorch's formula: where(a == b, g / 2, g), zeroed where the other input won
 * (a < b for a's gradient of maximum).  With a NaN neither wins: both get g. */
static bool extremum_backward(ct_node *n, ct_tensor **go, ct_tensor **gi, bool is_max) {
    ct_tensor *a = ct_node_saved(n, SV_SELF), *b = ct_node_saved(n, SV_OTHER);
    if (!a || !b) return false;
    ct_tensor *g = ct_where(ct_eq(a, b), ct_mul_scalar(go[0], 0.5), go[0]);
    ct_tensor *a_lost = is_max ? ct_lt(a, b) : ct_gt(a, b);
    ct_tensor *b_lost = is_max ? ct_gt(a, b) : ct_lt(a, b);
    if (n->needs_grad[0] && !(gi[0] = ct_mask_grad(ct_logical_not(a_lost), g))) return false;
    if (n->needs_grad[1] && !(gi[1] = ct_mask_grad(ct_logical_not(b_lost), g))) return false;
    return true;
}
bool maximum_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return extremum_backward(n, go, gi, true);
}
bool minimum_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return extremum_backward(n, go, gi, false);
}
