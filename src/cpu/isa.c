/* Which variant of the vectorized kernels runs: see cpu/isa.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/isa.h"
#include "ctorch/base.h"

int ct_cpu_isa_level = -1;

static const char *const isa_names[] = {"default", "avx2", "avx512"};

ct_isa ct_cpu_isa_best(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return CT_ISA_AVX512;
#if defined(__clang__) /* clang knows no "x86-64-v3" here: the level's main parts */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2"))
        return CT_ISA_AVX2;
#else
    if (__builtin_cpu_supports("x86-64-v3")) return CT_ISA_AVX2;
#endif
#endif
    return CT_ISA_DEFAULT;
}

/* Racing first calls compute the same level, so the store needs no lock. */
ct_isa ct_cpu_isa_init(void) {
    ct_isa best = ct_cpu_isa_best(), isa = best;
    const char *forced = getenv("CT_CPU_CAPABILITY");
    if (forced && *forced) {
        int want = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(forced, isa_names[i]) == 0) want = i;
        if (want < 0)
            fprintf(stderr, "ctorch: CT_CPU_CAPABILITY=%s is not one of default, avx2, avx512; using %s\n",
                    forced, isa_names[best]);
        else if (want > (int)best)
            fprintf(stderr, "ctorch: CT_CPU_CAPABILITY=%s: this CPU lacks it; using %s\n", forced,
                    isa_names[best]);
        else
            isa = (ct_isa)want;
    }
    __atomic_store_n(&ct_cpu_isa_level, (int)isa, __ATOMIC_RELAXED);
    return isa;
}

const char *ct_cpu_capability(void) { return isa_names[ct_cpu_isa()]; }
