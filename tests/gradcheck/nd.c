/* Samples of the ops without gradients (comparisons, logical and classification ops,
 * arg-reductions, nonzero, one_hot) and of the factories.  They get the generic checks
 * of their rows but gradcheck: meta shapes, 1-vs-3 threads, non-contiguous inputs,
 * reduced precision.  Factories make their tensors on the sample input's device and
 * in its dtype, so that they follow it to meta and to each dtype run. */
#include "gc.h"

#define F(name, expr)                                                                              \
    static ct_tensor *name(ct_tensor *const *x, void *c) {                                         \
        (void)c;                                                                                   \
        return expr;                                                                               \
    }
#define SEEDED(name, expr)                                                                         \
    static ct_tensor *name(ct_tensor *const *x, void *g) {                                         \
        ct_generator_manual_seed(g, 99);                                                           \
        return expr;                                                                               \
    }

/* inputs that do not require grad: these ops have none */
static ct_tensor *plain(ct_tensor *t) {
    ct_set_requires_grad(t, false);
    return t;
}
/* the options making a tensor like x: its device and dtype */
#define LIKE(t) .device = ct_device_of(t), .dtype = ct_dtype_of(t)

F(f_eq, ct_eq(x[0], ct_transpose(x[0], 0, 1)))
F(f_ne, ct_ne(x[0], ct_transpose(x[0], 0, 1)))
F(f_lt, ct_lt(x[0], x[1]))
F(f_le, ct_le(x[0], ct_transpose(x[0], 0, 1)))
F(f_gt, ct_gt(x[0], x[1]))
F(f_ge, ct_ge(x[1], x[0]))
F(f_and, ct_logical_and(x[0], ct_gt_scalar(x[1], 0)))
F(f_or, ct_logical_or(ct_lt_scalar(x[0], -0.5), ct_gt_scalar(x[1], 0.5)))
F(f_xor, ct_logical_xor(ct_gt_scalar(x[0], 0), x[1]))
F(f_not, ct_logical_not(ct_gt_scalar(x[0], 0)))
F(f_not_float, ct_logical_not(ct_relu(x[0])))
F(f_isnan, ct_isnan(ct_log(x[0])))
F(f_isinf, ct_isinf(ct_div(x[0], ct_relu(x[1]))))
F(f_isfinite, ct_isfinite(ct_div(ct_log(x[0]), ct_relu(x[1]))))
F(f_all, ct_all(ct_gt_scalar(x[0], -0.8), .dims = CT_DIMS(1)))
F(f_all_flat, ct_all(x[0]))
F(f_any, ct_any(ct_gt_scalar(x[0], 0.8), .dims = CT_DIMS(0), .keepdim = true))
F(f_any_flat, ct_any(ct_gt_scalar(x[0], 0.99)))
F(f_argmax, ct_argmax(x[0], .dims = CT_DIMS(1)))
F(f_argmax_flat, ct_argmax(x[0]))
F(f_argmin, ct_argmin(x[0], .dims = CT_DIMS(0), .keepdim = true))
F(f_nonzero, ct_nonzero(ct_gt_scalar(x[0], 0)))
F(f_one_hot, ct_one_hot(ct_argmax(x[0], .dims = CT_DIMS(1)), 4))
F(f_arange, ct_add(x[0], ct_arange(4, LIKE(x[0]))))
F(f_arange_range, ct_mul(x[0], ct_arange_range(-1, 1, 0.5, LIKE(x[0]))))
F(f_linspace, ct_add(x[0], ct_linspace(-2, 3, 4, LIKE(x[0]))))
SEEDED(f_randint, ct_randint(-5, 5, CT_SHAPE(3, 4), .device = ct_device_of(x[0]), .generator = g))
SEEDED(f_randperm, ct_randperm(7, .device = ct_device_of(x[0]), .generator = g))
SEEDED(f_multinomial, ct_multinomial(x[0], 2, .generator = g))
SEEDED(f_multinomial_r, ct_multinomial(x[0], 5, .replacement = true, .generator = g))

/* integer and boolean inputs of ops whose other samples are floating */
F(f_cumsum_int, ct_cumsum(x[0], 0))
F(f_div_floor, ct_div_mode(x[0], ct_add_scalar(ct_abs(x[1]), 1), CT_ROUND_FLOOR))
F(f_clamp_int, ct_clamp(x[0], .min = CT_SOME(-2), .max = CT_SOME(3)))
F(f_where_bool, ct_where(x[0], x[1], ct_neg(x[1])))
F(f_masked_fill_bool, ct_masked_fill(x[1], x[0], 7))
F(f_index_select_int, ct_index_select(x[1], 0, x[0]))
F(f_sort_int, ct_sort(x[0], 1).indices)

static ct_tensor *ints(ct_tensor *t) { return ct_to(ct_mul_scalar(plain(t), 5), .dtype = CT_I64); }

