/* The checks each sample gets, as its op's row of tests/opinfo.def asks (gc.h). */
#include <stdlib.h>
#include <string.h>

#include "gc.h"
#include "core/error.h"
#include "core/lifetime.h"

#define MAX_ROWS 512
#define MAX_IN 16
static int n_samples[MAX_ROWS], n_second[MAX_ROWS], n_meta_skipped[MAX_ROWS];
static int n_variant_skipped[MAX_ROWS], n_empty_used[MAX_ROWS];
static int meta_checked, meta_skipped, lowp_runs, variant_runs;
static uint64_t lcg = 0x9e3779b97f4a7c15ull;

static double next_unit(void) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg >> 11) / 9007199254740992.0;
}

static const oi_row *row_for(const char *file, int line, const char *op) {
    const oi_row *r = oi_row_of(op);
    if (!r)
        ct_test_fail(file, line,
                     "a sample of \"%s\", which has no row in tests/opinfo.def: add "
                     "OPINFO(%s, \"<dtypes>\", <flags>, 0, \"\")",
                     op, op);
    return r;
}

void gc_cover(const char *op) {
    const oi_row *r = row_for(__FILE__, __LINE__, op);
    if (r) n_samples[r - oi_rows]++;
}

/* f on the inputs; the result belongs to the caller's scope.  Grad mode stays on: the
 * samples of backward ops differentiate inside f. */
static ct_tensor *evaluate(ct_gradcheck_fn f, ct_tensor *const *in, void *ctx) {
    return f(in, ctx);
}

/* A leaf holding t (a copy or a view), requiring grad as like does. */
static ct_tensor *leaf_like(ct_tensor *t, const ct_tensor *like) {
    t = ct_detach(t);
    if (t && ct_requires_grad(like)) ct_set_requires_grad(t, true);
    return t;
}

static bool all_contiguous(int n, ct_tensor *const *t) {
    for (int i = 0; i < n; i++)
        if (!ct_is_contiguous(t[i])) return false;
    return true;
}

/* Whether the last error is of a kind that says the sample cannot run on meta: it
 * brings cpu tensors of its own (device mismatch), or something in it (forward or
 * backward) needs values, as an output shape that depends on the data, which meta
 * tensors do not have, as in PyTorch.  Counted per row and listed at the end. */
static bool skipped_on_meta(const oi_row *r) {
    ct_error_kind k = ct_last_error_kind();
    if (k != CT_ERR_DEVICE_MISMATCH && k != CT_ERR_NO_VALUES) return false;
    meta_skipped++;
    n_meta_skipped[r - oi_rows]++;
    return true;
}

/* The case on the meta device: f on meta copies of the inputs gives the cpu's shape
 * and dtype (and strides, for contiguous inputs), and its backward gives each input a
 * gradient of the input's shape, all without allocating data.  A sample whose function
 * brings cpu tensors of its own (not made with gc_like) cannot run on meta: it is
 * counted, not checked. */
