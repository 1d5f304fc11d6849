/* The OPERROR rows of tests/opinfo.def: each expression fails with an error that names
 * its op's function and contains the row's fragment. */
#include "gc.h"
#include "ops/op_table.h"

typedef ct_tensor *(*error_fn)(ct_tensor *a, ct_tensor *b, ct_tensor *d, ct_tensor *i,
                               ct_tensor *u8, ct_tensor *bo);
#define OPERROR(op, expr, fragment)                                                                \
    static ct_tensor *CT_CAT(err_, __LINE__)(ct_tensor * a, ct_tensor * b, ct_tensor * d,          \
                                             ct_tensor * i, ct_tensor * u8, ct_tensor * bo) {      \
        (void)a, (void)b, (void)d, (void)i, (void)u8, (void)bo;                                    \
        return expr;                                                                               \
    }
#include "../opinfo.def"
#undef OPERROR

static const struct {
    const char *op, *expr, *fragment;
    error_fn f;
} ERRORS[] = {
#define OPERROR(op, expr, fragment) {#op, #expr, fragment, CT_CAT(err_, __LINE__)},
#include "../opinfo.def"
#undef OPERROR
};

static const char *fn_of(const char *op) {
    for (int k = 0; k < CT_NUM_OPS; k++)
        if (!strcmp(ct_ops[k].name, op)) return ct_ops[k].fn;
    return NULL;
}

TEST(error_samples_name_the_op) {
    ct_tensor *a = ct_ones(CT_SHAPE(2)), *b = ct_ones(CT_SHAPE(3));
    ct_tensor *d = ct_ones(CT_SHAPE(2), .dtype = CT_F64),
              *i = ct_ones(CT_SHAPE(2), .dtype = CT_I64);
    ct_tensor *u8 = ct_ones(CT_SHAPE(2), .dtype = CT_U8),
              *bo = ct_ones(CT_SHAPE(2), .dtype = CT_BOOL);
    for (size_t k = 0; k < sizeof ERRORS / sizeof ERRORS[0]; k++) {
        const char *fn = fn_of(ERRORS[k].op);
        if (!fn || !oi_row_of(ERRORS[k].op)) {
            ct_test_fail(__FILE__, __LINE__, "OPERROR %s: %s is no op with a row", ERRORS[k].expr,
                         ERRORS[k].op);
            continue;
        }
        ct_clear_error();
        ct_tensor *y = ERRORS[k].f(a, b, d, i, u8, bo);
        const char *e = ct_last_error();
        if (y || !e || !strstr(e, ERRORS[k].fragment) || strncmp(e, fn, strlen(fn)))
            ct_test_fail(__FILE__, __LINE__,
                         "%s: expected an error starting \"%s\" and containing \"%s\", got %s",
                         ERRORS[k].expr, fn, ERRORS[k].fragment,
                         y   ? "a result"
                         : e ? e
                             : "none");
        ct_clear_error();
    }
}
