/* The instruction set the cpu kernels run (Note in cpu/kernel_util.h). */
#ifndef CT_CPU_ISA_H
#define CT_CPU_ISA_H

typedef enum { CT_ISA_DEFAULT, CT_ISA_AVX2, CT_ISA_AVX512 } ct_isa;

/* -1 until the first ct_cpu_isa(). */
extern int ct_cpu_isa_level;
ct_isa ct_cpu_isa_init(void);
/* The best instruction set of this CPU, whatever CT_CPU_CAPABILITY says. */
ct_isa ct_cpu_isa_best(void);

/* The best instruction set of this CPU, or the one the environment variable
 * CT_CPU_CAPABILITY names ("default", "avx2" or "avx512", as PyTorch's
 * ATEN_CPU_CAPABILITY), if this CPU has it. */
static inline ct_isa ct_cpu_isa(void) {
    int level = __atomic_load_n(&ct_cpu_isa_level, __ATOMIC_RELAXED);
    return level >= 0 ? (ct_isa)level : ct_cpu_isa_init();
}

#endif
