/* add, sub, mul, div: forward (tensor, scalar and in-place forms) and backward. */
#include "autograd/node.h"
#include "ops/host.h"
#include "ops/internal.h"
#include "ops/pointwise.h"
#include "ops/trace.h"

/* Saved tensors: mul's and div's self and other, div's result. */
enum { SV_SELF, SV_OTHER, SV_RESULT };

/* The schema attributes of add, sub, mul or div (its rounding mode as PyTorch's string). */
static void attrs_of(ct_op_id op, double alpha, int64_t mode, ct_op_attrs *at) {
    if (op == CT_OP_div)
        at->div.rounding_mode = mode == CT_ROUND_TRUNC ? "trunc" : mode == CT_ROUND_FLOOR ? "floor" : NULL;
    else if (op == CT_OP_add)
        at->add.alpha = alpha;
    else if (op == CT_OP_sub)
        at->sub.alpha = alpha;
}

/* The forward shared by all forms.  `self` is both input 0 and the output of an
 * in-place form.  Returns an unregistered tensor (self retained when in place). */
static ct_tensor *binary(ct_op_id op, ct_tensor *a, ct_tensor *b, bool inplace, double alpha,
                         int64_t mode) {
    if (!a || !b) return NULL;
    char name[32]; /* formatted for error messages only: this runs per op */
    name[0] = 0;
#define NAME() (name[0] ? name : (snprintf(name, sizeof name, "ct_%s%s", ct_ops[op].name, inplace ? "_" : ""), name))
    if (op == CT_OP_sub && a->dtype == CT_BOOL && b->dtype == CT_BOOL) {
        ct_error("%s: Subtraction, the `-` operator, with two bool tensors is not supported. "
                 "Use the `^` or `logical_xor()` operator instead.", NAME());
        return NULL;
    }
    ct_tensor *in[2] = {a, b};
    /* The result type matters only to these two checks: compute it only for them. */
    bool int_div = op == CT_OP_div && mode != CT_ROUND_NONE;
    bool frac_alpha = alpha != 1 && alpha != floor(alpha);
    ct_dtype rt = int_div || frac_alpha ? ct_result_type(2, in) : CT_DTYPE_UNSET;
    if (int_div && !ct_dtype_is_floating(rt) && ct_has_values(b)) { /* meta: no values */
        /* Integer division by zero has no value; refuse it instead of trapping. */
        ct_host_buf hb;
        const bool *nz = ct_host_read(NAME(), b, CT_BOOL, &hb); /* each divisor != 0 */
        if (!nz) return NULL;
        bool zero = false;
        for (int64_t i = 0; i < b->numel && !zero; i++) zero = !nz[i];
        ct_host_release(&hb);
        if (zero) {
            ct_error("%s: ZeroDivisionError: integer division by zero", NAME());
            return NULL;
        }
    }
    if (frac_alpha && !ct_dtype_is_floating(rt)) {
        ct_error("%s: For integral input tensors, argument alpha must not be a floating point "
                 "number.", NAME());
        return NULL;
    }
    ct_pw_result kind = (op == CT_OP_div && mode == CT_ROUND_NONE) ? CT_PW_PROMOTE_FLOAT
                                                                   : CT_PW_PROMOTE;
    ct_pw_spec spec = {op, kind, 0};
    ct_pw_args args = {.a = alpha, .i = op == CT_OP_div ? mode : (int64_t)alpha};

    ct_tensor *a_before = NULL; /* mul_'s gradient for b needs a's value before */
    if (inplace && op == CT_OP_mul && ct_any_requires_grad(1, &b)) {
        /* A recorded clone (as PyTorch's original_self), so that double backward
         * reaches a's history through it. */
        CT_SCOPE { a_before = ct_retain(ct_clone(a)); }
        if (!a_before) return NULL;
    }
    ct_tensor *out = ct_pointwise(&spec, 2, in, inplace ? a : NULL, &args);
    if (!out) {
        ct_release(a_before);
        return NULL;
    }
    ct_node *n = ct_node_record(op, 2, in, 1);
    if (n) {
        attrs_of(op, alpha, mode, &n->attrs);
        switch (op) {
        case CT_OP_mul:
            if (n->needs_grad[0]) ct_node_save(n, SV_OTHER, b, false);
            if (n->needs_grad[1]) ct_node_save(n, SV_SELF, a_before ? a_before : a, false);
            break;
        case CT_OP_div:
            if (mode == CT_ROUND_NONE) {
                ct_node_save(n, SV_OTHER, b, false);
                if (n->needs_grad[1]) ct_node_save(n, SV_RESULT, out, true); /* -g * out / b */
            }
            break;
        default: break;
        }
        if (inplace) {
            ct_rebase_history(n, out);
            ct_release(n);
        } else {
            ct_node_give_output(n, out, 0);
        }
    }
    ct_release(a_before);
    if (__builtin_expect(ct_trace_active != 0, 0)) {
        ct_op_attrs at;
        attrs_of(op, alpha, mode, &at);
        CT_TRACE_ATTRS(op, 2, in, 1, &out, &at);
    }
    return out;
#undef NAME
}

