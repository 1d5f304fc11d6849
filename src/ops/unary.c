/* Unary pointwise ops: forward through ct_pointwise, backward in terms of ops. */
#include "autograd/node.h"
#include "ops/internal.h"
#include "ops/pointwise.h"

/* How a unary op's backward finds what it needs. */
typedef enum { SAVE_NONE, SAVE_INPUT, SAVE_OUTPUT } save_kind;

typedef struct {
    ct_op_id op;
    ct_pw_result result;
    save_kind save;
} unary_spec;

static ct_tensor *unary(const unary_spec *u, ct_tensor *x, const ct_pw_args *args) {
    if (!x) return NULL;
    if (u->op == CT_OP_neg && x->dtype == CT_BOOL) {
        ct_error("ct_neg: Negation, the `-` operator, on a bool tensor is not supported. If you "
                 "are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
        return NULL;
    }
    ct_pw_spec spec = {u->op, u->result, 0};
    ct_tensor *out = ct_pointwise(&spec, 1, &x, NULL, args);
    if (!out) return NULL;
    ct_node *n = ct_node_record(u->op, 1, &x, 1);
    if (n) {
        if (args) {
            n->args[0] = args->a;
            n->args[1] = args->b;
        }
        if (u->save == SAVE_INPUT) ct_node_save(n, 0, x, false);
        if (u->save == SAVE_OUTPUT) ct_node_save(n, 0, out, true);
        ct_node_set_output(n, out, 0);
        ct_release(n);
    }
    return ct_ret(out);
}

static const unary_spec NEG = {CT_OP_neg, CT_PW_PROMOTE, SAVE_NONE};
static const unary_spec EXP = {CT_OP_exp, CT_PW_PROMOTE_FLOAT, SAVE_OUTPUT};
static const unary_spec LOG = {CT_OP_log, CT_PW_PROMOTE_FLOAT, SAVE_INPUT};

ct_tensor *ct_neg(ct_tensor *x) { return unary(&NEG, x, NULL); }
ct_tensor *ct_exp(ct_tensor *x) { return unary(&EXP, x, NULL); }
ct_tensor *ct_log(ct_tensor *x) { return unary(&LOG, x, NULL); }

bool neg_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    (void)n;
    return (gi[0] = ct_neg(go[0])) != NULL;
}

bool exp_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_mul(go[0], ct_node_saved(n, 0))) != NULL;
}

bool log_backward(ct_node *n, ct_tensor **go, ct_tensor **gi) {
    return (gi[0] = ct_div(go[0], ct_node_saved(n, 0))) != NULL;
}
