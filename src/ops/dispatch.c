/* The dispatch slots, filled from the registered backends' kernel tables at start-up. */
#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>

#include "core/backend.h"
#include "ops/op_table.h"

const ct_kernel_family ct_op_family[CT_NUM_OPS] = {
#define CT_OP(name, grad, family, autocast) [CT_OP_##name] = CT_FAMILY_##family,
#define CT_OP_ND(name, family, autocast) [CT_OP_##name] = CT_FAMILY_##family,
#include "ops/ops.def"
#undef CT_OP
#undef CT_OP_ND
};

static const char *const family_names[CT_NUM_FAMILIES] = {
    [CT_FAMILY_NONE] = "NONE",
#define CT_FAMILY_NAME_(F, f, T) [CT_FAMILY_##F] = #F,
    CT_KERNEL_FAMILIES(CT_FAMILY_NAME_)
#undef CT_FAMILY_NAME_
};

const char *ct_kernel_family_name(ct_kernel_family f) {
    return (unsigned)f < CT_NUM_FAMILIES ? family_names[f] : "(invalid)";
}

bool ct_kernel_table_check(const char *backend, const ct_kernel_entry *table) {
    for (const ct_kernel_entry *e = table; e->family != CT_FAMILY_NONE; e++) {
        long i = (long)(e - table);
        if ((unsigned)e->op >= CT_NUM_OPS || (unsigned)e->dtype >= CT_NUM_DTYPES ||
            (unsigned)e->family >= CT_NUM_FAMILIES) {
            ct_error("kernel table of backend %s: entry %ld has an invalid op, dtype or family",
                     backend, i);
            return false;
        }
        if (e->family != ct_op_family[e->op]) {
            ct_error("kernel table of backend %s: the %s kernel of ct_%s is registered as a %s "
                     "kernel, but ops.def gives ct_%s the family %s",
                     backend, ct_dtype_name(e->dtype), ct_ops[e->op].name,
                     ct_kernel_family_name(e->family), ct_ops[e->op].name,
                     ct_kernel_family_name(ct_op_family[e->op]));
            return false;
        }
        if (!e->fn.LOOP) { /* every member is a function pointer: any one tests NULL */
            ct_error("kernel table of backend %s: the %s kernel of ct_%s is NULL", backend,
                     ct_dtype_name(e->dtype), ct_ops[e->op].name);
            return false;
        }
    }
    return true;
}

static const ct_kernel_entry *slots[CT_NUM_OPS][CT_NUM_DEVICE_TYPES][CT_NUM_DTYPES];
static pthread_once_t slots_once = PTHREAD_ONCE_INIT;
static atomic_bool slots_ready; /* a load on every lookup, cheaper than pthread_once */

static void fill_from(const ct_backend *b) {
    for (int f = 0; b->kernel_tables[f]; f++) {
        const ct_kernel_entry *table = b->kernel_tables[f];
        if (!ct_kernel_table_check(b->name, table)) ct_fatal("%s", ct_last_error());
        for (const ct_kernel_entry *e = table; e->family != CT_FAMILY_NONE; e++) {
            if (slots[e->op][b->type][e->dtype])
                ct_fatal("kernel table of backend %s: two %s kernels for ct_%s", b->name,
                         ct_dtype_name(e->dtype), ct_ops[e->op].name);
            slots[e->op][b->type][e->dtype] = e;
        }
    }
}

/* A backend with one kernel per family takes every slot of the backend of slots_of
 * (filled from tables first), each with its op's family's kernel: one entry per slot. */
static void fill_like(const ct_backend *b) {
    const ct_backend *like = ct_backend_for_type(b->slots_of);
    if (!like || !like->kernel_tables)
        ct_fatal("backend %s: takes the kernel slots of a device type without kernel tables",
                 b->name);
    /* Static, so that filling the slots at start-up cannot run out of memory; only the
     * pages of the entries made are ever touched. */
    static ct_kernel_entry borrowed[CT_NUM_DEVICE_TYPES][CT_NUM_OPS * CT_NUM_DTYPES];
    ct_kernel_entry *entries = borrowed[b->type];
    int k = 0;
    for (int op = 0; op < CT_NUM_OPS; op++)
        for (int d = 0; d < CT_NUM_DTYPES; d++) {
            if (!slots[op][like->type][d]) continue;
            ct_kernel_family f = ct_op_family[op];
            entries[k] = (ct_kernel_entry){(ct_op_id)op, (ct_dtype)d, f, b->family_kernels[f]};
            if (!entries[k].fn.LOOP)
                ct_fatal("backend %s: no %s kernel, needed by ct_%s", b->name,
                         ct_kernel_family_name(f), ct_ops[op].name);
            slots[op][b->type][d] = &entries[k++];
        }
}

static void fill_slots(void) {
    for (int t = 0; t < CT_NUM_DEVICE_TYPES; t++) {
        const ct_backend *b = ct_backend_for_type((ct_device_type)t);
        if (b && b->kernel_tables) fill_from(b);
    }
    for (int t = 0; t < CT_NUM_DEVICE_TYPES; t++) {
        const ct_backend *b = ct_backend_for_type((ct_device_type)t);
        if (b && !b->kernel_tables) fill_like(b);
    }
    atomic_store_explicit(&slots_ready, true, memory_order_release);
}

/* At load time, so that a bad table stops the program at start-up. */
__attribute__((constructor)) static void fill_at_start_up(void) {
    pthread_once(&slots_once, fill_slots);
}

bool ct_kernel_registered(ct_op_id op, ct_device dev, ct_dtype dtype) {
    if (!atomic_load_explicit(&slots_ready, memory_order_acquire))
        pthread_once(&slots_once, fill_slots);
    return (unsigned)dev.type < CT_NUM_DEVICE_TYPES && (unsigned)dtype < CT_NUM_DTYPES &&
           slots[op][dev.type][dtype] != NULL;
}

const ct_kernel_entry *ct_kernel_entry_for(ct_kernel_family family, ct_op_id op,
                                           ct_device dev, ct_dtype dtype) {
    if (!atomic_load_explicit(&slots_ready, memory_order_acquire))
        pthread_once(&slots_once, fill_slots);
    const ct_kernel_entry *e = slots[op][dev.type][dtype];
    if (e && e->family == family) return e; /* registered entries have their op's family */
    if (ct_op_family[op] != family) {
        ct_error("ct_%s: internal error: a %s kernel was looked up, but the op's family is %s",
                 ct_ops[op].name, ct_kernel_family_name(family),
                 ct_kernel_family_name(ct_op_family[op]));
        return NULL;
    }
    char buf[16];
    ct_error("ct_%s: not implemented for %s on %s", ct_ops[op].name, ct_dtype_name(dtype),
             ct_device_str(dev, buf));
    return NULL;
}
