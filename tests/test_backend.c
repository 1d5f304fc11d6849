/* Backends: the registry, the cpu backend's members, and the error for a device with
 * no backend in this build. */
#include <stdint.h>

#include "ct_test.h"
#include "core/backend.h"
#include "core/tensor_impl.h"

static void no_copy(ct_tensor *dst, const ct_tensor *src) { (void)dst, (void)src; }

TEST(cpu_backend_is_registered) {
    const ct_backend *b = ct_backend_of("test", CT_CPU);
    CHECK(b != NULL);
    CHECK_STR_EQ(b->name, "cpu");
    CHECK_INT_EQ(b->type, CT_DEV_CPU);
    CHECK(b->kernel_tables[0] != NULL);
    CHECK(ct_backend_for_type(CT_DEV_CPU) == b);
    CHECK(ct_device_synchronize("test", CT_CPU));
}

TEST(device_without_backend) {
    CHECK(ct_backend_for_type(CT_DEV_CUDA) == NULL);
    CHECK_ERROR(ct_backend_of("ct_zeros", CT_CUDA(0)),
                "ct_zeros: no backend for device cuda:0 in this build of ctorch");
    CHECK_ERROR(ct_device_synchronize("ct_synchronize", CT_CUDA(1)) ? 1 : 0,
                "ct_synchronize: no backend for device cuda:1 in this build of ctorch");
    CHECK_ERROR(ct_empty(CT_SHAPE(2), .device = CT_CUDA(0)), "no backend for device cuda:0");
    CHECK_INT_EQ(ct_memory_reserved(CT_CUDA(0)), 0);
}

TEST(register_refuses_a_second_or_incomplete_backend) {
    const ct_backend *cpu = ct_backend_of("test", CT_CPU);
    ct_backend again = *cpu;
    again.name = "cpu2";
    CHECK_ERROR(ct_backend_register(&again) ? 1 : 0,
                "backend cpu2: its device type has backend cpu already");
    ct_backend partial = {.name = "half", .type = CT_DEV_CUDA, .copy = no_copy};
    CHECK_ERROR(ct_backend_register(&partial) ? 1 : 0,
                "backend half lacks a required member or has an invalid device type");
    CHECK(ct_backend_for_type(CT_DEV_CUDA) == NULL);
}

TEST(cpu_alloc_is_aligned_and_counted_by_the_core) {
    const ct_backend *b = ct_backend_of("test", CT_CPU);
    void *p = b->alloc(CT_CPU, 1000);
    CHECK(p != NULL);
    CHECK_INT_EQ((uintptr_t)p % 64, 0);
    b->free(CT_CPU, p, 1000);
    int64_t before = ct_memory_allocated(CT_CPU);
    ct_tensor *t = ct_empty(CT_SHAPE(1 << 16));
    CHECK_INT_EQ(ct_memory_allocated(CT_CPU) - before, 4 << 16);
    CHECK(ct_memory_reserved(CT_CPU) >= ct_memory_allocated(CT_CPU));
    CHECK(t != NULL);
}

TEST(cpu_copy_between_strides_and_dtypes) {
    const ct_backend *b = ct_backend_of("test", CT_CPU);
    ct_tensor *src = ct_transpose(ct_reshape(ct_arange(6, .dtype = CT_F64), CT_SHAPE(2, 3)),
                                  0, 1);
    ct_tensor *dst = ct_empty(CT_SHAPE(3, 2), .dtype = CT_I32);
    b->copy(dst, src);
    CHECK_VALUES(dst, 0, 0, 3, 1, 4, 2, 5);
    float v[] = {7, 8};
    ct_tensor *row = ct_tensor_f32(v, CT_SHAPE(2));
    ct_tensor *wide = ct_empty(CT_SHAPE(3, 2), .dtype = CT_F64);
    b->copy(wide, row); /* src broadcast along dim 0 */
    CHECK_VALUES(wide, 0, 7, 8, 7, 8, 7, 8);
}
