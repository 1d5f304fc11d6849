/* ct_to_string against PyTorch's repr: tests/fixtures/print.txt (written by
 * tests/fixtures/gen_print.py) lists tensors by value and the exact text PyTorch 1.13
 * prints for each; every case must match character for character. */
#include <stdlib.h>

#include "ct_test.h"

static ct_dtype dtype_named(const char *s) {
    static const ct_dtype all[] = {CT_F32, CT_F64, CT_F16, CT_BF16, CT_I64,
                                   CT_I32, CT_I16, CT_U8,  CT_I8,   CT_BOOL};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(ct_dtype_name(all[i]), s)) return all[i];
    return CT_DTYPE_UNSET;
}

/* Splits line at tabs into at most n fields (empty fields kept). */
static int split_tabs(char *line, char **fields, int n) {
    int k = 0;
    fields[k++] = line;
    for (char *p = line; *p && k < n; p++)
        if (*p == '\t') {
            *p = 0;
            fields[k++] = p + 1;
        }
    return k;
}

/* The tensor of one case, built from its values (registered with the scope). */
static ct_tensor *build(ct_dtype dt, const char *shape_s, char *values) {
    ct_shape shape = {0};
    for (const char *p = shape_s; *p;) {
        shape.d[shape.ndim++] = strtoll(p, (char **)&p, 10);
        if (*p == ',') p++;
    }
    int64_t n = 1;
    for (int i = 0; i < shape.ndim; i++) n *= shape.d[i];
    void *buf = malloc(8 * (size_t)(n ? n : 1));
    char *p = values;
    for (int64_t i = 0; i < n; i++) {
        if (dt == CT_F32) ((float *)buf)[i] = strtof(p, &p);
        else if (ct_dtype_is_floating(dt)) ((double *)buf)[i] = strtod(p, &p);
        else ((int64_t *)buf)[i] = strtoll(p, &p, 10);
    }
    ct_dtype src = dt == CT_F32 ? CT_F32 : ct_dtype_is_floating(dt) ? CT_F64 : CT_I64;
    ct_tensor *t = ct_tensor_from(buf, src, shape, .dtype = dt);
    free(buf);
    return t;
}

static char *unescape(char *s) {
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] == 'n') {
            *w++ = '\n';
            r++;
        } else if (*r != '\n') {
            *w++ = *r;
        }
    }
    *w = 0;
    return s;
}

TEST(print_matches_pytorch) {
    FILE *fp = fopen("fixtures/print.txt", "r");
    CHECK(fp != NULL);
    if (!fp) return;
    char *line = NULL;
    size_t cap = 0;
    int cases = 0;
    while (getline(&line, &cap, fp) > 0) {
        if (line[0] == '#') continue;
        char *f[6];
        if (split_tabs(line, f, 6) != 6) {
            ct_test_fail(__FILE__, __LINE__, "malformed line in print.txt: %.40s", line);
            continue;
        }
        const char *name = f[0], *transform = f[3], *expected = unescape(f[5]);
        ct_dtype dt = dtype_named(f[1]);
        bool f64default = !strcmp(transform, "f64default");
        if (f64default) ct_set_default_dtype(CT_F64);
        CT_SCOPE {
            ct_tensor *x = build(dt, f[2], f[4]), *y = x;
            if (!strcmp(transform, "rg") || !strcmp(transform, "add") || !strcmp(transform, "mul"))
                ct_set_requires_grad(x, true);
            if (!strcmp(transform, "add")) y = ct_add(x, ct_zeros_like(x));
            if (!strcmp(transform, "mul")) y = ct_mul(x, ct_ones_like(x));
            if (!strcmp(transform, "t")) y = ct_transpose(x, 0, 1);
            char *got = ct_to_string(y);
            if (!got || strcmp(got, expected))
                ct_test_fail(__FILE__, __LINE__, "case %s:\n--- got:\n%s\n--- expected:\n%s", name,
                             got ? got : "(null)", expected);
            free(got);
        }
        ct_set_default_dtype(CT_F32);
        cases++;
    }
    free(line);
    fclose(fp);
    CHECK(cases >= 40);
}

TEST(print_null_and_cuda_free_paths) {
    CHECK(ct_to_string(NULL) == NULL);
    /* ct_print writes the same text and a newline */
    ct_tensor *t = ct_arange(3);
    char *s = ct_to_string(t);
    CHECK_STR_EQ(s, "tensor([0, 1, 2])");
    free(s);
}
