/* Writes the seed corpus of the fuzz harnesses into corpus/<harness>/ and the
 * reproducers of the bugs the fuzzers found into reproducers/<harness>/, all small
 * valid-or-nearly-valid files.  Run from tests/fuzz/ after changing a file format:
 *     ../../build/tests/fuzz/fuzz_make_seeds */
#include <math.h>
#include <zlib.h>

#include "fuzz_train.h"

static void put(const char *dir, const char *name, const void *data, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "make_seeds: cannot write %s\n", path);
        exit(1);
    }
}

static void put_text(const char *dir, const char *name, const char *text) { put(dir, name, text, strlen(text)); }

/* The bytes of a file (malloc'd); exits when it cannot be read. */
static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) exit(1);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n + 1);
    if (!b || fread(b, 1, *n, f) != *n) exit(1);
    fclose(f);
    return b;
}

static void put_sd(const char *dir, const char *name, ct_state_dict *sd, const ct_metadata *m) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (ct_save_safetensors(sd, path, m) != 0) exit(1);
}

/* An IDX file: magic, big-endian sizes, then the bytes given (already big-endian). */
static size_t idx(unsigned char *out, int type, int ndim, const uint32_t *dims, const void *data, size_t n) {
    size_t k = 0;
    out[k++] = 0, out[k++] = 0, out[k++] = (unsigned char)type, out[k++] = (unsigned char)ndim;
    for (int d = 0; d < ndim; d++)
        for (int s = 24; s >= 0; s -= 8) out[k++] = (unsigned char)(dims[d] >> s);
    memcpy(out + k, data, n);
    return k + n;
}

static void put_gz(const char *dir, const char *name, const void *data, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    gzFile f = gzopen(path, "wb9");
    if (!f || gzwrite(f, data, (unsigned)n) != (int)n || gzclose(f) != Z_OK) exit(1);
}

/* A checkpoint's tensors with one replaced, or its metadata key changed. */
static void put_damaged(const char *dir, const char *name, const char *ckpt, const char *key, ct_tensor *v,
                        const char *mkey, const char *mvalue) {
    ct_metadata m = {0};
    ct_state_dict *sd = ct_load_safetensors(ckpt, .metadata = &m);
    if (!sd) exit(1);
    if (v) ct_state_dict_set(sd, key, v);
    for (int i = 0; mkey && i < m.n; i++)
        if (!strcmp(m.keys[i], mkey)) {
            free((char *)m.values[i]);
            m.values[i] = strdup(mvalue);
        }
    put_sd(dir, name, sd, &m);
    ct_metadata_free(&m);
}