/* Scalar forms wrap the number into a 0-d tensor (a "wrapped number"). */
static ct_tensor *binary_scalar(ct_op_id op, ct_tensor *a, double b, bool inplace, double alpha) {
    if (!a) return NULL;
    ct_tensor *w = ct_wrap_scalar(b, a);
    if (!w) return NULL;
    ct_tensor *out = binary(op, a, w, inplace, alpha, CT_ROUND_NONE);
    ct_release(w);
    return out;
}

ct_tensor *ct_add(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_add", 1, a) || !ct_alive("ct_add", 2, b)) return NULL;
    return ct_ret(binary(CT_OP_add, a, b, false, 1, 0));
}
ct_tensor *ct_sub(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_sub", 1, a) || !ct_alive("ct_sub", 2, b)) return NULL;
    return ct_ret(binary(CT_OP_sub, a, b, false, 1, 0));
}
ct_tensor *ct_mul(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_mul", 1, a) || !ct_alive("ct_mul", 2, b)) return NULL;
    return ct_ret(binary(CT_OP_mul, a, b, false, 1, 0));
}
ct_tensor *ct_div(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_div", 1, a) || !ct_alive("ct_div", 2, b)) return NULL;
    return ct_ret(binary(CT_OP_div, a, b, false, 1, 0));
}
ct_tensor *ct_add_alpha(ct_tensor *a, ct_tensor *b, double alpha) {
    if (!ct_alive("ct_add_alpha", 1, a) || !ct_alive("ct_add_alpha", 2, b)) return NULL;
    return ct_ret(binary(CT_OP_add, a, b, false, alpha, 0));
}
ct_tensor *ct_sub_alpha(ct_tensor *a, ct_tensor *b, double alpha) {
    if (!ct_alive("ct_sub_alpha", 1, a) || !ct_alive("ct_sub_alpha", 2, b)) return NULL;
    return ct_ret(binary(CT_OP_sub, a, b, false, alpha, 0));
}
ct_tensor *ct_div_mode(ct_tensor *a, ct_tensor *b, ct_rounding_mode mode) {
    if (!ct_alive("ct_div_mode", 1, a) || !ct_alive("ct_div_mode", 2, b)) return NULL;
    if (mode < CT_ROUND_NONE || mode > CT_ROUND_FLOOR) {
        ct_error("ct_div_mode: rounding_mode must be CT_ROUND_NONE, CT_ROUND_TRUNC or "
                 "CT_ROUND_FLOOR (got %d)", (int)mode);
        return NULL;
    }
    ct_tensor *out = binary(CT_OP_div, a, b, false, 1, mode);
    /* PyTorch's div.Tensor_mode overload (any rounding_mode, None too; from Python a
     * number divisor is wrapped into a tensor and lands here as well) */
    if (out && out->grad_fn) out->grad_fn->name = "DivBackward2";
    return ct_ret(out);
}
ct_tensor *ct_add_scalar(ct_tensor *a, double b) {
    if (!ct_alive("ct_add_scalar", 1, a)) return NULL;
    return ct_ret(binary_scalar(CT_OP_add, a, b, false, 1));
}
ct_tensor *ct_sub_scalar(ct_tensor *a, double b) {
    if (!ct_alive("ct_sub_scalar", 1, a)) return NULL;
    return ct_ret(binary_scalar(CT_OP_sub, a, b, false, 1));
}
ct_tensor *ct_mul_scalar(ct_tensor *a, double b) {
    if (!ct_alive("ct_mul_scalar", 1, a)) return NULL;
    return ct_ret(binary_scalar(CT_OP_mul, a, b, false, 1));
}
ct_tensor *ct_div_scalar(ct_tensor *a, double b) {
    if (!ct_alive("ct_div_scalar", 1, a)) return NULL;
    return ct_ret(binary_scalar(CT_OP_div, a, b, false, 1));
}
ct_tensor *ct_rsub_scalar(ct_tensor *a, double b) {
    if (!ct_alive("ct_rsub_scalar", 1, a)) return NULL;
    if (!a) return NULL;
    ct_tensor *w = ct_wrap_scalar(b, a);
    if (!w) return NULL;
    ct_tensor *out = binary(CT_OP_sub, w, a, false, 1, 0);
    ct_release(w);
    return ct_ret(out);
}
ct_tensor *ct_add_(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_add_", 1, a) || !ct_alive("ct_add_", 2, b)) return NULL;
    return ct_ret(binary(CT_OP_add, a, b, true, 1, 0));
}
ct_tensor *ct_sub_(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_sub_", 1, a) || !ct_alive("ct_sub_", 2, b)) return NULL;
    return ct_ret(binary(CT_OP_sub, a, b, true, 1, 0));
}
ct_tensor *ct_mul_(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_mul_", 1, a) || !ct_alive("ct_mul_", 2, b)) return NULL;
    return ct_ret(binary(CT_OP_mul, a, b, true, 1, 0));
}
ct_tensor *ct_div_(ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_div_", 1, a) || !ct_alive("ct_div_", 2, b)) return NULL;
    return ct_ret(binary(CT_OP_div, a, b, true, 1, 0));
}
ct_tensor *ct_add_alpha_(ct_tensor *a, ct_tensor *b, double alpha) {
    if (!ct_alive("ct_add_alpha_", 1, a) || !ct_alive("ct_add_alpha_", 2, b)) return NULL;
    return ct_ret(binary(CT_OP_add, a, b, true, alpha, 0));
}
ct_tensor *ct_add_scalar_(ct_tensor *a, double b) {
    if (!ct_alive("ct_add_scalar_", 1, a)) return NULL;
    return ct_ret(binary_scalar(CT_OP_add, a, b, true, 1));
}
ct_tensor *ct_mul_scalar_(ct_tensor *a, double b) {
    if (!ct_alive("ct_mul_scalar_", 1, a)) return NULL;
    return ct_ret(binary_scalar(CT_OP_mul, a, b, true, 1));
}

