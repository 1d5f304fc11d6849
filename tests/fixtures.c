#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"
#include "fixtures.h"

typedef struct {
    char *name;
    bool is_int;
    ct_shape shape;
    double *values;
    int64_t numel;
} fx_entry;

struct fx_file {
    fx_entry *items;
    int len, cap;
};

fx_file *fx_load(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "fixtures/%s.fx", name);
    FILE *fp = fopen(path, "r");
    if (!fp) {
        ct_test_fail(__FILE__, __LINE__, "cannot open %s (run tests from tests/)", path);
        return NULL;
    }
    fx_file *f = calloc(1, sizeof *f);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, fp) > 0) {
        if (line[0] == '#' || line[0] == '\n') continue;
        char *save = NULL, *tok = strtok_r(line, " \n", &save);
        fx_entry e = {0};
        e.name = strdup(tok);
        tok = strtok_r(NULL, " \n", &save);
        e.is_int = tok && !strcmp(tok, "i64");
        tok = strtok_r(NULL, " \n", &save);
        e.shape.ndim = tok ? atoi(tok) : 0;
        e.numel = 1;
        for (int d = 0; d < e.shape.ndim; d++) {
            tok = strtok_r(NULL, " \n", &save);
            e.shape.d[d] = tok ? atoll(tok) : 0;
            e.numel *= e.shape.d[d];
        }
        e.values = malloc(sizeof(double) * (size_t)(e.numel + 1));
        for (int64_t i = 0; i < e.numel; i++) {
            tok = strtok_r(NULL, " \n", &save);
            e.values[i] = tok ? strtod(tok, NULL) : NAN;
        }
        if (f->len == f->cap) {
            f->cap = f->cap ? 2 * f->cap : 64;
            f->items = realloc(f->items, sizeof(fx_entry) * (size_t)f->cap);
        }
        f->items[f->len++] = e;
    }
    free(line);
    fclose(fp);
    return f;
}

void fx_free(fx_file *f) {
    if (!f) return;
    for (int i = 0; i < f->len; i++) {
        free(f->items[i].name);
        free(f->items[i].values);
    }
    free(f->items);
    free(f);
}

ct_tensor *fx_get_as(fx_file *f, const char *key, ct_dtype dtype, bool requires_grad) {
    for (int i = 0; f && i < f->len; i++) {
        fx_entry *e = &f->items[i];
        if (strcmp(e->name, key)) continue;
        ct_tensor *t = ct_tensor_from(e->values, CT_F64, e->shape, .dtype = dtype);
        if (t && requires_grad) ct_set_requires_grad(t, true);
        return t;
    }
    ct_test_fail(__FILE__, __LINE__, "fixture \"%s\" not found", key);
    return NULL;
}

bool fx_has(fx_file *f, const char *key) {
    for (int i = 0; f && i < f->len; i++)
        if (!strcmp(f->items[i].name, key)) return true;
    return false;
}

ct_tensor *fx_get(fx_file *f, const char *key) {
    for (int i = 0; f && i < f->len; i++)
        if (!strcmp(f->items[i].name, key))
            return fx_get_as(f, key, f->items[i].is_int ? CT_I64 : CT_F64, false);
    ct_test_fail(__FILE__, __LINE__, "fixture \"%s\" not found", key);
    return NULL;
}
