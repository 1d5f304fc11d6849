/* safetensors files and training checkpoints. */
#define _GNU_SOURCE /* nftw */
#include <stdint.h>
#include <stdlib.h>
#include <ftw.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ct_test.h"
#include "fixtures.h"

static char tmpdir[256];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}
static void remove_tmpdir(void) { nftw(tmpdir, remove_entry, 8, FTW_DEPTH | FTW_PHYS); }

/* A path in this run's temporary directory (removed at exit). */
static const char *tmp_path(const char *name) {
    static char path[512];
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/ct_serialize_XXXXXX");
        CHECK(mkdtemp(tmpdir) != NULL);
        atexit(remove_tmpdir);
    }
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

static unsigned char *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*size + 1);
    if (fread(b, 1, *size, f) != *size) *size = 0;
    fclose(f);
    return b;
}

TEST(round_trip_every_dtype) {
    ct_state_dict *sd = ct_state_dict_new();
    ct_dtype all[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I64, CT_I32, CT_I16, CT_I8, CT_U8, CT_BOOL};
    double v[] = {0, 1, -2, 3, 1, 0};
    char name[32];
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        snprintf(name, sizeof name, "t.%s", ct_dtype_name(all[i]));
        ct_tensor *t = ct_tensor_f64(v, CT_SHAPE(2, 3), .dtype = all[i]);
        if (all[i] == CT_U8) t = ct_abs(t);
        ct_state_dict_set(sd, name, ct_transpose(t, 0, 1)); /* non-contiguous: copied */
    }
    ct_state_dict_set(sd, "scalar", ct_scalar_tensor(4.5));
    ct_state_dict_set(sd, "empty", ct_zeros(CT_SHAPE(0, 7)));
    ct_metadata meta = {.n = 2, .keys = {"epoch", "note"}, .values = {"3", "quote \" and \\ and \xc3\xa9"}};
    CHECK(ct_save_safetensors(sd, tmp_path("all.safetensors"), &meta) == 0);
    ct_metadata got = {0};
    ct_state_dict *back = ct_load_safetensors(tmp_path("all.safetensors"), .metadata = &got);
    CHECK(back != NULL);
    CHECK_INT_EQ(ct_state_dict_len(back), ct_state_dict_len(sd));
    for (int i = 0; back && i < ct_state_dict_len(sd); i++) {
        ct_tensor *a = ct_state_dict_value(sd, i), *b = ct_state_dict_get(back, ct_state_dict_key(sd, i));
        CHECK(b && ct_dtype_of(a) == ct_dtype_of(b));
        CHECK_CLOSE(ct_test_max_diff(a, b), 0, 0);
    }
    CHECK_INT_EQ(got.n, 2);
    CHECK_STR_EQ(got.values[1], "quote \" and \\ and \xc3\xa9");
    ct_metadata_free(&got);
}

TEST(reads_files_written_to_the_specification) {
    fx_file *f = fx_load("safetensors_ref");
    ct_metadata m = {0};
    ct_state_dict *sd = ct_load_safetensors("fixtures/reference.safetensors", .metadata = &m);
    CHECK(sd != NULL);
    const char *keys[] = {"fc1.weight", "fc1.bias", "emb", "bn.num_batches_tracked", "mask", "idx", "scalar", "empty"};
    for (int i = 0; sd && i < 8; i++) {
        ct_tensor *t = ct_state_dict_get(sd, keys[i]);
        CHECK(t != NULL);
        CHECK_CLOSE(ct_test_max_diff(t, fx_get(f, keys[i])), 0, 0);
    }
    CHECK_INT_EQ(ct_dtype_of(ct_state_dict_get(sd, "emb")), CT_F16);
    CHECK_INT_EQ(ct_dtype_of(ct_state_dict_get(sd, "mask")), CT_BOOL);
    CHECK_STR_EQ(m.values[1], "h\xc3\xa9llo");
    ct_metadata_free(&m);
    fx_free(f);
}

/* A small valid file in memory: {"a": F32 [2], "b": I64 []}. */
static size_t make_file(unsigned char *buf, const char *header) {
    uint64_t n = strlen(header);
    memcpy(buf, &n, 8);
    memcpy(buf + 8, header, n);
    float a[2] = {1, 2};
    int64_t b = 7;
    memcpy(buf + 8 + n, a, 8);
    memcpy(buf + 16 + n, &b, 8);
    return 24 + n;
}

#define GOOD "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[8,16]}}"

static void expect_rejected(const char *header, const char *fragment) {
    unsigned char buf[1024];
    size_t n = make_file(buf, header);
    CHECK_ERROR(ct_safetensors_from_buffer(buf, n, (ct_load_file_options){0}), fragment);
}

