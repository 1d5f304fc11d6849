/* Kernel dispatch: typed lookups per kernel family, and the start-up check that refuses
 * a kernel registered under a family other than its op's (ops.def's FAMILY column). */
#include <string.h>

#include "ct_test.h"
#include "core/backend.h"
#include "ops/op_table.h"

static void fake_loop(char **d, const int64_t *s, int64_t n, const void *ctx) {
    (void)d, (void)s, (void)n, (void)ctx;
}
static void fake_reduce(const char *in, char *out, int64_t M1, int64_t R, int64_t M2,
                        const void *ctx) {
    (void)in, (void)out, (void)M1, (void)R, (void)M2, (void)ctx;
}

TEST(typed_lookup_finds_registered_kernels) {
    CHECK(ct_kernel_loop_for(CT_OP_add, CT_CPU, CT_F32) != NULL);
    CHECK(ct_kernel_reduce_for(CT_OP_sum, CT_CPU, CT_F64) != NULL);
    CHECK(ct_kernel_gemm_for(CT_OP_mm, CT_CPU, CT_F32) != NULL);
    CHECK(ct_kernel_conv_for(CT_OP_convolution, CT_CPU, CT_F32) != NULL);
    CHECK(ct_kernel_optim_for(CT_OP_adam_step, CT_CPU, CT_F32) != NULL);
    CHECK_ERROR(ct_kernel_softmax_for(CT_OP_softmax, CT_CPU, CT_I64),
                "ct_softmax: not implemented for int64 on cpu");
}

TEST(lookup_as_another_family_is_an_internal_error) {
    CHECK_ERROR(ct_kernel_reduce_for(CT_OP_add, CT_CPU, CT_F32),
                "ct_add: internal error: a REDUCE kernel was looked up, but the op's family is "
                "LOOP");
    CHECK_ERROR(ct_kernel_loop_for(CT_OP_view, CT_CPU, CT_F32), "the op's family is NONE");
}

TEST(ops_def_families) {
    CHECK_INT_EQ(ct_op_family[CT_OP_add], CT_FAMILY_LOOP);
    CHECK_INT_EQ(ct_op_family[CT_OP_max_dim], CT_FAMILY_ARGREDUCE);
    CHECK_INT_EQ(ct_op_family[CT_OP_batch_norm], CT_FAMILY_NORM);
    CHECK_INT_EQ(ct_op_family[CT_OP_accumulate_grad], CT_FAMILY_NONE);
    CHECK_STR_EQ(ct_kernel_family_name(CT_FAMILY_PAD_SCATTER), "PAD_SCATTER");
    CHECK_STR_EQ(ct_kernel_family_name(CT_FAMILY_NONE), "NONE");
}

/* The cpu backend's own tables pass the check the dispatcher runs at start-up. */
TEST(cpu_tables_pass_the_check) {
    const ct_backend *cpu = ct_backend_of("test", CT_CPU);
    CHECK(cpu != NULL);
    int n = 0;
    for (int i = 0; cpu->kernel_tables[i]; i++, n++)
        CHECK(ct_kernel_table_check("cpu", cpu->kernel_tables[i]));
    CHECK(n > 20);
}

TEST(table_check_refuses_a_family_mismatch) {
    const ct_kernel_entry good[] = {
        CT_KERNEL(LOOP, CT_OP_add, CT_F32, fake_loop),
        CT_KERNEL(REDUCE, CT_OP_sum, CT_F32, fake_reduce),
        CT_KERNEL_END,
    };
    CHECK(ct_kernel_table_check("test", good));
    /* the function has the REDUCE type, so it compiles, but add is a LOOP op */
    const ct_kernel_entry bad[] = {
        CT_KERNEL(LOOP, CT_OP_add, CT_F32, fake_loop),
        CT_KERNEL(REDUCE, CT_OP_add, CT_F64, fake_reduce),
        CT_KERNEL_END,
    };
    CHECK_ERROR(ct_kernel_table_check("test", bad) ? 1 : 0,
                "kernel table of backend test: the float64 kernel of ct_add is registered as a "
                "REDUCE kernel, but ops.def gives ct_add the family LOOP");
    const ct_kernel_entry null_fn[] = {CT_KERNEL(LOOP, CT_OP_add, CT_F32, NULL), CT_KERNEL_END};
    CHECK_ERROR(ct_kernel_table_check("test", null_fn) ? 1 : 0,
                "the float32 kernel of ct_add is NULL");
    ct_kernel_entry invalid[] = {CT_KERNEL(LOOP, CT_OP_add, CT_F32, fake_loop), CT_KERNEL_END};
    invalid[0].op = CT_NUM_OPS;
    CHECK_ERROR(ct_kernel_table_check("test", invalid) ? 1 : 0,
                "entry 0 has an invalid op, dtype or family");
}
