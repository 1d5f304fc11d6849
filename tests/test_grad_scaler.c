/* The gradient scaler (ctorch/grad_scaler.h): scale trajectories and skipped steps
 * against a re-derivation of PyTorch 1.13's _amp_update_scale_ (its CUDA kernel's
 * arithmetic: tests/fixtures/gen_grad_scaler.py, which writes grad_scaler_ref.h, since
 * 1.13 has no CPU kernel to run), the fused check-and-unscale bitwise in every float
 * dtype and thread count, the stage errors, several optimizers, state dicts,
 * checkpoints, and a scaled training loop against the plain float32 one. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "ct_test.h"
#include "ctorch/serialize.h"
#include "fixtures/grad_scaler_ref.h"

/* a and b hold the same values bit for bit (as doubles: every dtype widens exactly). */
static bool same_bits(const ct_tensor *a, const ct_tensor *b) {
    if (ct_numel(a) != ct_numel(b)) return false;
    double *x = ct_test_values(a), *y = ct_test_values(b);
    bool same = x && y && !memcmp(x, y, sizeof *x * (size_t)ct_numel(a));
    free(x);
    free(y);
    return same;
}

static int64_t tracker_of(ct_grad_scaler *s) {
    int64_t v = -1;
    CT_SCOPE {
        ct_tensor *t = ct_state_dict_get(ct_grad_scaler_state_dict(s), "_growth_tracker");
        v = t ? ct_item_int(t) : -1;
    }
    return v;
}

static const double bad_value[] = {0, INFINITY, NAN, -INFINITY};

TEST(scale_trajectory_matches_pytorch_formulas) {
    for (size_t c = 0; c < sizeof ref_cases / sizeof ref_cases[0]; c++) {
        const ref_case *rc = &ref_cases[c];
        ct_tensor *w = ct_tensor_f32(((float[]){0.5f, -1, 2, 0.25f}), CT_SHAPE(4), .requires_grad = true);
        ct_optim *opt = ct_sgd(&w, 1, .lr = CT_SOME(0.125));
        ct_grad_scaler *s = ct_grad_scaler(.init_scale = rc->init_scale, .growth_factor = rc->growth_factor,
                                           .backoff_factor = rc->backoff_factor,
                                           .growth_interval = rc->growth_interval);
        CHECK(s && ct_grad_scaler_is_enabled(s));
        for (int i = 0; i < rc->n; i++) {
            CT_SCOPE_HERE;
            /* small enough that 2^127 times them stays finite (growth_cap) */
            float xv[4] = {1.f / 16, 2.f / 16, 3.f / 16, 4.f / 16};
            if (rc->events[i]) xv[1] = (float)bad_value[rc->events[i]];
            ct_tensor *x = ct_tensor_f32(xv, CT_SHAPE(4));
            ct_tensor *before = ct_clone(ct_detach(w));
            ct_zero_grad(opt);
            ct_tensor *scaled = ct_grad_scaler_scale(s, ct_sum(ct_mul(w, x)));
            CHECK(scaled && ct_ndim(scaled) == 1 && ct_dtype_of(scaled) == CT_F32);
            CHECK(ct_backward(scaled) == 0);
            int stepped = ct_grad_scaler_step(s, opt);
            if (stepped != rc->steps[i].stepped)
                ct_test_fail(__FILE__, __LINE__, "%s step %d: stepped %d, expected %d", rc->name, i,
                             stepped, rc->steps[i].stepped);
            if (stepped == 0) CHECK(same_bits(w, before)); /* a skipped step leaves w alone */
            else CHECK(!same_bits(w, before));
            CHECK(ct_grad_scaler_update(s) == 0);
            if (ct_grad_scaler_get_scale(s) != rc->steps[i].scale ||
                tracker_of(s) != rc->steps[i].tracker)
                ct_test_fail(__FILE__, __LINE__, "%s step %d: scale %.17g tracker %lld, expected %.17g %d",
                             rc->name, i, ct_grad_scaler_get_scale(s), (long long)tracker_of(s),
                             rc->steps[i].scale, rc->steps[i].tracker);
        }
    }
}

/* A parameter whose .grad is vals (in dtype), the scaler started at scale. */
static ct_tensor *param_with_grad(const double *vals, int n, ct_dtype dt) {
    ct_tensor *p = ct_zeros(CT_SHAPE(n), .dtype = dt, .requires_grad = true);
    CT_SCOPE { ct_set_grad(p, ct_to(ct_tensor_f64(vals, CT_SHAPE(n)), .dtype = dt)); }
    return p;
}

