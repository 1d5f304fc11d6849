/* A matrix product whose kernel cannot get its working memory fails with an error
 * naming the op, and the process goes on.  The float16 product widens its operands
 * into per-thread float buffers (cpu/gemm_reduced.c); with many threads asked for and
 * an address-space limit a little above what the process uses, they do not fit. */
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ct_test.h"

/* As in test_core_checks.c: under AddressSanitizer a failed allocation returns NULL. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

static rlim_t address_space_used(void) {
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld", &pages) != 1) pages = 0;
        fclose(f);
    }
    return (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
}

TEST(reduced_matrix_product_reports_out_of_memory) {
    ct_tensor *a = ct_ones(CT_SHAPE(512, 512), .dtype = CT_F16);
    ct_tensor *b = ct_full(CT_SHAPE(512, 512), 0.5, .dtype = CT_F16);
    CHECK(ct_mm(a, b) != NULL); /* its output's block is cached for the next product */
    int threads = ct_get_num_threads();
    struct rlimit old;
    CHECK(getrlimit(RLIMIT_AS, &old) == 0);
    /* 256 threads' buffers are 256 * 768 KiB: far more than the 32 MiB left */
    ct_set_num_threads(256);
    struct rlimit tight = {address_space_used() + ((rlim_t)32 << 20), old.rlim_max};
    CHECK(setrlimit(RLIMIT_AS, &tight) == 0);
    ct_tensor *c = ct_mm(a, b);
    const char *e = c ? NULL : ct_last_error();
    bool named = e && strstr(e, "ct_mm: out of memory for the float16 matrix product's");
    CHECK(setrlimit(RLIMIT_AS, &old) == 0);
    ct_set_num_threads(threads);
    CHECK(c == NULL);
    CHECK(named);
    ct_clear_error();
    /* the process goes on */
    ct_tensor *d = ct_mm(a, b);
    CHECK(d != NULL);
    CHECK(ct_item(ct_select(ct_select(d, 0, 7), 0, 300)) == 256);
}
