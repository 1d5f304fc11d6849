/* The ModuleInfo rows of tests/moduleinfo.def: every nn module constructor of the public
 * headers has a row, and each row's module runs forward and backward on the cpu, gives
 * the same outputs with 1 and 3 threads and after a state dict round trip, and gives
 * the cpu's shapes and dtypes on the meta device without allocating. */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"

enum { MULTI = 1, NO_META = 2, EXEMPT = 4, ATTENTION = 8 };
#define MAX_IO 8

static ct_tensor *R_(ct_shape s) { return ct_randn(s); }
static ct_tensor *P_(ct_shape s) { return ct_rand(s); }
static ct_tensor *S_(ct_shape s) { return ct_sign(ct_randn(s)); }
#define R(...) R_(CT_SHAPE(__VA_ARGS__))
#define P(...) P_(CT_SHAPE(__VA_ARGS__))
#define S(...) S_(CT_SHAPE(__VA_ARGS__))
#define I(high, ...) ct_randint(0, high, CT_SHAPE(__VA_ARGS__))
#define OI_ARGS_(...) __VA_ARGS__

#define MODULEINFO(name, ctor, n_in, inputs, flags, reason)                                        \
    static ct_module *make_##name(void) { return ctor; }                                           \
    static void inputs_##name(ct_tensor **in) {                                                    \
        ct_tensor *t[] = {NULL, OI_ARGS_ inputs};                                                  \
        for (size_t i = 1; i < sizeof t / sizeof t[0] && i <= MAX_IO; i++) in[i - 1] = t[i];       \
    }
#include "moduleinfo.def"
#undef MODULEINFO

typedef struct {
    const char *name;
    ct_module *(*make)(void);
    void (*inputs)(ct_tensor **in);
    int n_in;
    unsigned flags;
    const char *reason;
} module_row;

