/* The oneDNN path of float16 / bfloat16 matrix products and convolutions
 * (src/cpu/onednn.h) against float32 references computed from the same rounded
 * inputs: each result is a float sum rounded once, so it lies within half a unit in
 * the last place of the reduced dtype (plus float summation-order error) of the
 * reference, whichever kernel computed it.  The suite runs this program with oneDNN's
 * instruction set capped (ONEDNN_MAX_CPU_ISA) and with the path off (CT_ONEDNN=0):
 * tests/force_isa.sh; forced_limits_are_in_effect checks that the cap took. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/onednn.h"
#include "ct_test.h"

static const ct_dtype DTYPES[] = {CT_BF16, CT_F16};

/* The reduced dtype's rounding (half an ulp: 2^-8 for bfloat16, 2^-11 for float16),
 * with room for float sums in another order. */
static double rtol_of(ct_dtype dt) { return dt == CT_BF16 ? 1.0 / 256 : 1.0 / 2048; }

static ct_tensor *rounded(ct_shape s, ct_dtype dt) { return ct_to(ct_randn(s), .dtype = dt); }
static ct_tensor *f32(ct_tensor *t) { return ct_to(t, .dtype = CT_F32); }

static void check_close(const char *what, ct_dtype dt, ct_tensor *got, ct_tensor *want) {
    CHECK(got && ct_dtype_of(got) == dt);
    CHECK_TENSOR_CLOSE(what, f32(got), want, .rtol = rtol_of(dt), .atol = 1e-5, .atol_of_max = true);
}

/* oneDNN runs bfloat16 convolutions from AVX-512 up, matrix products from AVX512-BF16
 * up (its brgemm kernels: Note [oneDNN determinism]); float16 only on AVX512-FP16. */
static bool onednn_runs_bf16_conv(void) {
    return ct_onednn_enabled() && strncmp(ct_onednn_isa(), "avx512_core", 11) == 0;
}
static bool onednn_runs_bf16_mm(void) {
    const char *isa = ct_onednn_isa();
    return ct_onednn_enabled() && (!strcmp(isa, "avx512_core_bf16") || !strcmp(isa, "avx512_core_amx"));
}

TEST(forced_limits_are_in_effect) {
    const char *isa = getenv("ONEDNN_MAX_CPU_ISA");
    if (!isa) isa = getenv("DNNL_MAX_CPU_ISA");
#ifdef CT_HAVE_ONEDNN
    const char *off = getenv("CT_ONEDNN");
    CHECK(ct_onednn_enabled() == !(off && strcmp(off, "0") == 0));
    if (isa && strcmp(isa, "ALL") != 0) {
        char want[64] = {0};
        for (int i = 0; isa[i] && i < 63; i++) want[i] = (char)tolower((unsigned char)isa[i]);
        CHECK_STR_EQ(ct_onednn_isa(), want);
    }
#else
    (void)isa;
    CHECK(!ct_onednn_enabled());
#endif
}

/* A bfloat16 product ran through oneDNN exactly when the path is on and the CPU (or
 * the cap) allows it; otherwise the reduced kernels ran it, to the same contract. */
TEST(the_path_runs_where_it_should) {
    int64_t before = ct_onednn_executed();
    ct_tensor *a = rounded(CT_SHAPE(64, 48), CT_BF16), *b = rounded(CT_SHAPE(48, 32), CT_BF16);
    check_close("mm (bfloat16)", CT_BF16, ct_mm(a, b), ct_mm(f32(a), f32(b)));
    CHECK((ct_onednn_executed() > before) == onednn_runs_bf16_mm());
    ct_tensor *x = rounded(CT_SHAPE(2, 3, 8, 8), CT_BF16), *w = rounded(CT_SHAPE(4, 3, 3, 3), CT_BF16);
    before = ct_onednn_executed();
    check_close("conv2d (bfloat16)", CT_BF16, ct_conv2d(x, w, NULL), ct_conv2d(f32(x), f32(w), NULL));
    CHECK((ct_onednn_executed() > before) == onednn_runs_bf16_conv());
}

