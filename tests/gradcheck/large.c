/* The OPLARGE rows of tests/opinfo.def: samples big enough to split across threads give
 * the same bits with 1 and 3 threads, in float32 and in each reduced dtype their op has
 * a cpu kernel of, forward and backward (the gradients of x and y for a fixed upstream
 * gradient); and every op of a family whose cpu kernels split work runs, forward or
 * backward, on a large tensor in one of them (or has NO_LARGE with a reason). */

#include "gc.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"

#define N_LARGE 70007
#define SPLIT_NUMEL 32768 /* below this, kernels run on one thread (CT_GRAIN) */

/* int64 indices in [0, n), made from t */
static ct_tensor *ix(ct_tensor *t, int64_t n) {
    t = ct_to(ct_detach(t), .dtype = CT_F32);
    return ct_to(ct_mul_scalar(ct_sigmoid(t), (double)n - 0.5), .dtype = CT_I64);
}

/* the first r * c elements of t as an [r, c] matrix, or as planes [1, 7, 100, 100] */
static ct_tensor *mat(ct_tensor *t, int64_t r, int64_t c) {
    return ct_view(ct_slice(t, 0, 0, r * c, 1), CT_SHAPE(r, c));
}
static ct_tensor *planes(ct_tensor *t) {
    return ct_view(ct_slice(t, 0, 0, 70000, 1), CT_SHAPE(1, 7, 100, 100));
}
/* the fused cells' states, joined */
static ct_tensor *lstm_states(ct_lstm_cell_result r) {
    return r.hy ? ct_cat(2, ((ct_tensor *[]){r.hy, r.cy}), 1) : NULL;
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

/* The ops that ran on a large tensor (forward or backward) in some large sample. */
static bool ran_large[CT_NUM_OPS];

static void note_large_op(const ct_op_call *call, void *ctx) {
    (void)ctx;
    bool large = false;
    for (int i = 0; i < call->n_inputs; i++)
        large |= call->inputs[i] && ct_numel(call->inputs[i]) >= SPLIT_NUMEL;
    for (int i = 0; i < call->n_outputs; i++)
        large |= call->outputs[i] && ct_numel(call->outputs[i]) >= SPLIT_NUMEL;
    if (large) ran_large[call->schema->op] = true;
}

static ct_tensor *as_matrix(ct_tensor *t) {
    return ct_view(ct_slice(t, 0, 0, N_LARGE - 7, 1), CT_SHAPE(7, (N_LARGE - 7) / 7));
}

/* A fixed upstream gradient of out's shape and dtype. */
static ct_tensor *upstream_like(ct_tensor *out) {
    ct_tensor *g = ct_empty(ct_shape_of(out));
    float *p = ct_data_ptr(g);
    for (int64_t i = 0; i < ct_numel(g); i++) p[i] = (float)((i * 31337) % 2001 - 1000) * 1e-3f;
    return ct_to(g, .dtype = ct_dtype_of(out));
}

typedef struct {
    ct_tensor *out, *gx, *gy; /* the gradients: NULL when out needs none */
} large_result;

/* Row k's sample on x, y with n threads (the random generator reseeded), and its
 * backward for upstream gradient g (made from the first result when g is NULL). */
static large_result run_with(size_t k, ct_tensor *x, ct_tensor *y, int n, ct_tensor **g) {
    ct_set_num_threads(n);
    ct_manual_seed(1234);
    ct_set_grad(x, NULL);
    ct_set_grad(y, NULL);
    large_result r = {LARGE[k].f(x, y, as_matrix(x), as_matrix(y)), NULL, NULL};
    if (!r.out || !ct_requires_grad(r.out)) return r;
    if (!*g) *g = upstream_like(r.out);
    if (ct_backward(r.out, .gradient = *g) != 0) {
        ct_test_fail(__FILE__, __LINE__, "%s: backward: %s", LARGE[k].expr, ct_last_error());
        return r;
    }
    r.gx = ct_grad(x) ? ct_detach(ct_grad(x)) : ct_zeros_like(x);
    r.gy = ct_grad(y) ? ct_detach(ct_grad(y)) : ct_zeros_like(y);
    return r;
}

/* Whether op has a kernel of its own for dt on the cpu: without one it computes in
 * float32, whose bits the float32 run already checked. */
static bool native_kernel(const char *op, ct_dtype dt) {
    for (int i = 0; i < CT_NUM_OPS; i++)
        if (!strcmp(ct_ops[i].name, op)) return ct_kernel_registered((ct_op_id)i, CT_CPU, dt);
    return false;
}

static void same_bits(const char *expr, ct_dtype dt, const char *part, ct_tensor *got,
                      ct_tensor *want) {
    char what[240];
    snprintf(what, sizeof what, "%s (%s): %s with 3 threads against 1", expr, ct_dtype_name(dt),
             part);
    ct_test_check_close(__FILE__, __LINE__, what, got, want, (ct_test_tol){0});
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
    ct_trace_push(note_large_op, NULL);
    for (size_t k = 0; k < N_ROWS; k++) {
        const oi_row *r = oi_row_of(LARGE[k].op);
        if (!r) {
            ct_test_fail(__FILE__, __LINE__, "OPLARGE %s: %s has no row", LARGE[k].expr,
                         LARGE[k].op);
            continue;
        }
        for (size_t d = 0; d < sizeof DTS / sizeof DTS[0]; d++) {
            ct_dtype dt = DTS[d];
            if (dt != CT_F32 && !native_kernel(LARGE[k].op, dt)) continue;
            CT_SCOPE {
                /* gradients in float32 and bfloat16; float16's kernels are bfloat16's
                 * with another conversion, and twice as slow here: forward only */
                bool grad = (r->flags & OI_GRAD) != 0;
                ct_tensor *x = ct_to(x32, .dtype = dt), *y = ct_to(y32, .dtype = dt), *g = NULL;
                ct_set_requires_grad(x, grad);
                ct_set_requires_grad(y, grad);
                large_result one = run_with(k, x, y, 1, &g);
                if (!one.out) {
                    ct_test_fail(__FILE__, __LINE__, "%s (%s): %s", LARGE[k].expr,
                                 ct_dtype_name(dt), ct_last_error());
                    break;
                }
                large_result three = run_with(k, x, y, 3, &g);
                same_bits(LARGE[k].expr, dt, "result", three.out, one.out);
                if (one.gx) {
                    same_bits(LARGE[k].expr, dt, "gradient of x", three.gx, one.gx);
                    same_bits(LARGE[k].expr, dt, "gradient of y", three.gy, one.gy);
                }
            }
        }
    }
    ct_trace_pop();
    ct_set_num_threads(saved);
}

/* The families whose cpu kernels split their work across threads (src/cpu: the ones
 * that ask ct_get_num_threads). */
static bool splits_work(ct_kernel_family f) {
    switch (f) {
    case CT_FAMILY_LOOP: case CT_FAMILY_REDUCE: case CT_FAMILY_ARGREDUCE: case CT_FAMILY_SCAN:
    case CT_FAMILY_CUMPROD_GRAD: case CT_FAMILY_SOFTMAX: case CT_FAMILY_GEMM: case CT_FAMILY_CONV:
    case CT_FAMILY_POOL: case CT_FAMILY_NORM: case CT_FAMILY_RNN_CELL: case CT_FAMILY_RANDOM:
    case CT_FAMILY_MULTINOMIAL: case CT_FAMILY_RANGE: case CT_FAMILY_COPY: case CT_FAMILY_BAND:
    case CT_FAMILY_ROWS: case CT_FAMILY_INDEX_PUT: case CT_FAMILY_SORT: case CT_FAMILY_NLL:
    case CT_FAMILY_NLL_BACKWARD: case CT_FAMILY_OPTIM:
        return true;
    default:
        return false;
    }
}

/* Runs after the samples (tests run in file order). */
TEST(every_op_that_splits_work_ran_large) {
    for (int op = 0; op < CT_NUM_OPS; op++) {
        const oi_row *r = oi_row_of(ct_ops[op].name);
        if (!r) continue; /* coverage.c names it */
        bool wanted = splits_work(ct_op_family[op]) && !(r->flags & OI_NO_LARGE);
        if (wanted && !ran_large[op])
            ct_test_fail(__FILE__, __LINE__,
                         "%s splits its work across threads (family %s) but ran on no large "
                         "tensor: add OPLARGE(%s, <expression of x, y, X, Y>) to tests/opinfo.def "
                         "(its backward counts), or NO_LARGE with a reason to its row (line %d)",
                         ct_ops[op].fn, ct_kernel_family_name(ct_op_family[op]), ct_ops[op].name,
                         r->line);
        if (ran_large[op] && (r->flags & OI_NO_LARGE))
            ct_test_fail(__FILE__, __LINE__, "%s runs in a large sample: drop NO_LARGE (line %d)",
                         ct_ops[op].name, r->line);
    }
}
