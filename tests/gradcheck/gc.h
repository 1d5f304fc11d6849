/* Samples of the ops, one file per op family (tests/gradcheck/<family>.c), all linked
 * into one program.  A sample is a function of its inputs and the inputs; it names
 * the op whose row of tests/opinfo.def decides what it is checked for (gc.c):
 *   - gradcheck, and gradgradcheck where the sample asks for it (GRADGRADCHECK; the
 *     row must then have GRADGRAD), for rows with GRAD;
 *   - on the meta device: the cpu's shape, dtype and strides, and gradients of the
 *     inputs' shapes, without allocating data;
 *   - bitwise the same result with 1 and with 3 threads;
 *   - the same result on non-contiguous copies of the inputs;
 *   - in every floating dtype of the row: float32 against float64, bfloat16 and
 *     float16 against float32, on the same (rounded) inputs, within the row's ulps;
 *   - with dim 0 of its first input (and of the inputs of that shape) narrowed to 0
 *     and to 1 elements: no crash, the meta device's shape and dtype, gradients of the
 *     inputs' shapes, and PyTorch's value or refusal where the op's OPEMPTY row says.
 * When all samples have run, every row must have had its samples (coverage.c checks
 * the rows against ops.def and the kernel tables).
 *
 *     static ct_tensor *f_mul(ct_tensor *const *x, void *c) { (void)c; return ct_mul(x[0], x[1]); }
 *     TEST(grad_mul) {
 *         ct_tensor *in[] = {gc_rand(CT_SHAPE(2, 3)), gc_rand(CT_SHAPE(3))};
 *         GRADGRADCHECK("mul", f_mul, 2, in, NULL);
 *     }
 *
 * A sample that brings tensors of its own (targets, indices, weights in ctx) makes them
 * with gc_like(x[0], t), so that they follow the inputs to the meta device and to the
 * dtype of each run. */
#ifndef CT_TEST_GC_H
#define CT_TEST_GC_H

#include "../ct_test.h"
#include "../opinfo.h"

/* Runs every check op's row asks for on the sample (f, inputs, ctx); second_order
 * asks gradgradcheck too. */
void gc_run(const char *file, int line, const char *op, ct_gradcheck_fn f, int n,
            ct_tensor *const *inputs, void *ctx, bool second_order);
#define GRADCHECK(op, f, n, inputs, ctx) gc_run(__FILE__, __LINE__, op, f, n, inputs, ctx, false)
#define GRADGRADCHECK(op, f, n, inputs, ctx) gc_run(__FILE__, __LINE__, op, f, n, inputs, ctx, true)
/* A sample of an op without gradients (its row has no GRAD): the same checks but
 * gradcheck. */
#define SAMPLE(op, f, n, inputs, ctx) gc_run(__FILE__, __LINE__, op, f, n, inputs, ctx, false)
/* Marks an op's row as having a sample checked some other way (say, a fixture
 * comparison inside this program). */
void gc_cover(const char *op);

/* float64 leaves requiring grad, with deterministic values in [lo, hi) (default
 * [-1, 1)); gc_noncontig gives the same as a non-contiguous leaf (every other element
 * of a wider buffer). */
ct_tensor *gc_rand(ct_shape shape);
ct_tensor *gc_rand_range(ct_shape shape, double lo, double hi);
ct_tensor *gc_noncontig(ct_shape shape);
ct_tensor *gc_noncontig_range(ct_shape shape, double lo, double hi);
/* t on ref's device, and in ref's dtype when both are floating: a sample's own tensor
 * made to follow its input (meta runs, reduced-precision runs).  Registered with the
 * scope. */
ct_tensor *gc_like(const ct_tensor *ref, ct_tensor *t);

#endif
