/* The OPLARGE rows of tests/opinfo.def: samples big enough to split across threads give
 * the same bits with 1, 2 and 3 threads, in float32 and each reduced dtype of their
 * op's row; and
 * every op of a family that splits work has one (or NO_LARGE with a reason). */
#include "gc.h"
#include "ops/op_table.h"

#define N_LARGE 70007

/* int64 indices in [0, n), made from t */
static ct_tensor *ix(ct_tensor *t, int64_t n) {
    return ct_to(ct_mul_scalar(ct_sigmoid(t), (double)n - 0.5), .dtype = CT_I64);
}

typedef ct_tensor *(*large_fn)(ct_tensor *x, ct_tensor *y, ct_tensor *X, ct_tensor *Y);
#define OPLARGE(op, expr)                                                                          \
    static ct_tensor *CT_CAT(large_, __LINE__)(ct_tensor * x, ct_tensor * y, ct_tensor * X,        \
                                               ct_tensor * Y) {                                    \
        (void)x, (void)y, (void)X, (void)Y;                                                        \
        return expr;                                                                               \
    }
#include "../opinfo.def"
#undef OPLARGE

static const struct {
    const char *op, *expr;
    large_fn f;
} LARGE[] = {
#define OPLARGE(op, expr) {#op, #expr, CT_CAT(large_, __LINE__)},
#include "../opinfo.def"
#undef OPLARGE
};
#define N_ROWS (sizeof LARGE / sizeof LARGE[0])

static ct_tensor *as_matrix(ct_tensor *t) {
    return ct_view(ct_slice(t, 0, 0, N_LARGE - 7, 1), CT_SHAPE(7, (N_LARGE - 7) / 7));
}

TEST(large_samples_do_not_depend_on_threads) {
    static const ct_dtype DTS[] = {CT_F32, CT_BF16, CT_F16};
    ct_tensor *x32 = ct_empty(CT_SHAPE(N_LARGE)), *y32 = ct_empty(CT_SHAPE(N_LARGE));
    float *p = ct_data_ptr(x32), *q = ct_data_ptr(y32);
    for (int64_t i = 0; i < N_LARGE; i++) {
        p[i] = (float)((i * 7919) % 20001 - 10000) * 1e-3f;
        q[i] = (float)((i * 104729) % 19997 - 9998) * 7e-4f;
    }
    int saved = ct_get_num_threads();
    for (size_t k = 0; k < N_ROWS; k++) {
        const oi_row *r = oi_row_of(LARGE[k].op);
        if (!r) {
            ct_test_fail(__FILE__, __LINE__, "OPLARGE %s: %s has no row", LARGE[k].expr,
                         LARGE[k].op);
            continue;
        }
        for (size_t d = 0; d < sizeof DTS / sizeof DTS[0]; d++) {
            if (!oi_has_dtype(r, DTS[d]) && DTS[d] != CT_F32) continue;
            CT_SCOPE {
                ct_tensor *x = ct_to(x32, .dtype = DTS[d]), *y = ct_to(y32, .dtype = DTS[d]);
                ct_tensor *X = as_matrix(x), *Y = as_matrix(y);
                ct_set_num_threads(1);
                ct_tensor *one = LARGE[k].f(x, y, X, Y);
                if (!one) {
                    ct_test_fail(__FILE__, __LINE__, "%s (%s): %s", LARGE[k].expr,
                                 ct_dtype_name(DTS[d]), ct_last_error());
                    break;
                }
                for (int t = 2; t <= 3; t++) {
                    ct_set_num_threads(t);
                    char what[200];
                    snprintf(what, sizeof what, "%s (%s) with %d threads against 1", LARGE[k].expr,
                             ct_dtype_name(DTS[d]), t);
                    ct_test_check_close(__FILE__, __LINE__, what, LARGE[k].f(x, y, X, Y), one,
                                        (ct_test_tol){0});
                }
            }
        }
    }
    ct_set_num_threads(saved);
}

static bool splits_work(ct_kernel_family f) {
    return f == CT_FAMILY_LOOP || f == CT_FAMILY_REDUCE || f == CT_FAMILY_ARGREDUCE ||
           f == CT_FAMILY_SCAN || f == CT_FAMILY_SOFTMAX;
}

TEST(every_op_that_splits_work_has_a_large_sample) {
    for (int op = 0; op < CT_NUM_OPS; op++) {
        const oi_row *r = oi_row_of(ct_ops[op].name);
        if (!r) continue; /* coverage.c names it */
        bool has = false;
        for (size_t k = 0; k < N_ROWS; k++) has |= !strcmp(LARGE[k].op, ct_ops[op].name);
        bool wanted = splits_work(ct_op_family[op]) && !(r->flags & OI_NO_LARGE);
        if (wanted && !has)
            ct_test_fail(__FILE__, __LINE__,
                         "%s splits its work across threads (family %s) but has no large sample: "
                         "add OPLARGE(%s, <expression of x, y, X, Y>) to tests/opinfo.def, or "
                         "NO_LARGE with a reason to its row (line %d)",
                         ct_ops[op].fn, ct_kernel_family_name(ct_op_family[op]), ct_ops[op].name,
                         r->line);
        if (has && (r->flags & OI_NO_LARGE))
            ct_test_fail(__FILE__, __LINE__, "%s has a large sample: drop NO_LARGE (line %d)",
                         ct_ops[op].name, r->line);
    }
}
