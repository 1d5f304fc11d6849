/* Gradcheck cases of the views, joins and shaping ops (all linear: gradgradcheck too). */
#include "gc.h"

#define F1(name, expr)                                                        \
    static ct_tensor *name(ct_tensor *const *x, void *c) {                    \
        (void)c;                                                              \
        return expr;                                                          \
    }
F1(f_narrow, ct_narrow(x[0], -1, 1, 2))
F1(f_slice, ct_slice(x[0], 1, -3, CT_END, 2))
F1(f_slice_empty, ct_slice(x[0], 0, 5, 2, 1))
F1(f_select, ct_select(x[0], -2, -1))
F1(f_squeeze, ct_squeeze(x[0]))
F1(f_squeeze_dim, ct_squeeze_dim(x[0], -1))
F1(f_unsqueeze, ct_unsqueeze(x[0], -1))
F1(f_unsqueeze0, ct_unsqueeze(x[0], 0))
F1(f_flatten, ct_flatten(x[0], 0, -1))
F1(f_flatten_mid, ct_flatten(x[0], 1, 2))
F1(f_unflatten, ct_unflatten(x[0], 1, CT_SHAPE(-1, 1)))
F1(f_as_strided, ct_as_strided(x[0], CT_SHAPE(2, 2), CT_SHAPE(1, 2), -1))
F1(f_as_strided_overlap, ct_as_strided(x[0], CT_SHAPE(3, 3), CT_SHAPE(1, 1), 1))
F1(f_as_strided_offset, ct_as_strided(ct_narrow(x[0], 0, 2, 3), CT_SHAPE(2, 2), CT_SHAPE(1, 1), -1))
F1(f_cat, ct_cat(CT_TENSORS(x[0], x[1], x[2]), 1))
F1(f_cat0, ct_cat(CT_TENSORS(x[0], x[1]), -2))
F1(f_stack, ct_stack(CT_TENSORS(x[0], x[1]), -1))
F1(f_stack0, ct_stack(CT_TENSORS(x[0], x[1], x[0]), 0))
F1(f_repeat, ct_repeat(x[0], CT_SHAPE(2, 1, 3, 2)))
F1(f_tile, ct_tile(x[0], CT_SHAPE(2)))
F1(f_flip, ct_flip(x[0], CT_DIMS(0, -1)))
F1(f_roll, ct_roll(x[0], CT_DIMS(1, -4), CT_DIMS(0, 1)))
F1(f_roll_flat, ct_roll(x[0], CT_DIMS(4), CT_DIMS()))
F1(f_tril, ct_tril(x[0], -1))
F1(f_triu, ct_triu(x[0], 1))
F1(f_pad_const, ct_pad(x[0], CT_DIMS(1, -1, 2, 0), .value = 3))
F1(f_pad_reflect1, ct_pad(x[0], CT_DIMS(2, 1), .mode = CT_PAD_REFLECT))
F1(f_pad_reflect2, ct_pad(x[0], CT_DIMS(1, 2, 2, 1), .mode = CT_PAD_REFLECT))
F1(f_pad_reflect_neg, ct_pad(x[0], CT_DIMS(-1, 2), .mode = CT_PAD_REFLECT))
F1(f_pad_replicate3, ct_pad(x[0], CT_DIMS(1, 2, 0, 1, 2, 1), .mode = CT_PAD_REPLICATE))
F1(f_pad_replicate1, ct_pad(x[0], CT_DIMS(3, 1), .mode = CT_PAD_REPLICATE))

/* A multi-output op gradchecked through one sum of all its pieces, weighted so that
 * each piece's gradient differs (piece i scaled by i + 1); piece `skip` unused. */
typedef struct { int which; int skip; } split_ctx;
static ct_tensor *f_split(ct_tensor *const *x, void *c) {
    const split_ctx *s = c;
    ct_tensor *parts[8];
    int n = -1;
    switch (s->which) {
    case 0: n = ct_split(x[0], 2, 1, parts, 8); break;
    case 1: n = ct_split_with_sizes(x[0], 3, (int64_t[]){1, 0, 4}, -1, parts, 8); break;
    case 2: n = ct_chunk(x[0], 2, 0, parts, 8); break;
    default: n = ct_unbind(x[0], 1, parts, 8); break;
    }
    if (n < 0) return NULL;
    ct_tensor *acc = NULL;
    for (int i = 0; i < n; i++) {
        if (i == s->skip) continue;
        ct_tensor *term = ct_sum(ct_mul_scalar(ct_mul(parts[i], parts[i]), i + 1), .dims = CT_DIMS(0));
        term = ct_reshape(term, CT_SHAPE(-1));
        acc = acc ? ct_cat(CT_TENSORS(acc, term), 0) : term;
    }
    return acc;
}

TEST(grad_narrow_slice_select) {
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(3, 4))};
    GRADGRADCHECK("slice", f_narrow, 1, x, NULL);
    GRADGRADCHECK("slice", f_slice, 1, x, NULL);
    GRADGRADCHECK("select", f_select, 1, x, NULL);
    ct_tensor *z[] = {gc_rand(CT_SHAPE(3, 0))};
    GRADCHECK("slice", f_slice, 1, z, NULL);
    GRADCHECK("slice", f_slice_empty, 1, z, NULL);
    GRADCHECK("select", f_select, 1, (ct_tensor *[]){gc_rand(CT_SHAPE(1, 1))}, NULL);
    /* the backward of these views is strided_scatter; gradgradcheck ran it forward */
    gc_cover("strided_scatter");
}

