/* Kinds of the reduce_mask op (ctx i of its kernels). */
#ifndef CT_KERNELS_REDUCE_MASK_H
#define CT_KERNELS_REDUCE_MASK_H

typedef enum {
    CT_MASK_EQ,     /* a == b */
    CT_MASK_ABS_EQ, /* |a| == b */
    CT_MASK_SIGN,   /* sign(a) */
} ct_mask_kind;

#endif
