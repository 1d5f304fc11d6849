/* Master weights (.master_weights = true): float16/bfloat16 parameters trained through
 * float32 master copies (Note [Master weights] in src/optim/optimizer.c). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct_test.h"

/* a and b hold the same values, bit for bit (every dtype here widens exactly). */
static bool same_bits(const ct_tensor *a, const ct_tensor *b) {
    if (!a || !b || ct_numel(a) != ct_numel(b)) return false;
    double *x = ct_test_values(a), *y = ct_test_values(b);
    bool same = x && y && !memcmp(x, y, sizeof *x * (size_t)ct_numel(a));
    free(x);
    free(y);
    return same;
}

/* t rounded to dt (to nearest even, as a step rounds the master). */
static ct_tensor *rounded(ct_tensor *t, ct_dtype dt) {
    return ct_to(ct_detach(t), .dtype = dt);
}

static const char *const CONFIGS[] = {"sgd_momentum", "sgd_nesterov", "adam", "adam_amsgrad",
                                      "adamw", "rmsprop_centered", "rmsprop_momentum", "adagrad"};
enum { N_CONFIGS = sizeof CONFIGS / sizeof CONFIGS[0] };

/* Configuration i over params[0..n-1], with or without master weights. */
static ct_optim *config(int i, ct_tensor *const *p, int n, bool master) {
    switch (i) {
    case 0: return ct_sgd(p, n, .lr = CT_SOME(0.05), .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01, .master_weights = master);
    case 1: return ct_sgd(p, n, .lr = CT_SOME(0.05), .momentum = 0.9, .nesterov = true, .master_weights = master);
    case 2: return ct_adam(p, n, .lr = 1e-2, .master_weights = master);
    case 3: return ct_adam(p, n, .lr = 1e-2, .amsgrad = true, .weight_decay = CT_SOME(0.1), .maximize = true, .master_weights = master);
    case 4: return ct_adamw(p, n, .lr = 1e-2, .weight_decay = CT_SOME(0.1), .master_weights = master);
    case 5: return ct_rmsprop(p, n, .lr = 1e-2, .centered = true, .momentum = 0.9, .weight_decay = 0.01, .master_weights = master);
    case 6: return ct_rmsprop(p, n, .lr = 1e-2, .momentum = 0.5, .alpha = CT_SOME(0.95), .master_weights = master);
    case 7: return ct_adagrad(p, n, .lr = 0.1, .lr_decay = 0.01, .weight_decay = 0.01, .initial_accumulator_value = 0.1, .master_weights = master);
    }
    return NULL;
}

/* A small MLP (4 parameters), initialised from seed, converted to dt. */
static ct_module *mlp(uint64_t seed, ct_dtype dt) {
    ct_manual_seed(seed);
    ct_module *m = ct_sequential(CT_MODULES(ct_nn_linear(5, 7), ct_nn_tanh(), ct_nn_linear(7, 3)));
    if (dt != CT_F32) CHECK(ct_module_to(m, .dtype = dt) == 0);
    return m;
}

/* Batch t of the training data, in dt. */
static void batch(int t, ct_dtype dt, ct_tensor **x, ct_tensor **y) {
    ct_generator *g = ct_generator_new(1000 + (uint64_t)t);
    *x = ct_to(ct_randn(CT_SHAPE(6, 5), .generator = g), .dtype = dt);
    *y = ct_to(ct_randn(CT_SHAPE(6, 3), .generator = g), .dtype = dt);
}

/* One training step of m on batch t: forward, MSE loss, backward, opt's step. */
static void train_step(ct_module *m, ct_optim *opt, int t, ct_dtype dt) {
    CT_SCOPE {
        ct_tensor *x, *y;
        batch(t, dt, &x, &y);
        ct_zero_grad(opt);
        CHECK(ct_backward(ct_mse_loss(ct_forward(m, x), y)) == 0);
        CHECK(ct_step(opt) == 0);
    }
}

/* The master copy of parameter i in opt's state dict (NULL if none); the scope's. */
static ct_tensor *master_of(ct_optim *opt, int i) {
    char key[64];
    snprintf(key, sizeof key, "state.%d.master", i);
    return ct_state_dict_get(ct_optim_state_dict(opt), key);
}