TEST(unscale_is_grad_times_float_reciprocal_in_every_dtype) {
    const int n = (int)(sizeof unscale_in / sizeof unscale_in[0]);
    const struct {
        ct_dtype dt;
        double scale;
        const double *want;
        int found;
    } cases[] = {
        {CT_F32, 65536, unscale_f32_65536, 0}, {CT_F32, 3072, unscale_f32_3072, 0},
        {CT_F64, 65536, unscale_f64_65536, 0}, {CT_F64, 3072, unscale_f64_3072, 0},
        {CT_F16, 65536, unscale_f16_65536, 1}, {CT_F16, 3072, unscale_f16_3072, 1}, /* 7e4 is inf */
        {CT_BF16, 65536, unscale_bf16_65536, 0}, {CT_BF16, 3072, unscale_bf16_3072, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ct_tensor *p = param_with_grad(unscale_in, n, cases[c].dt);
        ct_optim *opt = ct_sgd(&p, 1, .lr = CT_SOME(1));
        ct_grad_scaler *s = ct_grad_scaler(.init_scale = cases[c].scale);
        ct_grad_scaler_scale(s, p); /* starts the scaler */
        CHECK(ct_grad_scaler_unscale_(s, opt) == 0);
        ct_tensor *want = ct_to(ct_tensor_f64(cases[c].want, CT_SHAPE(n)), .dtype = cases[c].dt);
        if (!same_bits(ct_grad(p), want))
            ct_test_fail(__FILE__, __LINE__, "%s by %g: unscaled values differ", ct_dtype_name(cases[c].dt),
                         cases[c].scale);
        int stepped = ct_grad_scaler_step(s, opt);
        CHECK_INT_EQ(stepped, cases[c].found ? 0 : 1);
    }
}

/* One large gradient unscaled with `threads` threads; the grad afterwards. */
static ct_tensor *unscale_large(ct_tensor *grad, int threads, int *stepped) {
    ct_tensor *p = ct_zeros_like(grad, .requires_grad = true);
    ct_set_grad(p, ct_clone(grad));
    ct_optim *opt = ct_sgd(&p, 1, .lr = CT_SOME(0));
    ct_grad_scaler *s = ct_grad_scaler(.init_scale = 3 * 1024);
    ct_grad_scaler_scale(s, grad);
    int old = ct_get_num_threads();
    ct_set_num_threads(threads);
    *stepped = ct_grad_scaler_step(s, opt);
    ct_set_num_threads(old);
    ct_tensor *out = ct_clone(ct_grad(p));
    return out;
}

TEST(fused_unscale_on_large_tensors_same_bits_with_1_and_3_threads) {
    const int64_t n = 70007;
    const ct_dtype dts[] = {CT_F32, CT_F64, CT_F16, CT_BF16};
    ct_manual_seed(7);
    for (int d = 0; d < 4; d++) {
        ct_tensor *g = ct_to(ct_mul_scalar(ct_randn(CT_SHAPE(n)), 100), .dtype = dts[d]);
        /* the expected values by ordinary ops: in float (double for float64), rounded once */
        float inv = (float)(1.0 / 3072.0);
        ct_dtype opmath = dts[d] == CT_F64 ? CT_F64 : CT_F32;
        ct_tensor *want = ct_to(ct_mul(ct_to(g, .dtype = opmath),
                                       ct_scalar_tensor(inv, .dtype = opmath)), .dtype = dts[d]);
        int st1, st3;
        ct_tensor *one = unscale_large(g, 1, &st1), *three = unscale_large(g, 3, &st3);
        CHECK(same_bits(one, want));
        CHECK(same_bits(three, want));
        CHECK_INT_EQ(st1, 1);
        CHECK_INT_EQ(st3, 1);
        /* one NaN near the end (the last thread's chunk) is found with any split */
        CT_NO_GRAD { ct_fill_(ct_narrow(g, 0, n - 5, 1), NAN); }
        one = unscale_large(g, 1, &st1);
        three = unscale_large(g, 3, &st3);
        CHECK_INT_EQ(st1, 0);
        CHECK_INT_EQ(st3, 0);
        CHECK(same_bits(ct_narrow(one, 0, 0, n - 5), ct_narrow(three, 0, 0, n - 5)));
    }
}

TEST(non_contiguous_gradients_are_unscaled_in_place) {
    ct_tensor *p = ct_zeros(CT_SHAPE(3, 2), .requires_grad = true);
    float gv[] = {1, 2, 3, 4, 5, 6};
    ct_set_grad(p, ct_transpose(ct_tensor_f32(gv, CT_SHAPE(2, 3)), 0, 1));
    ct_tensor *grad = ct_grad(p);
    CHECK(!ct_is_contiguous(grad));
    ct_optim *opt = ct_sgd(&p, 1, .lr = CT_SOME(1));
    ct_grad_scaler *s = ct_grad_scaler(.init_scale = 4);
    ct_grad_scaler_scale(s, p);
    CHECK(ct_grad_scaler_unscale_(s, opt) == 0);
    CHECK(ct_grad(p) == grad);
    float wv[] = {0.25f, 1, 0.5f, 1.25f, 0.75f, 1.5f};
    CHECK(same_bits(grad, ct_tensor_f32(wv, CT_SHAPE(3, 2))));
}

/* A parameter with gradient g and an SGD over it. */
static ct_optim *sgd_with_grad(ct_tensor **p, float g) {
    *p = ct_zeros(CT_SHAPE(2), .requires_grad = true);
    ct_set_grad(*p, ct_full(CT_SHAPE(2), g));
    return ct_sgd(p, 1, .lr = CT_SOME(1));
}

TEST(stage_errors_are_pytorchs) {
    ct_tensor *p;
    ct_optim *opt = sgd_with_grad(&p, 1);
    ct_grad_scaler *s = ct_grad_scaler();
    CHECK(ct_grad_scaler_step(s, opt) == -1);
    CHECK(strstr(ct_last_error(), "Attempted step but _scale is None"));
    ct_clear_error();
    CHECK(ct_grad_scaler_update(s) == -1);
    ct_clear_error();
    ct_grad_scaler_scale(s, p);
    CHECK(ct_grad_scaler_update(s) == -1);
    CHECK(strstr(ct_last_error(), "No inf checks were recorded prior to update."));
    ct_clear_error();
    CHECK(ct_grad_scaler_unscale_(s, opt) == 0);
    CHECK(ct_grad_scaler_unscale_(s, opt) == -1);
    CHECK_STR_EQ(ct_last_error(), "ct_grad_scaler_unscale_: unscale_() has already been called on "
                                  "this optimizer since the last update().");
    ct_clear_error();
    /* the failed second call did not unscale again */
    CHECK(same_bits(ct_grad(p), ct_full(CT_SHAPE(2), 1.0 / 65536)));
    CHECK_INT_EQ(ct_grad_scaler_step(s, opt), 1);
    CHECK(ct_grad_scaler_step(s, opt) == -1);
    CHECK(strstr(ct_last_error(), "step() has already been called since the last update()."));
    ct_clear_error();
    CHECK(ct_grad_scaler_unscale_(s, opt) == -1);
    CHECK(strstr(ct_last_error(), "unscale_() is being called after step()."));
    ct_clear_error();
    CHECK(ct_grad_scaler_update(s) == 0);
    CHECK(ct_grad_scaler_unscale_(s, opt) == 0); /* a new iteration */
    CHECK(ct_grad_scaler_update(s, .new_scale = 1024) == 0);
    CHECK(ct_grad_scaler_get_scale(s) == 1024);
    CHECK_INT_EQ(tracker_of(s), 1); /* new_scale keeps the tracker */
    CHECK(ct_grad_scaler_update(s, .new_scale = -1) == -1);
    ct_clear_error();
    /* an optimizer without gradients */
    ct_tensor *q = ct_zeros(CT_SHAPE(2), .requires_grad = true);
    ct_optim *empty = ct_sgd(&q, 1, .lr = CT_SOME(1));
    CHECK(ct_grad_scaler_step(s, empty) == -1);
    CHECK(strstr(ct_last_error(), "No inf checks were recorded for this optimizer"));
    ct_clear_error();
    CHECK(ct_grad_scaler(.growth_factor = 0.9) == NULL);
    CHECK(strstr(ct_last_error(), "The growth factor must be > 1.0."));
    ct_clear_error();
    CHECK(ct_grad_scaler(.backoff_factor = 1.5) == NULL);
    CHECK(strstr(ct_last_error(), "The backoff factor must be < 1.0."));
    ct_clear_error();
}

TEST(disabled_scaler_passes_through) {
    ct_tensor *p;
    ct_optim *opt = sgd_with_grad(&p, INFINITY);
    ct_grad_scaler *s = ct_grad_scaler(.enabled = false);
    CHECK(!ct_grad_scaler_is_enabled(s));
    CHECK(ct_grad_scaler_scale(s, p) == p);
    CHECK(ct_grad_scaler_unscale_(s, opt) == 0);
    CHECK_INT_EQ(ct_grad_scaler_step(s, opt), 1); /* steps even with an inf */
    CHECK(isinf(ct_item(ct_select(ct_detach(p), 0, 0))));
    CHECK(ct_grad_scaler_update(s) == 0);
    CHECK(ct_grad_scaler_get_scale(s) == 1.0);
    CT_SCOPE { CHECK_INT_EQ(ct_state_dict_len(ct_grad_scaler_state_dict(s)), 0); }
}

TEST(several_optimizers_back_off_once) {
    ct_tensor *p1, *p2;
    ct_optim *o1 = sgd_with_grad(&p1, 1), *o2 = sgd_with_grad(&p2, INFINITY);
    ct_grad_scaler *s = ct_grad_scaler(.growth_interval = 1);
    ct_grad_scaler_scale(s, p1);
    CHECK_INT_EQ(ct_grad_scaler_step(s, o1), 1);
    CHECK_INT_EQ(ct_grad_scaler_step(s, o2), 0);
    CHECK(isnan(ct_item(ct_select(ct_detach(p2), 0, 0))) == false);
    CHECK(ct_grad_scaler_update(s) == 0);
    CHECK(ct_grad_scaler_get_scale(s) == 32768); /* once, not twice */
    /* next iteration: both finite, growth_interval 1 grows */
    ct_set_grad(p2, ct_full(CT_SHAPE(2), 1.0));
    ct_set_grad(p1, ct_full(CT_SHAPE(2), 1.0));
    CHECK_INT_EQ(ct_grad_scaler_step(s, o1), 1);
    CHECK_INT_EQ(ct_grad_scaler_step(s, o2), 1);
    CHECK(ct_grad_scaler_update(s) == 0);
    CHECK(ct_grad_scaler_get_scale(s) == 65536);
}

TEST(state_dict_round_trip_and_validation) {
    ct_grad_scaler *s = ct_grad_scaler(.init_scale = 1024, .growth_factor = 3, .backoff_factor = 0.25,
                                       .growth_interval = 7);
    ct_tensor *p;
    ct_optim *opt = sgd_with_grad(&p, 1);
    for (int i = 0; i < 3; i++) {
        ct_grad_scaler_scale(s, p);
        ct_grad_scaler_step(s, opt);
        ct_grad_scaler_update(s);
    }
    ct_state_dict *sd = ct_grad_scaler_state_dict(s);
    const char *keys[] = {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"};
    const double vals[] = {1024, 3, 0.25, 7, 3};
    CHECK_INT_EQ(ct_state_dict_len(sd), 5);
    for (int k = 0; k < 5; k++) {
        CHECK_STR_EQ(ct_state_dict_key(sd, k), keys[k]);
        CHECK(ct_item(ct_state_dict_value(sd, k)) == vals[k]);
    }
    ct_grad_scaler *t = ct_grad_scaler();
    CHECK(ct_grad_scaler_load_state_dict(t, sd) == 0);
    CHECK(ct_grad_scaler_get_scale(t) == 1024);
    CHECK_INT_EQ(tracker_of(t), 3);
    /* bad values: an error naming the key, nothing changed */
    const struct {
        const char *key;
        double v;
        const char *msg;
    } bad[] = {
        {"scale", NAN, "'scale' is nan, not a positive finite float32 number"},
        {"scale", -2, "'scale' is -2, not a positive finite float32 number"},
        {"scale", 1e39, "'scale' is 1e+39"},
        {"growth_factor", 0.5, "'growth_factor' is 0.5"},
        {"backoff_factor", 1, "'backoff_factor' is 1"},
        {"growth_interval", 2.5, "'growth_interval' is 2.5"},
        {"_growth_tracker", -1, "'_growth_tracker' is -1"},
    };
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        CT_SCOPE_HERE;
        ct_state_dict *d = ct_grad_scaler_state_dict(s);
        ct_state_dict_set(d, bad[b].key, ct_scalar_tensor(bad[b].v, .dtype = CT_F64));
        ct_grad_scaler *u = ct_grad_scaler(.init_scale = 8);
        CHECK(ct_grad_scaler_load_state_dict(u, d) == -1);
        if (!ct_last_error() || !strstr(ct_last_error(), bad[b].msg))
            ct_test_fail(__FILE__, __LINE__, "%s: got \"%s\"", bad[b].msg, ct_last_error());
        ct_clear_error();
        CHECK(ct_grad_scaler_get_scale(u) == 8);
    }
    ct_state_dict_remove(sd, "growth_factor");
    CHECK(ct_grad_scaler_load_state_dict(t, sd) == -1);
    CHECK(strstr(ct_last_error(), "missing key 'growth_factor'"));
    ct_clear_error();
    ct_state_dict *empty = ct_state_dict_new();
    CHECK(ct_grad_scaler_load_state_dict(t, empty) == -1);
    CHECK(strstr(ct_last_error(), "The source state dict is empty, possibly because it was saved "
                                  "from a disabled instance of GradScaler."));
    ct_clear_error();
}

/* ---- training: checkpoints and the scaled loop ------------------------------------ */

/* Micro-batch k of step i: deterministic inputs and targets. */
static void batch(int i, int k, ct_tensor **x, ct_tensor **y) {
    *x = ct_sin(ct_add_scalar(ct_mul_scalar(ct_arange(8 * 4, .dtype = CT_F32), 0.37 + 0.01 * i), k));
    *x = ct_reshape(*x, CT_SHAPE(8, 4));
    *y = ct_cos(ct_sum(*x, .dims = CT_DIMS(1), .keepdim = true));
}

/* One optimizer step over 2 micro-batches: scaled (s given) or plain, the gradients
 * clipped to norm 0.5 (after unscale_).  With `inf_at == i` the first micro-batch's
 * loss is made inf. */
static void train_step(ct_module *m, ct_tensor *const *p, int np, ct_optim *opt, ct_grad_scaler *s,
                       int i, int inf_at) {
    CT_SCOPE {
        ct_zero_grad(opt);
        for (int k = 0; k < 2; k++) {
            ct_tensor *x, *y;
            batch(i, k, &x, &y);
            ct_tensor *loss = ct_div_scalar(ct_mse_loss(ct_forward(m, x), y), 2);
            if (i == inf_at && k == 0) loss = ct_mul_scalar(loss, INFINITY);
            ct_backward(s ? ct_grad_scaler_scale(s, loss) : loss);
        }
        if (s) ct_grad_scaler_unscale_(s, opt);
        ct_clip_grad_norm_(p, np, 0.5);
        if (s) {
            ct_grad_scaler_step(s, opt);
            ct_grad_scaler_update(s);
        } else {
            ct_step(opt);
        }
    }
}

static ct_module *small_net(void) {
    ct_manual_seed(3);
    return ct_sequential(CT_MODULES(ct_nn_linear(4, 6), ct_nn_tanh(), ct_nn_linear(6, 1)));
}

TEST(scaled_loop_with_clipping_and_accumulation_equals_the_float32_loop) {
    ct_module *a = small_net(), *b = small_net();
    ct_tensor *pa[4], *pb[4];
    CHECK_INT_EQ(ct_parameters(a, pa, 4), 4);
    ct_parameters(b, pb, 4);
    ct_optim *oa = ct_adam(pa, 4, .lr = 0.01), *ob = ct_adam(pb, 4, .lr = 0.01);
    /* growth every 3 steps: the scale goes 2^16, 2^17, ... (powers of two, no overflow) */
    ct_grad_scaler *s = ct_grad_scaler(.growth_interval = 3);
    for (int i = 0; i < 8; i++) {
        train_step(a, pa, 4, oa, NULL, i, -1);
        train_step(b, pb, 4, ob, s, i, -1);
    }
    CHECK(ct_grad_scaler_get_scale(s) == 65536.0 * 4);
    /* a power-of-two scale multiplies and divides exactly: the same bits */
    for (int j = 0; j < 4; j++) CHECK(same_bits(pa[j], pb[j]));
}

TEST(checkpoint_resume_is_bit_exact) {
    char path[] = "/tmp/ct_scaler_ckptXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    /* uninterrupted: 10 steps, an overflow at step 3 and 7 */
    ct_module *a = small_net();
    ct_tensor *pa[4];
    ct_parameters(a, pa, 4);
    ct_optim *oa = ct_adam(pa, 4, .lr = 0.01);
    ct_grad_scaler *sa = ct_grad_scaler(.growth_interval = 2, .init_scale = 1024);
    for (int i = 0; i < 10; i++) train_step(a, pa, 4, oa, sa, i, i == 3 || i == 7 ? i : -1);
    /* interrupted after 5: saved, loaded into fresh objects, continued */
    ct_module *b = small_net();
    ct_tensor *pb[4];
    ct_parameters(b, pb, 4);
    ct_optim *ob = ct_adam(pb, 4, .lr = 0.01);
    ct_grad_scaler *sb = ct_grad_scaler(.growth_interval = 2, .init_scale = 1024);
    for (int i = 0; i < 5; i++) train_step(b, pb, 4, ob, sb, i, i == 3 ? i : -1);
    ct_training_state st = {.model = b, .optim = ob, .scaler = sb, .epoch = 0, .step = 5};
    CHECK(ct_checkpoint_save(path, &st) == 0);
    ct_manual_seed(99);
    ct_module *c = ct_sequential(CT_MODULES(ct_nn_linear(4, 6), ct_nn_tanh(), ct_nn_linear(6, 1)));
    ct_tensor *pc[4];
    ct_parameters(c, pc, 4);
    ct_optim *oc = ct_adam(pc, 4, .lr = 0.01);
    ct_grad_scaler *sc = ct_grad_scaler(); /* other settings: the checkpoint's win */
    ct_training_state back = {.model = c, .optim = oc, .scaler = sc};
    CHECK(ct_checkpoint_load(path, &back, NULL) == 0);
    CHECK(ct_grad_scaler_get_scale(sc) == ct_grad_scaler_get_scale(sb));
    CHECK_INT_EQ(tracker_of(sc), tracker_of(sb));
    for (int i = 5; i < 10; i++) train_step(c, pc, 4, oc, sc, i, i == 7 ? i : -1);
    for (int j = 0; j < 4; j++) CHECK(same_bits(pa[j], pc[j]));
    CHECK(ct_grad_scaler_get_scale(sa) == ct_grad_scaler_get_scale(sc));
    CHECK_INT_EQ(tracker_of(sa), tracker_of(sc));
    CHECK(ct_grad_scaler_get_scale(sa) != 1024); /* the trajectory moved */

    /* a damaged scaler entry: an error naming the key, nothing loaded */
    CT_SCOPE {
        ct_metadata m = {0};
        ct_state_dict *sd = ct_load_safetensors(path, .metadata = &m);
        CHECK(sd != NULL);
        ct_state_dict_set(sd, "scaler.scale", ct_scalar_tensor(NAN, .dtype = CT_F64));
        CHECK(ct_save_safetensors(sd, path, &m) == 0);
        ct_metadata_free(&m);
        ct_tensor *w0 = ct_clone(ct_detach(pc[0]));
        double scale0 = ct_grad_scaler_get_scale(sc);
        CHECK(ct_checkpoint_load(path, &back, NULL) == -1);
        CHECK(ct_last_error() && strstr(ct_last_error(), "'scaler.scale' is nan"));
        ct_clear_error();
        CHECK(same_bits(pc[0], w0));
        CHECK(ct_grad_scaler_get_scale(sc) == scale0);
        /* a checkpoint without scaler state, loaded with a scaler: refused */
        ct_state_dict_remove(sd, "scaler.scale");
        ct_state_dict_remove(sd, "scaler.growth_factor");
        ct_state_dict_remove(sd, "scaler.backoff_factor");
        ct_state_dict_remove(sd, "scaler.growth_interval");
        ct_state_dict_remove(sd, "scaler._growth_tracker");
        ct_metadata m2 = {.n = 1, .keys = {"format"}, .values = {"ctorch-checkpoint-1"}};
        CHECK(ct_save_safetensors(sd, path, &m2) == 0);
        CHECK(ct_checkpoint_load(path, &back, NULL) == -1);
        CHECK(ct_last_error() && strstr(ct_last_error(), "The source state dict is empty"));
        ct_clear_error();
        back.scaler = NULL; /* without one it loads */
        CHECK(ct_checkpoint_load(path, &back, NULL) == 0);
    }
    unlink(path);
}

TEST(each_unscaled_gradient_is_reported_to_the_record_hook) {
    ct_tensor *p;
    ct_optim *opt = sgd_with_grad(&p, 2);
    ct_grad_scaler *s = ct_grad_scaler();
    ct_grad_scaler_scale(s, p);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ct_trace_printer *tp = ct_trace_print_begin(f);
    CHECK(ct_grad_scaler_unscale_(s, opt) == 0);
    ct_trace_print_end(tp);
    fclose(f);
    CHECK(text && strstr(text, "amp_non_finite_check_and_unscale(%"));
    free(text);
}
