/* Comparing one PyTorch fixture case (tests/fixtures/gen_{linalg,conv,pool}.py):
 * <name>_in<i> inputs, <name>_out, the upstream gradient <name>_g and the input
 * gradients <name>_grad<i>.  Header-only so that each test program includes it. */
#ifndef CT_TEST_FX_CASE_H
#define CT_TEST_FX_CASE_H

#include "ct_test.h"
#include "fixtures.h"

/* Loads case `name`'s n_in inputs as dtype (requiring grad) into in[]. */
static inline void fx_case_inputs(fx_file *f, const char *name, int n_in, ct_dtype dt,
                                  ct_tensor **in) {
    char key[96];
    for (int i = 0; i < n_in; i++) {
        snprintf(key, sizeof key, "%s_in%d", name, i);
        in[i] = fx_get_as(f, key, dt, true);
    }
}

/* Checks y (computed from in[]) against <name>_out, runs backward with <name>_g and
 * checks every input's gradient, all within tol. */
static inline void fx_case_check(fx_file *f, const char *name, int n_in, ct_tensor **in,
                                 ct_tensor *y, ct_dtype dt, double tol) {
    char key[96];
    char what[128];
    snprintf(key, sizeof key, "%s_out", name);
    snprintf(what, sizeof what, "%s (%s): output", name, ct_dtype_name(dt));
    CHECK_TENSOR_CLOSE(what, y, fx_get(f, key), .atol = tol);
    snprintf(key, sizeof key, "%s_g", name);
    if (ct_backward(y, .gradient = fx_get_as(f, key, dt, false)) != 0)
        ct_test_fail(__FILE__, __LINE__, "%s (%s): backward failed: %s", name, ct_dtype_name(dt),
                     ct_last_error() ? ct_last_error() : "");
    for (int i = 0; i < n_in; i++) {
        snprintf(key, sizeof key, "%s_grad%d", name, i);
        snprintf(what, sizeof what, "%s (%s): grad of input %d", name, ct_dtype_name(dt), i);
        CHECK_TENSOR_CLOSE(what, ct_grad(in[i]), fx_get(f, key), .atol = tol);
    }
}

#endif