/* A reduced MLP trained with master weights is a float32 model trained on the gradients
 * of the reduced forward (which uses the masters rounded): the master equals the float32
 * optimizer's parameter, bit for bit, its state equals the float32 state, and the model's
 * parameter is the master rounded, for every optimizer. */
TEST(master_is_the_float32_update_of_the_reduced_gradients) {
    const ct_dtype dts[] = {CT_BF16, CT_F16};
    for (int d = 0; d < 2; d++)
        for (int c = 0; c < N_CONFIGS; c++) CT_SCOPE {
            ct_module *m = mlp(7, dts[d]);
            ct_tensor *p[4], *ref[4];
            CHECK_INT_EQ(ct_parameters(m, p, 4), 4);
            ct_tensor *p0 = ct_clone(ct_detach(p[0]));
            for (int i = 0; i < 4; i++) {
                ref[i] = ct_to(ct_detach(p[i]), .dtype = CT_F32);
                ct_set_requires_grad(ref[i], true);
            }
            ct_optim *opt = config(c, p, 4, true), *opt32 = config(c, ref, 4, false);
            for (int t = 0; t < 8; t++) {
                train_step(m, opt, t, dts[d]);
                for (int i = 0; i < 4; i++) ct_set_grad(ref[i], ct_to(ct_grad(p[i]), .dtype = CT_F32));
                CHECK(ct_step(opt32) == 0);
                ct_state_dict *sd = ct_optim_state_dict(opt), *sd32 = ct_optim_state_dict(opt32);
                for (int i = 0; i < 4; i++) {
                    ct_tensor *master = master_of(opt, i);
                    CHECK(master && ct_dtype_of(master) == CT_F32);
                    if (!same_bits(master, ref[i]) || !same_bits(p[i], rounded(master, dts[d])) ||
                        ct_dtype_of(p[i]) != dts[d])
                        ct_test_fail(__FILE__, __LINE__, "%s %s step %d: parameter %d off",
                                     CONFIGS[c], ct_dtype_name(dts[d]), t, i);
                }
                CHECK_INT_EQ(ct_state_dict_len(sd), ct_state_dict_len(sd32) + 4);
                for (int k = 0; k < ct_state_dict_len(sd32); k++) {
                    const char *key = ct_state_dict_key(sd32, k);
                    ct_tensor *got = ct_state_dict_get(sd, key);
                    if (!got || ct_dtype_of(got) != ct_dtype_of(ct_state_dict_value(sd32, k)) ||
                        !same_bits(got, ct_state_dict_value(sd32, k)))
                        ct_test_fail(__FILE__, __LINE__, "%s %s step %d: %s off", CONFIGS[c],
                                     ct_dtype_name(dts[d]), t, key);
                }
            }
            CHECK(!same_bits(p[0], p0)); /* it trained */
        }
}

/* An update below half an ulp of the weight (lr * grad = 1e-3 on 1.0 in bfloat16,
 * whose ulp there is 2^-7; 1e-4 in float16, ulp 2^-10) is lost in the reduced dtype
 * but accumulates in the master until it moves the parameter. */