TEST(products_match_float32) {
    static const int64_t shapes[][3] = {{1, 1, 1},    {7, 13, 5},    {33, 65, 17}, {1, 300, 40},
                                        {40, 300, 1}, {130, 257, 129}, {300, 520, 290}};
    ct_manual_seed(11);
    for (size_t d = 0; d < sizeof DTYPES / sizeof *DTYPES; d++) {
        ct_dtype dt = DTYPES[d];
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            int64_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
            ct_tensor *a = rounded(CT_SHAPE(m, k), dt), *b = rounded(CT_SHAPE(k, n), dt);
            ct_tensor *at = ct_t(rounded(CT_SHAPE(k, m), dt)), *bt = ct_t(rounded(CT_SHAPE(n, k), dt));
            /* rows longer than the operand: a leading dimension of 2k (2n) */
            ct_tensor *as = ct_narrow(rounded(CT_SHAPE(m, 2 * k), dt), 1, k / 2, k);
            ct_tensor *bs = ct_narrow(rounded(CT_SHAPE(k, 2 * n), dt), 1, 1, n);
            ct_tensor *c = rounded(CT_SHAPE(m, n), dt);
            check_close("mm", dt, ct_mm(a, b), ct_mm(f32(a), f32(b)));
            check_close("mm a^T", dt, ct_mm(at, b), ct_mm(f32(at), f32(b)));
            check_close("mm b^T", dt, ct_mm(a, bt), ct_mm(f32(a), f32(bt)));
            check_close("mm a^T b^T", dt, ct_mm(at, bt), ct_mm(f32(at), f32(bt)));
            check_close("mm strided", dt, ct_mm(as, bs), ct_mm(f32(as), f32(bs)));
            check_close("addmm", dt, ct_addmm(c, a, b, .beta = CT_SOME(0.5), .alpha = CT_SOME(2)),
                        ct_addmm(f32(c), f32(a), f32(b), .beta = CT_SOME(0.5), .alpha = CT_SOME(2)));
        }
        ct_tensor *ba = rounded(CT_SHAPE(5, 9, 37), dt), *bb = rounded(CT_SHAPE(5, 37, 6), dt);
        ct_tensor *w = rounded(CT_SHAPE(37, 6), dt), *v = rounded(CT_SHAPE(37), dt);
        check_close("bmm", dt, ct_bmm(ba, bb), ct_bmm(f32(ba), f32(bb)));
        check_close("bmm a^T", dt, ct_bmm(ct_transpose(bb, 1, 2), ct_transpose(ba, 1, 2)),
                    ct_bmm(ct_transpose(f32(bb), 1, 2), ct_transpose(f32(ba), 1, 2)));
        check_close("matmul broadcast", dt, ct_matmul(ba, w), ct_matmul(f32(ba), f32(w)));
        check_close("matmul broadcast a", dt, ct_matmul(ct_t(w), ct_transpose(ba, 1, 2)),
                    ct_matmul(ct_t(f32(w)), ct_transpose(f32(ba), 1, 2)));
        ct_tensor *bc = rounded(CT_SHAPE(5, 9, 6), dt);
        check_close("baddbmm", dt, ct_baddbmm(bc, ba, bb, .beta = CT_SOME(-1), .alpha = CT_SOME(0.25)),
                    ct_baddbmm(f32(bc), f32(ba), f32(bb), .beta = CT_SOME(-1), .alpha = CT_SOME(0.25)));
        check_close("mv", dt, ct_mv(ct_t(w), v), ct_mv(ct_t(f32(w)), f32(v)));
        check_close("dot", dt, ct_dot(v, v), ct_dot(f32(v), f32(v)));
    }
}

/* conv2d / conv1d forward and both gradients (and the bias's) against float32 on the
 * same rounded values; the incoming gradient is rounded too. */
typedef struct {
    int64_t N, C, H, W, O, KH, KW, stride, pad, dil, groups;
    bool bias;
} conv_case;