TEST(grad_squeeze_unsqueeze_flatten) {
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(2, 1, 3, 1))};
    GRADGRADCHECK("squeeze", f_squeeze, 1, x, NULL);
    GRADGRADCHECK("squeeze_dim", f_squeeze_dim, 1, x, NULL);
    GRADGRADCHECK("unsqueeze", f_unsqueeze, 1, x, NULL);
    GRADGRADCHECK("view", f_flatten, 1, x, NULL);
    GRADGRADCHECK("view", f_flatten_mid, 1, x, NULL);
    GRADGRADCHECK("view", f_unflatten, 1, (ct_tensor *[]){gc_noncontig(CT_SHAPE(2, 3))}, NULL);
    ct_tensor *s[] = {gc_rand(CT_SHAPE())};
    GRADCHECK("unsqueeze", f_unsqueeze0, 1, s, NULL);
    GRADCHECK("squeeze", f_squeeze, 1, (ct_tensor *[]){gc_rand(CT_SHAPE(0, 1))}, NULL);
}

TEST(grad_as_strided) {
    GRADGRADCHECK("as_strided", f_as_strided, 1, (ct_tensor *[]){gc_rand(CT_SHAPE(2, 3))}, NULL);
    GRADGRADCHECK("as_strided", f_as_strided, 1, (ct_tensor *[]){gc_noncontig(CT_SHAPE(6))}, NULL);
    /* a view with a storage offset as input: offsets are absolute, as in PyTorch */
    GRADGRADCHECK("as_strided", f_as_strided_offset, 1, (ct_tensor *[]){gc_rand(CT_SHAPE(6))}, NULL);
    /* overlapping output: gradients of shared elements add up */
    GRADGRADCHECK("as_strided", f_as_strided_overlap, 1, (ct_tensor *[]){gc_rand(CT_SHAPE(6))}, NULL);
}

TEST(grad_cat_stack) {
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(2, 3)), gc_rand(CT_SHAPE(2, 1)), gc_rand(CT_SHAPE(2, 0))};
    GRADGRADCHECK("cat", f_cat, 3, x, NULL);
    ct_tensor *legacy[] = {gc_rand(CT_SHAPE(2, 3)), gc_rand(CT_SHAPE(0)), gc_rand(CT_SHAPE(1, 3))};
    GRADCHECK("cat", f_cat0, 2, ((ct_tensor *[]){legacy[0], legacy[2]}), NULL);
    GRADCHECK("cat", f_cat0, 2, ((ct_tensor *[]){legacy[1], legacy[0]}), NULL);
    ct_tensor *y[] = {gc_noncontig(CT_SHAPE(2, 3)), gc_rand(CT_SHAPE(2, 3))};
    GRADGRADCHECK("stack", f_stack, 2, y, NULL);
    GRADGRADCHECK("stack", f_stack0, 2, y, NULL);
    GRADCHECK("stack", f_stack, 2, ((ct_tensor *[]){gc_rand(CT_SHAPE()), gc_rand(CT_SHAPE())}), NULL);
}

TEST(grad_split_family) {
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(3, 5))};
    const char *ops[] = {"split", "split_with_sizes", "split", "unbind"};
    for (int w = 0; w < 4; w++) {
        split_ctx all = {w, -1}, some = {w, 1};
        GRADGRADCHECK(ops[w], f_split, 1, x, &all);
        GRADGRADCHECK(ops[w], f_split, 1, x, &some); /* a piece without gradient */
    }
}

TEST(grad_repeat_flip_roll) {
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(2, 1, 3))};
    GRADGRADCHECK("repeat", f_repeat, 1, x, NULL);
    GRADGRADCHECK("repeat", f_tile, 1, x, NULL);
    GRADGRADCHECK("flip", f_flip, 1, x, NULL);
    GRADGRADCHECK("roll", f_roll, 1, x, NULL);
    GRADGRADCHECK("roll", f_roll_flat, 1, x, NULL);
    ct_tensor *z[] = {gc_rand(CT_SHAPE(0, 3))};
    GRADCHECK("repeat", f_repeat, 1, z, NULL);
    GRADCHECK("flip", f_flip, 1, z, NULL);
    GRADCHECK("roll", f_roll, 1, z, NULL);
}

TEST(grad_tril_triu) {
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(2, 3, 4))};
    GRADGRADCHECK("tril", f_tril, 1, x, NULL);
    GRADGRADCHECK("triu", f_triu, 1, x, NULL);
    GRADCHECK("tril", f_tril, 1, (ct_tensor *[]){gc_rand(CT_SHAPE(1, 0))}, NULL);
}

TEST(grad_pad) {
    ct_tensor *x[] = {gc_noncontig(CT_SHAPE(2, 3, 4))};
    GRADGRADCHECK("constant_pad_nd", f_pad_const, 1, x, NULL);
    GRADGRADCHECK("reflection_pad", f_pad_reflect1, 1, x, NULL);
    GRADGRADCHECK("reflection_pad", f_pad_reflect2, 1, x, NULL);
    GRADGRADCHECK("reflection_pad", f_pad_reflect_neg, 1, x, NULL);
    GRADGRADCHECK("replication_pad", f_pad_replicate1, 1, x, NULL);
    ct_tensor *v[] = {gc_rand(CT_SHAPE(1, 2, 2, 3))};
    GRADGRADCHECK("replication_pad", f_pad_replicate3, 1, v, NULL);
    /* pad_backward is the op gradgradcheck differentiates above */
    gc_cover("pad_backward");
    GRADCHECK("constant_pad_nd", f_pad_const, 1, (ct_tensor *[]){gc_rand(CT_SHAPE(0, 2))}, NULL);
}
