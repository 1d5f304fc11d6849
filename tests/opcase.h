/* The OPCASE rows of tests/opinfo.def: values and gradients against PyTorch fixtures
 * (tests/fixtures/<file>.fx, written by tests/fixtures/gen_<file>.py from the same
 * rows).  Each case of a file is run in each of its dtypes: its inputs <case>_in<i>
 * loaded (floating ones in the dtype, requiring grad where the fixture has a gradient
 * <case>_grad<i>), its C expression compared with <case>_out, then backward with
 * <case>_g and each input's gradient compared with <case>_grad<i>.
 *
 *     static opcase_tol tol(ct_dtype dt) { return dt == CT_F64 ? (opcase_tol){1e-12, 1e-12}
 *                                                               : (opcase_tol){2e-5, 2e-5}; }
 *     TEST(losses_match_pytorch) { CHECK(opcase_check("loss", tol) > 100); }
 */
#ifndef CT_TEST_OPCASE_H
#define CT_TEST_OPCASE_H

#include "ctorch.h"

/* Tolerances of one dtype, relative and absolute alike: of the output, of gradients. */
typedef struct {
    double out, grad;
} opcase_tol;

/* Checks every case of file's rows in each of its dtypes (tol(dt) gives their
 * tolerances); failures name the case, the dtype and the row's line.  Returns the
 * number of (case, dtype) runs. */
int opcase_check(const char *file, opcase_tol (*tol)(ct_dtype dt));

#endif