static void meta_check(const char *file, int line, const oi_row *r, ct_gradcheck_fn f, int n,
                       ct_tensor *const *inputs, void *ctx) {
    const char *op = r->op;
    ct_shape want;
    ct_dtype dtype = CT_DTYPE_UNSET;
    int64_t strides[CT_MAX_DIMS];
    CT_SCOPE {
        ct_tensor *y = f(inputs, ctx);
        if (y) {
            want = ct_shape_of(y);
            dtype = ct_dtype_of(y);
            for (int d = 0; d < want.ndim; d++) strides[d] = ct_stride(y, d);
        }
    }
    if (dtype == CT_DTYPE_UNSET) return;
    bool same_strides = all_contiguous(n, inputs);
    int64_t before = ct_memory_allocated(CT_CPU);
    CT_SCOPE {
        ct_tensor *m[MAX_IN];
        for (int i = 0; i < n; i++) {
            m[i] = ct_detach(ct_to(inputs[i], .device = CT_META));
            ct_set_requires_grad(m[i], ct_requires_grad(inputs[i]));
        }
        ct_clear_error();
        ct_tensor *y = f(m, ctx);
        if ((!y || !ct_is_meta(y)) && skipped_on_meta(r)) break;
        meta_checked++;
        if (!y || !ct_is_meta(y)) {
            ct_test_fail(file, line, "%s on meta: %s", op,
                         y ? "result not on meta" : ct_last_error());
            break;
        }
        ct_shape got = ct_shape_of(y);
        bool ok = got.ndim == want.ndim && ct_dtype_of(y) == dtype;
        for (int d = 0; ok && d < got.ndim; d++)
            ok = got.d[d] == want.d[d] && (!same_strides || ct_stride(y, d) == strides[d]);
        if (!ok) {
            char a[CT_SHAPE_STR_MAX], b[CT_SHAPE_STR_MAX];
            ct_test_fail(file, line, "%s on meta: %s %s, on cpu %s %s", op,
                         ct_dtype_name(ct_dtype_of(y)), ct_shape_str(got.ndim, got.d, a),
                         ct_dtype_name(dtype), ct_shape_str(want.ndim, want.d, b));
            break;
        }
        if (!ct_requires_grad(y)) break;
        if (ct_backward(ct_sum(y)) != 0) {
            if (skipped_on_meta(r)) break;
            ct_test_fail(file, line, "%s: backward on meta: %s", op, ct_last_error());
            break;
        }
        for (int i = 0; i < n; i++) {
            ct_tensor *g = ct_grad(m[i]);
            if (!g) continue; /* an input y does not depend on */
            ct_shape gs = ct_shape_of(g), is = ct_shape_of(m[i]);
            bool same = ct_is_meta(g) && gs.ndim == is.ndim;
            for (int d = 0; same && d < gs.ndim; d++) same = gs.d[d] == is.d[d];
            if (!same) ct_test_fail(file, line, "%s: the meta gradient of input %d", op, i);
        }
    }
    if (ct_memory_allocated(CT_CPU) != before || ct_memory_allocated(CT_META) != 0)
        ct_test_fail(file, line, "%s on meta: allocated memory (%lld cpu bytes left)", op,
                     (long long)(ct_memory_allocated(CT_CPU) - before));
}

/* Bitwise the same result with 1 and with 3 threads (Determinism, DESIGN.md). */
static void threads_check(const char *file, int line, const char *op, ct_gradcheck_fn f,
                          ct_tensor *const *inputs, void *ctx) {
    CT_SCOPE_HERE;
    int saved = ct_get_num_threads();
    ct_set_num_threads(1);
    ct_tensor *one = evaluate(f, inputs, ctx);
    ct_set_num_threads(3);
    ct_tensor *three = evaluate(f, inputs, ctx);
    ct_set_num_threads(saved);
    if (!one) return; /* gradcheck reports the error */
    char what[96];
    snprintf(what, sizeof what, "%s with 3 threads against 1", op);
    ct_test_check_close(file, line, what, three, one, (ct_test_tol){0});
}

/* A non-contiguous copy of t (every other element of a wider buffer), same values. */
static ct_tensor *noncontig_copy(ct_tensor *t) {
    ct_shape s = ct_shape_of(t);
    int last = s.ndim - 1;
    int64_t len = s.d[last];
    s.d[last] = 2 * len;
    ct_tensor *wide = ct_empty(s, .dtype = ct_dtype_of(t));
    ct_tensor *nc = ct_slice(wide, last, 0, 2 * len, 2);
    return ct_copy_(nc, ct_detach(t)) ? leaf_like(nc, t) : NULL;
}