int main(void) {
    ct_set_error_handler(ct_abort_on_error);
    CT_SCOPE {
        /* safetensors and json */
        ct_state_dict *sd = ct_state_dict_new();
        ct_state_dict_set(sd, "f32", ct_arange(6, .dtype = CT_F32));
        ct_state_dict_set(sd, "f16", ct_ones(CT_SHAPE(2, 2), .dtype = CT_F16));
        ct_state_dict_set(sd, "i64", ct_arange(3));
        ct_state_dict_set(sd, "u8", ct_full(CT_SHAPE(4), 7, .dtype = CT_U8));
        ct_state_dict_set(sd, "flag", ct_ones(CT_SHAPE(1), .dtype = CT_BOOL));
        ct_state_dict_set(sd, "scalar", ct_scalar_tensor(2.5, .dtype = CT_F64));
        ct_metadata m = {.n = 2, .keys = {"format", "note"}, .values = {"pt", "caf\xc3\xa9 \\\"x\\\""}};
        put_sd("corpus/safetensors", "dtypes.safetensors", sd, &m);
        size_t n;
        unsigned char *ref = slurp("../fixtures/reference.safetensors", &n);
        put("corpus/safetensors", "reference.safetensors", ref, n);
        uint64_t hlen;
        memcpy(&hlen, ref, 8);
        put("corpus/json", "reference_header.json", ref + 8, (size_t)hlen);
        free(ref);
        put_text("corpus/json", "values.json",
                 "{\"__metadata__\":{\"k\":\"\\u00e9\\ud83d\\ude00\\n\"},\"a\":{\"dtype\":\"F32\",\"shape\":[],"
                 "\"data_offsets\":[0,0]},\"n\":[-0.5e-3,1E+2,0,true,false,null,[{}]]}");
        /* idx, gz, mnist */
        unsigned char buf[512];
        const unsigned char pixels[12] = {0, 1, 2, 3, 250, 251, 252, 253, 9, 8, 7, 6};
        n = idx(buf, 0x08, 3, (uint32_t[]){3, 2, 2}, pixels, 12);
        put("corpus/idx", "u8_3d.idx", buf, n);
        put_gz("corpus/gz", "u8_3d.idx.gz", buf, n);
        unsigned char mnist[600];
        memcpy(mnist + 2, buf, n);
        mnist[0] = (unsigned char)n, mnist[1] = (unsigned char)(n >> 8);
        size_t ln = idx(mnist + 2 + n, 0x08, 1, (uint32_t[]){3}, (unsigned char[]){1, 0, 9}, 3);
        put("corpus/mnist", "three_images", mnist, 2 + n + ln);
        const unsigned char f32be[8] = {0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0}; /* 1, -2 */
        n = idx(buf, 0x0D, 1, (uint32_t[]){2}, f32be, 8);
        put("corpus/idx", "f32_1d.idx", buf, n);
        const unsigned char i32be[16] = {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x80, 0, 0, 0};
        n = idx(buf, 0x0C, 2, (uint32_t[]){2, 2}, i32be, 16);
        put("corpus/idx", "i32_2d.idx", buf, n);
        put_gz("corpus/gz", "i32_2d.idx.gz", buf, n);
        /* csv: the first byte picks the options (fuzz_csv.c) */
        put_text("corpus/csv", "header_label", "\x03" "a,b,label\n1,2,0\n3.5,-4e2,1\n");
        put_text("corpus/csv", "no_header_u8", "\x06" "1,2,3\n4,5,6\n");
        put_text("corpus/csv", "semicolon_named", "\x61" "x;label;y\n1;0;2\n3;1;4\n");
        put_text("corpus/csv", "no_label", "\x12" "1,2\n3,4\n");
        put_text("reproducers/csv", "label_455_for_uint8", "\x06" "1,2,455\n");
        put_text("reproducers/csv", "label_1e300_for_int64", "\x02" "1,1e300\n");
        put_text("reproducers/csv", "label_nan", "\x02" "1,nan\n2,inf\n");
        /* checkpoint and state dicts */
        fuzz_run r = fuzz_run_get();
        fuzz_train_step(r);
        ct_training_state st = {.model = r.model, .optim = r.opt, .sched = r.sched, .epoch = 3, .step = 30,
                                .metric = 0.5, .config = "{\"lr\": 0.1}"};
        if (ct_checkpoint_save("corpus/checkpoint/trained.safetensors", &st) != 0) exit(1);
        const char *ck = "corpus/checkpoint/trained.safetensors", *rd = "reproducers/checkpoint";
        put_damaged(rd, "step_1e300", ck, "optim.state.0.step", ct_scalar_tensor(1e300, .dtype = CT_F64), NULL, NULL);
        put_damaged(rd, "step_nan", ck, "optim.state.1.step", ct_scalar_tensor(NAN, .dtype = CT_F64), NULL, NULL);
        put_damaged(rd, "step_negative", ck, "optim.state.0.step", ct_scalar_tensor(-5, .dtype = CT_F64), NULL, NULL);
        put_damaged(rd, "last_epoch_1e300", ck, "sched.last_epoch", ct_scalar_tensor(1e300, .dtype = CT_F64), NULL, NULL);
        put_damaged(rd, "weight_nan", ck, "model.0.bias", ct_full(CT_SHAPE(2), NAN), NULL, NULL);
        put_damaged(rd, "rng_short", ck, "rng.default", ct_zeros(CT_SHAPE(3), .dtype = CT_U8), NULL, NULL);
        put_damaged(rd, "epoch_int_max", ck, NULL, NULL, "epoch", "2147483647");
        put_damaged(rd, "epoch_abc", ck, NULL, NULL, "epoch", "abc");
        /* the checkpoint's tensors without its metadata: model., optim., sched. */
        ct_state_dict *all = ct_load_safetensors(ck);
        ct_state_dict_remove(all, "rng.default");
        put_sd("corpus/state_dict", "model_optim_sched.safetensors", all, NULL);
        ct_state_dict_set(all, "optim.state.0.step", ct_scalar_tensor(1e300, .dtype = CT_F64));
        put_sd("reproducers/state_dict", "step_1e300.safetensors", all, NULL);
        ct_state_dict_set(all, "optim.state.0.step", ct_scalar_tensor(NAN, .dtype = CT_F64));
        put_sd("reproducers/state_dict", "step_nan.safetensors", all, NULL);
        ct_state_dict_set(all, "optim.state.0.step", ct_scalar_tensor(1, .dtype = CT_F64));
        ct_state_dict_set(all, "sched.last_epoch", ct_scalar_tensor(1e300, .dtype = CT_F64));
        put_sd("reproducers/state_dict", "last_epoch_1e300.safetensors", all, NULL);

        /* .pt: ctorch's own files, and some of PyTorch's (tests/fixtures/gen_pt.py) */
        ct_state_dict *v = ct_state_dict_new();
        ct_tensor *base = ct_reshape(ct_arange(6, .dtype = CT_F32), CT_SHAPE(2, 3));
        ct_state_dict_set(v, "base", base);
        ct_state_dict_set(v, "t", ct_transpose(base, 0, 1));
        ct_state_dict_set(v, "b", ct_ones(CT_SHAPE(2), .dtype = CT_BOOL));
        if (ct_save_pt(v, "corpus/pt/views.pt") != 0) exit(1);
        ct_pt_value *c = ct_pt_dict(), *l = ct_pt_list();
        ct_pt_append(l, ct_pt_float(0.5));
        ct_pt_append(l, ct_pt_bytes("\xff", 1));
        ct_pt_append(l, ct_pt_none());
        ct_pt_set(c, "list", l);
        ct_pt_set(c, "epoch", ct_pt_int(1ll << 40));
        ct_pt_set(c, "w", ct_pt_tensor(ct_ones(CT_SHAPE(3), .dtype = CT_I64)));
        if (ct_save_pt_value(c, "corpus/pt/tree.pt") != 0) exit(1);
        const char *torch_files[] = {"sd_model.pt", "parameters.pt", "dtypes_legacy.pt", "views_legacy.pt",
                                     "dtypes_big_endian.pt", "evil_os_system.pt"};
        for (size_t i = 0; i < sizeof torch_files / sizeof *torch_files; i++) {
            char path[256];
            snprintf(path, sizeof path, "../fixtures/pt/%s", torch_files[i]);
            unsigned char *b = slurp(path, &n);
            put("corpus/pt", torch_files[i], b, n);
            free(b);
        }

        /* .ctm: traced models, small enough that the harness runs them */
        ct_manual_seed(5);
        ct_module *mlp = ct_sequential(CT_MODULES(ct_nn_linear(4, 6), ct_nn_relu(), ct_nn_linear(6, 3)));
        ct_module *lstm = ct_lstm(3, 4, .num_layers = 2, .batch_first = true);
        ct_module *cnn = ct_sequential(CT_MODULES(ct_nn_conv2d(1, 2, CT_DIMS(3)), ct_nn_batch_norm2d(2), ct_nn_relu(),
                                                  ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_flatten(), ct_nn_linear(8, 2)));
        struct { const char *name; ct_module *m; ct_shape in; } traced[] = {
            {"corpus/ctm/mlp.ctm", mlp, CT_SHAPE(2, 4)},
            {"corpus/ctm/lstm.ctm", lstm, CT_SHAPE(2, 5, 3)},
            {"corpus/ctm/cnn.ctm", cnn, CT_SHAPE(2, 1, 6, 6)},
        };
        for (size_t i = 0; i < sizeof traced / sizeof *traced; i++) {
            ct_module_eval(traced[i].m);
            ct_tensor *x = ct_randn(traced[i].in);
            if (ct_graph_save(ct_trace(traced[i].m, &x, 1), traced[i].name) != 0) exit(1);
        }
    }
    printf("seeds written\n");
    return 0;
}