TEST(updates_below_half_an_ulp_accumulate_in_the_master) {
    const ct_dtype dts[] = {CT_BF16, CT_F16};
    const double lrs[] = {1e-3, 1e-4};
    for (int d = 0; d < 2; d++) CT_SCOPE {
        ct_tensor *plain = ct_ones(CT_SHAPE(3), .dtype = dts[d], .requires_grad = true);
        ct_tensor *kept = ct_ones(CT_SHAPE(3), .dtype = dts[d], .requires_grad = true);
        ct_tensor *ref = ct_ones(CT_SHAPE(3), .requires_grad = true);
        ct_optim *o_plain = ct_sgd(&plain, 1, .lr = CT_SOME(lrs[d]));
        ct_optim *o_kept = ct_sgd(&kept, 1, .lr = CT_SOME(lrs[d]), .master_weights = true);
        ct_optim *o_ref = ct_sgd(&ref, 1, .lr = CT_SOME(lrs[d]));
        int moved_at = -1;
        for (int t = 1; t <= 50; t++) CT_SCOPE {
            ct_set_grad(plain, ct_ones(CT_SHAPE(3), .dtype = dts[d]));
            ct_set_grad(kept, ct_ones(CT_SHAPE(3), .dtype = dts[d]));
            ct_set_grad(ref, ct_ones(CT_SHAPE(3)));
            CHECK(ct_step(o_plain) == 0 && ct_step(o_kept) == 0 && ct_step(o_ref) == 0);
            CHECK(same_bits(master_of(o_kept, 0), ref));
            CHECK(same_bits(kept, rounded(ref, dts[d])));
            if (moved_at < 0 && ct_item(ct_select(kept, 0, 0)) != 1) moved_at = t;
        }
        CHECK_VALUES(plain, 0, 1, 1, 1); /* every update rounded away */
        /* 1 - t * lr rounds below 1 once t * lr passes half the ulp below 1 (2^-9 and
         * 2^-12): the 2nd (bfloat16) / 3rd (float16) step */
        CHECK_INT_EQ(moved_at, d == 0 ? 2 : 3);
        CHECK_CLOSE(ct_item(ct_select(master_of(o_kept, 0), 0, 0)), 1 - 50 * lrs[d], 1e-6);
        CHECK(ct_item(ct_select(kept, 0, 0)) < 1 - 40 * lrs[d]);
    }
}

/* Without the option a reduced parameter's state stays in its dtype and no master is
 * kept; float32 and float64 parameters beside reduced ones step as the float32 /
 * float64 optimizer steps them, with no master, in one optimizer. */
TEST(only_reduced_parameters_keep_a_master) {
    CT_SCOPE {
        ct_tensor *p = ct_randn(CT_SHAPE(4), .dtype = CT_BF16, .requires_grad = true);
        ct_optim *o = ct_adam(&p, 1, .lr = 0.1);
        ct_set_grad(p, ct_ones(CT_SHAPE(4), .dtype = CT_BF16));
        CHECK(ct_step(o) == 0);
        ct_state_dict *sd = ct_optim_state_dict(o);
        CHECK(ct_state_dict_get(sd, "state.0.master") == NULL);
        CHECK(ct_dtype_of(ct_state_dict_get(sd, "state.0.exp_avg")) == CT_BF16);
    }
    for (int c = 0; c < N_CONFIGS; c++) CT_SCOPE {
        ct_manual_seed(3);
        ct_tensor *p[3] = {ct_randn(CT_SHAPE(2, 3), .requires_grad = true),
                           ct_randn(CT_SHAPE(5), .dtype = CT_BF16, .requires_grad = true),
                           ct_randn(CT_SHAPE(3), .dtype = CT_F64, .requires_grad = true)};
        ct_tensor *q[3], *r32;
        for (int i = 0; i < 3; i++) {
            q[i] = ct_clone(ct_detach(p[i]));
            ct_set_requires_grad(q[i], true);
        }
        r32 = ct_to(ct_detach(p[1]), .dtype = CT_F32);
        ct_set_requires_grad(r32, true);
        ct_tensor *refs[3] = {q[0], r32, q[2]};
        ct_optim *mixed = config(c, p, 3, true), *plain = config(c, refs, 3, false);
        for (int t = 0; t < 5; t++) {
            ct_generator *g = ct_generator_new(50 + (uint64_t)t);
            for (int i = 0; i < 3; i++) {
                ct_tensor *gr = ct_to(ct_randn(ct_shape_of(p[i]), .generator = g), .dtype = ct_dtype_of(p[i]));
                ct_set_grad(p[i], gr);
                ct_set_grad(refs[i], ct_to(gr, .dtype = ct_dtype_of(refs[i])));
            }
            CHECK(ct_step(mixed) == 0 && ct_step(plain) == 0);
        }
        CHECK(same_bits(p[0], q[0]) && ct_dtype_of(p[0]) == CT_F32);
        CHECK(same_bits(p[2], q[2]) && ct_dtype_of(p[2]) == CT_F64);
        CHECK(same_bits(p[1], rounded(r32, CT_BF16)) && ct_dtype_of(p[1]) == CT_BF16);
        CHECK(master_of(mixed, 0) == NULL && master_of(mixed, 2) == NULL);
        CHECK(same_bits(master_of(mixed, 1), r32));
        ct_state_dict *sd = ct_optim_state_dict(mixed);
        for (int k = 0; k < ct_state_dict_len(sd); k++) {
            const char *key = ct_state_dict_key(sd, k);
            ct_dtype want = !strncmp(key, "state.2.", 8) ? CT_F64 : CT_F32;
            if (!strncmp(key, "state.", 6) && !strstr(key, ".step") &&
                ct_dtype_of(ct_state_dict_value(sd, k)) != want)
                ct_test_fail(__FILE__, __LINE__, "%s: %s is %s", CONFIGS[c], key,
                             ct_dtype_name(ct_dtype_of(ct_state_dict_value(sd, k))));
        }
    }
}

