/* Damaged and foreign files: a checkpoint given to a resume must not train on
 * garbage, a load is all or nothing, a flipped data byte is caught by the tensors'
 * checksums, and every error names the file. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "ct_test.h"

static char dir[64];

static const char *path_of(const char *name) {
    static char path[160];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/ct_damaged_XXXXXX");
        CHECK(mkdtemp(dir) != NULL);
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, n, f) == n);
    if (f) fclose(f);
}

static unsigned char *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n);
    if (b && fread(b, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return b;
}

/* A model (fc: Linear(3, 2)), Adam and StepLR after two steps. */
typedef struct {
    ct_module *model;
    ct_optim *opt;
    ct_scheduler *sched;
} run;

static run run_new(uint64_t seed) {
    ct_manual_seed(seed);
    run r;
    r.model = ct_sequential(CT_MODULES(ct_nn_linear(3, 2)));
    ct_tensor *ps[2];
    ct_parameters(r.model, ps, 2);
    r.opt = ct_adam(ps, 2, .lr = 0.1);
    r.sched = ct_step_lr(r.opt, 1, 0.5);
    for (int i = 0; i < 2; i++) CT_SCOPE {
        ct_zero_grad(r.opt);
        ct_backward(ct_sum(ct_forward(r.model, ct_randn(CT_SHAPE(4, 3)))));
        ct_step(r.opt);
        ct_sched_step(r.sched);
    }
    return r;
}

static ct_training_state state_of(run r) {
    return (ct_training_state){.model = r.model, .optim = r.opt, .sched = r.sched, .epoch = 7, .step = 70};
}

/* The saved checkpoint with one entry replaced (value NULL: metadata key changed). */
static const char *damaged(const char *key, ct_tensor *value, const char *meta_key, const char *meta_value) {
    ct_metadata m = {0};
    ct_state_dict *sd = ct_load_safetensors(path_of("good.safetensors"), .metadata = &m);
    CHECK(sd != NULL);
    if (value) ct_state_dict_set(sd, key, value);
    for (int i = 0; meta_key && i < m.n; i++)
        if (!strcmp(m.keys[i], meta_key)) {
            free((char *)m.values[i]);
            m.values[i] = strdup(meta_value);
        }
    const char *p = path_of("damaged.safetensors");
    CHECK(ct_save_safetensors(sd, p, &m) == 0);
    ct_metadata_free(&m);
    return p;
}

/* Loading p into a fresh run fails naming fragment, and changes nothing. */
static void expect_refused(const char *p, const char *fragment) {
    run r = run_new(5);
    ct_tensor *w = ct_clone(ct_module_get_parameter(r.model, "0.weight"));
    double lr = ct_optim_get_lr(r.opt, 0);
    int64_t last_epoch = ct_sched_last_epoch(r.sched);
    ct_tensor *rng = ct_generator_get_state(ct_default_generator());
    ct_training_state st = state_of(r);
    st.epoch = 1;
    CHECK_ERROR(ct_checkpoint_load(p, &st, NULL), fragment);
    CHECK_CLOSE(ct_test_max_diff(w, ct_module_get_parameter(r.model, "0.weight")), 0, 0);
    CHECK_CLOSE(ct_optim_get_lr(r.opt, 0), lr, 0);
    CHECK_INT_EQ(ct_sched_last_epoch(r.sched), last_epoch);
    CHECK_INT_EQ(st.epoch, 1);
    CHECK(ct_item(ct_sum(ct_ne(rng, ct_generator_get_state(ct_default_generator())))) == 0);
}

TEST(damaged_checkpoints_are_errors_naming_the_key) {
    run r = run_new(1);
    ct_training_state st = state_of(r);
    CHECK(ct_checkpoint_save(path_of("good.safetensors"), &st) == 0);
    run fresh = run_new(2);
    ct_training_state back = state_of(fresh);
    CHECK(ct_checkpoint_load(path_of("good.safetensors"), &back, NULL) == 0);
    CHECK_INT_EQ(back.epoch, 7);

    ct_tensor *w = ct_clone(ct_module_get_parameter(r.model, "0.weight"));
    ct_fill_(ct_select(ct_select(w, 0, 1), 0, 2), NAN);
    expect_refused(damaged("model.0.weight", w, NULL, NULL), "'model.0.weight' has 1 NaN or infinite values");
    ct_tensor *avg = ct_full(CT_SHAPE(2), INFINITY);
    expect_refused(damaged("optim.state.1.exp_avg", avg, NULL, NULL), "'optim.state.1.exp_avg' has 2 NaN");
    const double steps[] = {-5, 1e300, NAN, 2.5};
    for (int i = 0; i < 4; i++)
        expect_refused(damaged("optim.state.0.step", ct_scalar_tensor(steps[i], .dtype = CT_F64), NULL, NULL),
                       "state.0.step'"); /* NaN: as a non-finite value */
    expect_refused(damaged("optim.param_groups.0.lr", ct_scalar_tensor(NAN, .dtype = CT_F64), NULL, NULL),
                   "param_groups.0.lr'");
    expect_refused(damaged("sched.last_epoch", ct_scalar_tensor(1e300, .dtype = CT_F64), NULL, NULL),
                   "ct_sched_load_state_dict: 'last_epoch' is 1e+300, not an epoch count");
    expect_refused(damaged("sched.base_lrs.0", ct_scalar_tensor(INFINITY, .dtype = CT_F64), NULL, NULL),
                   "'base_lrs.0' is inf");
    expect_refused(damaged("rng.default", ct_zeros(CT_SHAPE(3), .dtype = CT_U8), NULL, NULL),
                   "RNG state is wrong size");
    expect_refused(damaged(NULL, NULL, "epoch", "abc"), "metadata 'epoch' is \"abc\", not an integer");
    expect_refused(damaged(NULL, NULL, "epoch", "2147483647"), "metadata 'epoch' is \"2147483647\"");
    expect_refused(damaged(NULL, NULL, "epoch", "12x"), "metadata 'epoch'");
    expect_refused(damaged(NULL, NULL, "step", "-5"), "metadata 'step' is \"-5\"");
    expect_refused(damaged(NULL, NULL, "metric", "0.5 or so"), "metadata 'metric'");
    /* the file is named in every message */
    expect_refused(damaged(NULL, NULL, "step", "-5"), path_of("damaged.safetensors"));
}