/* The same result on non-contiguous copies of the (contiguous) inputs. */
static void noncontig_check(const char *file, int line, const char *op, ct_gradcheck_fn f, int n,
                            ct_tensor *const *inputs, void *ctx) {
    CT_SCOPE_HERE;
    ct_tensor *nc[MAX_IN];
    bool any = false;
    for (int i = 0; i < n; i++) {
        bool copy =
            ct_is_contiguous(inputs[i]) && ct_ndim(inputs[i]) > 0 && ct_numel(inputs[i]) > 1;
        nc[i] = copy ? noncontig_copy(inputs[i]) : inputs[i];
        any |= copy;
    }
    if (!any) return;
    ct_tensor *want = evaluate(f, inputs, ctx);
    if (!want) return;
    char what[96];
    snprintf(what, sizeof what, "%s on non-contiguous inputs", op);
    ct_test_check_close(file, line, what, evaluate(f, nc, ctx), want, (ct_test_tol){0});
}

/* The sample's inputs with dim 0 narrowed to size elements (0: a size-0 batch, 1: a
 * size-1 dim): input 0 and each input of its shape, so that operands that go together
 * stay together (a broadcast operand, a weight, keeps its shape).  False when input 0
 * has no dim 0 longer than size. */
static bool narrowed(int n, ct_tensor *const *in, int64_t size, ct_tensor **out, bool *all) {
    if (n == 0 || ct_ndim(in[0]) == 0 || ct_size(in[0], 0) <= size) return false;
    ct_shape s0 = ct_shape_of(in[0]);
    *all = true;
    for (int i = 0; i < n; i++) {
        ct_shape s = ct_shape_of(in[i]);
        bool cut = s.ndim == s0.ndim && !memcmp(s.d, s0.d, sizeof s.d[0] * (size_t)s.ndim);
        out[i] = cut ? leaf_like(ct_narrow(in[i], 0, 0, size), in[i]) : in[i];
        *all &= cut;
    }
    return true;
}

/* Every element of t equals the number text names (NaN matches NaN). */
static bool all_equal(ct_tensor *t, const char *text) {
    double want = strtod(text, NULL), *v = ct_test_values(t);
    bool ok = v != NULL;
    for (int64_t i = 0; ok && i < ct_numel(t); i++)
        ok = v[i] == want || (isnan(v[i]) && isnan(want));
    free(v);
    return ok;
}

/* The sample on a size-0 batch and on a size-1 dim (narrowed): no crash; the meta
 * device's shape and dtype; backward gives gradients of the inputs' shapes; on a size-0
 * batch, PyTorch's value where op's OPEMPTY row gives one.  A failure is an error that
 * names a function, and one that op's OPEMPTY row expects (PyTorch fails too) unless
 * the sample has operands that were not narrowed (a kept input, its own tensors in
 * ctx), which may not fit a smaller batch: those are counted and listed at the end. */
static void size_variants_check(const char *file, int line, const oi_row *r, ct_gradcheck_fn f,
                                int n, ct_tensor *const *inputs, void *ctx) {
    const oi_empty *e = oi_empty_of(r->op);
    for (int64_t size = 0; size <= 1; size++) CT_SCOPE {
        ct_tensor *v[MAX_IN];
        bool all;
        if (!narrowed(n, inputs, size, v, &all)) break;
        variant_runs++;
        const char *what = size ? "a size-1 dim" : "a size-0 batch";
        ct_clear_error();
        ct_tensor *y = evaluate(f, v, ctx);
        if (!y) {
            const char *err = ct_last_error() ? ct_last_error() : "no error set";
            bool expected = e && e->fragment[0] && strstr(err, e->fragment);
            if (expected) n_empty_used[e - oi_empties]++;
            if (!strncmp(err, "ct_", 3) && (expected || !all || ctx)) {
                n_variant_skipped[r - oi_rows] += !expected;
                break;
            }
            ct_test_fail(file, line,
                         "%s on %s: %s (if PyTorch fails too, add OPEMPTY(%s, \"\", "
                         "\"<fragment>\") to tests/opinfo.def; if the sample cannot take "
                         "it, NO_EMPTY with a reason to its row, line %d)",
                         r->op, what, err, r->op, r->line);
            break;
        }
        if (!(r->flags & OI_NO_META)) meta_check(file, line, r, f, n, v, ctx);
        if (!size && e && e->value[0]) n_empty_used[e - oi_empties]++;
        if (!size && e && e->value[0] && !all_equal(y, e->value))
            ct_test_fail(file, line, "%s on a size-0 batch: not %s everywhere (OPEMPTY, "
                         "tests/opinfo.def:%d)", r->op, e->value, e->line);
        if (!ct_requires_grad(y)) break;
        if (ct_backward(ct_sum(y)) != 0) {
            ct_test_fail(file, line, "%s on %s: backward: %s", r->op, what, ct_last_error());
            break;
        }
        for (int i = 0; i < n; i++) {
            ct_tensor *g = ct_grad(v[i]);
            if (g && ct_numel(g) != ct_numel(v[i]))
                ct_test_fail(file, line, "%s on %s: the gradient of input %d", r->op, what, i);
        }
    }
}

