/* The OPINPLACE rows of tests/opinfo.def: each in-place form returns its input and
 * leaves in it the out-of-place result, on contiguous and non-contiguous inputs, in
 * every floating dtype of its op's row. */
#include "gc.h"

typedef ct_tensor *(*binary_fn)(ct_tensor *x, ct_tensor *y);
#define OPINPLACE(op, out_expr, inplace_expr)                                                      \
    static ct_tensor *CT_CAT(out_, __LINE__)(ct_tensor * x, ct_tensor * y) {                       \
        (void)y;                                                                                   \
        return out_expr;                                                                           \
    }                                                                                              \
    static ct_tensor *CT_CAT(in_, __LINE__)(ct_tensor * x, ct_tensor * y) {                        \
        (void)y;                                                                                   \
        return inplace_expr;                                                                       \
    }
#include "../opinfo.def"
#undef OPINPLACE

static const struct {
    const char *op, *expr;
    binary_fn out, in;
} FORMS[] = {
#define OPINPLACE(op, out_expr, inplace_expr)                                                      \
    {#op, #inplace_expr, CT_CAT(out_, __LINE__), CT_CAT(in_, __LINE__)},
#include "../opinfo.def"
#undef OPINPLACE
};

TEST(inplace_forms_agree_with_out_of_place) {
    static const ct_dtype DTS[] = {CT_F64, CT_F32, CT_BF16, CT_F16};
    for (size_t k = 0; k < sizeof FORMS / sizeof FORMS[0]; k++) {
        const oi_row *r = oi_row_of(FORMS[k].op);
        if (!r) {
            ct_test_fail(__FILE__, __LINE__, "OPINPLACE %s: no row for %s", FORMS[k].expr,
                         FORMS[k].op);
            continue;
        }
        gc_cover(FORMS[k].op);
        for (size_t d = 0; d < sizeof DTS / sizeof DTS[0]; d++) {
            if (!oi_has_dtype(r, DTS[d])) continue;
            for (int nc = 0; nc < 2; nc++) CT_SCOPE {
                    ct_tensor *base = nc ? gc_noncontig(CT_SHAPE(3, 4)) : gc_rand(CT_SHAPE(3, 4));
                    ct_tensor *x = ct_to(ct_detach(base), .dtype = DTS[d]);
                    ct_tensor *y =
                        ct_to(ct_detach(gc_rand_range(CT_SHAPE(4), 0.5, 1.5)), .dtype = DTS[d]);
                    if (nc) x = ct_transpose(ct_contiguous(ct_transpose(x, 0, 1)), 0, 1);
                    ct_tensor *want = FORMS[k].out(x, y);
                    ct_tensor *got = FORMS[k].in(x, y);
                    char what[160];
                    snprintf(what, sizeof what, "%s (%s%s)", FORMS[k].expr, ct_dtype_name(DTS[d]),
                             nc ? ", non-contiguous" : "");
                    if (got != x)
                        ct_test_fail(__FILE__, __LINE__, "%s: does not return its input", what);
                    CHECK_TENSOR_CLOSE(what, x, want);
                }
        }
    }
}
