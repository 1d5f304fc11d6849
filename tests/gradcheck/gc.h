/* Gradcheck cases, one file per op family (tests/gradcheck/<family>.c), all linked
 * into one program.  GRADCHECK() records which op a case covers; when all cases have
 * run, every differentiable op of src/ops/ops.def must have been covered.
 *
 *     static ct_tensor *f_mul(ct_tensor *const *x, void *c) { (void)c; return ct_mul(x[0], x[1]); }
 *     TEST(grad_mul) {
 *         ct_tensor *in[] = {gc_rand(CT_SHAPE(2, 3)), gc_rand(CT_SHAPE(3))};
 *         GRADCHECK("mul", f_mul, 2, in, NULL);
 *     }
 */
#ifndef CT_TEST_GC_H
#define CT_TEST_GC_H

#include "../ct_test.h"

/* Runs ct_gradcheck (and ct_gradgradcheck for GRADGRADCHECK), failing the test with
 * the mismatch; marks `op` covered. */
void gc_run(const char *file, int line, const char *op, ct_gradcheck_fn f, int n,
            ct_tensor *const *inputs, void *ctx, bool second_order);
#define GRADCHECK(op, f, n, inputs, ctx) gc_run(__FILE__, __LINE__, op, f, n, inputs, ctx, false)
#define GRADGRADCHECK(op, f, n, inputs, ctx) gc_run(__FILE__, __LINE__, op, f, n, inputs, ctx, true)
/* Marks an op covered by a check made some other way (say, a fixture comparison). */
void gc_cover(const char *op);

/* float64 leaves requiring grad, with deterministic values in [lo, hi) (default
 * [-1, 1)); gc_noncontig gives the same as a non-contiguous leaf (every other element
 * of a wider buffer). */
ct_tensor *gc_rand(ct_shape shape);
ct_tensor *gc_rand_range(ct_shape shape, double lo, double hi);
ct_tensor *gc_noncontig(ct_shape shape);
ct_tensor *gc_noncontig_range(ct_shape shape, double lo, double hi);

#endif