/* The state dict carries the masters: an optimizer loaded from it continues bit for bit. */
TEST(state_dict_round_trip_resumes_exactly) {
    for (int c = 0; c < N_CONFIGS; c++) CT_SCOPE {
        ct_module *a = mlp(11, CT_BF16), *b = mlp(11, CT_BF16);
        ct_tensor *pa[4], *pb[4];
        ct_parameters(a, pa, 4);
        ct_parameters(b, pb, 4);
        ct_optim *oa = config(c, pa, 4, true), *ob = config(c, pb, 4, true);
        for (int t = 0; t < 4; t++) train_step(a, oa, t, CT_BF16);
        CHECK(ct_load_state_dict(b, ct_module_state_dict(a)) == 0);
        CHECK(ct_optim_load_state_dict(ob, ct_optim_state_dict(oa)) == 0);
        for (int t = 4; t < 8; t++) {
            train_step(a, oa, t, CT_BF16);
            train_step(b, ob, t, CT_BF16);
        }
        for (int i = 0; i < 4; i++) {
            if (!same_bits(pa[i], pb[i]) || !same_bits(master_of(oa, i), master_of(ob, i)))
                ct_test_fail(__FILE__, __LINE__, "%s: parameter %d differs after resume", CONFIGS[c], i);
        }
    }
}

/* Which parameters of a checkpointed run in dt, for the resume test. */
static void run_steps(ct_module *m, ct_optim *o, int from, int to, ct_dtype dt) {
    for (int t = from; t < to; t++) train_step(m, o, t, dt);
}

/* A checkpoint keeps the masters: a resumed bfloat16 / float16 run is the uninterrupted
 * run, bit for bit, and a damaged master is refused with nothing loaded. */
TEST(checkpoint_resume_is_bit_exact_and_checks_masters) {
    char path[] = "/tmp/ct_master_ckptXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    const ct_dtype dts[] = {CT_BF16, CT_F16};
    for (int d = 0; d < 2; d++) CT_SCOPE {
        ct_module *a = mlp(21, dts[d]), *b = mlp(21, dts[d]), *c = mlp(99, dts[d]);
        ct_tensor *pa[4], *pb[4], *pc[4];
        ct_parameters(a, pa, 4);
        ct_parameters(b, pb, 4);
        ct_parameters(c, pc, 4);
        ct_optim *oa = ct_adamw(pa, 4, .lr = 1e-2, .master_weights = true);
        ct_optim *ob = ct_adamw(pb, 4, .lr = 1e-2, .master_weights = true);
        ct_optim *oc = ct_adamw(pc, 4, .lr = 1e-2, .master_weights = true);
        run_steps(a, oa, 0, 10, dts[d]);
        run_steps(b, ob, 0, 5, dts[d]);
        ct_training_state st = {.model = b, .optim = ob, .epoch = 0, .step = 5};
        CHECK(ct_checkpoint_save(path, &st) == 0);
        run_steps(c, oc, 0, 2, dts[d]); /* state of its own, to be replaced */
        ct_training_state back = {.model = c, .optim = oc};
        CHECK(ct_checkpoint_load(path, &back, NULL) == 0);
        run_steps(c, oc, 5, 10, dts[d]);
        for (int i = 0; i < 4; i++) {
            CHECK(same_bits(pa[i], pc[i]));
            CHECK(same_bits(master_of(oa, i), master_of(oc, i)));
        }

        /* a NaN in a master: the checkpoint is refused, the model and optimizer unchanged */
        ct_metadata m = {0};
        ct_state_dict *sd = ct_load_safetensors(path, .metadata = &m);
        CHECK(sd != NULL);
        ct_tensor *good = ct_state_dict_get(sd, "optim.state.2.master");
        CHECK(good != NULL && ct_dtype_of(good) == CT_F32);
        ct_tensor *bad = ct_clone(good);
        CT_NO_GRAD { ct_fill_(ct_select(bad, 0, 1), NAN); }
        ct_state_dict_set(sd, "optim.state.2.master", bad);
        CHECK(ct_save_safetensors(sd, path, &m) == 0);
        ct_metadata_free(&m);
        ct_tensor *w0 = ct_clone(ct_detach(pc[2])), *m0 = ct_clone(master_of(oc, 2));
        CHECK(ct_checkpoint_load(path, &back, NULL) == -1);
        CHECK(ct_last_error() && strstr(ct_last_error(), "'optim.state.2.master'") &&
              strstr(ct_last_error(), "NaN or infinite"));
        ct_clear_error();
        CHECK(same_bits(pc[2], w0) && same_bits(master_of(oc, 2), m0));
    }
    unlink(path);
}