static void check_conv(ct_dtype dt, const conv_case *c) {
    ct_tensor *x = rounded(CT_SHAPE(c->N, c->C, c->H, c->W), dt);
    ct_tensor *w = rounded(CT_SHAPE(c->O, c->C / c->groups, c->KH, c->KW), dt);
    ct_tensor *b = c->bias ? rounded(CT_SHAPE(c->O), dt) : NULL;
    ct_tensor *xf = f32(x), *wf = f32(w), *bf = b ? f32(b) : NULL;
    ct_tensor *in[] = {x, w, b, xf, wf, bf};
    for (int i = 0; i < 6; i++)
        if (in[i]) ct_set_requires_grad(in[i], true);
#define CONV(X, W, B)                                                                        \
    ct_conv2d(X, W, B, .stride = CT_DIMS(c->stride), .padding = CT_DIMS(c->pad),             \
              .dilation = CT_DIMS(c->dil), .groups = c->groups)
    ct_tensor *y = CONV(x, w, b), *yf = CONV(xf, wf, bf);
#undef CONV
    check_close("conv forward", dt, y, yf);
    ct_tensor *gy = rounded(ct_shape_of(y), dt);
    CHECK(ct_backward(ct_sum(ct_mul(y, gy))) == 0);
    CHECK(ct_backward(ct_sum(ct_mul(yf, f32(gy)))) == 0);
    check_close("conv grad input", dt, ct_grad(x), ct_grad(xf));
    check_close("conv grad weight", dt, ct_grad(w), ct_grad(wf));
    if (b) check_close("conv grad bias", dt, ct_grad(b), ct_grad(bf));
}

TEST(convolutions_match_float32) {
    static const conv_case cases[] = {
        {2, 3, 8, 8, 4, 3, 3, 1, 0, 1, 1, false},
        {3, 5, 11, 9, 7, 3, 3, 1, 1, 1, 1, true},   /* odd sizes, padding, bias */
        {2, 4, 13, 12, 6, 3, 2, 2, 1, 1, 1, true},  /* stride 2, non-square kernel */
        {2, 6, 12, 12, 6, 3, 3, 1, 2, 2, 3, true},  /* dilation 2, 3 groups */
        {1, 8, 9, 9, 8, 3, 3, 1, 1, 1, 8, false},   /* depthwise */
        {4, 16, 10, 10, 8, 1, 1, 1, 0, 1, 1, true}, /* pointwise */
        {2, 3, 1, 30, 5, 1, 5, 3, 2, 1, 1, true},   /* one row: conv1d's geometry */
        {9, 16, 14, 14, 32, 5, 5, 1, 2, 1, 1, true},
    };
    ct_manual_seed(12);
    for (size_t d = 0; d < sizeof DTYPES / sizeof *DTYPES; d++)
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_conv(DTYPES[d], &cases[i]);
    /* conv1d and a transposed conv (its forward is a grad-input job with a bias) */
    for (size_t d = 0; d < sizeof DTYPES / sizeof *DTYPES; d++) {
        ct_dtype dt = DTYPES[d];
        ct_tensor *x = rounded(CT_SHAPE(3, 4, 25), dt), *w = rounded(CT_SHAPE(6, 4, 3), dt);
        check_close("conv1d", dt, ct_conv1d(x, w, NULL, .stride = CT_DIMS(2), .padding = CT_DIMS(1)),
                    ct_conv1d(f32(x), f32(w), NULL, .stride = CT_DIMS(2), .padding = CT_DIMS(1)));
        ct_tensor *xt = rounded(CT_SHAPE(2, 6, 7, 7), dt), *wt = rounded(CT_SHAPE(6, 3, 3, 3), dt);
        ct_tensor *bt = rounded(CT_SHAPE(3), dt);
        ct_tensor *xtf = f32(xt), *wtf = f32(wt), *btf = f32(bt);
        ct_tensor *in[] = {xt, wt, bt, xtf, wtf, btf};
        for (int i = 0; i < 6; i++) ct_set_requires_grad(in[i], true);
        ct_tensor *yt = ct_conv_transpose2d(xt, wt, bt, .stride = CT_DIMS(2));
        ct_tensor *ytf = ct_conv_transpose2d(xtf, wtf, btf, .stride = CT_DIMS(2));
        check_close("conv_transpose2d", dt, yt, ytf);
        ct_tensor *gy = rounded(ct_shape_of(yt), dt);
        CHECK(ct_backward(ct_sum(ct_mul(yt, gy))) == 0);
        CHECK(ct_backward(ct_sum(ct_mul(ytf, f32(gy)))) == 0);
        check_close("conv_transpose2d grad input", dt, ct_grad(xt), ct_grad(xtf));
        check_close("conv_transpose2d grad weight", dt, ct_grad(wt), ct_grad(wtf));
        check_close("conv_transpose2d grad bias", dt, ct_grad(bt), ct_grad(btf));
    }
}

