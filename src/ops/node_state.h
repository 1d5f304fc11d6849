/* What a forward computes for its backward beyond its schema attributes (those are in
 * node->attrs, ops/attrs.h): one named struct per op or family, in a union held by
 * every graph node (ct_node.state), written by the forward and read by the backward:
 *
 *     n->state.reduce = (ct_reduce_state){.mask = p->mask, .keepdim = keepdim};
 *     bool keepdim = n->state.reduce.keepdim;
 *
 * The union stays within CT_NODE_STATE_MAX bytes, so that attributes and state together
 * take no more room in a node than CT_NODE_ATTRS_MAX + CT_NODE_STATE_MAX. */
#ifndef CT_OPS_NODE_STATE_H
#define CT_OPS_NODE_STATE_H

#include <stdbool.h>
#include <stdint.h>

#define CT_NODE_STATE_MAX 48

/* Reductions over a dim mask (ops/reduce_plan.h) and the statistics built on them. */
typedef struct {
    uint64_t mask;  /* the reduced dims of the input, bit d for dim d */
    bool keepdim;
    int dim;        /* max.dim, min.dim: the dim, wrapped */
    int kind;       /* norm: its ct_norm_kind */
    double scale;   /* mean: the count averaged over; var, std: the denominator */
} ct_reduce_state;

/* clamp.Tensor: which of the optional bounds were given (saved slots 1 and 2). */
typedef struct { bool has_min, has_max; } ct_clamp_tensor_state;

/* cumsum, cumprod (and the reversed, exclusive scans of their backward). */
typedef struct { int dim; bool reverse, exclusive; } ct_scan_state;

/* slice (and select: start is the index, step 1), resolved against the input. */
typedef struct { int dim; int64_t start, step; } ct_slice_state;

/* split, split_with_sizes, unbind: the dim (wrapped) and for split the pieces' size,
 * for split_with_sizes the dim's size (the last piece ends there). */
typedef struct { int dim; int64_t size; } ct_split_state;

/* index, index_put: the indexed dims of the input (bit d) and where the broadcast
 * index dims go in the result (ops/index_util.h's ct_adv_geom). */
typedef struct { uint32_t dims; int pos; } ct_adv_index_state;

/* upsample_nearest2d, upsample_bilinear2d and their backward ops (whose schema
 * attributes are too big for node->attrs): the scale factors given (0: none). */
typedef struct { double scale_factors[2]; bool align_corners; } ct_upsample_state;

/* The losses and their fused backward ops (ops/loss_impl.h). */
typedef struct {
    int reduction;        /* ct_reduction */
    bool has_weight;      /* weight saved (slot CT_PW_LOSS_WEIGHT; nll: 1) */
    bool has_pos_weight;  /* binary_cross_entropy_with_logits(_backward): pos_weight saved */
    int64_t ignore_index; /* nll_loss */
    double numel;         /* what a mean reduction divides by (nll: the total weight) */
    double p;             /* smooth_l1's beta, huber's delta */
} ct_loss_state;

/* batch_norm, layer_norm, group_norm: the kernels' job (kernels/norm.h). */
typedef struct {
    int64_t N, C, S, G;
    double eps;
    bool training;
    bool has_weight; /* weight saved */
    int norm_dims;   /* layer_norm: the number of normalized (last) dims */
} ct_norm_state;

typedef union {
    int pad_mode;            /* the pads: their ct_pad_mode */
    int64_t dim;             /* ops along one dim (softmax, sort, gather, cat, ...): it, wrapped */
    ct_reduce_state reduce;
    ct_scan_state scan;
    ct_slice_state slice;
    ct_split_state split;
    ct_adv_index_state adv_index;
    ct_upsample_state upsample;
    ct_loss_state loss;
    ct_norm_state norm;
    ct_clamp_tensor_state clamp_tensor;
} ct_node_state;

_Static_assert(sizeof(ct_node_state) <= CT_NODE_STATE_MAX, "ct_node_state grew");

#endif