static double epsilon_of(ct_dtype dt) {
    return dt == CT_BF16 ? 0x1p-7 : dt == CT_F16 ? 0x1p-10 : dt == CT_F32 ? 0x1p-23 : 0x1p-52;
}

/* The floating inputs rounded to dt, then (when to is set) widened to `to`: leaves
 * requiring grad where the inputs do. */
static void cast_inputs(int n, ct_tensor *const *in, ct_dtype dt, ct_dtype to, ct_tensor **out) {
    for (int i = 0; i < n; i++) {
        ct_tensor *t = in[i];
        if (ct_dtype_is_floating(ct_dtype_of(t))) {
            t = ct_to(ct_detach(t), .dtype = dt);
            if (to) t = ct_to(t, .dtype = to);
            t = leaf_like(t, in[i]);
        }
        out[i] = t;
    }
}

/* In each floating dtype of the row: float32 against float64, bfloat16 and float16
 * against float32, all on the same rounded inputs, within ulps of the dtype's epsilon
 * (relative, and absolute scaled by the largest magnitude). */
static void lowp_check(const char *file, int line, const oi_row *r, ct_gradcheck_fn f, int n,
                       ct_tensor *const *inputs, void *ctx) {
    static const ct_dtype DTS[] = {CT_F32, CT_BF16, CT_F16};
    bool floating = false;
    for (int i = 0; i < n; i++) floating |= ct_dtype_is_floating(ct_dtype_of(inputs[i]));
    for (size_t k = 0; floating && k < sizeof DTS / sizeof DTS[0]; k++) {
        ct_dtype dt = DTS[k], ref = dt == CT_F32 ? CT_F64 : CT_F32;
        if (!oi_has_dtype(r, dt)) continue;
        CT_SCOPE {
            ct_tensor *a[MAX_IN], *b[MAX_IN];
            cast_inputs(n, inputs, dt, CT_DTYPE_UNSET, a);
            cast_inputs(n, inputs, dt, ref, b);
            ct_tensor *want = evaluate(f, b, ctx);
            if (!want) break; /* not defined on these values; gradcheck reports errors */
            ct_clear_error();
            ct_tensor *got = evaluate(f, a, ctx);
            lowp_runs++;
            char what[128];
            snprintf(what, sizeof what, "%s in %s against %s (row at tests/opinfo.def:%d)", r->op,
                     ct_dtype_name(dt), ct_dtype_name(ref), r->line);
            if (!got) {
                ct_test_fail(file, line, "%s: %s", what, ct_last_error());
                break;
            }
            if (ct_dtype_of(want) == ref && ct_dtype_of(got) != dt)
                ct_test_fail(file, line, "%s: the result is %s", what,
                             ct_dtype_name(ct_dtype_of(got)));
            double tol = (r->ulps > 0 ? r->ulps : 8) * epsilon_of(dt);
            ct_test_check_close(file, line, what, got, want,
                                (ct_test_tol){.rtol = tol, .atol = tol, .atol_of_max = true});
        }
    }
}

