/* The round trip ctorch -> .pt -> PyTorch -> .pt -> ctorch (tests/pt/roundtrip.sh runs
 * it around tests/pt/roundtrip.py):
 *
 *     pt_torch write DIR   writes DIR/sd.pt, DIR/ckpt.pt, DIR/ckpt_float.pt
 *     pt_torch read DIR    reads what PyTorch saved again (DIR/torch_*.pt) and, when
 *                          present, torchvision's resnet18 (DIR/resnet18.pth) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctorch.h"

static int failures;
#define EXPECT(cond)                                                                  \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "%s:%d: %s failed (%s)\n", __FILE__, __LINE__, #cond,     \
                    ct_last_error() ? ct_last_error() : "no error");                  \
            failures++;                                                               \
        }                                                                             \
    } while (0)

static char path_buf[4096];
static const char *in_dir(const char *dir, const char *name) {
    snprintf(path_buf, sizeof path_buf, "%s/%s", dir, name);
    return path_buf;
}

/* The state dict both sides check: every dtype, a view sharing "w"'s storage. */
static ct_state_dict *make_sd(void) {
    ct_state_dict *sd = ct_state_dict_new();
    ct_tensor *w = ct_mul(ct_reshape(ct_arange(6, .dtype = CT_F32), CT_SHAPE(2, 3)), ct_scalar_tensor(0.5));
    ct_state_dict_set(sd, "w", w);
    ct_state_dict_set(sd, "t", ct_transpose(w, 0, 1));
    ct_state_dict_set(sd, "row", ct_select(w, 0, 1));
    const ct_dtype dts[] = {CT_F64, CT_F16, CT_BF16, CT_I64, CT_I32, CT_I16, CT_I8, CT_U8, CT_BOOL};
    for (size_t i = 0; i < sizeof dts / sizeof *dts; i++)
        ct_state_dict_set(sd, ct_dtype_name(dts[i]), ct_to(ct_arange(4, .dtype = CT_F64), .dtype = dts[i]));
    ct_state_dict_set(sd, "scalar", ct_scalar_tensor(-1.5));
    return sd;
}

static void check_sd(ct_state_dict *got) {
    EXPECT(got != NULL);
    if (!got) return;
    ct_state_dict *want = make_sd();
    EXPECT(ct_state_dict_len(got) == ct_state_dict_len(want));
    for (int i = 0; i < ct_state_dict_len(want); i++) {
        const char *k = ct_state_dict_key(want, i);
        ct_tensor *g = ct_state_dict_get(got, k), *w = ct_state_dict_value(want, i);
        EXPECT(g && ct_dtype_of(g) == ct_dtype_of(w));
        if (g) EXPECT(ct_item(ct_sum(ct_abs(ct_sub(ct_to(g, .dtype = CT_F64), ct_to(w, .dtype = CT_F64))))) == 0);
    }
    ct_tensor *w = ct_state_dict_get(got, "w"), *t = ct_state_dict_get(got, "t"), *row = ct_state_dict_get(got, "row");
    if (w && t && row) { /* still one storage */
        EXPECT(ct_data_ptr(t) == ct_data_ptr(w) && ct_stride(t, 0) == 1);
        EXPECT((float *)ct_data_ptr(row) == (float *)ct_data_ptr(w) + 3);
    }
}

static int write_files(const char *dir) {
    ct_state_dict *sd = make_sd();
    EXPECT(ct_save_pt(sd, in_dir(dir, "sd.pt")) == 0);
    ct_pt_value *c = ct_pt_dict(), *nested = ct_pt_dict(), *l = ct_pt_list(), *inner = ct_pt_dict(), *t = ct_pt_tuple();
    ct_pt_set(c, "model", ct_pt_from_state_dict(sd));
    ct_pt_set(c, "epoch", ct_pt_int(3));
    ct_pt_set(c, "name", ct_pt_str("run"));
    ct_pt_set(c, "big", ct_pt_int(1ll << 40));
    ct_pt_set(c, "neg", ct_pt_int(-7));
    ct_pt_append(l, ct_pt_int(1));
    ct_pt_append(l, ct_pt_int(2));
    ct_pt_set(inner, "b", ct_pt_none());
    ct_pt_append(l, inner);
    ct_pt_append(t, ct_pt_bool(true));
    ct_pt_append(t, ct_pt_bool(false));
    ct_pt_set(nested, "a", l);
    ct_pt_set(nested, "t", t);
    ct_pt_set(c, "nested", nested);
    EXPECT(ct_save_pt_value(c, in_dir(dir, "ckpt.pt")) == 0);
    ct_pt_value *f = ct_pt_dict();
    ct_pt_set(f, "lr", ct_pt_float(0.25));
    ct_pt_set(f, "raw", ct_pt_bytes("\0\xff" "ab", 4));
    EXPECT(ct_save_pt_value(f, in_dir(dir, "ckpt_float.pt")) == 0);
    return failures;
}

static int read_files(const char *dir) {
    check_sd(ct_load_pt_state_dict(in_dir(dir, "torch_sd.pt")));
    ct_pt_value *c = ct_load_pt(in_dir(dir, "torch_ckpt.pt"));
    EXPECT(c != NULL);
    check_sd(ct_pt_state_dict(ct_pt_get(c, "model")));
    EXPECT(ct_pt_as_int(ct_pt_get(c, "epoch")) == 3 && ct_pt_as_int(ct_pt_get(c, "big")) == 1ll << 40);
    EXPECT(ct_pt_as_str(ct_pt_get(c, "name")) && !strcmp(ct_pt_as_str(ct_pt_get(c, "name")), "run"));
    ct_pt_value *nested = ct_pt_get(c, "nested");
    EXPECT(ct_pt_kind_of(ct_pt_get(ct_pt_at(ct_pt_get(nested, "a"), 2), "b")) == CT_PT_NONE);
    EXPECT(ct_pt_as_bool(ct_pt_at(ct_pt_get(nested, "t"), 0)));
    /* torchvision's resnet18, when the set-up could make it */
    FILE *sums = fopen(in_dir(dir, "resnet18_sums.txt"), "r");
    if (sums) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        ct_state_dict *sd = ct_load_pt_state_dict(in_dir(dir, "resnet18.pth"));
        clock_gettime(CLOCK_MONOTONIC, &b);
        EXPECT(sd != NULL);
        char key[256];
        long long numel;
        double sum;
        int n = 0;
        while (sd && fscanf(sums, "%255s %lld %lf", key, &numel, &sum) == 3) {
            ct_tensor *t = ct_state_dict_get(sd, key);
            EXPECT(t && ct_numel(t) == numel);
            if (t) EXPECT(fabs(ct_item(ct_sum(ct_to(t, .dtype = CT_F64))) - sum) <= 1e-9 * (1 + fabs(sum)));
            n++;
        }
        fclose(sums);
        EXPECT(sd && n == ct_state_dict_len(sd) && n == 122);
        printf("resnet18.pth: %d tensors loaded in %.1f ms\n", n,
               (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
    }
    return failures;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: pt_torch write|read DIR\n");
        return 2;
    }
    int rc = 2;
    CT_SCOPE {
        rc = !strcmp(argv[1], "write") ? write_files(argv[2]) : read_files(argv[2]);
    }
    printf("%s: %s\n", argv[1], rc ? "FAILED" : "ok");
    return rc ? 1 : 0;
}
