/* A small test harness: TEST(name) { ... } registers a test; each runs in its own
 * scope with the error state cleared, and fails if it leaks tensor memory.
 * Checks print the file, line and what differed, and the run ends with the plain
 * "N passed, N failed" line. */
#ifndef CT_TEST_H
#define CT_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ctorch.h"

typedef void (*ct_test_fn)(void);
void ct_test_register(const char *name, ct_test_fn fn);
void ct_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Reads a whole tensor as doubles into a malloc'd array (NULL on error). */
double *ct_test_values(const ct_tensor *t);
/* Largest |a - b| over all elements, NAN when shapes differ or on error. */
double ct_test_max_diff(const ct_tensor *a, const ct_tensor *b);
/* a and b have the same dtype and shape and hold the same bytes, element by element. */
bool ct_test_same_bits(ct_tensor *a, ct_tensor *b);
/* Keeps leak checking off for a test that keeps objects on purpose (caches). */
void ct_test_allow_leaks(void);
/* The model of examples/fashion_mnist.c (the demo CNN), freshly initialised. */
ct_module *ct_test_demo_cnn(void);

#define TEST(name)                                                                  \
    static void name(void);                                                         \
    __attribute__((constructor)) static void ct_register_##name(void) {             \
        ct_test_register(#name, name);                                              \
    }                                                                               \
    static void name(void)

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) ct_test_fail(__FILE__, __LINE__, "CHECK(%s) failed%s%s", #cond, \
                                  ct_last_error() ? "; last error: " : "",          \
                                  ct_last_error() ? ct_last_error() : "");          \
    } while (0)

#define CHECK_INT_EQ(a, b)                                                          \
    do {                                                                            \
        long long a_ = (long long)(a), b_ = (long long)(b);                         \
        if (a_ != b_) ct_test_fail(__FILE__, __LINE__, "%s == %lld, expected %lld", #a, a_, b_); \
    } while (0)

#define CHECK_CLOSE(a, b, tol)                                                      \
    do {                                                                            \
        double a_ = (a), b_ = (b);                                                  \
        if (!(fabs(a_ - b_) <= (tol)) && !(isnan(a_) && isnan(b_)))                 \
            ct_test_fail(__FILE__, __LINE__, "%s == %.10g, expected %.10g (tol %g)", #a, a_, b_, \
                         (double)(tol));                                            \
    } while (0)

#define CHECK_STR_EQ(a, b)                                                          \
    do {                                                                            \
        const char *a_ = (a), *b_ = (b);                                            \
        if (!a_ || strcmp(a_, b_))                                                  \
            ct_test_fail(__FILE__, __LINE__, "%s:\n  got      \"%s\"\n  expected \"%s\"", #a, \
                         a_ ? a_ : "(null)", b_);                                   \
    } while (0)

/* Tolerances of ct_test_check_close: element i passes when got == want (infinities of
 * the same sign), both are NaN, want is NaN and nan_any is set, or
 *     |got - want| <= atol * scale + rtol * |want|
 * where scale is max(1, max |want|) with atol_of_max set, else 1. */
typedef struct {
    double rtol, atol;
    bool atol_of_max; /* atol relative to the largest expected magnitude */
    bool nan_any;     /* an expected NaN accepts any value */
} ct_test_tol;
/* got equals want (same shape) within tol; otherwise a failure naming `what`, the
 * first mismatching element and the largest difference.  True when it passed.  The
 * one tensor comparison of the suite:
 *     CHECK_TENSOR_CLOSE("exp (float32)", ct_exp(x), want, .rtol = 3e-7, .atol = 1e-37); */
bool ct_test_check_close(const char *file, int line, const char *what, const ct_tensor *got,
                         const ct_tensor *want, ct_test_tol tol);
#define CHECK_TENSOR_CLOSE(what, got, want, ...) \
    ct_test_check_close(__FILE__, __LINE__, what, got, want, (ct_test_tol){__VA_ARGS__})

/* Tensor t equals the values array (C order) within tol, and has that many elements. */
#define CHECK_VALUES(t, tol, ...)                                                   \
    do {                                                                            \
        const double want_[] = {__VA_ARGS__};                                       \
        ct_test_check_values(__FILE__, __LINE__, #t, (t), want_,                    \
                             (int64_t)(sizeof want_ / sizeof want_[0]), (tol));     \
    } while (0)
void ct_test_check_values(const char *file, int line, const char *expr, const ct_tensor *t,
                          const double *want, int64_t n, double tol);

/* expr fails (NULL or -1) and the error message contains fragment. */
#define CHECK_ERROR(expr, fragment)                                                 \
    do {                                                                            \
        ct_clear_error();                                                           \
        long long r_ = (long long)(intptr_t)(expr);                                 \
        const char *e_ = ct_last_error();                                           \
        if ((r_ != 0 && r_ != -1) || !e_ || !strstr(e_, fragment))                  \
            ct_test_fail(__FILE__, __LINE__, "%s: expected an error containing \"%s\", got %s", \
                         #expr, fragment, e_ ? e_ : "no error");                    \
        ct_clear_error();                                                           \
    } while (0)

#endif
