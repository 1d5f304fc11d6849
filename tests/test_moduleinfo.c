/* The ModuleInfo rows of tests/moduleinfo.def: every nn module constructor of the public
 * headers has a row, and each row's module runs forward and backward on the cpu, gives
 * the same outputs with 1 and 3 threads and after a state dict round trip, and gives
 * the cpu's shapes and dtypes on the meta device without allocating; the MODVALUES
 * rows give PyTorch's values (tests/fixtures/modules.fx, from gen_modules.py). */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "ct_test.h"
#include "fixtures.h"

enum { MULTI = 1, NO_META = 2, EXEMPT = 4, ATTENTION = 8, NO_VALUES = 16 };
enum { TRAIN = 1, EVAL = 2 };
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
#define MODVALUES(name, module, rtol32, ctor, torch_expr, inputs, modes)                          \
    static ct_module *values_##name(void) { return ctor; }
#include "moduleinfo.def"
#undef MODULEINFO
#undef MODVALUES

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

typedef struct {
    const char *name, *module;
    const char *text; /* the row as the fixture records it: "ctor|torch|inputs|modes" */
    const char *inputs;
    ct_module *(*make)(void);
    double rtol32;
    unsigned modes;
} values_row;

static const values_row VALUES[] = {
#define MODVALUES(name, module, rtol32, ctor, torch_expr, inputs, modes)                          \
    {#name, #module, #ctor "|" torch_expr "|" #inputs "|" #modes, #inputs, values_##name, rtol32, modes},
#include "moduleinfo.def"
#undef MODVALUES
};
#define N_VALUES (int)(sizeof VALUES / sizeof VALUES[0])

static const module_row *row_of(const char *name) {
    for (int i = 0; i < N_ROWS; i++)
        if (!strcmp(ROWS[i].name, name)) return &ROWS[i];
    return NULL;
}

/* The module's outputs (seeded: dropout draws the same mask each time); -1 on error. */
static int forward_as(ct_module *m, unsigned flags, int n_in, ct_tensor **in, ct_tensor **out) {
    ct_manual_seed(5);
    if (flags & ATTENTION) {
        ct_attention_result a = ct_attention(m, in[0], in[1], in[2]);
        out[0] = a.output, out[1] = a.weights;
        return a.output && a.weights ? 2 : -1;
    }
    if (flags & MULTI) return ct_forward_multi(m, n_in, in, out, MAX_IO);
    out[0] = ct_forward(m, in[0]);
    return out[0] ? 1 : -1;
}

static int forward(ct_module *m, const module_row *r, ct_tensor **in, ct_tensor **out) {
    return forward_as(m, r->flags, r->n_in, in, out);
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
        bool skips = ROWS[i].flags & (NO_META | NO_VALUES | EXEMPT);
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

/* ---- values against PyTorch: the MODVALUES rows ------------------------------- */

/* Whether the fixture's character-code tensor key holds text. */
static bool fixture_text_is(fx_file *f, const char *key, const char *text) {
    ct_tensor *t = fx_get(f, key);
    size_t n = strlen(text);
    if (!t || ct_numel(t) != (int64_t)n) return false;
    const int64_t *c = ct_data_ptr(t);
    for (size_t i = 0; i < n; i++)
        if (c[i] != (unsigned char)text[i]) return false;
    return true;
}

/* The number of inputs of a row's "(R(2, 3), I(4, 3))": its top-level commas plus one. */
static int count_inputs(const char *inputs) {
    int depth = 0, commas = 0;
    bool any = false;
    for (const char *c = inputs; *c; c++) {
        if (*c == '(') depth++;
        else if (*c == ')') depth--;
        else if (depth == 1 && *c == ',') commas++;
        else if (depth >= 1 && *c != ' ') any = true;
    }
    return any ? commas + 1 : 0;
}

/* want rounded to got's dtype, within tol of the largest expected magnitude. */
static void check_near(const char *what, ct_tensor *got, ct_tensor *want, double tol) {
    ct_tensor *w = ct_to(want, .dtype = got ? ct_dtype_of(got) : CT_F64);
    ct_test_check_close(__FILE__, __LINE__, what, got, w,
                        (ct_test_tol){.atol = tol, .atol_of_max = true});
}

/* A gradient, or zeros where the backward never reached t (the fixture's zeros stand
 * for PyTorch's None too: CosineEmbeddingLoss's target only selects). */
static ct_tensor *grad_or_zeros(ct_tensor *t) {
    ct_tensor *g = ct_grad(t);
    return g ? g : ct_zeros_like(t);
}

/* The fixture's state dict, loaded by the names m lists, which must be PyTorch's in
 * PyTorch's order; its keys joined, for the record of what changed. */
static ct_state_dict *load_state(fx_file *f, const values_row *v, ct_module *m) {
    ct_state_dict *mine = ct_module_state_dict(m), *sd = ct_state_dict_new();
    char key[256], keys[4096];
    int len = snprintf(keys, sizeof keys, "%d:", ct_state_dict_len(mine));
    for (int i = 0; i < ct_state_dict_len(mine); i++) {
        const char *k = ct_state_dict_key(mine, i);
        if (len < (int)sizeof keys)
            len += snprintf(keys + len, sizeof keys - (size_t)len, "%s%s", i ? "," : "", k);
        snprintf(key, sizeof key, "%s.sd.%s", v->name, k);
        ct_state_dict_set(sd, k, fx_get(f, key));
    }
    snprintf(key, sizeof key, "%s.keys", v->name);
    if (!fixture_text_is(f, key, keys))
        ct_test_fail(__FILE__, __LINE__, "%s: the state dict keys %s are not PyTorch's", v->name,
                     keys);
    if (ct_load_state_dict(m, sd) != 0)
        ct_test_fail(__FILE__, __LINE__, "%s: loading the state dict: %s", v->name,
                     ct_last_error());
    return sd;
}

static void check_values_in(fx_file *f, const values_row *v, const module_row *r, ct_dtype dt,
                            int mode) {
    char key[256];
    const char *mname = mode == TRAIN ? "train" : "eval";
    double tol = dt == CT_F64 ? 1e-12 : v->rtol32 > 0 ? v->rtol32 : 1e-5;
    ct_module *m = v->make();
    if (!m || ct_module_to(m, .dtype = dt) != 0) {
        ct_test_fail(__FILE__, __LINE__, "%s: the constructor failed: %s", v->name,
                     ct_last_error());
        return;
    }
    ct_state_dict *sd = load_state(f, v, m);
    ct_module_train(m, mode == TRAIN);
    int n_in = count_inputs(v->inputs);
    ct_tensor *in[MAX_IO], *out[MAX_IO];
    for (int i = 0; i < n_in; i++) {
        snprintf(key, sizeof key, "%s.in%d", v->name, i);
        in[i] = fx_get(f, key);
        if (in[i] && ct_dtype_is_floating(ct_dtype_of(in[i])))
            in[i] = fx_get_as(f, key, dt, true);
    }
    int n = forward_as(m, r->flags, n_in, in, out);
    snprintf(key, sizeof key, "%s.nout", v->name);
    if (n != ct_item_int(fx_get(f, key))) {
        ct_test_fail(__FILE__, __LINE__, "%s (%s): %d outputs, PyTorch %lld: %s", v->name, mname,
                     n, (long long)ct_item_int(fx_get(f, key)), ct_last_error());
        return;
    }
    ct_tensor *loss = NULL;
    for (int k = 0; k < n; k++) {
        snprintf(key, sizeof key, "%s.%s.out%d", v->name, mname, k);
        check_near(key, out[k], fx_get(f, key), tol);
        snprintf(key, sizeof key, "%s.w%d", v->name, k);
        ct_tensor *term = ct_sum(ct_mul(out[k], fx_get_as(f, key, dt, false)));
        loss = loss ? ct_add(loss, term) : term;
    }
    if (ct_backward(loss) != 0) {
        ct_test_fail(__FILE__, __LINE__, "%s (%s): backward: %s", v->name, mname, ct_last_error());
        return;
    }
    for (int i = 0; i < n_in; i++) {
        if (!ct_requires_grad(in[i])) continue;
        snprintf(key, sizeof key, "%s.%s.gin%d", v->name, mname, i);
        check_near(key, grad_or_zeros(in[i]), fx_get(f, key), tol);
    }
    const char *names[64];
    ct_tensor *ts[64];
    int np = ct_named_parameters(m, names, ts, 64);
    for (int i = 0; i < np; i++) {
        snprintf(key, sizeof key, "%s.%s.g.%s", v->name, mname, names[i]);
        check_near(key, grad_or_zeros(ts[i]), fx_get(f, key), tol);
    }
    /* The state after the forward: BatchNorm's statistics in training mode, the rows
     * Embedding's max_norm renormalised; the rest as loaded. */
    ct_state_dict *now = ct_module_state_dict(m);
    if (ct_state_dict_len(now) == 0) return;
    snprintf(key, sizeof key, "%s.%s.changed", v->name, mname);
    ct_tensor *changed = fx_get(f, key);
    if (!changed) return;
    const int64_t *c = ct_data_ptr(changed);
    for (int i = 0; i < ct_state_dict_len(now) && i < ct_numel(changed); i++) {
        const char *k = ct_state_dict_key(now, i);
        snprintf(key, sizeof key, "%s.%s.after.%s", v->name, mname, k);
        ct_tensor *want = c[i] ? fx_get(f, key) : ct_state_dict_get(sd, k);
        check_near(key, ct_state_dict_get(now, k), want, tol);
    }
}

static void check_values(fx_file *f, const values_row *v, ct_dtype dt) {
    const module_row *r = row_of(v->module);
    char key[160];
    snprintf(key, sizeof key, "%s.row", v->name);
    if (!r)
        ct_test_fail(__FILE__, __LINE__, "tests/moduleinfo.def: values case %s: %s has no row",
                     v->name, v->module);
    else if (!fixture_text_is(f, key, v->text))
        ct_test_fail(__FILE__, __LINE__,
                     "%s: tests/fixtures/modules.fx holds another row's values: run "
                     "/usr/bin/python3 tests/fixtures/gen_modules.py",
                     v->name);
    else
        for (int mode = TRAIN; mode <= EVAL; mode++)
            if (v->modes & mode) CT_SCOPE {
                    ct_clear_error();
                    check_values_in(f, v, r, dt, mode);
                }
}

TEST(module_values_match_pytorch) {
    fx_file *f = fx_load("modules");
    for (int i = 0; f && i < N_VALUES; i++) check_values(f, &VALUES[i], CT_F64);
    fx_free(f);
}

/* The float64 fixtures against float32 modules loaded from them (rounded weights and
 * inputs): rtol32 of the largest expected magnitude. */
TEST(module_values_match_pytorch_in_float32) {
    fx_file *f = fx_load("modules");
    for (int i = 0; f && i < N_VALUES; i++) check_values(f, &VALUES[i], CT_F32);
    fx_free(f);
}

/* Every module row has values against PyTorch, or says why not (NO_VALUES, EXEMPT). */
TEST(every_module_row_has_values_or_a_reason) {
    for (int i = 0; i < N_ROWS; i++) {
        int cases = 0;
        for (int k = 0; k < N_VALUES; k++) cases += !strcmp(VALUES[k].module, ROWS[i].name);
        bool excused = ROWS[i].flags & (NO_VALUES | EXEMPT);
        if (!cases && !excused)
            ct_test_fail(__FILE__, __LINE__,
                         "tests/moduleinfo.def: %s has no MODVALUES row: add one (its PyTorch "
                         "module), or NO_VALUES and the reason",
                         ROWS[i].name);
        if (cases && excused)
            ct_test_fail(__FILE__, __LINE__,
                         "tests/moduleinfo.def: %s has MODVALUES rows but says it has none",
                         ROWS[i].name);
    }
    for (int k = 0; k < N_VALUES; k++) {
        int n_in = count_inputs(VALUES[k].inputs);
        if (n_in < 1 || n_in > MAX_IO)
            ct_test_fail(__FILE__, __LINE__, "tests/moduleinfo.def: values case %s: %d inputs",
                         VALUES[k].name, n_in);
        for (int j = 0; j < k; j++)
            if (!strcmp(VALUES[j].name, VALUES[k].name))
                ct_test_fail(__FILE__, __LINE__, "tests/moduleinfo.def: a second values case %s",
                             VALUES[k].name);
    }
}