TEST(hostile_headers_are_rejected) {
    unsigned char buf[1024];
    size_t n = make_file(buf, GOOD);
    CHECK(ct_safetensors_from_buffer(buf, n, (ct_load_file_options){0}) != NULL);
    uint64_t huge = 1ull << 40;
    memcpy(buf, &huge, 8);
    CHECK_ERROR(ct_safetensors_from_buffer(buf, n, (ct_load_file_options){0}), "is beyond the file");
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[4,12]}}", "overlaps another");
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[16,24]}}", "beyond the end of the file");
    expect_rejected("{\"a\":{\"dtype\":\"F24\",\"shape\":[2],\"data_offsets\":[0,8]}}", "unknown dtype \"F24\"");
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", "do not match its dtype and shape");
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", "invalid dimension");
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", "invalid data_offsets");
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "does not end where the last tensor does");
    expect_rejected("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},}", "invalid JSON");
    expect_rejected("{\"\xff\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "invalid UTF-8");
    expect_rejected("{\"a\":1,\"a\":2}", "duplicate key");
    expect_rejected("[1, 2]", "not a JSON object");
    char deep[400];
    memset(deep, '[', 200);
    deep[200] = 0;
    expect_rejected(deep, "nested too deeply");
    CHECK_ERROR(ct_safetensors_from_buffer(buf, 5, (ct_load_file_options){0}), "too short");
    /* A bool that is neither 0 nor 1. */
    const char *hb = "{\"m\":{\"dtype\":\"BOOL\",\"shape\":[16],\"data_offsets\":[0,16]}}";
    n = make_file(buf, hb);
    buf[8 + strlen(hb) + 3] = 2;
    CHECK_ERROR(ct_safetensors_from_buffer(buf, n, (ct_load_file_options){0}), "neither 0 nor 1");
}

TEST(fuzzed_files_never_crash) {
    size_t size = 0;
    unsigned char *orig = read_all("fixtures/reference.safetensors", &size);
    CHECK(orig && size > 100);
    if (!orig) return;
    /* Every truncation fails cleanly. */
    for (size_t n = 0; n < size; n++) CT_SCOPE {
        CHECK(ct_safetensors_from_buffer(orig, n, (ct_load_file_options){0}) == NULL);
        ct_clear_error();
    }
    /* Random byte changes: any result is fine, but no crash, leak or hang (ASan). */
    unsigned char *buf = malloc(size);
    uint64_t s = 12345;
    int accepted = 0;
    for (int iter = 0; iter < 3000; iter++) CT_SCOPE {
        memcpy(buf, orig, size);
        for (int k = 0; k < 1 + iter % 4; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = (size_t)(s >> 33) % size;
            buf[at] = (unsigned char)(s >> 13);
        }
        ct_metadata m = {0};
        ct_state_dict *sd = ct_safetensors_from_buffer(buf, size, (ct_load_file_options){.metadata = &m});
        accepted += sd != NULL;
        ct_metadata_free(&m);
        ct_clear_error();
    }
    CHECK(accepted > 0); /* flips inside tensor data are harmless */
    free(buf);
    free(orig);
}

TEST(failed_save_keeps_the_previous_file) {
    const char *path = tmp_path("keep.safetensors");
    ct_state_dict *sd = ct_state_dict_new();
    ct_state_dict_set(sd, "w", ct_ones(CT_SHAPE(3)));
    CHECK(ct_save_safetensors(sd, path, NULL) == 0);
    size_t before = 0, after = 0;
    free(read_all(path, &before));
    /* A write that fails half way (as on a full disk): a file-size limit. */
    ct_state_dict_set(sd, "big", ct_ones(CT_SHAPE(1 << 20)));
    struct rlimit old;
    getrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = {64 << 10, old.rlim_max};
    setrlimit(RLIMIT_FSIZE, &small);
    CHECK(ct_save_safetensors(sd, path, NULL) == -1);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_DFL);
    ct_clear_error();
    free(read_all(path, &after));
    CHECK_INT_EQ(after, before);
    CHECK(ct_load_safetensors(path) != NULL);
    CHECK_ERROR(ct_save_safetensors(sd, "/nonexistent-dir/x.safetensors", NULL), "cannot create");
    ct_clear_error();
}

/* A tiny model: y = x * w + b over 4 features. */
typedef struct {
    ct_tensor *w, *b;
} affine;
static ct_tensor *affine_forward(ct_module *m, ct_tensor *x) {
    affine *s = ct_module_state(m);
    return ct_add(ct_mul(x, s->w), s->b);
}
static const ct_module_class AFFINE = {.name = "Affine", .forward = affine_forward};
static ct_module *affine_new(void) {
    ct_module *m = ct_module_new(&AFFINE, sizeof(affine));
    affine *s = ct_module_state(m);
    s->w = ct_module_add_parameter(m, "w", ct_ones(CT_SHAPE(4)));
    s->b = ct_module_add_parameter(m, "b", ct_zeros(CT_SHAPE(4)));
    return m;
}

