/* Kernel dispatch: per (op, device type, dtype) the kernel the backends registered,
 * looked up with one typed function per kernel family:
 *
 *     ct_loop_fn k = ct_kernel_loop_for(CT_OP_add, t->storage->device, t->dtype);
 *     if (!k) return NULL; // "ct_add: not implemented for float16 on cpu"
 *
 * The slots are filled once, on the first lookup, from the backends' tables
 * (kernels/kernel.h); a table entry whose family is not its op's family (the last
 * column of ops.def) stops the program there with a message naming both. */
#ifndef CT_OPS_DISPATCH_H
#define CT_OPS_DISPATCH_H

#include "core/tensor_impl.h"
#include "kernels/kernel.h"

/* The kernel family of each op (the FAMILY column of ops.def). */
extern const ct_kernel_family ct_op_family[CT_NUM_OPS];
/* "LOOP", "REDUCE", ... ("NONE" for CT_FAMILY_NONE). */
const char *ct_kernel_family_name(ct_kernel_family f);

/* The entry of (op, device type of dev, dtype), asked for as family `family`; NULL
 * with "ct_<op>: not implemented for float16 on cpu" when the slot is empty (and an
 * internal error when the op's family is not `family`). */
const ct_kernel_entry *ct_kernel_entry_for(ct_kernel_family family, ct_op_id op,
                                           ct_device dev, ct_dtype dtype);

/* Whether a kernel of (op, device type of dev, dtype) is registered; sets no error. */
bool ct_kernel_registered(ct_op_id op, ct_device dev, ct_dtype dtype);

/* Checks one backend's table (ended by CT_KERNEL_END): every entry's op, dtype and
 * family must be valid and the family must be its op's.  False, with an error naming
 * the backend, op, dtype and both families, on the first bad entry. */
bool ct_kernel_table_check(const char *backend, const ct_kernel_entry *table);

/* CT_TYPED_LOOKUP(lookup, name, F, T): `T name(op, dev, dtype)`, the kernel of family F
 * that lookup(CT_FAMILY_F, op, dev, dtype) finds (a ct_kernel_entry *), as its type T;
 * NULL with lookup's error.  Expanded once per family for each lookup: here
 * ct_kernel_entry_for, and ct_compute_kernel in ops/internal.h. */
#define CT_TYPED_LOOKUP(lookup, name, F, T)                                              \
    static inline T name(ct_op_id op, ct_device dev, ct_dtype dtype) {                   \
        const ct_kernel_entry *e = lookup(CT_FAMILY_##F, op, dev, dtype);                \
        return e ? e->fn.F : NULL;                                                       \
    }

/* The typed lookups, one per family: ct_kernel_loop_for, ct_kernel_reduce_for, ...
 * Each returns the kernel of (op, dev, dtype), or NULL with the error set. */
#define CT_KERNEL_LOOKUP_(F, f, T) CT_TYPED_LOOKUP(ct_kernel_entry_for, ct_kernel_##f##_for, F, T)
CT_KERNEL_FAMILIES(CT_KERNEL_LOOKUP_)
#undef CT_KERNEL_LOOKUP_

#endif