/* ct_optim_load_state_dict refuses a master that a step could not have made (not
 * finite, not float32, not the parameter's shape, for a parameter or optimizer that
 * keeps none) and changes nothing when it does. */
TEST(load_refuses_a_damaged_master) {
    ct_module *m = mlp(5, CT_BF16);
    ct_tensor *p[4];
    ct_parameters(m, p, 4);
    ct_optim *o = ct_adam(p, 4, .lr = 1e-2, .master_weights = true);
    run_steps(m, o, 0, 3, CT_BF16);
    ct_state_dict *saved = ct_optim_state_dict(o); /* shares the live state */
    ct_tensor *before[4];
    for (int i = 0; i < 4; i++) before[i] = ct_clone(master_of(o, i));
    ct_tensor *exp_avg0 = ct_clone(ct_state_dict_get(saved, "state.0.exp_avg"));
    /* parameter 1 is the first layer's bias, [7] */
    ct_tensor *good = ct_state_dict_get(saved, "state.1.master");
    CHECK(good && ct_shape_of(good).ndim == 1 && ct_shape_of(good).d[0] == 7);
    ct_tensor *nan = ct_clone(good), *inf = ct_clone(good);
    CT_NO_GRAD {
        ct_fill_(ct_select(nan, 0, 3), NAN);
        ct_fill_(ct_select(inf, 0, 0), -INFINITY);
    }
    struct {
        ct_tensor *value;
        const char *error;
    } cases[] = {
        {nan, "'state.1.master' has 1 NaN or infinite values"},
        {inf, "'state.1.master' has 1 NaN or infinite values"},
        {ct_to(good, .dtype = CT_BF16), "'state.1.master' is bfloat16, a master copy is float32"},
        {ct_to(good, .dtype = CT_F64), "'state.1.master' is float64, a master copy is float32"},
        {ct_reshape(ct_clone(good), CT_SHAPE(7, 1)),
         "'state.1.master' has shape [7, 1], parameter 1 has shape [7]"},
    };
    for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) CT_SCOPE {
        /* a copy with another entry changed too: a refused load changes neither */
        ct_state_dict *sd = ct_state_dict_new();
        for (int i = 0; i < ct_state_dict_len(saved); i++)
            ct_state_dict_set(sd, ct_state_dict_key(saved, i), ct_clone(ct_state_dict_value(saved, i)));
        CT_NO_GRAD { ct_fill_(ct_state_dict_get(sd, "state.0.exp_avg"), 5); }
        ct_state_dict_set(sd, "state.1.master", cases[k].value);
        CHECK_ERROR(ct_optim_load_state_dict(o, sd), cases[k].error);
        for (int i = 0; i < 4; i++) CHECK(same_bits(master_of(o, i), before[i]));
        CHECK(same_bits(ct_state_dict_get(ct_optim_state_dict(o), "state.0.exp_avg"), exp_avg0));
    }
    /* a master where none is kept: a float32 parameter, or no .master_weights */
    CT_SCOPE {
        ct_tensor *w = ct_randn(CT_SHAPE(7), .requires_grad = true);
        ct_optim *o32 = ct_adam(&w, 1, .lr = 1e-2, .master_weights = true);
        ct_state_dict *sd = ct_state_dict_new();
        ct_state_dict_set(sd, "state.0.master", ct_clone(good));
        CHECK_ERROR(ct_optim_load_state_dict(o32, sd), "'state.0.master' does not fit Adam's parameter 0");
        ct_optim *plain = ct_adam(p, 4, .lr = 1e-2);
        CHECK_ERROR(ct_optim_load_state_dict(plain, saved), "a master copy is kept only with .master_weights = true");
    }
    /* the undamaged state loads */
    CHECK(ct_optim_load_state_dict(o, saved) == 0);
}

