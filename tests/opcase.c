/* The OPCASE rows of tests/opinfo.def, run against their fixtures (opcase.h). */
#include <string.h>

#include "ct_test.h"
#include "fixtures.h"
#include "opcase.h"
#include "opinfo.h"

enum {
    RED_MEAN = 1 << 0,
    RED_SUM = 1 << 1,
    RED_NONE = 1 << 2,
    RED_BATCHMEAN = 1 << 3,
    REDUCTIONS = RED_MEAN | RED_SUM | RED_NONE,
    NAN_GRAD_ANY = 1 << 4,
};

typedef ct_tensor *(*case_fn)(ct_tensor *const *x, ct_reduction red);
#define OPCASE(file, name, op, dtypes, flags, c_expr, torch_expr, inputs)                        \
    static ct_tensor *CT_CAT(case_, __LINE__)(ct_tensor *const *x, ct_reduction red) {            \
        (void)red;                                                                                 \
        return c_expr;                                                                             \
    }
#include "opinfo.def"
#undef OPCASE

typedef struct {
    const char *file, *name, *op, *dtypes;
    unsigned flags;
    case_fn f;
    int line;
} op_case;

static const op_case CASES[] = {
#define OPCASE(file, name, op, dtypes, flags, c_expr, torch_expr, inputs) \
    {#file, #name, #op, dtypes, (flags), CT_CAT(case_, __LINE__), __LINE__},
#include "opinfo.def"
#undef OPCASE
};

static const struct {
    unsigned flag;
    ct_reduction red;
    const char *name;
} REDS[] = {
    {RED_MEAN, CT_REDUCTION_MEAN, "mean"},
    {RED_SUM, CT_REDUCTION_SUM, "sum"},
    {RED_NONE, CT_REDUCTION_NONE, "none"},
    {RED_BATCHMEAN, CT_REDUCTION_BATCHMEAN, "batchmean"},
};

#define MAX_IN 8

/* The inputs of case `key` in dtype dt (opinfo.def's OPCASE comment); their count. */
static int load_inputs(fx_file *f, const char *key, ct_dtype dt, ct_tensor **in) {
    char k[128];
    int n = 0;
    bool any_floating = false;
    for (; n < MAX_IN; n++) {
        snprintf(k, sizeof k, "%s_in%d", key, n);
        if (!fx_has(f, k)) break;
        in[n] = fx_get(f, k);
        any_floating |= ct_dtype_of(in[n]) == CT_F64;
    }
    for (int i = 0; i < n; i++) {
        bool floating = ct_dtype_of(in[i]) == CT_F64;
        if (floating || !any_floating) in[i] = ct_to(in[i], .dtype = dt);
        snprintf(k, sizeof k, "%s_grad%d", key, i);
        if (floating && fx_has(f, k)) ct_set_requires_grad(in[i], true);
    }
    return n;
}

static void run_case(fx_file *f, const op_case *c, const char *key, ct_reduction red,
                     ct_dtype dt, opcase_tol tol) {
    char k[128], what[200];
    ct_tensor *in[MAX_IN];
    int n = load_inputs(f, key, dt, in);
    snprintf(what, sizeof what, "%s (%s, tests/opinfo.def:%d): output", key, ct_dtype_name(dt),
             c->line);
    ct_clear_error();
    ct_tensor *y = c->f(in, red);
    snprintf(k, sizeof k, "%s_out", key);
    if (!ct_test_check_close(__FILE__, __LINE__, what, y, fx_get(f, k),
                             (ct_test_tol){.rtol = tol.out, .atol = tol.out}) ||
        !y)
        return;
    snprintf(k, sizeof k, "%s_g", key);
    if (!fx_has(f, k)) return;
    if (ct_dtype_of(y) != dt)
        ct_test_fail(__FILE__, __LINE__, "%s: the result is %s", what, ct_dtype_name(ct_dtype_of(y)));
    if (ct_backward(y, .gradient = fx_get_as(f, k, dt, false)) != 0) {
        ct_test_fail(__FILE__, __LINE__, "%s: backward: %s", what, ct_last_error());
        return;
    }
    for (int i = 0; i < n; i++) {
        if (!ct_requires_grad(in[i])) continue;
        snprintf(k, sizeof k, "%s_grad%d", key, i);
        snprintf(what, sizeof what, "%s (%s, tests/opinfo.def:%d): gradient of input %d", key,
                 ct_dtype_name(dt), c->line, i);
        ct_tensor *g = ct_grad(in[i]) ? ct_grad(in[i]) : ct_zeros_like(in[i]);
        ct_test_check_close(__FILE__, __LINE__, what, g, fx_get_as(f, k, dt, false),
                            (ct_test_tol){.rtol = tol.grad, .atol = tol.grad,
                                          .nan_any = (c->flags & NAN_GRAD_ANY) != 0});
    }
}

/* Runs c once per reduction it asks for (or once); the number of runs. */
static int run_reductions(fx_file *f, const op_case *c, ct_dtype dt, opcase_tol tol) {
    int runs = 0;
    char key[96];
    for (size_t r = 0; r < sizeof REDS / sizeof REDS[0]; r++) {
        if (!(c->flags & REDS[r].flag)) continue;
        snprintf(key, sizeof key, "%s_%s", c->name, REDS[r].name);
        CT_SCOPE { run_case(f, c, key, REDS[r].red, dt, tol); }
        runs++;
    }
    if (!(c->flags & (REDUCTIONS | RED_BATCHMEAN))) {
        CT_SCOPE { run_case(f, c, c->name, CT_REDUCTION_MEAN, dt, tol); }
        runs++;
    }
    return runs;
}

int opcase_check(const char *file, opcase_tol (*tol)(ct_dtype dt)) {
    fx_file *f = fx_load(file);
    if (!f) return 0;
    int runs = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const op_case *c = &CASES[i];
        if (strcmp(c->file, file)) continue;
        const oi_row *r = oi_row_of(c->op);
        oi_row dts = {.op = c->name, .dtypes = c->dtypes, .line = c->line};
        char bad[32];
        if (!r || !oi_dtypes_valid(&dts, bad, sizeof bad)) {
            ct_test_fail(__FILE__, __LINE__, "tests/opinfo.def:%d: case %s: %s", c->line, c->name,
                         r ? "unknown dtype" : "its op has no OPINFO row");
            continue;
        }
        for (int d = 1; d < CT_NUM_DTYPES; d++) {
            if (!oi_has_dtype(&dts, (ct_dtype)d)) continue;
            if (!oi_has_dtype(r, (ct_dtype)d))
                ct_test_fail(__FILE__, __LINE__, "tests/opinfo.def:%d: case %s runs in %s, which "
                             "%s's row (line %d) does not list", c->line, c->name,
                             ct_dtype_name((ct_dtype)d), r->op, r->line);
            else
                runs += run_reductions(f, c, (ct_dtype)d, tol((ct_dtype)d));
        }
    }
    fx_free(f);
    return runs;
}
