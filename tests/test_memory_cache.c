/* The cpu block cache: freed large storages are reused, the statistics stay exact,
 * and ct_empty_cache / ct_set_cache_limit give the memory back. */
#include <stdlib.h>

#include "core/sanitize.h"
#include "ct_test.h"

#define BIG CT_SHAPE(512, 512) /* 1 MiB of float32: well above the cache's minimum */

#if !CT_ASAN /* the cache is off under AddressSanitizer */
TEST(freed_large_storage_is_reused) {
    ct_empty_cache(CT_CPU);
    int64_t before = ct_memory_allocated(CT_CPU);
    void *p = NULL;
    CT_SCOPE { p = ct_data_ptr(ct_empty(BIG)); }
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU), before); /* in use: exact */
    CHECK(ct_memory_reserved(CT_CPU) >= before + (1 << 20));  /* held by the cache */
    ct_tensor *b = ct_zeros(BIG);
    CHECK(ct_data_ptr(b) == p);
    double *v = ct_test_values(b); /* a reused block is initialised like a new one */
    double worst = 0;
    for (int i = 0; v && i < 512 * 512; i++) worst = fmax(worst, fabs(v[i]));
    CHECK(v && worst == 0);
    free(v);
    CHECK(ct_memory_reserved(CT_CPU) - ct_memory_allocated(CT_CPU) < (1 << 20));
}

TEST(empty_cache_and_limit_give_memory_back) {
    CT_SCOPE { ct_empty(BIG); }
    CHECK(ct_memory_reserved(CT_CPU) > ct_memory_allocated(CT_CPU));
    ct_empty_cache(CT_CPU);
    CHECK_INT_EQ(ct_memory_reserved(CT_CPU), ct_memory_allocated(CT_CPU));

    ct_set_cache_limit(CT_CPU, 0); /* off: a freed block goes straight back */
    CT_SCOPE { ct_empty(BIG); }
    CHECK_INT_EQ(ct_memory_reserved(CT_CPU), ct_memory_allocated(CT_CPU));

    ct_set_cache_limit(CT_CPU, 3 << 20); /* room for three 1 MiB blocks, not four */
    CT_SCOPE {
        for (int i = 0; i < 4; i++) ct_empty(BIG);
    }
    int64_t held = ct_memory_reserved(CT_CPU) - ct_memory_allocated(CT_CPU);
    CHECK(held >= 3 << 20 && held < 4 << 20);
    ct_set_cache_limit(CT_CPU, 1 << 20); /* lowering the limit frees the excess */
    held = ct_memory_reserved(CT_CPU) - ct_memory_allocated(CT_CPU);
    CHECK(held <= 1 << 20);
    ct_set_cache_limit(CT_CPU, 256 << 20);
    ct_empty_cache(CT_CPU);
}
#endif

TEST(peak_counts_tensor_bytes_only) {
    ct_empty_cache(CT_CPU);
    ct_reset_peak_memory_stats(CT_CPU);
    int64_t before = ct_memory_allocated(CT_CPU);
    for (int i = 0; i < 3; i++) {
        CT_SCOPE { ct_empty(BIG); }
    }
    CHECK_INT_EQ(ct_max_memory_allocated(CT_CPU), before + (1 << 20));
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU), before);
    ct_empty_cache(CT_CPU);
}

TEST(small_tensors_are_not_cached) {
    ct_empty_cache(CT_CPU);
    CT_SCOPE { ct_empty(CT_SHAPE(1000)); } /* 4 KB */
    CHECK_INT_EQ(ct_memory_reserved(CT_CPU), ct_memory_allocated(CT_CPU));
}