/* ---- backward formulas (the engine reduces broadcasting) ---- */

bool add_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    double alpha = n->attrs.add.alpha;
    if (n->needs_grad[0]) gi[0] = go[0];
    if (n->needs_grad[1]) gi[1] = alpha == 1 ? go[0] : ct_mul_scalar(go[0], alpha);
    return true;
}

bool sub_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    double alpha = n->attrs.sub.alpha;
    if (n->needs_grad[0]) gi[0] = go[0];
    if (n->needs_grad[1]) gi[1] = ct_mul_scalar(go[0], -alpha);
    return !n->needs_grad[1] || gi[1];
}

bool mul_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    if (n->needs_grad[0]) {
        ct_tensor *b = ct_node_saved(n, SV_OTHER);
        if (!(gi[0] = ct_mul(go[0], b))) return false;
    }
    if (n->needs_grad[1]) {
        ct_tensor *a = ct_node_saved(n, SV_SELF);
        if (!(gi[1] = ct_mul(go[0], a))) return false;
    }
    return true;
}

bool div_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    if (n->attrs.div.rounding_mode) { /* trunc or floor: piecewise constant, zero gradient */
        for (int i = 0; i < 2; i++)
            if (n->needs_grad[i] && !(gi[i] = ct_zeros_like_with(go[0], (ct_tensor_options){0})))
                return false;
        return true;
    }
    ct_tensor *b = ct_node_saved(n, SV_OTHER);
    if (!b) return false;
    if (n->needs_grad[0] && !(gi[0] = ct_div(go[0], b))) return false;
    if (n->needs_grad[1]) {
        ct_tensor *out = ct_node_saved(n, SV_RESULT);
        if (!out || !(gi[1] = ct_neg(ct_div(ct_mul(go[0], out), b)))) return false;
    }
    return true;
}
