/* The coverage rule of tests/opinfo.def: every op of src/ops/ops.def has exactly one
 * row, every (op, device, dtype) kernel slot's dtype is among its row's dtypes, GRAD
 * marks exactly the differentiable ops, and every skip says why.  Each failure names
 * the row to add or the words to change. */
#include <string.h>

#include "gc.h"
#include "core/backend.h"
#include "ops/op_table.h"

/* The dtypes with a kernel of op on some backend, as a dtypes column. */
static void kernel_dtypes(ct_op_id op, char *out, size_t size) {
    static const ct_dtype ORDER[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_U8,
                                     CT_I8,  CT_I16, CT_I32, CT_I64,  CT_BOOL};
    bool has[CT_NUM_DTYPES] = {false};
    for (int t = 0; t < CT_NUM_DEVICE_TYPES; t++)
        for (int d = 1; d < CT_NUM_DTYPES; d++)
            if (ct_backend_for_type((ct_device_type)t) &&
                ct_kernel_registered(op, (ct_device){(ct_device_type)t, 0}, (ct_dtype)d))
                has[d] = true;
    bool fl = has[CT_F32] && has[CT_F64] && has[CT_F16] && has[CT_BF16];
    bool in = has[CT_U8] && has[CT_I8] && has[CT_I16] && has[CT_I32] && has[CT_I64];
    out[0] = 0;
    size_t len = 0;
#define PUT(s)                                                                                     \
    len += (size_t)snprintf(out + len, len < size ? size - len : 0, "%s%s", len ? " " : "", s)
    if (fl && in && has[CT_BOOL]) {
        PUT("all");
        return;
    }
    for (size_t k = 0; k < sizeof ORDER / sizeof ORDER[0]; k++) {
        ct_dtype d = ORDER[k];
        bool floating = d == CT_F32 || d == CT_F64 || d == CT_F16 || d == CT_BF16;
        bool integral = d == CT_U8 || d == CT_I8 || d == CT_I16 || d == CT_I32 || d == CT_I64;
        if (d == CT_F32 && fl) PUT("floating");
        if (d == CT_U8 && in) PUT("integral");
        if (has[d] && !(floating && fl) && !(integral && in)) PUT(ct_dtype_name(d));
    }
    if (!len) PUT("float32 float64");
#undef PUT
}

TEST(every_op_has_a_row) {
    char dts[128];
    for (int op = 0; op < CT_NUM_OPS; op++) {
        if (oi_row_of(ct_ops[op].name)) continue;
        kernel_dtypes((ct_op_id)op, dts, sizeof dts);
        ct_test_fail(__FILE__, __LINE__,
                     "ops.def's op %s has no row in tests/opinfo.def: add\n"
                     "OPINFO(%s, \"%s\", %s, 0, \"\")",
                     ct_ops[op].name, ct_ops[op].name, dts, ct_ops[op].backward ? "GRAD" : "0");
    }
}

static int op_of(const char *name) {
    for (int op = 0; op < CT_NUM_OPS; op++)
        if (!strcmp(ct_ops[op].name, name)) return op;
    return -1;
}

TEST(rows_agree_with_ops_def) {
    for (int i = 0; i < oi_num_rows; i++) {
        const oi_row *r = &oi_rows[i];
        int op = op_of(r->op);
        char bad[64];
        if (op < 0) {
            ct_test_fail(__FILE__, __LINE__, "tests/opinfo.def:%d: %s is not an op of ops.def",
                         r->line, r->op);
            continue;
        }
        if (oi_row_of(r->op) != r)
            ct_test_fail(__FILE__, __LINE__, "tests/opinfo.def:%d: a second row for %s", r->line,
                         r->op);
        if (!oi_dtypes_valid(r, bad, sizeof bad))
            ct_test_fail(__FILE__, __LINE__,
                         "tests/opinfo.def:%d: %s: \"%s\" is no dtype (float32, ..., bool, "
                         "floating, integral, all)",
                         r->line, r->op, bad);
        bool grad = ct_ops[op].backward != NULL;
        if (!(r->flags & OI_EXEMPT) && grad != !!(r->flags & OI_GRAD))
            ct_test_fail(__FILE__, __LINE__, "tests/opinfo.def:%d: %s is %sdifferentiable: %s GRAD",
                         r->line, r->op, grad ? "" : "not ", grad ? "add" : "remove");
        if ((r->flags & OI_GRADGRAD) && !(r->flags & OI_GRAD))
            ct_test_fail(__FILE__, __LINE__, "tests/opinfo.def:%d: %s: GRADGRAD without GRAD",
                         r->line, r->op);
        unsigned skips = OI_NO_META | OI_NO_THREADS | OI_NO_NONCONTIG | OI_NO_LOWP |
                         OI_ELSEWHERE | OI_EXEMPT | OI_NO_LARGE | OI_NO_EMPTY;
        if (!(r->flags & skips) != !r->reason[0])
            ct_test_fail(__FILE__, __LINE__, "tests/opinfo.def:%d: %s: %s", r->line, r->op,
                         r->reason[0] ? "a reason, but nothing is skipped"
                                      : "a skip (NO_*, ELSEWHERE, EXEMPT) needs its reason");
    }
}

TEST(every_kernel_slot_has_a_row) {
    ct_backend_of("test", CT_CPU); /* the backends register on first use */
    ct_backend_of("test", CT_META);
    ct_clear_error();
    int slots = 0;
    for (int op = 0; op < CT_NUM_OPS; op++) {
        const oi_row *r = oi_row_of(ct_ops[op].name);
        if (!r) continue; /* every_op_has_a_row names it */
        for (int t = 0; t < CT_NUM_DEVICE_TYPES; t++) {
            if (!ct_backend_for_type((ct_device_type)t)) continue;
            ct_device dev = {(ct_device_type)t, 0};
            for (int d = 1; d < CT_NUM_DTYPES; d++) {
                if (!ct_kernel_registered((ct_op_id)op, dev, (ct_dtype)d)) continue;
                slots++;
                if (oi_has_dtype(r, (ct_dtype)d)) continue;
                char dev_name[32], dts[128];
                kernel_dtypes((ct_op_id)op, dts, sizeof dts);
                ct_test_fail(__FILE__, __LINE__,
                             "%s has a kernel for (%s, %s), but its row (tests/opinfo.def:%d) "
                             "lacks %s: write its dtypes as \"%s\"",
                             ct_ops[op].fn, ct_device_str(dev, dev_name),
                             ct_dtype_name((ct_dtype)d), r->line, ct_dtype_name((ct_dtype)d), dts);
            }
        }
    }
    CHECK(slots > 300);
}