/* Note [oneDNN determinism] (src/cpu/onednn_matmul.c, onednn_conv.c): bitwise equal
 * results with 1 and 3 threads, for products (long k among them, where a k split
 * would show) and for the demo CNN's convolutions and their gradients. */
typedef struct {
    const char *name;
    int64_t m, k, n;              /* a product, or */
    int64_t N, C, H, O, K, pad;   /* a convolution (square), forward and both gradients */
} thread_case;

static int run_thread_case(const thread_case *c, ct_tensor **out) {
    ct_manual_seed(21);
    if (!c->N) {
        ct_tensor *a = rounded(CT_SHAPE(c->m, c->k), CT_BF16), *b = rounded(CT_SHAPE(c->k, c->n), CT_BF16);
        out[0] = ct_mm(a, b);
        return 1;
    }
    ct_tensor *x = rounded(CT_SHAPE(c->N, c->C, c->H, c->H), CT_BF16);
    ct_tensor *w = rounded(CT_SHAPE(c->O, c->C, c->K, c->K), CT_BF16);
    ct_set_requires_grad(x, true);
    ct_set_requires_grad(w, true);
    ct_tensor *y = ct_conv2d(x, w, NULL, .padding = CT_DIMS(c->pad));
    CHECK(ct_backward(ct_sum(ct_mul(y, rounded(ct_shape_of(y), CT_BF16)))) == 0);
    out[0] = y;
    out[1] = ct_grad(x);
    out[2] = ct_grad(w);
    return 3;
}

TEST(results_do_not_depend_on_threads) {
    static const thread_case cases[] = {
        {"mm 300x520x290", 300, 520, 290, 0, 0, 0, 0, 0, 0},
        {"mm 1024^3", 1024, 1024, 1024, 0, 0, 0, 0, 0, 0},
        {"mm long k 16x8192x16", 16, 8192, 16, 0, 0, 0, 0, 0, 0},
        {"mm 64x3136x128", 64, 3136, 128, 0, 0, 0, 0, 0, 0},
        {"mm long k 4x65536x4", 4, 65536, 4, 0, 0, 0, 0, 0, 0},
        {"mm dot 1x200000x1", 1, 200000, 1, 0, 0, 0, 0, 0, 0},
        {"mm 2x20000x300", 2, 20000, 300, 0, 0, 0, 0, 0, 0},
        {"mm 128x64x3136", 3136, 64, 128, 0, 0, 0, 0, 0, 0},
        {"conv 9x16x20 16 3", 0, 0, 0, 9, 16, 20, 16, 3, 1},
        {"conv cnn1 64x1x28 32 3", 0, 0, 0, 64, 1, 28, 32, 3, 1},
        {"conv cnn2 64x32x14 64 3", 0, 0, 0, 64, 32, 14, 64, 3, 1},
        {"conv 1x64x40 4 3", 0, 0, 0, 1, 64, 40, 4, 3, 0},
    };
    int saved = ct_get_num_threads();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ct_tensor *one[3], *three[3];
        ct_set_num_threads(1);
        int n = run_thread_case(&cases[i], one);
        ct_set_num_threads(3);
        run_thread_case(&cases[i], three);
        for (int j = 0; j < n; j++)
            if (!(ct_test_max_diff(one[j], three[j]) == 0))
                ct_test_fail(__FILE__, __LINE__, "%s: result %d differs with 3 threads by %g",
                             cases[i].name, j, ct_test_max_diff(one[j], three[j]));
    }
    ct_set_num_threads(saved);
}