static void train(ct_module *m, ct_optim *opt, ct_scheduler *sched, int steps) {
    for (int i = 0; i < steps; i++) CT_SCOPE {
        ct_tensor *x = ct_randn(CT_SHAPE(8, 4)); /* the default generator: restored too */
        ct_tensor *loss = ct_mean(ct_mul(ct_forward(m, x), ct_forward(m, x)));
        ct_zero_grad(opt);
        ct_backward(loss);
        ct_step(opt);
        ct_sched_step(sched);
    }
}

TEST(resume_continues_bit_for_bit) {
    ct_manual_seed(1);
    ct_module *m = affine_new();
    ct_tensor *ps[2];
    ct_parameters(m, ps, 2);
    ct_optim *opt = ct_adam(ps, 2, .lr = 0.05);
    ct_scheduler *sched = ct_step_lr(opt, 3, 0.5);
    train(m, opt, sched, 5);
    ct_training_state st = {.model = m, .optim = opt, .sched = sched, .epoch = 5, .step = 40,
                            .metric = 0.25, .config = "{\"lr\": 0.05}"};
    CHECK(ct_checkpoint_save(tmp_path("run.safetensors"), &st) == 0);
    train(m, opt, sched, 5);

    ct_manual_seed(99); /* a different stream: the checkpoint must restore it */
    ct_module *m2 = affine_new();
    ct_parameters(m2, ps, 2);
    ct_optim *opt2 = ct_adam(ps, 2, .lr = 0.05);
    ct_scheduler *sched2 = ct_step_lr(opt2, 3, 0.5);
    ct_training_state st2 = {.model = m2, .optim = opt2, .sched = sched2};
    char *config = NULL;
    CHECK(ct_checkpoint_load(tmp_path("run.safetensors"), &st2, &config) == 0);
    CHECK_INT_EQ(st2.epoch, 5);
    CHECK_INT_EQ(st2.step, 40);
    CHECK_STR_EQ(config, "{\"lr\": 0.05}");
    free(config);
    train(m2, opt2, sched2, 5);
    CHECK_CLOSE(ct_test_max_diff(ct_module_get_parameter(m, "w"), ct_module_get_parameter(m2, "w")), 0, 0);
    CHECK_CLOSE(ct_test_max_diff(ct_module_get_parameter(m, "b"), ct_module_get_parameter(m2, "b")), 0, 0);
    CHECK_CLOSE(ct_optim_get_lr(opt2, 0), ct_optim_get_lr(opt, 0), 0);
    CHECK_ERROR(ct_checkpoint_load(tmp_path("all.safetensors"), &st2, NULL), "not a ctorch training checkpoint");
}

TEST(keep_last_n_and_the_best) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s", tmp_path("run"));
    mkdir(dir, 0700);
    ct_module *m = affine_new();
    double metrics[] = {0.5, 0.7, 0.6, 0.8, 0.75};
    int best_returns[] = {1, 1, 0, 1, 0};
    for (int e = 1; e <= 5; e++) {
        ct_training_state st = {.model = m, .epoch = e, .metric = metrics[e - 1]};
        CHECK_INT_EQ(ct_checkpoint_keep(dir, &st, (ct_checkpoint_policy){.keep_last = 2}), best_returns[e - 1]);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/ckpt-000003.safetensors", dir);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "%s/ckpt-000004.safetensors", dir);
    CHECK(access(path, F_OK) == 0);
    CHECK(ct_checkpoint_latest(dir, path, sizeof path) == 0);
    CHECK(strstr(path, "ckpt-000005") != NULL);
    ct_training_state best = {.model = m};
    snprintf(path, sizeof path, "%s/best.safetensors", dir);
    CHECK(ct_checkpoint_load(path, &best, NULL) == 0);
    CHECK_INT_EQ(best.epoch, 4);
    double metric = 0;
    CHECK(ct_checkpoint_best_metric(dir, &metric) == 0);
    CHECK_CLOSE(metric, 0.8, 0);
    CHECK(ct_checkpoint_best_metric(tmp_path("no-such-run"), &metric) == -1);
    CHECK(ct_last_error() == NULL); /* no best yet is not an error */
    CHECK_ERROR(ct_checkpoint_best_metric(dir, NULL), "a place for the metric are required");
}

/* Checkpoints are created like any file (mode 0666 less the umask), not private. */
TEST(checkpoint_files_follow_the_umask) {
    ct_module *m = affine_new();
    ct_training_state st = {.model = m};
    mode_t old = umask(022);
    const char *path = tmp_path("mode.safetensors");
    CHECK(ct_checkpoint_save(path, &st) == 0);
    umask(old);
    struct stat sb;
    CHECK(stat(path, &sb) == 0);
    CHECK_INT_EQ(sb.st_mode & 0777, 0644);
}
