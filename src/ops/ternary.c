/* where(cond, a, b) and lerp(start, end, weight). */
#include "ops/trace.h"
#include "ops/unary.h"

/* Saved tensors: where's condition; lerp's start, end and weight (its inputs' order). */
enum { SV_CONDITION = 0 };
enum { SV_START, SV_END, SV_WEIGHT };

ct_tensor *ct_where(ct_tensor *cond, ct_tensor *a, ct_tensor *b) {
    if (!ct_alive("ct_where", 1, cond) || !ct_alive("ct_where", 2, a) ||
        !ct_alive("ct_where", 3, b))
        return NULL;
    if (!cond || !a || !b) return NULL;
    if (cond->dtype != CT_BOOL) {
        ct_error("ct_where: expected condition to be a boolean tensor, but got a tensor with "
                 "dtype %s", ct_dtype_name(cond->dtype));
        return NULL;
    }
    ct_pw_spec spec = {CT_OP_where, CT_PW_PROMOTE, 1};
    ct_tensor *in[3] = {cond, a, b};
    ct_tensor *out = ct_pointwise(&spec, 3, in, NULL, NULL);
    if (!out) return NULL;
    ct_node *n = ct_node_record(CT_OP_where, 3, in, 1);
    if (n) {
        ct_node_save(n, SV_CONDITION, cond, false);
        ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    CT_TRACE(CT_OP_where, 3, in, 1, &out);
    return ct_ret(out);
}

ct_tensor *ct_where_scalar(ct_tensor *cond, ct_tensor *a, double b) {
    if (!ct_alive("ct_where_scalar", 1, cond) || !ct_alive("ct_where_scalar", 2, a)) return NULL;
    if (!cond || !a) return NULL;
    ct_tensor *w = ct_wrap_scalar(b, a);
    if (!w) return NULL;
    ct_tensor *out = ct_where(cond, a, w);
    ct_release(w);
    return out;
}

bool where_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *cond = ct_node_saved(n, SV_CONDITION);
    if (!cond) return false;
    if (n->needs_grad[1] && !(gi[1] = ct_mask_grad(cond, go[0]))) return false;
    if (n->needs_grad[2] && !(gi[2] = ct_mask_grad(ct_logical_not(cond), go[0]))) return false;
    return true;
}

/* torch.lerp does not promote: every tensor argument has start's dtype. */
static bool same_dtype(const ct_tensor *start, const ct_tensor *t, const char *what) {
    if (t->dtype == start->dtype) return true;
    ct_error("ct_lerp: expected dtype %s for `%s` but got dtype %s", ct_dtype_name(start->dtype),
             what, ct_dtype_name(t->dtype));
    return false;
}

ct_tensor *ct_lerp(ct_tensor *start, ct_tensor *end, double weight) {
    if (!ct_alive("ct_lerp", 1, start) || !ct_alive("ct_lerp", 2, end)) return NULL;
    if (!start || !end) return NULL;
    if (!same_dtype(start, end, "end")) return NULL;
    ct_pw_spec spec = {CT_OP_lerp, CT_PW_PROMOTE, 0};
    ct_tensor *in[2] = {start, end};
    ct_tensor *out = ct_pointwise(&spec, 2, in, NULL, &(ct_pw_args){.a = weight});
    if (!out) return NULL;
    ct_node *n = ct_node_record(CT_OP_lerp, 2, in, 1);
    if (n) {
        n->attrs.lerp.weight = weight;
        ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    CT_TRACE_ATTRS(CT_OP_lerp, 2, in, 1, &out, &(ct_lerp_attrs){weight});
    return ct_ret(out);
}

ct_tensor *ct_lerp_tensor(ct_tensor *start, ct_tensor *end, ct_tensor *weight) {
    if (!ct_alive("ct_lerp_tensor", 1, start) || !ct_alive("ct_lerp_tensor", 2, end) ||
        !ct_alive("ct_lerp_tensor", 3, weight))
        return NULL;
    if (!start || !end || !weight) return NULL;
    if (!same_dtype(start, end, "end") || !same_dtype(start, weight, "weight")) return NULL;
    ct_pw_spec spec = {CT_OP_lerp_tensor, CT_PW_PROMOTE, 0};
    ct_tensor *in[3] = {start, end, weight};
    ct_tensor *out = ct_pointwise(&spec, 3, in, NULL, NULL);
    if (!out) return NULL;
    ct_node *n = ct_node_record(CT_OP_lerp_tensor, 3, in, 1);
    if (n) {
        for (int i = 0; i < 3; i++) ct_node_save(n, i, in[i], false);
        ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    CT_TRACE(CT_OP_lerp_tensor, 3, in, 1, &out);
    return ct_ret(out);
}

/* start: g (1 - w); end: g w. */
bool lerp_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    double w = n->attrs.lerp.weight;
    if (n->needs_grad[0] && !(gi[0] = ct_mul_scalar(go[0], 1 - w))) return false;
    if (n->needs_grad[1] && !(gi[1] = ct_mul_scalar(go[0], w))) return false;
    return true;
}

/* start: g (1 - w); end: g w; weight: g (end - start). */
bool lerp_tensor_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    ct_tensor *s = ct_node_saved(n, SV_START), *e = ct_node_saved(n, SV_END), *w = ct_node_saved(n, SV_WEIGHT);
    if (!s || !e || !w) return false;
    if (n->needs_grad[0] && !(gi[0] = ct_mul(go[0], ct_rsub_scalar(w, 1)))) return false;
    if (n->needs_grad[1] && !(gi[1] = ct_mul(go[0], w))) return false;
    if (n->needs_grad[2] && !(gi[2] = ct_mul(go[0], ct_sub(e, s)))) return false;
    return true;
}