/* In the debug lifetime mode (core/lifetime.h): the sample given a released copy of
 * each input in turn reports the use after free (a sample may go on past an in-place
 * op's failure, so the message is what counts). */
static void released_check(const char *file, int line, const char *op, ct_gradcheck_fn f,
                           int n, ct_tensor *const *inputs, void *ctx) {
    for (int k = 0; k < n; k++) {
        if (!inputs[k]) continue;
        ct_tensor *a[MAX_IN], *dead = NULL;
        CT_SCOPE { dead = ct_clone(inputs[k]); } /* released when the scope closes */
        for (int i = 0; i < n; i++) a[i] = i == k ? dead : inputs[i];
        ct_clear_error();
        CT_SCOPE {
            ct_tensor *got = evaluate(f, a, ctx);
            const char *e = ct_last_error();
            if (!e || !strstr(e, "was released (use after free)"))
                ct_test_fail(file, line, "%s given a released input %d: %s", op, k,
                             e ? e : got ? "returned a tensor, no error" : "no error");
        }
    }
    ct_clear_error();
}

void gc_run(const char *file, int line, const char *op, ct_gradcheck_fn f, int n,
            ct_tensor *const *inputs, void *ctx, bool second_order) {
    const oi_row *r = row_for(file, line, op);
    if (!r) return;
    if (n > MAX_IN) {
        ct_test_fail(file, line, "a sample of %s has %d inputs (at most %d)", op, n, MAX_IN);
        return;
    }
    n_samples[r - oi_rows]++;
    n_second[r - oi_rows] += second_order;
    unsigned fl = r->flags;
    if (ct_lifetime_debug) released_check(file, line, op, f, n, inputs, ctx);
    ct_clear_error();
    if (!(fl & OI_NO_META)) meta_check(file, line, r, f, n, inputs, ctx);
    ct_clear_error();
    if (!(fl & OI_NO_THREADS)) threads_check(file, line, op, f, inputs, ctx);
    if (!(fl & OI_NO_NONCONTIG)) noncontig_check(file, line, op, f, n, inputs, ctx);
    if (!(fl & OI_NO_LOWP)) lowp_check(file, line, r, f, n, inputs, ctx);
    ct_clear_error();
    if (!(fl & OI_NO_EMPTY)) size_variants_check(file, line, r, f, n, inputs, ctx);
    ct_clear_error();
    if (second_order && !(fl & OI_GRADGRAD))
        ct_test_fail(file, line,
                     "a sample asks gradgradcheck of %s, but its row (tests/opinfo.def:%d) lacks "
                     "GRADGRAD",
                     op, r->line);
    bool any_grad = false;
    for (int i = 0; i < n; i++) any_grad |= ct_requires_grad(inputs[i]);
    if (!(fl & OI_GRAD) || !any_grad) return;
    if (ct_gradcheck(f, n, inputs, ctx) != 0) {
        ct_test_fail(file, line, "gradcheck of %s: %s", op, ct_last_error());
        return;
    }
    if (second_order && ct_gradgradcheck(f, n, inputs, ctx) != 0)
        ct_test_fail(file, line, "gradgradcheck of %s: %s", op, ct_last_error());
}

ct_tensor *gc_like(const ct_tensor *ref, ct_tensor *t) {
    if (!ref || !t) return t;
    bool cast = ct_dtype_is_floating(ct_dtype_of(ref)) && ct_dtype_is_floating(ct_dtype_of(t));
    return ct_to(t, .device = ct_device_of(ref), .dtype = cast ? ct_dtype_of(ref) : ct_dtype_of(t));
}