TEST(a_flipped_data_byte_fails_its_checksum) {
    ct_state_dict *sd = ct_state_dict_new();
    ct_state_dict_set(sd, "a", ct_arange(10, .dtype = CT_F32));
    ct_state_dict_set(sd, "b", ct_ones(CT_SHAPE(3), .dtype = CT_I64));
    ct_metadata meta = {.n = 1, .keys = {"note"}, .values = {"kept"}};
    const char *p = path_of("crc.safetensors");
    CHECK(ct_save_safetensors(sd, p, &meta) == 0);
    size_t n = 0;
    unsigned char *bytes = read_bytes(p, &n);
    CHECK(bytes && n > 64);
    if (!bytes) return;
    /* the returned metadata is the user's alone */
    ct_metadata m = {0};
    CHECK(ct_load_safetensors(p, .metadata = &m) != NULL);
    CHECK_INT_EQ(m.n, 1);
    CHECK_STR_EQ(m.keys[0], "note");
    ct_metadata_free(&m);
    bytes[n - 30] ^= 0x10; /* inside a's data */
    write_bytes(p, bytes, n);
    CHECK_ERROR(ct_load_safetensors(p), "entry \"a\": the data does not match its checksum");
    CHECK_ERROR(ct_load_safetensors(p), p);
    free(bytes);
}

TEST(files_without_checksums_still_load) {
    const char *header = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    unsigned char buf[128];
    uint64_t hlen = strlen(header);
    memcpy(buf, &hlen, 8);
    memcpy(buf + 8, header, hlen);
    memcpy(buf + 8 + hlen, (float[]){1.5f, -2}, 8);
    write_bytes(path_of("plain.safetensors"), buf, 16 + hlen);
    ct_state_dict *sd = ct_load_safetensors(path_of("plain.safetensors"));
    CHECK(sd != NULL);
    if (sd) CHECK_VALUES(ct_state_dict_get(sd, "x"), 0, 1.5, -2);
}

static char first_message[512];
static void record_first(const char *message, const char *file, int line) {
    (void)file;
    (void)line;
    if (!first_message[0]) snprintf(first_message, sizeof first_message, "%s", message);
}

TEST(errors_name_the_file_as_they_are_raised) {
    /* A handler that aborts sees only the first message: it must name the file. */
    const unsigned char junk[16] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, '{'};
    const char *p = path_of("junk.safetensors");
    write_bytes(p, junk, sizeof junk);
    ct_error_handler old = ct_set_error_handler(record_first);
    first_message[0] = 0;
    CHECK(ct_load_safetensors(p) == NULL);
    ct_set_error_handler(old);
    CHECK(strstr(first_message, p) && strstr(first_message, "header length"));
    CHECK(!strstr(first_message, "buffer"));
    ct_clear_error();
    CHECK_ERROR(ct_safetensors_from_buffer(junk, sizeof junk, (ct_load_file_options){0}), "buffer: header length");
}

TEST(a_pytorch_zip_archive_is_recognised) {
    /* torch.save's format since PyTorch 1.6: a zip archive (local file header "PK\3\4") */
    const unsigned char zip[] = {'P', 'K', 3, 4, 20, 0, 0, 0, 0, 0, 'a', 'r', 'c', 'h', 'i', 'v', 'e',
                                 '/', 'd', 'a', 't', 'a', '.', 'p', 'k', 'l'};
    const char *p = path_of("model.pt");
    write_bytes(p, zip, sizeof zip);
    CHECK_ERROR(ct_load_safetensors(p), "model.pt is a PyTorch zip archive, not safetensors");
    run r = run_new(1);
    ct_training_state st = state_of(r);
    CHECK_ERROR(ct_checkpoint_load(p, &st, NULL), "is a PyTorch zip archive");
}
