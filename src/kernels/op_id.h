/* The op enum (CT_OP_add, ...), generated from ops/ops.def: the key of the kernel
 * tables, shared by the op layer and the backends. */
#ifndef CT_KERNELS_OP_ID_H
#define CT_KERNELS_OP_ID_H

typedef enum {
#define CT_OP(name, grad, family, autocast) CT_OP_##name,
#define CT_OP_ND(name, family, autocast) CT_OP_##name,
#include "ops/ops.def"
#undef CT_OP
#undef CT_OP_ND
    CT_NUM_OPS
} ct_op_id;

#endif
