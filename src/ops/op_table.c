#include "ops/op_table.h"

#define CT_OP(name, grad, family, autocast) bool name##_backward(ct_node *, ct_tensor **, ct_tensor **);
#define CT_OP_ND(name, family, autocast)
#include "ops/ops.def"
#undef CT_OP
#undef CT_OP_ND

const ct_op_info ct_ops[CT_NUM_OPS] = {
#define CT_OP(name, grad, family, autocast) [CT_OP_##name] = {#name, "ct_" #name, #grad, name##_backward},
#define CT_OP_ND(name, family, autocast) [CT_OP_##name] = {#name, "ct_" #name, NULL, NULL},
#include "ops/ops.def"
#undef CT_OP
#undef CT_OP_ND
};
