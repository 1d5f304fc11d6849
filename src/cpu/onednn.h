/* float16 / bfloat16 matrix products and convolutions through oneDNN (Debian's
 * libdnnl, the library PyTorch's cpu bf16 kernels use), built when CMake finds it
 * (CTORCH_ONEDNN=AUTO|ON|OFF; CT_HAVE_ONEDNN).  oneDNN picks its kernels by the CPU:
 * AVX512-BF16 / AMX instructions where there are, emulated bf16 on plain AVX-512,
 * and nothing below AVX-512 (2.6 reports bf16 and f16 "unimplemented" there, and f16
 * everywhere but on AVX512-FP16 CPUs): then the reduced kernels (cpu/gemm_reduced.c,
 * cpu/conv_reduced.c) run as without oneDNN.  Both compute float sums of the reduced
 * operands rounded once to the output dtype.
 *
 * Environment: CT_ONEDNN=0 turns the path off (ctorch's own kernels only);
 * ONEDNN_MAX_CPU_ISA (oneDNN's own) caps the instructions it uses, as
 * tests/force_isa.sh does to test each path on one machine.
 *
 * Note [oneDNN determinism] (docs/internals.md, "oneDNN"): a primitive's work split is
 * chosen when it is made, from the thread count, so results stay bitwise equal for any
 * ct_set_num_threads only because matrix products use only oneDNN's brgemm kernels
 * (each dot product on one thread: cpu/onednn_matmul.c) and convolutions run fixed
 * batch chunks through one-thread primitives (cpu/onednn_conv.c).  They are not
 * bitwise equal to the reduced kernels' or across instruction sets: the tests compare
 * both with float32 references within the reduced dtype's rounding. */
#ifndef CT_CPU_ONEDNN_H
#define CT_CPU_ONEDNN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dtype.h"
#include "kernels/conv.h"
#include "kernels/gemm.h"

#ifdef CT_HAVE_ONEDNN
/* Runs the product through oneDNN: true when it did (or failed, the op's result then
 * marked failed with the error), false when oneDNN does not support it here (nothing
 * written: the caller runs its own kernel). */
bool ct_onednn_gemm(ct_dtype dt, const ct_gemm_args *g);
/* The same for a FORWARD, GRAD_INPUT (without bias) or GRAD_WEIGHT job (its weight
 * only: job->out_bias is left to the caller). */
bool ct_onednn_conv(ct_dtype dt, const ct_conv_job *job);
/* Whether the path is on (CT_ONEDNN is not "0"), the instruction set oneDNN runs
 * (dnnl_get_effective_cpu_isa's name, e.g. "avx512_core_bf16"), and how many
 * primitives it has executed: for the tests. */
bool ct_onednn_enabled(void);
const char *ct_onednn_isa(void);
int64_t ct_onednn_executed(void);
#else
static inline bool ct_onednn_gemm(ct_dtype dt, const ct_gemm_args *g) { return (void)dt, (void)g, false; }
static inline bool ct_onednn_conv(ct_dtype dt, const ct_conv_job *job) { return (void)dt, (void)job, false; }
static inline bool ct_onednn_enabled(void) { return false; }
static inline const char *ct_onednn_isa(void) { return "none"; }
static inline int64_t ct_onednn_executed(void) { return 0; }
#endif

#endif