static const module_row ROWS[] = {
#define MODULEINFO(name, ctor, n_in, inputs, flags, reason)                                        \
    {#name, make_##name, inputs_##name, n_in, flags, reason},
#include "moduleinfo.def"
#undef MODULEINFO
};
#define N_ROWS (int)(sizeof ROWS / sizeof ROWS[0])

static const module_row *row_of(const char *name) {
    for (int i = 0; i < N_ROWS; i++)
        if (!strcmp(ROWS[i].name, name)) return &ROWS[i];
    return NULL;
}

/* The module's outputs (seeded: dropout draws the same mask each time); -1 on error. */
static int forward(ct_module *m, const module_row *r, ct_tensor **in, ct_tensor **out) {
    ct_manual_seed(5);
    if (r->flags & ATTENTION) {
        ct_attention_result a = ct_attention(m, in[0], in[1], in[2]);
        out[0] = a.output, out[1] = a.weights;
        return a.output && a.weights ? 2 : -1;
    }
    if (r->flags & MULTI) return ct_forward_multi(m, r->n_in, in, out, MAX_IO);
    out[0] = ct_forward(m, in[0]);
    return out[0] ? 1 : -1;
}

static bool same_geometry(const ct_tensor *a, const ct_tensor *b) {
    if (!a || !b || ct_ndim(a) != ct_ndim(b) || ct_dtype_of(a) != ct_dtype_of(b)) return false;
    for (int d = 0; d < ct_ndim(a); d++)
        if (ct_size(a, d) != ct_size(b, d)) return false;
    return true;
}

static void check_row(const module_row *r) {
    CT_SCOPE_HERE;
    char what[128];
    ct_manual_seed(1);
    ct_module *m = r->make();
    ct_tensor *in[MAX_IO], *one[MAX_IO], *three[MAX_IO], *again[MAX_IO], *meta[MAX_IO];
    ct_manual_seed(2);
    r->inputs(in);
    if (!m) {
        ct_test_fail(__FILE__, __LINE__, "%s: the constructor failed: %s", r->name,
                     ct_last_error());
        return;
    }
    int saved = ct_get_num_threads();
    ct_set_num_threads(1);
    int n = forward(m, r, in, one);
    ct_set_num_threads(3);
    int n3 = forward(m, r, in, three);
    ct_set_num_threads(saved);
    if (n <= 0 || n3 != n) {
        ct_test_fail(__FILE__, __LINE__, "%s: forward failed: %s", r->name, ct_last_error());
        return;
    }
    for (int k = 0; k < n; k++) {
        snprintf(what, sizeof what, "%s: output %d with 3 threads against 1", r->name, k);
        ct_test_check_close(__FILE__, __LINE__, what, three[k], one[k], (ct_test_tol){0});
    }
    /* backward: every parameter gets a gradient of its shape */
    ct_tensor *loss = NULL;
    for (int k = 0; k < n; k++)
        if (ct_requires_grad(one[k])) loss = loss ? ct_add(loss, ct_sum(one[k])) : ct_sum(one[k]);
    ct_tensor *ps[64];
    int np = ct_parameters(m, ps, 64);
    if (np > 0 && (!loss || ct_backward(loss) != 0))
        ct_test_fail(__FILE__, __LINE__, "%s: backward failed: %s", r->name,
                     loss ? ct_last_error() : "no output requires grad");
    for (int k = 0; k < np && loss; k++)
        if (!same_geometry(ct_grad(ps[k]), ps[k]))
            ct_test_fail(__FILE__, __LINE__, "%s: parameter %d has no gradient of its shape",
                         r->name, k);
    /* a state dict round trip */
    ct_manual_seed(77);
    ct_module *m2 = r->make();
    if (ct_load_state_dict(m2, ct_module_state_dict(m)) != 0 || forward(m2, r, in, again) != n)
        ct_test_fail(__FILE__, __LINE__, "%s: state dict round trip: %s", r->name, ct_last_error());
    else
        for (int k = 0; k < n; k++) {
            snprintf(what, sizeof what, "%s: output %d after a state dict round trip", r->name, k);
            ct_test_check_close(__FILE__, __LINE__, what, again[k], one[k], (ct_test_tol){0});
        }
    if (r->flags & NO_META) return;
    ct_module *m3 = r->make();
    if (ct_module_to(m3, .device = CT_META) != 0) {
        ct_test_fail(__FILE__, __LINE__, "%s: to meta: %s", r->name, ct_last_error());
        return;
    }
    ct_tensor *min[MAX_IO];
    for (int k = 0; k < r->n_in; k++) min[k] = ct_to(in[k], .device = CT_META);
    int64_t before = ct_memory_allocated(CT_CPU);
    CT_SCOPE {
        int nm = forward(m3, r, min, meta);
        if (nm != n) {
            ct_test_fail(__FILE__, __LINE__, "%s on meta: %s", r->name, ct_last_error());
            break;
        }
        for (int k = 0; k < n; k++)
            if (!ct_is_meta(meta[k]) || !same_geometry(meta[k], one[k]))
                ct_test_fail(__FILE__, __LINE__, "%s on meta: output %d differs from the cpu's",
                             r->name, k);
    }
    if (ct_memory_allocated(CT_CPU) != before || ct_memory_allocated(CT_META) != 0)
        ct_test_fail(__FILE__, __LINE__, "%s on meta: allocated memory", r->name);
}

TEST(every_module_row_runs) {
    for (int i = 0; i < N_ROWS; i++) {
        if (ROWS[i].flags & EXEMPT) continue;
        ct_clear_error();
        check_row(&ROWS[i]);
    }
}

TEST(rows_give_reasons) {
    for (int i = 0; i < N_ROWS; i++) {
        bool skips = ROWS[i].flags & (NO_META | EXEMPT);
        if (skips != !!ROWS[i].reason[0])
            ct_test_fail(__FILE__, __LINE__, "tests/moduleinfo.def: %s: %s", ROWS[i].name,
                         skips ? "a skip needs its reason" : "a reason, but nothing is skipped");
        if (row_of(ROWS[i].name) != &ROWS[i])
            ct_test_fail(__FILE__, __LINE__, "tests/moduleinfo.def: a second row for %s",
                         ROWS[i].name);
    }
}

/* Every constructor of a module in the public headers (ct_module *ct_NAME(...) or
 * ct_NAME_with(...), not the containers' getters and setters) has a row. */
TEST(every_module_constructor_has_a_row) {
    static const char *HEADERS[] = {"layers.h", "loss.h", "attention.h", "rnn.h"};
    regex_t re;
    CHECK(regcomp(&re, "^ct_module \\*ct_([a-z0-9_]+)\\(", REG_EXTENDED) == 0);
    int found = 0;
    for (size_t h = 0; h < sizeof HEADERS / sizeof HEADERS[0]; h++) {
        char path[128], line[512];
        snprintf(path, sizeof path, "../include/ctorch/%s", HEADERS[h]);
        FILE *f = fopen(path, "r");
        if (!f) {
            ct_test_fail(__FILE__, __LINE__, "cannot read %s", path);
            continue;
        }
        while (fgets(line, sizeof line, f)) {
            regmatch_t mt[2];
            if (regexec(&re, line, 2, mt, 0)) continue;
            char name[96];
            int len = (int)(mt[1].rm_eo - mt[1].rm_so);
            snprintf(name, sizeof name, "%.*s", len, line + mt[1].rm_so);
            size_t nl = strlen(name);
            if (nl > 5 && !strcmp(name + nl - 5, "_with")) name[nl - 5] = 0;
            if (strstr(name, "_get") || strstr(name, "_append") || strstr(name, "_set")) continue;
            found++;
            if (!row_of(name))
                ct_test_fail(__FILE__, __LINE__,
                             "ct_%s (%s) makes a module but has no row in tests/moduleinfo.def: "
                             "add MODULEINFO(%s, ct_%s(...), <number of inputs>, (<R(shape), "
                             "...>), 0, \"\")",
                             name, HEADERS[h], name, name);
        }
        fclose(f);
    }
    regfree(&re);
    CHECK(found > 40);
}