ct_tensor *gc_rand_range(ct_shape shape, double lo, double hi) {
    ct_tensor *t = ct_empty(shape, .dtype = CT_F64);
    double *p = ct_data_ptr(t);
    for (int64_t i = 0; i < ct_numel(t); i++) p[i] = lo + (hi - lo) * next_unit();
    ct_set_requires_grad(t, true);
    return t;
}

ct_tensor *gc_rand(ct_shape shape) { return gc_rand_range(shape, -1, 1); }

static void free_buffer(void *data, void *ctx) {
    (void)ctx;
    free(data);
}

ct_tensor *gc_noncontig_range(ct_shape shape, double lo, double hi) {
    int64_t numel = 1, strides[CT_MAX_DIMS], s = 2;
    for (int d = 0; d < shape.ndim; d++) numel *= shape.d[d];
    for (int d = shape.ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape.d[d] > 1 ? shape.d[d] : 1;
    }
    double *buf = calloc((size_t)(2 * numel + 1), sizeof(double));
    for (int64_t i = 0; i < 2 * numel; i++) buf[i] = lo + (hi - lo) * next_unit();
    ct_tensor *t = ct_from_blob(buf, CT_F64, shape, strides, free_buffer, NULL);
    ct_set_requires_grad(t, true);
    return t;
}

ct_tensor *gc_noncontig(ct_shape shape) { return gc_noncontig_range(shape, -1, 1); }

/* Called by the harness after the last test: every row had the samples it promises. */
int ct_test_finish(void) {
    int missing = 0, samples = 0;
    for (int i = 0; i < oi_num_rows; i++) {
        const oi_row *r = &oi_rows[i];
        samples += n_samples[i];
        if (r->flags & (OI_ELSEWHERE | OI_EXEMPT)) {
            if (n_samples[i]) {
                fprintf(stderr, "tests/opinfo.def:%d: %s has samples here but is marked %s\n",
                        r->line, r->op, r->flags & OI_EXEMPT ? "EXEMPT" : "ELSEWHERE");
                missing++;
            }
            continue;
        }
        if (!n_samples[i]) {
            fprintf(stderr,
                    "tests/opinfo.def:%d: %s has no sample: add one to tests/gradcheck/, or mark "
                    "the row ELSEWHERE with the test that covers it\n",
                    r->line, r->op);
            missing++;
        } else if ((r->flags & OI_GRADGRAD) && !n_second[i]) {
            fprintf(stderr,
                    "tests/opinfo.def:%d: %s is GRADGRAD but no sample asks gradgradcheck "
                    "(GRADGRADCHECK)\n",
                    r->line, r->op);
            missing++;
        }
    }
    printf("%d samples of %d rows; meta device: %d checked, %d skipped (cpu tensors of their "
           "own, or data-dependent shapes); %d reduced-precision runs; %d size-0 / size-1 runs\n",
           samples, oi_num_rows, meta_checked, meta_skipped, lowp_runs, variant_runs);
    for (int i = 0; i < oi_num_rows; i++)
        if (n_meta_skipped[i])
            printf("  not on meta: %d samples of %s\n", n_meta_skipped[i], oi_rows[i].op);
    for (int i = 0; i < oi_num_rows; i++)
        if (n_variant_skipped[i])
            printf("  size-0 / size-1 variants that did not fit the sample's other operands: "
                   "%d of %s\n", n_variant_skipped[i], oi_rows[i].op);
    for (int i = 0; i < oi_num_empties; i++) {
        const oi_empty *e = &oi_empties[i];
        if (!oi_row_of(e->op) || !n_empty_used[i]) {
            fprintf(stderr, "tests/opinfo.def:%d: OPEMPTY(%s, ...) %s\n", e->line, e->op,
                    oi_row_of(e->op) ? "was never used: no sample reached its value or error"
                                     : "names no op of an OPINFO row");
            missing++;
        }
    }
    return missing;
}
