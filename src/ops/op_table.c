#include <pthread.h>

#include "ops/op_table.h"

#define CT_OP(name, grad) bool name##_backward(ct_node *, ct_tensor **, ct_tensor **);
#define CT_OP_ND(name)
#include "ops/ops.def"
#undef CT_OP
#undef CT_OP_ND

const ct_op_info ct_ops[CT_NUM_OPS] = {
#define CT_OP(name, grad) [CT_OP_##name] = {#name, "ct_" #name, #grad, name##_backward},
#define CT_OP_ND(name) [CT_OP_##name] = {#name, "ct_" #name, NULL, NULL},
#include "ops/ops.def"
#undef CT_OP
#undef CT_OP_ND
};

/* Backends list their kernels in tables; the cpu's is ct_cpu_kernels. */
extern const ct_kernel_entry *const ct_cpu_kernel_tables[];

static ct_kernel slots[CT_NUM_OPS][CT_NUM_DEVICE_TYPES][CT_NUM_DTYPES];
static pthread_once_t slots_once = PTHREAD_ONCE_INIT;

static void fill_slots(void) {
    for (int f = 0; ct_cpu_kernel_tables[f]; f++)
        for (const ct_kernel_entry *e = ct_cpu_kernel_tables[f]; e->fn; e++)
            slots[e->op][CT_DEV_CPU][e->dtype] = e->fn;
}

ct_kernel ct_kernel_for(ct_op_id op, ct_device dev, ct_dtype dtype) {
    pthread_once(&slots_once, fill_slots);
    ct_kernel k = slots[op][dev.type][dtype];
    if (!k) {
        char buf[16];
        ct_error("ct_%s: not implemented for %s on %s", ct_ops[op].name, ct_dtype_name(dtype),
                 ct_device_str(dev, buf));
    }
    return k;
}
