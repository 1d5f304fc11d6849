#include <stdarg.h>
#include <stdlib.h>

#include "ct_test.h"

typedef struct {
    const char *name;
    ct_test_fn fn;
} test_entry;

static test_entry tests[512];
static int ntests, failures_in_test, allow_leaks;

void ct_test_register(const char *name, ct_test_fn fn) {
    if (ntests < 512) tests[ntests++] = (test_entry){name, fn};
}

void ct_test_allow_leaks(void) { allow_leaks = 1; }

void ct_test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures_in_test++;
}

double *ct_test_values(const ct_tensor *t) {
    if (!t) return NULL;
    int64_t n = ct_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (v && ct_copy_to_buffer(t, v, CT_F64, sizeof(double) * (size_t)n) != 0) {
        free(v);
        return NULL;
    }
    return v;
}

double ct_test_max_diff(const ct_tensor *a, const ct_tensor *b) {
    if (!a || !b || ct_numel(a) != ct_numel(b) || ct_ndim(a) != ct_ndim(b)) return NAN;
    for (int d = 0; d < ct_ndim(a); d++)
        if (ct_size(a, d) != ct_size(b, d)) return NAN;
    double *va = ct_test_values(a), *vb = ct_test_values(b), m = 0;
    if (!va || !vb) m = NAN;
    for (int64_t i = 0; va && vb && i < ct_numel(a); i++) {
        double d = fabs(va[i] - vb[i]);
        if (isnan(va[i]) != isnan(vb[i])) d = INFINITY;
        if (!(isnan(va[i]) && isnan(vb[i])) && d > m) m = d;
    }
    free(va);
    free(vb);
    return m;
}

/* "[2, 3]" */
static const char *shape_text(ct_shape s, char *buf, size_t size) {
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < s.ndim && n < size; d++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? ", " : "", (long long)s.d[d]);
    if (n < size) snprintf(buf + n, size - n, "]");
    return buf;
}

bool ct_test_check_close(const char *file, int line, const char *what, const ct_tensor *got,
                         const ct_tensor *want, ct_test_tol tol) {
    if (!got || !want) {
        ct_test_fail(file, line, "%s: missing tensor (%s)", what,
                     ct_last_error() ? ct_last_error() : "no error");
        return false;
    }
    ct_shape sg = ct_shape_of(got), sw = ct_shape_of(want);
    bool same = sg.ndim == sw.ndim;
    for (int d = 0; same && d < sg.ndim; d++) same = sg.d[d] == sw.d[d];
    if (!same) {
        char a[160], b[160];
        ct_test_fail(file, line, "%s: shape %s, expected %s", what, shape_text(sg, a, sizeof a),
                     shape_text(sw, b, sizeof b));
        return false;
    }
    double *g = ct_test_values(got), *w = ct_test_values(want);
    int64_t n = ct_numel(got), first = -1;
    double scale = 1, worst = 0;
    for (int64_t i = 0; tol.atol_of_max && w && i < n; i++)
        if (fabs(w[i]) > scale) scale = fabs(w[i]);
    for (int64_t i = 0; g && w && i < n; i++) {
        if (g[i] == w[i] || (isnan(w[i]) && (tol.nan_any || isnan(g[i])))) continue;
        double d = fabs(g[i] - w[i]);
        if (d <= tol.atol * scale + tol.rtol * fabs(w[i])) continue;
        if (first < 0) first = i;
        if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
    }
    if (!g || !w)
        ct_test_fail(file, line, "%s: cannot read the values (%s)", what,
                     ct_last_error() ? ct_last_error() : "no error");
    else if (first >= 0)
        ct_test_fail(file, line,
                     "%s: element %lld is %.17g, expected %.17g; largest difference %g "
                     "(rtol %g, atol %g)",
                     what, (long long)first, g[first], w[first], worst, tol.rtol, tol.atol * scale);
    bool ok = g && w && first < 0;
    free(g);
    free(w);
    return ok;
}

void ct_test_check_values(const char *file, int line, const char *expr, const ct_tensor *t,
                          const double *want, int64_t n, double tol) {
    if (!t) {
        ct_test_fail(file, line, "%s is NULL (%s)", expr,
                     ct_last_error() ? ct_last_error() : "no error");
        return;
    }
    if (ct_numel(t) != n) {
        ct_test_fail(file, line, "%s has %lld elements, expected %lld", expr,
                     (long long)ct_numel(t), (long long)n);
        return;
    }
    double *v = ct_test_values(t);
    for (int64_t i = 0; v && i < n; i++) {
        bool same = fabs(v[i] - want[i]) <= tol || (isnan(v[i]) && isnan(want[i])) ||
                    (isinf(v[i]) && v[i] == want[i]);
        if (!same) {
            ct_test_fail(file, line, "%s[%lld] == %.10g, expected %.10g", expr, (long long)i, v[i],
                         want[i]);
            break;
        }
    }
    free(v);
}

/* A program may check something once all its tests ran (tests/gradcheck does). */
__attribute__((weak)) int ct_test_finish(void) { return 0; }

int main(int argc, char **argv) {
    int passed = 0, failed = 0;
    for (int i = 0; i < ntests; i++) {
        if (argc > 1 && !strstr(tests[i].name, argv[1])) continue;
        failures_in_test = 0;
        allow_leaks = 0;
        ct_clear_error();
        int64_t before = ct_memory_allocated(CT_CPU);
        CT_SCOPE { tests[i].fn(); }
        int64_t after = ct_memory_allocated(CT_CPU);
        if (after != before && !allow_leaks)
            ct_test_fail(__FILE__, __LINE__, "%s leaked %lld bytes of tensor memory", tests[i].name,
                         (long long)(after - before));
        if (failures_in_test) {
            failed++;
            printf("FAIL %s\n", tests[i].name);
        } else {
            passed++;
            printf("ok   %s\n", tests[i].name);
        }
    }
    if (argc <= 1 && ct_test_finish() != 0) {
        failed++;
        printf("FAIL ct_test_finish\n");
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

ct_module *ct_test_demo_cnn(void) {
    return ct_sequential(CT_MODULES(ct_nn_conv2d(1, 32, CT_DIMS(3), .padding = CT_DIMS(1)),
                                    ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)),
                                    ct_nn_conv2d(32, 64, CT_DIMS(3), .padding = CT_DIMS(1)),
                                    ct_nn_relu(), ct_nn_max_pool2d(CT_DIMS(2)), ct_nn_flatten(),
                                    ct_nn_linear(3136, 128), ct_nn_relu(), ct_nn_linear(128, 10)));
}