TEST(samples_with_integer_and_boolean_inputs) {
    ct_tensor *i2[] = {ints(gc_rand(CT_SHAPE(4, 3))), ints(gc_rand(CT_SHAPE(3)))};
    SAMPLE("cumsum", f_cumsum_int, 1, i2, NULL);
    SAMPLE("div", f_div_floor, 2, i2, NULL);
    SAMPLE("clamp", f_clamp_int, 1, i2, NULL);
    SAMPLE("sort", f_sort_int, 1, i2, NULL);
    ct_tensor *bx[] = {ct_gt_scalar(gc_rand(CT_SHAPE(4, 4)), 0), plain(gc_rand(CT_SHAPE(4, 4)))};
    SAMPLE("where", f_where_bool, 2, bx, NULL);
    SAMPLE("masked_fill", f_masked_fill_bool, 2, bx, NULL);
    ct_tensor *ix[] = {ct_tensor_i64(((int64_t[]){3, 0, 0, 2}), CT_SHAPE(4)),
                       plain(gc_rand(CT_SHAPE(4, 4)))};
    SAMPLE("index_select", f_index_select_int, 2, ix, NULL);
}

TEST(samples_of_comparisons_and_logical_ops) {
    ct_tensor *sq[] = {plain(gc_rand(CT_SHAPE(4, 4)))};
    ct_tensor *nc[] = {plain(gc_noncontig(CT_SHAPE(3, 3)))};
    ct_tensor *ab[] = {plain(gc_rand(CT_SHAPE(3, 4))), plain(gc_rand(CT_SHAPE(4)))};
    ct_tensor *z[] = {plain(gc_rand(CT_SHAPE(0, 4))), plain(gc_rand(CT_SHAPE(1, 4)))};
    SAMPLE("eq", f_eq, 1, sq, NULL);
    SAMPLE("ne", f_ne, 1, nc, NULL);
    SAMPLE("le", f_le, 1, sq, NULL);
    ct_tensor *(*fs[])(ct_tensor *const *, void *) = {f_lt, f_gt, f_ge, f_and, f_or, f_xor};
    const char *names[] = {"lt", "gt", "ge", "logical_and", "logical_or", "logical_xor"};
    for (int i = 0; i < 6; i++) {
        SAMPLE(names[i], fs[i], 2, ab, NULL);
        SAMPLE(names[i], fs[i], 2, z, NULL);
    }
    SAMPLE("logical_not", f_not, 1, ab, NULL);
    SAMPLE("logical_not", f_not_float, 1, nc, NULL);
    SAMPLE("isnan", f_isnan, 1, ab, NULL);
    SAMPLE("isinf", f_isinf, 2, ab, NULL);
    SAMPLE("isfinite", f_isfinite, 2, ab, NULL);
    SAMPLE("isnan", f_isnan, 1, z, NULL);
}

TEST(samples_of_arg_and_boolean_reductions) {
    ct_tensor *a[] = {plain(gc_rand(CT_SHAPE(3, 5)))};
    ct_tensor *nc[] = {plain(gc_noncontig(CT_SHAPE(4, 3)))};
    ct_tensor *one[] = {plain(gc_rand(CT_SHAPE(1, 1)))};
    ct_tensor *z[] = {plain(gc_rand(CT_SHAPE(0, 3)))};
    ct_tensor **ins[] = {a, nc, one};
    for (int k = 0; k < 3; k++) {
        SAMPLE("all", f_all, 1, ins[k], NULL);
        SAMPLE("any", f_any, 1, ins[k], NULL);
        SAMPLE("argmax", f_argmax, 1, ins[k], NULL);
        SAMPLE("argmin", f_argmin, 1, ins[k], NULL);
    }
    SAMPLE("all", f_all_flat, 1, a, NULL);
    SAMPLE("all", f_all_flat, 1, z, NULL);
    SAMPLE("any", f_any_flat, 1, z, NULL);
    SAMPLE("argmax", f_argmax_flat, 1, nc, NULL);
    SAMPLE("all", f_all, 1, z, NULL);
    SAMPLE("nonzero", f_nonzero, 1, a, NULL);
    SAMPLE("nonzero", f_nonzero, 1, z, NULL);
    ct_tensor *c4[] = {plain(gc_rand(CT_SHAPE(5, 4)))};
    SAMPLE("one_hot", f_one_hot, 1, c4, NULL);
}

TEST(samples_of_factories) {
    ct_generator *g = ct_generator_new(0);
    ct_tensor *row[] = {plain(gc_rand(CT_SHAPE(3, 4)))};
    ct_tensor *v[] = {plain(gc_rand(CT_SHAPE(4)))};
    SAMPLE("arange", f_arange, 1, row, NULL);
    SAMPLE("arange", f_arange_range, 1, v, NULL);
    SAMPLE("linspace", f_linspace, 1, row, NULL);
    SAMPLE("randint", f_randint, 1, v, g);
    SAMPLE("randperm", f_randperm, 1, v, g);
    ct_tensor *p[] = {plain(gc_rand_range(CT_SHAPE(3, 6), 0.1, 1))};
    ct_tensor *p1[] = {plain(gc_rand_range(CT_SHAPE(6), 0.1, 1))};
    SAMPLE("multinomial", f_multinomial, 1, p, g);
    SAMPLE("multinomial", f_multinomial_r, 1, p1, g);
}