/* A state dict without masters (from an optimizer without the option) loaded into one
 * with it: the old masters are dropped, the buffers widened to float32, and the next
 * step makes each master afresh from the parameter: it is the float32 optimizer's step
 * from the parameter widened, with the loaded state widened. */
TEST(state_without_masters_starts_them_from_the_parameters) {
    ct_module *m = mlp(8, CT_BF16);
    ct_tensor *p[4], *ref[4];
    ct_parameters(m, p, 4);
    ct_optim *plain = ct_sgd(p, 4, .lr = CT_SOME(0.1), .momentum = 0.9);
    ct_optim *kept = ct_sgd(p, 4, .lr = CT_SOME(0.1), .momentum = 0.9, .master_weights = true);
    run_steps(m, kept, 0, 2, CT_BF16);
    run_steps(m, plain, 2, 4, CT_BF16); /* moves the parameters away from kept's masters */
    CHECK(!same_bits(p[0], rounded(master_of(kept, 0), CT_BF16)));
    ct_state_dict *plain_sd = ct_optim_state_dict(plain);
    CHECK(ct_optim_load_state_dict(kept, plain_sd) == 0);
    CHECK(master_of(kept, 0) == NULL);
    CHECK(ct_dtype_of(ct_state_dict_get(ct_optim_state_dict(kept), "state.0.momentum_buffer")) == CT_F32);
    for (int i = 0; i < 4; i++) {
        ref[i] = ct_to(ct_detach(p[i]), .dtype = CT_F32);
        ct_set_requires_grad(ref[i], true);
    }
    ct_optim *o32 = ct_sgd(ref, 4, .lr = CT_SOME(0.1), .momentum = 0.9);
    CHECK(ct_optim_load_state_dict(o32, plain_sd) == 0);
    run_steps(m, kept, 4, 5, CT_BF16);
    for (int i = 0; i < 4; i++) ct_set_grad(ref[i], ct_to(ct_grad(p[i]), .dtype = CT_F32));
    CHECK(ct_step(o32) == 0);
    for (int i = 0; i < 4; i++) {
        CHECK(same_bits(master_of(kept, i), ref[i]));
        CHECK(same_bits(p[i], rounded(ref[i], CT_BF16)));
    }
}

/* A model converted after its optimizer's state was made: the step refuses, rather than
 * reading the state as another dtype. */
TEST(step_refuses_state_of_another_dtype) {
    ct_module *m = mlp(4, CT_BF16);
    ct_tensor *p[4];
    ct_parameters(m, p, 4);
    ct_optim *kept = ct_adam(p, 4, .lr = 1e-2, .master_weights = true);
    ct_optim *plain = ct_adam(p, 4, .lr = 1e-2);
    run_steps(m, kept, 0, 1, CT_BF16);
    run_steps(m, plain, 0, 1, CT_BF16);
    CHECK(ct_module_to(m, .dtype = CT_F32) == 0);
    CT_SCOPE {
        ct_tensor *x, *y;
        batch(1, CT_F32, &x, &y);
        CHECK(ct_backward(ct_mse_loss(ct_forward(m, x), y)) == 0);
        CHECK_ERROR(ct_step(kept), "Adam's state for a parameter is not float32");
        CHECK_ERROR(ct_step(plain), "Adam's state for a parameter is not float32");
    }
}
